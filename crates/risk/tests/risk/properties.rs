//! Property tests of the contract: SPEC rule 1 (VPN), strictness monotonicity, form A =
//! form B, and monotone grading.

use crate::common::{data, history, ip_country, Data, Form};
use proptest::prelude::*;
use serde_json::json;
use vigil_risk::model::{LinkWeights, FEATURES};
use vigil_risk::{
    assess, assess_with, parse_request, Assessment, HardRule, HardRuleSource, History,
    IdentityKind, Model, Request, Verdict,
};

/// Any model a refit could store: weights and intercepts of either sign, any
/// link weights, ranges wide enough that it speaks.
fn model() -> impl Strategy<Value = Model> {
    (
        proptest::collection::vec(-3.0f64..3.0, FEATURES),
        -6.0f64..0.0,
        -6.0f64..0.0,
        20u32..2000,
        0.0f64..=LinkWeights::MAX,
        0.0f64..=LinkWeights::MAX,
        proptest::option::of(40.1f64..74.9),
    )
        .prop_map(
            |(w, intercept, expert_intercept, frauds, device, ip, review_cutoff)| {
                let mut weights = [0.0; FEATURES];
                weights.copy_from_slice(&w);
                Model {
                    weights,
                    intercept,
                    expert_intercept,
                    frauds,
                    legit: frauds * 20,
                    ranges: [(-1e6, 1e6); FEATURES],
                    links: LinkWeights { device, ip },
                    review_cutoff,
                }
            },
        )
}

fn run(body: &serde_json::Value, h: &History, c: Option<[u8; 2]>) -> (Request, Assessment) {
    let req = parse_request(body).expect("generated bodies are valid");
    let a = assess(&req, h, c);
    (req, a)
}

/// `yes` scores at least as high as `no`, strictly higher before rounding, with a
/// result at least as strict.
fn flag_raises_score(
    yes: &Data,
    no: &Data,
    b_form: bool,
    h: &History,
    c: Option<[u8; 2]>,
) -> Result<(), TestCaseError> {
    let form = if b_form { Form::B } else { Form::A };
    let (_, a_yes) = run(&yes.body(form), h, c);
    let (_, a_no) = run(&no.body(form), h, c);
    prop_assert!(
        a_yes.score >= a_no.score,
        "{} < {}",
        a_yes.score,
        a_no.score
    );
    prop_assert!(a_yes.total_points > a_no.total_points);
    prop_assert!(a_yes.result >= a_no.result);
    Ok(())
}

