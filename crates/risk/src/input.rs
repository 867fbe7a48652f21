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

use std::fmt::{self, Write as _};
use std::net::IpAddr;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

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

/// The identities a transaction's history is looked up by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identities {
    /// The e-mail, lower-case.
    pub email: Option<String>,
    /// `deviceFingerprint`, trimmed, as sent.
    pub device: Option<String>,
    /// The IP address in canonical text (`IpAddr`'s display form).
    pub ip: Option<String>,
    /// See [`Request::card_identity`].
    pub card: Option<String>,
}

/// The time of a transaction, keeping the UTC offset the client wrote (form A and
/// zone-less times: UTC).
///
/// Equality is on the instant *and* the offset, because the offset changes the
/// wall-clock hour the night-time signal looks at.
#[derive(Debug, Clone, Copy)]
pub struct Timestamp(OffsetDateTime);

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 && self.0.offset() == other.0.offset()
    }
}

impl Timestamp {
    /// Parses form A (`YYYY-MM-DD HH:MM:SS`) or an ISO 8601 / RFC 3339 date-time (see the
    /// module docs). `None` when it is not one.
    pub fn parse(text: &str) -> Option<Timestamp> {
        parse_datetime(text.trim().as_bytes())
    }

    /// The underlying date-time, at the client's offset.
    pub fn datetime(&self) -> OffsetDateTime {
        self.0
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(&self) -> i64 {
        self.0.unix_timestamp()
    }

    /// Microseconds since the Unix epoch (saturating: parsed years are 4 digits).
    pub fn unix_micros(&self) -> i64 {
        i64::try_from(self.0.unix_timestamp_nanos() / 1_000).unwrap_or(i64::MAX)
    }

    /// The hour of the day as the client wrote it (0..=23): local wall-clock for
    /// form A, UTC for `Z`, the given offset's wall-clock otherwise.
    pub fn hour(&self) -> u8 {
        self.0.hour()
    }

    /// RFC 3339 with the client's offset (`Z` for UTC), fraction only when non-zero.
    pub fn to_rfc3339(&self) -> String {
        let d = self.0;
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            d.year(),
            u8::from(d.month()),
            d.day(),
            d.hour(),
            d.minute(),
            d.second()
        );
        let nanos = d.nanosecond();
        if nanos != 0 {
            let frac = format!("{nanos:09}");
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        let off = d.offset();
        if off.is_utc() {
            s.push('Z');
        } else {
            let total = off.whole_seconds();
            let sign = if total < 0 { '-' } else { '+' };
            let abs = total.unsigned_abs();
            s.push_str(&format!("{sign}{:02}:{:02}", abs / 3600, (abs % 3600) / 60));
        }
        s
    }
}

/// Reads `n` ASCII digits at `*pos` as a number, advancing `pos`.
fn digits(b: &[u8], pos: &mut usize, n: usize) -> Option<u32> {
    let end = pos.checked_add(n)?;
    let part = b.get(*pos..end)?;
    let mut v: u32 = 0;
    for &c in part {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    *pos = end;
    Some(v)
}

fn expect(b: &[u8], pos: &mut usize, c: u8) -> Option<()> {
    if b.get(*pos) == Some(&c) {
        *pos += 1;
        Some(())
    } else {
        None
    }
}

/// Date, `T`/`t`/space, `HH:MM[:SS[.fraction]]`, then `Z`/`z`/offset/nothing.
/// A date alone is refused: a midnight guessed from it would look like a night purchase.
fn parse_datetime(b: &[u8]) -> Option<Timestamp> {
    let mut p = 0;
    let year = digits(b, &mut p, 4)?;
    if year < MIN_YEAR {
        return None;
    }
    expect(b, &mut p, b'-')?;
    let month = digits(b, &mut p, 2)?;
    expect(b, &mut p, b'-')?;
    let day = digits(b, &mut p, 2)?;
    match b.get(p) {
        Some(b'T' | b't' | b' ') => p += 1,
        _ => return None,
    }
    let hour = digits(b, &mut p, 2)?;
    expect(b, &mut p, b':')?;
    let minute = digits(b, &mut p, 2)?;
    let mut second = 0;
    let mut nanos: u32 = 0;
    if b.get(p) == Some(&b':') {
        p += 1;
        second = digits(b, &mut p, 2)?;
        if matches!(b.get(p), Some(b'.' | b',')) {
            p += 1;
            let start = p;
            let mut scale = 100_000_000u32;
            while let Some(c) = b.get(p).filter(|c| c.is_ascii_digit()) {
                nanos += u32::from(c - b'0') * scale;
                scale /= 10;
                p += 1;
            }
            // 1 to 9 digits: finer than a nanosecond is not a real clock.
            if p == start || p - start > 9 {
                return None;
            }
        }
    }
    let offset_seconds: i32 = match b.get(p) {
        None => 0,
        Some(b'Z' | b'z') => {
            p += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            p += 1;
            let oh = digits(b, &mut p, 2)?;
            let om = if p == b.len() {
                0
            } else {
                if b.get(p) == Some(&b':') {
                    p += 1;
                }
                digits(b, &mut p, 2)?
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let total = i32::try_from(oh * 3600 + om * 60).ok()?;
            if sign == b'-' {
                -total
            } else {
                total
            }
        }
        Some(_) => return None,
    };
    if p != b.len() {
        return None;
    }
    let month = Month::try_from(u8::try_from(month).ok()?).ok()?;
    let date =
        Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?).ok()?;
    let time = Time::from_hms_nano(
        u8::try_from(hour).ok()?,
        u8::try_from(minute).ok()?,
        u8::try_from(second).ok()?,
        nanos,
    )
    .ok()?;
    let offset = UtcOffset::from_whole_seconds(offset_seconds).ok()?;
    Some(Timestamp(
        PrimitiveDateTime::new(date, time).assume_offset(offset),
    ))
}

/// The transaction's fields as SPEC names them, in SPEC order.
pub const FIELDS: [&str; 26] = [
    "email",
    "product",
    "amount",
    "location",
    "time",
    "customerProfile",
    "onlinePurchase",
    "paymentMethod",
    "shippingAddress",
    "billingAddress",
    "customerEmail",
    "customerName",
    "isVPN",
    "clientBrowser",
    "deviceType",
    "ipAddress",
    "deviceFingerprint",
    "transactionFrequency",
    "accountAge",
    "emailDomain",
    "addressMismatch",
    "twoFactorAuth",
    "referralSource",
    "proxyOrVPN",
    "orderQuantity",
    "strictness",
];

/// Other names integrators send (the publisher's demo page posts `Email`, `Name`
/// and `Profile`; `Email` is `email` by case alone).
const ALIASES: [(&str, &str); 2] = [("name", "customerName"), ("profile", "customerProfile")];

/// A body's fields resolved to [`FIELDS`]: each slot holds the value and the key as
/// the client spelled it (errors name that). A key matches its field exactly, else
/// without regard to ASCII case or through [`ALIASES`]; an exact match beats the
/// others, and two inexact keys for one field are refused as ambiguous. Keys that
/// match no field are kept in `ignored`, so a typo shows in the response.
struct Body<'a> {
    slots: [Option<(&'a str, &'a Value, bool)>; FIELDS.len()],
    ignored: Vec<String>,
}

impl<'a> Body<'a> {
    fn resolve(map: &'a Map<String, Value>) -> Result<Body<'a>, InputError> {
        let mut body = Body {
            slots: [None; FIELDS.len()],
            ignored: Vec::new(),
        };
        // Exact names first, so that an exact key wins whatever the order of keys.
        let mut inexact = Vec::new();
        for (key, value) in map {
            match FIELDS.iter().position(|f| *f == key) {
                Some(index) => body.slots[index] = Some((key, value, true)),
                None => inexact.push((key.as_str(), value)),
            }
        }
        for (key, value) in inexact {
            let Some(index) = field_index_ignoring_case(key) else {
                body.ignored.push(key.to_owned());
                continue;
            };
            match body.slots[index] {
                None => body.slots[index] = Some((key, value, false)),
                Some((_, _, true)) => body.ignored.push(key.to_owned()),
                Some((other, _, false)) => {
                    return Err(InputError::new(
                        key,
                        format!(
                            "is ambiguous: {other:?} and {key:?} both mean {:?}; send one",
                            FIELDS[index]
                        ),
                    ))
                }
            }
        }
        body.ignored.sort_unstable();
        Ok(body)
    }

    /// The slot of field `name` (one of [`FIELDS`]).
    fn slot(&self, name: &str) -> Option<(&'a str, &'a Value, bool)> {
        let index = FIELDS.iter().position(|f| *f == name)?;
        self.slots[index]
    }

    /// The value of field `name`, `null` being absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.slot(name).map(|(_, v, _)| v).filter(|v| !v.is_null())
    }

