//! Command line and environment: the one place the sidecar's settings come from.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use ipnet::IpNet;

/// Entries `--query-cache-entries` allows by default: 10,000 queries of
/// 384 floats, about 16 MB.
pub const DEFAULT_QUERY_CACHE_ENTRIES: usize = 10_000;

/// Texts `--query-batch` allows in one model call by default: past this the
/// model gains nothing per text (it pads every text to the longest).
pub const DEFAULT_QUERY_BATCH: usize = 32;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (printed on stdout).
    #[arg(long, env = "VIGIL_HTTP_ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// PostgreSQL connection URL, as the non-superuser application role.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,

    /// PostgreSQL connection URL of hot standbys, as the same role, for the
    /// reads: `/queryEmbeddings`, `/hybridSearch`, `/getEmbeddings` and the
    /// query embedders. Several hosts with `target_session_attrs=read-only`
    /// (and `load_balance_hosts=random` to spread them) take a standby that
    /// answers. A client's reads go to the primary until the standby has
    /// replayed its account's last write (docs/high-availability.md, "Reads
    /// from replicas"); unset, every request goes to `DATABASE_URL`.
    #[arg(long, env = "VIGIL_READ_DATABASE_URL", hide_env_values = true)]
    pub read_database_url: Option<String>,

    /// Most database connections the requests hold open; 0, the default, is
    /// three per core of this machine (give three times the database
    /// server's count when it runs elsewhere). More only queue in the
    /// server's scheduler, where requests waiting for the pool queue in
    /// order (docs/performance.md, "Vector database").
    #[arg(long, env = "VIGIL_POOL_SIZE", default_value_t = 0)]
    pool_size: usize,

    /// Largest request body of the JSON endpoints, in bytes; larger ones get 413.
    #[arg(long, env = "VIGIL_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Largest request body of `POST /storeEmbeddings` (up to 1,000 records of
    /// up to 100,000 characters each), in bytes; larger ones get 413.
    #[arg(long, env = "VIGIL_MAX_BATCH_BODY_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_batch_body_bytes: usize,

    /// Longest a request may take, in milliseconds, before it is answered 503.
    #[arg(long, env = "VIGIL_REQUEST_TIMEOUT_MS", default_value_t = 10_000)]
    pub request_timeout_ms: u64,

    /// Longest a `POST /storeEmbeddings` may take, in milliseconds: it embeds
    /// up to 1,000 records (about 40 s for 1,000 of 500 characters on 2 cores).
    #[arg(long, env = "VIGIL_BATCH_TIMEOUT_MS", default_value_t = 300_000)]
    pub batch_timeout_ms: u64,

    /// Query embeddings kept by the sidecar, so that a search for a query it
    /// has seen runs no model (about 1.6 kB each); 0 turns the cache off.
    #[arg(long, env = "VIGIL_QUERY_CACHE_ENTRIES",
          default_value_t = DEFAULT_QUERY_CACHE_ENTRIES)]
    pub query_cache_entries: usize,

    /// Most search queries embedded in one model call: the queries of searches
    /// in flight share a call, about half the model's cost each under load;
    /// 0 embeds each search's query on its own.
    #[arg(long, env = "VIGIL_QUERY_BATCH",
          default_value_t = DEFAULT_QUERY_BATCH)]
    pub query_batch: usize,

    /// Connections that embed search queries in batches, one batch each at a
    /// time (beside --pool-size), then run the batch's searches whose
    /// credentials passed a moment ago; 0, the default, is one per core of
    /// this machine (give the database server's count when it runs elsewhere).
    #[arg(long, env = "VIGIL_QUERY_EMBEDDERS", default_value_t = 0)]
    query_embedders: usize,

    /// Threads the model of each of those connections runs a batch on
    /// (`vigil.embed_threads` there).
    #[arg(long, env = "VIGIL_QUERY_EMBED_THREADS", default_value_t = 1)]
    pub query_embed_threads: usize,

    #[command(flatten)]
    pub tls: TlsArgs,

    #[command(flatten)]
    pub limits: LimitArgs,

    /// Proxies whose `X-Forwarded-For` is believed (CIDR, comma-separated). The
    /// client address is then the right-most one in that header not in this list.
    #[arg(long, env = "VIGIL_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<IpNet>,

    /// Browser origins allowed to call the API cross-origin (CORS), such as
    /// `http://localhost:3000`, comma-separated; empty: none.
    #[arg(long, env = "VIGIL_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,

    /// Memory, in MiB, that long vector requests may hold at once while
    /// their credentials are unchecked: a body over 64 KiB whose `userKey`,
    /// `account` and `dbName` come after its first 64 KiB (one that gives
    /// them first is checked there, before the rest is read). Past it such a
    /// body is answered 503 with Retry-After.
    #[arg(long, env = "VIGIL_UNAUTHENTICATED_BODY_MB", default_value_t = 64)]
    pub unauthenticated_body_mb: usize,

    /// Memory, in MiB, that identity assessments may take at once in the
    /// database's backends: as many run at once as this holds of the most one
    /// takes (a maximal image: see docs/identity.md, "Input safety"); the others wait
    /// their turn, holding no connection.
    #[arg(long, env = "VIGIL_IDENTITY_MEMORY_MB", default_value_t = 1024)]
    pub identity_memory_mb: u64,

    /// A token `GET /metrics` requires as `Authorization: Bearer <token>`;
    /// unset, the metrics are open to whoever reaches the port. Set it in
    /// the environment (or an env file readable by the owner only), not on
    /// the command line, where `ps` shows it.
    #[arg(long, env = "VIGIL_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,

    /// Seconds between refits of the risk model on the feedback labels
    /// (`vigil.risk_refit()`); 0 turns the schedule off.
    #[arg(long, env = "VIGIL_RISK_REFIT_SECONDS", default_value_t = 3600)]
    pub risk_refit_seconds: u64,

    /// Threads that serve requests; 0, the default, is one per core of this
    /// machine. Fewer wake each other less: one on 2 cores served searches
    /// a few per cent faster but risk assessments, whose own work here is a
    /// larger share, 12% slower (docs/reference/configuration.md, `VIGIL_WORKER_THREADS`).
    #[arg(long, env = "VIGIL_WORKER_THREADS", default_value_t = 0)]
    worker_threads: usize,
}

