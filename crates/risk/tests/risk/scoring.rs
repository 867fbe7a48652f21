//! Signals, levels, results and confidence on crafted requests.

use std::collections::BTreeSet;

use crate::common::busy_history;

use serde_json::{json, Value};
use vigil_risk::score::{cutoffs, level_of_score, score_of_points};
use vigil_risk::signals::{is_disposable_email, signal};
use vigil_risk::{
    assess, parse_request, AmountStats, Assessment, Confidence, HardRule, HardRuleSource, History,
    IdentityKind, Linkage, NetworkLink, SignalKind, Verdict, Window, SIGNALS,
};

fn req(body: Value) -> vigil_risk::Request {
    parse_request(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// Three core inputs and nothing risky: a baseline that is not level 7.
fn base() -> Value {
    json!({
        "customerEmail": "jane@example.com",
        "amount": 40,
        "paymentMethod": "Credit Card",
    })
}

fn with(extra: Value) -> Value {
    let mut b = base();
    if let (Some(m), Some(e)) = (b.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            m.insert(k.clone(), v.clone());
        }
    }
    b
}

fn codes(a: &Assessment) -> BTreeSet<&'static str> {
    a.reasons.iter().map(|r| r.code).collect()
}

/// Crafted cases that together fire every signal.
fn crafted() -> Vec<Assessment> {
    let quiet = History::default();
    let blocked = History {
        hard_rules: vec![
            HardRule {
                identity: IdentityKind::Device,
                source: HardRuleSource::Blocklist,
                detail: "chargebacks".into(),
                fraud_age_us: None,
            },
            HardRule {
                identity: IdentityKind::Card,
                source: HardRuleSource::ConfirmedFraud,
                detail: String::new(),
                fraud_age_us: Some(0),
            },
        ],
        ..History::default()
    };
    // A device and an IP address in a transaction confirmed as fraud a week ago.
    let linked = History {
        hard_rules: [IdentityKind::Device, IdentityKind::Ip]
            .map(|identity| HardRule {
                identity,
                source: HardRuleSource::ConfirmedFraud,
                detail: String::new(),
                fraud_age_us: Some(7 * 86_400_000_000),
            })
            .to_vec(),
        ..History::default()
    };
    vec![
        assess(
            &req(with(json!({"isVPN": "Yes", "proxyOrVPN": true}))),
            &quiet,
            None,
        ),
        assess(
            &req(with(
                json!({"billingAddress": "Unter den Linden 1, 10117 Berlin, Germany", "ipAddress": "8.8.8.8"}),
            )),
            &quiet,
            Some(*b"US"),
        ),
        assess(
            &req(with(
                json!({"customerEmail": "eve@mailinator.com", "emailDomain": "gmail.com"}),
            )),
            &quiet,
            None,
        ),
        assess(
            &req(with(json!({"email": "registered@example.com"}))),
            &quiet,
            None,
        ),
        assess(
            &req(with(json!({"accountAge": 0, "twoFactorAuth": true}))),
            &quiet,
            None,
        ),
        assess(&req(with(json!({"accountAge": 4000}))), &quiet, None),
        assess(
            &req(with(
                json!({"amount": "4800.00", "deviceFingerprint": "fp"}),
            )),
            &busy_history(),
            None,
        ),
        assess(
            &req(with(
                json!({"billingAddress": "1 A St, Paris, France", "shippingAddress": "2 B St, Lyon, France"}),
            )),
            &quiet,
            None,
        ),
        assess(
            &req(with(
                json!({"transactionFrequency": 25, "orderQuantity": 500, "time": "2024-01-01 03:10:00"}),
            )),
            &quiet,
            None,
        ),
        assess(&req(base()), &blocked, None),
        assess(&req(base()), &linked, None),
        // An e-mail two other accounts of the network confirmed as fraud.
        assess(
            &req(base()),
            &History {
                network: vec![NetworkLink {
                    identity: IdentityKind::Email,
                    accounts: 2,
                }],
                ..History::default()
            },
            None,
        ),
        // A long-known customer on a new device, a card other accounts used.
        assess(
            &req(base()),
            &History {
                email_first_seen_us: Some(90 * Window::DAY_US),
                card_others: Linkage {
                    day: 1,
                    month: 1,
                    quarter: 1,
                },
                ..History::default()
            },
            None,
        ),
        // ... on a device known as long.
        assess(
            &req(base()),
            &History {
                email_first_seen_us: Some(90 * Window::DAY_US),
                device_first_seen_us: Some(60 * Window::DAY_US),
                ..History::default()
            },
            None,
        ),
        // With a model that weighs night-time purchases.
        vigil_risk::assess_with(
            &req(with(json!({"time": "2024-01-01T02:00:00Z"}))),
            &quiet,
            None,
            Some(&night_model()),
        ),
    ]
}

