//! Combining the signals into the score, the level, the result and the confidence.
//!
//! - **Strictness** `s` (0..=100, default 50) multiplies weak signals' points by
//!   `w(s) = 0.5 + s/100` and moves every cut-off down by `(s - 50) * 0.3`.
//! - **Score**: with `T` the sum of all points,
//!   `RiskScore = 100 / (1 + exp(-(T - 35) / 12))`, rounded to one decimal. It is
//!   strictly increasing in `T`: every risk signal raises it (before rounding), and
//!   raising strictness never lowers it (weak positive points grow, mitigations are not
//!   scaled). `T = 0` gives 5.1, one strong signal (15) 15.9, two (30) 39.7,
//!   three (45) 69.6, four (60) 89.0: one signal alone passes, three want review.
//! - **Level**, by precedence: 2 if any hard rule ([`crate::HardRule::is_hard`]); 7 if fewer than 3 of the core inputs
//!   are present ([`core_inputs`]); then the first cut-off the rounded score reaches:
//!   0 critical (90), 1 high (75), 6 caution (60), 3 monitor (40), 4 low (20); else 5.
//!   What feedback adds (the learned model, links to confirmed fraud through a
//!   device or IP) never reaches 0 alone: when only those points take the score
//!   to the critical cut-off, the level is 1 (Review), the score as it is.
//! - **Result**: Failed for 0 and 2, Review for 1, 6 and 7, Passed for 3, 4 and 5.
//!   The score then moves into the band integrators reading `RiskScore` alone
//!   use ([`agreeing_score_tenths`]): Passed under 50, Review 50 and up, Failed 80 and up.
//!   Higher strictness never gives a more lenient result: the score does not drop and
//!   the cut-offs do, and levels 2 and 7 do not depend on strictness.
//! - **Confidence** ([`confidence_points`]): one point per informative input present,
//!   two if the e-mail or device has history, one if the IP's country is known.
//!   High at 10 or more, Medium at 6 or more, else Low; High whenever a hard rule fired.
//!
//! Cut-offs and scores are compared in integer tenths, so a score printed as 74.7 is at
//! or above a cut-off printed as 74.7, with no floating-point surprise.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::features::{feature_vector, LinkWeights};
use crate::history::History;
use crate::input::Request;
use crate::model::Model;
use crate::signals::{evaluate, Collector, Reason, LEARNED_MODEL};

/// How much the assessment knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "Low",
            Confidence::Medium => "Medium",
            Confidence::High => "High",
        }
    }
}

/// The outcome, ordered from lenient to strict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Verdict {
    Passed,
    Review,
    Failed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "Passed",
            Verdict::Review => "Review",
            Verdict::Failed => "Failed",
        }
    }
}

/// Risk levels (SPEC table; meanings per DESIGN.md).
pub const LEVEL_CRITICAL: u8 = 0;
pub const LEVEL_HIGH: u8 = 1;
pub const LEVEL_FAILED: u8 = 2;
pub const LEVEL_MONITOR: u8 = 3;
pub const LEVEL_LOW: u8 = 4;
pub const LEVEL_SAFE: u8 = 5;
pub const LEVEL_CAUTION: u8 = 6;
pub const LEVEL_VERIFY: u8 = 7;

/// Label of a level (`RiskLevelLabel`).
pub fn level_label(level: u8) -> &'static str {
    match level {
        LEVEL_CRITICAL => "Critical risk, transaction blocked",
        LEVEL_HIGH => "High risk, manual verification required",
        LEVEL_FAILED => "Failed: blocklisted or confirmed fraud",
        LEVEL_MONITOR => "Monitor closely",
        LEVEL_LOW => "Low risk",
        LEVEL_SAFE => "Safe zone",
        LEVEL_CAUTION => "Caution, review recommended",
        _ => "Additional verification needed",
    }
}

