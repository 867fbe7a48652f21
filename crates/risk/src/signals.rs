//! The risk signals: each is a reason code with points, fired by one fact of the
//! request or its history, and listed in [`SIGNALS`] for the reference (docs/reference/signals.md).
//!
//! A signal's points come only from its [`SignalInfo`] entry (one value per grade,
//! mildest first), so the table the reference prints is the table the engine uses. Grades
//! are monotone: more of the risky input (a higher amount, more velocity, a newer
//! account) never gives fewer points. Weak signals are scaled by strictness (see
//! [`crate::score`]); strong signals, mitigations and hard rules are not.
//!
//! Every reason's detail is one short sentence with the numbers that fired it; it never
//! repeats the e-mail, fingerprint, IP or card values, only the identity's kind.

use std::sync::OnceLock;

use serde::Serialize;

use crate::geo::address_country;
use crate::history::{HardRuleSource, History, IdentityKind, Window};
use crate::input::{normalized_chars, Request};
use crate::model::LinkWeights;

/// How a signal's points combine with strictness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SignalKind {
    /// Points are fixed.
    Strong,
    /// Points are multiplied by `0.5 + strictness/100` (1.0 at the default 50).
    Weak,
    /// Negative points, never scaled: evidence the transaction is genuine.
    Mitigation,
    /// Blocklist or confirmed fraud: fixed points and level 2 (Failed).
    HardRule,
    /// Points from the model fitted on this installation's labels ([`crate::model`]),
    /// either sign, not scaled.
    Learned,
}

impl SignalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::Strong => "strong",
            SignalKind::Weak => "weak",
            SignalKind::Mitigation => "mitigation",
            SignalKind::HardRule => "hard rule",
            SignalKind::Learned => "learned",
        }
    }
}

/// One row of the signal table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SignalInfo {
    pub code: &'static str,
    pub kind: SignalKind,
    /// Points at strictness 50, one per grade, mildest first.
    pub points: &'static [f64],
    /// One line: what fires it, with its thresholds.
    pub description: &'static str,
}

/// Why one signal fired, for the response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reason {
    pub code: &'static str,
    /// Points after strictness scaling, rounded to 2 decimals.
    pub points: f64,
    pub detail: String,
}