    /// Field `name` as the client spelled it, for errors.
    fn key<'n>(&self, name: &'n str) -> &'n str
    where
        'a: 'n,
    {
        self.slot(name).map_or(name, |(key, _, _)| key)
    }

    /// A string field: at most 1,000 characters, trimmed, empty means absent.
    fn text(&self, name: &str) -> Result<Option<String>, InputError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(checked_text(self.key(name), s)?.map(str::to_owned)),
            Some(_) => Err(InputError::new(self.key(name), "must be a string")),
        }
    }

    fn email(&self, name: &str) -> Result<Option<String>, InputError> {
        let Some(s) = self.text(name)? else {
            return Ok(None);
        };
        normalise_email(&s)
            .map(Some)
            .map_err(|message| InputError::new(self.key(name), message))
    }

    /// `true`/`false`, or `"Yes"`/`"No"` (also `"true"`/`"false"`), any case.
    fn flag(&self, name: &str) -> Result<Option<bool>, InputError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) => {
                let Some(t) = checked_text(self.key(name), s)? else {
                    return Ok(None);
                };
                if t.eq_ignore_ascii_case("yes") || t.eq_ignore_ascii_case("true") {
                    Ok(Some(true))
                } else if t.eq_ignore_ascii_case("no") || t.eq_ignore_ascii_case("false") {
                    Ok(Some(false))
                } else {
                    Err(InputError::new(
                        self.key(name),
                        "must be true/false or \"Yes\"/\"No\"",
                    ))
                }
            }
            Some(_) => Err(InputError::new(
                self.key(name),
                "must be true/false or \"Yes\"/\"No\"",
            )),
        }
    }

    /// A non-negative integer up to `max`: `5`, `5.0` or `"5"`.
    fn count(&self, name: &str, max: u32) -> Result<Option<u32>, InputError> {
        let range = || {
            InputError::new(
                self.key(name),
                format!("must be an integer from 0 to {max}"),
            )
        };
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                let v = if let Some(u) = n.as_u64() {
                    u
                } else if let Some(f) = n.as_f64() {
                    if !f.is_finite() || f.fract() != 0.0 || f < 0.0 || f > f64::from(max) {
                        return Err(range());
                    }
                    // Integral and within 0..=max, so the conversion is exact.
                    f as u64
                } else {
                    return Err(range());
                };
                u32::try_from(v)
                    .ok()
                    .filter(|v| *v <= max)
                    .map(Some)
                    .ok_or_else(range)
            }
            Some(Value::String(s)) => {
                let Some(t) = checked_text(self.key(name), s)? else {
                    return Ok(None);
                };
                if !t.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(range());
                }
                t.parse::<u32>()
                    .ok()
                    .filter(|v| *v <= max)
                    .map(Some)
                    .ok_or_else(range)
            }
            Some(_) => Err(range()),
        }
    }

    fn amount(&self, name: &str) -> Result<Option<f64>, InputError> {
        let range = || {
            InputError::new(
                self.key(name),
                "must be a number from 0 to 1e12, or a string of digits with at most one '.'",
            )
        };
        let v = match self.get(name) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_f64().ok_or_else(range)?,
            Some(Value::String(s)) => {
                let Some(t) = checked_text(self.key(name), s)? else {
                    return Ok(None);
                };
                let digit_count = t.bytes().filter(u8::is_ascii_digit).count();
                let dot_count = t.bytes().filter(|c| *c == b'.').count();
                if digit_count == 0 || dot_count > 1 || digit_count + dot_count != t.len() {
                    return Err(range());
                }
                t.parse::<f64>().map_err(|_| range())?
            }
            Some(_) => return Err(range()),
        };
        if !v.is_finite() || !(0.0..=MAX_AMOUNT).contains(&v) {
            return Err(range());
        }
        // -0.0 would print as "-0": it is zero.
        Ok(Some(v + 0.0))
    }

    fn time(&self, name: &str) -> Result<Option<Timestamp>, InputError> {
        let Some(s) = self.text(name)? else {
            return Ok(None);
        };
        Timestamp::parse(&s).map(Some).ok_or_else(|| {
            InputError::new(
                self.key(name),
                "must be \"YYYY-MM-DD HH:MM:SS\" or an ISO 8601 date-time such as 2024-05-01T13:45:00Z, from the year 1970",
            )
        })
    }

    fn ip(&self, name: &str) -> Result<Option<IpAddr>, InputError> {
        let Some(s) = self.text(name)? else {
            return Ok(None);
        };
        s.parse::<IpAddr>()
            .map(|ip| Some(ip.to_canonical()))
            .map_err(|_| InputError::new(self.key(name), "must be an IPv4 or IPv6 address"))
    }
}

