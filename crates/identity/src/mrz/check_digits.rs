//! The check digits (ICAO 9303 part 3): how one is computed, and every one
//! of a format's lines checked, each outcome on its own.

use super::layout::{field, Checked, Field, Format};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    Valid,
    /// The digit printed (or what stands in its place) is not the one computed.
    Invalid {
        printed: char,
        computed: u8,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    pub checked: Checked,
    pub outcome: CheckOutcome,
}

/// The check digit of `chars` (ICAO 9303 part 3); `None` if a character is
/// outside the zone's alphabet.
pub fn check_digit(chars: &[u8]) -> Option<u8> {
    const WEIGHTS: [u32; 3] = [7, 3, 1];
    let mut sum = 0u32;
    for (i, &c) in chars.iter().enumerate() {
        sum += value(c)? * WEIGHTS[i % 3];
    }
    Some((sum % 10) as u8)
}

fn value(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some(u32::from(c - b'0')),
        b'A'..=b'Z' => Some(u32::from(c - b'A') + 10),
        b'<' => Some(0),
        _ => None,
    }
}

pub(super) fn all_valid(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.outcome == CheckOutcome::Valid)
}

/// The document number and its check digit, a long number's continuation
/// (TD1, TD2: `<` in the check digit's place) included.
pub(super) fn number_and_digit(lines: &[Vec<u8>], format: Format) -> (Vec<u8>, u8, usize) {
    let number = field(lines, format, Field::DocumentNumber);
    let digit = field(lines, format, Field::CheckDigit(Checked::DocumentNumber))
        .first()
        .copied()
        .unwrap_or(b'<');
    let optional = field(lines, format, Field::OptionalData);
    let long = matches!(format, Format::Td1 | Format::Td2)
        && digit == b'<'
        && optional.first().is_some_and(|&c| c != b'<');
    if long {
        let run = optional.iter().take_while(|&&c| c != b'<').count();
        if let Some((&last, rest)) = optional[..run].split_last() {
            let mut full = number.to_vec();
            full.extend_from_slice(rest);
            return (full, last, run);
        }
    }
    (number.to_vec(), digit, 0)
}

/// Every check digit of the format, in the order of [`Checked`].
pub(super) fn checks(lines: &[Vec<u8>], format: Format) -> Vec<Check> {
    let verdict = |checked: Checked, data: &[u8], printed: u8, filler_allowed: bool| {
        let computed = check_digit(data).unwrap_or(u8::MAX);
        let valid = if printed == b'<' {
            filler_allowed && computed == 0 && data.iter().all(|&c| c == b'<')
        } else {
            printed.is_ascii_digit() && printed - b'0' == computed
        };
        Check {
            checked,
            outcome: if valid {
                CheckOutcome::Valid
            } else {
                CheckOutcome::Invalid {
                    printed: char::from(printed),
                    computed: computed.min(9),
                }
            },
        }
    };
    let digit_of = |c: Checked| {
        field(lines, format, Field::CheckDigit(c))
            .first()
            .copied()
            .unwrap_or(b'<')
    };
    let (number, number_digit, _) = number_and_digit(lines, format);
    let mut out = vec![
        verdict(Checked::DocumentNumber, &number, number_digit, false),
        verdict(
            Checked::BirthDate,
            field(lines, format, Field::BirthDate),
            digit_of(Checked::BirthDate),
            false,
        ),
        verdict(
            Checked::ExpiryDate,
            field(lines, format, Field::ExpiryDate),
            digit_of(Checked::ExpiryDate),
            false,
        ),
    ];
    if format == Format::Td3 {
        out.push(verdict(
            Checked::OptionalData,
            field(lines, format, Field::OptionalData),
            digit_of(Checked::OptionalData),
            true,
        ));
    }
    let line = |i: usize, range: std::ops::Range<usize>| {
        lines
            .get(i)
            .and_then(|l| l.get(range))
            .unwrap_or(&[])
            .to_vec()
    };
    let composite = match format {
        Format::Td1 => Some(
            [
                line(0, 5..30),
                line(1, 0..7),
                line(1, 8..15),
                line(1, 18..29),
            ]
            .concat(),
        ),
        Format::Td2 => Some([line(1, 0..10), line(1, 13..20), line(1, 21..35)].concat()),
        Format::Td3 => Some([line(1, 0..10), line(1, 13..20), line(1, 21..43)].concat()),
        Format::MrvA | Format::MrvB => None,
    };
    if let Some(data) = composite {
        out.push(verdict(
            Checked::Composite,
            &data,
            digit_of(Checked::Composite),
            false,
        ));
    }
    out
}
