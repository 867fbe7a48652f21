//! Feedback as a shop sends it, the same for the engine in process and
//! through the database: each reported fraud's chargeback arrives its
//! world's delay after the purchase, and once a simulated week the model is
//! refitted, purchases older than 60 days without a label counting as
//! legitimate. Events, chargebacks and refits are interleaved in time order.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use vigil_risk::model::{refit, Labelled, DEFAULT_REVIEW_RATE};
use vigil_risk::{assess_with, parse_request, HardRule, HardRuleSource, IdentityKind, Model};

use crate::ledger::Ledger;
use crate::metrics::Scored;
use crate::scenario::Scenario;
use crate::world::{Event, START_UNIX};

/// Days between refits.
pub const REFIT_EVERY_DAYS: f64 = 7.0;
/// Unlabelled purchases older than this count as legitimate at a refit.
pub const UNLABELLED_AS_LEGIT_DAYS: f64 = 60.0;
/// Figures are on the days after this: the first labels arrive then.
pub const FIRST_LABELS_DAY: f64 = 30.0;

const DAY_US: i64 = 86_400_000_000;

/// Simulated day `day` in µs since the epoch.
pub fn at_us(day: f64) -> i64 {
    START_UNIX * 1_000_000 + (day * DAY_US as f64) as i64
}

/// What an engine does with a purchase, a chargeback and a refit.
pub trait Engine {
    /// Scores event `i`; returns its score and `Result`.
    fn assess(&mut self, i: usize, e: &Event) -> (f64, String);
    /// Reports event `i` (a fraud) as a chargeback.
    fn chargeback(&mut self, i: usize, e: &Event);
    /// Refits at simulated time `now_us`; returns whether a new model was adopted.
    fn refit(&mut self, now_us: i64) -> bool;
}

/// What a replay did besides scoring.
#[derive(Debug, Default)]
pub struct Tally {
    pub chargebacks: usize,
    pub refits: usize,
    pub adopted: usize,
}

/// Replays `events` through `engine`, with `feedback` or without; returns
/// the scores of the purchases after [`FIRST_LABELS_DAY`].
pub fn replay(
    events: &[Event],
    scenario: &Scenario,
    seed: u64,
    feedback: bool,
    engine: &mut dyn Engine,
) -> (Vec<Scored>, Tally) {
    // Which fraud is reported, and when: fixed by the seed, the same for
    // every engine.
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x6c61_6265_6c73);
    let mut due: Vec<(f64, usize)> = Vec::new();
    for (i, e) in events.iter().enumerate().filter(|(_, e)| e.fraud) {
        let reported = rng.random_bool(scenario.labelled.clamp(0.0, 1.0));
        let (lo, hi) = scenario.label_delay_days;
        let delay = if hi > lo {
            rng.random_range(lo..hi)
        } else {
            lo
        };
        if feedback && reported {
            due.push((e.day + delay, i));
        }
    }
    due.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut due = due.into_iter().peekable();
    let mut next_refit = REFIT_EVERY_DAYS;
    let mut tally = Tally::default();
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        loop {
            let chargeback = due.peek().map(|(d, _)| *d).filter(|d| *d <= e.day);
            let refit = (feedback && next_refit <= e.day).then_some(next_refit);
            match (chargeback, refit) {
                (Some(c), r) if r.is_none_or(|r| c <= r) => {
                    let (_, j) = due.next().expect("peeked");
                    engine.chargeback(j, &events[j]);
                    tally.chargebacks += 1;
                }
                (_, Some(r)) => {
                    tally.refits += 1;
                    tally.adopted += usize::from(engine.refit(at_us(r)));
                    next_refit += REFIT_EVERY_DAYS;
                }
                _ => break,
            }
        }
        let (score, result) = engine.assess(i, e);
        if e.day >= FIRST_LABELS_DAY {
            out.push(Scored {
                score,
                result,
                fraud: e.fraud,
                pattern: e.pattern,
            });
        }
    }
    (out, tally)
}

/// The engine in this process over an in-memory history, with the
/// extension's feedback rules: a chargeback marks the purchase's e-mail,
/// device, IP and card; a refit adopts only a better model.
#[derive(Default)]
pub struct InProcess {
    ledger: Ledger,
    /// (kind, value) → the youngest confirmed fraud's time.
    marks: HashMap<(IdentityKind, String), i64>,
    /// Every assessed purchase, for refits; `reported` marks the chargebacks.
    rows: Vec<Labelled>,
    reported: Vec<bool>,
    model: Option<Model>,
}

