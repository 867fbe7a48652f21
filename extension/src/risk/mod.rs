//! Transaction risk: `vigil.risk_score(jsonb)`, feedback and the blocklist.
//!
//! The engine (input forms, signals, score, levels) is the pure `vigil-risk`
//! crate. This module is its Postgres edge: it reads what only the database
//! knows (velocity, reuse, customer history, hard rules) with indexed queries,
//! looks up the IP's country, and records the assessment in the same
//! transaction that made it. The tables and the SQL-only functions (feedback,
//! blocklist) are in `schema.sql`.

mod geo;
mod history;
#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use pgrx::prelude::*;

use crate::pg::invalid_input;
use crate::pg::jsonb::Jsonb;

pub use geo::register_settings;

/// Assesses a transaction (form A or B of SPEC, or a mix) and records it.
///
/// Runs as the extension's owner, so the application role needs no access to
/// the history tables; `api_key_id` attributes the record to the sidecar's caller.
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
    let history = history::load(&identities);
    let ip_country = request.ip_address.and_then(geo::country);
    let mut assessment = vigil_risk::assess(&request, &history, ip_country);
    // The features go to the record only; the response does not carry them.
    let features = std::mem::take(&mut assessment.features);
    let id = history::record(api_key_id, &request, &identities, &assessment, features);
    Jsonb(assessment.response_json(&id.to_string(), &request))
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
    requires = ["keys_schema", identity]
);

extension_sql!(
    "-- Security definer: only the application role (sql/bootstrap.sql) and the owner record.\n\
     REVOKE EXECUTE ON FUNCTION vigil.risk_score(jsonb, bigint) FROM PUBLIC;",
    name = "risk_score_settings",
    requires = [risk_score]
);
