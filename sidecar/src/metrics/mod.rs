//! Prometheus metrics, served at `GET /metrics`.
//!
//! Built on prometheus-client, the Prometheus project's own Rust client,
//! rather than the `metrics` facade and its exporter: its label sets are typed
//! values looked up by reference, so counting a request allocates nothing once
//! its series exists (the facade's macros build a key with a label vector on
//! every call), and it needs no process-wide recorder.
//!
//! Labels are bounded: the route is the router's pattern (`MatchedPath`,
//! never the raw path, which could carry an id), methods and results are
//! fixed sets. Keys and bodies never appear.

pub mod layer;
pub mod scrape;

use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::{header, HeaderMap, StatusCode};
use deadpool_postgres::Status;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// Request latency buckets in seconds: 1 ms to 10 s (the default request timeout).
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];
/// Pool wait buckets: mostly zero, then up to the request timeout.
const WAIT_BUCKETS: [f64; 9] = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 1.0, 10.0];

/// The pool's figures, read from deadpool at each scrape, in `Metrics::pool` order.
const POOL_GAUGES: [(&str, &str); 4] = [
    (
        "vigil_db_pool_max_size",
        "Most database connections the pool may hold",
    ),
    ("vigil_db_pool_size", "Database connections open now"),
    (
        "vigil_db_pool_available",
        "Open database connections idle now",
    ),
    (
        "vigil_db_pool_waiting",
        "Requests waiting for a database connection now",
    ),
];

/// The standbys' pool (`--read-database-url`), as [`POOL_GAUGES`]; 0 when none is set.
const READ_POOL_GAUGES: [(&str, &str); 4] = [
    (
        "vigil_db_read_pool_max_size",
        "Most connections the pool of the standbys (VIGIL_READ_DATABASE_URL) may hold",
    ),
    (
        "vigil_db_read_pool_size",
        "Connections to the standbys open now",
    ),
    (
        "vigil_db_read_pool_available",
        "Open connections to the standbys idle now",
    ),
    (
        "vigil_db_read_pool_waiting",
        "Reads waiting for a connection to a standby now",
    ),
];

/// This process's memory, read from `/proc/self/status` at each scrape
/// (`VmRSS`, `VmHWM`), in `Metrics::memory` order.
const MEMORY_GAUGES: [(&str, &str, &str); 2] = [
    (
        "vigil_process_resident_bytes",
        "VmRSS:",
        "Memory of the sidecar resident now",
    ),
    (
        "vigil_process_peak_resident_bytes",
        "VmHWM:",
        "Most memory the sidecar has had resident since it started",
    ),
];

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabel, Histogram, fn() -> Histogram>,
    /// As [`POOL_GAUGES`] names them.
    pool: [Gauge; 4],
    /// As [`READ_POOL_GAUGES`] names them.
    read_pool: [Gauge; 4],
    /// Reads (searches, record listings) by the server that answered and why.
    reads: Family<ReadLabels, Counter>,
    pool_wait: Histogram,
    rejections: Family<CodeLabel, Counter>,
    assessments: Family<ResultLabel, Counter>,
    identity_assessments: Family<ResultLabel, Counter>,
    /// Searches whose query embedding came from the sidecar's cache, and
    /// those that ran the model.
    query_cache_hits: Counter,
    query_cache_misses: Counter,
    /// Model calls that embedded search queries (batches of misses).
    query_batches: Counter,
    /// How long a search waited for its query's embedding.
    query_embedding_wait: Histogram,
    /// As [`MEMORY_GAUGES`] names them.
    memory: [Gauge; 2],
    /// The SHA-256 of the bearer token a scrape must give, if one is set
    /// (`--metrics-token`).
    token: Option<[u8; 32]>,
}

/// The route pattern a request matched; "unmatched" for the 404 fallback.
#[derive(Clone, Debug)]
struct Route(Option<MatchedPath>);

impl Route {
    fn as_str(&self) -> &str {
        self.0.as_ref().map_or("unmatched", MatchedPath::as_str)
    }
}

