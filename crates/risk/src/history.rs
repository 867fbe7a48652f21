//! What only the database knows about a transaction: earlier transactions with the same
//! identities, the customer's usual amounts, and hard rules (blocklist, confirmed fraud).
//!
//! The extension fills a [`History`] with indexed queries keyed by
//! [`crate::Request::identities`] before calling [`crate::assess`]; everything here is
//! plain counts so the engine stays pure and testable without Postgres. Counts exclude
//! the transaction being assessed.
//!
//! Windows are in *event time*: they end at the transaction's [`crate::Request::time`]
//! when it has one that is not in the future, else at the time it was received; see
//! [`crate::Request::event_time`]. So a replay or backfill of last year's purchases
//! sees the velocity and linkage each purchase had when it happened.

/// Earlier assessed transactions sharing one identity, in two sliding windows.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// In the hour before this transaction.
    pub last_hour: u32,
    /// In the 24 hours before this transaction (includes `last_hour`).
    pub last_day: u32,
    /// In the [`LINKAGE_SHORT_DAYS`] days before it (includes `last_day`):
    /// what is usual for the identity. None where not read (the e-mail).
    pub last_month: Option<u32>,
}

/// How far back "seen with other customers" looks (days).
pub const LINKAGE_DAYS: i64 = 90;
/// The shorter linkage window (days).
pub const LINKAGE_SHORT_DAYS: i64 = 30;
/// Most earlier transactions of one device or IP read for it, newest first:
/// bounds the work for an IP that thousands share (a carrier's NAT), where
/// the distinct count is then a lower bound.
pub const LINKAGE_SCAN_CAP: usize = 2_000;

impl Window {
    /// Microseconds in the two windows.
    pub const HOUR_US: i64 = 3_600_000_000;
    pub const DAY_US: i64 = 24 * Self::HOUR_US;
    /// Microseconds in [`LINKAGE_SHORT_DAYS`] and [`LINKAGE_DAYS`].
    pub const MONTH_US: i64 = LINKAGE_SHORT_DAYS * Self::DAY_US;
    pub const QUARTER_US: i64 = LINKAGE_DAYS * Self::DAY_US;

    /// Counts an earlier transaction received `age_us` microseconds before this
    /// one (negative when a concurrent one was received later); older than a
    /// day counts in neither window.
    pub fn add(&mut self, age_us: i64) {
        if let Some(month) = self.last_month.as_mut().filter(|_| age_us < Self::MONTH_US) {
            *month += 1;
        }
        if age_us < Self::DAY_US {
            self.last_day += 1;
            if age_us < Self::HOUR_US {
                self.last_hour += 1;
            }
        }
    }

    /// A window that also counts the month (device, IP, card).
    pub fn with_month() -> Window {
        Window {
            last_month: Some(0),
            ..Window::default()
        }
    }

    /// Earlier transactions per day over the month before today; 0 when the
    /// month is not known.
    pub fn usual_per_day(&self) -> f64 {
        self.last_month.map_or(0.0, |m| {
            f64::from(m.saturating_sub(self.last_day)) / (LINKAGE_SHORT_DAYS - 1) as f64
        })
    }

    /// Whether a transaction `age_us` old falls in the day window: ranges read
    /// newest first stop at the first that does not.
    pub fn in_day(age_us: i64) -> bool {
        age_us < Self::DAY_US
    }
}

/// Distinct other customers (e-mails) seen with one device, IP address or card.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Linkage {
    /// In the 24 hours before this transaction.
    pub day: u32,
    /// In the [`LINKAGE_SHORT_DAYS`] days before it (includes `day`).
    pub month: u32,
    /// In the [`LINKAGE_DAYS`] days before it (includes `month`).
    pub quarter: u32,
}

/// Counts distinct other e-mails by window as they are read, newest first.
#[derive(Debug, Default)]
pub struct LinkageCounter {
    /// Each row's e-mail and age: one copy per row, whatever the windows.
    seen: Vec<(Vec<u8>, i64)>,
}

impl LinkageCounter {
    /// Starts over for the next identity, keeping the buffer.
    pub fn clear(&mut self) {
        self.seen.clear();
    }

    /// Notes `other`, an e-mail other than this transaction's, seen `age_us`
    /// before it.
    pub fn add(&mut self, other: &[u8], age_us: i64) {
        if age_us < Window::QUARTER_US {
            self.seen.push((other.to_vec(), age_us));
        }
    }

