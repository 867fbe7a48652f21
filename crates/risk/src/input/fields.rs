//! Reading a body's fields: which key is which field (exact, by case or by
//! alias), and each field type's rule (text, e-mail, flag, count, amount,
//! time, IP address) with the error that names the field as sent.

use std::net::IpAddr;

use serde_json::{Map, Value};

use super::{InputError, Timestamp, MAX_AMOUNT, MAX_EMAIL_CHARS, MAX_TEXT_CHARS};

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
pub(super) struct Body<'a> {
    slots: [Option<(&'a str, &'a Value, bool)>; FIELDS.len()],
    pub(super) ignored: Vec<String>,
}

impl<'a> Body<'a> {
    pub(super) fn resolve(map: &'a Map<String, Value>) -> Result<Body<'a>, InputError> {
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
    pub(super) fn text(&self, name: &str) -> Result<Option<String>, InputError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(checked_text(self.key(name), s)?.map(str::to_owned)),
            Some(_) => Err(InputError::new(self.key(name), "must be a string")),
        }
    }

    pub(super) fn email(&self, name: &str) -> Result<Option<String>, InputError> {
        let Some(s) = self.text(name)? else {
            return Ok(None);
        };
        normalise_email(&s)
            .map(Some)
            .map_err(|message| InputError::new(self.key(name), message))
    }

    /// `true`/`false`, or `"Yes"`/`"No"` (also `"true"`/`"false"`), any case.
    pub(super) fn flag(&self, name: &str) -> Result<Option<bool>, InputError> {
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
    pub(super) fn count(&self, name: &str, max: u32) -> Result<Option<u32>, InputError> {
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

    pub(super) fn amount(&self, name: &str) -> Result<Option<f64>, InputError> {
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

    pub(super) fn time(&self, name: &str) -> Result<Option<Timestamp>, InputError> {
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

    pub(super) fn ip(&self, name: &str) -> Result<Option<IpAddr>, InputError> {
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
pub(super) fn normalise_email(s: &str) -> Result<String, &'static str> {
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

/// The length rule shared by every string: trimmed, `None` when empty.
pub(super) fn checked_text<'s>(name: &str, s: &'s str) -> Result<Option<&'s str>, InputError> {
    // Bytes bound chars from above, so the char count is only needed for long strings.
    if s.len() > MAX_TEXT_CHARS && s.chars().count() > MAX_TEXT_CHARS {
        return Err(InputError::new(name, "must be at most 1,000 characters"));
    }
    let t = s.trim();
    Ok(if t.is_empty() { None } else { Some(t) })
}
