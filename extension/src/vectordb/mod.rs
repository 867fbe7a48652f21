//! Vector databases: named collections of records per account.
//!
//! The SQL lives in `schema.sql`; every function there runs as its caller, so the
//! row-level security of the keys schema decides which account's data it sees.

#[cfg(any(test, feature = "pg_test"))]
mod pg_tests;

use pgrx::prelude::*;

extension_sql_file!(
    "schema.sql",
    name = "vectordb_schema",
    requires = ["keys_schema"]
);
