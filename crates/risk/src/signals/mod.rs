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
//!
//! The table of signals is in [`codes`]; the rules that fire them are grouped by
//! what they read: the request's own fields (`request`), how its identities were
//! used before (`identities`), and what feedback and the network confirmed
//! (`feedback`). [`evaluate`] runs them all in one order.

mod codes;
mod feedback;
mod identities;
mod request;

use serde::Serialize;

use crate::features::{Features, LinkWeights};
use crate::history::History;
use crate::input::Request;

pub use codes::*;
pub use feedback::FRAUD_LINK_HALF_LIFE_DAYS;
pub use request::is_disposable_email;

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

/// Highest grade whose threshold `v` reaches (`at` ascending).
fn grade_at_least(v: f64, at: &[f64]) -> Option<usize> {
    at.iter().rposition(|t| v >= *t)
}

/// Highest grade whose threshold `v` is under (`at` descending).
fn grade_below(v: f64, at: &[f64]) -> Option<usize> {
    at.iter().rposition(|t| v < *t)
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

/// Runs every signal over the request and its history.
pub(crate) fn evaluate(
    req: &Request,
    hist: &History,
    ip_country: Option<[u8; 2]>,
    links: LinkWeights,
    out: &mut Collector,
) -> Features {
    let mut f = Features::default();
    feedback::hard_rules(hist, out);
    let before = out.total;
    f.fraud_links = feedback::fraud_links(hist, links, out);
    feedback::network(hist, out);
    f.fraud_link_points = out.total - before;
    request::vpn(req, out);
    (f.address_country, f.ip_country_mismatch) = request::ip_mismatch(req, ip_country, out);
    request::email(req, out, &mut f);
    request::account(req, out);
    identities::familiarity(hist, out);
    request::amount(req, hist, out, &mut f);
    identities::velocity(hist, out);
    request::addresses(req, out, &mut f);
    request::client_counts(req, out);
    request::night(req, out, &mut f);
    if req.two_factor_auth == Some(true) {
        out.fire(
            &TWO_FACTOR_AUTH,
            0,
            "two-factor authentication was used".into(),
        );
    }
    f
}
