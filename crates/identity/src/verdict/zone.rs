//! The `mrz` check: the machine-readable zone's check digits and expiry
//! date, and whether a zone that fails them is the document's doing or a
//! misreading (a retake).

use serde_json::{json, Map, Value};

use super::{concern, retake, round, Check, MRZ};
use crate::document::Found;
use crate::mrz::{self, CheckOutcome, Mrz, MrzReading, ReadFailure, Reading};
use crate::{Analysis, MrzAttempt};

/// MRZ: the least sure character's probability from which a reading whose
/// check digit fails counts as clean (`MRZ_CHECK_DIGIT`) rather than a
/// misreading (`MRZ_UNREADABLE`). ICAO's specimen rendered sharp on a 2 MP
/// photo reads at 0.67 (its least sure character a `0` for the `O` the
/// nationality's type fixes), print taken for a zone at 0.01 to 0.05. On
/// the real zones of tests/tests/e2e/identity_real.rs, the four read with every
/// check digit holding have their least sure character at 0.24 (a sharp
/// Icelandic passport), 0.54, 0.64 and 0.64: the zone's least sure
/// character (mostly a filler in a long run, or a country code's `O`) does
/// not tell a misread from a clean read. So a failing digit is taken for
/// the document's when the characters it covers, and it, read at this level
/// (a specimen passport whose printed number `01PP30000` has check digit 2
/// where 9 is printed: every one at 0.8 or more, its fillers at 0.2), or
/// the whole zone does; else for a misread (a retake, not a person).
pub const MIN_MRZ_CONFIDENCE: f32 = 0.6;
/// MRZ: the fillers (`<`) a reading unsure or not a zone must show to be
/// taken for a zone read badly (`MRZ_UNREADABLE`) rather than other print.
pub const MIN_ZONE_FILLERS: usize = 4;

/// The machine-readable zone: read, its check digits, the expiry date.
///
/// - No zone found: on a passport page (TD3), which always carries one,
///   `MRZ_UNREADABLE`; on a card (ID-1), whose front has none, or where no
///   document was found, the check is not performed.
/// - Text that is no zone: `MRZ_UNREADABLE` on a passport page when it shows
///   at least [`MIN_ZONE_FILLERS`] fillers, else not performed (print taken
///   for a zone: a card's front, or a card outlined in a page's proportions).
/// - A zone whose check digits do not all hold (after the correction of
///   confusable characters): `MRZ_CHECK_DIGIT` when it read cleanly (every
///   character at least [`MIN_MRZ_CONFIDENCE`], or every one a failing
///   check digit covers; no line repaired, no ambiguity) on an image that
///   needs no retake, else `MRZ_UNREADABLE` on
///   a clean reading or a passport page's reading with its fillers, and not
///   performed otherwise (print read unsurely as a zone).
/// - An expiry date, its check digit holding, before today: `DOCUMENT_EXPIRED`.
pub(super) fn mrz_check(a: &Analysis, image_retake: bool) -> Check {
    let (reading, today) = match &a.mrz {
        MrzAttempt::Skipped(why) => return Check::skipped(MRZ, why),
        MrzAttempt::Read { reading, today } => (reading, *today),
    };
    let passport = match &a.document {
        Found::Document(q) | Found::CutOff(q) => q.format().0 == "TD3",
        Found::Nothing => false,
    };
    // Fillers in what was recognised: a zone read badly still shows them
    // (every format has at least the names' `<<`); print taken for a zone
    // (a card's outline read as a page's proportions) has none.
    let looks_like_zone = reading.text.matches('<').count() >= MIN_ZONE_FILLERS;
    let unreadable = |why: &str| {
        retake(
            "MRZ_UNREADABLE",
            MRZ,
            format!("the machine-readable zone {why}: photograph the whole page, sharp and without glare on the two lines at its bottom"),
        )
    };
    let m = match &reading.mrz {
        Err(ReadFailure::Recognizer(e)) => {
            return Check::skipped(MRZ, &format!("the zone's characters could not be recognised ({e})"))
        }
        Err(ReadFailure::NoZone) if passport => {
            return Check::performed(
                MRZ,
                vec![unreadable("was not found")],
                mrz_metrics(reading, None),
            )
        }
        Err(ReadFailure::NoZone) => {
            return Check::skipped(
                MRZ,
                "no machine-readable zone was found (a card's front has none)",
            )
        }
        Err(ReadFailure::Mrz(_)) if passport && looks_like_zone => {
            return Check::performed(
                MRZ,
                vec![unreadable("could not be read")],
                mrz_metrics(reading, None),
            )
        }
        Err(ReadFailure::Mrz(e)) => {
            return Check::skipped(
                MRZ,
                &format!("no machine-readable zone could be read (a card's front has none; the text found: {e})"),
            )
        }
        Ok(m) => m,
    };
    let as_read = m.reading == Reading::Failed && m.repaired_lines.is_empty();
    // Every character a check digit covers (and the digit) read surely: a
    // failing one is then the document's, not the reading's. The least
    // sure characters of a zone are mostly elsewhere (the fillers of long
    // runs, a country code's O for 0), and say nothing of this field.
    let surely_read = |checked: mrz::Checked| {
        m.format.covered_by(checked).iter().all(|&(line, column)| {
            reading
                .char_probs
                .get(line)
                .and_then(|l| l.get(column))
                .is_some_and(|&p| p >= MIN_MRZ_CONFIDENCE)
        })
    };
    let clean =
        as_read && (reading.confidence >= MIN_MRZ_CONFIDENCE || m.failed_checks().any(surely_read));
    // A zone: read clearly, or a passport page's reading with its fillers.
    let a_zone = clean || (passport && looks_like_zone);
    if !m.all_checks_valid() && !a_zone {
        // On a card, lines of print taken for a zone and read as one, unsurely.
        return Check::skipped(
            MRZ,
            "no machine-readable zone could be read (a card's front has none; the lines found read unsurely, their check digits failing)",
        );
    }
    let mut reasons = Vec::new();
    if !m.all_checks_valid() {
        if clean && !image_retake {
            let failed: Vec<&str> = m.failed_checks().map(|c| c.as_str()).collect();
            reasons.push(concern(
                "MRZ_CHECK_DIGIT",
                MRZ,
                75.0,
                format!(
                    "the machine-readable zone reads clearly but its check digit fails ({}): a sign of an altered or forged document",
                    failed.join(", ")
                ),
            ));
        } else {
            reasons.push(unreadable(
                "could not be read reliably (a check digit fails)",
            ));
        }
    }
    let expiry_holds = m
        .checks
        .iter()
        .any(|c| c.checked == mrz::Checked::ExpiryDate && c.outcome == CheckOutcome::Valid);
    if expiry_holds && m.expired(today) == Some(true) {
        let expiry = m.expiry_date.date.map_or(String::new(), |d| d.to_string());
        reasons.push(concern(
            "DOCUMENT_EXPIRED",
            MRZ,
            60.0,
            format!("the document expired on {expiry}"),
        ));
    }
    Check::performed(MRZ, reasons, mrz_metrics(reading, Some((m, today))))
}

