//! `make run` and `make stop` as a user runs them: `scripts/run.sh` serves
//! the sidecar in the foreground, and `scripts/pg-cluster.sh down` (what
//! `make stop` runs; `make stop-ha`'s `ha-cluster.sh down` calls the same
//! `stop_recorded_sidecar`) stops that sidecar before the database. Issue 60:
//! `make stop-ha` left the sidecar serving in front of no database. In a
//! state directory and on ports of the test's own, so it runs beside a real
//! `make run`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use vigil_e2e::{free_port, wait_until, workspace_root};

/// `scripts/NAME ARGS` with the test's state directory.
fn script(state: &Path, name: &str) -> Command {
    let mut command = Command::new(workspace_root().join("scripts").join(name));
    command.env("VIGIL_STATE", state);
    command
}

/// Removes the test's cluster and state, also when the test panics.
struct State(PathBuf, Option<Child>);

impl Drop for State {
    fn drop(&mut self) {
        if let Some(mut child) = self.1.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = script(&self.0, "pg-cluster.sh")
            .args(["remove", self.0.join("pg").to_str().unwrap()])
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn make_stop_stops_the_sidecar_and_then_the_database() {
    let dir = std::env::temp_dir().join(format!("vigil-make-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut state = State(dir.clone(), None);
    let http = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.join("run.log")).unwrap();
    let run = script(&dir, "run.sh")
        .env("VIGIL_PG_PORT", free_port().to_string())
        .env("VIGIL_HTTP_ADDR", &http)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("scripts/run.sh starts");
    let pid = run.id();
    state.1 = Some(run);
    let healthz = format!("http://{http}/healthz");
    let answers = || reqwest::blocking::get(&healthz).is_ok_and(|r| r.status().is_success());
    wait_until(
        "make run's sidecar to answer",
        Duration::from_secs(120),
        answers,
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("pg/sidecar.pid"))
            .unwrap()
            .trim(),
        pid.to_string(),
        "run.sh records the pid the sidecar serves under (exec keeps it)"
    );

    let stop = script(&dir, "pg-cluster.sh")
        .args(["down", dir.join("pg").to_str().unwrap()])
        .output()
        .expect("pg-cluster.sh runs");
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    // `down` returns once the sidecar has exited: it is gone at once.
    let status = state.1.as_mut().unwrap().try_wait().expect("waitable");
    assert!(
        status.is_some(),
        "the sidecar still runs after make stop:\n{}",
        std::fs::read_to_string(dir.join("run.log")).unwrap_or_default()
    );
    assert!(!answers(), "nothing answers on {http} any more");
    assert!(!dir.join("pg/sidecar.pid").exists(), "its pid file is gone");
    assert!(
        dir.join("pg/data/PG_VERSION").exists() && !dir.join("pg/data/postmaster.pid").exists(),
        "the database is stopped too (a server that runs has its postmaster.pid)"
    );
}
