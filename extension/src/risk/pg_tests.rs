//! The risk engine inside Postgres: recording, history signals, feedback, blocklist.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;
    use serde_json::Value;

    fn score(body: &str) -> Value {
        Spi::get_one::<pgrx::JsonB>(&format!("SELECT vigil.risk_score('{body}'::jsonb)"))
            .expect("scored")
            .expect("a result")
            .0
    }

    fn codes(assessment: &Value) -> Vec<String> {
        assessment["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["code"].as_str().unwrap().to_owned())
            .collect()
    }

    fn count(sql: &str) -> i64 {
        Spi::get_one::<i64>(sql).unwrap().unwrap()
    }

    const BASE: &str = r#""amount": 120, "paymentMethod": "card", "billingAddress": "1 Main St, Springfield, USA", "accountAge": 400"#;

    #[pg_test]
    fn an_assessment_is_recorded_with_its_id() {
        let a = score(&format!(
            r#"{{"customerEmail": "ann@example.com", {BASE}}}"#
        ));
        let id = a["transactionId"].as_str().unwrap();
        let row = Spi::get_two::<f64, String>(&format!(
            "SELECT score::float8, result FROM vigil.transactions WHERE id = '{id}'"
        ))
        .unwrap();
        assert_eq!(row.1.as_deref(), a["Result"].as_str());
        assert!((row.0.unwrap() - a["RiskScore"].as_f64().unwrap()).abs() < 0.05);
        assert_eq!(
            count("SELECT count(*) FROM vigil.transactions WHERE email = 'ann@example.com'"),
            1
        );
    }

    #[pg_test(
        error = "invalid amount: must be a number from 0 to 1e12, or a string of digits with at most one '.'"
    )]
    fn invalid_input_names_the_field() {
        score(r#"{"amount": -5}"#);
    }

    #[pg_test]
    fn velocity_and_device_reuse_build_up() {
        for i in 0..6 {
            score(&format!(
                r#"{{"customerEmail": "user{i}@example.com", "deviceFingerprint": "dev-1", {BASE}}}"#
            ));
        }
        let later = score(&format!(
            r#"{{"customerEmail": "user9@example.com", "deviceFingerprint": "dev-1", {BASE}}}"#
        ));
        let c = codes(&later);
        assert!(c.iter().any(|c| c == "DEVICE_VELOCITY"), "{c:?}");
        assert!(c.iter().any(|c| c == "DEVICE_SHARED"), "{c:?}");
        for _ in 0..5 {
            score(&format!(
                r#"{{"customerEmail": "fast@example.com", {BASE}}}"#
            ));
        }
        let fast = score(&format!(
            r#"{{"customerEmail": "fast@example.com", {BASE}}}"#
        ));
        assert!(codes(&fast).iter().any(|c| c == "EMAIL_VELOCITY"), "{fast}");
    }

    #[pg_test]
    fn confirmed_fraud_is_a_hard_rule_until_withdrawn() {
        let first = score(&format!(
            r#"{{"customerEmail": "mallory@example.com", "deviceFingerprint": "dev-m", {BASE}}}"#
        ));
        let before = score(&format!(
            r#"{{"customerEmail": "other@example.com", "deviceFingerprint": "dev-m", {BASE}}}"#
        ));
        assert_ne!(before["RiskLevel"], 2);
        let id = first["transactionId"].as_str().unwrap();
        Spi::run(&format!(
            "SELECT vigil.transaction_feedback('{id}', 'fraud')"
        ))
        .unwrap();
        let after = score(&format!(
            r#"{{"customerEmail": "other2@example.com", "deviceFingerprint": "dev-m", {BASE}}}"#
        ));
        assert_eq!(after["RiskLevel"], 2, "{after}");
        assert_eq!(after["Result"], "Failed");
        assert!(codes(&after).iter().any(|c| c == "CONFIRMED_FRAUD"));
        Spi::run(&format!(
            "SELECT vigil.transaction_feedback('{id}', 'legit')"
        ))
        .unwrap();
        let cleared = score(&format!(
            r#"{{"customerEmail": "other3@example.com", "deviceFingerprint": "dev-m", {BASE}}}"#
        ));
        assert_ne!(cleared["RiskLevel"], 2, "{cleared}");
    }

    #[pg_test]
    fn a_blocklisted_email_fails() {
        Spi::run("SELECT vigil.blocklist_add('email', ' Eve@Example.com ', 'chargebacks')")
            .unwrap();
        let a = score(&format!(r#"{{"email": "eve@example.com", {BASE}}}"#));
        assert_eq!(a["RiskLevel"], 2, "{a}");
        assert!(codes(&a).iter().any(|c| c == "BLOCKLISTED"));
        assert!(
            Spi::get_one::<bool>("SELECT vigil.blocklist_remove('email', 'EVE@example.com')")
                .unwrap()
                .unwrap()
        );
        let b = score(&format!(r#"{{"email": "eve@example.com", {BASE}}}"#));
        assert_ne!(b["RiskLevel"], 2);
    }

    #[pg_test(error = "label must be fraud, legit or chargeback")]
    fn feedback_needs_a_known_label() {
        let a = score(&format!(r#"{{"customerEmail": "x@example.com", {BASE}}}"#));
        let id = a["transactionId"].as_str().unwrap();
        Spi::run(&format!(
            "SELECT vigil.transaction_feedback('{id}', 'maybe')"
        ))
        .unwrap();
    }
}
