//! Harness for the end-to-end tests: a throwaway PostgreSQL cluster with the
//! installed `vigil` extension (through `scripts/pg-cluster.sh`, the same script
//! `make run` uses) and the release `vigil-sidecar` binary in front of it, each
//! on a free port, torn down when the test process exits.
//!
//! Needs the extension installed (`install_extension` in scripts/lib.sh) and
//! `cargo build --release -p vigil-sidecar` first; `make test` does both.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};

mod cluster;
pub mod load;
pub use cluster::{wait_until, Cluster, Writers};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_owned()
}

/// Runs one named step of a long scenario test: prints its name to stderr as
/// it starts and, when `body` panics (an assertion failed, a wait timed out),
/// panics again with the step's name before the original message, so the
/// test's failure says which step failed. Catching and panicking again,
/// rather than a guard printing the name on drop, puts the name in the panic
/// message itself: the last message printed and the payload a caller or
/// `#[should_panic(expected)]` sees. `#[track_caller]` points that panic at
/// the step's call in the test; the original panic's own location is printed
/// just before it.
#[track_caller]
pub fn step<T>(name: &str, body: impl FnOnce() -> T) -> T {
    eprintln!("step: {name}");
    // The test fails as soon as the body has panicked: no state it broke is
    // used again, so asserting unwind safety is sound.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("(a panic whose payload is not a message)");
            panic!("step `{name}` failed: {message}")
        }
    }
}

fn sidecar_binary() -> PathBuf {
    std::env::var_os("VIGIL_SIDECAR_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/release/vigil-sidecar"))
}

/// Runs `psql` (a command that starts psql) with `script` on its stdin, so
/// that statements run one by one and every result is printed, as typed;
/// returns (success, stdout trimmed, stderr).
pub fn feed_script(mut psql: Command, script: &str) -> (bool, String, String) {
    let mut child = psql
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("psql runs");
    // psql stops reading at an error (ON_ERROR_STOP): the write then fails
    // with a broken pipe, and what psql said is the failure to report.
    let written = child.stdin.take().unwrap().write_all(script.as_bytes());
    let out = child.wait_with_output().expect("psql ends");
    let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if let Err(e) = &written {
        stderr.push_str(&format!("\n(psql stopped reading the script: {e})"));
    }
    (
        out.status.success() && written.is_ok(),
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned(),
        stderr,
    )
}

/// The search corpus: 3,000 real Debian package descriptions
/// (`bench/vectordb/eval-corpus.jsonl.gz`), each `{name, title, content}`.
pub fn eval_corpus() -> Vec<serde_json::Value> {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(workspace_root().join("bench/vectordb/eval-corpus.jsonl.gz"))
        .output()
        .expect("gzip runs");
    assert!(out.status.success());
    let docs: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(docs.len(), 3000);
    docs
}

/// A running cluster and a sidecar in front of it.
#[derive(Clone)]
pub struct Env {
    /// `http://127.0.0.1:PORT` (or `https://`)
    pub base: String,
    /// As the application role `vigil_app`.
    pub database_url: String,
    /// As the admin role `vigil_admin`.
    pub admin_url: String,
    pub cluster_dir: PathBuf,
}

/// A transaction the superuser holds open (its statements ran, e.g. a
/// `LOCK TABLE`), so a test decides when the database stops waiting on it,
/// by event rather than by time. Rolled back when dropped.
pub struct OpenTransaction {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
}

impl OpenTransaction {
    /// Commits the transaction and waits for psql to end.
    pub fn commit(mut self) {
        let mut stdin = self.stdin.take().expect("open");
        stdin.write_all(b"COMMIT;\n").expect("psql reads");
        drop(stdin);
        let status = self.child.wait().expect("psql ends");
        assert!(status.success(), "the transaction did not commit");
    }
}

impl Drop for OpenTransaction {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"ROLLBACK;\n");
        }
        let _ = self.child.wait();
    }
}

/// How to start a sidecar beyond the defaults.
#[derive(Default)]
pub struct SidecarOptions<'a> {
    pub args: &'a [&'a str],
    pub env: &'a [(&'a str, &'a str)],
    /// Where its stderr (the log) goes; inherited when None.
    pub log: Option<&'a Path>,
}