pub const VPN_OR_PROXY: SignalInfo = SignalInfo {
    code: "VPN_OR_PROXY",
    kind: SignalKind::Strong,
    points: &[15.0, 18.0],
    description: "isVPN or proxyOrVPN is true (18 when both say so)",
};
pub const IP_COUNTRY_MISMATCH: SignalInfo = SignalInfo {
    code: "IP_COUNTRY_MISMATCH",
    kind: SignalKind::Strong,
    points: &[15.0],
    description:
        "the IP address's country differs from the billing (else shipping) address's country",
};
pub const DISPOSABLE_EMAIL: SignalInfo = SignalInfo {
    code: "DISPOSABLE_EMAIL",
    kind: SignalKind::Strong,
    points: &[20.0],
    description: "the e-mail's domain is a disposable-address service (mailchecker list)",
};
pub const NEW_ACCOUNT: SignalInfo = SignalInfo {
    code: "NEW_ACCOUNT",
    kind: SignalKind::Strong,
    points: &[6.0, 15.0, 30.0],
    description: "accountAge under 30 days (6), under 7 (15), 0: opened the same day (30)",
};
pub const NEW_DEVICE: SignalInfo = SignalInfo {
    code: "NEW_DEVICE",
    kind: SignalKind::Strong,
    points: &[8.0],
    description:
        "a customer first seen 30 or more days ago on a device never seen before (account takeover)",
};
pub const HIGH_AMOUNT: SignalInfo = SignalInfo {
    code: "HIGH_AMOUNT",
    kind: SignalKind::Strong,
    points: &[5.0, 12.0, 20.0, 30.0],
    description: "amount at least 1,000 (5), 5,000 (12), 10,000 (20), 50,000 (30)",
};
pub const AMOUNT_ABOVE_HISTORY: SignalInfo = SignalInfo {
    code: "AMOUNT_ABOVE_HISTORY",
    kind: SignalKind::Strong,
    points: &[8.0, 15.0, 25.0],
    description: "with 3+ earlier amounts: above the customer's maximum, z-score at least 2 (when they vary), and at least 2x (8), 5x (15), 10x (25) their mean",
};
pub const EMAIL_VELOCITY: SignalInfo = SignalInfo {
    code: "EMAIL_VELOCITY",
    kind: SignalKind::Strong,
    points: &[8.0, 15.0, 25.0],
    description:
        "earlier transactions with this e-mail: 3/5/10 in the last hour or 10/20/50 in the last day",
};
pub const DEVICE_VELOCITY: SignalInfo = SignalInfo {
    code: "DEVICE_VELOCITY",
    kind: SignalKind::Strong,
    points: &[8.0, 15.0, 25.0],
    description:
        "earlier transactions with this device: 3/5/10 in the last hour or 10/20/50 in the last day; a grade only as high as the day is above the usual daily count of the last 30 days (2x, 4x, 8x)",
};
pub const IP_VELOCITY: SignalInfo = SignalInfo {
    code: "IP_VELOCITY",
    kind: SignalKind::Strong,
    points: &[6.0, 12.0, 20.0],
    description: "earlier transactions from this IP address: 5/10/20 in the last hour or 20/50/100 in the last day; a grade only as high as the day is above the usual daily count of the last 30 days (2x, 4x, 8x)",
};
pub const CARD_VELOCITY: SignalInfo = SignalInfo {
    code: "CARD_VELOCITY",
    kind: SignalKind::Strong,
    points: &[10.0, 18.0, 28.0],
    description: "earlier transactions with this card identity: 3/5/10 in the last hour or 6/12/25 in the last day; a grade only as high as the day is above the usual daily count of the last 30 days (2x, 4x, 8x)",
};
pub const DEVICE_SHARED: SignalInfo = SignalInfo {
    code: "DEVICE_SHARED",
    kind: SignalKind::Strong,
    points: &[6.0, 14.0, 24.0, 32.0],
    description: "other e-mails seen on this device in the last 90 days: 1 (6), 2 (14), 4 (24), 10 (32); in the last 24 h one grade higher",
};
pub const IP_SHARED: SignalInfo = SignalInfo {
    code: "IP_SHARED",
    kind: SignalKind::Strong,
    points: &[5.0, 12.0, 20.0],
    description: "other e-mails seen from this IP address in the last 24 h: 3 (5), 10 (12), 30 (20); in the last 30 days: 10 (5), 30 (12), 100 (20)",
};
pub const CARD_SHARED: SignalInfo = SignalInfo {
    code: "CARD_SHARED",
    kind: SignalKind::Strong,
    points: &[10.0, 20.0, 30.0],
    description: "other e-mails seen with this card in the last 90 days: 1 (10), 2 (20), 4 (30)",
};
pub const ADDRESS_MISMATCH: SignalInfo = SignalInfo {
    code: "ADDRESS_MISMATCH",
    kind: SignalKind::Weak,
    points: &[10.0, 18.0],
    description: "addressMismatch is true, or billing and shipping addresses differ (ignoring case, spacing, punctuation) (10); in different countries (18)",
};
pub const EMAIL_DOMAIN_MISMATCH: SignalInfo = SignalInfo {
    code: "EMAIL_DOMAIN_MISMATCH",
    kind: SignalKind::Weak,
    points: &[8.0],
    description: "emailDomain is neither the e-mail's domain nor a parent of it",
};
pub const EMAIL_MISMATCH: SignalInfo = SignalInfo {
    code: "EMAIL_MISMATCH",
    kind: SignalKind::Weak,
    points: &[6.0],
    description: "customerEmail differs from the registered email (form A)",
};
pub const HIGH_FREQUENCY: SignalInfo = SignalInfo {
    code: "HIGH_FREQUENCY",
    kind: SignalKind::Weak,
    points: &[5.0, 10.0, 15.0],
    description:
        "transactionFrequency (as reported by the client) at least 5 (5), 10 (10), 20 (15)",
};
pub const UNUSUAL_QUANTITY: SignalInfo = SignalInfo {
    code: "UNUSUAL_QUANTITY",
    kind: SignalKind::Weak,
    points: &[4.0, 8.0, 12.0],
    description: "orderQuantity at least 10 (4), 50 (8), 200 (12)",
};
pub const NIGHT_TIME: SignalInfo = SignalInfo {
    code: "NIGHT_TIME",
    kind: SignalKind::Weak,
    points: &[5.0],
    description: "time between 00:00 and 05:59 as written (form A: local; Z: UTC; offset: that offset's clock)",
};
pub const TWO_FACTOR_AUTH: SignalInfo = SignalInfo {
    code: "TWO_FACTOR_AUTH",
    kind: SignalKind::Mitigation,
    points: &[-10.0],
    description: "twoFactorAuth is true",
};
pub const KNOWN_CUSTOMER: SignalInfo = SignalInfo {
    code: "KNOWN_CUSTOMER",
    kind: SignalKind::Mitigation,
    points: &[-10.0],
    description: "the e-mail and the device were both first seen 30 or more days ago, and no other e-mail used the device in the last 90 days",
};
pub const ESTABLISHED_ACCOUNT: SignalInfo = SignalInfo {
    code: "ESTABLISHED_ACCOUNT",
    kind: SignalKind::Mitigation,
    points: &[-10.0],
    description: "accountAge at least 365 days",
};
pub const LEARNED_MODEL: SignalInfo = SignalInfo {
    code: "LEARNED_MODEL",
    kind: SignalKind::Learned,
    points: &[-30.0, 40.0],
    description: "the model fitted on this installation's feedback labels (vigil.risk_refit) rates the transaction riskier (positive) or safer (negative) than the rules do; from -30 to 40",
};
pub const BLOCKLISTED: SignalInfo = SignalInfo {
    code: "BLOCKLISTED",
    kind: SignalKind::HardRule,
    points: &[100.0],
    description:
        "an e-mail, device, IP address or card identity of the request is on the blocklist",
};
pub const CONFIRMED_FRAUD: SignalInfo = SignalInfo {
    code: "CONFIRMED_FRAUD",
    kind: SignalKind::HardRule,
    points: &[100.0],
    description: "the e-mail or card identity of the request (the same payer) was in a transaction confirmed as fraud",
};
pub const FRAUD_LINKED_DEVICE: SignalInfo = SignalInfo {
    code: "FRAUD_LINKED_DEVICE",
    kind: SignalKind::Strong,
    points: &[4.0, 8.0, 15.0, 25.0],
    description: "the device was in a transaction confirmed as fraud: 25 halved for every 30 days since that fraud, divided by the square root of 1 + the other e-mails on the device in 90 days, times how often such links were fraud in this installation's labels (1 without labels); the highest grade at or under that",
};
pub const FRAUD_LINKED_IP: SignalInfo = SignalInfo {
    code: "FRAUD_LINKED_IP",
    kind: SignalKind::Strong,
    points: &[2.0, 4.0, 8.0, 12.0],
    description: "the IP address was in a transaction confirmed as fraud: as FRAUD_LINKED_DEVICE from 12, with the other e-mails from the IP in 30 days (households, offices and carriers share addresses)",
};

