//! Reading lines of the format's length: the fixes a field's type decides
//! alone, then, when a check digit fails, the one smallest set of
//! confusable-character substitutions that makes every one hold, if only one does.

use super::check_digits::{all_valid, checks, number_and_digit, CheckOutcome};
use super::date::Date;
use super::fields::{fields, Correction, Mrz, Reading};
use super::layout::{chars, find, layout, Checked, Field, Format, Kind, Slot};

/// Letters a numeric field cannot hold, as the digits OCR mistakes them for.
fn as_digit(c: u8) -> Option<u8> {
    Some(match c {
        b'O' | b'Q' | b'D' => b'0',
        b'I' | b'L' => b'1',
        b'Z' => b'2',
        b'S' => b'5',
        b'G' => b'6',
        b'B' => b'8',
        // `<` is a numeric field's filler; no digit looks like a K.
        b'K' => b'<',
        _ => return None,
    })
}

/// Digits an alphabetic field cannot hold, as the letters OCR mistakes them for.
fn as_letter(c: u8) -> Option<u8> {
    Some(match c {
        b'0' => b'O',
        b'1' => b'I',
        b'2' => b'Z',
        b'5' => b'S',
        b'6' => b'G',
        b'8' => b'B',
        _ => return None,
    })
}

/// The other reading of a confusable character in an alphanumeric field,
/// for the pairs a check digit can tell apart (see [the zone's doc](super)).
fn swapped(c: u8) -> Option<u8> {
    Some(match c {
        b'O' => b'0',
        b'0' => b'O',
        b'I' => b'1',
        b'1' => b'I',
        b'B' => b'8',
        b'8' => b'B',
        b'S' => b'5',
        b'5' => b'S',
        b'Z' => b'2',
        b'2' => b'Z',
        _ => return None,
    })
}

/// Most substitutions in one corrected reading. OCR of the zone's font
/// confuses a character or two; each more would let a changed digit be
/// "corrected" more easily.
const MAX_SUBSTITUTIONS: usize = 2;

/// Reads `lines` (of the format's lengths): the fixes a field's type
/// decides, the checks, and the substitution search if one fails.
pub(super) fn read(
    mut lines: Vec<Vec<u8>>,
    format: Format,
    today: Date,
    repaired_lines: Vec<usize>,
) -> Mrz {
    let mut corrections = Vec::new();
    for slot in layout(format) {
        let kind = slot.field.kind();
        for column in slot.start..slot.start + slot.len {
            let Some(c) = lines.get_mut(slot.line).and_then(|l| l.get_mut(column)) else {
                continue;
            };
            let fixed = match kind {
                Kind::Numeric => as_digit(*c),
                Kind::Alpha => as_letter(*c),
                Kind::Alphanumeric => None,
            };
            if let Some(fixed) = fixed {
                corrections.push(Correction {
                    line: slot.line,
                    column,
                    read: char::from(*c),
                    corrected: char::from(fixed),
                    field: slot.field,
                });
                *c = fixed;
            }
        }
    }
    if let Some(names) = find(format, Field::Names) {
        for column in stray_fillers(chars(&lines, names)) {
            let column = names.start + column;
            if let Some(c) = lines.get_mut(names.line).and_then(|l| l.get_mut(column)) {
                corrections.push(Correction {
                    line: names.line,
                    column,
                    read: 'K',
                    corrected: '<',
                    field: Field::Names,
                });
                *c = b'<';
            }
        }
    }
    let mut reading = Reading::Valid;
    let failed_as_read: Vec<Checked> = checks(&lines, format)
        .into_iter()
        .filter(|c| c.outcome != CheckOutcome::Valid)
        .map(|c| c.checked)
        .collect();
    if !failed_as_read.is_empty() {
        reading = match search(&lines, format) {
            Search::One(changes) => {
                for (line, column, to) in changes {
                    if let Some(c) = lines.get_mut(line).and_then(|l| l.get_mut(column)) {
                        let field = layout(format)
                            .into_iter()
                            .find(|s| {
                                s.line == line && (s.start..s.start + s.len).contains(&column)
                            })
                            .map_or(Field::OptionalData, |s| s.field);
                        corrections.push(Correction {
                            line,
                            column,
                            read: char::from(*c),
                            corrected: char::from(to),
                            field,
                        });
                        *c = to;
                    }
                }
                Reading::Corrected
            }
            Search::Many(candidates) => Reading::Ambiguous { candidates },
            Search::None => Reading::Failed,
        };
    }
    corrections.sort_by_key(|c| (c.line, c.column));
    let mut mrz = fields(lines, format, today, reading, corrections, repaired_lines);
    mrz.failed_as_read = failed_as_read;
    mrz
}