    /// The distinct counts: each e-mail counts in every window its most
    /// recent row falls in.
    pub fn finish(&mut self) -> Linkage {
        self.seen.sort_unstable();
        self.seen.dedup_by(|later, first| later.0 == first.0);
        let within = |window: i64| {
            let n = self.seen.iter().filter(|(_, age)| *age < window).count();
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        Linkage {
            day: within(Window::DAY_US),
            month: within(Window::MONTH_US),
            quarter: within(Window::QUARTER_US),
        }
    }
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

impl AmountStats {
    /// How many of the customer's most recent amounts the statistics cover.
    pub const RECENT: usize = 100;

    /// Count, mean, sample standard deviation (0 below two amounts) and maximum
    /// (0 when there are none) of `amounts`.
    pub fn of(amounts: &[f64]) -> AmountStats {
        let n = amounts.len();
        if n == 0 {
            return AmountStats::default();
        }
        let mean = amounts.iter().sum::<f64>() / n as f64;
        let stddev = if n < 2 {
            0.0
        } else {
            let squares: f64 = amounts.iter().map(|a| (a - mean) * (a - mean)).sum();
            (squares / (n - 1) as f64).sqrt()
        };
        AmountStats {
            count: u32::try_from(n).unwrap_or(u32::MAX),
            mean,
            stddev,
            max: amounts.iter().copied().fold(f64::MIN, f64::max),
        }
    }
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

/// A blocklist entry or confirmed-fraud identity matching this request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HardRule {
    pub identity: IdentityKind,
    pub source: HardRuleSource,
    /// Operator's note or case reference; shown in the reason detail, so it must not
    /// hold the identity's value.
    pub detail: String,
    /// For confirmed fraud: how long before this transaction that fraud
    /// occurred (µs; the youngest, when several); None when not known.
    pub fraud_age_us: Option<i64>,
}

impl HardRule {
    /// Whether it decides the transaction alone (level 2): every blocklist
    /// entry (a deliberate act), and a confirmed fraud's e-mail or card, the
    /// same payer. A device or IP address linked to confirmed fraud is graded
    /// evidence instead (`FRAUD_LINKED_DEVICE`, `FRAUD_LINKED_IP`): by the
    /// time a chargeback lands, a ring has usually moved on, and the later
    /// users of a shared device or address are mostly other, honest people.
    pub fn is_hard(&self) -> bool {
        self.source == HardRuleSource::Blocklist
            || matches!(self.identity, IdentityKind::Email | IdentityKind::Card)
    }
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
    /// Other e-mails seen on this device: fraud rings reuse devices across weeks.
    pub device_others: Linkage,
    /// Other e-mails seen from this IP address.
    pub ip_others: Linkage,
    /// Other e-mails seen with this card.
    pub card_others: Linkage,
    /// How long before this transaction (microseconds) the e-mail, device and IP
    /// address were first seen; None when never (the customer's first purchase,
    /// a device or address new to this installation).
    pub email_first_seen_us: Option<i64>,
    pub device_first_seen_us: Option<i64>,
    pub ip_first_seen_us: Option<i64>,
    /// This e-mail's earlier amounts (all time).
    pub customer_amounts: AmountStats,
    /// Blocklist entries and confirmed-fraud identities matching this request.
    pub hard_rules: Vec<HardRule>,
    /// The network layer (accounts that opted in to share risk signals): this
    /// request's identities confirmed as fraud by other such accounts. Empty
    /// unless this account opted in too.
    pub network: Vec<NetworkLink>,
}

/// An identity of the request that other accounts of the network confirmed
/// as fraud. What they share is a hash of the identity, never its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkLink {
    /// An e-mail, device or card (IP addresses are not shared: too many
    /// honest people share them).
    pub identity: IdentityKind,
    /// How many other accounts confirmed it.
    pub accounts: u32,
}

impl History {
    /// Whether a hard rule decides this transaction ([`HardRule::is_hard`]).
    pub fn has_hard_rule(&self) -> bool {
        self.hard_rules.iter().any(HardRule::is_hard)
    }

    /// Whether the e-mail or device has been seen before: the assessment then knows the
    /// customer, which raises confidence.
    pub fn knows_customer(&self) -> bool {
        self.email_first_seen_us.is_some() || self.device_first_seen_us.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_count_by_age() {
        let mut w = Window::default();
        for age_us in [
            -5,
            0,
            Window::HOUR_US - 1,
            Window::HOUR_US,
            Window::DAY_US - 1,
            Window::DAY_US,
        ] {
            w.add(age_us);
        }
        assert_eq!(
            w,
            Window {
                last_hour: 3,
                last_day: 5,
                last_month: None,
            }
        );
        let mut m = Window::with_month();
        for age_us in [0, Window::DAY_US, 29 * Window::DAY_US, Window::MONTH_US] {
            m.add(age_us);
        }
        assert_eq!((m.last_day, m.last_month), (1, Some(3)));
        assert!((m.usual_per_day() - 2.0 / 29.0).abs() < 1e-12);
        assert!(Window::in_day(Window::DAY_US - 1) && !Window::in_day(Window::DAY_US));
    }

    #[test]
    fn linkage_counts_distinct_others_per_window() {
        let mut c = LinkageCounter::default();
        for (who, age) in [
            (&b"a"[..], 0),
            (b"a", Window::HOUR_US),
            (b"b", Window::DAY_US - 1),
            (b"c", Window::DAY_US),
            (b"a", Window::MONTH_US),
            (b"d", Window::MONTH_US),
            (b"e", Window::QUARTER_US - 1),
            (b"f", Window::QUARTER_US),
        ] {
            c.add(who, age);
        }
        let l = c.finish();
        assert_eq!((l.day, l.month, l.quarter), (2, 3, 5));
        c.clear();
        assert_eq!(c.finish(), Linkage::default());
    }

    #[test]
    fn amount_stats_match_sql_aggregates() {
        assert_eq!(AmountStats::of(&[]), AmountStats::default());
        let one = AmountStats::of(&[42.0]);
        assert_eq!(
            (one.count, one.mean, one.stddev, one.max),
            (1, 42.0, 0.0, 42.0)
        );
        // stddev_samp(2, 4, 4, 4, 5, 5, 7, 9) = sqrt(32 / 7)
        let s = AmountStats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((s.count, s.mean, s.max), (8, 5.0, 9.0));
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }
}
