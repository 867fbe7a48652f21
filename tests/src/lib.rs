//! Harness for the end-to-end tests: a throwaway PostgreSQL cluster with the
//! installed `vigil` extension (through `scripts/pg-cluster.sh`, the same script
//! `make run` uses) and the release `vigil-sidecar` binary in front of it, each
//! on a free port, torn down when the test process exits.
//!
//! Needs `cargo pgrx install --release` and `cargo build --release -p
//! vigil-sidecar` first; `make test` does both.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_owned()
}

/// A running cluster and sidecar.
pub struct Env {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub database_url: String,
    pub cluster_dir: PathBuf,
}

impl Env {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Runs SQL as the cluster's superuser and returns psql's unaligned output.
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(workspace_root().join("scripts/pg-cluster.sh"))
            .args(["psql", self.cluster_dir.to_str().unwrap(), "-At", "-c", sql])
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
    }
}

/// What must be cleaned up at exit.
struct Running {
    cluster_dir: PathBuf,
    sidecar: Child,
    /// Kept open: a closed pipe would fail the sidecar's later writes.
    _stdout: BufReader<ChildStdout>,
}

static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());

extern "C" fn teardown() {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    for r in running.iter_mut() {
        let _ = r.sidecar.kill();
        let _ = r.sidecar.wait();
        let _ = Command::new(workspace_root().join("scripts/pg-cluster.sh"))
            .args(["remove", r.cluster_dir.to_str().unwrap()])
            .status();
    }
}

/// A port nobody listens on now. Postgres fails loudly if it is taken meanwhile.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Starts a cluster and a sidecar with extra sidecar flags.
pub fn start(sidecar_args: &[&str]) -> Env {
    let cluster_dir =
        std::env::temp_dir().join(format!("vigil-e2e-{}-{}", std::process::id(), free_port()));
    let out = Command::new(workspace_root().join("scripts/pg-cluster.sh"))
        .args([
            "up",
            cluster_dir.to_str().unwrap(),
            &free_port().to_string(),
        ])
        .stderr(Stdio::inherit())
        .output()
        .expect("pg-cluster.sh runs");
    assert!(out.status.success(), "cluster did not start");
    let database_url = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("DATABASE_URL=").map(str::to_owned))
        .expect("pg-cluster.sh printed DATABASE_URL");

    let binary = std::env::var_os("VIGIL_SIDECAR_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/release/vigil-sidecar"));
    let mut command = Command::new(&binary);
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &database_url,
        ])
        .args(sidecar_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut sidecar = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    let mut stdout = BufReader::new(sidecar.stdout.take().unwrap());
    let mut first_line = String::new();
    stdout.read_line(&mut first_line).expect("sidecar stdout");
    let base = first_line
        .trim()
        .strip_prefix("vigil-sidecar listening on ")
        .unwrap_or_else(|| panic!("sidecar did not start: {first_line:?}"))
        .to_owned();

    static ATEXIT: OnceLock<()> = OnceLock::new();
    // SAFETY: registering a plain extern "C" fn.
    ATEXIT.get_or_init(|| unsafe {
        libc::atexit(teardown);
    });
    RUNNING.lock().unwrap().push(Running {
        cluster_dir: cluster_dir.clone(),
        sidecar,
        _stdout: stdout,
    });
    Env {
        base,
        database_url,
        cluster_dir,
    }
}

/// One environment shared by the tests of a test binary, with default flags.
pub fn shared() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| start(&[]))
}
