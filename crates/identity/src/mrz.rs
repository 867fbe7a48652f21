//! The machine-readable zone (ICAO 9303): parsing and checking text lines.
//!
//! Pure logic over the lines an OCR gives (finding the zone and recognising
//! its characters is another step): [`parse`] takes them as one string,
//! tells the format by the lines' count and length, reads every field and
//! verifies every check digit, each check's outcome reported on its own.
//!
//! - **Formats**: TD1 (3 lines of 30, ID cards), TD2 (2 of 36), TD3 (2 of 44,
//!   passports), and the visas MRV-A (2 of 44) and MRV-B (2 of 36), told from
//!   TD3 and TD2 by a document type starting with `V`; visas have no
//!   optional-data or composite check digit.
//! - **Check digits** (part 3): weights 7, 3, 1 repeated, `<` counting 0 and
//!   `A` to `Z` 10 to 35, the sum modulo 10. A TD1 or TD2 document number
//!   longer than 9 characters leaves `<` where its check digit would be and
//!   continues in the optional data, followed by its check digit.
//! - **OCR confusions**: `O`/`0`, `I`/`1`, `B`/`8`, `S`/`5`, `Z`/`2`, `G`/`6`,
//!   and `<` read as `K` or a space. Where a field's type allows only one of
//!   the pair (a date or check digit is numeric, a name or country alphabetic)
//!   it is fixed outright. The document number and optional data are
//!   alphanumeric, so there only the check digits can arbitrate: when one
//!   fails, the fewest substitutions (one, else two) of confusable
//!   characters in the fields it covers that make every check digit hold are
//!   looked for, and the reading is corrected only when exactly one set
//!   does. One check digit is one chance in ten: a digit changed on a forged
//!   document can be "corrected" into another reading that passes, so a
//!   corrected reading lists its corrections, and is no proof.
//!   `G`/`6` (16 and 6) and `K`/`<` (20 and 0) weigh the same modulo 10 at
//!   every weight, so no check digit can tell them apart: they are never
//!   substituted there (every reading would be ambiguous if they were).
//!   Numeric fields also take `Q` and `D` as 0 and `L` as 1.
//! - **Noise**: surrounding spaces, lower case and blank lines are ignored;
//!   lines run together into one string of exactly two or three lines' length
//!   are split. A line one or two characters too long or short is repaired
//!   only where fillers can absorb the difference and exactly one repair makes
//!   every check digit hold (a names line, which has none, only by its
//!   trailing fillers); otherwise the zone is unreadable, not guessed at.
//!
//! No input panics: every error is an [`MrzError`].
//!
//! Reading the zone off an image is in the submodules: [`locate`] finds it
//! and cuts its lines out, a [`LineRecognizer`] recognises them ([`onnx`],
//! feature `ocr-ort`, with PP-OCRv4 through ONNX Runtime), [`ctc`] decodes
//! them with their known length, and [`read_mrz`] runs the steps and this
//! parser.

use std::fmt;

pub mod ctc;
pub mod locate;
#[cfg(feature = "ocr-ort")]
pub mod onnx;
mod read;
/// Documents drawn with a zone in OCR-B, for tests (feature `synthetic`).
#[cfg(any(test, feature = "synthetic"))]
pub mod render;

pub use read::{
    decode_lines, read_mrz, read_zone, LineRecognizer, MrzReading, ReadFailure, RecognizeError,
    ZoneFound,
};

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
    fn is_names_line(self, line: usize) -> bool {
        match self {
            Format::Td1 => line == 2,
            _ => line == 0,
        }
    }
}

/// A calendar date.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: i32,
    pub month: u8,
    pub day: u8,
}