pub const NETWORK_FRAUD_LINK: SignalInfo = SignalInfo {
    code: "NETWORK_FRAUD_LINK",
    kind: SignalKind::Strong,
    points: &[5.0, 10.0, 15.0, 20.0],
    description: "another account of the network (accounts that opted in to share risk signals) confirmed the e-mail, card or device as fraud: 12 for an e-mail or card, 6 for a device, each grown by half for every further account that confirmed it, summed; the highest grade at or under that, 20 at most, and never a failure alone",
};

/// Every reason code, strongest kinds first.
pub const SIGNALS: &[SignalInfo] = &[
    BLOCKLISTED,
    CONFIRMED_FRAUD,
    FRAUD_LINKED_DEVICE,
    FRAUD_LINKED_IP,
    NETWORK_FRAUD_LINK,
    VPN_OR_PROXY,
    IP_COUNTRY_MISMATCH,
    DISPOSABLE_EMAIL,
    NEW_ACCOUNT,
    NEW_DEVICE,
    HIGH_AMOUNT,
    AMOUNT_ABOVE_HISTORY,
    EMAIL_VELOCITY,
    DEVICE_VELOCITY,
    IP_VELOCITY,
    CARD_VELOCITY,
    DEVICE_SHARED,
    IP_SHARED,
    CARD_SHARED,
    ADDRESS_MISMATCH,
    EMAIL_DOMAIN_MISMATCH,
    EMAIL_MISMATCH,
    HIGH_FREQUENCY,
    UNUSUAL_QUANTITY,
    NIGHT_TIME,
    TWO_FACTOR_AUTH,
    KNOWN_CUSTOMER,
    ESTABLISHED_ACCOUNT,
    LEARNED_MODEL,
];

/// [`SIGNALS`] as a Markdown table (code, points at strictness 50, kind, description),
/// for docs/reference/signals.md.
pub fn signals_markdown() -> String {
    let mut out = String::from(
        "| code | points at strictness 50 | kind | description |\n|---|---|---|---|\n",
    );
    for s in SIGNALS {
        let points: Vec<String> = match s.kind {
            SignalKind::Learned => vec![format!("{} to {}", s.points[0], s.points[1])],
            _ => s.points.iter().map(|p| format!("{p}")).collect(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            s.code,
            points.join(" / "),
            s.kind.as_str(),
            s.description
        ));
    }
    out
}

/// Looks up a signal by code.
pub fn signal(code: &str) -> Option<&'static SignalInfo> {
    SIGNALS.iter().find(|s| s.code == code)
}

