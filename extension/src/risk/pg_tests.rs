//! The risk engine inside Postgres: recording, history signals, feedback, blocklist.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::pg::testing::{count, reason_codes as codes};
    use serde_json::Value;

    fn score(body: &str) -> Value {
        Spi::get_one::<pgrx::JsonB>(&format!("SELECT vigil.risk_score('{body}'::jsonb)"))
            .expect("scored")
            .expect("a result")
            .0
    }

    /// Grades the assessment `id` with `label` through the SQL function.
    fn feedback(id: &str, label: &str) {
        Spi::run(&format!(
            "SELECT vigil.transaction_feedback('{id}', '{label}')"
        ))
        .unwrap();
    }

    /// An API key of a new account `account`, to enter it with
    /// `vigil.enter_api_key` for the rest of the test's transaction.
    fn other_account_key(account: &str) -> String {
        Spi::run(&format!("SELECT vigil.create_account('{account}')")).unwrap();
        Spi::get_one::<String>(&format!(
            "SELECT key FROM vigil.create_api_key('{account}', account => '{account}')"
        ))
        .unwrap()
        .unwrap()
    }

    /// Back to no account entered: the default account's, as SQL callers are.
    fn leave_account() {
        Spi::run("SELECT set_config('vigil.account', '', true)").unwrap();
    }

    #[pg_test]
    fn each_account_has_its_own_history_labels_and_blocklist() {
        let (a, b) = (
            other_account_key("a@example.com"),
            other_account_key("b@example.com"),
        );
        let enter = |key: &str| Spi::run(&format!("SELECT vigil.enter_api_key('{key}')")).unwrap();
        let carol = format!(
            r#"{{"customerEmail": "carol@example.com", "deviceFingerprint": "dev-c", "ipAddress": "198.51.100.9", {BASE}}}"#
        );
        enter(&b);
        let before = score(&carol);
        assert_eq!(before["Result"], "Passed", "{before}");
        // A: a burst on carol's device, and carol's e-mail labelled fraud.
        enter(&a);
        for i in 0..8 {
            score(&format!(
                r#"{{"customerEmail": "bot{i}@example.com", "deviceFingerprint": "dev-c", {BASE}}}"#
            ));
        }
        let invented = score(&carol);
        let id = invented["transactionId"].as_str().unwrap().to_owned();
        feedback(&id, "fraud");
        Spi::run("SELECT vigil.blocklist_add('ip', '198.51.100.9', 'a', NULL, 'a@example.com')")
            .unwrap();
        assert_eq!(score(&carol)["Result"], "Failed");
        // B sees none of it.
        enter(&b);
        let after = score(&carol);
        assert_eq!(after["Result"], "Passed", "{after}");
        assert_eq!(codes(&after), codes(&before), "{after}");
        // Nor can it label A's transaction: it is not found, as none would be.
        let refused = crate::pg::testing::error_of(&format!(
            "SELECT vigil.transaction_feedback('{id}', 'legit')"
        ));
        assert_eq!(refused, format!("no transaction {id}"));
        leave_account();
        // The default account's customer is untouched too.
        assert_eq!(score(&carol)["Result"], "Passed");
        assert_eq!(
            count("SELECT count(*) FROM vigil.transactions WHERE account = 'b@example.com'"),
            2
        );
    }

    /// What the network layer stores is the hash the engine looks up.
    #[pg_test]
    fn the_network_hash_in_sql_is_the_engines() {
        for (kind, value) in [
            ("email", "ann@example.com"),
            ("device", "fp-ü-1"),
            ("card", "pm:card|name:ann"),
        ] {
            let sql =
                Spi::get_one::<String>(&format!("SELECT vigil._network_hash('{kind}', '{value}')"))
                    .unwrap()
                    .unwrap();
            assert_eq!(sql, vigil_risk::network_hash(kind, value));
        }
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
        feedback(id, "fraud");
        let after = score(&format!(
            r#"{{"customerEmail": "other2@example.com", "deviceFingerprint": "dev-m", {BASE}}}"#
        ));
        assert_eq!(after["RiskLevel"], 2, "{after}");
        assert_eq!(after["Result"], "Failed");
        assert!(codes(&after).iter().any(|c| c == "CONFIRMED_FRAUD"));
        feedback(id, "legit");
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

    #[pg_test]
    fn a_chargeback_fails_the_same_payer_and_grades_its_device_by_time() {
        let fraud = score(&format!(
            r#"{{"customerEmail": "ring@example.com", "deviceFingerprint": "dev-ring", "ipAddress": "198.51.100.9", "time": "2026-02-01T10:00:00Z", {BASE}}}"#
        ));
        let id = fraud["transactionId"].as_str().unwrap();
        let answer = Spi::get_one::<pgrx::JsonB>(&format!(
            "SELECT vigil.transaction_feedback('{id}', 'chargeback')"
        ))
        .unwrap()
        .unwrap()
        .0;
        // The payer's e-mail and card are hard rules; device and IP are links.
        assert_eq!(
            answer["hardRules"],
            serde_json::json!(["card", "email"]),
            "{answer}"
        );
        assert_eq!(
            answer["linked"],
            serde_json::json!(["device", "ip"]),
            "{answer}"
        );
        assert_eq!(
            count("SELECT count(*) FROM vigil.fraud_identities WHERE occurred_at = '2026-02-01T10:00:00Z'"),
            4
        );
        // The same payer fails.
        let again = score(&format!(
            r#"{{"customerEmail": "ring@example.com", "time": "2026-03-01T10:00:00Z", {BASE}}}"#
        ));
        assert_eq!(again["RiskLevel"], 2, "{again}");
        // Someone else on that device a day later: graded points, no hard rule.
        let next_day = score(
            r#"{"customerEmail": "other@example.com", "deviceFingerprint": "dev-ring", "time": "2026-02-02T10:00:00Z", "paymentMethod": "paypal", "accountAge": 400, "amount": 50}"#,
        );
        let link = |a: &Value| {
            a["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["code"] == "FRAUD_LINKED_DEVICE")
                .map(|r| r["points"].as_f64().unwrap())
        };
        assert_ne!(next_day["RiskLevel"], 2, "{next_day}");
        assert!(
            !codes(&next_day).iter().any(|c| c == "CONFIRMED_FRAUD"),
            "{next_day}"
        );
        let fresh = link(&next_day).unwrap_or_else(|| panic!("{next_day}"));
        // Three months after the fraud the link weighs less, or nothing.
        let later = score(
            r#"{"customerEmail": "third@example.com", "deviceFingerprint": "dev-ring", "time": "2026-05-01T10:00:00Z", "paymentMethod": "paypal", "accountAge": 400, "amount": 50}"#,
        );
        assert!(link(&later).unwrap_or(0.0) < fresh, "{later}");
        // A later `legit` withdraws every mark.
        feedback(id, "legit");
        assert_eq!(count("SELECT count(*) FROM vigil.fraud_identities"), 0);
    }

    #[pg_test(error = "label must be fraud, legit or chargeback")]
    fn feedback_needs_a_known_label() {
        let a = score(&format!(r#"{{"customerEmail": "x@example.com", {BASE}}}"#));
        let id = a["transactionId"].as_str().unwrap();
        feedback(id, "maybe");
    }

    #[pg_test]
    fn a_replayed_purchase_sees_the_history_of_its_own_time() {
        // Five purchases on one device in January, replayed today in order:
        // each sees the earlier ones of that hour; a purchase now sees none of
        // them in its day, only in the device's first-seen age.
        for minute in 0..5 {
            score(&format!(
                r#"{{"customerEmail": "j{minute}@example.com", "deviceFingerprint": "dev-jan", "time": "2026-01-10T10:0{minute}:00Z", {BASE}}}"#
            ));
        }
        let features = |email: &str| {
            Spi::get_one::<pgrx::JsonB>(&format!(
                "SELECT features FROM vigil.transactions WHERE email = '{email}'"
            ))
            .unwrap()
            .unwrap()
            .0
        };
        let last = features("j4@example.com");
        assert_eq!(last["velocity"]["device"], serde_json::json!([4, 4]));
        assert_eq!(last["otherEmails"]["device"], serde_json::json!([4, 4, 4]));
        assert_eq!(
            count("SELECT count(*) FROM vigil.transactions WHERE occurred_at = '2026-01-10T10:04:00Z'"),
            1
        );
        score(&format!(
            r#"{{"customerEmail": "now@example.com", "deviceFingerprint": "dev-jan", {BASE}}}"#
        ));
        let now = features("now@example.com");
        assert_eq!(now["velocity"]["device"], serde_json::json!([0, 0]));
        assert!(
            now["firstSeenDays"]["device"].as_f64().unwrap() > 30.0,
            "{now}"
        );
        // A time ahead of the server's clock counts as now.
        score(&format!(
            r#"{{"customerEmail": "ahead@example.com", "time": "2099-01-01T00:00:00Z", {BASE}}}"#
        ));
        assert_eq!(
            count("SELECT count(*) FROM vigil.transactions WHERE email = 'ahead@example.com' AND occurred_at = now()"),
            1
        );
    }

    #[pg_test]
    fn refit_learns_from_labels_and_its_points_are_explained() {
        let refit = || {
            Spi::get_one::<pgrx::JsonB>("SELECT vigil.risk_refit(NULL)")
                .unwrap()
                .unwrap()
                .0
        };
        let too_few = refit();
        assert_eq!(too_few["fitted"], false);
        assert!(too_few["reason"].as_str().unwrap().contains("at least 20"));
        // 48 labelled frauds of 800 and 192 legitimate purchases of 120, which
        // the rules score alike (under HIGH_AMOUNT's 1,000; no card, so no
        // identity is shared), over nine days, so the newest days hold frauds
        // to judge the fit on.
        for i in 0..240 {
            let fraud = i % 5 == 0;
            let body = if fraud {
                format!(
                    r#"{{"customerEmail": "f{i}@example.com", "time": "2026-03-0{}T14:00:00Z", "amount": 800, "accountAge": 400}}"#,
                    1 + i % 9
                )
            } else {
                format!(
                    r#"{{"customerEmail": "l{i}@example.com", "time": "2026-03-0{}T14:00:00Z", "amount": 120, "accountAge": 400}}"#,
                    1 + i % 9
                )
            };
            let id = score(&body)["transactionId"].as_str().unwrap().to_owned();
            let label = if fraud { "chargeback" } else { "legit" };
            feedback(&id, label);
        }
        let fitted = refit();
        assert_eq!(fitted["fitted"], true, "{fitted}");
        assert_eq!(fitted["adopted"], true, "{fitted}");
        assert!(
            fitted["validation"]["candidate"]["auc"].as_f64().unwrap()
                > fitted["validation"]["inForce"]["auc"].as_f64().unwrap(),
            "{fitted}"
        );
        assert_eq!(
            (fitted["frauds"].clone(), fitted["legit"].clone()),
            (48.into(), 192.into())
        );
        assert!(
            fitted["weights"]["lnAmount"].as_f64().unwrap() > 0.5,
            "{fitted}"
        );
        assert_eq!(count("SELECT count(*) FROM vigil.risk_models"), 1);
        // Another account's purchases are scored by its own scoring, the
        // rules alone, and its refit has none of these labels.
        let other = other_account_key("refit@example.com");
        Spi::run(&format!("SELECT vigil.enter_api_key('{other}')")).unwrap();
        let elsewhere = score(
            r#"{"customerEmail": "new@example.com", "time": "2026-03-09T15:00:00Z", "amount": 800, "accountAge": 400}"#,
        );
        assert!(
            !codes(&elsewhere).iter().any(|c| c == "LEARNED_MODEL"),
            "{elsewhere}"
        );
        assert_eq!(refit()["fitted"], false);
        Spi::run("SELECT set_config('vigil.account', '', true)").unwrap();
        // The next purchase of 800 gets the model's points, with a reason.
        let risky = score(
            r#"{"customerEmail": "new@example.com", "time": "2026-03-09T15:00:00Z", "amount": 800, "accountAge": 400}"#,
        );
        let learned = risky["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["code"] == "LEARNED_MODEL")
            .unwrap_or_else(|| panic!("{risky}"));
        assert!(learned["points"].as_f64().unwrap() > 5.0, "{risky}");
        assert!(
            learned["detail"].as_str().unwrap().contains("240 labelled"),
            "{risky}"
        );
        // Deleting the models turns learning off.
        Spi::run("DELETE FROM vigil.risk_models").unwrap();
        let plain = score(
            r#"{"customerEmail": "new2@example.com", "time": "2026-03-09T15:00:00Z", "amount": 800, "accountAge": 400}"#,
        );
        assert!(
            !codes(&plain).iter().any(|c| c == "LEARNED_MODEL"),
            "{plain}"
        );
        // Unlabelled transactions count as legitimate when asked: the two above.
        let with_unlabelled = Spi::get_one::<pgrx::JsonB>("SELECT vigil.risk_refit(interval '0')")
            .unwrap()
            .unwrap()
            .0;
        assert_eq!(with_unlabelled["legit"], 194, "{with_unlabelled}");
        // Refitting the same labels again is judged against the model now in
        // force, which the same fit cannot beat by a margin: it stays.
        let again = refit();
        assert_eq!(again["adopted"], false, "{again}");
        assert!(
            again["reason"].as_str().unwrap().contains("stays"),
            "{again}"
        );
        // Precision and recall by band; with a review budget, the Review
        // cut-off follows it.
        assert_eq!(again["reviewCutoff"], Value::Null, "{again}");
        let bands = &again["bands"];
        let counted: u64 = ["Passed", "Review", "Failed"]
            .iter()
            .map(|b| bands[b]["transactions"].as_u64().unwrap())
            .sum();
        assert_eq!(counted, 240, "{again}");
        assert_eq!(again["reviewBudget"], Value::Null, "{again}");
        Spi::run("SET vigil.risk_review_rate = 0.1").unwrap();
        let budget = refit();
        let cutoff = budget["reviewCutoff"]
            .as_f64()
            .unwrap_or_else(|| panic!("{budget}"));
        assert!((40.0..75.0).contains(&cutoff), "{budget}");
        assert_eq!(
            budget["reviewBudget"],
            serde_json::json!({"rate": 0.1, "setBy": "installation"})
        );
        // Issue 61: an account's own budget comes before the installation's:
        // the refit judges at it and moves the cut-off by it (how the share
        // moves the cut-off is vigil-risk's refit tests').
        let own = |rate: &str| {
            Spi::get_one::<bool>(&format!(
                "SELECT vigil.set_risk_review_rate(vigil.default_account(), {rate})"
            ))
            .unwrap()
            .unwrap()
        };
        assert!(own("0.01"));
        let narrower = refit();
        assert_eq!(
            narrower["reviewBudget"],
            serde_json::json!({"rate": 0.01, "setBy": "account"})
        );
        assert_eq!(narrower["validation"]["reviewRate"], 0.01, "{narrower}");
        assert!(own("NULL"));
        assert_eq!(refit()["reviewBudget"]["setBy"], "installation");
        // Refused with the field named; an unknown account is not found.
        assert_eq!(
            crate::pg::testing::error_of(
                "SELECT vigil.set_risk_review_rate(vigil.default_account(), 0.7)"
            ),
            "invalid rate: the share of transactions reviewed, above 0 and at most 0.5 (NULL: the installation's vigil.risk_review_rate)"
        );
        assert_eq!(
            Spi::get_one::<bool>("SELECT vigil.set_risk_review_rate('nobody@example.com', 0.1)"),
            Ok(Some(false))
        );
    }

    /// The history of a device ($2), IP ($3) or card ($4) as one SQL subquery
    /// at event time $5: [last hour, last day, other e-mails in a day, 30 and
    /// 90 days, first seen (µs before), rows in 30 days].
    fn linkage_reference(column: &str, param: &str) -> String {
        format!(
            "(SELECT ARRAY[count(*) FILTER (WHERE occurred_at > $5 - interval '1 hour'),
                          count(*) FILTER (WHERE occurred_at > $5 - interval '1 day'),
                          count(DISTINCT email) FILTER (WHERE email IS DISTINCT FROM $1
                                                        AND occurred_at > $5 - interval '1 day'),
                          count(DISTINCT email) FILTER (WHERE email IS DISTINCT FROM $1
                                                        AND occurred_at > $5 - interval '30 days'),
                          count(DISTINCT email) FILTER (WHERE email IS DISTINCT FROM $1
                                                        AND occurred_at > $5 - interval '90 days'),
                          (extract(epoch FROM $5 - min(occurred_at)) * 1000000)::bigint,
                          count(*) FILTER (WHERE occurred_at > $5 - interval '30 days')]
               FROM h WHERE {column} = {param})"
        )
    }

    /// The history as one SQL query over the same tables, as of event time $5:
    /// what the direct index ranges must agree with.
    fn reference() -> String {
        format!(
            "
    WITH h AS (SELECT * FROM vigil.transactions WHERE occurred_at <= $5 AND account = 'default@localhost')
    SELECT
      (SELECT ARRAY[count(*) FILTER (WHERE occurred_at > $5 - interval '1 hour'),
                    count(*) FILTER (WHERE occurred_at > $5 - interval '1 day'),
                    (extract(epoch FROM $5 - min(occurred_at)) * 1000000)::bigint]
         FROM h WHERE email = $1),
      {}, {}, {},
      (SELECT ARRAY[count(amount), coalesce(avg(amount), 0), coalesce(stddev_samp(amount), 0),
                    coalesce(max(amount), 0)]::float8[]
         FROM (SELECT amount FROM h
                WHERE email = $1 AND amount IS NOT NULL ORDER BY occurred_at DESC LIMIT 100) recent),
      (SELECT array_agg(kind || ':' || source ORDER BY source, kind) FROM (
         SELECT kind, 'blocklist' AS source FROM vigil.blocklist
          WHERE account = 'default@localhost'
            AND (kind, value) IN (('email', $1), ('device', $2), ('ip', $3), ('card', $4))
            AND (expires_at IS NULL OR expires_at > now())
         UNION
         SELECT kind, 'fraud' FROM vigil.fraud_identities
          WHERE account = 'default@localhost'
            AND (kind, value) IN (('email', $1), ('device', $2), ('ip', $3), ('card', $4))) rules)",
            linkage_reference("device", "$2"),
            linkage_reference("ip", "$3"),
            linkage_reference("card", "$4"),
        )
    }

    #[pg_test]
    fn history_from_index_ranges_matches_sql() {
        // 20 e-mails, 15 devices, 12 IPs, 10 cards, some absent; occurred over
        // a hundred days, the last five after now (a replay's later purchases,
        // which are not the history of earlier ones); a fifth without an
        // amount; e0 with 170 rows, for its last 100 amounts. A quarter are
        // another account's, which is no part of the default account's history.
        Spi::run(
            "INSERT INTO vigil.transactions (occurred_at, request, features, score, level, result,
                                             confidence, reasons, email, device, ip, card, amount, account)
             SELECT now() - (i * 7919 % 144000) * interval '1 minute' + interval '5 days',
                    '{}', '{}', 0, 0, 'Passed', 'Low', '[]',
                    CASE WHEN i % 13 <> 0 THEN 'e' || (CASE WHEN i > 400 THEN 0 ELSE i % 20 END) END,
                    CASE WHEN i % 11 <> 0 THEN 'd' || i % 15 END,
                    CASE WHEN i % 7 <> 0 THEN 'ip' || i % 12 END,
                    CASE WHEN i % 3 <> 0 THEN 'c' || i % 10 END,
                    CASE WHEN i % 5 <> 0 THEN (i * 37 % 1000) / 4.0 END,
                    CASE WHEN i % 4 = 1 THEN 'other@example.com' ELSE 'default@localhost' END
             FROM generate_series(1, 550) i",
        )
        .unwrap();
        let some_id = "(SELECT id FROM vigil.transactions LIMIT 1)";
        Spi::run(&format!(
            "INSERT INTO vigil.blocklist (kind, value, expires_at, account) VALUES
               ('email', 'e1', now() - interval '1 second', 'default@localhost'),
               ('email', 'e2', now() + interval '1 day', 'default@localhost'),
               ('device', 'd3', NULL, 'default@localhost'), ('card', 'c4', NULL, 'default@localhost'),
               ('email', 'e5', NULL, 'other@example.com'), ('card', 'c6', NULL, 'other@example.com');
             INSERT INTO vigil.fraud_identities (kind, value, transaction_id, account) VALUES
               ('email', 'e2', {some_id}, 'default@localhost'), ('ip', 'ip5', {some_id}, 'default@localhost'),
               ('device', 'd3', {some_id}, 'default@localhost'),
               ('email', 'e7', {some_id}, 'other@example.com'), ('ip', 'ip8', {some_id}, 'other@example.com')"
        ))
        .unwrap();

        let name = |prefix: &str, n: usize, of: usize| {
            (n % (of + 1) < of).then(|| format!("{prefix}{}", n % (of + 1)))
        };
        let now = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
        let reference = reference();
        for n in 0..90usize {
            let ids = vigil_risk::Identities {
                email: name("e", n, 21),
                device: name("d", n * 7, 16),
                ip: name("ip", n * 5, 13),
                card: name("c", n * 3, 11),
            };
            // Now, 40 days back, and before anything happened.
            let event = now - [0, 40, 200][n % 3] * vigil_risk::Window::DAY_US;
            let snapshot = crate::pg::index_range::Snapshot::take();
            let direct = super::super::history::load("default@localhost", &ids, event, &snapshot);
            snapshot.release();
            let at = pgrx::datum::TimestampWithTimeZone::try_from(event).unwrap();
            let mut args: Vec<pgrx::datum::DatumWithOid> =
                [&ids.email, &ids.device, &ids.ip, &ids.card]
                    .map(|v| v.clone().into())
                    .into();
            args.push(at.into());
            Spi::connect(|client| {
                let row = client.select(&reference, Some(1), &args).unwrap().first();
                let counts = |i| row.get::<Vec<Option<i64>>>(i).unwrap().unwrap_or_default();
                let n = |c: &[Option<i64>], i: usize| c[i].unwrap_or(0) as u32;
                let window = |c: &[Option<i64>], month: Option<u32>| vigil_risk::Window {
                    last_hour: n(c, 0),
                    last_day: n(c, 1),
                    last_month: month,
                };
                let linkage = |c: &[Option<i64>]| vigil_risk::Linkage {
                    day: n(c, 2),
                    month: n(c, 3),
                    quarter: n(c, 4),
                };
                let (email, device, ip, card) = (counts(1), counts(2), counts(3), counts(4));
                if ids.email.is_some() {
                    assert_eq!(direct.email, window(&email, None), "{ids:?}");
                    assert_eq!(direct.email_first_seen_us, email[2], "{ids:?}");
                }
                if ids.device.is_some() {
                    assert_eq!(
                        direct.device,
                        window(&device, Some(n(&device, 6))),
                        "{ids:?}"
                    );
                    assert_eq!(direct.device_others, linkage(&device), "{ids:?}");
                    assert_eq!(direct.device_first_seen_us, device[5], "{ids:?}");
                }
                if ids.ip.is_some() {
                    assert_eq!(direct.ip, window(&ip, Some(n(&ip, 6))), "{ids:?}");
                    assert_eq!(direct.ip_others, linkage(&ip), "{ids:?}");
                    assert_eq!(direct.ip_first_seen_us, ip[5], "{ids:?}");
                }
                if ids.card.is_some() {
                    assert_eq!(direct.card, window(&card, Some(n(&card, 6))), "{ids:?}");
                    assert_eq!(direct.card_others, linkage(&card), "{ids:?}");
                }
                let amounts: Vec<f64> = row.get(5).unwrap().unwrap();
                let a = direct.customer_amounts;
                assert_eq!(a.count as f64, amounts[0], "{ids:?}");
                for (got, want) in [
                    (a.mean, amounts[1]),
                    (a.stddev, amounts[2]),
                    (a.max, amounts[3]),
                ] {
                    assert!(
                        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                        "{ids:?}: {a:?} against {amounts:?}"
                    );
                }
                let rules: Vec<String> = row.get(6).unwrap().unwrap_or_default();
                let spelled: Vec<String> = direct
                    .hard_rules
                    .iter()
                    .map(|r| {
                        let source = match r.source {
                            vigil_risk::HardRuleSource::Blocklist => "blocklist",
                            vigil_risk::HardRuleSource::ConfirmedFraud => "fraud",
                        };
                        format!("{}:{source}", r.identity.as_str())
                    })
                    .collect();
                let mut spelled_by_source = spelled.clone();
                spelled_by_source.sort_by_key(|s| s.split(':').nth(1).map(str::to_owned));
                assert_eq!(spelled_by_source, rules, "{ids:?}");
            });
        }
        // The data exercised what it was meant to.
        assert!(
            count(
                "SELECT count(*) FROM vigil.transactions WHERE email = 'e0' AND amount IS NOT NULL"
            ) > 100
        );
    }
}