/// Result of a level.
pub fn level_verdict(level: u8) -> Verdict {
    match level {
        LEVEL_CRITICAL | LEVEL_FAILED => Verdict::Failed,
        LEVEL_MONITOR | LEVEL_LOW | LEVEL_SAFE => Verdict::Passed,
        _ => Verdict::Review,
    }
}

/// Default cut-offs in tenths of a point, with the level each starts, highest first.
const CUTOFFS_TENTHS: [(i32, u8); 5] = [
    (900, LEVEL_CRITICAL),
    (750, LEVEL_HIGH),
    (600, LEVEL_CAUTION),
    (400, LEVEL_MONITOR),
    (200, LEVEL_LOW),
];

/// The five cut-offs at strictness `s`, as scores (critical, high, caution, monitor,
/// low): each default minus `(s - 50) * 0.3`.
pub fn cutoffs(strictness: u8) -> [f64; 5] {
    let shift = cutoff_shift_tenths(strictness);
    CUTOFFS_TENTHS.map(|(t, _)| f64::from(t - shift) / 10.0)
}

/// `(s - 50) * 0.3` in tenths: `(s - 50) * 3`.
fn cutoff_shift_tenths(strictness: u8) -> i32 {
    (i32::from(strictness.min(100)) - 50) * 3
}

/// `w(s) = 0.5 + s/100`, the factor on weak signals.
pub fn weak_weight(strictness: u8) -> f64 {
    0.5 + f64::from(strictness.min(100)) / 100.0
}

/// Total points that score 50: about two strong signals and a weak one.
const SCORE_CENTRE: f64 = 35.0;
/// Points per e-fold of the odds: one strong signal (15) moves a middling
/// score by about a third of the scale.
const SCORE_SPREAD: f64 = 12.0;

/// `100 / (1 + exp(-(T - 35) / 12))`, unrounded.
pub fn score_of_points(total: f64) -> f64 {
    100.0 / (1.0 + (-(total - SCORE_CENTRE) / SCORE_SPREAD).exp())
}

/// `score_of_points(total)` in tenths, 0..=1000 (0 for a non-finite total).
fn score_tenths_of(total: f64) -> i32 {
    let raw = score_of_points(total);
    if raw.is_finite() {
        // 0..=1000 after clamping, so the cast is exact.
        (raw * 10.0).round().clamp(0.0, 1000.0) as i32
    } else {
        0
    }
}

/// Level from the score in tenths, ignoring hard rules and missing information.
pub fn level_of_score(score_tenths: i32, strictness: u8) -> u8 {
    level_with_review(score_tenths, strictness, None)
}

/// A review budget's Review cut-off ([`crate::Model::review_cutoff`], a score
/// at strictness 50) in tenths, held between the monitor and high cut-offs
/// so the levels keep their order.
pub fn review_cutoff_tenths(cutoff: f64) -> i32 {
    let [_, high, _, monitor, _] = CUTOFFS_TENTHS;
    let tenths = if cutoff.is_finite() {
        (cutoff * 10.0).round().clamp(0.0, 1000.0) as i32
    } else {
        CUTOFFS_TENTHS[2].0
    };
    tenths.clamp(monitor.0 + 1, high.0 - 1)
}

/// [`level_of_score`] with the Review (caution) cut-off at `review_tenths`
/// ([`review_cutoff_tenths`]) instead of 60.
pub fn level_with_review(score_tenths: i32, strictness: u8, review_tenths: Option<i32>) -> u8 {
    let shift = cutoff_shift_tenths(strictness);
    let mut cutoffs = CUTOFFS_TENTHS;
    if let Some(r) = review_tenths {
        cutoffs[2].0 = r;
    }
    cutoffs
        .iter()
        .find(|(t, _)| score_tenths >= t - shift)
        .map_or(LEVEL_SAFE, |(_, level)| *level)
}