impl Env {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// `POST /assess-id` with `bytes` as the image, under API key `key`: the
    /// answer, which must be a 200.
    pub fn assess_id(&self, key: &str, bytes: Vec<u8>) -> serde_json::Value {
        use reqwest::blocking::multipart::{Form, Part};
        let form = Form::new().part("image", Part::bytes(bytes).file_name("upload"));
        let response = reqwest::blocking::Client::new()
            .post(self.url("/assess-id"))
            .header("x-api-key", key)
            .multipart(form)
            .send()
            .expect("request sent");
        let status = response.status().as_u16();
        let body = response.text().expect("a body");
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).expect("JSON")
    }

    /// Runs SQL as the cluster's superuser and returns psql's unaligned output.
    pub fn psql(&self, sql: &str) -> String {
        self.try_psql(sql)
            .unwrap_or_else(|e| panic!("psql failed: {e}"))
    }

    /// Runs SQL as the cluster's superuser: psql's unaligned output, or its
    /// error messages when it fails.
    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new(workspace_root().join("scripts/pg-cluster.sh"))
            .args(["psql", self.cluster_dir.to_str().unwrap(), "-At", "-c", sql])
            .output()
            .expect("psql runs");
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).unwrap().trim_end().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// The shell command that runs `sql` as the cluster's superuser in a
    /// session of its own: for a psql script's `\!`, to act between two of
    /// its statements.
    pub fn psql_command(&self, sql: &str) -> String {
        let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        format!(
            "{} psql {} -At -c {}",
            quote(
                workspace_root()
                    .join("scripts/pg-cluster.sh")
                    .to_str()
                    .unwrap()
            ),
            quote(self.cluster_dir.to_str().unwrap()),
            quote(sql)
        )
    }

    /// Runs the repository's SQL file `path` (such as `sql/analysis.sql`) as
    /// the superuser, stopping at the first error; psql's aligned-free output
    /// with `|` between fields.
    pub fn psql_file(&self, path: &str) -> String {
        let out = Command::new(workspace_root().join("scripts/pg-cluster.sh"))
            .args(["psql", self.cluster_dir.to_str().unwrap()])
            .args(["-A", "-F", "|", "-v", "ON_ERROR_STOP=1", "-f"])
            .arg(workspace_root().join(path))
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 output")
    }

    /// Runs a psql script over TCP as the application role, as the sidecar
    /// would. Returns (success, stdout, stderr).
    pub fn psql_as_app(&self, script: &str) -> (bool, String, String) {
        let mut psql = Command::new("/usr/lib/postgresql/15/bin/psql");
        psql.args([
            self.database_url.as_str(),
            "-X",
            "-q",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
        ]);
        feed_script(psql, script)
    }

    /// Runs `vigil-sidecar ARGS` (an admin command) as `vigil_admin`.
    pub fn admin(&self, args: &[&str]) -> Output {
        Command::new(sidecar_binary())
            .args(args)
            .env("VIGIL_ADMIN_DATABASE_URL", &self.admin_url)
            .output()
            .expect("vigil-sidecar runs")
    }

    /// Runs an admin command that must succeed; returns its stdout, trimmed.
    /// An API key of `scopes` in an account of its own, made for it
    /// (`<name>-<n>@tenants.test`): what one tenant of a shared installation
    /// holds. Returns (key, account).
    pub fn tenant_key(&self, name: &str, scopes: &[&str]) -> (String, String) {
        self.tenant_key_with(name, scopes, &[])
    }

    /// [`Env::tenant_key`] with more arguments to `keys create` (a rate limit).
    pub fn tenant_key_with(&self, name: &str, scopes: &[&str], more: &[&str]) -> (String, String) {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let slug: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let account = format!("{slug}-{}-{n}@tenants.test", std::process::id());
        self.admin_ok(&["accounts", "create", &account]);
        let mut args = vec!["keys", "create", "--name", name, "--account", &account];
        for scope in scopes {
            args.extend(["--scope", scope]);
        }
        args.extend(more);
        (self.admin_ok(&args), account)
    }

    pub fn admin_ok(&self, args: &[&str]) -> String {
        let out = self.admin(args);
        assert!(
            out.status.success(),
            "vigil-sidecar {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// Begins a transaction as the superuser, runs `statements` in it, and
    /// returns once they have run, the transaction still open.
    pub fn open_transaction(&self, statements: &str) -> OpenTransaction {
        let mut child = Command::new(workspace_root().join("scripts/pg-cluster.sh"))
            .args(["psql", self.cluster_dir.to_str().unwrap()])
            .args(["-At", "-v", "ON_ERROR_STOP=1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("psql runs");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "BEGIN;\n{statements}\nSELECT 'open';").expect("psql reads");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while line.trim() != "open" {
            line.clear();
            let read = stdout.read_line(&mut line).expect("psql answers");
            assert!(
                read > 0,
                "psql ended before the transaction was open: {statements}"
            );
        }
        OpenTransaction {
            child,
            stdin: Some(stdin),
        }
    }

    /// The value of the sample `name` (without labels) in the sidecar's `/metrics`.
    pub fn metric(&self, name: &str) -> f64 {
        let text = reqwest::blocking::get(self.url("/metrics"))
            .and_then(|r| r.text())
            .expect("metrics scraped");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in /metrics:\n{text}"))
    }

    /// How many of the application role's backends wait for a lock now.
    pub fn backends_waiting_for_locks(&self) -> usize {
        self.psql(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE usename = 'vigil_app' AND wait_event_type = 'Lock'",
        )
        .parse()
        .unwrap()
    }

    /// Another sidecar on this cluster, running until the test process exits.
    pub fn with_sidecar(&self, options: SidecarOptions) -> Env {
        let sidecar = Sidecar::start(&self.database_url, options);
        let env = Env {
            base: sidecar.base.clone(),
            ..self.clone()
        };
        RUNNING.lock().unwrap().sidecars.push(sidecar);
        env
    }
}

/// A sidecar process the caller owns: stopped by [`Sidecar::stop`] or on drop.
pub struct Sidecar {
    pub base: String,
    child: Child,
    /// Kept open: a closed pipe would fail the sidecar's later writes.
    _stdout: BufReader<ChildStdout>,
}

impl Sidecar {
    pub fn start(database_url: &str, options: SidecarOptions) -> Sidecar {
        let stderr = match options.log {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("log file")),
            None => Stdio::inherit(),
        };
        let binary = sidecar_binary();
        let mut child = Command::new(&binary)
            .args(["serve", "--listen", "127.0.0.1:0"])
            // As `make run` passes it: never on the command line.
            .env("DATABASE_URL", database_url)
            .args(options.args)
            .envs(options.env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first_line = String::new();
        stdout.read_line(&mut first_line).expect("sidecar stdout");
        let base = first_line
            .trim()
            .strip_prefix("vigil-sidecar listening on ")
            .unwrap_or_else(|| panic!("sidecar did not start: {first_line:?}"))
            .to_owned();
        Sidecar {
            base,
            child,
            _stdout: stdout,
        }
    }

    /// SIGTERM, then waits: everything it logged is written when this returns.
    pub fn stop(mut self) {
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What must be cleaned up at exit.
struct Running {
    sidecars: Vec<Sidecar>,
    clusters: Vec<PathBuf>,
}

static RUNNING: Mutex<Running> = Mutex::new(Running {
    sidecars: Vec::new(),
    clusters: Vec::new(),
});

extern "C" fn teardown() {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    running.sidecars.clear();
    for dir in running.clusters.drain(..) {
        let _ = Command::new(workspace_root().join("scripts/pg-cluster.sh"))
            .args(["remove", dir.to_str().unwrap()])
            .status();
    }
}

/// Removes `dir`'s cluster when the test process exits, whatever happens to the
/// test that made it.
fn remove_at_exit(dir: &Path) {
    static ATEXIT: OnceLock<()> = OnceLock::new();
    // SAFETY: registering a plain extern "C" fn.
    ATEXIT.get_or_init(|| unsafe {
        libc::atexit(teardown);
    });
    RUNNING.lock().unwrap().clusters.push(dir.to_owned());
}

/// Undoes [`remove_at_exit`] once the cluster has been removed.
fn removed(dir: &Path) {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    running.clusters.retain(|d| d != dir);
}

/// A port nobody listens on now. Postgres fails loudly if it is taken meanwhile.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Starts a cluster and a sidecar with extra sidecar flags.
pub fn start(sidecar_args: &[&str]) -> Env {
    let cluster_dir =
        std::env::temp_dir().join(format!("vigil-e2e-{}-{}", std::process::id(), free_port()));
    remove_at_exit(&cluster_dir);
    // A free port can be taken between free_port() and the server's bind
    // (tests start servers and sidecars at once), so a start that fails is
    // tried again on another port: pg-cluster.sh starts the cluster it made.
    let up = || {
        Command::new(workspace_root().join("scripts/pg-cluster.sh"))
            .args([
                "up",
                cluster_dir.to_str().unwrap(),
                &free_port().to_string(),
            ])
            .stderr(Stdio::inherit())
            .output()
            .expect("pg-cluster.sh runs")
    };
    let out = (1..3).fold(up(), |out, _| if out.status.success() { out } else { up() });
    if !out.status.success() {
        let log = std::fs::read_to_string(cluster_dir.join("server.log")).unwrap_or_default();
        panic!("cluster did not start; its server log:\n{log}");
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    let printed = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name).map(str::to_owned))
            .unwrap_or_else(|| panic!("pg-cluster.sh printed no {name}"))
    };
    let cluster = Env {
        base: String::new(),
        database_url: printed("DATABASE_URL="),
        admin_url: printed("ADMIN_DATABASE_URL="),
        cluster_dir,
    };
    cluster.with_sidecar(SidecarOptions {
        args: sidecar_args,
        ..Default::default()
    })
}

/// One environment shared by the tests of a test binary, with default flags.
pub fn shared() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| start(&[]))
}