#[test]
fn an_empty_body_asks_for_verification_with_a_score_read_as_review() {
    let (_, a) = run(&json!({}), &History::default(), None);
    assert_eq!((a.level, a.result), (7, vigil_risk::Verdict::Review));
    assert!(a.score >= 50.0, "{}", a.score);
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// SPEC rule 1: isVPN true never scores lower than false, all else equal; before
    /// rounding it is strictly higher; the result is never more lenient. Form A
    /// ("Yes"/"No") and form B (bools).
    #[test]
    fn vpn_true_never_scores_lower(d in data(), h in history(), c in ip_country(), b_form in any::<bool>()) {
        let yes = Data { is_vpn: Some(true), ..d.clone() };
        let no = Data { is_vpn: Some(false), ..d };
        flag_raises_score(&yes, &no, b_form, &h, c)?;
    }

    /// The same for proxyOrVPN (a bool in both renderings: form A has no such field).
    #[test]
    fn proxy_true_never_scores_lower(d in data(), h in history(), c in ip_country(), b_form in any::<bool>()) {
        let yes = Data { proxy_or_vpn: Some(true), ..d.clone() };
        let no = Data { proxy_or_vpn: Some(false), ..d };
        flag_raises_score(&yes, &no, b_form, &h, c)?;
    }

    /// Raising strictness never lowers the score nor makes the result more lenient
    /// (including level 7, which does not depend on strictness).
    #[test]
    fn strictness_is_monotone(d in data(), h in history(), c in ip_country(), s1 in 0u8..=100, s2 in 0u8..=100) {
        let (lo, hi) = if s1 <= s2 { (s1, s2) } else { (s2, s1) };
        let (_, a_lo) = run(&Data { strictness: Some(lo), ..d.clone() }.body(Form::B), &h, c);
        let (_, a_hi) = run(&Data { strictness: Some(hi), ..d }.body(Form::B), &h, c);
        prop_assert!(a_hi.score >= a_lo.score, "s {lo}->{hi}: {} -> {}", a_lo.score, a_hi.score);
        prop_assert!(a_hi.result >= a_lo.result, "s {lo}->{hi}: {:?} -> {:?}", a_lo.result, a_hi.result);
        prop_assert_eq!(a_hi.level == 7, a_lo.level == 7);
    }

    /// The same with a model in force, its review budget's cut-off included,
    /// and the score-only bands still agree with the result.
    #[test]
    fn strictness_is_monotone_with_a_model(d in data(), h in history(), c in ip_country(), s1 in 0u8..=100, s2 in 0u8..=100, m in model()) {
        let (lo, hi) = if s1 <= s2 { (s1, s2) } else { (s2, s1) };
        let at = |s: u8| {
            let req = parse_request(&Data { strictness: Some(s), ..d.clone() }.body(Form::B)).expect("valid");
            assess_with(&req, &h, c, Some(&m))
        };
        let (a_lo, a_hi) = (at(lo), at(hi));
        prop_assert!(a_hi.score >= a_lo.score, "s {lo}->{hi}: {} -> {}", a_lo.score, a_hi.score);
        prop_assert!(a_hi.result >= a_lo.result, "s {lo}->{hi}: {:?} -> {:?}", a_lo.result, a_hi.result);
        for a in [&a_lo, &a_hi] {
            let band = match a.result {
                Verdict::Passed => a.score < 50.0,
                Verdict::Review => a.score >= 50.0,
                Verdict::Failed => a.score >= 80.0,
            };
            prop_assert!(band, "{:?} (level {}) scored {}", a.result, a.level, a.score);
        }
    }

    /// A score-only integrator (under 50 proceed, 50 and up review, 80 and up
    /// fail) reads the same answer as `Result`, at every strictness, with level
    /// 7 and the hard rules included.
    #[test]
    fn the_score_agrees_with_the_result(d in data(), h in history(), c in ip_country()) {
        let (_, a) = run(&d.body(Form::B), &h, c);
        let band = match a.result {
            vigil_risk::Verdict::Passed => a.score < 50.0,
            vigil_risk::Verdict::Review => a.score >= 50.0,
            vigil_risk::Verdict::Failed => a.score >= 80.0,
        };
        prop_assert!(band, "{:?} (level {}) scored {}", a.result, a.level, a.score);
    }

    /// Form A and form B of the same data give the same Request and assessment.
    #[test]
    fn form_a_equals_form_b(d in data(), h in history(), c in ip_country()) {
        let d = d.common_only();
        let (ra, aa) = run(&d.body(Form::A), &h, c);
        let (rb, ab) = run(&d.body(Form::B), &h, c);
        prop_assert_eq!(&ra, &rb);
        prop_assert_eq!(aa, ab);
        // The normalised JSON re-parses to the same request.
        let (rr, _) = run(&ra.to_json(), &h, c);
        prop_assert_eq!(rr, ra);
    }

    /// A full mixed body (form A strings for the shared fields, form B for the rest)
    /// re-parses from its normalised JSON unchanged.
    #[test]
    fn normalised_json_round_trips(d in data()) {
        let r = parse_request(&d.body(Form::A)).expect("valid");
        let again = parse_request(&r.to_json()).expect("valid");
        prop_assert_eq!(again, r);
    }

    /// More velocity, a higher amount, a newer account, more quantity or frequency,
    /// more shared e-mails (in the day or the long window) never lower the score.
    /// (Except a link to confirmed fraud's points, which sharing dilutes on
    /// purpose: the later users of a shared device are mostly other people. So
    /// where the sharing grows, such links are left out.)
    #[test]
    fn grading_is_monotone(d in data(), h in history(), c in ip_country(), bump in 1u32..200, which in 0usize..19) {
        let req = parse_request(&d.body(Form::B)).expect("valid");
        let mut h = h;
        if matches!(which, 8 | 9 | 14 | 15 | 18) {
            h.hard_rules.retain(|r| r.is_hard() || r.source != vigil_risk::HardRuleSource::ConfirmedFraud);
        }
        let base = assess(&req, &h, c);
        let mut r2 = req.clone();
        let mut h2 = h.clone();
        match which {
            0 => h2.email.last_hour += bump,
            1 => h2.email.last_day += bump,
            2 => h2.device.last_hour += bump,
            3 => h2.device.last_day += bump,
            4 => h2.ip.last_hour += bump,
            5 => h2.ip.last_day += bump,
            6 => h2.card.last_hour += bump,
            7 => h2.card.last_day += bump,
            8 => { h2.device_others.day += bump; h2.device_others.month += bump; h2.device_others.quarter += bump }
            9 => { h2.ip_others.day += bump; h2.ip_others.month += bump; h2.ip_others.quarter += bump }
            14 => h2.device_others.quarter += bump,
            15 => { h2.ip_others.month += bump; h2.ip_others.quarter += bump }
            16 => h2.card_others.quarter += bump,
            17 => { h2.card_others.day += bump; h2.card_others.month += bump; h2.card_others.quarter += bump }
            10 => r2.amount = Some(r2.amount.unwrap_or(0.0) + f64::from(bump) * 97.3),
            11 => r2.account_age_days = Some(r2.account_age_days.map_or(0, |a| a.saturating_sub(bump))),
            18 => h2.ip_others.quarter += bump,
            12 => r2.order_quantity = Some(r2.order_quantity.unwrap_or(0) + bump),
            _ => r2.transaction_frequency = Some(r2.transaction_frequency.unwrap_or(0) + bump),
        }
        // Adding a field where there was none may move the request out of level 7;
        // compare scores, which do not depend on that.
        let more = assess(&r2, &h2, c);
        prop_assert!(more.total_points >= base.total_points - 1e-9,
            "case {which}: {} -> {}", base.total_points, more.total_points);
        prop_assert!(more.score >= base.score);
    }

    /// Feedback never fails a customer who shares only a device or an IP
    /// address with a confirmed fraud: adding such a link, however fresh,
    /// never turns a result into `Failed`, whatever the model in force.
    #[test]
    fn a_fraud_linked_device_or_ip_alone_never_fails(
        d in data(),
        h in history(),
        c in ip_country(),
        kinds in proptest::sample::subsequence(vec![IdentityKind::Device, IdentityKind::Ip], 1..=2),
        age_days in 0i64..120,
        model in proptest::option::of(model()),
    ) {
        let req = parse_request(&d.body(Form::B)).expect("valid");
        let before = assess_with(&req, &h, c, model.as_ref());
        let mut linked = h.clone();
        linked.hard_rules.extend(kinds.into_iter().map(|identity| HardRule {
            identity,
            source: HardRuleSource::ConfirmedFraud,
            detail: String::new(),
            fraud_age_us: Some(age_days * 86_400_000_000),
        }));
        let after = assess_with(&req, &linked, c, model.as_ref());
        prop_assert!(after.result != Verdict::Failed || before.result == Verdict::Failed,
            "{:?} -> {:?}: {:?}", before.result, after.result, after.reasons);
    }

    /// The network layer is bounded and never fails alone: identities other
    /// accounts confirmed as fraud add at most 20 points, and never turn a
    /// result into `Failed`, whatever the model in force.
    #[test]
    fn the_network_alone_never_fails_and_adds_at_most_20(
        d in data(),
        h in history(),
        c in ip_country(),
        links in proptest::collection::vec(
            (proptest::sample::select(vec![IdentityKind::Email, IdentityKind::Device, IdentityKind::Card]), 1u32..50),
            1..=3,
        ),
        model in proptest::option::of(model()),
    ) {
        let req = parse_request(&d.body(Form::B)).expect("valid");
        let before = assess_with(&req, &h, c, model.as_ref());
        let mut networked = h.clone();
        networked.network = links
            .into_iter()
            .map(|(identity, accounts)| vigil_risk::NetworkLink { identity, accounts })
            .collect();
        let after = assess_with(&req, &networked, c, model.as_ref());
        prop_assert!(after.result != Verdict::Failed || before.result == Verdict::Failed,
            "{:?} -> {:?}: {:?}", before.result, after.result, after.reasons);
        let network: f64 = after.reasons.iter()
            .filter(|r| r.code == "NETWORK_FRAUD_LINK")
            .map(|r| r.points)
            .sum();
        prop_assert!((5.0..=20.0).contains(&network), "{:?}", after.reasons);
    }

    /// Never panics on arbitrary JSON, and either parses or names a field.
    #[test]
    fn arbitrary_json_never_panics(v in arb_json()) {
        match parse_request(&v) {
            Ok(r) => { let _ = assess(&r, &History::default(), None); }
            Err(e) => prop_assert!(e.field.is_empty() != v.is_object()),
        }
    }
}

