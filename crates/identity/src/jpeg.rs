//! A JPEG's structure checked against what its headers declare, before it is
//! decoded.
//!
//! The decoder conceals damage: it fills the blocks a file lacks with grey and
//! stops at an end-of-image marker wherever it meets one, so a photo cut short
//! with `FF D9` appended decodes as a document with a grey band (issue 60).
//! No library reports that, so the file is walked here (ITU T.81): the
//! segments, each with its declared length inside the file; the frame's size
//! and components; and each Huffman-coded scan's entropy-coded data decoded
//! far enough to count its blocks, which must all be there before the scan's
//! data ends. Every frame component must be in a scan.
//!
//! Counted: sequential scans (baseline and extended), and a progressive
//! file's first passes (DC, and AC spectral selection). Walked only: its AC
//! refinement passes, whose codes depend on every earlier pass's
//! coefficients; a file cut in those decodes whole, at a lower quality, with
//! no grey band. Lossless and arithmetic-coded files, which the decoder
//! refuses anyway, are walked only.
//!
//! The work is one pass over the file and a few counters: no pixel is stored.

/// A frame component: its id and sampling factors.
#[derive(Clone, Copy)]
struct Component {
    id: u8,
    h: u32,
    v: u32,
}

/// The frame header (SOFn).
struct Frame {
    width: u32,
    height: u32,
    /// Huffman-coded, sequential or progressive (SOF0, SOF1, SOF2).
    counted: bool,
    progressive: bool,
    components: Vec<Component>,
}

impl Frame {
    fn max_sampling(&self) -> (u32, u32) {
        self.components
            .iter()
            .fold((1, 1), |(h, v), c| (h.max(c.h), v.max(c.v)))
    }

    /// Blocks of one component across and down (a non-interleaved scan's units).
    fn blocks_of(&self, c: Component) -> (u64, u64) {
        let (hmax, vmax) = self.max_sampling();
        let across = (u64::from(self.width) * u64::from(c.h)).div_ceil(u64::from(hmax));
        let down = (u64::from(self.height) * u64::from(c.v)).div_ceil(u64::from(vmax));
        (across.div_ceil(8), down.div_ceil(8))
    }

    /// MCUs across and down of an interleaved scan.
    fn mcus(&self) -> (u64, u64) {
        let (hmax, vmax) = self.max_sampling();
        (
            u64::from(self.width).div_ceil(8 * u64::from(hmax)),
            u64::from(self.height).div_ceil(8 * u64::from(vmax)),
        )
    }
}

/// A canonical Huffman table (DHT), as first code, count and first symbol's
/// index for each code length.
#[derive(Clone, Default)]
struct Table {
    first: [u32; 17],
    count: [u32; 17],
    offset: [usize; 17],
    symbols: Vec<u8>,
}

impl Table {
    fn new(counts: &[u8], symbols: &[u8]) -> Result<Table, String> {
        let mut t = Table {
            symbols: symbols.to_vec(),
            ..Table::default()
        };
        let (mut code, mut at) = (0u32, 0usize);
        for len in 1..=16 {
            let n = u32::from(counts[len - 1]);
            t.first[len] = code;
            t.count[len] = n;
            t.offset[len] = at;
            code += n;
            at += n as usize;
            if code > 1 << len {
                return Err("a Huffman table declares more codes than its lengths hold".into());
            }
            code <<= 1;
        }
        Ok(t)
    }

    fn decode(&self, bits: &mut Bits) -> Option<u8> {
        let mut code = 0;
        for len in 1..=16 {
            code = (code << 1) | bits.bit()?;
            let index = code.wrapping_sub(self.first[len]);
            if code >= self.first[len] && index < self.count[len] {
                return self.symbols.get(self.offset[len] + index as usize).copied();
            }
        }
        None
    }
}

/// Entropy-coded data, bit by bit, unstuffing `FF 00`; it ends at a marker.
struct Bits<'a> {
    data: &'a [u8],
    at: usize,
    byte: u32,
    left: u32,
}

