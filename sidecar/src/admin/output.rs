//! How the admin command prints: a new key alone on stdout (its description on
//! stderr), listings as aligned columns, or JSON with `--json`.
//!
//! Output goes through [`out`], never `println!`, which panics when the
//! reader has gone: `vigil-sidecar keys list | head -1` must end quietly,
//! as any Unix tool does, and a new key that could not be printed must say
//! so, since it is shown only once.

use std::io::Write;

use serde_json::{json, Map, Value};
use tokio_postgres::Row;

type BoxError = Box<dyn std::error::Error>;

/// Writes one line to stdout.
pub fn out(line: impl std::fmt::Display) -> std::io::Result<()> {
    writeln!(std::io::stdout().lock(), "{line}")
}

/// A listing's reader that stopped reading (`| head`) has what it wanted.
fn listed(result: std::io::Result<()>) -> Result<(), BoxError> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Prints a `(id, key, prefix)` row of a function that made a key.
pub fn print_created(what: &str, rows: &[Row], as_json: bool) -> Result<(), BoxError> {
    let row = rows.first().ok_or("the database returned no key")?;
    let (id, key, prefix): (i64, String, String) =
        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    let printed = if as_json {
        out(json!({ "id": id, "prefix": prefix, "key": key }))
    } else {
        out(&key)
    };
    if let Err(e) = printed {
        return Err(format!(
            "created {what} {prefix}, but could not print its key ({e}): revoke it and create another"
        )
        .into());
    }
    if !as_json {
        eprintln!("created {what} {prefix}; the key above is shown only now: store it");
    }
    Ok(())
}

/// Prints rows whose columns are all text (NULL shown as empty).
pub fn print_listing(rows: &[Row], as_json: bool) -> Result<(), BoxError> {
    let Some(first) = rows.first() else {
        if as_json {
            return listed(out("[]"));
        } else {
            eprintln!("(none)");
        }
        return Ok(());
    };
    let names: Vec<&str> = first.columns().iter().map(|c| c.name()).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            (0..names.len())
                .map(|i| {
                    row.try_get::<_, Option<String>>(i)
                        .map(Option::unwrap_or_default)
                })
                .collect::<Result<_, _>>()
        })
        .collect::<Result<_, _>>()?;
    if as_json {
        let records: Vec<Value> = cells
            .iter()
            .map(|row| {
                let fields: Map<String, Value> = names
                    .iter()
                    .zip(row)
                    .map(|(n, v)| ((*n).to_owned(), Value::String(v.clone())))
                    .collect();
                Value::Object(fields)
            })
            .collect();
        return listed(out(Value::Array(records)));
    }
    let widths: Vec<usize> = (0..names.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([names[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: Vec<&str>| {
        let padded: Vec<String> = values
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect();
        out(padded.join("  ").trim_end())
    };
    let mut printed = line(names.clone());
    for row in &cells {
        if printed.is_err() {
            break;
        }
        printed = line(row.iter().map(String::as_str).collect());
    }
    listed(printed)
}