/// Columns of the names field where a `K` stands between fillers after the
/// names have ended (a `<<` before it and a second one earlier): a misread
/// filler, as no name part follows the end of the names.
fn stray_fillers(names: &[u8]) -> Vec<usize> {
    let Some(first_separator) = names.windows(2).position(|w| w == b"<<") else {
        return Vec::new();
    };
    (first_separator + 3..names.len())
        .filter(|&i| {
            names[i] == b'K'
                && names[i - 1] == b'<'
                && names[i - 2] == b'<'
                && names.get(i + 1).is_none_or(|&c| c == b'<')
                && i - 2 > first_separator + 1
        })
        .collect()
}

enum Search {
    One(Vec<(usize, usize, u8)>),
    Many(usize),
    None,
}

/// The smallest sets of substitutions, among the confusable characters of
/// the fields a failing check digit covers (and no passing one does), that
/// make every check digit hold; one is accepted only if it is alone.
///
/// The composite weighs the document number as its own check does (both
/// start at the number's first character), so on the number it adds no
/// information: one digit modulo 10 arbitrates, and a wrong substitution
/// passes it one time in ten. Hence the fewest substitutions, and uniqueness.
fn search(lines: &[Vec<u8>], format: Format) -> Search {
    let positions: Vec<(usize, usize, u8)> = suspects(lines, format)
        .into_iter()
        .filter_map(|(line, column)| {
            let c = *lines.get(line)?.get(column)?;
            swapped(c).map(|to| (line, column, to))
        })
        .collect();
    for size in 1..=MAX_SUBSTITUTIONS.min(positions.len()) {
        let mut found: Vec<Vec<(usize, usize, u8)>> = Vec::new();
        for set in subsets(positions.len(), size) {
            let set: Vec<(usize, usize, u8)> = set
                .iter()
                .filter_map(|&i| positions.get(i).copied())
                .collect();
            let mut candidate = lines.to_vec();
            for &(line, column, to) in &set {
                if let Some(c) = candidate.get_mut(line).and_then(|l| l.get_mut(column)) {
                    *c = to;
                }
            }
            if all_valid(&checks(&candidate, format)) {
                found.push(set);
            }
        }
        match found.len() {
            0 => continue,
            1 => return found.pop().map_or(Search::None, Search::One),
            n => return Search::Many(n),
        }
    }
    Search::None
}

/// Index sets of `size` (1 or 2) out of `n`.
fn subsets(n: usize, size: usize) -> Vec<Vec<usize>> {
    match size {
        1 => (0..n).map(|i| vec![i]).collect(),
        _ => (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| vec![i, j]))
            .collect(),
    }
}

/// (line, column) of the alphanumeric characters a failing check digit
/// may blame: the document number's when its own check fails, TD3's
/// optional data's when its own does, and when only the composite fails,
/// the optional data no other check digit covers.
fn suspects(lines: &[Vec<u8>], format: Format) -> Vec<(usize, usize)> {
    let failing: Vec<Checked> = checks(lines, format)
        .into_iter()
        .filter(|c| c.outcome != CheckOutcome::Valid)
        .map(|c| c.checked)
        .collect();
    let columns = |s: Slot, from: usize, to: usize| {
        (s.start + from..s.start + to.min(s.len)).map(move |c| (s.line, c))
    };
    let (_, _, continuation) = number_and_digit(lines, format);
    let mut out = Vec::new();
    for slot in layout(format) {
        let blamed = match slot.field {
            Field::DocumentNumber => failing.contains(&Checked::DocumentNumber),
            Field::OptionalData if format == Format::Td3 => {
                failing.contains(&Checked::OptionalData)
            }
            Field::OptionalData => {
                // A long number's continuation is the number's.
                if failing.contains(&Checked::DocumentNumber) {
                    out.extend(columns(slot, 0, continuation));
                }
                failing == [Checked::Composite]
            }
            Field::OptionalData2 => failing == [Checked::Composite],
            _ => false,
        };
        if blamed {
            let from = if slot.field == Field::OptionalData && format != Format::Td3 {
                continuation
            } else {
                0
            };
            out.extend(columns(slot, from, slot.len));
        }
    }
    out
}
