//! An identity assessment stops on a cancel and at its statement timeout
//! (issue 60). A module of its own, so that it runs alone: the time from a
//! cancel to the backend's stop is measured, and other assessments beside it
//! on 2 cores would be measured too.

use vigil_e2e::shared;

/// Issue 60: an assessment must stop on `pg_cancel_backend` and at its
/// `statement_timeout`, whatever it is doing: the analysis gives up between
/// its stages when PostgreSQL has an interrupt pending. A maximal image (the
/// slowest upload within the limits) is cancelled while it is assessed; the
/// time from the cancel to the backend's idle state is read off the server's
/// own clock (`pg_stat_activity.state_change`).
#[test]
fn a_cancel_or_a_statement_timeout_stops_an_assessment() {
    let env = shared();
    let hex: String = vigil_e2e::maximal_png()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let tag = format!("cancel-{}", std::process::id());
    // One session, left open so that its backend stays to be looked at.
    let session = |setting: &str| {
        let mut psql = std::process::Command::new("/usr/lib/postgresql/15/bin/psql")
            .args([env.database_url.as_str(), "-X", "-q", "-At"])
            .env("PGAPPNAME", &tag)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("psql runs");
        let mut stdin = psql.stdin.take().unwrap();
        use std::io::Write;
        writeln!(
            stdin,
            "{setting}\nSELECT vigil.assess_id(decode('{hex}', 'hex'));"
        )
        .expect("psql reads");
        (psql, stdin)
    };
    let mine = format!("application_name = '{tag}'");
    // Waits for this test's backend to be `state` for at least `ms` ms (the
    // assessment under way), or to have left it; gives its pid.
    let wait_for = |state: &str, ms: u32, deadline: std::time::Instant| -> i32 {
        loop {
            let pid = env.psql(&format!(
                "SELECT pid FROM pg_stat_activity WHERE {mine} AND state = '{state}' \
                 AND query LIKE '%assess_id%' AND clock_timestamp() - state_change >= '{ms} ms'"
            ));
            if let Ok(pid) = pid.parse() {
                return pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no backend {state} for {ms} ms"
            );
        }
    };
    let deadline = || std::time::Instant::now() + std::time::Duration::from_secs(60);

    // The whole assessment, uncancelled, in the same run: the baseline a stop
    // is judged against, since a loaded machine slows both alike.
    let started = std::time::Instant::now();
    let (psql, stdin) = session("");
    drop(stdin);
    let whole = psql.wait_with_output().unwrap();
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let whole_ms = started.elapsed().as_secs_f64() * 1000.0;

    // A cancel in the middle of the assessment.
    let (psql, stdin) = session("");
    let pid = wait_for("active", 150, deadline());
    let cancelled_at = env.psql(&format!(
        "SELECT clock_timestamp()::text FROM pg_cancel_backend({pid})"
    ));
    wait_for("idle", 0, deadline());
    let ms: f64 = env
        .psql(&format!(
            "SELECT extract(epoch FROM state_change - '{cancelled_at}'::timestamptz) * 1000 \
             FROM pg_stat_activity WHERE pid = {pid}"
        ))
        .parse()
        .unwrap();
    drop(stdin);
    let out = psql.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("canceling statement due to user request"),
        "{err}"
    );
    eprintln!(
        "cancel: the assessment stopped {ms:.1} ms after pg_cancel_backend (uncancelled: {whole_ms:.0} ms)"
    );
    // Sent 150 ms in: without checks between its stages, it would run to its
    // end. It must stop within 100 ms, or within a third of what remained
    // where the machine is so loaded that the whole takes longer.
    let bound = f64::max(100.0, (whole_ms - 150.0) / 3.0);
    assert!(
        ms < bound,
        "the assessment stopped {ms:.1} ms after the cancel (bound {bound:.0} ms; uncancelled {whole_ms:.0} ms)"
    );

    // A statement timeout shorter than the assessment.
    let started = std::time::Instant::now();
    let (psql, stdin) = session("SET statement_timeout = '300ms';");
    drop(stdin);
    let out = psql.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("canceling statement due to statement timeout"),
        "{err}"
    );
    eprintln!(
        "statement timeout 300 ms: psql ended after {:?}",
        started.elapsed()
    );
}