impl PartialEq for Route {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Route {}

impl std::hash::Hash for Route {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl EncodeLabelValue for Route {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Route,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: Route,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadLabels {
    server: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

fn count_result(family: &Family<ResultLabel, Counter>, result: Option<&str>) {
    let result = match result {
        Some("Passed") => "Passed",
        Some("Review") => "Review",
        Some("Failed") => "Failed",
        _ => "other",
    };
    family.get_or_create(&ResultLabel { result }).inc();
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

impl Metrics {
    pub fn new() -> Metrics {
        let m = Metrics {
            registry: Registry::default(),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            pool: Default::default(),
            read_pool: Default::default(),
            reads: Family::default(),
            pool_wait: Histogram::new(WAIT_BUCKETS),
            rejections: Family::default(),
            assessments: Family::default(),
            identity_assessments: Family::default(),
            query_cache_hits: Counter::default(),
            query_cache_misses: Counter::default(),
            query_batches: Counter::default(),
            query_embedding_wait: Histogram::new(LATENCY_BUCKETS),
            memory: Default::default(),
            token: None,
        };
        m.registered()
    }

    /// These metrics, served only to scrapes that give `token` as
    /// `Authorization: Bearer <token>` (any scrape when None).
    pub fn requiring_token(mut self, token: Option<&str>) -> Metrics {
        self.token = token.map(|t| Sha256::digest(t.as_bytes()).into());
        self
    }

    /// 401 unless the scrape gives the token (when one is set). Digests are
    /// compared, so the time taken says nothing about the token.
    fn admit(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(want) = self.token else {
            return Ok(());
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let refused = |code, message| {
            Err(ApiError::new(StatusCode::UNAUTHORIZED, code, message).with_field("authorization"))
        };
        match given {
            None => refused(
                "missing_credentials",
                "this server's metrics need its token: Authorization: Bearer <token>",
            ),
            Some(token) if <[u8; 32]>::from(Sha256::digest(token.as_bytes())) == want => Ok(()),
            Some(_) => refused("unknown_key", "the metrics token is not recognised"),
        }
    }

    fn registered(mut self) -> Metrics {
        let r = &mut self.registry;
        r.register(
            "vigil_http_requests",
            "HTTP requests answered, by route pattern, method and status",
            self.requests.clone(),
        );
        r.register(
            "vigil_http_request_duration_seconds",
            "Time to answer an HTTP request, by route pattern",
            self.latency.clone(),
        );
        for (gauge, (name, help)) in self.pool.iter().zip(POOL_GAUGES) {
            r.register(name, help, gauge.clone());
        }
        for (gauge, (name, help)) in self.read_pool.iter().zip(READ_POOL_GAUGES) {
            r.register(name, help, gauge.clone());
        }
        r.register(
            "vigil_db_reads",
            "Reads (searches, record listings) answered, by server (replica, primary) and why there \
             (caught_up; behind: the standby had not replayed the account's last write; \
             unreachable: no standby answers or none is set; replica_failed)",
            self.reads.clone(),
        );
        for (gauge, (name, _, help)) in self.memory.iter().zip(MEMORY_GAUGES) {
            r.register(name, help, gauge.clone());
        }
        r.register(
            "vigil_db_pool_wait_seconds",
            "Time a request waited for a database connection",
            self.pool_wait.clone(),
        );
        r.register(
            "vigil_rate_limit_rejections",
            "Requests refused with 429, by error code (rate_limited, too_many_failures)",
            self.rejections.clone(),
        );
        r.register(
            "vigil_assessments",
            "Transaction assessments answered, by Result",
            self.assessments.clone(),
        );
        r.register(
            "vigil_identity_assessments",
            "Identity-document assessments answered, by Result",
            self.identity_assessments.clone(),
        );
        r.register(
            "vigil_query_cache_hits",
            "Searches whose query embedding the sidecar had kept (no model run)",
            self.query_cache_hits.clone(),
        );
        r.register(
            "vigil_query_cache_misses",
            "Searches whose query embedding was computed (and then kept)",
            self.query_cache_misses.clone(),
        );
        r.register(
            "vigil_query_batches",
            "Model calls that embedded search queries; the mean batch is the misses over these",
            self.query_batches.clone(),
        );
        r.register(
            "vigil_query_embedding_wait_seconds",
            "Time a search waited for the sidecar to embed its query: the batch queue and the model call",
            self.query_embedding_wait.clone(),
        );
        self
    }

    /// Time spent in `AppState::db` waiting for a connection.
    pub fn pool_waited(&self, wait: Duration) {
        self.pool_wait.observe(wait.as_secs_f64());
    }

    /// A read answered by a standby or the primary, and why there.
    pub fn read_served(&self, (server, reason): (&'static str, &'static str)) {
        self.reads
            .get_or_create(&ReadLabels { server, reason })
            .inc();
    }

    /// A transaction assessment answered with this `Result` field.
    pub fn assessed(&self, result: Option<&str>) {
        count_result(&self.assessments, result);
    }

    /// An identity assessment answered with this `Result` field.
    pub fn identity_assessed(&self, result: Option<&str>) {
        count_result(&self.identity_assessments, result);
    }

    /// A search's query embedding: found in the cache, or computed.
    pub fn query_cache(&self, hit: bool) {
        if hit {
            self.query_cache_hits.inc();
        } else {
            self.query_cache_misses.inc();
        }
    }

    /// One model call for a batch of search queries.
    pub fn query_batch_embedded(&self) {
        self.query_batches.inc();
    }

    /// A search's query embedded for it, after `wait`. Under load this is
    /// most of a new query's latency (docs/performance.md, "Vector database"),
    /// so it is what to watch when searches slow down.
    pub fn query_embedding_waited(&self, wait: Duration) {
        self.query_embedding_wait.observe(wait.as_secs_f64());
    }

    fn answered(&self, route: Route, method: &'static str, status: StatusCode, took: Duration) {
        self.latency
            .get_or_create(&RouteLabel {
                route: route.clone(),
            })
            .observe(took.as_secs_f64());
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status: status.as_u16(),
            })
            .inc();
    }

    fn rejected(&self, code: &'static str) {
        self.rejections.get_or_create(&CodeLabel { code }).inc();
    }

    /// The text exposition, with the pool's figures as of now.
    fn render(&self, pool: Status, read_pool: Option<Status>) -> Result<String, std::fmt::Error> {
        let figures = |pool: Status| [pool.max_size, pool.size, pool.available, pool.waiting];
        for (gauge, n) in self.pool.iter().zip(figures(pool)) {
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let read = read_pool.map_or([0; 4], figures);
        for (gauge, n) in self.read_pool.iter().zip(read) {
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        for (gauge, (_, field, _)) in self.memory.iter().zip(MEMORY_GAUGES) {
            gauge.set(kilobytes(&status, field).saturating_mul(1024));
        }
        let mut text = String::with_capacity(8 * 1024);
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// A `/proc/self/status` line's figure, such as `VmRSS:   1234 kB`; 0 if absent.
fn kilobytes(status: &str, field: &str) -> i64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use deadpool_postgres::Status;

    fn pool() -> Status {
        Status {
            max_size: 16,
            size: 3,
            available: 2,
            waiting: 0,
        }
    }

    #[test]
    fn the_exposition_holds_every_family_with_bounded_labels() {
        let m = Metrics::new();
        m.answered(
            Route(None),
            "GET",
            StatusCode::NOT_FOUND,
            Duration::from_millis(3),
        );
        m.rejected("too_many_failures");
        m.assessed(Some("Review"));
        m.assessed(Some("anything else"));
        m.pool_waited(Duration::from_micros(50));
        m.read_served(("replica", "caught_up"));
        let text = m.render(pool(), Some(pool())).unwrap();
        for line in [
            r#"vigil_http_requests_total{route="unmatched",method="GET",status="404"} 1"#,
            r#"vigil_http_request_duration_seconds_count{route="unmatched"} 1"#,
            r#"vigil_rate_limit_rejections_total{code="too_many_failures"} 1"#,
            r#"vigil_assessments_total{result="Review"} 1"#,
            r#"vigil_assessments_total{result="other"} 1"#,
            "vigil_db_pool_max_size 16",
            "vigil_db_pool_size 3",
            "vigil_db_pool_available 2",
            "vigil_db_pool_waiting 0",
            "vigil_db_pool_wait_seconds_count 1",
            "vigil_db_read_pool_size 3",
            r#"vigil_db_reads_total{server="replica",reason="caught_up"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
        }
        // This process's memory, from /proc: some, and a peak at least as high.
        let figure = |name: &str| -> i64 {
            let line = text.lines().find(|l| l.starts_with(&format!("{name} ")));
            line.and_then(|l| l.split(' ').nth(1)?.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        };
        let (now, peak) = (
            figure("vigil_process_resident_bytes"),
            figure("vigil_process_peak_resident_bytes"),
        );
        assert!(now > 1 << 20 && peak >= now, "{now} {peak}");
    }

    #[test]
    fn a_token_set_is_required_from_every_scrape() {
        let open = Metrics::new();
        assert!(open.admit(&HeaderMap::new()).is_ok());
        let closed = Metrics::new().requiring_token(Some("s3cret"));
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            closed.admit(&headers).map_err(|e| e.code)
        };
        assert_eq!(
            closed.admit(&HeaderMap::new()).unwrap_err().code,
            "missing_credentials"
        );
        assert_eq!(with("Bearer s3cret"), Ok(()));
        assert_eq!(with("Bearer s3cre"), Err("unknown_key"));
        assert_eq!(with("s3cret"), Err("missing_credentials"));
    }
}
