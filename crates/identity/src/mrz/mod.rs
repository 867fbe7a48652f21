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
//!
//! The parser's parts, each a module: `lines` (the text into lines of the
//! format's length), `layout` (where each field sits), `check_digits`,
//! `correct` (the fixes and substitutions), `fields` (the reading's values)
//! and `date`.

pub mod ctc;
pub mod locate;
#[cfg(feature = "ocr-ort")]
pub mod onnx;
mod read;
/// Documents drawn with a zone in OCR-B, for tests (feature `synthetic`).
#[cfg(any(test, feature = "synthetic"))]
pub mod render;

mod check_digits;
mod correct;
mod date;
mod fields;
mod layout;
mod lines;

pub use check_digits::{check_digit, Check, CheckOutcome};
pub use date::{Date, MrzDate};
pub use fields::{Correction, Mrz, Reading, Sex};
pub use layout::{Checked, Field, Format};
pub use lines::{parse, MrzError};
pub use read::{
    decode_lines, read_mrz, read_zone, LineRecognizer, MrzReading, ReadFailure, RecognizeError,
    ZoneFound,
};

#[cfg(test)]
mod tests;
