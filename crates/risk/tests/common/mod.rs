//! Shared test helpers: random transaction data rendered as form A, form B or a mix,
//! and random histories.

#![allow(dead_code)]

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use vigil_risk::{AmountStats, HardRule, HardRuleSource, History, IdentityKind, Linkage, Window};

pub const EMAILS: &[&str] = &[
    "alice@example.com",
    "Bob.Smith@Gmail.com",
    "eve@mailinator.com",
    "carol@shop.de",
];
pub const ADDRESSES: &[&str] = &[
    "12 Main St, Springfield, IL 62704",
    "12 main st. springfield il 62704",
    "Unter den Linden 1, 10117 Berlin, Germany",
    "1 High St, London, UK",
    "5 Rue de Rivoli, Paris, France",
];
pub const IPS: &[&str] = &["8.8.8.8", "2001:db8::1", "192.168.1.10", "81.2.69.160"];
pub const COUNTRIES: &[[u8; 2]] = &[*b"US", *b"DE", *b"GB", *b"FR"];
pub const WORDS: &[&str] = &["Credit Card", "PayPal", "Laptop", "Berlin", "Chrome", "ads"];
pub const DOMAINS: &[&str] = &["example.com", "gmail.com", "shop.de"];

/// One transaction's data, independent of the form it is sent in.
#[derive(Debug, Clone)]
pub struct Data {
    pub email: Option<&'static str>,
    pub customer_email: Option<&'static str>,
    pub product: Option<&'static str>,
    pub amount_cents: Option<u64>,
    pub location: Option<&'static str>,
    /// (year, month, day, hour, minute, second)
    pub time: Option<(u32, u32, u32, u32, u32, u32)>,
    pub customer_profile: Option<&'static str>,
    pub online_purchase: Option<bool>,
    pub payment_method: Option<&'static str>,
    pub shipping_address: Option<&'static str>,
    pub billing_address: Option<&'static str>,
    pub customer_name: Option<&'static str>,
    pub is_vpn: Option<bool>,
    // Form B only:
    pub client_browser: Option<&'static str>,
    pub device_type: Option<&'static str>,
    pub ip_address: Option<&'static str>,
    pub device_fingerprint: Option<&'static str>,
    pub transaction_frequency: Option<u32>,
    pub account_age: Option<u32>,
    pub email_domain: Option<&'static str>,
    pub address_mismatch: Option<bool>,
    pub two_factor_auth: Option<bool>,
    pub referral_source: Option<&'static str>,
    pub proxy_or_vpn: Option<bool>,
    pub order_quantity: Option<u32>,
    pub strictness: Option<u8>,
}

fn pick(pool: &'static [&'static str]) -> impl Strategy<Value = Option<&'static str>> {
    proptest::option::of(proptest::sample::select(pool))
}

fn amount_cents() -> impl Strategy<Value = Option<u64>> {
    proptest::option::of(prop_oneof![
        0u64..200_000,
        0u64..10_000_000,
        0u64..100_000_000
    ])
}

fn time() -> impl Strategy<Value = Option<(u32, u32, u32, u32, u32, u32)>> {
    proptest::option::of((
        2000u32..2030,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        0u32..60,
    ))
}

type Time6 = (u32, u32, u32, u32, u32, u32);
type Str = Option<&'static str>;
type PartA = (
    (Str, Str, Str, Option<u64>, Str, Option<Time6>),
    (Str, Option<bool>, Str, Str, Str, Str, Option<bool>),
);
type PartB = (
    (Str, Str, Str, Str, Option<u32>, Option<u32>),
    (
        Str,
        Option<bool>,
        Option<bool>,
        Str,
        Option<bool>,
        Option<u32>,
        Option<u8>,
    ),
);

/// Fields of form A (all of which form B has too, except `email`).
fn form_a_part() -> impl Strategy<Value = PartA> {
    (
        (
            pick(EMAILS),
            pick(EMAILS),
            pick(WORDS),
            amount_cents(),
            pick(WORDS),
            time(),
        ),
        (
            pick(WORDS),
            proptest::option::of(any::<bool>()),
            pick(WORDS),
            pick(ADDRESSES),
            pick(ADDRESSES),
            pick(&["Jane Doe", "J. Doe", "Max Mustermann"]),
            proptest::option::of(any::<bool>()),
        ),
    )
}