impl Bits<'_> {
    fn bit(&mut self) -> Option<u32> {
        if self.left == 0 {
            let b = *self.data.get(self.at)?;
            if b == 0xFF {
                // A stuffed 0xFF; anything else after it is a marker.
                if self.data.get(self.at + 1) != Some(&0x00) {
                    return None;
                }
                self.at += 1;
            }
            self.at += 1;
            self.byte = u32::from(b);
            self.left = 8;
        }
        self.left -= 1;
        Some((self.byte >> self.left) & 1)
    }

    fn skip(&mut self, n: u32) -> Option<()> {
        for _ in 0..n {
            self.bit()?;
        }
        Some(())
    }

    fn take(&mut self, n: u32) -> Option<u32> {
        let mut v = 0;
        for _ in 0..n {
            v = (v << 1) | self.bit()?;
        }
        Some(v)
    }

    /// At a restart interval's end: the byte's padding dropped and the
    /// restart marker, where it is, passed.
    fn restart(&mut self) {
        self.left = 0;
        if self.data.get(self.at) == Some(&0xFF)
            && matches!(self.data.get(self.at + 1), Some(0xD0..=0xD7))
        {
            self.at += 2;
        }
    }
}

/// One scan (SOS): its components (with their tables) and spectral selection.
struct Scan {
    /// Frame component, DC table, AC table.
    components: Vec<(Component, usize, usize)>,
    start: u8,
    end: u8,
    /// Successive approximation's high bit: non-zero in a refinement pass.
    high: u8,
}

/// Why the JPEG is not whole, or `Ok` when its every declared part is there.
pub fn check(bytes: &[u8]) -> Result<(), String> {
    let cut = |what: &str| Err(format!("{what}: the file is cut short"));
    let mut frame: Option<Frame> = None;
    let mut dc = vec![Table::default(); 4];
    let mut ac = vec![Table::default(); 4];
    let mut restart_interval = 0u64;
    let mut scanned: Vec<u8> = Vec::new();
    let mut scans = 0;
    let mut at = 2; // after SOI
    loop {
        match bytes.get(at..at + 2) {
            Some([0xFF, 0xFF]) => at += 1, // fill
            Some([0xFF, 0xD9]) => break,
            Some([0xFF, 0x01 | 0xD0..=0xD7]) => at += 2,
            Some([0xFF, marker]) => {
                let marker = *marker;
                let Some(&[hi, lo]) = bytes.get(at + 2..at + 4) else {
                    return cut("a segment's header is incomplete");
                };
                let length = usize::from(u16::from_be_bytes([hi, lo]));
                let Some(body) = bytes.get(at + 4..at + 2 + length).filter(|_| length >= 2) else {
                    return cut(&format!(
                        "a segment (marker {marker:02X}) declares {length} bytes past the file's end"
                    ));
                };
                at += 2 + length;
                match marker {
                    0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                        frame = Some(frame_of(marker, body)?)
                    }
                    0xC4 => tables_of(body, &mut dc, &mut ac)?,
                    0xDD => {
                        restart_interval = body
                            .get(..2)
                            .map_or(0, |b| u64::from(u16::from_be_bytes([b[0], b[1]])))
                    }
                    0xDA => {
                        scans += 1;
                        let f = frame
                            .as_ref()
                            .ok_or("a scan comes before the frame header")?;
                        let scan = scan_of(body, f)?;
                        scanned.extend(
                            scan.components
                                .iter()
                                .filter(|_| scan.start == 0)
                                .map(|c| c.0.id),
                        );
                        let mut bits = Bits {
                            data: bytes,
                            at,
                            byte: 0,
                            left: 0,
                        };
                        if f.counted && !(f.progressive && scan.start > 0 && scan.high > 0) {
                            let (done, of) =
                                count_blocks(f, &scan, &dc, &ac, restart_interval, &mut bits);
                            if done < of {
                                return cut(&format!(
                                    "scan {scans} ends after {done} of its {of} blocks"
                                ));
                            }
                            at = bits.at;
                        }
                        // On to the next marker: a 0xFF not followed by a
                        // stuffed 0x00, a restart or fill.
                        while at + 1 < bytes.len()
                            && (bytes[at] != 0xFF
                                || matches!(bytes[at + 1], 0x00 | 0xD0..=0xD7 | 0xFF))
                        {
                            at += 1;
                        }
                    }
                    _ => {}
                }
            }
            Some(_) => return Err(format!("byte {at} should start a marker")),
            None => return cut("it ends before its end-of-image marker"),
        }
    }
    let Some(f) = frame else {
        return cut("it ends before its frame header");
    };
    if let Some(c) = f.components.iter().find(|c| !scanned.contains(&c.id)) {
        return cut(&format!("component {} is in none of its scans", c.id));
    }
    Ok(())
}

