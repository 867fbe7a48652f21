//! Turning a transaction body (SPEC form A, form B, or any mix) into one [`Request`].
//!
//! Every field is optional and is read on its own: each accepts its form A type or its
//! form B type, so a body may mix the two. A field that is present but wrong (type,
//! range, length, format) fails the whole request with an [`InputError`] naming that
//! field exactly as the client spelled it, because a 400 that says *which* field is
//! wrong is the only useful answer to a malformed transaction. `null` and blank strings
//! mean absent (form A clients send `""` for "unknown"). Field names match exactly, else
//! without regard to ASCII case, and the publisher's demo page spellings `Name` and
//! `Profile` mean `customerName` and `customerProfile` (`Email` is `email` by case);
//! fields that are none of these are not an error but are listed in
//! [`Request::ignored_fields`], so a typo is visible. Fields are checked in the order of the SPEC table, so
//! the first bad one in that order is the one reported.
//!
//! What is accepted, per field type:
//!
//! | type | accepted | normalised to |
//! |---|---|---|
//! | text | JSON string of at most 1,000 characters | trimmed; empty means absent |
//! | e-mail (`email`, `customerEmail`) | string, at most 320 characters, exactly one `@` with non-empty parts, no spaces or control characters | trimmed, lower-case |
//! | flag | `true`/`false`, or a string `Yes`/`No` (also `true`/`false`), any case | bool |
//! | count | a non-negative integer (`5` or `5.0`), or a string of digits | `u32`, within the field's bound |
//! | `amount` | a string of digits with at most one `.` (form A), or a number (form B) | finite `f64` in `0..=1e12` |
//! | `time` | from the year 1970: `YYYY-MM-DD HH:MM:SS` (form A, no zone: UTC), or ISO 8601 / RFC 3339 date-time with `T` or space, optional seconds, fraction and zone `Z`/`±HH:MM`/`±HHMM`/`±HH` (no zone: UTC) | [`Timestamp`] keeping the client's offset |
//! | `ipAddress` | an IPv4 or IPv6 address in text | [`IpAddr`]; IPv4-mapped IPv6 becomes IPv4 |
//! | `strictness` | an integer 0..=100 (`50` or `50.0`, not `50.5`), or its digits as a string | `u8`, default 50 |
//!
//! Count bounds: `transactionFrequency` and `orderQuantity` at most 1,000,000;
//! `accountAge` (days) at most 36,525 (100 years).
//!
//! The parts: [`parse_request`] and the [`Request`] it gives are here; reading
//! each field by its type's rules is in `fields`, the `time` formats in `time`,
//! and the identity keys the history is looked up by in `identity`.

mod fields;
mod identity;
mod time;

use std::fmt;
use std::net::IpAddr;

use serde_json::{Map, Value};

use fields::Body;

pub use self::time::Timestamp;
pub use fields::FIELDS;
pub(crate) use identity::normalized_chars;
pub use identity::{network_hash, normalise_identity, Identities, MAX_IDENTITY_BYTES};

/// Longest string accepted in any field, in characters.
pub const MAX_TEXT_CHARS: usize = 1_000;
/// Longest e-mail accepted, in characters (RFC 5321 path limit plus slack).
pub const MAX_EMAIL_CHARS: usize = 320;
/// Largest amount accepted; anything above is a client bug, not a purchase.
pub const MAX_AMOUNT: f64 = 1e12;
/// Earliest year of a `time`: a purchase before the Unix epoch (`0000-01-01`,
/// say) is a client's placeholder, not an event to compare with others.
pub const MIN_YEAR: u32 = 1970;
/// Largest `accountAge` in days (100 years).
pub const MAX_ACCOUNT_AGE_DAYS: u32 = 36_525;
/// Largest `transactionFrequency` and `orderQuantity`.
pub const MAX_COUNT: u32 = 1_000_000;
/// Strictness when the request does not say.
pub const DEFAULT_STRICTNESS: u8 = 50;

