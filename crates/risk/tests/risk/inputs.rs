//! Input parsing: the error matrix (each bad input names its field) and normalisation.

use serde_json::{json, Value};
use vigil_risk::{normalise_identity, parse_request, IdentityKind, Request, Timestamp};

fn field_of(body: Value) -> String {
    match parse_request(&body) {
        Ok(r) => panic!("accepted {body}: {r:?}"),
        Err(e) => {
            assert!(!e.message.is_empty());
            e.field
        }
    }
}

fn one(field: &str, v: Value) -> Value {
    json!({ "amount": 10, field: v })
}

#[test]
fn non_object_body_has_no_field() {
    for body in [json!([]), json!("x"), json!(1), json!(null), json!(true)] {
        assert_eq!(field_of(body), "");
    }
}

const TEXT_FIELDS: &[&str] = &[
    "product",
    "location",
    "customerProfile",
    "paymentMethod",
    "shippingAddress",
    "billingAddress",
    "customerName",
    "clientBrowser",
    "deviceType",
    "deviceFingerprint",
    "emailDomain",
    "referralSource",
];
const FLAG_FIELDS: &[&str] = &[
    "onlinePurchase",
    "isVPN",
    "addressMismatch",
    "twoFactorAuth",
    "proxyOrVPN",
];
const COUNT_FIELDS: &[&str] = &["transactionFrequency", "accountAge", "orderQuantity"];

#[test]
fn wrong_types_name_the_field() {
    for f in TEXT_FIELDS
        .iter()
        .chain(["email", "customerEmail", "time", "ipAddress"].iter())
    {
        for bad in [json!(1), json!(true), json!([]), json!({})] {
            assert_eq!(field_of(one(f, bad)), *f, "{f}");
        }
    }
    for f in FLAG_FIELDS {
        for bad in [
            json!(3),
            json!(1),
            json!("maybe"),
            json!("Y"),
            json!([]),
            json!({}),
        ] {
            assert_eq!(field_of(one(f, bad.clone())), *f, "{f} {bad}");
        }
    }
    for f in COUNT_FIELDS.iter().chain(["strictness"].iter()) {
        for bad in [
            json!("x"),
            json!(true),
            json!(1.5),
            json!(-1),
            json!([]),
            json!("1.5"),
        ] {
            assert_eq!(field_of(one(f, bad.clone())), *f, "{f} {bad}");
        }
    }
    for bad in [
        json!(true),
        json!([]),
        json!({}),
        json!("12,50"),
        json!("1.2.3"),
        json!("abc"),
        json!("-5"),
        json!("1e3"),
    ] {
        assert_eq!(field_of(json!({ "amount": bad })), "amount", "{bad}");
    }
}

#[test]
fn out_of_range_values_name_the_field() {
    assert_eq!(field_of(json!({"amount": -0.01})), "amount");
    assert_eq!(field_of(json!({"amount": 1e13})), "amount");
    assert_eq!(field_of(json!({"amount": "10000000000000"})), "amount");
    for s in [
        json!(101),
        json!(-1),
        json!(50.5),
        json!(1000),
        json!("101"),
    ] {
        assert_eq!(field_of(json!({ "strictness": s })), "strictness", "{s}");
    }
    assert_eq!(field_of(json!({"accountAge": 36_526})), "accountAge");
    assert_eq!(field_of(json!({"accountAge": -3})), "accountAge");
    assert_eq!(
        field_of(json!({"orderQuantity": 5_000_000_000u64})),
        "orderQuantity"
    );
    assert_eq!(
        field_of(json!({"transactionFrequency": 1e300})),
        "transactionFrequency"
    );
}

#[test]
fn bad_times_name_the_field() {
    for t in [
        "2024-13-01 10:00:00",
        "2024-02-30 10:00:00",
        "2024-01-01",
        "2024/01/01 10:00:00",
        "01-01-2024 10:00:00",
        "2024-01-01 25:00:00",
        "2024-01-01 10:61:00",
        "2024-01-01T10:00:00+25:00",
        "2024-01-01T10:00:00Q",
        "2024-01-01T10:00:00.Z",
        "2024-01-01T10:00:00.1234567890Z",
        "yesterday",
        "1704103200",
        // Placeholders, not events: before the Unix epoch.
        "0000-01-01 00:00:00",
        "1969-12-31T23:59:59Z",
    ] {
        assert_eq!(field_of(json!({ "time": t })), "time", "{t}");
    }
    assert_eq!(field_of(json!({"time": 1704103200})), "time");
}