/// The score, in tenths, moved into the band that score-only integrators read
/// as `result`: under 50 proceed, 50 and up review, 80 and up fail (the
/// publisher's demo page reviews from 50 and calls above 65 risky; others
/// filter above 70 or 80). Without it an empty body scored 5.1 with `Review`
/// (level 7), a hard rule could fail a score of 40, and at a high strictness a
/// `Review` could score 45. The move is monotone in the score and in the
/// result, so the property tests (strictness, `isVPN`) still hold.
pub fn agreeing_score_tenths(score_tenths: i32, result: Verdict) -> i32 {
    match result {
        Verdict::Passed => score_tenths.min(499),
        Verdict::Review => score_tenths.max(500),
        Verdict::Failed => score_tenths.max(800),
    }
}

/// Fewer core inputs than this gives level 7.
pub const MIN_CORE_INPUTS: u32 = 3;

/// How many of the core inputs are present: e-mail, amount, ipAddress,
/// deviceFingerprint, an address (billing or shipping), paymentMethod, accountAge.
/// Under [`MIN_CORE_INPUTS`] the engine cannot tell a safe purchase from an unknown
/// one, so it asks for verification (level 7) instead of guessing "safe".
pub fn core_inputs(req: &Request) -> u32 {
    [
        req.email.is_some(),
        req.amount.is_some(),
        req.ip_address.is_some(),
        req.device_fingerprint.is_some(),
        req.billing_address.is_some() || req.shipping_address.is_some(),
        req.payment_method.is_some(),
        req.account_age_days.is_some(),
    ]
    .into_iter()
    .map(u32::from)
    .sum()
}

/// Confidence points: one for each informative input present (e-mail, amount, time,
/// ipAddress, deviceFingerprint, billingAddress, shippingAddress, paymentMethod,
/// accountAge, isVPN or proxyOrVPN, twoFactorAuth, transactionFrequency, customerName),
/// two if the e-mail or device has history, one if the IP's country is known.
pub fn confidence_points(req: &Request, hist: &History, ip_country: Option<[u8; 2]>) -> u32 {
    let inputs: u32 = [
        req.email.is_some(),
        req.amount.is_some(),
        req.time.is_some(),
        req.ip_address.is_some(),
        req.device_fingerprint.is_some(),
        req.billing_address.is_some(),
        req.shipping_address.is_some(),
        req.payment_method.is_some(),
        req.account_age_days.is_some(),
        req.is_vpn.is_some() || req.proxy_or_vpn.is_some(),
        req.two_factor_auth.is_some(),
        req.transaction_frequency.is_some(),
        req.customer_name.is_some(),
    ]
    .into_iter()
    .map(u32::from)
    .sum();
    inputs + 2 * u32::from(hist.knows_customer()) + u32::from(ip_country.is_some())
}

/// Confidence points for High and Medium.
pub const CONFIDENCE_HIGH: u32 = 10;
pub const CONFIDENCE_MEDIUM: u32 = 6;

/// The assessment of one transaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assessment {
    /// `RiskScore`, 0..=100, one decimal.
    pub score: f64,
    /// `RiskLevel`.
    pub level: u8,
    /// `RiskLevelLabel`.
    pub label: &'static str,
    pub confidence: Confidence,
    pub result: Verdict,
    /// Every signal that fired, by descending |points| (then code).
    pub reasons: Vec<Reason>,
    /// The computed features (inputs to signals), for recording and analysis.
    pub features: Value,
    /// The learned model's feature vector ([`crate::model::FEATURE_NAMES`])
    /// and the rules' points without the hard rules', recorded for the next refit.
    pub model_features: [f64; crate::model::FEATURES],
    /// Whether the device and the IP were linked to confirmed fraud, recorded
    /// (`features.fraudLinks`) for the refit's link weights.
    pub fraud_links: [bool; 2],
    pub expert_points: f64,
    /// Sum of the (scaled) points, before the logistic.
    pub total_points: f64,
    /// The strictness used.
    pub strictness: u8,
}