/// Whether `VIGIL_TEST_OPT_OUT` (docs/getting-started.md) names `group`: a
/// group of tests whose dependency this machine cannot have, which then says
/// it was opted out instead of failing. `make test` lists the groups.
pub fn opted_out(group: &str) -> bool {
    std::env::var("VIGIL_TEST_OPT_OUT").is_ok_and(|v| v.split([' ', ',']).any(|g| g == group))
}

/// A maximal upload: 8000x5000 pixels of 8-bit RGBA (160 MB decoded, the
/// most the extension decodes), in blocks of one colour, so the PNG is small.
pub fn maximal_png() -> Vec<u8> {
    let image = image::RgbaImage::from_fn(8000, 5000, |x, y| {
        image::Rgba([(x / 500 * 16) as u8, (y / 500 * 24) as u8, 128, 255])
    });
    let mut png = Vec::new();
    image::DynamicImage::ImageRgba8(image)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}

#[cfg(test)]
mod tests {
    use super::step;

    /// The message a panic carried, as the test harness would print it.
    fn message(payload: Box<dyn std::any::Any + Send>) -> String {
        *payload.downcast::<String>().expect("a String message")
    }

    #[test]
    fn a_passing_step_returns_what_its_body_returns() {
        assert_eq!(step("adds", || 2 + 2), 4);
    }

    #[test]
    fn a_failing_step_is_named_before_the_failure() {
        let failed = std::panic::catch_unwind(|| {
            step("kill the primary", || {
                assert_eq!(1 + 1, 3, "the arithmetic");
            })
        });
        let message = message(failed.expect_err("the step panicked"));
        assert!(
            message.starts_with("step `kill the primary` failed: "),
            "{message}"
        );
        assert!(message.contains("the arithmetic"), "{message}");
    }

    #[test]
    fn a_step_failing_with_a_static_message_or_another_payload_is_named() {
        let failed = std::panic::catch_unwind(|| step("plain", || panic!("no format")));
        assert_eq!(
            message(failed.unwrap_err()),
            "step `plain` failed: no format"
        );
        let failed = std::panic::catch_unwind(|| step("odd", || std::panic::panic_any(7)));
        assert_eq!(
            message(failed.unwrap_err()),
            "step `odd` failed: (a panic whose payload is not a message)"
        );
    }
}