/// Thresholds, mildest first, matching each signal's `points` grades.
const HIGH_AMOUNT_AT: [f64; 4] = [1_000.0, 5_000.0, 10_000.0, 50_000.0];
const HISTORY_RATIO_AT: [f64; 3] = [2.0, 5.0, 10.0];
const HISTORY_MIN_COUNT: u32 = 3;
const HISTORY_MIN_Z: f64 = 2.0;
/// `accountAge` below these many days.
const NEW_ACCOUNT_BELOW: [f64; 3] = [30.0, 7.0, 1.0];
/// "Known for a while": first seen at least this long before the purchase.
const KNOWN_FOR_US: i64 = 30 * crate::history::Window::DAY_US;
const ESTABLISHED_DAYS: u32 = 365;
const FREQUENCY_AT: [f64; 3] = [5.0, 10.0, 20.0];
const QUANTITY_AT: [f64; 3] = [10.0, 50.0, 200.0];
const NIGHT_END_HOUR: u8 = 6;
/// A velocity signal: its thresholds on the last-hour and last-day counts.
struct Velocity {
    info: &'static SignalInfo,
    hour_at: [f64; 3],
    day_at: [f64; 3],
    /// "... in the last hour" phrase.
    what: &'static str,
}
const VELOCITIES: [Velocity; 4] = [
    Velocity {
        info: &EMAIL_VELOCITY,
        hour_at: [3.0, 5.0, 10.0],
        day_at: [10.0, 20.0, 50.0],
        what: "with this e-mail",
    },
    Velocity {
        info: &DEVICE_VELOCITY,
        hour_at: [3.0, 5.0, 10.0],
        day_at: [10.0, 20.0, 50.0],
        what: "from this device",
    },
    Velocity {
        info: &IP_VELOCITY,
        hour_at: [5.0, 10.0, 20.0],
        day_at: [20.0, 50.0, 100.0],
        what: "from this IP address",
    },
    Velocity {
        info: &CARD_VELOCITY,
        hour_at: [3.0, 5.0, 10.0],
        day_at: [6.0, 12.0, 25.0],
        what: "with this card",
    },
];
/// Other e-mails on a device over [`crate::history::LINKAGE_DAYS`]: a
/// household shares a device between two or three people; a ring, between
/// more. The same number within a day grades one higher.
/// How many times its usual daily count a day must be for each velocity
/// grade (a usual under one a day counts as one).
const ABOVE_USUAL_AT: [f64; 3] = [2.0, 4.0, 8.0];
const DEVICE_SHARED_AT: [f64; 4] = [1.0, 2.0, 4.0, 10.0];
/// IPs are shared by households, offices and carriers' NAT: only many others
/// count, within a day or a month.
const IP_SHARED_DAY_AT: [f64; 3] = [3.0, 10.0, 30.0];
const IP_SHARED_MONTH_AT: [f64; 3] = [10.0, 30.0, 100.0];
/// A card is rarely used by two accounts, and a ring's cards by many.
const CARD_SHARED_AT: [f64; 3] = [1.0, 2.0, 4.0];

/// Highest grade whose threshold `v` reaches (`at` ascending).
fn grade_at_least(v: f64, at: &[f64]) -> Option<usize> {
    at.iter().rposition(|t| v >= *t)
}

/// Highest grade whose threshold `v` is under (`at` descending).
fn grade_below(v: f64, at: &[f64]) -> Option<usize> {
    at.iter().rposition(|t| v < *t)
}

/// Disposable-address domains from `mailchecker`, sorted once for binary search.
///
/// Why not `mailchecker::is_valid`: it scans its ~56,000-entry list linearly for every
/// suffix and allocates per call (hundreds of microseconds, our whole budget is 50), and
/// it also says "invalid" for e-mails its strict syntax check dislikes, which are not
/// disposable. The list is the same.
fn disposable_domains() -> &'static [&'static str] {
    static LIST: OnceLock<Vec<&'static str>> = OnceLock::new();
    LIST.get_or_init(|| {
        let mut v = mailchecker::blacklist();
        v.sort_unstable();
        v.dedup();
        v
    })
}

/// Whether the domain of `email`, or any parent domain below the TLD, is disposable.
pub fn is_disposable_email(email: &str) -> bool {
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    let list = disposable_domains();
    let mut candidate = domain;
    // "a.b.example.com", "b.example.com", "example.com"; never the bare TLD.
    while let Some((_, parent)) = candidate.split_once('.') {
        if list.binary_search(&candidate).is_ok() {
            return true;
        }
        candidate = parent;
    }
    false
}

