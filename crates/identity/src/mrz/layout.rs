//! The formats and where each field sits in them (ICAO 9303 parts 4 to 7):
//! what the parser, the check digits and the corrections read the lines by.

/// The formats of ICAO 9303.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ID-1 card: 3 lines of 30.
    Td1,
    /// ID-2 card: 2 lines of 36.
    Td2,
    /// Passport data page: 2 lines of 44.
    Td3,
    /// Visa, full size: 2 lines of 44.
    MrvA,
    /// Visa, reduced: 2 lines of 36.
    MrvB,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Td1 => "TD1",
            Format::Td2 => "TD2",
            Format::Td3 => "TD3",
            Format::MrvA => "MRV-A",
            Format::MrvB => "MRV-B",
        }
    }

    pub fn line_count(self) -> usize {
        match self {
            Format::Td1 => 3,
            _ => 2,
        }
    }

    pub fn line_length(self) -> usize {
        match self {
            Format::Td1 => 30,
            Format::Td2 | Format::MrvB => 36,
            Format::Td3 | Format::MrvA => 44,
        }
    }

    /// The document's width and height in mm, and the zone's line length
    /// in mm (OCR-B at 10 characters an inch): ICAO 9303 parts 4 to 6.
    /// `None` for visas, stuck on a passport's page.
    pub fn document_mm(self) -> Option<(f64, f64, f64)> {
        let line = self.line_length() as f64 * 2.54;
        match self {
            Format::Td1 => Some((85.6, 53.98, line)),
            Format::Td2 => Some((105.0, 74.0, line)),
            Format::Td3 => Some((125.0, 88.0, line)),
            Format::MrvA | Format::MrvB => None,
        }
    }

    /// Where the characters check digit `checked` covers are, the digit
    /// included: (line, column) from 0. A TD1 number's continuation is in
    /// its optional data, so that is counted in with the number.
    pub fn covered_by(self, checked: Checked) -> Vec<(usize, usize)> {
        use Field as F;
        let fields: Vec<Field> = match checked {
            Checked::DocumentNumber if self == Format::Td1 => {
                vec![F::DocumentNumber, F::OptionalData]
            }
            Checked::DocumentNumber => vec![F::DocumentNumber],
            Checked::BirthDate => vec![F::BirthDate],
            Checked::ExpiryDate => vec![F::ExpiryDate],
            Checked::OptionalData => vec![F::OptionalData],
            Checked::Composite => {
                let mut all = vec![
                    F::DocumentNumber,
                    F::CheckDigit(Checked::DocumentNumber),
                    F::OptionalData,
                    F::BirthDate,
                    F::CheckDigit(Checked::BirthDate),
                    F::ExpiryDate,
                    F::CheckDigit(Checked::ExpiryDate),
                    F::OptionalData2,
                ];
                if self == Format::Td3 {
                    all.push(F::CheckDigit(Checked::OptionalData));
                }
                all
            }
        };
        layout(self)
            .into_iter()
            .filter(|s| fields.contains(&s.field) || s.field == F::CheckDigit(checked))
            .flat_map(|s| (s.start..s.start + s.len).map(move |c| (s.line, c)))
            .collect()
    }

    /// Whether a line holds no check digit (its length can only be repaired
    /// by trailing fillers).
    pub(super) fn is_names_line(self, line: usize) -> bool {
        match self {
            Format::Td1 => line == 2,
            _ => line == 0,
        }
    }
}

/// A field of the zone, to say where a correction was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    DocumentType,
    IssuingState,
    DocumentNumber,
    Names,
    Nationality,
    BirthDate,
    Sex,
    ExpiryDate,
    /// TD3's personal number, the optional data of the other formats (on
    /// TD1 and TD2 it may carry the end of a long document number).
    OptionalData,
    /// TD1's second optional data field (line 2).
    OptionalData2,
    CheckDigit(Checked),
}

/// What a check digit covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    DocumentNumber,
    BirthDate,
    ExpiryDate,
    /// TD3's personal number.
    OptionalData,
    /// The composite over the number, dates and optional data (not on visas).
    Composite,
}

