//! Helpers the capabilities' `#[pg_test]`s share.

use pgrx::prelude::*;
use serde_json::Value;

/// The one `bigint` `sql` selects.
pub fn count(sql: &str) -> i64 {
    Spi::get_one::<i64>(sql)
        .expect("the query runs")
        .expect("a count")
}

/// The `code` of each of an assessment's `reasons`, in order.
pub fn reason_codes(assessment: &Value) -> Vec<String> {
    assessment["reasons"]
        .as_array()
        .expect("reasons is an array")
        .iter()
        .map(|r| r["code"].as_str().expect("a code").to_owned())
        .collect()
}

/// The ERROR message `sql` raises, run in a subtransaction that is rolled
/// back (as psql would see it), or "" when it succeeds.
pub fn error_of(sql: &str) -> String {
    // SAFETY: the usual PL pattern around an internal subtransaction.
    let (context, owner) = unsafe { (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner) };
    let restore = move || unsafe {
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
    };
    unsafe { pg_sys::BeginInternalSubTransaction(std::ptr::null()) };
    restore();
    PgTryBuilder::new(|| {
        Spi::run(sql).unwrap();
        unsafe { pg_sys::ReleaseCurrentSubTransaction() };
        restore();
        String::new()
    })
    .catch_others(|e| {
        unsafe { pg_sys::RollbackAndReleaseCurrentSubTransaction() };
        restore();
        match e {
            pg_sys::panic::CaughtError::PostgresError(r) => r.message().to_string(),
            other => format!("{other:?}"),
        }
    })
    .execute()
}