fn frame_of(marker: u8, body: &[u8]) -> Result<Frame, String> {
    let bad = || "its frame header is malformed".to_owned();
    let &[_, h1, h0, w1, w0, n, ..] = body else {
        return Err(bad());
    };
    let specs = body.get(6..6 + 3 * usize::from(n)).ok_or_else(bad)?;
    let components = specs
        .chunks_exact(3)
        .map(|c| Component {
            id: c[0],
            h: u32::from(c[1] >> 4),
            v: u32::from(c[1] & 15),
        })
        .collect::<Vec<_>>();
    if components.is_empty()
        || components
            .iter()
            .any(|c| !(1..=4).contains(&c.h) || !(1..=4).contains(&c.v))
    {
        return Err(bad());
    }
    Ok(Frame {
        width: u32::from(u16::from_be_bytes([w1, w0])),
        height: u32::from(u16::from_be_bytes([h1, h0])),
        // A height of 0 is declared later (DNL): nothing to count against.
        counted: matches!(marker, 0xC0..=0xC2) && h1 | h0 != 0,
        progressive: marker == 0xC2,
        components,
    })
}

fn tables_of(mut body: &[u8], dc: &mut [Table], ac: &mut [Table]) -> Result<(), String> {
    while let [class_id, rest @ ..] = body {
        let counts = rest.get(..16).ok_or("a Huffman table is cut")?;
        let n: usize = counts.iter().map(|&c| usize::from(c)).sum();
        let symbols = rest.get(16..16 + n).ok_or("a Huffman table is cut")?;
        let table = Table::new(counts, symbols)?;
        let slot = usize::from(class_id & 3);
        if class_id >> 4 == 0 {
            &mut dc[slot]
        } else {
            &mut ac[slot]
        }
        .clone_from(&table);
        body = &rest[16 + n..];
    }
    Ok(())
}

