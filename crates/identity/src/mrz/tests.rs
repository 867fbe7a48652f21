//! The ICAO 9303 specimens, altered digits, OCR confusions, noise, and
//! random text that must never panic.

use super::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const TODAY: Date = Date {
    year: 2026,
    month: 11,
    day: 27,
};

/// ICAO 9303 part 4, the passport specimen (TD3).
const TD3: &str =
    "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10";
/// Part 5, the ID card specimen (TD1).
const TD1: &str =
    "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<";
/// Part 5, a document number of 12 characters continued in the optional data.
const TD1_LONG: &str =
    "I<UTOD23145890<7349<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<";
/// Part 6 (TD2).
const TD2: &str = "I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<\nD231458907UTO7408122F1204159<<<<<<<6";
/// Part 7, the visas.
const MRV_A: &str =
    "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL8988901C4XXX4009078F96121096ZE184226B<<<<<<";
const MRV_B: &str = "V<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<\nL8988901C4XXX4009078F9612109<<<<<<<<";

fn read(text: &str) -> Mrz {
    parse(text, TODAY).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn date(year: i32, month: u8, day: u8) -> Option<Date> {
    Date::new(year, month, day)
}

fn failing(m: &Mrz) -> Vec<Checked> {
    m.failed_checks().collect()
}

/// `text` with the character at (line, column) replaced.
fn with(text: &str, line: usize, column: usize, c: char) -> String {
    let mut lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    lines[line][column] = c;
    lines
        .iter()
        .map(|l| l.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn check_digits_follow_part_3() {
    assert_eq!(check_digit(b"L898902C3"), Some(6));
    assert_eq!(check_digit(b"740812"), Some(2));
    assert_eq!(check_digit(b"120415"), Some(9));
    assert_eq!(check_digit(b"ZE184226B<<<<<"), Some(1));
    assert_eq!(check_digit(b"D23145890734"), Some(9));
    assert_eq!(check_digit(b"<<<<"), Some(0));
    assert_eq!(check_digit(b"a"), None);
}

#[test]
fn the_td3_specimen_reads_with_every_check_digit_valid() {
    let m = read(TD3);
    assert_eq!(m.format, Format::Td3);
    assert_eq!(m.reading, Reading::Valid);
    assert!(m.corrections.is_empty() && m.repaired_lines.is_empty());
    assert_eq!(
        (
            m.document_type.as_str(),
            m.issuing_state.as_str(),
            m.document_number.as_str(),
            m.nationality.as_str()
        ),
        ("P", "UTO", "L898902C3", "UTO")
    );
    assert_eq!(
        (m.primary_name.as_str(), m.secondary_name.as_str()),
        ("ERIKSSON", "ANNA MARIA")
    );
    assert_eq!(m.sex, Sex::Female);
    assert_eq!(
        (m.birth_date.raw.as_str(), m.birth_date.date),
        ("740812", date(1974, 8, 12))
    );
    assert_eq!(
        (m.expiry_date.raw.as_str(), m.expiry_date.date),
        ("120415", date(2012, 4, 15))
    );
    assert_eq!(m.optional_data, "ZE184226B");
    assert_eq!(m.optional_data_2, None);
    let checked: Vec<Checked> = m.checks.iter().map(|c| c.checked).collect();
    assert_eq!(
        checked,
        [
            Checked::DocumentNumber,
            Checked::BirthDate,
            Checked::ExpiryDate,
            Checked::OptionalData,
            Checked::Composite
        ]
    );
    assert!(m.all_checks_valid());
    assert_eq!(m.expired(TODAY), Some(true));
    assert_eq!(
        m.expired(Date {
            year: 2012,
            month: 4,
            day: 15
        }),
        Some(false)
    );
    assert_eq!(m.lines, TD3.lines().collect::<Vec<_>>());
}

#[test]
fn the_td1_specimens_read_a_long_number_included() {
    let m = read(TD1);
    assert_eq!((m.format, m.reading), (Format::Td1, Reading::Valid));
    assert_eq!(
        (m.document_type.as_str(), m.document_number.as_str()),
        ("I", "D23145890")
    );
    assert_eq!(
        (m.primary_name.as_str(), m.secondary_name.as_str()),
        ("ERIKSSON", "ANNA MARIA")
    );
    assert_eq!(
        (m.optional_data.as_str(), m.optional_data_2.as_deref()),
        ("", Some(""))
    );
    assert_eq!(m.birth_date.date, date(1974, 8, 12));
    assert_eq!(m.checks.len(), 4);
    assert!(m.all_checks_valid());

    let long = read(TD1_LONG);
    assert_eq!(long.document_number, "D23145890734");
    assert_eq!(long.optional_data, "");
    assert!(long.all_checks_valid(), "{:?}", long.checks);
    // The continuation's last character is its check digit.
    let wrong = read(&with(TD1_LONG, 0, 18, '8'));
    assert!(failing(&wrong).contains(&Checked::DocumentNumber));
}

#[test]
fn the_td2_and_visa_specimens_read() {
    let m = read(TD2);
    assert_eq!((m.format, m.reading), (Format::Td2, Reading::Valid));
    assert_eq!(m.document_number, "D23145890");
    assert_eq!(m.primary_name, "ERIKSSON");
    assert_eq!(m.checks.len(), 4);

    for (text, format, optional) in [
        (MRV_A, Format::MrvA, "6ZE184226B"),
        (MRV_B, Format::MrvB, ""),
    ] {
        let v = read(text);
        assert_eq!((v.format, v.reading), (format, Reading::Valid), "{text}");
        assert_eq!(v.document_type, "V");
        assert_eq!(v.document_number, "L8988901C");
        assert_eq!(v.nationality, "XXX");
        assert_eq!(v.birth_date.date, date(1940, 9, 7));
        // A visa has no optional-data or composite check digit.
        assert_eq!(v.checks.len(), 3, "{text}");
        assert_eq!(v.optional_data, optional);
        // 2096 would be 70 years ahead: the specimen's 1996.
        assert_eq!(v.expiry_date.date, date(1996, 12, 10));
    }
}

#[test]
fn an_altered_digit_fails_its_check_and_the_composite() {
    // The birth date changed by a day: a numeric field, not a confusion.
    let m = read(&with(TD3, 1, 18, '3'));
    assert_eq!(failing(&m), [Checked::BirthDate, Checked::Composite]);
    assert_eq!(m.reading, Reading::Failed);
    assert_eq!(
        m.checks[1].outcome,
        CheckOutcome::Invalid {
            printed: '2',
            computed: 3
        }
    );
    // The expiry moved by ten years: only that check and the composite.
    let m = read(&with(TD3, 1, 21, '2'));
    assert_eq!(failing(&m), [Checked::ExpiryDate, Checked::Composite]);
    // The composite digit alone.
    let m = read(&with(TD1, 1, 29, '7'));
    assert_eq!(failing(&m), [Checked::Composite]);
    assert_eq!(m.reading, Reading::Failed);
    // A digit of the number changed to another digit: detected, not corrected.
    let m = read(&with(TD3, 1, 8, '7'));
    assert_eq!(failing(&m), [Checked::DocumentNumber, Checked::Composite]);
    assert_eq!(
        (m.reading, m.document_number.as_str()),
        (Reading::Failed, "L898902C7")
    );
    // The weakness of one check digit: changed to a 4, the number has one
    // confusable character (the first 8) whose other reading passes, one
    // chance in ten. The reading is corrected, and says what failed as read.
    let m = read(&with(TD3, 1, 8, '4'));
    assert_eq!(
        (m.reading, m.document_number.as_str()),
        (Reading::Corrected, "LB98902C4")
    );
    assert_eq!(
        m.failed_as_read,
        [Checked::DocumentNumber, Checked::Composite]
    );
}

#[test]
fn numeric_and_alphabetic_fields_fix_their_confusions_outright() {
    // A birth date read with O, B and I, its check digit as Z, a country
    // with a 0 and a name with a 1.
    let mut text = TD3.to_string();
    for (line, column, c) in [
        (1, 15, 'O'),
        (1, 16, 'B'),
        (1, 17, 'I'),
        (1, 19, 'Z'),
        (0, 4, '0'),
        (0, 7, '1'),
    ] {
        text = with(&text, line, column, c);
    }
    let m = read(&text);
    assert_eq!(m.reading, Reading::Valid);
    assert!(m.all_checks_valid());
    assert_eq!(m.birth_date.raw, "740812");
    assert_eq!(m.issuing_state, "UTO");
    assert_eq!(m.primary_name, "ERIKSSON");
    let fixed: Vec<(usize, usize, char, char, Field)> = m
        .corrections
        .iter()
        .map(|c| (c.line, c.column, c.read, c.corrected, c.field))
        .collect();
    assert_eq!(
        fixed,
        [
            (0, 4, '0', 'O', Field::IssuingState),
            (0, 7, '1', 'I', Field::Names),
            (1, 15, 'O', '0', Field::BirthDate),
            (1, 16, 'B', '8', Field::BirthDate),
            (1, 17, 'I', '1', Field::BirthDate),
            (1, 19, 'Z', '2', Field::CheckDigit(Checked::BirthDate)),
        ]
    );
    assert_eq!(m.lines, TD3.lines().collect::<Vec<_>>());
}

#[test]
fn a_confused_document_number_is_corrected_when_one_reading_fits() {
    // L898902C3 read L8989O2C3: the check digit fails, and only O as 0 fixes it.
    let m = read(&with(TD3, 1, 5, 'O'));
    assert_eq!(m.reading, Reading::Corrected);
    assert!(m.all_checks_valid());
    assert_eq!(
        m.failed_as_read,
        [Checked::DocumentNumber, Checked::Composite]
    );
    assert_eq!(m.document_number, "L898902C3");
    assert_eq!(m.lines, TD3.lines().collect::<Vec<_>>());
    assert_eq!(
        m.corrections,
        [Correction {
            line: 1,
            column: 5,
            read: 'O',
            corrected: '0',
            field: Field::DocumentNumber
        }]
    );
    // TD1 and TD2: D23145890 read with an S for its 5 and an O for its 0.
    for (text, line, column) in [(TD1, 0, 10), (TD1, 0, 13), (TD2, 1, 5), (TD2, 1, 8)] {
        let c = if column % 5 == 0 { 'S' } else { 'O' };
        let m = read(&with(text, line, column, c));
        assert_eq!(
            (m.reading, m.document_number.as_str()),
            (Reading::Corrected, "D23145890"),
            "{column}"
        );
    }
    // TD1's optional data is covered by the composite alone (its only
    // confusable character here, so the composite decides).
    let td1 = with_composite("I<UTOD231458907X4Y0<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<0\nERIKSSON<<ANNA<MARIA<<<<<<<<<<");
    assert!(read(&td1).all_checks_valid());
    let m = read(&with(&td1, 0, 18, 'O'));
    assert_eq!(m.failed_as_read, [Checked::Composite]);
    assert_eq!(
        (m.reading, m.optional_data.as_str()),
        (Reading::Corrected, "X4Y0")
    );
}

/// A TD1 zone with its composite digit computed.
fn with_composite(text: &str) -> String {
    let l: Vec<&str> = text.lines().collect();
    let data = [&l[0][5..30], &l[1][0..7], &l[1][8..15], &l[1][18..29]].concat();
    let digit = check_digit(data.as_bytes()).unwrap_or(0);
    with(text, 1, 29, char::from(b'0' + digit))
}

#[test]
fn a_confusion_several_readings_would_fix_is_left_as_read() {
    // L898902C3 read LB98902C3: B as 8 fixes it, and so do two other single
    // substitutions; none is applied.
    let m = read(&with(TD3, 1, 1, 'B'));
    assert_eq!(m.reading, Reading::Ambiguous { candidates: 3 });
    assert_eq!(m.document_number, "LB98902C3");
    assert!(m.corrections.is_empty());
    assert_eq!(failing(&m), [Checked::DocumentNumber, Checked::Composite]);
    // G and 6 weigh the same modulo 10: a number with a 6 read as G is
    // valid either way, and left as read.
    let six = "I<UTOD231458607<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<<<<<<<";
    let digit = check_digit(b"D23145860").unwrap_or(0);
    let six = with_composite(&with(six, 0, 14, char::from(b'0' + digit)));
    assert!(read(&six).all_checks_valid());
    let g = read(&with(&six, 0, 12, 'G'));
    assert_eq!(
        (g.reading, g.document_number.as_str()),
        (Reading::Valid, "D231458G0")
    );
}

#[test]
fn a_misread_filler_k_after_the_names_is_a_filler() {
    let m = read(&with(TD3, 0, 27, 'K'));
    assert_eq!(m.secondary_name, "ANNA MARIA");
    assert_eq!(m.corrections.len(), 1);
    // A K that may be a name is kept: a one-letter given name, an initial.
    let k = "P<UTOERIKSSON<<K<<<<<<<<<<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10";
    assert_eq!(read(k).secondary_name, "K");
    let k = "P<UTOERIKSSON<<ANNA<K<<<<<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10";
    assert_eq!(read(k).secondary_name, "ANNA K");
}

#[test]
fn noisy_text_is_read_spaces_case_and_run_together_lines() {
    let noisy = format!(
        "\n   {}  \n\n\t{}\n",
        TD3.lines().next().unwrap_or(""),
        TD3.lines().nth(1).unwrap_or("").to_lowercase()
    );
    assert_eq!(read(&noisy).lines, read(TD3).lines);
    assert_eq!(read(&TD3.replace('\n', "")).lines, read(TD3).lines);
    assert_eq!(read(&TD1.replace('\n', "")).format, Format::Td1);
    // Fillers read as spaces: inside a line, and at a names line's end.
    let spaced = TD3
        .replacen("ANNA<MARIA", "ANNA MARIA", 1)
        .replace("<<<<<<<<<<<<<<<<<<<\n", "\n");
    let m = read(&spaced);
    assert_eq!(m.lines, read(TD3).lines);
    assert_eq!(m.repaired_lines, [0]);
    // Guillemets for fillers.
    assert_eq!(read(&TD3.replacen("<<", "«<", 1)).lines, read(TD3).lines);
}

#[test]
fn a_data_line_a_character_or_two_off_is_repaired_only_where_one_repair_fits() {
    // One filler lost from the run before the check digits, one added.
    let short = TD3.replacen("B<<<<<10", "B<<<<10", 1);
    let m = read(&short);
    assert_eq!(
        (m.lines.clone(), m.repaired_lines.clone()),
        (read(TD3).lines, vec![1])
    );
    let long = TD3.replacen("B<<<<<10", "B<<<<<<<10", 1);
    assert_eq!(read(&long).lines, read(TD3).lines);
    // A stray character at the end of a line.
    assert_eq!(read(&format!("{TD1}<")).lines, read(TD1).lines);
    // A lost digit cannot be put back: unreadable, not a guess.
    let lost = TD3.replacen("7408122F", "748122F", 1);
    assert!(matches!(
        parse(&lost, TODAY),
        Err(MrzError::LineLengths { .. })
    ));
    // Three characters off.
    let far = TD3.replacen("B<<<<<10", "B<<10", 1);
    assert!(matches!(
        parse(&far, TODAY),
        Err(MrzError::LineLengths { .. })
    ));
}

#[test]
fn what_is_not_a_zone_is_a_typed_error() {
    assert_eq!(parse("", TODAY), Err(MrzError::Empty));
    assert_eq!(parse("  \n \n", TODAY), Err(MrzError::Empty));
    assert!(matches!(
        parse("P<UTO", TODAY),
        Err(MrzError::LineCount { found: 1 })
    ));
    assert!(matches!(
        parse(&format!("{TD3}\n{TD3}"), TODAY),
        Err(MrzError::LineCount { found: 4 })
    ));
    assert!(matches!(
        parse("P<UTO$RIKSSON\nL898", TODAY),
        Err(MrzError::Character {
            line: 0,
            column: 5,
            found: '$'
        })
    ));
    assert!(matches!(
        parse("ABC\nDEF", TODAY),
        Err(MrzError::LineLengths { .. })
    ));
    let message = parse("ABC\nDEF", TODAY)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("TD1"), "{message}");
}

#[test]
fn dates_resolve_their_century_and_invalid_ones_are_none() {
    let birth = |raw: &[u8]| MrzDate::birth(raw, TODAY).date;
    let expiry = |raw: &[u8]| MrzDate::expiry(raw, TODAY).date;
    assert_eq!(birth(b"261127"), date(2026, 11, 27));
    assert_eq!(birth(b"261128"), date(1926, 11, 28));
    assert_eq!(birth(b"000229"), date(2000, 2, 29));
    assert_eq!(expiry(b"760101"), date(2076, 1, 1));
    assert_eq!(expiry(b"770101"), date(1977, 1, 1));
    assert_eq!(birth(b"741332"), None);
    assert_eq!(birth(b"7408<<"), None);
    assert_eq!(expiry(b"230229"), None);
    let m = read(&with(TD3, 1, 20, 'X'));
    assert_eq!(m.sex, Sex::Unspecified);
    let m = read(&with(TD3, 1, 20, 'Q'));
    assert_eq!(m.sex, Sex::Invalid('Q'));
}

/// Random text, and specimens with random damage: an answer or an error, never a panic.
#[test]
fn no_input_panics() {
    let mut rng = SmallRng::seed_from_u64(48);
    let alphabet: Vec<char> = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<<<<<<<<  \n\nkq«é\u{0}\u{202e}"
        .chars()
        .collect();
    let specimens = [TD3, TD1, TD1_LONG, TD2, MRV_A, MRV_B];
    let (mut read_ok, mut refused) = (0, 0);
    for i in 0..20_000 {
        let text: String = if i % 2 == 0 {
            let len = rng.random_range(0..100);
            (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect()
        } else {
            let mut chars: Vec<char> = specimens[i % specimens.len()].chars().collect();
            for _ in 0..rng.random_range(1..6) {
                let at = rng.random_range(0..chars.len());
                match rng.random_range(0..3) {
                    0 => chars[at] = alphabet[rng.random_range(0..alphabet.len())],
                    1 => {
                        chars.remove(at);
                    }
                    _ => chars.insert(at, alphabet[rng.random_range(0..alphabet.len())]),
                }
                if chars.is_empty() {
                    break;
                }
            }
            chars.into_iter().collect()
        };
        match parse(&text, TODAY) {
            Ok(m) => {
                read_ok += 1;
                assert_eq!(m.lines.len(), m.format.line_count());
                assert!(m.lines.iter().all(|l| l.len() == m.format.line_length()));
            }
            Err(_) => refused += 1,
        }
    }
    assert!(
        read_ok > 1000 && refused > 1000,
        "{read_ok} read, {refused} refused"
    );
}

#[test]
fn unix_days_count_from_1970_across_leap_years_and_centuries() {
    assert_eq!(Date::from_unix_days(0), Date::new(1970, 1, 1).unwrap());
    assert_eq!(Date::from_unix_days(-1), Date::new(1969, 12, 31).unwrap());
    assert_eq!(
        Date::from_unix_days(11_016),
        Date::new(2000, 2, 29).unwrap()
    );
    assert_eq!(Date::from_unix_days(11_017), Date::new(2000, 3, 1).unwrap());
    assert_eq!(
        Date::from_unix_days(20_419),
        Date::new(2025, 11, 27).unwrap()
    );
    assert_eq!(Date::from_unix_days(47_541), Date::new(2100, 3, 1).unwrap());
    // Day by day over 400 years, each the day after the one before.
    let mut previous = Date::from_unix_days(-1);
    for days in 0..146_097 {
        let d = Date::from_unix_days(days);
        assert!(
            d > previous && Date::new(d.year, d.month, d.day) == Some(d),
            "{days}: {d}"
        );
        previous = d;
    }
}

#[test]
fn a_check_digit_covers_its_fields_and_itself() {
    let cols = |f: Format, c: Checked| f.covered_by(c);
    // TD3's number: line 2, columns 0 to 9 (the digit at 9).
    assert_eq!(
        cols(Format::Td3, Checked::DocumentNumber),
        (0..10).map(|c| (1, c)).collect::<Vec<_>>()
    );
    // Its composite: number, dates and optional data with their digits,
    // and itself; not the nationality (10 to 12) or the sex (20).
    let composite = cols(Format::Td3, Checked::Composite);
    let want: Vec<(usize, usize)> = (0..10)
        .chain(13..20)
        .chain(21..44)
        .map(|c| (1, c))
        .collect();
    assert_eq!(composite, want);
    // TD1's number continues in its optional data (line 1, 15 to 29).
    let td1 = cols(Format::Td1, Checked::DocumentNumber);
    assert!(td1.contains(&(0, 5)) && td1.contains(&(0, 14)) && td1.contains(&(0, 29)));
    assert!(!td1.contains(&(1, 0)));
}
