//! Private clusters for durability tests: a cluster a test may crash or
//! replicate without spoiling the cluster other tests share, concurrent writers
//! that remember which commits they saw succeed, a crash (SIGKILL of the whole
//! server) and a streaming replica. Everything goes through
//! `scripts/pg-cluster.sh`, so these clusters are made like every other.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{feed_script, free_port, remove_at_exit, removed, workspace_root, Env};

/// How long a server gets to start, recover, catch up or die before a test
/// gives up: generous, since a timeout only turns a hang into a failure.
const PATIENCE: Duration = Duration::from_secs(120);

fn script() -> PathBuf {
    workspace_root().join("scripts/pg-cluster.sh")
}

/// Runs `pg-cluster.sh ARGS`, which must succeed; returns its stdout.
fn run_script(args: &[&str]) -> String {
    let out = Command::new(script())
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("pg-cluster.sh runs");
    assert!(out.status.success(), "pg-cluster.sh {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// Polls `done` every 10 ms until it holds; panics naming `what` after `timeout`.
/// For waiting on a condition instead of sleeping and hoping.
pub fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A cluster of one test's own, in its own directory on a free port, removed
/// (`pg-cluster.sh remove`) when dropped, also when the test panics, and at
/// process exit should a drop not happen.
pub struct Cluster {
    dir: PathBuf,
    port: u16,
    /// The primary's directory when this is a replica.
    primary: Option<PathBuf>,
    /// As the application role `vigil_app`.
    pub database_url: String,
    /// As the admin role `vigil_admin`.
    pub admin_url: String,
}

impl Cluster {
    /// A fresh cluster (`pg-cluster.sh up`), with the extension like any other.
    pub fn start() -> Cluster {
        let mut cluster = Cluster::new(None);
        let out = run_script(&[
            "up",
            cluster.dir.to_str().unwrap(),
            &cluster.port.to_string(),
        ]);
        cluster.read_urls(&out);
        cluster
    }

    /// A fresh cluster whose extension is the earlier `version` (`pg-cluster.sh
    /// up DIR PORT VERSION`), not upgraded; [`Cluster::upgrade`] moves it on.
    pub fn start_at_version(version: &str) -> Cluster {
        let mut cluster = Cluster::new(None);
        let out = run_script(&[
            "up",
            cluster.dir.to_str().unwrap(),
            &cluster.port.to_string(),
            version,
        ]);
        cluster.read_urls(&out);
        cluster
    }

    /// What `make run` does to an existing cluster: `pg-cluster.sh up`, which
    /// runs `ALTER EXTENSION vigil UPDATE` and refuses a version it cannot reach.
    pub fn upgrade(&self) -> Result<(), String> {
        let out = Command::new(script())
            .args(["up", self.dir.to_str().unwrap(), &self.port.to_string()])
            .output()
            .expect("pg-cluster.sh runs");
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// This cluster as an [`Env`] without a sidecar; `with_sidecar` adds one.
    pub fn env(&self) -> Env {
        Env {
            base: String::new(),
            database_url: self.database_url.clone(),
            admin_url: self.admin_url.clone(),
            cluster_dir: self.dir.clone(),
        }
    }

    /// The extension's objects as `pg_dump --schema-only --binary-upgrade`
    /// writes them (it lists an extension's members one by one, as pg_upgrade
    /// needs), without what differs between equal schemas: object ids, and the
    /// dump's own header.
    pub fn schema_dump(&self) -> String {
        let out = self.superuser_tool(
            "pg_dump",
            &[
                "--schema-only",
                "--binary-upgrade",
                "--no-comments",
                "-d",
                "vigil",
            ],
            &[],
        );
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter(|l| {
                // Object ids, transaction ids, sequence positions (data) and the dump's random \restrict key.
                !(l.contains("binary_upgrade_set_next")
                    || l.starts_with("SELECT pg_catalog.setval(")
                    || l.starts_with("-- Dumped")
                    || l.starts_with("SET relfrozenxid")
                    || l.starts_with("WHERE oid = '")
                    || l.starts_with("\\restrict")
                    || l.starts_with("\\unrestrict")
                    // A column added with a default to rows already there
                    // keeps that default for them in the catalog (the
                    // table is not rewritten): storage, not schema.
                    || *l == "-- set missing value."
                    // Blank lines say nothing, and a block left out leaves one.
                    || l.trim().is_empty()
                    || l.contains("binary_upgrade_set_missing_value("))
            })
            .map(|l| {
                // binary_upgrade_create_empty_extension(..., '{16500,16510}'::oid[], ...)
                // names the configuration tables by oid.
                if l.contains("binary_upgrade_create_empty_extension") {
                    l.split("'{").next().unwrap_or(l).to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Runs the PostgreSQL client `program` (pg_dump, pg_restore, psql) as
    /// the superuser over this cluster's socket with `args`, `input` on its
    /// stdin; it must succeed. Its output, as bytes (a custom-format dump is
    /// binary).
    pub fn superuser_tool(&self, program: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
        let port = self.port.to_string();
        let run = self.dir.join("run");
        let mut command = Command::new(format!("/usr/lib/postgresql/15/bin/{program}"));
        command
            .args(args)
            .args(["-h", run.to_str().unwrap(), "-p", &port]);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let mut sudo = Command::new("sudo");
            sudo.args(["-u", "postgres", "--"])
                .arg(command.get_program())
                .args(command.get_args());
            command = sudo;
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} runs: {e}"));
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().expect("the tool finishes");
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        writer
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{program}'s input: {e}"));
        out.stdout
    }

    /// A hot standby of this cluster (`pg-cluster.sh replica`: `pg_basebackup
    /// -R` over 127.0.0.1, then streaming), in its own directory on a free port,
    /// returned once it has replayed everything this cluster had written.
    pub fn replica(&self) -> Cluster {
        let mut replica = Cluster::new(Some(self.dir.clone()));
        let out = run_script(&[
            "replica",
            self.dir.to_str().unwrap(),
            replica.dir.to_str().unwrap(),
            &replica.port.to_string(),
        ]);
        replica.read_urls(&out);
        replica.wait_for_replay(self);
        replica
    }

    /// Reserves a directory (removed at exit from now on) and a port.
    fn new(primary: Option<PathBuf>) -> Cluster {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let port = free_port();
        // The sequence number keeps directories apart even if a port comes round again.
        let dir = std::env::temp_dir().join(format!(
            "vigil-e2e-{}-{}-{port}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        remove_at_exit(&dir);
        Cluster {
            dir,
            port,
            primary,
            database_url: String::new(),
            admin_url: String::new(),
        }
    }

    fn read_urls(&mut self, out: &str) {
        let printed = |name: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(name).map(str::to_owned))
                .unwrap_or_else(|| panic!("pg-cluster.sh printed no {name}"))
        };
        self.database_url = printed("DATABASE_URL=");
        self.admin_url = printed("ADMIN_DATABASE_URL=");
    }

    /// The cluster's directory (perhaps a symlink; the data is in `data/`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs an SQL script as the superuser over the socket, statement by
    /// statement, stopping at the first error: (success, stdout, stderr).
    pub fn run(&self, sql: &str) -> (bool, String, String) {
        let mut psql = Command::new(script());
        psql.args(["psql", self.dir.to_str().unwrap(), "-At"]);
        feed_script(psql, sql)
    }

    /// [`Cluster::run`]'s unaligned output, or its stderr.
    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        match self.run(sql) {
            (true, out, _) => Ok(out),
            (false, _, err) => Err(err),
        }
    }

    /// [`Cluster::try_psql`] that must succeed.
    pub fn psql(&self, sql: &str) -> String {
        self.try_psql(sql)
            .unwrap_or_else(|e| panic!("psql failed: {e}\nSQL: {sql}"))
    }

    /// Whether `CREATE EXTENSION amcheck` would work here (Debian ships it in
    /// postgresql-15, other builds may not).
    pub fn has_amcheck(&self) -> bool {
        self.psql("SELECT count(*) FROM pg_available_extensions WHERE name = 'amcheck'") == "1"
    }

    /// The server's log so far (`server.log`), e.g. to see that it recovered.
    pub fn server_log(&self) -> String {
        let path = self.dir.join("server.log");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }

    /// The postmaster's pid: the first line of `data/postmaster.pid`.
    pub fn postmaster_pid(&self) -> libc::pid_t {
        let path = self.dir.join("data/postmaster.pid");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        text.lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid in {}", path.display()))
    }

    /// Crashes the server: SIGKILL to the postmaster and to every process it
    /// had forked, as a power cut would stop them (no shutdown checkpoint, no
    /// backend finishing what it was doing; only what reached the WAL and the OS
    /// survives). Returns once they are all gone, so that [`Cluster::restart`]
    /// finds neither a live pid in `postmaster.pid` nor attached shared memory.
    pub fn crash(&self) {
        let postmaster = self.postmaster_pid();
        // Stopped, the postmaster forks nothing while its children are listed.
        signal(postmaster, libc::SIGSTOP);
        let children = children_of(postmaster);
        signal(postmaster, libc::SIGKILL);
        for &child in &children {
            signal(child, libc::SIGKILL);
        }
        wait_until("the killed server to vanish", PATIENCE, || {
            // Children may linger as zombies until init reaps them, which
            // blocks nothing; the postmaster's pid must be really free.
            !exists(postmaster) && children.iter().all(|&c| !exists(c) || is_zombie(c))
        });
    }

    /// Starts the server again after a crash or a stop: crash recovery runs
    /// before it accepts connections, and this returns once it does.
    pub fn restart(&self) {
        let dir = self.dir.to_str().unwrap();
        let port = self.port.to_string();
        match &self.primary {
            None => run_script(&["up", dir, &port]),
            Some(primary) => run_script(&["replica", primary.to_str().unwrap(), dir, &port]),
        };
    }

    /// Waits until this replica has replayed the WAL `primary` has written so
    /// far (`pg_last_wal_replay_lsn() >= pg_current_wal_lsn()` of the primary
    /// now): everything committed there before the call is then visible here.
    pub fn wait_for_replay(&self, primary: &Cluster) {
        let target = primary.psql("SELECT pg_current_wal_lsn()");
        let caught_up =
            format!("SELECT coalesce(pg_last_wal_replay_lsn() >= '{target}'::pg_lsn, false)");
        wait_until(
            &format!("the replica to replay up to {target}"),
            PATIENCE,
            || self.psql(&caught_up) == "t",
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let removed_ok = Command::new(script())
            .args(["remove", self.dir.to_str().unwrap()])
            .status()
            .is_ok_and(|s| s.success());
        if removed_ok {
            removed(&self.dir);
        }
    }
}

fn signal(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) takes plain integers.
    let rc = unsafe { libc::kill(pid, sig) };
    assert!(
        rc == 0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

/// A process's `/proc/PID/stat` after the command name: "STATE PPID ...".
fn proc_stat(pid: libc::pid_t) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything, ')' included.
    Some(stat[stat.rfind(')')? + 1..].trim_start().to_owned())
}

fn exists(pid: libc::pid_t) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn is_zombie(pid: libc::pid_t) -> bool {
    proc_stat(pid).is_some_and(|s| s.starts_with('Z'))
}

fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let entries = std::fs::read_dir("/proc").expect("/proc is mounted");
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| {
            proc_stat(pid).and_then(|s| s.split_whitespace().nth(1)?.parse::<libc::pid_t>().ok())
                == Some(parent)
        })
        .collect()
}

/// What psql prints after a transaction whose COMMIT succeeded.
const COMMITTED: &str = "vigil-e2e committed";

/// What one writer has done so far.
#[derive(Default)]
struct WriterState {
    committed: Vec<i64>,
    /// psql's stderr, once the writer has ended.
    ended: Option<String>,
}

/// Sessions writing concurrently, one transaction after another, until the
/// server dies under them or they are told to stop. Each remembers the ids of
/// the transactions whose COMMIT it saw succeed: after a crash all of those
/// must be there (the ones in flight at the crash may or may not be).
pub struct Writers {
    stop: Arc<AtomicBool>,
    states: Vec<Arc<Mutex<WriterState>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Writers {
    /// Starts `n` psql sessions as the superuser. Writer `w` runs the
    /// transactions `w`, `w + n`, `w + 2n`, ... (so ids never clash), each as
    /// `BEGIN; transaction(id) COMMIT;`: `transaction` gives the statements
    /// without BEGIN or COMMIT. A writer sends its next transaction only once
    /// the previous one has committed, so none is queued when the server dies.
    pub fn start(
        cluster: &Cluster,
        n: usize,
        transaction: impl Fn(i64) -> String + Send + Sync + 'static,
    ) -> Writers {
        let transaction = Arc::new(transaction);
        let stop = Arc::new(AtomicBool::new(false));
        let mut states = Vec::new();
        let mut threads = Vec::new();
        for w in 0..n {
            let state = Arc::new(Mutex::new(WriterState::default()));
            states.push(state.clone());
            let (dir, stop, transaction) = (cluster.dir.clone(), stop.clone(), transaction.clone());
            let ids = (w as i64..).step_by(n);
            threads.push(std::thread::spawn(move || {
                write(&dir, ids, &*transaction, &stop, &state)
            }));
        }
        Writers {
            stop,
            states,
            threads,
        }
    }

    /// Waits until every writer has committed `count` transactions, so that a
    /// crash right after lands while they are all busy. Panics if one ended
    /// first, with what psql said.
    pub fn wait_for_commits(&self, count: usize) {
        wait_until(
            &format!("{count} commits from every writer"),
            PATIENCE,
            || {
                self.states.iter().enumerate().all(|(w, state)| {
                    let state = state.lock().unwrap();
                    if let (Some(stderr), true) = (&state.ended, state.committed.len() < count) {
                        panic!(
                            "writer {w} ended after {} commits: {stderr}",
                            state.committed.len()
                        );
                    }
                    state.committed.len() >= count
                })
            },
        );
    }

    /// Stops the writers still running (after a crash, none is) and returns
    /// the ids of every transaction whose COMMIT succeeded, in order.
    pub fn finish(mut self) -> Vec<i64> {
        self.join();
        let mut ids: Vec<i64> = self
            .states
            .iter()
            .flat_map(|s| s.lock().unwrap().committed.clone())
            .collect();
        ids.sort_unstable();
        ids
    }

    fn join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        self.join();
    }
}

/// One writer: a psql session fed one transaction at a time, each followed by
/// an `\echo` that psql only reaches when COMMIT succeeded (ON_ERROR_STOP).
fn write(
    dir: &Path,
    ids: impl Iterator<Item = i64>,
    transaction: &dyn Fn(i64) -> String,
    stop: &AtomicBool,
    state: &Mutex<WriterState>,
) {
    let mut child = Command::new(script())
        .args(["psql", dir.to_str().unwrap(), "-At"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pg-cluster.sh runs");
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    'run: for id in ids {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let sql = format!(
            "BEGIN;\n{}\nCOMMIT;\n\\echo {COMMITTED} {id}\n",
            transaction(id)
        );
        if stdin
            .write_all(sql.as_bytes())
            .and_then(|()| stdin.flush())
            .is_err()
        {
            break; // psql has gone: the server died
        }
        let done = format!("{COMMITTED} {id}");
        loop {
            line.clear();
            match stdout.read_line(&mut line) {
                Ok(0) | Err(_) => break 'run, // psql lost the server and quit
                Ok(_) if line.trim_end() == done => break,
                Ok(_) => {} // rows the transaction printed
            }
        }
        state.lock().unwrap().committed.push(id);
    }
    drop(stdin); // psql ends at end of input
    drop(stdout);
    let _ = child.wait();
    state.lock().unwrap().ended = Some(stderr.join().unwrap_or_default());
}