fn scan_of(body: &[u8], frame: &Frame) -> Result<Scan, String> {
    let bad = || "a scan header is malformed".to_owned();
    let n = usize::from(*body.first().ok_or_else(bad)?);
    let specs = body.get(1..1 + 2 * n).ok_or_else(bad)?;
    let components = specs
        .chunks_exact(2)
        .map(|s| {
            let c = frame
                .components
                .iter()
                .find(|c| c.id == s[0])
                .ok_or_else(bad)?;
            Ok((*c, usize::from(s[1] >> 4 & 3), usize::from(s[1] & 3)))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let &[start, end, approximation] = body.get(1 + 2 * n..4 + 2 * n).ok_or_else(bad)? else {
        return Err(bad());
    };
    if components.is_empty() || start > end || end > 63 {
        return Err(bad());
    }
    Ok(Scan {
        components,
        start,
        end,
        high: approximation >> 4,
    })
}

/// Decodes the scan's units (blocks, or MCUs of blocks) until its data ends;
/// gives the blocks decoded and the blocks the frame declares for it.
fn count_blocks(
    frame: &Frame,
    scan: &Scan,
    dc: &[Table],
    ac: &[Table],
    restart_interval: u64,
    bits: &mut Bits,
) -> (u64, u64) {
    // Units, and each unit's blocks: one component's blocks, or MCUs.
    let (units, unit): (u64, Vec<(usize, usize)>) = if let [(c, d, a)] = scan.components[..] {
        let (across, down) = frame.blocks_of(c);
        (across * down, vec![(d, a)])
    } else {
        let (across, down) = frame.mcus();
        let unit = scan
            .components
            .iter()
            .flat_map(|&(c, d, a)| std::iter::repeat_n((d, a), (c.h * c.v) as usize))
            .collect();
        (across * down, unit)
    };
    let per_unit = unit.len() as u64;
    let mut eob_run = 0u32;
    for u in 0..units {
        if restart_interval > 0 && u > 0 && u % restart_interval == 0 {
            bits.restart();
            eob_run = 0;
        }
        for (i, &(d, a)) in unit.iter().enumerate() {
            let ok = if !frame.progressive {
                sequential_block(&dc[d], &ac[a], bits)
            } else if scan.start == 0 {
                progressive_dc(&dc[d], scan.high, bits)
            } else {
                progressive_ac_first(&ac[a], scan, &mut eob_run, bits)
            };
            if ok.is_none() {
                return (u * per_unit + i as u64, units * per_unit);
            }
        }
    }
    bits.left = 0;
    (units * per_unit, units * per_unit)
}

/// A sequential block: a DC difference, then AC codes to the 64th
/// coefficient or an end-of-block.
fn sequential_block(dc: &Table, ac: &Table, bits: &mut Bits) -> Option<()> {
    let size = dc.decode(bits)?;
    bits.skip(u32::from(size))?;
    let mut k = 1;
    while k < 64 {
        let rs = ac.decode(bits)?;
        let (run, size) = (u32::from(rs >> 4), u32::from(rs & 15));
        if size == 0 {
            if run != 15 {
                break;
            }
            k += 16;
            continue;
        }
        k += run;
        bits.skip(size)?;
        k += 1;
    }
    (k <= 64).then_some(())
}

/// A progressive DC pass's block: a difference first, one bit in refinement.
fn progressive_dc(dc: &Table, high: u8, bits: &mut Bits) -> Option<()> {
    if high > 0 {
        return bits.skip(1);
    }
    let size = dc.decode(bits)?;
    bits.skip(u32::from(size))
}

/// A progressive AC first pass's block: codes over the spectral band, or a
/// share of a run of end-of-blocks.
fn progressive_ac_first(ac: &Table, scan: &Scan, eob_run: &mut u32, bits: &mut Bits) -> Option<()> {
    if *eob_run > 0 {
        *eob_run -= 1;
        return Some(());
    }
    let mut k = u32::from(scan.start);
    while k <= u32::from(scan.end) {
        let rs = ac.decode(bits)?;
        let (run, size) = (u32::from(rs >> 4), u32::from(rs & 15));
        if size == 0 {
            if run < 15 {
                *eob_run = (1 << run) - 1 + bits.take(run)?;
                break;
            }
            k += 16;
            continue;
        }
        k += run;
        bits.skip(size)?;
        k += 1;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::codecs::jpeg::JpegEncoder;
    use image::{Rgb, RgbImage};

    fn jpeg(width: u32, height: u32) -> Vec<u8> {
        let image = RgbImage::from_fn(width, height, |x, y| {
            Rgb([
                (x * 7 % 251) as u8,
                (y * 5 % 241) as u8,
                ((x ^ y) % 256) as u8,
            ])
        });
        let mut out = Vec::new();
        JpegEncoder::new_with_quality(&mut out, 85)
            .encode_image(&image)
            .unwrap();
        out
    }

    #[test]
    fn a_whole_jpeg_passes_and_trailing_data_is_no_damage() {
        for (w, h) in [(64, 48), (1, 1), (17, 33), (640, 480)] {
            let whole = jpeg(w, h);
            assert_eq!(check(&whole), Ok(()), "{w}x{h}");
            let mut trailing = whole.clone();
            trailing.extend_from_slice(b"\0\0\0\x18ftypmp42");
            assert_eq!(check(&trailing), Ok(()));
        }
    }

    #[test]
    fn a_jpeg_cut_short_fails_with_or_without_an_end_marker_appended() {
        let whole = jpeg(640, 480);
        for cut in [
            4,
            20,
            700,
            whole.len() / 3,
            whole.len() / 2,
            whole.len() - 200,
        ] {
            let error = check(&whole[..cut]).expect_err("cut");
            assert!(error.contains("cut short"), "{cut}: {error}");
            let mut sealed = whole[..cut].to_vec();
            sealed.extend_from_slice(&[0xFF, 0xD9]);
            let error = check(&sealed).expect_err("cut, then sealed");
            assert!(error.contains("cut short"), "{cut}: {error}");
        }
        let mut sealed = whole[..whole.len() / 2].to_vec();
        sealed.extend_from_slice(&[0xFF, 0xD9]);
        let error = check(&sealed).unwrap_err();
        assert!(error.starts_with("scan 1 ends after "), "{error}");
    }

    #[test]
    fn a_segment_longer_than_the_file_is_cut_short() {
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x40, 0x00];
        bytes.extend_from_slice(&[0; 100]);
        bytes.extend_from_slice(&[0xFF, 0xD9]);
        let error = check(&bytes).unwrap_err();
        assert!(error.contains("past the file's end"), "{error}");
    }

    #[test]
    fn garbage_never_panics() {
        let whole = jpeg(64, 48);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            let mut bytes = whole.clone();
            for _ in 0..4 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let at = (state % bytes.len() as u64) as usize;
                bytes[at] = (state >> 32) as u8;
            }
            let _ = check(&bytes);
        }
    }
}
