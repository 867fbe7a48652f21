//! The model learned from feedback labels, one per account:
//! `vigil.risk_refit()` fits one ([`vigil_risk::model`]) on an account's
//! labelled transactions, judges it against the scoring in force on that
//! account's newest labels, and stores what is in force from then on (the new
//! model if it won, else the one before, with the link weights the labels
//! set) in `vigil.risk_models`; `vigil.risk_score` uses the account's newest
//! row. An account with too few labels keeps the rules alone.
//!
//! A backend keeps the models it last loaded and checks an account's newest id
//! with one descent of `risk_models_account` per assessment, so a refit
//! reaches every backend on its next call without a query per call.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::ControlFlow;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use serde_json::{json, Value};
use vigil_risk::model::{refit, Labelled, LinkWeights, Model, Refit, FEATURES, FEATURE_NAMES};

use crate::pg::index_range::{scan, Direction, Key, Relation, Snapshot};
use crate::pg::jsonb::Jsonb;

/// Models a backend keeps: past this many accounts it forgets them all (a
/// model is a few hundred bytes; this bounds a pooled backend that serves
/// many accounts).
const LOADED_ACCOUNTS: usize = 1000;

thread_local! {
    /// Per account, the newest model's id and the model (None: that row is unusable).
    static LOADED: RefCell<HashMap<String, (i64, Option<Model>)>> = RefCell::new(HashMap::new());
}

/// `account`'s newest model as of `snapshot`, if there is one and it has
/// this build's features.
pub fn current(account: &str, snapshot: &Snapshot) -> Option<Model> {
    let newest = newest_id(account, snapshot)?;
    LOADED.with(|cell| {
        let mut loaded = cell.borrow_mut();
        if let Some((id, model)) = loaded.get(account) {
            if *id == newest {
                return model.clone();
            }
        }
        let model = load(newest);
        if loaded.len() >= LOADED_ACCOUNTS {
            loaded.clear();
        }
        loaded.insert(account.to_owned(), (newest, model.clone()));
        model
    })
}

/// The largest visible id of `account`'s rows in `vigil.risk_models`.
fn newest_id(account: &str, snapshot: &Snapshot) -> Option<i64> {
    let table = Relation::open("risk_models");
    let index = Relation::open("risk_models_account");
    let mut newest = None;
    scan(
        &table,
        &index,
        snapshot,
        &[Key::TextEq(account)],
        Direction::Backward,
        |entry| {
            newest = entry.int8(2);
            ControlFlow::Break(())
        },
    );
    index.close();
    table.close();
    newest
}

const LOAD: &str = "SELECT features, weights, intercept, expert_intercept, frauds, legit, \
                    ranges, link_weights, review_cutoff FROM vigil.risk_models WHERE id = $1";

fn load(id: i64) -> Option<Model> {
    let args: [DatumWithOid; 1] = [id.into()];
    let row = Spi::connect(|client| {
        let rows = client.select(LOAD, Some(1), &args)?;
        let Some(row) = rows.into_iter().next() else {
            return Ok::<_, pgrx::spi::Error>(None);
        };
        Ok(Some((
            row.get::<Vec<String>>(1)?.unwrap_or_default(),
            row.get::<Vec<f64>>(2)?.unwrap_or_default(),
            row.get::<f64>(3)?.unwrap_or_default(),
            row.get::<f64>(4)?.unwrap_or_default(),
            row.get::<i32>(5)?.unwrap_or_default(),
            row.get::<i32>(6)?.unwrap_or_default(),
            row.get::<Vec<f64>>(7)?,
            row.get::<Vec<f64>>(8)?,
            row.get::<f64>(9)?,
        )))
    })
    .unwrap_or_else(|e| error!("could not load risk model {id}: {e}"))?;
    let (names, weights, intercept, expert_intercept, frauds, legit, ranges, links, review) = row;
    // A model fitted by another version's features is not used.
    if names.iter().map(String::as_str).ne(FEATURE_NAMES) || weights.len() != FEATURES {
        return None;
    }
    let mut w = [0.0; FEATURES];
    w.copy_from_slice(&weights);
    let mut model = Model {
        weights: w,
        intercept,
        expert_intercept,
        frauds: frauds.max(0) as u32,
        legit: legit.max(0) as u32,
        ..Model::neutral(LinkWeights::default())
    };
    // Models fitted before 0.9.0 have no ranges and no link weights.
    if let Some(r) = ranges.filter(|r| r.len() == 2 * FEATURES) {
        for (range, pair) in model.ranges.iter_mut().zip(r.chunks_exact(2)) {
            *range = (pair[0], pair[1]);
        }
    }
    if let Some([device, ip]) = links.as_deref().and_then(|l| <[f64; 2]>::try_from(l).ok()) {
        model.links = LinkWeights { device, ip };
    }
    model.review_cutoff = review;
    Some(model)
}