/// The zone's fields and each check digit's outcome.
fn mrz_metrics(reading: &MrzReading, parsed: Option<(&Mrz, mrz::Date)>) -> Value {
    let zone = reading.zone.as_ref().map(|z| {
        json!({
            "lines": z.lines,
            "upsideDown": z.upside_down,
            "skewDegrees": round(z.skew_degrees, 1),
            "charHeight": round(z.char_height, 1),
            "wholeFrame": z.whole_frame,
        })
    });
    let Some((m, today)) = parsed else {
        return json!({
            "found": reading.zone.is_some(),
            "zone": zone,
            "confidence": round(f64::from(reading.confidence), 3),
        });
    };
    let checks: Map<String, Value> = m
        .checks
        .iter()
        .map(|c| {
            let outcome = match c.outcome {
                CheckOutcome::Valid => json!({"valid": true}),
                CheckOutcome::Invalid { printed, computed } => {
                    json!({"valid": false, "printed": printed.to_string(), "computed": computed})
                }
            };
            (c.checked.as_str().to_owned(), outcome)
        })
        .collect();
    let date = |d: &mrz::MrzDate| d.date.map(|d| d.to_string());
    let sex = match m.sex {
        mrz::Sex::Male => Some("M"),
        mrz::Sex::Female => Some("F"),
        mrz::Sex::Unspecified => Some("X"),
        mrz::Sex::Invalid(_) => None,
    };
    let (reading_name, candidates) = match m.reading {
        Reading::Valid => ("valid", None),
        Reading::Corrected => ("corrected", None),
        Reading::Ambiguous { candidates } => ("ambiguous", Some(candidates)),
        Reading::Failed => ("failed", None),
    };
    let corrections: Vec<Value> = m
        .corrections
        .iter()
        .map(|c| {
            json!({
                "line": c.line + 1,
                "column": c.column + 1,
                "read": c.read.to_string(),
                "corrected": c.corrected.to_string(),
                "field": field_name(c.field),
            })
        })
        .collect();
    json!({
        "found": true,
        "format": m.format.as_str(),
        "documentType": m.document_type,
        "issuingState": m.issuing_state,
        "documentNumber": m.document_number,
        "primaryName": m.primary_name,
        "secondaryName": m.secondary_name,
        "nationality": m.nationality,
        "birthDate": date(&m.birth_date),
        "expiryDate": date(&m.expiry_date),
        "expired": m.expired(today),
        "sex": sex,
        "optionalData": m.optional_data,
        "optionalData2": m.optional_data_2,
        "checkDigits": checks,
        "allCheckDigitsValid": m.all_checks_valid(),
        "reading": reading_name,
        "candidates": candidates,
        "corrections": corrections,
        "correctedLines": (m.reading == Reading::Corrected).then_some(&m.lines),
        "lines": m.lines,
        "recognised": reading.text,
        "repairedLines": m.repaired_lines.iter().map(|l| l + 1).collect::<Vec<_>>(),
        "confidence": round(f64::from(reading.confidence), 3),
        "zone": zone,
    })
}

fn field_name(field: mrz::Field) -> String {
    use mrz::Field;
    match field {
        Field::DocumentType => "documentType".into(),
        Field::IssuingState => "issuingState".into(),
        Field::DocumentNumber => "documentNumber".into(),
        Field::Names => "names".into(),
        Field::Nationality => "nationality".into(),
        Field::BirthDate => "birthDate".into(),
        Field::Sex => "sex".into(),
        Field::ExpiryDate => "expiryDate".into(),
        Field::OptionalData => "optionalData".into(),
        Field::OptionalData2 => "optionalData2".into(),
        Field::CheckDigit(c) => format!("{}CheckDigit", c.as_str()),
    }
}