impl Assessment {
    /// The superset response of DESIGN.md: `transactionId`, `RiskScore`, `RiskLevel`,
    /// `RiskLevelLabel`, `ConfidenceLevel`, `Result` and `reasons` (`code`, `points`,
    /// `detail`). Built directly rather than with `json!`, which would serialise the
    /// reasons a second time.
    pub fn to_json(&self, transaction_id: &str) -> Value {
        let mut m = Map::new();
        m.insert("transactionId".into(), Value::from(transaction_id));
        m.insert("RiskScore".into(), Value::from(self.score));
        m.insert("RiskLevel".into(), Value::from(self.level));
        m.insert("RiskLevelLabel".into(), Value::from(self.label));
        m.insert(
            "ConfidenceLevel".into(),
            Value::from(self.confidence.as_str()),
        );
        m.insert("Result".into(), Value::from(self.result.as_str()));
        m.insert("reasons".into(), self.reasons_json());
        Value::Object(m)
    }

    /// [`Assessment::to_json`] for the response to `request`: with `ignoredFields`
    /// when the body held fields the engine does not read.
    pub fn response_json(&self, transaction_id: &str, request: &Request) -> Value {
        let mut json = self.to_json(transaction_id);
        if let (false, Value::Object(m)) = (request.ignored_fields.is_empty(), &mut json) {
            m.insert(
                "ignoredFields".into(),
                request
                    .ignored_fields
                    .iter()
                    .map(|f| Value::from(f.as_str()))
                    .collect(),
            );
        }
        json
    }

    /// `reasons` as the response and the record spell them:
    /// `[{"code","points","detail"}]`.
    pub fn reasons_json(&self) -> Value {
        self.reasons
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("code".into(), Value::from(r.code));
                m.insert("points".into(), Value::from(r.points));
                m.insert("detail".into(), Value::from(r.detail.as_str()));
                Value::Object(m)
            })
            .collect()
    }
}

/// Days (two decimals) since first seen, or null.
fn first_seen_days(us: Option<i64>) -> Value {
    us.map_or(Value::Null, |us| {
        Value::from((us as f64 / crate::history::Window::DAY_US as f64 * 100.0).round() / 100.0)
    })
}

fn country_json(c: Option<[u8; 2]>) -> Value {
    c.and_then(|c| {
        std::str::from_utf8(&c)
            .ok()
            .map(|s| Value::from(s.to_owned()))
    })
    .unwrap_or(Value::Null)
}

/// Assesses one transaction by the rules alone. Pure and deterministic; `ip_country`
/// is the country of `request.ip_address` (from [`crate::GeoIp::country`]), `None`
/// when unknown.
pub fn assess(request: &Request, history: &History, ip_country: Option<[u8; 2]>) -> Assessment {
    assess_with(request, history, ip_country, None)
}