/// Account `$3`'s labelled assessments as of `$2`, found from the labels (the latest
/// of each; fraud or chargeback is fraud), and with
/// `unlabelled_as_legit_after` (`$1`), the most recent 200,000 unlabelled
/// ones that occurred at least that long before `$2`, as legitimate (about
/// 40 MB of features in the backend while it fits); each with its time and
/// whether its device and IP were linked to confirmed fraud.
const TRAINING: &str = "
SELECT t.model_x, (t.features ->> 'expertPoints')::float8, l.label IN ('fraud', 'chargeback'),
       t.occurred_at, t.features -> 'fraudLinks' ->> 'device' IS NOT NULL,
       t.features -> 'fraudLinks' ->> 'ip' IS NOT NULL
FROM vigil.transaction_labels l
JOIN vigil.transactions t ON t.id = l.transaction_id
WHERE l.account = $3 AND t.account = $3 AND t.model_x IS NOT NULL AND t.occurred_at <= $2
UNION ALL
(SELECT t.model_x, (t.features ->> 'expertPoints')::float8, false,
        t.occurred_at, t.features -> 'fraudLinks' ->> 'device' IS NOT NULL,
        t.features -> 'fraudLinks' ->> 'ip' IS NOT NULL
 FROM vigil.transactions t
 WHERE $1::interval IS NOT NULL AND t.account = $3 AND t.occurred_at < $2 - $1 AND t.model_x IS NOT NULL
   AND NOT EXISTS (SELECT FROM vigil.feedback f WHERE f.transaction_id = t.id)
 ORDER BY t.occurred_at DESC
 LIMIT 200000)";

const STORE: &str = "
INSERT INTO vigil.risk_models (features, weights, intercept, expert_intercept, frauds, legit,
                               ranges, link_weights, adopted, validation, review_cutoff, account)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id";

/// Fits a model on the acting account's labelled transactions as of `as_of`
/// ([`crate::keys::acting_account`]) and makes it the account's current one
/// if it beats the scoring in force on the account's newest labels
/// ([`vigil_risk::model::refit`]). Returns what it did: `{"fitted": true,
/// "adopted", "reason", "modelId", "frauds", "legit", "linkWeights",
/// "validation", "weights", "account"}`, or `{"fitted": false, "reason",
/// "account"}` when there are too few labels (then the current model, if
/// any, stays).
#[pg_extern(volatile, security_definer)]
#[search_path(pg_catalog, vigil)]
fn risk_refit(
    unlabelled_as_legit_after: default!(Option<pgrx::datum::Interval>, "NULL"),
    as_of: default!(Option<pgrx::datum::TimestampWithTimeZone>, "now()"),
) -> Jsonb {
    let as_of = as_of.unwrap_or_else(|| error!("as_of must not be NULL"));
    Jsonb(refit_account(
        &crate::keys::acting_account(),
        unlabelled_as_legit_after,
        as_of,
    ))
}

