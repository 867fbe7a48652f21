//! Vectors for `make bench-vectordb-recall`: databases of any size made from
//! a base of real embeddings, written as PostgreSQL binary COPY rows of
//! `(db bigint, embedding real[])`.
//!
//! ```text
//! bench_vectors BASE DB:COUNT [DB:COUNT ...] > rows.copy
//! ```
//!
//! `BASE` holds one vector per line as psql's text COPY writes a `real[]`
//! (`{0.1,-0.2,...}`). Database `DB`'s record `j` is base vector `(j + o) mod n`
//! (`o` a per-database offset) while `j < n`, so a database up to the
//! base's size holds real embeddings only; past that, a mixture of two
//! base vectors and a little noise, scaled to unit length: a point among the
//! real ones, not a copy (a million copies of 60,000 vectors would be ties,
//! not a search). Deterministic: the same arguments give the same bytes.

use std::io::{BufRead, BufWriter, Write};

fn mix(x: u64) -> u64 {
    // splitmix64's finaliser
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn unit(x: u64) -> f64 {
    ((mix(x) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((base_path, specs)) = args.split_first() else {
        return Err("usage: bench_vectors BASE DB:COUNT [DB:COUNT ...]".into());
    };
    let mut base: Vec<Vec<f32>> = Vec::new();
    for line in std::io::BufReader::new(std::fs::File::open(base_path)?).lines() {
        let line = line?;
        let inner = line.trim().trim_start_matches('{').trim_end_matches('}');
        let v: Vec<f32> = inner
            .split(',')
            .map(|x| x.parse::<f32>())
            .collect::<Result<_, _>>()?;
        base.push(v);
    }
    let n = base.len();
    if n < 2 {
        return Err("the base needs at least two vectors".into());
    }
    let dims = base[0].len();
    let out = std::io::stdout();
    let mut w = BufWriter::with_capacity(1 << 20, out.lock());
    w.write_all(b"PGCOPY\n\xff\r\n\0")?;
    w.write_all(&0u32.to_be_bytes())?;
    w.write_all(&0u32.to_be_bytes())?;
    let mut v = vec![0f32; dims];
    for spec in specs {
        let (db, count) = spec
            .split_once(':')
            .ok_or_else(|| format!("{spec}: want DB:COUNT"))?;
        let (db, count): (i64, u64) = (db.parse()?, count.parse()?);
        let offset = mix(db as u64) as usize % n;
        for j in 0..count {
            if (j as usize) < n {
                v.copy_from_slice(&base[(j as usize + offset) % n]);
            } else {
                let seed = (db as u64).wrapping_mul(1 << 40) ^ j;
                let a = &base[mix(seed) as usize % n];
                let b = &base[mix(seed ^ 0x5555) as usize % n];
                let t = 0.25 + 0.5 * unit(seed ^ 0xAAAA);
                for (d, x) in v.iter_mut().enumerate() {
                    // Box-Muller, one coordinate each
                    let (u1, u2) = (
                        unit(seed ^ (d as u64) << 20),
                        unit(seed ^ (d as u64) << 21 ^ 1),
                    );
                    let noise = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    *x = ((1.0 - t) * f64::from(a[d]) + t * f64::from(b[d]) + 0.01 * noise) as f32;
                }
                let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
                v.iter_mut()
                    .for_each(|x| *x = (f64::from(*x) / norm) as f32);
            }
            // a row: 2 fields; int8; real[] (1 dimension, no nulls, float4)
            w.write_all(&2u16.to_be_bytes())?;
            w.write_all(&8u32.to_be_bytes())?;
            w.write_all(&db.to_be_bytes())?;
            w.write_all(&((20 + 8 * dims) as u32).to_be_bytes())?;
            w.write_all(&1u32.to_be_bytes())?;
            w.write_all(&0u32.to_be_bytes())?;
            w.write_all(&700u32.to_be_bytes())?;
            w.write_all(&(dims as u32).to_be_bytes())?;
            w.write_all(&1u32.to_be_bytes())?;
            for x in &v {
                w.write_all(&4u32.to_be_bytes())?;
                w.write_all(&x.to_be_bytes())?;
            }
        }
    }
    w.write_all(&(-1i16).to_be_bytes())?;
    w.flush()?;
    Ok(())
}