/// A model that adds about 2 logits for a night-time purchase.
fn night_model() -> vigil_risk::Model {
    let mut weights = [0.0; vigil_risk::model::FEATURES];
    let night = vigil_risk::model::FEATURE_NAMES
        .iter()
        .position(|n| *n == "night")
        .unwrap();
    weights[night] = 2.0;
    vigil_risk::Model {
        weights,
        intercept: -3.0,
        expert_intercept: -3.0,
        frauds: 75,
        legit: 1000,
        ranges: [(0.0, 10.0); vigil_risk::model::FEATURES],
        links: vigil_risk::model::LinkWeights::default(),
        review_cutoff: None,
    }
}

#[test]
fn every_signal_is_triggered_by_some_case() {
    let fired: BTreeSet<&str> = crafted().iter().flat_map(codes).collect();
    for s in SIGNALS {
        assert!(fired.contains(s.code), "{} never fired", s.code);
    }
}

#[test]
fn signal_table_is_consistent() {
    let mut seen = BTreeSet::new();
    for s in SIGNALS {
        assert!(seen.insert(s.code), "duplicate {}", s.code);
        assert!(!s.points.is_empty() && !s.description.is_empty());
        assert!(s.code.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
        for p in s.points {
            match s.kind {
                SignalKind::Mitigation => assert!(*p < 0.0, "{}", s.code),
                // The learned model's range, from its lowest to its highest.
                SignalKind::Learned => {}
                _ => assert!(*p > 0.0, "{}", s.code),
            }
        }
        // Grades are monotone: a stronger grade never has fewer points.
        assert!(s.points.windows(2).all(|w| w[0] < w[1]), "{}", s.code);
    }
    // Every fired reason's points at strictness 50 are one of its table's grades.
    for a in crafted() {
        for r in &a.reasons {
            let info = signal(r.code).unwrap();
            if info.kind == SignalKind::Learned {
                assert!(r.points >= info.points[0] && r.points <= info.points[1]);
                continue;
            }
            assert!(info.points.contains(&r.points), "{} {}", r.code, r.points);
        }
    }
}

#[test]
fn signal_table_prints() {
    let md = vigil_risk::signals::signals_markdown();
    println!("{md}");
    assert_eq!(md.lines().count(), SIGNALS.len() + 2);
    assert!(md.contains("| `NEW_ACCOUNT` | 6 / 15 / 30 | strong |"));
    assert!(md.contains("| `LEARNED_MODEL` | -30 to 40 | learned |"));
}

#[test]
fn reasons_are_sorted_and_details_do_not_leak_identities() {
    for a in crafted() {
        assert!(a
            .reasons
            .windows(2)
            .all(|w| w[0].points.abs() >= w[1].points.abs()));
        for r in &a.reasons {
            assert!(!r.detail.is_empty());
            for secret in [
                "jane@example.com",
                "mailinator",
                "registered@",
                "8.8.8.8",
                "fp",
            ] {
                assert!(!r.detail.contains(secret), "{}: {}", r.code, r.detail);
            }
        }
    }
}

#[test]
fn history_signal_details_have_numbers() {
    let a = assess(
        &req(with(json!({"amount": "4800.00"}))),
        &busy_history(),
        None,
    );
    let r = a
        .reasons
        .iter()
        .find(|r| r.code == "AMOUNT_ABOVE_HISTORY")
        .unwrap();
    assert_eq!(
        r.detail,
        "amount 4,800.00 is 6.1x this customer's average of 790.00 (highest before: 1,200.00, 8 earlier)"
    );
    assert_eq!(r.points, 15.0);
    let v = a
        .reasons
        .iter()
        .find(|r| r.code == "EMAIL_VELOCITY")
        .unwrap();
    assert_eq!(
        v.detail,
        "4 earlier transactions with this e-mail in the last hour, 12 in the last 24 h"
    );
}

#[test]
fn a_device_shared_today_weighs_as_twice_as_many_over_weeks() {
    let shared = |day, quarter| {
        let h = History {
            device_others: Linkage {
                day,
                month: quarter,
                quarter,
            },
            ..History::default()
        };
        let a = assess(&req(base()), &h, None);
        a.reasons
            .iter()
            .find(|r| r.code == "DEVICE_SHARED")
            .map(|r| (r.points, r.detail.clone()))
    };
    assert_eq!(shared(0, 0), None);
    // A household: one other person on the device over three months.
    assert_eq!(shared(0, 1).map(|(p, _)| p), Some(6.0));
    // Two others today weigh as four over the weeks.
    let (long_points, detail) = shared(0, 4).expect("fires on the long window");
    assert_eq!(Some(long_points), shared(2, 2).map(|(p, _)| p));
    assert_eq!(
        detail,
        "0 other e-mails used this device in the last 24 h, 4 in the last 90 days"
    );
    // A farm: the highest grade either way.
    assert_eq!(shared(4, 4).map(|(p, _)| p), Some(32.0));
    assert_eq!(shared(0, 10).map(|(p, _)| p), Some(32.0));
}

#[test]
fn a_card_used_by_other_accounts_is_graded() {
    let points = |quarter| {
        let h = History {
            card_others: Linkage {
                day: 0,
                month: quarter,
                quarter,
            },
            ..History::default()
        };
        assess(&req(base()), &h, None)
            .reasons
            .iter()
            .find(|r| r.code == "CARD_SHARED")
            .map(|r| r.points)
    };
    assert_eq!(
        [0, 1, 2, 4, 40].map(points),
        [None, Some(10.0), Some(20.0), Some(30.0), Some(30.0)]
    );
}

#[test]
fn a_known_customer_on_a_new_device_is_a_takeover_signal_and_on_an_old_one_a_mitigation() {
    let day = Window::DAY_US;
    let codes = |email: Option<i64>, device: Option<i64>, others| {
        let h = History {
            email_first_seen_us: email,
            device_first_seen_us: device,
            device_others: Linkage {
                day: 0,
                month: others,
                quarter: others,
            },
            ..History::default()
        };
        let mut c: Vec<&str> = assess(&req(base()), &h, None)
            .reasons
            .iter()
            .map(|r| r.code)
            .filter(|c| ["NEW_DEVICE", "KNOWN_CUSTOMER"].contains(c))
            .collect();
        c.sort_unstable();
        c
    };
    assert_eq!(codes(Some(90 * day), None, 0), ["NEW_DEVICE"]);
    assert_eq!(codes(Some(90 * day), Some(40 * day), 0), ["KNOWN_CUSTOMER"]);
    // Not while the device is shared, nor for a customer new to us.
    assert!(codes(Some(90 * day), Some(40 * day), 1).is_empty());
    assert!(codes(Some(10 * day), None, 0).is_empty());
    assert!(codes(None, None, 0).is_empty());
}

#[test]
fn amount_above_history_needs_three_earlier_amounts_and_a_new_maximum() {
    let h = |count, max| History {
        customer_amounts: AmountStats {
            count,
            mean: 100.0,
            stddev: 20.0,
            max,
        },
        ..History::default()
    };
    let r = req(with(json!({"amount": 900})));
    assert!(codes(&assess(&r, &h(3, 150.0), None)).contains("AMOUNT_ABOVE_HISTORY"));
    assert!(!codes(&assess(&r, &h(2, 150.0), None)).contains("AMOUNT_ABOVE_HISTORY"));
    assert!(!codes(&assess(&r, &h(3, 1000.0), None)).contains("AMOUNT_ABOVE_HISTORY"));
    // Constant history (stddev 0): the ratio alone decides.
    let flat = History {
        customer_amounts: AmountStats {
            count: 5,
            mean: 10.0,
            stddev: 0.0,
            max: 10.0,
        },
        ..History::default()
    };
    assert!(
        !codes(&assess(&req(with(json!({"amount": 10.01}))), &flat, None))
            .contains("AMOUNT_ABOVE_HISTORY")
    );
    assert!(
        codes(&assess(&req(with(json!({"amount": 25}))), &flat, None))
            .contains("AMOUNT_ABOVE_HISTORY")
    );
}

#[test]
fn mitigations_lower_the_score_and_are_not_scaled() {
    let plain = assess(
        &req(with(json!({"isVPN": true}))),
        &History::default(),
        None,
    );
    let twofa = assess(
        &req(with(json!({"isVPN": true, "twoFactorAuth": true}))),
        &History::default(),
        None,
    );
    assert!(twofa.score < plain.score);
    for s in [0, 50, 100] {
        let a = assess(
            &req(with(json!({"twoFactorAuth": true, "strictness": s}))),
            &History::default(),
            None,
        );
        assert_eq!(a.reasons[0].points, -10.0);
    }
}

#[test]
fn weak_signals_scale_with_strictness() {
    for (s, want) in [(0, 2.5), (50, 5.0), (100, 7.5)] {
        let a = assess(
            &req(with(
                json!({"time": "2024-01-01 03:00:00", "strictness": s}),
            )),
            &History::default(),
            None,
        );
        let r = a.reasons.iter().find(|r| r.code == "NIGHT_TIME").unwrap();
        assert_eq!(r.points, want, "s={s}");
    }
    // Strong signals do not.
    for s in [0, 100] {
        let a = assess(
            &req(with(json!({"isVPN": true, "strictness": s}))),
            &History::default(),
            None,
        );
        assert_eq!(a.reasons[0].points, 15.0);
    }
}

#[test]
fn night_time_uses_the_written_clock() {
    let night = |t: &str| {
        codes(&assess(
            &req(with(json!({ "time": t }))),
            &History::default(),
            None,
        ))
        .contains("NIGHT_TIME")
    };
    assert!(night("2024-01-01 00:00:00"));
    assert!(night("2024-01-01 05:59:59"));
    assert!(!night("2024-01-01 06:00:00"));
    assert!(!night("2024-01-01 23:59:59"));
    assert!(night("2024-01-01T03:00:00Z"));
    // 03:00 in New York is 08:00 UTC: night by the written clock.
    assert!(night("2024-01-01T03:00:00-05:00"));
}

#[test]
fn email_domain_matches_parents() {
    let c = |email: &str, dom: &str| {
        codes(&assess(
            &req(with(json!({"customerEmail": email, "emailDomain": dom}))),
            &History::default(),
            None,
        ))
        .contains("EMAIL_DOMAIN_MISMATCH")
    };
    assert!(!c("a@example.com", "example.com"));
    assert!(!c("a@mail.example.com", "example.com"));
    assert!(c("a@badexample.com", "example.com"));
    assert!(c("a@example.com", "gmail.com"));
}

#[test]
fn disposable_domains() {
    assert!(is_disposable_email("x@mailinator.com"));
    assert!(is_disposable_email("x@sub.mailinator.com"));
    assert!(!is_disposable_email("x@gmail.com"));
    assert!(!is_disposable_email("x@com"));
    assert!(!is_disposable_email("nonsense"));
}

#[test]
fn addresses_compare_without_case_or_punctuation() {
    let c = |b: &str, s: &str| {
        codes(&assess(
            &req(with(json!({"billingAddress": b, "shippingAddress": s}))),
            &History::default(),
            None,
        ))
        .contains("ADDRESS_MISMATCH")
    };
    assert!(!c("12 Main St., Springfield", "12 main st springfield"));
    assert!(c("12 Main St, Springfield", "14 Main St, Springfield"));
    // The client's flag alone fires it, and both give one reason.
    let a = assess(
        &req(with(
            json!({"addressMismatch": true, "billingAddress": "a", "shippingAddress": "b"}),
        )),
        &History::default(),
        None,
    );
    assert_eq!(
        a.reasons
            .iter()
            .filter(|r| r.code == "ADDRESS_MISMATCH")
            .count(),
        1
    );
}

#[test]
fn score_formula() {
    assert!((score_of_points(35.0) - 50.0).abs() < 1e-12);
    assert!((score_of_points(0.0) - 5.1336).abs() < 1e-3);
    // Strictly increasing.
    let mut last = score_of_points(-200.0);
    for i in -199..400 {
        let s = score_of_points(f64::from(i));
        assert!(s > last || s == 100.0);
        last = s;
    }
    // VPN alone: T = 15, 100 / (1 + e^(20/12)) = 15.89 -> 15.9, Safe zone.
    let a = assess(
        &req(with(json!({"isVPN": "Yes"}))),
        &History::default(),
        None,
    );
    assert_eq!(
        (a.total_points, a.score, a.level, a.result),
        (15.0, 15.9, 5, Verdict::Passed)
    );
    assert_eq!(a.label, "Safe zone");
    // No signal at all: 5.1.
    assert_eq!(assess(&req(base()), &History::default(), None).score, 5.1);
}

#[test]
fn thresholds_at_default_strictness() {
    let cases = [
        (1000, 0),
        (900, 0),
        (899, 1),
        (750, 1),
        (749, 6),
        (600, 6),
        (599, 3),
        (400, 3),
        (399, 4),
        (200, 4),
        (199, 5),
        (0, 5),
    ];
    for (tenths, level) in cases {
        assert_eq!(level_of_score(tenths, 50), level, "{tenths}");
    }
    assert_eq!(cutoffs(50), [90.0, 75.0, 60.0, 40.0, 20.0]);
    assert_eq!(cutoffs(0), [105.0, 90.0, 75.0, 55.0, 35.0]);
    assert_eq!(cutoffs(100), [75.0, 60.0, 45.0, 25.0, 5.0]);
    assert_eq!(cutoffs(51), [89.7, 74.7, 59.7, 39.7, 19.7]);
    // At strictness 0 nothing is critical: 100 < 105.
    assert_eq!(level_of_score(1000, 0), 1);
}

#[test]
fn levels_results_and_labels() {
    use vigil_risk::score::{level_label, level_verdict};
    let want = [
        (0, Verdict::Failed, "Critical risk, transaction blocked"),
        (
            1,
            Verdict::Review,
            "High risk, manual verification required",
        ),
        (2, Verdict::Failed, "Failed: blocklisted or confirmed fraud"),
        (3, Verdict::Passed, "Monitor closely"),
        (4, Verdict::Passed, "Low risk"),
        (5, Verdict::Passed, "Safe zone"),
        (6, Verdict::Review, "Caution, review recommended"),
        (7, Verdict::Review, "Additional verification needed"),
    ];
    for (level, verdict, label) in want {
        assert_eq!(level_verdict(level), verdict);
        assert_eq!(level_label(level), label);
    }
}

#[test]
fn hard_rule_fails_with_high_confidence() {
    let blocked = History {
        hard_rules: vec![HardRule {
            identity: IdentityKind::Email,
            source: HardRuleSource::Blocklist,
            detail: String::new(),
            fraud_age_us: None,
        }],
        ..History::default()
    };
    // Even with too little information and a mitigation.
    let a = assess(&req(json!({"twoFactorAuth": true})), &blocked, None);
    assert_eq!(
        (a.level, a.result, a.confidence),
        (2, Verdict::Failed, Confidence::High)
    );
    assert_eq!(a.reasons[0].code, "BLOCKLISTED");
    assert_eq!(a.reasons[0].points, 100.0);
    assert_eq!(a.reasons[0].detail, "the e-mail is on the blocklist");
}

#[test]
fn too_little_information_needs_verification() {
    // Two core inputs (amount, e-mail) plus non-core fields: level 7, even if risky.
    let thin = json!({"amount": 99000, "customerEmail": "a@b.c", "isVPN": true, "time": "2024-01-01 02:00:00", "product": "x"});
    let a = assess(&req(thin.clone()), &History::default(), None);
    assert_eq!(
        (a.level, a.result, a.label),
        (7, Verdict::Review, "Additional verification needed")
    );
    assert_eq!(a.confidence, Confidence::Low);
    // Any strictness: still 7.
    for s in [0, 100] {
        let mut b = thin.clone();
        b["strictness"] = json!(s);
        assert_eq!(assess(&req(b), &History::default(), None).level, 7);
    }
    // An empty body too.
    assert_eq!(assess(&req(json!({})), &History::default(), None).level, 7);
    // A third core input lifts it.
    let mut b = thin;
    b["paymentMethod"] = json!("Card");
    assert_ne!(assess(&req(b), &History::default(), None).level, 7);
}

#[test]
fn confidence_grows_with_information() {
    let a = assess(&req(base()), &History::default(), None);
    assert_eq!(a.confidence, Confidence::Low);
    let form_a = json!({
        "email": "jane@example.com", "product": "Laptop", "amount": "1499.99", "location": "Berlin",
        "time": "2024-03-05 14:30:00", "customerProfile": "regular", "onlinePurchase": "Yes",
        "paymentMethod": "Credit Card", "shippingAddress": "1 A St, Berlin, Germany",
        "billingAddress": "1 A St, Berlin, Germany", "customerEmail": "jane@example.com",
        "customerName": "Jane Doe", "isVPN": "No"
    });
    assert_eq!(
        assess(&req(form_a.clone()), &History::default(), None).confidence,
        Confidence::Medium
    );
    let mut full = form_a;
    for (k, v) in [
        ("ipAddress", json!("8.8.8.8")),
        ("deviceFingerprint", json!("fp")),
        ("accountAge", json!(400)),
        ("twoFactorAuth", json!(true)),
    ] {
        full[k] = v;
    }
    let a = assess(&req(full), &History::default(), Some(*b"DE"));
    assert_eq!(a.confidence, Confidence::High);
}

#[test]
fn high_risk_combination_is_critical_and_failed() {
    let body = json!({
        "customerEmail": "eve@mailinator.com", "amount": 60000, "ipAddress": "8.8.8.8",
        "deviceFingerprint": "fp", "billingAddress": "1 A St, Berlin, Germany",
        "shippingAddress": "9 Z Rd, Lagos, Nigeria", "paymentMethod": "Card",
        "accountAge": 0, "isVPN": true, "proxyOrVPN": true, "time": "2024-01-01T03:00:00Z"
    });
    let a = assess(&req(body), &busy_history(), Some(*b"US"));
    assert_eq!((a.level, a.result), (0, Verdict::Failed));
    assert!(a.score >= 90.0);
    let j = a.to_json("00000000-0000-4000-8000-000000000000");
    assert_eq!(j["RiskLevel"], 0);
    assert_eq!(j["Result"], "Failed");
    assert_eq!(j["RiskLevelLabel"], "Critical risk, transaction blocked");
    assert_eq!(j["transactionId"], "00000000-0000-4000-8000-000000000000");
    assert!(j["ConfidenceLevel"].is_string());
    assert!(j["RiskScore"].as_f64().unwrap() >= 90.0);
    assert_eq!(j["reasons"].as_array().unwrap().len(), a.reasons.len());
    assert!(j["reasons"][0]["code"].is_string() && j["reasons"][0]["points"].is_number());
    // Features record the computed inputs.
    assert_eq!(a.features["ipCountry"], "US");
    assert_eq!(a.features["addressCountry"], "DE");
    assert_eq!(a.features["disposableEmail"], true);
    assert_eq!(a.features["strictness"], 50);
}

#[test]
fn velocity_is_graded_by_how_far_above_usual() {
    let ip_velocity = |last_day, last_month| {
        let h = History {
            ip: Window {
                last_hour: 0,
                last_day,
                last_month,
            },
            ..History::default()
        };
        assess(&req(base()), &h, None)
            .reasons
            .iter()
            .find(|r| r.code == "IP_VELOCITY")
            .map(|r| r.points)
    };
    // 100 today from an IP that is new, or usually quiet: the top grade.
    assert_eq!(ip_velocity(100, None), Some(20.0));
    assert_eq!(ip_velocity(100, Some(100 + 29)), Some(20.0));
    // An office that sees 30 a day: 100 is 3.3x usual, the first grade.
    assert_eq!(ip_velocity(100, Some(100 + 29 * 30)), Some(6.0));
    // A carrier's NAT at 80 a day: 100 is its usual pace.
    assert_eq!(ip_velocity(100, Some(100 + 29 * 80)), None);
}
