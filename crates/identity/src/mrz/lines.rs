//! From text to lines: [`parse`] normalises what the OCR gave, tells the
//! format by the lines' count and length, and repairs a line a filler or two
//! too long or short, before the lines are read ([`read`]).

use std::fmt;

use super::correct::read;
use super::date::Date;
use super::fields::{Mrz, Reading};
use super::layout::Format;

/// Why the text is not a machine-readable zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MrzError {
    /// No characters besides spaces.
    Empty,
    /// A character no OCR confusion explains (the zone has only `A-Z`, `0-9`, `<`).
    Character {
        line: usize,
        column: usize,
        found: char,
    },
    /// Not two or three lines.
    LineCount { found: usize },
    /// Line lengths that fit no format, or could not be repaired to it.
    LineLengths { found: Vec<usize> },
}

impl fmt::Display for MrzError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MrzError::Empty => write!(f, "no text"),
            MrzError::Character {
                line,
                column,
                found,
            } => write!(
                f,
                "line {} column {}: {found:?} is not a character of the zone",
                line + 1,
                column + 1
            ),
            MrzError::LineCount { found } => {
                write!(
                    f,
                    "{found} lines: a zone has 2 (TD2, TD3, visas) or 3 (TD1)"
                )
            }
            MrzError::LineLengths { found } => write!(
                f,
                "lines of {found:?} characters fit no format (TD1 3 x 30, TD2 2 x 36, TD3 2 x 44)"
            ),
        }
    }
}

impl std::error::Error for MrzError {}

/// Reads and checks the zone in `text` (its lines separated by newlines).
/// `today` resolves the two-digit years.
pub fn parse(text: &str, today: Date) -> Result<Mrz, MrzError> {
    let lines = normalise(text)?;
    let format = format_of(&lines)?;
    // Every way of bringing each line to its length, then only those whose
    // check digits hold, unless no repair was needed.
    let per_line: Vec<Vec<Vec<u8>>> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| repairs(line, format, i))
        .collect();
    let lengths = || MrzError::LineLengths {
        found: lines.iter().map(Vec::len).collect(),
    };
    if per_line.iter().any(Vec::is_empty) {
        return Err(lengths());
    }
    let repaired: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.len() != format.line_length())
        .map(|(i, _)| i)
        .collect();
    let combinations: Vec<Vec<Vec<u8>>> = per_line.iter().fold(vec![Vec::new()], |acc, options| {
        acc.iter()
            .flat_map(|prefix| {
                options.iter().map(move |o| {
                    let mut next = prefix.clone();
                    next.push(o.clone());
                    next
                })
            })
            .collect()
    });
    if repaired.is_empty()
        || combinations.len() == 1 && repaired.iter().all(|&i| format.is_names_line(i))
    {
        let only = combinations.into_iter().next().ok_or_else(lengths)?;
        return Ok(read(only, format, today, repaired));
    }
    let mut valid: Vec<Mrz> = combinations
        .into_iter()
        .map(|lines| read(lines, format, today, repaired.clone()))
        .filter(|m| matches!(m.reading, Reading::Valid | Reading::Corrected))
        .collect();
    let mut seen = Vec::new();
    valid.retain(|m| {
        let new = !seen.contains(&m.lines);
        seen.push(m.lines.clone());
        new
    });
    if valid.len() == 1 {
        valid.pop().ok_or_else(lengths)
    } else {
        Err(lengths())
    }
}

