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