/// The field `key` names without regard to ASCII case, directly or as an alias.
fn field_index_ignoring_case(key: &str) -> Option<usize> {
    let canonical = ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(key))
        .map_or(key, |(_, field)| *field);
    FIELDS
        .iter()
        .position(|f| f.eq_ignore_ascii_case(canonical))
}

/// The e-mail rule (the text rule already applied): at most 320 characters, exactly
/// one `@` between non-empty parts, no whitespace or control characters; lower-cased.
fn normalise_email(s: &str) -> Result<String, &'static str> {
    if s.chars().count() > MAX_EMAIL_CHARS {
        return Err("must be at most 320 characters");
    }
    let mut parts = s.split('@');
    let ok = match (parts.next(), parts.next(), parts.next()) {
        (Some(local), Some(domain), None) => {
            !local.is_empty()
                && !domain.is_empty()
                && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        _ => false,
    };
    if ok {
        Ok(s.to_lowercase())
    } else {
        Err("must be an e-mail address: one '@' between a non-empty local part and domain, no spaces")
    }
}

/// An identity value of `kind` (`email`, `device`, `ip` or `card`) in the form
/// [`Request::identities`] gives, so blocklist and confirmed-fraud entries typed by an
/// operator match what transactions record.
///
/// - `email`: the `email` field's rules, lower-cased;
/// - `device`: trimmed, at most 1,000 characters;
/// - `ip`: an IPv4/IPv6 address, in canonical text;
/// - `card`: either the key itself (`pm:...|name:...|bill:...`, re-normalised part by
///   part) or, for convenience, the same three parts separated by `|` without labels
///   (`Credit Card|Jane Doe|12 Main St`); see [`Request::card_identity`].
///
/// A value longer than [`MAX_IDENTITY_BYTES`] becomes its `sha256:` key, as in the
/// history; such a key (copied from `vigil.transactions`) is taken as it is.
///
/// The error is a sentence for the operator.
pub fn normalise_identity(kind: &str, value: &str) -> Result<String, String> {
    let text = checked_text(kind, value)
        .map_err(|e| format!("the {kind} {}", e.message))?
        .ok_or_else(|| format!("the {kind} must not be empty"))?;
    if is_identity_digest(text) && kind != "ip" {
        return Ok(text.to_ascii_lowercase());
    }
    normalise_identity_text(kind, text).map(bounded_identity)
}