/// A transaction normalised from form A or form B (SPEC), field by field.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Lower-cased, trimmed; from `email` (form A) or `customerEmail` (both). When both
    /// are present and differ, `customerEmail` is kept here and `email` goes to
    /// `registered_email`.
    pub email: Option<String>,
    /// The form A `email` when it differs from `customerEmail`.
    pub registered_email: Option<String>,
    pub product: Option<String>,
    pub amount: Option<f64>,
    pub location: Option<String>,
    pub time: Option<Timestamp>,
    pub customer_profile: Option<String>,
    pub online_purchase: Option<bool>,
    pub payment_method: Option<String>,
    pub shipping_address: Option<String>,
    pub billing_address: Option<String>,
    pub customer_name: Option<String>,
    pub is_vpn: Option<bool>,
    pub client_browser: Option<String>,
    pub device_type: Option<String>,
    pub ip_address: Option<IpAddr>,
    pub device_fingerprint: Option<String>,
    pub transaction_frequency: Option<u32>,
    /// `accountAge`, in days.
    pub account_age_days: Option<u32>,
    /// Lower-cased, without a leading `@`.
    pub email_domain: Option<String>,
    pub address_mismatch: Option<bool>,
    pub two_factor_auth: Option<bool>,
    pub referral_source: Option<String>,
    pub proxy_or_vpn: Option<bool>,
    pub order_quantity: Option<u32>,
    /// 0..=100, default 50; higher is stricter.
    pub strictness: u8,
    /// Keys of the body that are not transaction fields (nor a second spelling of
    /// one), as the client spelled them; the response lists them as `ignoredFields`.
    pub ignored_fields: Vec<String>,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            email: None,
            registered_email: None,
            product: None,
            amount: None,
            location: None,
            time: None,
            customer_profile: None,
            online_purchase: None,
            payment_method: None,
            shipping_address: None,
            billing_address: None,
            customer_name: None,
            is_vpn: None,
            client_browser: None,
            device_type: None,
            ip_address: None,
            device_fingerprint: None,
            transaction_frequency: None,
            account_age_days: None,
            email_domain: None,
            address_mismatch: None,
            two_factor_auth: None,
            referral_source: None,
            proxy_or_vpn: None,
            order_quantity: None,
            strictness: DEFAULT_STRICTNESS,
            ignored_fields: Vec::new(),
        }
    }
}

/// Why a body was refused: the caller answers 400 naming `field` and records nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The JSON field exactly as the client sent it (camelCase); `""` when the body
    /// itself is wrong (not a JSON object).
    pub field: String,
    /// A short sentence for the client; never echoes the value.
    pub message: String,
}