/// Refits every account with labels, each on its own (what the sidecar's
/// schedule calls): one row per account, with what `vigil.risk_refit` would
/// have answered for it. An account whose refit is running is skipped.
#[pg_extern(volatile, security_definer)]
#[search_path(pg_catalog, vigil)]
fn risk_refit_accounts(
    unlabelled_as_legit_after: default!(Option<pgrx::datum::Interval>, "NULL"),
    as_of: default!(Option<pgrx::datum::TimestampWithTimeZone>, "now()"),
) -> TableIterator<'static, (name!(account, String), name!(outcome, Jsonb))> {
    let as_of = as_of.unwrap_or_else(|| error!("as_of must not be NULL"));
    let accounts = Spi::connect(|client| {
        client
            .select(
                "SELECT DISTINCT account FROM vigil.feedback ORDER BY account",
                None,
                &[],
            )?
            .map(|row| row.get::<String>(1))
            .collect::<Result<Vec<_>, _>>()
    })
    .unwrap_or_else(|e| error!("could not list the accounts with labels: {e}"));
    let outcomes: Vec<_> = accounts
        .into_iter()
        .flatten()
        .filter(|account| try_refit_lock(account))
        .map(|account| {
            let outcome = refit_locked(&account, unlabelled_as_legit_after, as_of);
            (account, Jsonb(outcome))
        })
        .collect();
    TableIterator::new(outcomes)
}

fn refit_account(
    account: &str,
    unlabelled_as_legit_after: Option<pgrx::datum::Interval>,
    as_of: pgrx::datum::TimestampWithTimeZone,
) -> Value {
    if !try_refit_lock(account) {
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
            "a refit is running: vigil.risk_refit runs one at a time for an account; call it again when that one has committed"
        );
    }
    refit_locked(account, unlabelled_as_legit_after, as_of)
}

/// Refits `account`, its refit lock held.
fn refit_locked(
    account: &str,
    unlabelled_as_legit_after: Option<pgrx::datum::Interval>,
    as_of: pgrx::datum::TimestampWithTimeZone,
) -> Value {
    let rows = Spi::connect(|client| {
        let args: [DatumWithOid; 3] = [
            unlabelled_as_legit_after.into(),
            as_of.into(),
            account.into(),
        ];
        let mut rows = Vec::new();
        for row in client.select(TRAINING, None, &args)? {
            let (Some(x), Some(points), Some(fraud), Some(at)) = (
                row.get::<Vec<f32>>(1)?,
                row.get::<f64>(2)?,
                row.get::<bool>(3)?,
                row.get::<pgrx::datum::TimestampWithTimeZone>(4)?,
            ) else {
                continue;
            };
            let links = [
                row.get::<bool>(5)?.unwrap_or(false),
                row.get::<bool>(6)?.unwrap_or(false),
            ];
            if let Some(x) = vector(&x) {
                rows.push(Labelled {
                    x,
                    expert_points: points,
                    fraud,
                    at_us: pg_sys::TimestampTz::from(at),
                    links,
                });
            }
        }
        Ok::<_, pgrx::spi::Error>(rows)
    })
    .unwrap_or_else(|e| error!("could not read the labelled transactions: {e}"));
    let snapshot = Snapshot::take();
    let in_force = current(account, &snapshot);
    snapshot.release();
    let budget = crate::risk::review_budget(account);
    let rate = budget.map_or(vigil_risk::model::DEFAULT_REVIEW_RATE, |(rate, _)| rate);
    let outcome = match refit(&rows, in_force.as_ref(), rate, budget.map(|(rate, _)| rate)) {
        Ok(outcome) => outcome,
        Err(e) => return json!({"fitted": false, "reason": e.to_string(), "account": account}),
    };
    let id = store(account, &outcome);
    let Refit {
        model,
        fitted,
        adopted,
        validation,
        reason,
        bands,
    } = outcome;
    let bands: serde_json::Map<String, Value> = bands
        .iter()
        .map(|b| {
            (
                b.result.to_owned(),
                json!({
                    "transactions": b.rows,
                    "frauds": b.frauds,
                    "precision": b.precision,
                    "recall": b.recall,
                }),
            )
        })
        .collect();
    let weights: serde_json::Map<String, Value> = FEATURE_NAMES
        .iter()
        .zip(fitted.weights)
        .map(|(n, w)| ((*n).to_owned(), Value::from((w * 1000.0).round() / 1000.0)))
        .collect();
    json!({
        "fitted": true,
        "adopted": adopted,
        "reason": reason,
        "modelId": id,
        "frauds": fitted.frauds,
        "legit": fitted.legit,
        "linkWeights": {"device": model.links.device, "ip": model.links.ip},
        "validation": validation_json(validation.as_ref()),
        "reviewCutoff": model.review_cutoff,
        "reviewBudget": budget.map(|(rate, by)| json!({"rate": rate, "setBy": by.name()})),
        "bands": bands,
        "intercept": fitted.intercept,
        "expertIntercept": fitted.expert_intercept,
        "weights": weights,
        "account": account,
    })
}