/// HTTPS: both files, or neither for plain HTTP (behind a TLS-terminating proxy).
#[derive(Args, Debug, Clone)]
pub struct TlsArgs {
    /// PEM certificate chain; serve HTTPS with it.
    #[arg(long, env = "VIGIL_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key of the certificate.
    #[arg(long, env = "VIGIL_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// Token buckets: per key (a key's own limits in the database take precedence),
/// and for failed authentication per client address; and how long a key that
/// passed is believed without asking the database again.
#[derive(Args, Debug, Clone)]
pub struct LimitArgs {
    /// Requests per second each key may sustain.
    #[arg(long, env = "VIGIL_RATE_PER_SECOND", default_value_t = 100.0)]
    pub rate_per_second: f64,

    /// Requests a key may make at once above its sustained rate.
    #[arg(long, env = "VIGIL_RATE_BURST", default_value_t = 200)]
    pub rate_burst: u32,

    /// Failed authentications one client address may make per minute, sustained.
    #[arg(long, env = "VIGIL_AUTH_FAILURES_PER_MINUTE", default_value_t = 10.0)]
    pub auth_failures_per_minute: f64,

    /// Failed authentications one client address may make in a burst.
    #[arg(long, env = "VIGIL_AUTH_FAILURE_BURST", default_value_t = 20)]
    pub auth_failure_burst: u32,

    /// Milliseconds an API key that passed its check is believed for the same
    /// scope and client address before the database is asked again; a revoked
    /// or expired key is refused at most this much later. 0: ask every time.
    #[arg(long, env = "VIGIL_AUTH_CACHE_MS", default_value_t = 1000)]
    pub auth_cache_ms: u64,
}

impl ServeArgs {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    pub fn batch_timeout(&self) -> Duration {
        Duration::from_millis(self.batch_timeout_ms)
    }

    /// `--pool-size`, 0 resolved to three per core of this machine.
    pub fn pool_size(&self) -> usize {
        match self.pool_size {
            0 => 3 * cores(),
            n => n,
        }
    }

    /// `--worker-threads`, 0 resolved to this machine's cores.
    pub fn worker_threads(&self) -> usize {
        match self.worker_threads {
            0 => cores(),
            n => n,
        }
    }

    /// `--query-embedders`, 0 resolved to this machine's cores.
    pub fn query_embedders(&self) -> usize {
        match self.query_embedders {
            0 => cores(),
            n => n,
        }
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
