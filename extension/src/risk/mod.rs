//! Transaction risk: `vigil.risk_score(jsonb)`, feedback and the blocklist.
//!
//! The engine (input forms, signals, score, levels) is the pure `vigil-risk`
//! crate. This module is its Postgres edge: it reads what only the database
//! knows (velocity, reuse, customer history, hard rules) with indexed queries,
//! looks up the IP's country, adds the model learned from feedback labels
//! (`model.rs`, `vigil.risk_refit()`), and records the assessment in the same
//! transaction that made it. The tables and the SQL-only functions (feedback,
//! blocklist) are in `schema.sql`.

mod geo;
mod history;
mod model;
#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;

use crate::pg::index_range::Snapshot;
use crate::pg::invalid_input;
use crate::pg::jsonb::Jsonb;

/// The share of traffic this installation can review; 0: the default
/// cut-offs stand, and a refit judges new models at 5%.
static REVIEW_RATE: pgrx::GucSetting<f64> = pgrx::GucSetting::<f64>::new(0.0);

pub fn register_settings() {
    geo::register_settings();
    pgrx::GucRegistry::define_float_guc(
        c"vigil.risk_review_rate",
        c"Share of transactions this installation can review (0 to 0.5; 0: the default cut-offs).",
        c"Set, vigil.risk_refit moves the Review cut-off so that about this share of traffic scores at or above it, and judges new models by the fraud they catch at this share.",
        &REVIEW_RATE,
        0.0,
        0.5,
        pgrx::GucContext::Suset,
        pgrx::GucFlags::default(),
    );
}

/// Who set a review budget: the account itself, or the installation for
/// every account that set none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BudgetSetBy {
    Account,
    Installation,
}

impl BudgetSetBy {
    pub fn name(self) -> &'static str {
        match self {
            BudgetSetBy::Account => "account",
            BudgetSetBy::Installation => "installation",
        }
    }
}

/// `account`'s review budget: its own (`vigil.set_risk_review_rate`), else
/// the installation's `vigil.risk_review_rate`, when either is set.
pub fn review_budget(account: &str) -> Option<(f64, BudgetSetBy)> {
    let args: [DatumWithOid; 1] = [account.into()];
    // Through numeric, so that a rate set as 0.02 reads 0.02, not real's 0.0199999995.
    let own = Spi::get_one_with_args::<f64>(
        "SELECT review_rate::numeric::float8 FROM vigil.accounts WHERE account OPERATOR(pg_catalog.=) $1",
        &args,
    )
    .unwrap_or_else(|e| error!("could not read the account's review budget: {e}"));
    own.map(|rate| (rate, BudgetSetBy::Account)).or_else(|| {
        Some(REVIEW_RATE.get())
            .filter(|r| *r > 0.0)
            .map(|rate| (rate, BudgetSetBy::Installation))
    })
}

/// Assesses a transaction (form A or B of SPEC, or a mix) and records it.
///
/// Runs as the extension's owner, so the application role needs no access to
/// the history tables; `api_key_id` attributes the record to the sidecar's caller.
/// Acts for the account entered ([`crate::keys::acting_account`]): its
/// history, its hard rules and its model, and the record is its.
#[pg_extern(volatile, security_definer)]
#[search_path(pg_catalog, vigil)]
fn risk_score(body: Option<Jsonb>, api_key_id: default!(Option<i64>, "NULL")) -> Jsonb {
    // NULL is refused as JSON null is: the transaction must be an object.
    let body = body.map_or(serde_json::Value::Null, |b| b.0);
    let request = match vigil_risk::parse_request(&body) {
        Ok(request) => request,
        Err(e) => invalid_input(&e.field, &e.message),
    };
    let identities = request.identities();
    let event = event_time(&request);
    let account = crate::keys::acting_account();
    // One snapshot for the history and the model.
    let snapshot = Snapshot::take();
    let history = history::load(&account, &identities, event, &snapshot);
    let model = model::current(&account, &snapshot);
    snapshot.release();
    let ip_country = request.ip_address.and_then(geo::country);
    let mut assessment = vigil_risk::assess_with(&request, &history, ip_country, model.as_ref());
    // The features go to the record only; the response does not carry them.
    let features = std::mem::take(&mut assessment.features);
    let occurred_at = pgrx::datum::TimestampWithTimeZone::try_from(event)
        .unwrap_or_else(|_| error!("event time {event} is out of range"));
    let id = history::record(
        &account,
        api_key_id,
        &request,
        &identities,
        &assessment,
        features,
        occurred_at,
    );
    Jsonb(assessment.response_json(&id.to_string(), &request))
}

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_UNIX_US: i64 = 946_684_800_000_000;

/// The transaction's event time as a PostgreSQL timestamp: its `time`, unless
/// that is later than the start of this SQL transaction (then that start).
fn event_time(request: &vigil_risk::Request) -> pg_sys::TimestampTz {
    let received = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
    request
        .event_time_us(received.saturating_add(PG_EPOCH_UNIX_US))
        .saturating_sub(PG_EPOCH_UNIX_US)
}

/// The identity `value` of `kind` (email, device, ip, card) as the history keys
/// it, so blocklist entries match what transactions record.
#[pg_extern(immutable, parallel_safe, name = "_identity")]
fn identity(kind: &str, value: &str) -> String {
    match vigil_risk::normalise_identity(kind, value) {
        Ok(normalised) => normalised,
        Err(message) => invalid_input(kind, &message),
    }
}

extension_sql_file!(
    "schema.sql",
    name = "risk_schema",
    requires = ["keys_schema", identity, current_account]
);

extension_sql!(
    "-- Security definer: only the application role (sql/bootstrap.sql) and the owner record.\n\
     REVOKE EXECUTE ON FUNCTION vigil.risk_score(jsonb, bigint) FROM PUBLIC;",
    name = "risk_score_settings",
    requires = [risk_score]
);
