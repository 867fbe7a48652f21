//! The model learned from feedback labels: `vigil.risk_refit()` fits it
//! ([`vigil_risk::model`]) on labelled transactions and stores it in
//! `vigil.risk_models`; `vigil.risk_score` uses the newest row.
//!
//! A backend keeps the model it last loaded and checks the newest id with one
//! descent of the primary key per assessment, so a refit reaches every backend
//! on its next call without a query per call.

use std::cell::RefCell;
use std::ops::ControlFlow;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use serde_json::{json, Value};
use vigil_risk::model::{fit, Labelled, Model, FEATURES, FEATURE_NAMES};

use crate::pg::index_range::{scan, Direction, Relation, Snapshot};
use crate::pg::jsonb::Jsonb;

thread_local! {
    /// The newest model's id and the model (None: that row is unusable).
    static LOADED: RefCell<Option<(i64, Option<Model>)>> = const { RefCell::new(None) };
}

/// The newest model as of `snapshot`, if there is one and it has this
/// build's features.
pub fn current(snapshot: &Snapshot) -> Option<Model> {
    let newest = newest_id(snapshot)?;
    LOADED.with(|cell| {
        let mut loaded = cell.borrow_mut();
        if let Some((id, model)) = loaded.as_ref() {
            if *id == newest {
                return model.clone();
            }
        }
        let model = load(newest);
        *loaded = Some((newest, model.clone()));
        model
    })
}

/// The largest visible id in `vigil.risk_models`.
fn newest_id(snapshot: &Snapshot) -> Option<i64> {
    let table = Relation::open("risk_models");
    let index = Relation::open("risk_models_pkey");
    let mut newest = None;
    scan(
        &table,
        &index,
        snapshot,
        &[],
        Direction::Backward,
        |entry| {
            newest = entry.int8(1);
            ControlFlow::Break(())
        },
    );
    index.close();
    table.close();
    newest
}

const LOAD: &str = "SELECT features, weights, intercept, expert_intercept, frauds, legit \
                    FROM vigil.risk_models WHERE id = $1";

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
        )))
    })
    .unwrap_or_else(|e| error!("could not load risk model {id}: {e}"))?;
    let (names, weights, intercept, expert_intercept, frauds, legit) = row;
    // A model fitted by another version's features is not used.
    if names.iter().map(String::as_str).ne(FEATURE_NAMES) || weights.len() != FEATURES {
        return None;
    }
    let mut w = [0.0; FEATURES];
    w.copy_from_slice(&weights);
    Some(Model {
        weights: w,
        intercept,
        expert_intercept,
        frauds: frauds.max(0) as u32,
        legit: legit.max(0) as u32,
    })
}

/// The labelled assessments, found from the labels (the latest of each;
/// fraud or chargeback is fraud), and with `unlabelled_as_legit_after`, the
/// most recent 200,000 unlabelled ones that occurred at least that long ago,
/// as legitimate (about 40 MB of features in the backend while it fits).
const TRAINING: &str = "
SELECT t.model_x, (t.features ->> 'expertPoints')::float8, l.label IN ('fraud', 'chargeback')
FROM vigil.transaction_labels l
JOIN vigil.transactions t ON t.id = l.transaction_id
WHERE t.model_x IS NOT NULL
UNION ALL
(SELECT t.model_x, (t.features ->> 'expertPoints')::float8, false
 FROM vigil.transactions t
 WHERE $1::interval IS NOT NULL AND t.occurred_at < now() - $1 AND t.model_x IS NOT NULL
   AND NOT EXISTS (SELECT FROM vigil.feedback f WHERE f.transaction_id = t.id)
 ORDER BY t.occurred_at DESC
 LIMIT 200000)";

const STORE: &str = "
INSERT INTO vigil.risk_models (features, weights, intercept, expert_intercept, frauds, legit)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING id";

/// Fits a model on the labelled transactions and makes it the current one.
/// Returns what it did: `{"fitted": true, "modelId", "frauds", "legit",
/// "weights": {name: weight}}`, or `{"fitted": false, "reason"}` when there
/// are too few labels (then the current model, if any, stays).
#[pg_extern(volatile, security_definer)]
#[search_path(pg_catalog, vigil)]
fn risk_refit(unlabelled_as_legit_after: default!(Option<pgrx::datum::Interval>, "NULL")) -> Jsonb {
    let rows = Spi::connect(|client| {
        let args: [DatumWithOid; 1] = [unlabelled_as_legit_after.into()];
        let mut rows = Vec::new();
        for row in client.select(TRAINING, None, &args)? {
            let (Some(x), Some(points), Some(fraud)) = (
                row.get::<Vec<f32>>(1)?,
                row.get::<f64>(2)?,
                row.get::<bool>(3)?,
            ) else {
                continue;
            };
            if let Some(x) = vector(&x) {
                rows.push(Labelled {
                    x,
                    expert_points: points,
                    fraud,
                });
            }
        }
        Ok::<_, pgrx::spi::Error>(rows)
    })
    .unwrap_or_else(|e| error!("could not read the labelled transactions: {e}"));
    let model = match fit(&rows) {
        Ok(model) => model,
        Err(e) => return Jsonb(json!({"fitted": false, "reason": e.to_string()})),
    };
    let names: Vec<String> = FEATURE_NAMES.iter().map(|s| (*s).to_owned()).collect();
    let args: [DatumWithOid; 6] = [
        names.into(),
        model.weights.to_vec().into(),
        model.intercept.into(),
        model.expert_intercept.into(),
        (model.frauds as i32).into(),
        (model.legit as i32).into(),
    ];
    let id = Spi::get_one_with_args::<i64>(STORE, &args)
        .unwrap_or_else(|e| error!("could not store the risk model: {e}"))
        .unwrap_or_default();
    let weights: serde_json::Map<String, Value> = FEATURE_NAMES
        .iter()
        .zip(model.weights)
        .map(|(n, w)| ((*n).to_owned(), Value::from((w * 1000.0).round() / 1000.0)))
        .collect();
    Jsonb(json!({
        "fitted": true,
        "modelId": id,
        "frauds": model.frauds,
        "legit": model.legit,
        "intercept": model.intercept,
        "expertIntercept": model.expert_intercept,
        "weights": weights,
    }))
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
    "REVOKE EXECUTE ON FUNCTION vigil.risk_refit(interval) FROM PUBLIC;",
    name = "risk_refit_grants",
    requires = [risk_refit]
);