/// [`assess`], plus the points of `model` (fitted on this installation's labels).
pub fn assess_with(
    request: &Request,
    history: &History,
    ip_country: Option<[u8; 2]>,
    model: Option<&Model>,
) -> Assessment {
    let strictness = request.strictness.min(100);
    let mut out = Collector::new(weak_weight(strictness));
    let links = model.map_or_else(LinkWeights::default, |m| m.links);
    let f = evaluate(request, history, ip_country, links, &mut out);
    // The rules' points without the hard rules': a refit must not learn from
    // a label on a transaction the blocklist already decided.
    let expert_points = out.total - out.hard_points;
    let x = feature_vector(request, history, &f);
    let mut learned = 0.0;
    if let Some(model) = model {
        let (points, outside) = model.assess(&x);
        if points.abs() >= 0.5 {
            learned = points;
            out.add(
                &LEARNED_MODEL,
                points,
                format!(
                    "the model fitted on {} labelled transactions ({} fraud) rates this {} than the rules do{}",
                    model.frauds + model.legit,
                    model.frauds,
                    if points > 0.0 { "riskier" } else { "safer" },
                    match outside {
                        0 => String::new(),
                        n => format!("; {n} of its features lie outside what those labels covered, so its points are shrunk"),
                    }
                ),
            );
        }
    }

    let total = out.total;
    let hard = history.has_hard_rule();
    let score_tenths = score_tenths_of(total);
    // What feedback adds (the model's points, links to confirmed fraud) never
    // fails a transaction alone: a hard rule or the rules' own score must be
    // there too.
    let from_feedback = learned.max(0.0) + f.fraud_link_points;
    let review = model
        .and_then(|m| m.review_cutoff)
        .map(review_cutoff_tenths);
    let feedback_alone_fails = from_feedback > 0.0
        && level_of_score(score_tenths, strictness) == LEVEL_CRITICAL
        && level_of_score(score_tenths_of(total - from_feedback), strictness) != LEVEL_CRITICAL;

    let core = core_inputs(request);
    let level = if hard {
        LEVEL_FAILED
    } else if core < MIN_CORE_INPUTS {
        LEVEL_VERIFY
    } else if feedback_alone_fails {
        LEVEL_HIGH
    } else {
        level_with_review(score_tenths, strictness, review)
    };
    let score = f64::from(agreeing_score_tenths(score_tenths, level_verdict(level))) / 10.0;

    let conf_points = confidence_points(request, history, ip_country);
    let confidence = if hard || conf_points >= CONFIDENCE_HIGH {
        Confidence::High
    } else if conf_points >= CONFIDENCE_MEDIUM {
        Confidence::Medium
    } else {
        Confidence::Low
    };

    let mut reasons = out.reasons;
    reasons.sort_by(|a, b| {
        b.points
            .abs()
            .total_cmp(&a.points.abs())
            .then_with(|| a.code.cmp(b.code))
    });

    let [critical, high, mut caution, monitor, low] = cutoffs(strictness);
    if let Some(r) = review {
        caution = f64::from(r - cutoff_shift_tenths(strictness)) / 10.0;
    }
    let features = json!({
        "strictness": strictness,
        "weakWeight": out.weak_weight,
        "totalPoints": (total * 100.0).round() / 100.0,
        "expertPoints": expert_points,
        "cutoffs": {"critical": critical, "high": high, "caution": caution, "monitor": monitor, "low": low},
        "coreInputs": core,
        "confidencePoints": conf_points,
        "knowsCustomer": history.knows_customer(),
        "hardRules": history.hard_rules.iter().filter(|r| r.is_hard()).count(),
        "fraudLinks": {"device": f.fraud_links[0], "ip": f.fraud_links[1]},
        "ipCountry": country_json(ip_country),
        "addressCountry": country_json(f.address_country),
        "addressesDiffer": f.addresses_differ,
        "disposableEmail": f.disposable_email,
        "emailDomainMatches": f.email_domain_matches,
        "hour": f.hour,
        "amountRatioToMean": f.amount_ratio_to_mean.filter(|v| v.is_finite()),
        "amountZScore": f.amount_z.filter(|v| v.is_finite()),
        "customerAmountCount": history.customer_amounts.count,
        "velocity": {
            "email": [history.email.last_hour, history.email.last_day],
            "device": [history.device.last_hour, history.device.last_day],
            "ip": [history.ip.last_hour, history.ip.last_day],
            "card": [history.card.last_hour, history.card.last_day],
        },
        "otherEmails": {
            "device": [history.device_others.day, history.device_others.month, history.device_others.quarter],
            "ip": [history.ip_others.day, history.ip_others.month, history.ip_others.quarter],
            "card": [history.card_others.day, history.card_others.month, history.card_others.quarter],
        },
        "firstSeenDays": {
            "email": first_seen_days(history.email_first_seen_us),
            "device": first_seen_days(history.device_first_seen_us),
            "ip": first_seen_days(history.ip_first_seen_us),
        },
    });

    Assessment {
        score,
        level,
        label: level_label(level),
        confidence,
        result: level_verdict(level),
        reasons,
        features,
        model_features: x,
        fraud_links: f.fraud_links.map(|d| d.is_some()),
        expert_points,
        total_points: total,
        strictness,
    }
}