/// Whether `domain` is `given` or a subdomain of it.
fn domain_matches(domain: &str, given: &str) -> bool {
    domain == given
        || (domain.len() > given.len()
            && domain.ends_with(given)
            && domain.as_bytes().get(domain.len() - given.len() - 1) == Some(&b'.'))
}

/// `1234.5` → `"1,234.50"`.
pub(crate) fn money(v: f64) -> String {
    if !v.is_finite() || v < 0.0 {
        return format!("{v:.2}");
    }
    let cents = (v * 100.0).round() as u64;
    let whole = (cents / 100).to_string();
    let mut out = String::with_capacity(whole.len() + whole.len() / 3 + 3);
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(&format!(".{:02}", cents % 100));
    out
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Reasons fired so far and their total, with strictness applied.
pub(crate) struct Collector {
    /// `0.5 + strictness/100`.
    pub weak_weight: f64,
    pub total: f64,
    /// The hard rules' share of `total`.
    pub hard_points: f64,
    pub reasons: Vec<Reason>,
}

impl Collector {
    pub fn new(weak_weight: f64) -> Self {
        Collector {
            weak_weight,
            total: 0.0,
            hard_points: 0.0,
            reasons: Vec::with_capacity(8),
        }
    }

    fn fire(&mut self, info: &'static SignalInfo, grade: usize, detail: String) {
        let Some(base) = info.points.get(grade).or(info.points.last()).copied() else {
            return;
        };
        let points = match info.kind {
            SignalKind::Weak => base * self.weak_weight,
            SignalKind::Strong
            | SignalKind::Mitigation
            | SignalKind::HardRule
            | SignalKind::Learned => base,
        };
        self.add(info, points, detail);
    }

    /// Adds `points` as they are (the learned model's).
    pub fn add(&mut self, info: &'static SignalInfo, points: f64, detail: String) {
        self.total += points;
        if info.kind == SignalKind::HardRule {
            self.hard_points += points;
        }
        self.reasons.push(Reason {
            code: info.code,
            points: (points * 100.0).round() / 100.0,
            detail,
        });
    }
}

/// Intermediate values worth recording with the assessment.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Features {
    pub address_country: Option<[u8; 2]>,
    pub addresses_differ: Option<bool>,
    pub disposable_email: Option<bool>,
    pub email_domain_matches: Option<bool>,
    pub hour: Option<u8>,
    /// NIGHT_TIME and IP_COUNTRY_MISMATCH fired.
    pub night: bool,
    pub ip_country_mismatch: bool,
    pub amount_ratio_to_mean: Option<f64>,
    pub amount_z: Option<f64>,
    /// Days since the confirmed fraud the device and the IP were linked to.
    pub fraud_links: [Option<f64>; 2],
    /// The points those links fired, and the network's
    /// ([`NETWORK_FRAUD_LINK`]): what feedback adds, which never fails a
    /// transaction alone.
    pub fraud_link_points: f64,
}

/// Runs every signal over the request and its history.
pub(crate) fn evaluate(
    req: &Request,
    hist: &History,
    ip_country: Option<[u8; 2]>,
    links: LinkWeights,
    out: &mut Collector,
) -> Features {
    let mut f = Features::default();
    hard_rules(hist, out);
    let before = out.total;
    f.fraud_links = fraud_links(hist, links, out);
    network(hist, out);
    f.fraud_link_points = out.total - before;
    vpn(req, out);
    (f.address_country, f.ip_country_mismatch) = ip_mismatch(req, ip_country, out);
    email(req, out, &mut f);
    account(req, out);
    familiarity(hist, out);
    amount(req, hist, out, &mut f);
    velocity(hist, out);
    addresses(req, out, &mut f);
    client_counts(req, out);
    night(req, out, &mut f);
    if req.two_factor_auth == Some(true) {
        out.fire(
            &TWO_FACTOR_AUTH,
            0,
            "two-factor authentication was used".into(),
        );
    }
    f
}

fn hard_rules(hist: &History, out: &mut Collector) {
    for (source, info, what) in [
        (HardRuleSource::Blocklist, &BLOCKLISTED, "on the blocklist"),
        (
            HardRuleSource::ConfirmedFraud,
            &CONFIRMED_FRAUD,
            "linked to confirmed fraud",
        ),
    ] {
        let mut detail = String::new();
        for rule in hist
            .hard_rules
            .iter()
            .filter(|r| r.source == source && r.is_hard())
        {
            if !detail.is_empty() {
                detail.push_str("; ");
            }
            detail.push_str("the ");
            detail.push_str(rule.identity.describe());
            detail.push_str(" is ");
            detail.push_str(what);
            if !rule.detail.is_empty() {
                detail.push_str(" (");
                detail.push_str(&rule.detail);
                detail.push(')');
            }
        }
        if !detail.is_empty() {
            out.fire(info, 0, detail);
        }
    }
}