#[test]
fn absurd_lengths_and_bad_formats_name_the_field() {
    let long = "x".repeat(1_001);
    for f in TEXT_FIELDS {
        assert_eq!(field_of(one(f, json!(long))), *f);
    }
    // 1,000 multi-byte characters are fine, 1,001 are not.
    let ok = "é".repeat(1_000);
    assert!(parse_request(&json!({ "product": ok })).is_ok());
    assert_eq!(field_of(json!({ "product": "é".repeat(1_001) })), "product");

    let long_email = format!("{}@example.com", "a".repeat(320));
    for f in ["email", "customerEmail"] {
        for bad in [
            "no-at-sign",
            "two@@example.com",
            "a@b@c",
            "@example.com",
            "alice@",
            "al ice@example.com",
            long_email.as_str(),
        ] {
            assert_eq!(field_of(json!({ f: bad })), f, "{f} {bad}");
        }
    }
    for bad in ["999.1.1.1", "1.2.3", "::g", "localhost", "8.8.8.8:80"] {
        assert_eq!(field_of(json!({ "ipAddress": bad })), "ipAddress", "{bad}");
    }
}

#[test]
fn the_first_bad_field_in_spec_order_is_reported() {
    assert_eq!(
        field_of(json!({"isVPN": 3, "amount": -1, "strictness": 500})),
        "amount"
    );
}

#[test]
fn normalisation() {
    let r = parse_request(&json!({
        "email": " Registered@Example.COM ",
        "customerEmail": "Other@Example.com",
        "amount": "0012.50",
        "onlinePurchase": "NO",
        "twoFactorAuth": "True",
        "ipAddress": " ::ffff:8.8.4.4 ",
        "emailDomain": "@Example.com",
        "accountAge": "42",
        "orderQuantity": 3.0,
        "strictness": 70.0,
        "product": "   ",
        "isVPN": "yes",
        "transactionFrequency": "",
        "proxyOrVPN": " ",
        "time": "",
        "location": null,
        "somethingElse": {"ignored": true}
    }))
    .unwrap();
    assert_eq!(r.email.as_deref(), Some("other@example.com"));
    assert_eq!(
        r.registered_email.as_deref(),
        Some("registered@example.com")
    );
    assert_eq!(r.amount, Some(12.5));
    assert_eq!(r.is_vpn, Some(true));
    assert_eq!(r.online_purchase, Some(false));
    assert_eq!(r.two_factor_auth, Some(true));
    assert_eq!(r.ip_address, Some("8.8.4.4".parse().unwrap()));
    assert_eq!(r.email_domain.as_deref(), Some("example.com"));
    assert_eq!(r.account_age_days, Some(42));
    assert_eq!(r.order_quantity, Some(3));
    assert_eq!(r.strictness, 70);
    assert_eq!(r.product, None);
    assert_eq!(r.location, None);
    assert_eq!(r.transaction_frequency, None);
    assert_eq!(r.proxy_or_vpn, None);
    assert_eq!(r.time, None);

    // Same e-mail in both: no registered_email; only form A email: it is the e-mail.
    let r = parse_request(&json!({"email": "A@x.org", "customerEmail": "a@x.org"})).unwrap();
    assert_eq!(
        (r.email.as_deref(), r.registered_email),
        (Some("a@x.org"), None)
    );
    let r = parse_request(&json!({"email": "A@x.org"})).unwrap();
    assert_eq!(r.email.as_deref(), Some("a@x.org"));

    let empty = parse_request(&json!({})).unwrap();
    assert_eq!(empty, Request::default());
    assert_eq!(empty.strictness, 50);
    assert_eq!(empty.to_json(), json!({"strictness": 50}));
}