/// Arbitrary JSON objects whose keys are the request's fields.
fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,30}".prop_map(serde_json::Value::String),
        proptest::sample::select(
            &[
                "Yes",
                "no",
                "12.5",
                "2024-01-01 00:00:00",
                "2024-01-01T03:00:00+02:00",
                "1.2.3.4",
                "a@b",
                "50",
                "-1",
                "1e3",
            ][..]
        )
        .prop_map(|s| serde_json::Value::String(s.into())),
    ];
    // Every field SPEC names, and one it does not.
    let keys: Vec<&'static str> = vigil_risk::input::FIELDS
        .iter()
        .copied()
        .chain(["unknownField"])
        .collect();
    let keys = proptest::sample::select(keys);
    prop_oneof![
        9 => proptest::collection::btree_map(keys, leaf.clone(), 0..12)
            .prop_map(|m| serde_json::Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        1 => leaf,
    ]
}

/// A fixed pair: the SPEC's form A and form B of one purchase.
#[test]
fn fixed_form_pair_is_equal() {
    let a = json!({
        "email": "Jane.Doe@Example.com",
        "product": "Laptop",
        "amount": "1499.99",
        "location": "Berlin",
        "time": "2024-03-05 02:30:00",
        "customerProfile": "regular",
        "onlinePurchase": "Yes",
        "paymentMethod": "Credit Card",
        "shippingAddress": "Unter den Linden 1, 10117 Berlin, Germany",
        "billingAddress": "Unter den Linden 1, 10117 Berlin, Germany",
        "customerEmail": "jane.doe@example.com",
        "customerName": "Jane Doe",
        "isVPN": "No"
    });
    let b = json!({
        "product": "Laptop",
        "amount": 1499.99,
        "location": "Berlin",
        "time": "2024-03-05T02:30:00Z",
        "customerProfile": "regular",
        "onlinePurchase": true,
        "paymentMethod": "Credit Card",
        "shippingAddress": "Unter den Linden 1, 10117 Berlin, Germany",
        "billingAddress": "Unter den Linden 1, 10117 Berlin, Germany",
        "customerEmail": "jane.doe@example.com",
        "customerName": "Jane Doe",
        "isVPN": false
    });
    let ra = parse_request(&a).unwrap();
    let rb = parse_request(&b).unwrap();
    assert_eq!(ra, rb);
    assert_eq!(ra.email.as_deref(), Some("jane.doe@example.com"));
    assert_eq!(ra.registered_email, None);
    assert_eq!(ra.amount, Some(1499.99));
    let h = History::default();
    assert_eq!(assess(&ra, &h, Some(*b"DE")), assess(&rb, &h, Some(*b"DE")));
}
