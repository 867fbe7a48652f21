//! A zone read and checked ([`Mrz`]), and its fields taken from the final
//! lines: names split, fillers trimmed, dates resolved.

use super::check_digits::{checks, number_and_digit, Check, CheckOutcome};
use super::date::{Date, MrzDate};
use super::layout::{field, text, Checked, Field, Format};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sex {
    Male,
    Female,
    /// `<` or `X`.
    Unspecified,
    /// Any other character: not a valid reading.
    Invalid(char),
}

/// One character changed from what was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Correction {
    /// Line and column, from 0.
    pub line: usize,
    pub column: usize,
    pub read: char,
    pub corrected: char,
    pub field: Field,
}

/// How the reading relates to the check digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Every check digit holds on the characters as read (after the fixes a
    /// field's type decides alone, listed in `corrections`).
    Valid,
    /// A check digit failed as read; exactly one smallest set (one or two)
    /// of confusable-character substitutions makes every one hold, and it is applied.
    Corrected,
    /// A check digit fails and several sets of substitutions of the same,
    /// smallest size would make every one hold: none is applied.
    Ambiguous { candidates: usize },
    /// A check digit fails and no substitution fixes it: a misread digit or
    /// an altered document.
    Failed,
}

/// A zone read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Mrz {
    pub format: Format,
    /// The lines after repair and correction.
    pub lines: Vec<String>,
    /// `P`, `I`, `ID`, `AC`, `V`...: fillers removed.
    pub document_type: String,
    pub issuing_state: String,
    /// With a long number's continuation, without fillers or check digit.
    pub document_number: String,
    /// Surname(s), fillers as spaces.
    pub primary_name: String,
    /// Given names, fillers as spaces.
    pub secondary_name: String,
    pub nationality: String,
    pub birth_date: MrzDate,
    pub sex: Sex,
    pub expiry_date: MrzDate,
    /// Fillers trimmed; without a long number's continuation.
    pub optional_data: String,
    /// TD1's second optional field.
    pub optional_data_2: Option<String>,
    /// Each check digit of the format, in the order of [`Checked`].
    pub checks: Vec<Check>,
    pub reading: Reading,
    /// The check digits that failed on the characters as read (after the
    /// fixes a field's type decides): with a corrected reading, what the
    /// correction made hold.
    pub failed_as_read: Vec<Checked>,
    pub corrections: Vec<Correction>,
    /// Lines (from 0) whose length was repaired.
    pub repaired_lines: Vec<usize>,
}

impl Mrz {
    pub fn all_checks_valid(&self) -> bool {
        self.checks.iter().all(|c| c.outcome == CheckOutcome::Valid)
    }

    pub fn failed_checks(&self) -> impl Iterator<Item = Checked> + '_ {
        self.checks
            .iter()
            .filter(|c| c.outcome != CheckOutcome::Valid)
            .map(|c| c.checked)
    }

    /// Whether the document expired before `today` (it is valid on its expiry
    /// day); `None` when the expiry date is not a date.
    pub fn expired(&self, today: Date) -> Option<bool> {
        self.expiry_date.date.map(|d| d < today)
    }
}

/// The fields of the final reading.
pub(super) fn fields(
    lines: Vec<Vec<u8>>,
    format: Format,
    today: Date,
    reading: Reading,
    corrections: Vec<Correction>,
    repaired_lines: Vec<usize>,
) -> Mrz {
    let get = |f: Field| field(&lines, format, f);
    let (number, _, continuation) = number_and_digit(&lines, format);
    let optional = get(Field::OptionalData);
    // After a long number's continuation and its check digit.
    let optional = optional.get(continuation..).unwrap_or(&[]);
    let (primary_name, secondary_name) = names(get(Field::Names));
    let sex = match get(Field::Sex).first() {
        Some(b'M') => Sex::Male,
        Some(b'F') => Sex::Female,
        Some(b'<' | b'X') => Sex::Unspecified,
        Some(&c) => Sex::Invalid(char::from(c)),
        None => Sex::Invalid(' '),
    };
    Mrz {
        format,
        document_type: filled(get(Field::DocumentType)),
        issuing_state: filled(get(Field::IssuingState)),
        document_number: filled(&number),
        primary_name,
        secondary_name,
        nationality: filled(get(Field::Nationality)),
        birth_date: MrzDate::birth(get(Field::BirthDate), today),
        sex,
        expiry_date: MrzDate::expiry(get(Field::ExpiryDate), today),
        optional_data: filled(optional),
        optional_data_2: (format == Format::Td1).then(|| filled(get(Field::OptionalData2))),
        checks: checks(&lines, format),
        reading,
        failed_as_read: Vec::new(),
        corrections,
        repaired_lines,
        lines: lines.iter().map(|l| text(l)).collect(),
    }
}

/// Surname and given names: split on the first `<<`, single fillers as spaces.
fn names(field: &[u8]) -> (String, String) {
    let joined = |part: &[u8]| {
        part.split(|&c| c == b'<')
            .filter(|w| !w.is_empty())
            .map(text)
            .collect::<Vec<_>>()
            .join(" ")
    };
    match field.windows(2).position(|w| w == b"<<") {
        Some(at) => (joined(&field[..at]), joined(&field[at + 2..])),
        None => (joined(field), String::new()),
    }
}

/// Without leading and trailing fillers.
fn filled(chars: &[u8]) -> String {
    let start = chars.iter().position(|&c| c != b'<').unwrap_or(chars.len());
    let end = chars
        .iter()
        .rposition(|&c| c != b'<')
        .map_or(start, |e| e + 1);
    text(chars.get(start..end).unwrap_or(&[]))
}
