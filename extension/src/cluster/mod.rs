//! Scaling out on Citus: `vigil.distribute()` spreads the vector databases
//! over a cluster's workers by account (issue 47, docs/scaling-out.md). All
//! SQL, in `schema.sql`; the vector functions themselves need nothing here
//! (vectordb/sql/ names the account in every statement, which routes
//! it, and its trigger writes the shards beside the one it fires on).

use pgrx::prelude::*;

extension_sql_file!(
    "schema.sql",
    name = "cluster_schema",
    requires = ["vectordb_schema"]
);