impl Date {
    /// `None` when the day does not exist.
    pub fn new(year: i32, month: u8, day: u8) -> Option<Date> {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days)
            .contains(&day)
            .then_some(Date { year, month, day })
    }

    /// The date `days` after 1970-01-01 (negative: before), as the
    /// proleptic Gregorian calendar counts (H. Hinnant's `civil_from_days`).
    pub fn from_unix_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Date {
            year: year as i32,
            month,
            day,
        }
    }

    /// Today in UTC, by the system clock.
    pub fn today_utc() -> Date {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Date::from_unix_days(secs.div_euclid(86_400))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// A date as printed (YYMMDD) and the full date it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MrzDate {
    /// The six characters, `<` where the issuer does not know a part.
    pub raw: String,
    /// `None` when a part is unknown or the day does not exist.
    pub date: Option<Date>,
}

impl MrzDate {
    /// A birth date is in the past: the latest century that does not put it
    /// after `today` (a two-digit year of someone born in 1925 or 2025 reads
    /// the same, and nobody is born in the future).
    fn birth(raw: &[u8], today: Date) -> MrzDate {
        let date = yymmdd(raw).and_then(|(yy, mm, dd)| {
            Date::new(2000 + yy, mm, dd)
                .filter(|d| *d <= today)
                .or_else(|| Date::new(1900 + yy, mm, dd))
        });
        MrzDate {
            raw: text(raw),
            date,
        }
    }

    /// An expiry date is in the 2000s, unless that would be more than 50
    /// years ahead (no document is valid that long; an old specimen is).
    fn expiry(raw: &[u8], today: Date) -> MrzDate {
        let date = yymmdd(raw).and_then(|(yy, mm, dd)| {
            if 2000 + yy > today.year + 50 {
                Date::new(1900 + yy, mm, dd)
            } else {
                Date::new(2000 + yy, mm, dd)
            }
        });
        MrzDate {
            raw: text(raw),
            date,
        }
    }
}

fn yymmdd(raw: &[u8]) -> Option<(i32, u8, u8)> {
    if raw.len() != 6 || !raw.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let two = |i: usize| (raw[i] - b'0') * 10 + (raw[i + 1] - b'0');
    Some((i32::from(two(0)), two(2), two(4)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sex {
    Male,
    Female,
    /// `<` or `X`.
    Unspecified,
    /// Any other character: not a valid reading.
    Invalid(char),
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

/// Which kind of character a field holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Alpha,
    Numeric,
    Alphanumeric,
}

/// A field's place: line, first column, length.
#[derive(Clone, Copy)]
struct Slot {
    field: Field,
    line: usize,
    start: usize,
    len: usize,
}

impl Field {
    fn kind(self) -> Kind {
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
fn layout(format: Format) -> Vec<Slot> {
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
/// [`parse`] never lets happen).
fn chars(lines: &[Vec<u8>], slot: Slot) -> &[u8] {
    lines
        .get(slot.line)
        .and_then(|l| l.get(slot.start..slot.start + slot.len))
        .unwrap_or(&[])
}

fn find(format: Format, field: Field) -> Option<Slot> {
    layout(format).into_iter().find(|s| s.field == field)
}

fn field(lines: &[Vec<u8>], format: Format, field: Field) -> &[u8] {
    find(format, field).map_or(&[], |s| chars(lines, s))
}

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
/// for the pairs a check digit can tell apart (see the module's doc).
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
fn read(mut lines: Vec<Vec<u8>>, format: Format, today: Date, repaired_lines: Vec<usize>) -> Mrz {
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

fn all_valid(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.outcome == CheckOutcome::Valid)
}

/// The document number and its check digit, a long number's continuation
/// (TD1, TD2: `<` in the check digit's place) included.
fn number_and_digit(lines: &[Vec<u8>], format: Format) -> (Vec<u8>, u8, usize) {
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
fn checks(lines: &[Vec<u8>], format: Format) -> Vec<Check> {
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

/// The fields of the final reading.
fn fields(
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

fn text(chars: &[u8]) -> String {
    chars.iter().map(|&c| char::from(c)).collect()
}

#[cfg(test)]
mod tests;