impl Engine for InProcess {
    fn assess(&mut self, i: usize, e: &Event) -> (f64, String) {
        let Ok(req) = parse_request(&e.body) else {
            return (f64::NAN, "?".into());
        };
        let ids = req.identities();
        let at = req.event_time_us(i64::MAX);
        let mut history = self.ledger.history(&ids, at);
        for (kind, value) in
            IdentityKind::ALL
                .into_iter()
                .zip([&ids.email, &ids.device, &ids.ip, &ids.card])
        {
            let marked = value
                .as_ref()
                .and_then(|v| self.marks.get(&(kind, v.clone())))
                .filter(|t| **t <= at);
            if let Some(t) = marked {
                history.hard_rules.push(HardRule {
                    identity: kind,
                    source: HardRuleSource::ConfirmedFraud,
                    detail: String::new(),
                    fraud_age_us: Some(at - t),
                });
            }
        }
        let a = assess_with(&req, &history, e.ip_country, self.model.as_ref());
        self.ledger.record(&ids, at, req.amount);
        debug_assert_eq!(self.rows.len(), i);
        self.rows.push(Labelled {
            x: a.model_features,
            expert_points: a.expert_points,
            fraud: e.fraud,
            at_us: at,
            links: a.fraud_links,
        });
        self.reported.push(false);
        (a.score, a.result.as_str().to_owned())
    }

    fn chargeback(&mut self, i: usize, e: &Event) {
        let Ok(req) = parse_request(&e.body) else {
            return;
        };
        let ids = req.identities();
        let at = req.event_time_us(i64::MAX);
        for (kind, value) in IdentityKind::ALL
            .into_iter()
            .zip([ids.email, ids.device, ids.ip, ids.card])
        {
            if let Some(v) = value {
                let t = self.marks.entry((kind, v)).or_insert(at);
                *t = (*t).max(at);
            }
        }
        if let Some(r) = self.reported.get_mut(i) {
            *r = true;
        }
    }

    fn refit(&mut self, now_us: i64) -> bool {
        let old_enough = now_us - (UNLABELLED_AS_LEGIT_DAYS * DAY_US as f64) as i64;
        let rows: Vec<Labelled> = self
            .rows
            .iter()
            .zip(&self.reported)
            .filter(|(r, reported)| **reported || r.at_us < old_enough)
            .map(|(r, reported)| Labelled {
                fraud: *reported,
                ..r.clone()
            })
            .collect();
        match refit(&rows, self.model.as_ref(), DEFAULT_REVIEW_RATE, None) {
            Ok(r) => {
                self.model = Some(r.model);
                r.adopted
            }
            Err(_) => false,
        }
    }
}

/// The extension: every purchase by `vigil.risk_score`, chargebacks by
/// `vigil.transaction_feedback`, refits by `vigil.risk_refit` as of the
/// simulated time.
pub struct Database {
    db: postgres::Client,
    score: postgres::Statement,
    ids: Vec<String>,
}

impl Database {
    pub fn connect(conninfo: &str) -> Result<Database, postgres::Error> {
        let mut db = postgres::Client::connect(conninfo, postgres::NoTls)?;
        db.batch_execute(
            "TRUNCATE vigil.transactions CASCADE; DELETE FROM vigil.risk_models; \
             DELETE FROM vigil.fraud_identities;",
        )?;
        let score = db.prepare("SELECT vigil.risk_score($1::text::jsonb)::text")?;
        Ok(Database {
            db,
            score,
            ids: Vec::new(),
        })
    }

    fn fail(e: postgres::Error) -> ! {
        eprintln!("vigil-risk-sim: {e}");
        std::process::exit(1)
    }
}

impl Engine for Database {
    fn assess(&mut self, _: usize, e: &Event) -> (f64, String) {
        let text: String = self
            .db
            .query_one(&self.score, &[&e.body.to_string()])
            .unwrap_or_else(|e| Self::fail(e))
            .get(0);
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        self.ids.push(
            answer["transactionId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        (
            answer["RiskScore"].as_f64().unwrap_or(f64::NAN),
            answer["Result"].as_str().unwrap_or("?").to_owned(),
        )
    }

    fn chargeback(&mut self, i: usize, _: &Event) {
        self.db
            .execute(
                "SELECT vigil.transaction_feedback($1::text::uuid, 'chargeback')",
                &[&self.ids[i]],
            )
            .unwrap_or_else(|e| Self::fail(e));
    }

    fn refit(&mut self, now_us: i64) -> bool {
        let row = self
            .db
            .query_one(
                "SELECT vigil.risk_refit(make_interval(days => $1), to_timestamp($2::float8 / 1e6))::text",
                &[&(UNLABELLED_AS_LEGIT_DAYS as i32), &(now_us as f64)],
            )
            .unwrap_or_else(|e| Self::fail(e));
        let text: String = row.get(0);
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        answer["adopted"] == true
    }
}
