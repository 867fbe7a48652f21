//! What only the database knows about a transaction: earlier transactions with the same
//! identities, the customer's usual amounts, and hard rules (blocklist, confirmed fraud).
//!
//! The extension fills a [`History`] with indexed queries keyed by
//! [`crate::Request::identities`] before calling [`crate::assess`]; everything here is
//! plain counts so the engine stays pure and testable without Postgres. Counts exclude
//! the transaction being assessed.

/// Earlier assessed transactions sharing one identity, in two sliding windows.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// In the hour before this transaction.
    pub last_hour: u32,
    /// In the 24 hours before this transaction (includes `last_hour`).
    pub last_day: u32,
}

/// This customer's (e-mail's) earlier amounts, all time.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct AmountStats {
    pub count: u32,
    pub mean: f64,
    /// Population or sample standard deviation; either works for the z-score here.
    pub stddev: f64,
    pub max: f64,
}

/// Which identity of the request a hard rule matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdentityKind {
    Email,
    Device,
    Ip,
    Card,
}

impl IdentityKind {
    /// All kinds, in the order of [`crate::Identities`]' fields.
    pub const ALL: [IdentityKind; 4] = [
        IdentityKind::Email,
        IdentityKind::Device,
        IdentityKind::Ip,
        IdentityKind::Card,
    ];

    /// The kind's name in SQL and in [`crate::normalise_identity`]: `email`, `device`,
    /// `ip`, `card`.
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityKind::Email => "email",
            IdentityKind::Device => "device",
            IdentityKind::Ip => "ip",
            IdentityKind::Card => "card",
        }
    }

    /// The kind named `name` (as [`Self::as_str`] spells it).
    pub fn from_name(name: &str) -> Option<IdentityKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Name used in reason details ("e-mail", "device", "IP address", "card").
    pub fn describe(self) -> &'static str {
        match self {
            IdentityKind::Email => "e-mail",
            IdentityKind::Device => "device",
            IdentityKind::Ip => "IP address",
            IdentityKind::Card => "card",
        }
    }
}

/// Why an identity is barred.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HardRuleSource {
    /// An operator put it on the blocklist.
    Blocklist,
    /// An earlier transaction with it was confirmed as fraud.
    ConfirmedFraud,
}

/// A blocklist entry or confirmed-fraud identity matching this request: always level 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HardRule {
    pub identity: IdentityKind,
    pub source: HardRuleSource,
    /// Operator's note or case reference; shown in the reason detail, so it must not
    /// hold the identity's value.
    pub detail: String,
}

/// What only the database knows, filled by the extension with indexed queries.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct History {
    /// Earlier assessed transactions with the same e-mail.
    pub email: Window,
    /// ... with the same device fingerprint.
    pub device: Window,
    /// ... with the same IP address.
    pub ip: Window,
    /// ... with the same card identity ([`crate::Request::card_identity`]).
    pub card: Window,
    /// Distinct e-mails seen on this device in the last 24 h (excluding this one).
    pub device_distinct_emails_day: u32,
    /// Distinct e-mails seen from this IP address in the last 24 h (excluding this one).
    pub ip_distinct_emails_day: u32,
    /// This e-mail's earlier amounts (all time).
    pub customer_amounts: AmountStats,
    /// Blocklist entries and confirmed-fraud identities matching this request.
    pub hard_rules: Vec<HardRule>,
}

impl History {
    /// Whether the e-mail or device has been seen before: the assessment then knows the
    /// customer, which raises confidence.
    pub fn knows_customer(&self) -> bool {
        self.customer_amounts.count > 0 || self.email.last_day > 0 || self.device.last_day > 0
    }
}