/// Half-life of a link to confirmed fraud, in days.
pub const FRAUD_LINK_HALF_LIFE_DAYS: f64 = 30.0;

/// The graded signals of a device or IP address linked to confirmed fraud;
/// returns, for the record, the days since that fraud for each (device, IP).
fn fraud_links(hist: &History, weights: LinkWeights, out: &mut Collector) -> [Option<f64>; 2] {
    let mut days = [None, None];
    for (slot, (kind, info, others, weight, window)) in [
        (
            IdentityKind::Device,
            &FRAUD_LINKED_DEVICE,
            hist.device_others.quarter,
            weights.device,
            "90 days",
        ),
        (
            IdentityKind::Ip,
            &FRAUD_LINKED_IP,
            hist.ip_others.month,
            weights.ip,
            "30 days",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(rule) = hist
            .hard_rules
            .iter()
            .find(|r| r.identity == kind && !r.is_hard())
        else {
            continue;
        };
        let age_days = rule
            .fraud_age_us
            .map_or(0.0, |us| us.max(0) as f64 / Window::DAY_US as f64);
        days[slot] = Some((age_days * 100.0).round() / 100.0);
        let top = info.points.last().copied().unwrap_or_default();
        let strength = top * 0.5f64.powf(age_days / FRAUD_LINK_HALF_LIFE_DAYS)
            / (1.0 + f64::from(others)).sqrt()
            * weight;
        let Some(grade) = info.points.iter().rposition(|p| *p <= strength) else {
            continue;
        };
        out.fire(
            info,
            grade,
            format!(
                "the {} was in a transaction confirmed as fraud {age_days:.0} days before; {} other e-mails used it in {window}; links weigh {weight:.2} here",
                kind.describe(),
                others,
            ),
        );
    }
    days
}

/// The network layer's evidence: identities other opted-in accounts
/// confirmed as fraud. Bounded (20 at most), and counted with what feedback
/// adds, so it never fails a transaction alone.
fn network(hist: &History, out: &mut Collector) {
    if hist.network.is_empty() {
        return;
    }
    let mut strength = 0.0;
    let mut said = Vec::new();
    for link in &hist.network {
        let base = match link.identity {
            IdentityKind::Email | IdentityKind::Card => 12.0,
            IdentityKind::Device => 6.0,
            // Not shared; a caller that sends one adds nothing.
            IdentityKind::Ip => continue,
        };
        let accounts = link.accounts.max(1);
        strength += base * (1.0 + 0.5 * f64::from(accounts - 1));
        said.push(format!(
            "the {} by {accounts} other account{}",
            link.identity.describe(),
            if accounts == 1 { "" } else { "s" }
        ));
    }
    let info = &NETWORK_FRAUD_LINK;
    let Some(grade) = info.points.iter().rposition(|p| *p <= strength) else {
        return;
    };
    out.fire(
        info,
        grade,
        format!("confirmed as fraud in the network: {}", said.join("; ")),
    );
}

fn vpn(req: &Request, out: &mut Collector) {
    match (req.is_vpn == Some(true), req.proxy_or_vpn == Some(true)) {
        (true, true) => out.fire(
            &VPN_OR_PROXY,
            1,
            "both isVPN and proxyOrVPN report a VPN or proxy".into(),
        ),
        (true, false) => out.fire(&VPN_OR_PROXY, 0, "isVPN reports a VPN".into()),
        (false, true) => out.fire(&VPN_OR_PROXY, 0, "proxyOrVPN reports a VPN or proxy".into()),
        (false, false) => {}
    }
}

/// The code as text (only ASCII letters reach here).
fn code_str(c: &[u8; 2]) -> &str {
    std::str::from_utf8(c).unwrap_or("??")
}

/// The address's country, and whether the IP's differs from it.
fn ip_mismatch(
    req: &Request,
    ip_country: Option<[u8; 2]>,
    out: &mut Collector,
) -> (Option<[u8; 2]>, bool) {
    let (which, addr_country) = match req.billing_address.as_deref().and_then(address_country) {
        Some(c) => ("billing", Some(c)),
        None => (
            "shipping",
            req.shipping_address.as_deref().and_then(address_country),
        ),
    };
    if let (Some(ip), Some(addr)) = (ip_country, addr_country) {
        if ip != addr {
            out.fire(
                &IP_COUNTRY_MISMATCH,
                0,
                format!(
                    "the IP address is in {}, the {which} address in {}",
                    code_str(&ip),
                    code_str(&addr)
                ),
            );
            return (addr_country, true);
        }
    }
    (addr_country, false)
}

fn email(req: &Request, out: &mut Collector, f: &mut Features) {
    if let Some(email) = &req.email {
        let disposable = is_disposable_email(email)
            || req
                .registered_email
                .as_deref()
                .is_some_and(is_disposable_email);
        f.disposable_email = Some(disposable);
        if disposable {
            out.fire(
                &DISPOSABLE_EMAIL,
                0,
                "the e-mail address is at a disposable-address service".into(),
            );
        }
        if let (Some(given), Some((_, domain))) = (&req.email_domain, email.rsplit_once('@')) {
            let matches = domain_matches(domain, given);
            f.email_domain_matches = Some(matches);
            if !matches {
                out.fire(
                    &EMAIL_DOMAIN_MISMATCH,
                    0,
                    "emailDomain does not match the e-mail address's domain".into(),
                );
            }
        }
    }
    if req.registered_email.is_some() {
        out.fire(
            &EMAIL_MISMATCH,
            0,
            "customerEmail differs from the registered e-mail".into(),
        );
    }
}

fn account(req: &Request, out: &mut Collector) {
    let Some(days) = req.account_age_days else {
        return;
    };
    if let Some(g) = grade_below(f64::from(days), &NEW_ACCOUNT_BELOW) {
        out.fire(
            &NEW_ACCOUNT,
            g,
            format!("the account is {} old", plural(days, "day", "days")),
        );
    }
    if days >= ESTABLISHED_DAYS {
        out.fire(
            &ESTABLISHED_ACCOUNT,
            0,
            format!("the account is {days} days old"),
        );
    }
}

fn amount(req: &Request, hist: &History, out: &mut Collector, f: &mut Features) {
    let Some(amount) = req.amount else {
        return;
    };
    if let Some(g) = grade_at_least(amount, &HIGH_AMOUNT_AT) {
        let at = HIGH_AMOUNT_AT.get(g).copied().unwrap_or(0.0);
        out.fire(
            &HIGH_AMOUNT,
            g,
            format!("amount {} is at least {}", money(amount), money(at)),
        );
    }
    let s = hist.customer_amounts;
    if s.count < HISTORY_MIN_COUNT || !s.mean.is_finite() || s.mean <= 0.0 {
        return;
    }
    let ratio = amount / s.mean;
    f.amount_ratio_to_mean = Some(ratio);
    let z = if s.stddev > 0.0 && s.stddev.is_finite() {
        let z = (amount - s.mean) / s.stddev;
        f.amount_z = Some(z);
        z
    } else {
        f64::INFINITY
    };
    if amount <= s.max || z < HISTORY_MIN_Z {
        return;
    }
    if let Some(g) = grade_at_least(ratio, &HISTORY_RATIO_AT) {
        out.fire(
            &AMOUNT_ABOVE_HISTORY,
            g,
            format!(
                "amount {} is {:.1}x this customer's average of {} (highest before: {}, {} earlier)",
                money(amount),
                ratio,
                money(s.mean),
                money(s.max),
                s.count
            ),
        );
    }
}

fn velocity(hist: &History, out: &mut Collector) {
    let windows = [hist.email, hist.device, hist.ip, hist.card];
    for (v, w) in VELOCITIES.iter().zip(windows) {
        let g = grade_at_least(f64::from(w.last_hour), &v.hour_at)
            .max(grade_at_least(f64::from(w.last_day), &v.day_at));
        // Graded by how far above this identity's usual the day is: a busy
        // shared IP (an office, a carrier) is not a burst at its usual pace.
        let usual = w.usual_per_day();
        let above = (f64::from(w.last_day) / usual.max(1.0))
            .max(f64::from(w.last_hour) / (usual / 24.0).max(1.0));
        let g = g.and_then(|g| grade_at_least(above, &ABOVE_USUAL_AT).map(|cap| g.min(cap)));
        if let Some(g) = g {
            let mut detail = format!(
                "{} {} in the last hour, {} in the last 24 h",
                plural(w.last_hour, "earlier transaction", "earlier transactions"),
                v.what,
                w.last_day
            );
            if usual >= 1.0 {
                detail.push_str(&format!(" (usually {usual:.0} a day)"));
            }
            out.fire(v.info, g, detail);
        }
    }
    // A device by the day or over the long window, whichever grades higher;
    // an IP by the day only (households, offices and carriers' NAT share IPs
    // for months).
    let d = hist.device_others;
    let long = grade_at_least(f64::from(d.quarter), &DEVICE_SHARED_AT);
    let day = grade_at_least(f64::from(d.day), &DEVICE_SHARED_AT).map(|g| g + 1);
    if let Some(g) = long.max(day) {
        out.fire(
            &DEVICE_SHARED,
            g,
            format!(
                "{} used this device in the last 24 h, {} in the last {} days",
                plural(d.day, "other e-mail", "other e-mails"),
                d.quarter,
                crate::history::LINKAGE_DAYS
            ),
        );
    }
    let i = hist.ip_others;
    let day = grade_at_least(f64::from(i.day), &IP_SHARED_DAY_AT);
    let month = grade_at_least(f64::from(i.month), &IP_SHARED_MONTH_AT);
    if let Some(g) = day.max(month) {
        out.fire(
            &IP_SHARED,
            g,
            format!(
                "{} used this IP address in the last 24 h, {} in the last {} days",
                plural(i.day, "other e-mail", "other e-mails"),
                i.month,
                crate::history::LINKAGE_SHORT_DAYS
            ),
        );
    }
    let c = hist.card_others.quarter;
    if let Some(g) = grade_at_least(f64::from(c), &CARD_SHARED_AT) {
        out.fire(
            &CARD_SHARED,
            g,
            format!(
                "{} used this card in the last {} days",
                plural(c, "other e-mail", "other e-mails"),
                crate::history::LINKAGE_DAYS
            ),
        );
    }
}

/// A long-known customer on a new device (account takeover), or on a device
/// long known and not shared (mitigation).
fn familiarity(hist: &History, out: &mut Collector) {
    let long_known = |first: Option<i64>| first.is_some_and(|us| us >= KNOWN_FOR_US);
    if !long_known(hist.email_first_seen_us) {
        return;
    }
    match hist.device_first_seen_us {
        None => out.fire(
            &NEW_DEVICE,
            0,
            "the customer is known for 30 days or more, the device has never been seen".into(),
        ),
        Some(us) if us >= KNOWN_FOR_US && hist.device_others.quarter == 0 => out.fire(
            &KNOWN_CUSTOMER,
            0,
            format!(
                "the customer and the device are known for {} days or more",
                us.min(hist.email_first_seen_us.unwrap_or(us)) / crate::history::Window::DAY_US
            ),
        ),
        Some(_) => {}
    }
}

fn addresses(req: &Request, out: &mut Collector, f: &mut Features) {
    let differ = match (&req.billing_address, &req.shipping_address) {
        (Some(b), Some(s)) => Some(!normalized_chars(b).eq(normalized_chars(s))),
        _ => None,
    };
    f.addresses_differ = differ;
    let flagged = req.address_mismatch == Some(true);
    let detail = match (flagged, differ == Some(true)) {
        (true, true) => "billing and shipping addresses differ (also reported by the client)",
        (true, false) => "the client reports a billing/shipping address mismatch",
        (false, true) => "billing and shipping addresses differ",
        (false, false) => return,
    };
    // Shipping abroad from the billing country: reshipping, not a gift next door.
    let countries = (
        req.billing_address.as_deref().and_then(address_country),
        req.shipping_address.as_deref().and_then(address_country),
    );
    match countries {
        (Some(b), Some(s)) if b != s && differ == Some(true) => out.fire(
            &ADDRESS_MISMATCH,
            1,
            format!(
                "billing address in {}, shipping address in {}",
                code_str(&b),
                code_str(&s)
            ),
        ),
        _ => out.fire(&ADDRESS_MISMATCH, 0, detail.into()),
    }
}

fn client_counts(req: &Request, out: &mut Collector) {
    if let Some(n) = req.transaction_frequency {
        if let Some(g) = grade_at_least(f64::from(n), &FREQUENCY_AT) {
            out.fire(&HIGH_FREQUENCY, g, format!("transactionFrequency is {n}"));
        }
    }
    if let Some(n) = req.order_quantity {
        if let Some(g) = grade_at_least(f64::from(n), &QUANTITY_AT) {
            out.fire(&UNUSUAL_QUANTITY, g, format!("order quantity {n}"));
        }
    }
}

fn night(req: &Request, out: &mut Collector, f: &mut Features) {
    let Some(t) = req.time else {
        return;
    };
    let hour = t.hour();
    f.hour = Some(hour);
    f.night = hour < NIGHT_END_HOUR;
    if f.night {
        let dt = t.datetime();
        out.fire(
            &NIGHT_TIME,
            0,
            format!(
                "placed at {:02}:{:02}, between 00:00 and 05:59",
                dt.hour(),
                dt.minute()
            ),
        );
    }
}
