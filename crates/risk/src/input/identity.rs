//! Identity keys: the e-mail, device, IP and card keys a request's history is
//! looked up by, the same keys for values an operator types (blocklist,
//! confirmed fraud), and the hash the network layer shares instead of a value.

use std::fmt::Write as _;
use std::net::IpAddr;

use sha2::{Digest, Sha256};

use super::fields::{checked_text, normalise_email};
use super::Request;

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