fn form_b_part() -> impl Strategy<Value = PartB> {
    (
        (
            pick(&["Chrome", "Firefox"]),
            pick(&["mobile", "desktop"]),
            pick(IPS),
            pick(&["fp-1", "fp-2", "a1b2c3"]),
            proptest::option::of(0u32..40),
            proptest::option::of(prop_oneof![0u32..40, 0u32..3000]),
        ),
        (
            pick(DOMAINS),
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
            pick(&["ads", "friend"]),
            proptest::option::of(any::<bool>()),
            proptest::option::of(prop_oneof![1u32..5, 1u32..400]),
            proptest::option::of(0u8..=100),
        ),
    )
}

/// Random data: any subset of fields with valid values.
pub fn data() -> impl Strategy<Value = Data> {
    (form_a_part(), form_b_part()).prop_map(|(a, b)| {
        let ((email, customer_email, product, amount_cents, location, time), a2) = a;
        let (
            customer_profile,
            online_purchase,
            payment_method,
            shipping_address,
            billing_address,
            customer_name,
            is_vpn,
        ) = a2;
        let ((client_browser, device_type, ip_address, device_fingerprint, tf, age), b2) = b;
        let (email_domain, address_mismatch, two_factor_auth, referral_source, proxy, qty, s) = b2;
        Data {
            email,
            customer_email,
            product,
            amount_cents,
            location,
            time,
            customer_profile,
            online_purchase,
            payment_method,
            shipping_address,
            billing_address,
            customer_name,
            is_vpn,
            client_browser,
            device_type,
            ip_address,
            device_fingerprint,
            transaction_frequency: tf,
            account_age: age,
            email_domain,
            address_mismatch,
            two_factor_auth,
            referral_source,
            proxy_or_vpn: proxy,
            order_quantity: qty,
            strictness: s,
        }
    })
}

/// Which JSON types to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Strings, "Yes"/"No", "YYYY-MM-DD HH:MM:SS" for every field that has a form A type;
    /// form-B-only fields in their native type (a mixed body).
    A,
    /// Native JSON types, ISO 8601 times.
    B,
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "Yes"
    } else {
        "No"
    }
}

impl Data {
    /// The JSON body in `form`.
    pub fn body(&self, form: Form) -> Value {
        let mut m = Map::new();
        let mut s = |k: &str, v: Option<&str>| {
            if let Some(v) = v {
                m.insert(k.into(), Value::String(v.into()));
            }
        };
        if form == Form::A {
            s("email", self.email);
        }
        s("product", self.product);
        s("location", self.location);
        s("customerProfile", self.customer_profile);
        s("paymentMethod", self.payment_method);
        s("shippingAddress", self.shipping_address);
        s("billingAddress", self.billing_address);
        s("customerEmail", self.customer_email);
        s("customerName", self.customer_name);
        s("clientBrowser", self.client_browser);
        s("deviceType", self.device_type);
        s("ipAddress", self.ip_address);
        s("deviceFingerprint", self.device_fingerprint);
        s("emailDomain", self.email_domain);
        s("referralSource", self.referral_source);
        if let Some(c) = self.amount_cents {
            m.insert(
                "amount".into(),
                match form {
                    Form::A => Value::String(format!("{}.{:02}", c / 100, c % 100)),
                    Form::B => json!(c as f64 / 100.0),
                },
            );
        }
        if let Some((y, mo, d, h, mi, se)) = self.time {
            let t = match form {
                Form::A => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{se:02}"),
                Form::B => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{se:02}Z"),
            };
            m.insert("time".into(), Value::String(t));
        }
        let flag = |v: bool| match form {
            Form::A => Value::String(yes_no(v).into()),
            Form::B => Value::Bool(v),
        };
        for (k, v) in [
            ("onlinePurchase", self.online_purchase),
            ("isVPN", self.is_vpn),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), flag(v));
            }
        }
        for (k, v) in [
            ("addressMismatch", self.address_mismatch),
            ("twoFactorAuth", self.two_factor_auth),
            ("proxyOrVPN", self.proxy_or_vpn),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), Value::Bool(v));
            }
        }
        for (k, v) in [
            ("transactionFrequency", self.transaction_frequency),
            ("accountAge", self.account_age),
            ("orderQuantity", self.order_quantity),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        if let Some(v) = self.strictness {
            m.insert("strictness".into(), json!(v));
        }
        Value::Object(m)
    }

    /// Only the fields both forms share (no `email`, no form-B-only fields).
    pub fn common_only(&self) -> Data {
        Data {
            email: None,
            client_browser: None,
            device_type: None,
            ip_address: None,
            device_fingerprint: None,
            transaction_frequency: None,
            account_age: None,
            email_domain: None,
            address_mismatch: None,
            two_factor_auth: None,
            referral_source: None,
            proxy_or_vpn: None,
            order_quantity: None,
            strictness: None,
            ..self.clone()
        }
    }
}