#[test]
fn times() {
    let a = Timestamp::parse("2024-03-05 02:30:00").unwrap();
    let b = Timestamp::parse("2024-03-05T02:30:00Z").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.hour(), 2);
    assert_eq!(a.to_rfc3339(), "2024-03-05T02:30:00Z");

    let c = Timestamp::parse("2024-03-05T04:30:00.250+02:00").unwrap();
    assert_eq!(c.unix_seconds(), b.unix_seconds());
    assert_ne!(c, b, "same instant, different wall clock");
    assert_eq!(c.hour(), 4);
    assert_eq!(c.to_rfc3339(), "2024-03-05T04:30:00.25+02:00");

    for ok in [
        "2024-03-05T02:30Z",
        "2024-03-05t02:30:00z",
        "2024-03-05T02:30:00-0530",
        "2024-03-05T02:30:00+01",
        "2024-03-05T02:30:00.123456789Z",
        "2024-03-05T02:30:00",
        "2024-02-29 23:59:59",
    ] {
        let t = Timestamp::parse(ok).unwrap_or_else(|| panic!("{ok}"));
        // The recorded form re-parses to the same timestamp.
        assert_eq!(Timestamp::parse(&t.to_rfc3339()), Some(t), "{ok}");
    }
}

#[test]
fn identities() {
    let r = parse_request(&json!({
        "customerEmail": "Jane@Example.com",
        "deviceFingerprint": " fp-123 ",
        "ipAddress": "2001:DB8:0:0::1",
        "paymentMethod": "Credit  Card",
        "customerName": "Jane DOE",
        "billingAddress": "12 Main St., Berlin"
    }))
    .unwrap();
    let id = r.identities();
    assert_eq!(id.email.as_deref(), Some("jane@example.com"));
    assert_eq!(id.device.as_deref(), Some("fp-123"));
    assert_eq!(id.ip.as_deref(), Some("2001:db8::1"));
    assert_eq!(
        id.card.as_deref(),
        Some("pm:credit card|name:jane doe|bill:12 main st berlin")
    );

    // Formatting differences give the same card.
    let r2 = parse_request(&json!({
        "paymentMethod": "credit card",
        "customerName": "  jane   doe ",
        "billingAddress": "12 MAIN ST, BERLIN"
    }))
    .unwrap();
    assert_eq!(r2.identities().card, id.card);

    // A payment method alone, or name without payment method: no card.
    let lone = parse_request(&json!({"paymentMethod": "Credit Card"})).unwrap();
    assert_eq!(lone.identities().card, None);
    let no_pm = parse_request(&json!({"customerName": "Jane", "billingAddress": "x"})).unwrap();
    assert_eq!(no_pm.identities().card, None);
    let name_only =
        parse_request(&json!({"paymentMethod": "PayPal", "customerName": "Jane"})).unwrap();
    assert_eq!(
        name_only.identities().card.as_deref(),
        Some("pm:paypal|name:jane|bill:")
    );
    assert_eq!(
        parse_request(&json!({})).unwrap().identities(),
        Default::default()
    );
}

#[test]
fn normalised_identities_match_recorded_ones() {
    let r = parse_request(&json!({
        "customerEmail": "Jane@Example.com",
        "deviceFingerprint": " fp-123 ",
        "ipAddress": "::ffff:10.1.2.3",
        "paymentMethod": "Credit Card",
        "customerName": "Jane Doe",
        "billingAddress": "12 Main St., Berlin"
    }))
    .unwrap();
    let ids = r.identities();
    let n = |k: &str, v: &str| normalise_identity(k, v).unwrap();
    assert_eq!(Some(n("email", " JANE@example.COM ")), ids.email);
    assert_eq!(Some(n("device", "fp-123 ")), ids.device);
    assert_eq!(Some(n("ip", "::ffff:10.1.2.3")), ids.ip);
    assert_eq!(Some(n("ip", "10.1.2.3")), ids.ip);
    assert_eq!(
        Some(n("card", "credit card | JANE DOE | 12 main st berlin")),
        ids.card
    );
    // The recorded key itself is a fixed point.
    let card = ids.card.clone().unwrap();
    assert_eq!(n("card", &card), card);

    for (k, v) in [
        ("email", "nope"),
        ("email", ""),
        ("ip", "300.1.1.1"),
        ("card", "Credit Card"),
        ("card", "Credit Card||"),
        ("card", "|Jane|x"),
        ("phone", "123"),
    ] {
        let e = normalise_identity(k, v).unwrap_err();
        assert!(!e.is_empty(), "{k} {v}");
    }
    for k in IdentityKind::ALL {
        assert_eq!(IdentityKind::from_name(k.as_str()), Some(k));
    }
}