fn validation_json(v: Option<&vigil_risk::model::Validation>) -> Value {
    v.map_or(Value::Null, |v| {
        let figures = |f: &vigil_risk::model::Figures| json!({"auc": f.auc, "caught": f.caught});
        json!({
            "rows": v.rows,
            "frauds": v.frauds,
            "reviewRate": v.review_rate,
            "inForce": figures(&v.in_force),
            "candidate": figures(&v.candidate),
        })
    })
}

/// One refit of an account at a time: each compares its candidate with the
/// model in force and adopts it only when it is better, which holds only if
/// no other refit adopts one meanwhile (three at once each adopted theirs). A
/// second refit is refused at once with 55P03 rather than made to wait: it
/// would refit the same labels against the model the first adopted. The lock
/// is the transaction's, so it is held until the first one's model is
/// committed. Whether it was taken.
fn try_refit_lock(account: &str) -> bool {
    let args: [DatumWithOid; 1] = [account.into()];
    Spi::get_one_with_args::<bool>(
        "SELECT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('vigil.risk_refit'), pg_catalog.hashtext($1))",
        &args,
    )
    .unwrap_or_else(|e| error!("could not take the refit lock: {e}"))
        == Some(true)
}

/// Stores `account`'s model in force after `outcome`; its id.
fn store(account: &str, outcome: &Refit) -> i64 {
    let m = &outcome.model;
    let names: Vec<String> = FEATURE_NAMES.iter().map(|s| (*s).to_owned()).collect();
    let ranges: Vec<f64> = m.ranges.iter().flat_map(|(lo, hi)| [*lo, *hi]).collect();
    let args: [DatumWithOid; 12] = [
        names.into(),
        m.weights.to_vec().into(),
        m.intercept.into(),
        m.expert_intercept.into(),
        (m.frauds.min(i32::MAX as u32) as i32).into(),
        (m.legit.min(i32::MAX as u32) as i32).into(),
        ranges.into(),
        vec![m.links.device, m.links.ip].into(),
        outcome.adopted.into(),
        pgrx::JsonB(validation_json(outcome.validation.as_ref())).into(),
        m.review_cutoff.into(),
        account.into(),
    ];
    Spi::get_one_with_args::<i64>(STORE, &args)
        .unwrap_or_else(|e| error!("could not store the risk model: {e}"))
        .unwrap_or_default()
}

/// A recorded feature vector of this build's length.
fn vector(x: &[f32]) -> Option<[f64; FEATURES]> {
    if x.len() != FEATURES {
        return None;
    }
    let mut out = [0.0; FEATURES];
    for (o, v) in out.iter_mut().zip(x) {
        *o = f64::from(*v);
    }
    Some(out)
}

extension_sql!(
    "REVOKE EXECUTE ON FUNCTION vigil.risk_refit(interval, timestamptz) FROM PUBLIC;\n\
     REVOKE EXECUTE ON FUNCTION vigil.risk_refit_accounts(interval, timestamptz) FROM PUBLIC;",
    name = "risk_refit_grants",
    requires = [risk_refit, risk_refit_accounts]
);