fn window() -> impl Strategy<Value = Window> {
    (0u32..25, 0u32..120, proptest::option::of(0u32..3_000)).prop_map(|(h, d, m)| Window {
        last_hour: h,
        last_day: d.max(h),
        // The month holds the day and perhaps more.
        last_month: m.map(|m| m + d.max(h)),
    })
}

fn hard_rule() -> impl Strategy<Value = HardRule> {
    (
        proptest::sample::select(&[
            IdentityKind::Email,
            IdentityKind::Device,
            IdentityKind::Ip,
            IdentityKind::Card,
        ]),
        any::<bool>(),
        proptest::option::of(0..200 * 86_400_000_000i64),
    )
        .prop_map(|(identity, fraud, fraud_age_us)| HardRule {
            identity,
            source: if fraud {
                HardRuleSource::ConfirmedFraud
            } else {
                HardRuleSource::Blocklist
            },
            detail: "case 17".into(),
            fraud_age_us: fraud_age_us.filter(|_| fraud),
        })
}

/// Distinct other e-mails by window: each window holds the shorter one's and perhaps more.
pub fn linkage(max: u32) -> impl Strategy<Value = Linkage> {
    (0..max, 0..max, 0..3 * max).prop_map(|(day, more, most)| Linkage {
        day,
        month: day + more,
        quarter: day + more + most,
    })
}

/// Never seen, or first seen up to 400 days before.
pub fn first_seen() -> impl Strategy<Value = Option<i64>> {
    proptest::option::of(0i64..400 * Window::DAY_US)
}

/// Random history; hard rules are rare (1 in 8) so most cases exercise the score.
pub fn history() -> impl Strategy<Value = History> {
    (
        (window(), window(), window(), window()),
        (linkage(15), linkage(40), linkage(6)),
        (0u32..10, 1.0f64..5_000.0, 0.0f64..2_000.0, 1.0f64..3.0),
        prop_oneof![7 => Just(vec![]), 1 => proptest::collection::vec(hard_rule(), 1..3)],
        (first_seen(), first_seen(), first_seen()),
    )
        .prop_map(
            |((e, d, i, c), (dl, il, cl), (n, mean, sd, maxf), hard_rules, (ef, df, if_))| {
                History {
                    email: e,
                    device: d,
                    ip: i,
                    card: c,
                    device_others: dl,
                    ip_others: il,
                    card_others: cl,
                    email_first_seen_us: ef,
                    device_first_seen_us: df,
                    ip_first_seen_us: if_,
                    customer_amounts: AmountStats {
                        count: n,
                        mean,
                        stddev: sd,
                        max: mean * maxf,
                    },
                    hard_rules,
                    network: Vec::new(),
                }
            },
        )
}

pub fn ip_country() -> impl Strategy<Value = Option<[u8; 2]>> {
    proptest::option::of(proptest::sample::select(COUNTRIES))
}

/// A customer with a busy day and an amount history (mean 790, max 1,200).
pub fn busy_history() -> History {
    History {
        email: Window {
            last_hour: 4,
            last_day: 12,
            last_month: None,
        },
        device: Window {
            last_hour: 6,
            last_day: 30,
            last_month: None,
        },
        ip: Window {
            last_hour: 12,
            last_day: 60,
            last_month: None,
        },
        card: Window {
            last_hour: 11,
            last_day: 40,
            last_month: None,
        },
        device_others: Linkage {
            day: 5,
            month: 7,
            quarter: 9,
        },
        ip_others: Linkage {
            day: 40,
            month: 90,
            quarter: 120,
        },
        card_others: Linkage::default(),
        email_first_seen_us: Some(200 * Window::DAY_US),
        device_first_seen_us: Some(20 * Window::DAY_US),
        ip_first_seen_us: Some(3 * Window::DAY_US),
        customer_amounts: AmountStats {
            count: 8,
            mean: 790.0,
            stddev: 200.0,
            max: 1_200.0,
        },
        hard_rules: vec![],
        network: vec![],
    }
}