#[test]
fn identities_too_long_to_index_are_keyed_by_their_digest() {
    // The longest accepted values: 1,000 three-byte characters, and a card
    // identity of three 1,000-character parts.
    let long = "指".repeat(1_000);
    let words = "abcdefg ".repeat(125);
    let body = json!({
        "customerEmail": "short@example.com", "deviceFingerprint": long,
        "paymentMethod": words.trim(), "customerName": words.trim(), "billingAddress": words.trim(),
    });
    let ids = parse_request(&body).unwrap().identities();
    let device = ids.device.unwrap();
    let card = ids.card.unwrap();
    for key in [&device, &card] {
        assert!(key.starts_with("sha256:") && key.len() == 71, "{key}");
    }
    assert_ne!(device, card);
    assert_eq!(
        ids.email.as_deref(),
        Some("short@example.com"),
        "short ones stay as written"
    );
    // An operator's blocklist entry for the same values finds the same keys,
    // and a key copied from the records is taken as it is.
    assert_eq!(normalise_identity("device", &long).unwrap(), device);
    let part = "abcdefg ".repeat(37);
    let mid = json!({"paymentMethod": part, "customerName": part, "billingAddress": part});
    let mid_card = parse_request(&mid).unwrap().identities().card.unwrap();
    assert!(mid_card.starts_with("sha256:"), "{mid_card}");
    let card_text = format!("{0}|{0}|{0}", part.trim());
    assert_eq!(normalise_identity("card", &card_text).unwrap(), mid_card);
    assert_eq!(
        normalise_identity("card", &card.to_uppercase().replace("SHA256:", "sha256:")).unwrap(),
        card
    );
    assert!(normalise_identity("ip", &device).is_err());
}

#[test]
fn field_names_match_without_regard_to_case_and_the_demo_page_spellings() {
    // The publisher's demo page sends Email, Name and Profile.
    let r = parse_request(&json!({
        "Email": "Bob@Mailinator.com", "Name": "Bob Smith", "Profile": "returning",
        "AMOUNT": "25.50", "isvpn": "Yes",
    }))
    .expect("valid");
    assert_eq!(r.email.as_deref(), Some("bob@mailinator.com"));
    assert_eq!(r.customer_name.as_deref(), Some("Bob Smith"));
    assert_eq!(r.customer_profile.as_deref(), Some("returning"));
    assert_eq!(r.amount, Some(25.5));
    assert_eq!(r.is_vpn, Some(true));
    assert!(r.ignored_fields.is_empty(), "{:?}", r.ignored_fields);
}

#[test]
fn fields_that_are_not_part_of_a_transaction_are_listed_not_refused() {
    let r = parse_request(
        &json!({"amount": 10, "ammount": 12, "foo": {"deep": [1]}, "ipAdress": "1.2.3.4"}),
    )
    .expect("unknown fields are not an error");
    assert_eq!(r.amount, Some(10.0));
    assert_eq!(r.ignored_fields, ["ammount", "foo", "ipAdress"]);
    assert_eq!(r.ip_address, None);
}

#[test]
fn an_exact_name_wins_and_two_inexact_ones_are_ambiguous() {
    let r = parse_request(&json!({"customerName": "Ann", "Name": "Bob", "CUSTOMERNAME": "Cy"}))
        .expect("the exact spelling wins");
    assert_eq!(r.customer_name.as_deref(), Some("Ann"));
    assert_eq!(r.ignored_fields, ["CUSTOMERNAME", "Name"]);

    let e = parse_request(&json!({"Name": "Bob", "CUSTOMERNAME": "Cy"})).unwrap_err();
    assert!(
        ["Name", "CUSTOMERNAME"].contains(&e.field.as_str()),
        "{e:?}"
    );
    assert!(e.message.contains("ambiguous"), "{e:?}");
}

#[test]
fn errors_name_the_field_as_the_client_spelled_it() {
    assert_eq!(field_of(json!({"AMOUNT": "ten"})), "AMOUNT");
    assert_eq!(field_of(json!({"Email": "not-an-address"})), "Email");
    assert_eq!(field_of(json!({"Name": 5})), "Name");
}