impl Checked {
    pub fn as_str(self) -> &'static str {
        match self {
            Checked::DocumentNumber => "documentNumber",
            Checked::BirthDate => "birthDate",
            Checked::ExpiryDate => "expiryDate",
            Checked::OptionalData => "optionalData",
            Checked::Composite => "composite",
        }
    }
}

/// Which kind of character a field holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Alpha,
    Numeric,
    Alphanumeric,
}

/// A field's place: line, first column, length.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) field: Field,
    pub(super) line: usize,
    pub(super) start: usize,
    pub(super) len: usize,
}

impl Field {
    pub(super) fn kind(self) -> Kind {
        match self {
            Field::DocumentNumber | Field::OptionalData | Field::OptionalData2 => {
                Kind::Alphanumeric
            }
            Field::BirthDate | Field::ExpiryDate | Field::CheckDigit(_) => Kind::Numeric,
            _ => Kind::Alpha,
        }
    }
}

const fn slot(field: Field, line: usize, start: usize, len: usize) -> Slot {
    Slot {
        field,
        line,
        start,
        len,
    }
}

/// Every field's place in `format` (ICAO 9303 parts 4 to 7).
pub(super) fn layout(format: Format) -> Vec<Slot> {
    use Field as F;
    let cd = |c| F::CheckDigit(c);
    match format {
        Format::Td1 => vec![
            slot(F::DocumentType, 0, 0, 2),
            slot(F::IssuingState, 0, 2, 3),
            slot(F::DocumentNumber, 0, 5, 9),
            slot(cd(Checked::DocumentNumber), 0, 14, 1),
            slot(F::OptionalData, 0, 15, 15),
            slot(F::BirthDate, 1, 0, 6),
            slot(cd(Checked::BirthDate), 1, 6, 1),
            slot(F::Sex, 1, 7, 1),
            slot(F::ExpiryDate, 1, 8, 6),
            slot(cd(Checked::ExpiryDate), 1, 14, 1),
            slot(F::Nationality, 1, 15, 3),
            slot(F::OptionalData2, 1, 18, 11),
            slot(cd(Checked::Composite), 1, 29, 1),
            slot(F::Names, 2, 0, 30),
        ],
        _ => {
            let length = format.line_length();
            let mut slots = vec![
                slot(F::DocumentType, 0, 0, 2),
                slot(F::IssuingState, 0, 2, 3),
                slot(F::Names, 0, 5, length - 5),
                slot(F::DocumentNumber, 1, 0, 9),
                slot(cd(Checked::DocumentNumber), 1, 9, 1),
                slot(F::Nationality, 1, 10, 3),
                slot(F::BirthDate, 1, 13, 6),
                slot(cd(Checked::BirthDate), 1, 19, 1),
                slot(F::Sex, 1, 20, 1),
                slot(F::ExpiryDate, 1, 21, 6),
                slot(cd(Checked::ExpiryDate), 1, 27, 1),
            ];
            slots.extend(match format {
                Format::Td3 => vec![
                    slot(F::OptionalData, 1, 28, 14),
                    slot(cd(Checked::OptionalData), 1, 42, 1),
                    slot(cd(Checked::Composite), 1, 43, 1),
                ],
                Format::Td2 => vec![
                    slot(F::OptionalData, 1, 28, 7),
                    slot(cd(Checked::Composite), 1, 35, 1),
                ],
                _ => vec![slot(F::OptionalData, 1, 28, length - 28)],
            });
            slots
        }
    }
}

/// The characters of `slot` (empty if the lines are shorter, which
/// [`parse`](super::parse) never lets happen).
pub(super) fn chars(lines: &[Vec<u8>], slot: Slot) -> &[u8] {
    lines
        .get(slot.line)
        .and_then(|l| l.get(slot.start..slot.start + slot.len))
        .unwrap_or(&[])
}

pub(super) fn find(format: Format, field: Field) -> Option<Slot> {
    layout(format).into_iter().find(|s| s.field == field)
}

pub(super) fn field(lines: &[Vec<u8>], format: Format, field: Field) -> &[u8] {
    find(format, field).map_or(&[], |s| chars(lines, s))
}

pub(super) fn text(chars: &[u8]) -> String {
    chars.iter().map(|&c| char::from(c)).collect()
}