impl InputError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        InputError {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for InputError {}

/// Parses a transaction body of form A, form B or a mix (see the module docs).
pub fn parse_request(body: &Value) -> Result<Request, InputError> {
    let Some(map) = body.as_object() else {
        return Err(InputError::new("", "the body must be a JSON object"));
    };
    let b = Body::resolve(map)?;
    let form_a_email = b.email("email")?;
    let product = b.text("product")?;
    let amount = b.amount("amount")?;
    let location = b.text("location")?;
    let time = b.time("time")?;
    let customer_profile = b.text("customerProfile")?;
    let online_purchase = b.flag("onlinePurchase")?;
    let payment_method = b.text("paymentMethod")?;
    let shipping_address = b.text("shippingAddress")?;
    let billing_address = b.text("billingAddress")?;
    let customer_email = b.email("customerEmail")?;
    let customer_name = b.text("customerName")?;
    let is_vpn = b.flag("isVPN")?;
    let client_browser = b.text("clientBrowser")?;
    let device_type = b.text("deviceType")?;
    let ip_address = b.ip("ipAddress")?;
    let device_fingerprint = b.text("deviceFingerprint")?;
    let transaction_frequency = b.count("transactionFrequency", MAX_COUNT)?;
    let account_age_days = b.count("accountAge", MAX_ACCOUNT_AGE_DAYS)?;
    let email_domain = b
        .text("emailDomain")?
        .map(|d| d.trim_start_matches('@').to_lowercase())
        .filter(|d| !d.is_empty());
    let address_mismatch = b.flag("addressMismatch")?;
    let two_factor_auth = b.flag("twoFactorAuth")?;
    let referral_source = b.text("referralSource")?;
    let proxy_or_vpn = b.flag("proxyOrVPN")?;
    let order_quantity = b.count("orderQuantity", MAX_COUNT)?;
    let strictness = match b.count("strictness", 100) {
        Ok(s) => s.map_or(DEFAULT_STRICTNESS, |s| {
            u8::try_from(s).unwrap_or(DEFAULT_STRICTNESS)
        }),
        Err(_) => {
            return Err(InputError::new(
                "strictness",
                "must be an integer from 0 to 100",
            ))
        }
    };

    let (email, registered_email) = match (customer_email, form_a_email) {
        (Some(c), Some(r)) if c != r => (Some(c), Some(r)),
        (Some(c), _) => (Some(c), None),
        (None, r) => (r, None),
    };

    Ok(Request {
        email,
        registered_email,
        product,
        amount,
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
        transaction_frequency,
        account_age_days,
        email_domain,
        address_mismatch,
        two_factor_auth,
        referral_source,
        proxy_or_vpn,
        order_quantity,
        strictness,
        ignored_fields: b.ignored,
    })
}

impl Request {
    /// The normalised request as JSON, for recording: SPEC's camelCase field names with
    /// form B types (ISO 8601 time with the client's offset, canonical IP), absent fields
    /// omitted, `strictness` always present. [`parse_request`] of it gives back the
    /// same request.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let mut text = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.to_owned(), Value::String(v.clone()));
            }
        };
        // SPEC's own meaning of the two e-mail fields, so the record re-parses to the
        // same request: `customerEmail` is the transaction's e-mail, `email` the
        // registered one when it differs.
        text("customerEmail", &self.email);
        text("email", &self.registered_email);
        text("product", &self.product);
        text("location", &self.location);
        text("customerProfile", &self.customer_profile);
        text("paymentMethod", &self.payment_method);
        text("shippingAddress", &self.shipping_address);
        text("billingAddress", &self.billing_address);
        text("customerName", &self.customer_name);
        text("clientBrowser", &self.client_browser);
        text("deviceType", &self.device_type);
        text("deviceFingerprint", &self.device_fingerprint);
        text("emailDomain", &self.email_domain);
        text("referralSource", &self.referral_source);
        if let Some(a) = self.amount {
            if let Some(n) = serde_json::Number::from_f64(a) {
                m.insert("amount".into(), Value::Number(n));
            }
        }
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.to_rfc3339()));
        }
        if let Some(ip) = self.ip_address {
            m.insert("ipAddress".into(), Value::String(ip.to_string()));
        }
        let flags = [
            ("onlinePurchase", self.online_purchase),
            ("isVPN", self.is_vpn),
            ("addressMismatch", self.address_mismatch),
            ("twoFactorAuth", self.two_factor_auth),
            ("proxyOrVPN", self.proxy_or_vpn),
        ];
        for (k, v) in flags {
            if let Some(v) = v {
                m.insert(k.into(), Value::Bool(v));
            }
        }
        let counts = [
            ("transactionFrequency", self.transaction_frequency),
            ("accountAge", self.account_age_days),
            ("orderQuantity", self.order_quantity),
        ];
        for (k, v) in counts {
            if let Some(v) = v {
                m.insert(k.into(), Value::from(v));
            }
        }
        m.insert("strictness".into(), Value::from(self.strictness));
        Value::Object(m)
    }

    /// When the transaction happened, in microseconds since the Unix epoch: its
    /// `time` when it has one no later than `received_unix_us`, else
    /// `received_unix_us`. History windows end here, so a replay or backfill of
    /// old purchases sees each as it was; a clock ahead of ours counts as now.
    /// (Form A times carry no offset and are read as UTC: a client west of UTC
    /// puts its own purchases hours back, consistently with one another.)
    pub fn event_time_us(&self, received_unix_us: i64) -> i64 {
        self.time
            .map(|t| t.unix_micros())
            .filter(|t| *t <= received_unix_us)
            .unwrap_or(received_unix_us)
    }
}