/// Longest identity kept as written, in bytes. A longer one (a device
/// fingerprint of 1,000 multi-byte characters, a card identity of three long
/// parts) is keyed by its SHA-256 instead, `sha256:` and 64 hex digits, so that
/// any accepted input fits a btree entry (at most 2,704 bytes, and the device
/// and IP indexes carry the e-mail too). Real identities are far shorter.
pub const MAX_IDENTITY_BYTES: usize = 256;

fn bounded_identity(identity: String) -> String {
    if identity.len() <= MAX_IDENTITY_BYTES {
        return identity;
    }
    let digest = Sha256::digest(identity.as_bytes());
    let mut key = String::with_capacity(71);
    key.push_str("sha256:");
    for byte in digest {
        // Writing to a String cannot fail.
        let _ = write!(key, "{byte:02x}");
    }
    key
}

/// What the network layer shares of a normalised identity of `kind`
/// (`email`, `device`, `card`): the SHA-256 of `kind:value`, in 64 hex
/// digits, never the value (`vigil._network_hash` in SQL computes the same).
pub fn network_hash(kind: &str, identity: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(kind.as_bytes());
    hasher.update(b":");
    hasher.update(identity.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

fn is_identity_digest(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn normalise_identity_text(kind: &str, text: &str) -> Result<String, String> {
    match kind {
        "email" => normalise_email(text).map_err(|m| format!("the email {m}")),
        "device" => Ok(text.to_owned()),
        "ip" => text
            .parse::<IpAddr>()
            .map(|ip| ip.to_canonical().to_string())
            .map_err(|_| "the ip must be an IPv4 or IPv6 address".to_owned()),
        "card" => {
            let mut parts = text.split('|');
            let (Some(pm), Some(name), Some(bill), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(
                    "the card must be paymentMethod|customerName|billingAddress (labels pm:, name:, bill: optional)"
                        .to_owned(),
                );
            };
            let strip = |part: &'static str, s: &str| -> Option<String> {
                let s = s.trim();
                let s = s.strip_prefix(part).unwrap_or(s);
                Some(s.to_owned()).filter(|s| !s.trim().is_empty())
            };
            Request {
                payment_method: strip("pm:", pm),
                customer_name: strip("name:", name),
                billing_address: strip("bill:", bill),
                ..Request::default()
            }
            .card_identity()
            .ok_or_else(|| {
                "the card needs a payment method and a customer name or billing address".to_owned()
            })
        }
        _ => Err(format!(
            "unknown identity kind {kind:?}: expected email, device, ip or card"
        )),
    }
}

/// The length rule shared by every string: trimmed, `None` when empty.
fn checked_text<'s>(name: &str, s: &'s str) -> Result<Option<&'s str>, InputError> {
    // Bytes bound chars from above, so the char count is only needed for long strings.
    if s.len() > MAX_TEXT_CHARS && s.chars().count() > MAX_TEXT_CHARS {
        return Err(InputError::new(name, "must be at most 1,000 characters"));
    }
    let t = s.trim();
    Ok(if t.is_empty() { None } else { Some(t) })
}

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

