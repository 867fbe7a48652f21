//! `vigil.assess_id` inside Postgres: the record, duplicates through the band
//! index, refusals that record nothing, and the setting that keeps images.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::{count, reason_codes as codes};
    use serde_json::Value;
    use vigil_identity::synthetic as s;

    fn assess(bytes: &[u8]) -> Value {
        Spi::get_one_with_args::<pgrx::JsonB>("SELECT vigil.assess_id($1)", &[bytes.into()])
            .expect("assessed")
            .expect("a result")
            .0
    }

    fn card(seed: u64) -> Vec<u8> {
        s::jpeg(&s::card(seed), 90, Some(s::camera_exif()))
    }

    #[pg_test]
    fn an_assessment_is_recorded_without_the_image_unless_asked() {
        let a = assess(&card(1));
        assert_eq!(a["Result"], "Passed", "{a}");
        let id = a["assessmentId"].as_str().unwrap();
        let (result, kept) = Spi::get_two::<String, bool>(&format!(
            "SELECT result, image IS NOT NULL FROM vigil.identity_assessments WHERE id = '{id}'"
        ))
        .unwrap();
        assert_eq!((result.as_deref(), kept), (Some("Passed"), Some(false)));
        let stored = Spi::get_one::<pgrx::JsonB>(&format!(
            "SELECT response FROM vigil.identity_assessments WHERE id = '{id}'"
        ))
        .unwrap()
        .unwrap()
        .0;
        assert_eq!(stored, a);

        Spi::run("SET vigil.identity_keep_images = on").unwrap();
        let bytes = card(2);
        let b = assess(&bytes);
        let kept = Spi::get_one::<Vec<u8>>(&format!(
            "SELECT image FROM vigil.identity_assessments WHERE id = '{}'",
            b["assessmentId"].as_str().unwrap()
        ))
        .unwrap()
        .unwrap();
        assert_eq!(kept, bytes);
    }

    #[pg_test]
    fn the_same_picture_again_is_a_duplicate_of_the_first_assessment() {
        let picture = s::card(3);
        let first = assess(&s::jpeg(&picture, 90, Some(s::camera_exif())));
        assert!(codes(&first).is_empty(), "{first}");
        let other = assess(&card(4));
        assert!(
            codes(&other).is_empty(),
            "another document is no duplicate: {other}"
        );
        for again in [
            s::jpeg(&picture, 90, Some(s::camera_exif())),
            s::jpeg(&s::resized(&picture, 1100), 70, Some(s::camera_exif())),
        ] {
            let a = assess(&again);
            assert_eq!(codes(&a), vec!["DUPLICATE_IMAGE"], "{a}");
            assert_eq!(
                a["checks"]["duplicates"]["metrics"]["duplicateOf"],
                first["assessmentId"]
            );
            assert_eq!(a["Result"], "Review");
        }
    }

    /// SQLSTATE and message of assessing `bytes`, or "accepted".
    fn refusal(bytes: &[u8]) -> String {
        Spi::run(
            "CREATE OR REPLACE FUNCTION pg_temp.refusal(b bytea) RETURNS text LANGUAGE plpgsql AS $$
             BEGIN PERFORM vigil.assess_id(b); RETURN 'accepted';
             EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ' ' || SQLERRM; END $$",
        )
        .unwrap();
        Spi::get_one_with_args::<String>("SELECT pg_temp.refusal($1)", &[bytes.into()])
            .unwrap()
            .unwrap()
    }

    #[pg_test]
    fn refused_uploads_have_their_sqlstate_and_record_nothing() {
        let before = count("SELECT count(*) FROM vigil.identity_assessments");
        let jpeg = card(5);
        let mut huge_png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        // 100,000 x 100,000, 8-bit RGB, and the chunk's CRC: a valid header, no pixels.
        huge_png.extend_from_slice(&[0, 1, 0x86, 0xA0, 0, 1, 0x86, 0xA0, 8, 2, 0, 0, 0]);
        huge_png.extend_from_slice(&[0x27, 0x30, 0x9c, 0x9f]);
        let cases: [(&[u8], &str); 5] = [
            (
                b"%PDF-1.7\n1 0 obj",
                "22P03 invalid image: received a PDF document",
            ),
            (
                b"\x01\x02\x03\x04 not an image",
                "22P03 invalid image: received 17 bytes of an unrecognised format",
            ),
            (
                &jpeg[..jpeg.len() / 2],
                "22023 invalid image: the JPEG image could not be decoded",
            ),
            (
                &huge_png,
                "54000 invalid image: the image is 100000x100000 pixels",
            ),
            (b"", "22023 invalid image: the image is empty"),
        ];
        for (bytes, expected) in cases {
            let got = refusal(bytes);
            assert!(got.starts_with(expected), "{got}");
        }
        assert_eq!(
            count("SELECT count(*) FROM vigil.identity_assessments"),
            before
        );
    }

    #[pg_test(error = "invalid image: is required (a JPEG, PNG or WebP image)")]
    fn a_null_image_is_refused() {
        Spi::run("SELECT vigil.assess_id(NULL)").unwrap();
    }

    #[pg_test]
    fn the_duplicate_lookup_probes_the_band_index() {
        // 20,000 stored hashes, random as hashes of different pictures are.
        Spi::run(
            "INSERT INTO vigil.identity_assessments
                 (id, sha256, phash, result, level, score, confidence, decision, reasons,
                  format, width, height, bytes, response, account)
             SELECT gen_random_uuid(), sha256(i::text::bytea),
                    sha256(i::text::bytea), 'Passed', 5, 0, 'High', 'accept', '{}',
                    'JPEG', 1, 1, 1, '{}', vigil.default_account()
             FROM generate_series(1, 20000) i",
        )
        .unwrap();
        Spi::run("ANALYZE vigil.identity_assessments").unwrap();
        // The lookup vigil.assess_id makes, inlined into the query: the band index.
        let near_77 = "set_bit(sha256('77'::bytea), 3, 1 - get_bit(sha256('77'::bytea), 3))";
        let plan = Spi::get_one::<pgrx::Json>(&format!(
            "EXPLAIN (FORMAT JSON) SELECT * FROM vigil._identity_duplicate({near_77}, 24, vigil.default_account())"
        ))
        .unwrap()
        .unwrap()
        .0
        .to_string();
        assert!(plan.contains("identity_assessments_phash"), "{plan}");
        // Stored hash 77 is found again one bit away.
        let found = Spi::get_one::<i32>(&format!(
            "SELECT distance FROM vigil._identity_duplicate({near_77}, 24, vigil.default_account())"
        ))
        .unwrap();
        assert_eq!(found, Some(1));
    }

    /// A passport's zone (TD3) with its check digits, expiring `expiry` (YYMMDD).
    fn td3_zone(number: &str, expiry: &str) -> String {
        use vigil_identity::mrz::check_digit;
        let with_digit = |field: &str| {
            format!(
                "{field}{}",
                check_digit(field.as_bytes()).expect("zone characters")
            )
        };
        let number = with_digit(&format!("{number:<<9}"));
        let birth = with_digit("740812");
        let expiry = with_digit(expiry);
        let optional = with_digit("ZE184226B<<<<<");
        let composite =
            check_digit(format!("{number}{birth}{expiry}{optional}").as_bytes()).unwrap();
        format!(
            "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\n{number}UTO{birth}F{expiry}{optional}{composite}"
        )
    }

    /// A photo of a passport's data page on a desk, its zone in OCR-B.
    fn passport_photo(zone: &str, seed: u64) -> Vec<u8> {
        use vigil_identity::mrz::render;
        let font = render::font();
        let page = render::document(&font, render::Kind::Td3, zone, 1200, seed);
        let mut scene = render::desk(1700, 1250, seed);
        render::place(&mut scene, &page, (850.0, 625.0), 1200.0, 1.5);
        s::jpeg(&scene, 92, Some(s::camera_exif()))
    }

    #[pg_test]
    fn a_passport_photo_has_its_zone_read_and_checked() {
        let zone = td3_zone("C01X00T47", "340415");
        let a = assess(&passport_photo(&zone, 5));
        let mrz = &a["checks"]["mrz"];
        assert_eq!(mrz["outcome"], "passed", "{a}");
        let m = &mrz["metrics"];
        for (key, value) in [
            ("format", "TD3"),
            ("documentType", "P"),
            ("issuingState", "UTO"),
            ("documentNumber", "C01X00T47"),
            ("primaryName", "ERIKSSON"),
            ("secondaryName", "ANNA MARIA"),
            ("nationality", "UTO"),
            ("birthDate", "1974-08-12"),
            ("expiryDate", "2034-04-15"),
            ("sex", "F"),
        ] {
            assert_eq!(m[key], value, "{key}: {m}");
        }
        assert_eq!(m["allCheckDigitsValid"], true);
        assert_eq!(m["checkDigits"].as_object().unwrap().len(), 5);
        assert!(
            !codes(&a)
                .iter()
                .any(|c| c.starts_with("MRZ") || *c == "DOCUMENT_EXPIRED"),
            "{a}"
        );
        // Read, so no longer among what was not performed.
        let not_performed = a["notPerformed"].to_string();
        assert!(!not_performed.contains("\"mrz\""), "{not_performed}");
        assert_eq!(a["checks"]["document"]["metrics"]["nearestFormat"], "TD3");

        // ICAO's specimen expired in 2012.
        let expired = assess(&passport_photo(&td3_zone("L898902C3", "120415"), 6));
        assert!(
            codes(&expired).iter().any(|c| c == "DOCUMENT_EXPIRED"),
            "{expired}"
        );
        assert_eq!(expired["checks"]["mrz"]["metrics"]["expired"], true);

        // A digit of the birth date altered after printing: the zone reads
        // cleanly, its check digit fails.
        let altered = zone.replace("7408122F", "7408132F");
        let forged = assess(&passport_photo(&altered, 7));
        assert!(
            codes(&forged).iter().any(|c| c == "MRZ_CHECK_DIGIT"),
            "{forged}"
        );
        assert_eq!(
            forged["checks"]["mrz"]["metrics"]["checkDigits"]["birthDate"]["valid"],
            false
        );
    }

    #[pg_test]
    fn without_the_recognition_model_the_zone_is_not_read_and_the_assessment_goes_on() {
        Spi::run("SET vigil.model_dir = '/nonexistent'").unwrap();
        let a = assess(&card(9));
        assert_eq!(a["checks"]["mrz"]["outcome"], "not_performed", "{a}");
        let why = a["checks"]["mrz"]["reason"].as_str().unwrap();
        assert!(
            why.contains("/nonexistent/mrz-rec.onnx") && why.contains("vigil.model_dir"),
            "{why}"
        );
        let listed = a["notPerformed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["check"] == "mrz")
            .expect("mrz among notPerformed");
        assert_eq!(listed["reason"], why);
        assert_eq!(a["Result"], "Passed", "{a}");
        // The model back: read again (a card's front has no zone).
        Spi::run("RESET vigil.model_dir").unwrap();
        let b = assess(&card(10));
        let why = b["checks"]["mrz"]["reason"].as_str().unwrap_or_default();
        assert!(why.contains("front"), "{b}");
    }
}