/// Lines in upper case, trimmed, blank ones dropped, inner spaces and `<`
/// look-alikes as `<`; a single line of exactly two or three lines' length split.
fn normalise(text: &str) -> Result<Vec<Vec<u8>>, MrzError> {
    let mut lines = Vec::new();
    for raw in text.lines() {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        let line_no = lines.len();
        let mut line = Vec::with_capacity(trimmed.len());
        for (column, c) in trimmed.chars().enumerate() {
            let c = match c {
                c if c.is_whitespace() => '<',
                '«' | '‹' | '〈' | '＜' => '<',
                c => c.to_ascii_uppercase(),
            };
            if !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '<') {
                return Err(MrzError::Character {
                    line: line_no,
                    column,
                    found: c,
                });
            }
            line.push(c as u8);
        }
        lines.push(line);
    }
    match lines.as_slice() {
        [] => Err(MrzError::Empty),
        [one] => {
            for (count, length) in [(2, 44), (2, 36), (3, 30)] {
                if one.len() == count * length {
                    return Ok(one.chunks(length).map(<[u8]>::to_vec).collect());
                }
            }
            Err(MrzError::LineCount { found: 1 })
        }
        _ => Ok(lines),
    }
}

/// The format whose line count the lines have and whose length they are
/// within two characters of (a names line may be shorter: see [`repairs`]).
fn format_of(lines: &[Vec<u8>]) -> Result<Format, MrzError> {
    let near = |len: usize, target: usize| len.abs_diff(target) <= 2;
    let lengths = || MrzError::LineLengths {
        found: lines.iter().map(Vec::len).collect(),
    };
    let visa = lines.first().and_then(|l| l.first()) == Some(&b'V');
    match lines.len() {
        3 => {
            if near(lines[0].len(), 30) && near(lines[1].len(), 30) && lines[2].len() <= 32 {
                Ok(Format::Td1)
            } else {
                Err(lengths())
            }
        }
        2 => {
            // The data line decides; the names line may have lost its fillers.
            let data = lines[1].len();
            let names_fits = |target: usize| lines[0].len() <= target + 2;
            if near(data, 44) && names_fits(44) {
                Ok(if visa { Format::MrvA } else { Format::Td3 })
            } else if near(data, 36) && names_fits(36) {
                Ok(if visa { Format::MrvB } else { Format::Td2 })
            } else {
                Err(lengths())
            }
        }
        found => Err(MrzError::LineCount { found }),
    }
}

/// The ways of bringing `line` to the format's length. A names line: its
/// trailing fillers trimmed or padded (names are left-aligned and padded,
/// and trailing fillers read as spaces are lost with the surrounding ones),
/// one way or none. A data line within two characters: fillers added to or
/// removed from a run of them, or at either end, each way once; [`parse`]
/// keeps those whose check digits hold.
fn repairs(line: &[u8], format: Format, index: usize) -> Vec<Vec<u8>> {
    let target = format.line_length();
    let len = line.len();
    if len == target {
        return vec![line.to_vec()];
    }
    if format.is_names_line(index) {
        if len < target {
            let mut padded = line.to_vec();
            padded.resize(target, b'<');
            return vec![padded];
        }
        let extra = &line[target..];
        return if extra.iter().all(|&c| c == b'<') {
            vec![line[..target].to_vec()]
        } else {
            Vec::new()
        };
    }
    if len.abs_diff(target) > 2 {
        return Vec::new();
    }
    let mut out: Vec<Vec<u8>> = vec![line.to_vec()];
    for _ in 0..len.abs_diff(target) {
        let mut next = Vec::new();
        for l in &out {
            if len > target {
                next.extend(removals(l));
            } else {
                next.extend(insertions(l));
            }
        }
        next.sort();
        next.dedup();
        out = next;
    }
    out
}

/// `line` with one character fewer: a filler from a run, or an end character.
fn removals(line: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..line.len() {
        let at_end = i == 0 || i + 1 == line.len();
        if line[i] == b'<' || at_end {
            let mut l = line.to_vec();
            l.remove(i);
            out.push(l);
        }
    }
    out
}

/// `line` with one filler more: next to a filler, or at either end.
fn insertions(line: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..=line.len() {
        let by_filler = line.get(i) == Some(&b'<') || (i > 0 && line.get(i - 1) == Some(&b'<'));
        if by_filler || i == 0 || i == line.len() {
            let mut l = line.to_vec();
            l.insert(i, b'<');
            out.push(l);
        }
    }
    out
}