/// Lower-case alphanumeric words of `s` joined by single spaces, as a char stream:
/// the comparison form of free text, so "12 Main St." equals "12  main st".
pub(crate) fn normalized_chars(s: &str) -> impl Iterator<Item = char> + '_ {
    let mut pending_space = false;
    let mut started = false;
    s.chars().flat_map(move |c| {
        let mut out: [Option<char>; 2] = [None, None];
        if c.is_alphanumeric() {
            if pending_space && started {
                out[0] = Some(' ');
            }
            pending_space = false;
            started = true;
            // Lower-casing may expand (e.g. 'İ'); the first char is enough to compare.
            out[1] = c.to_lowercase().next();
        } else {
            pending_space = true;
        }
        out.into_iter().flatten()
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

    /// Identity keys the history is looked up by (`None` when absent).
    pub fn identities(&self) -> Identities {
        Identities {
            email: self.email.clone().map(bounded_identity),
            device: self.device_fingerprint.clone().map(bounded_identity),
            ip: self.ip_address.map(|ip| ip.to_string()),
            card: self.card_identity().map(bounded_identity),
        }
    }

    /// The card/payment identity, a stable text key:
    /// `pm:<paymentMethod>|name:<customerName>|bill:<billingAddress>`, where each part
    /// is the field's lower-case alphanumeric words joined by single spaces (so case,
    /// punctuation and spacing do not matter) and an absent part is empty.
    /// `None` unless `paymentMethod` and at least one of `customerName` and
    /// `billingAddress` are present (and non-empty once normalised): a payment method
    /// alone ("Credit Card") identifies nobody.
    ///
    /// Example: `Credit Card`, `Jane  Doe`, `12 Main St., Berlin` →
    /// `pm:credit card|name:jane doe|bill:12 main st berlin`.
    pub fn card_identity(&self) -> Option<String> {
        let norm = |s: &Option<String>| -> String {
            s.as_deref()
                .map(|s| normalized_chars(s).collect())
                .unwrap_or_default()
        };
        let pm = norm(&self.payment_method);
        let name = norm(&self.customer_name);
        let bill = norm(&self.billing_address);
        if pm.is_empty() || (name.is_empty() && bill.is_empty()) {
            return None;
        }
        Some(format!("pm:{pm}|name:{name}|bill:{bill}"))
    }
}
