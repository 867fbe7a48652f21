//! `vigil-risk-sim`: months of simulated e-commerce traffic with labelled fraud
//! ([`world`], parameters in [`params`]) in several worlds ([`scenario`]),
//! scored by the risk engine without feedback and with feedback as a shop
//! sends it ([`feedback`]), and a report of how well `RiskScore` separates
//! fraud (`make bench-risk-quality`).
//!
//! ```text
//! vigil-risk-sim --geoip FILE [--seed N] [--world NAME|all] [--in-process | --db CONNINFO] [--detail]
//! ```
//!
//! - `--in-process`: the engine in this process over an in-memory history
//!   ([`ledger`]) with the extension's feedback rules; seconds a world.
//! - `--db`: every purchase through `vigil.risk_score(jsonb)` in time order,
//!   chargebacks through `vigil.transaction_feedback`, weekly
//!   `vigil.risk_refit` (the database's `vigil.transactions` is emptied
//!   first: use a bench cluster).
//!
//! Figures are on the months after the first labels (days 30 on).

mod feedback;
mod ledger;
mod metrics;
mod params;
mod scenario;
mod world;

use std::path::PathBuf;
use std::time::Instant;

use feedback::{replay, Database, Engine, InProcess, Tally, FIRST_LABELS_DAY};
use metrics::{auc, caught, legit_flagged, threshold_at, Scored};
use scenario::WORLDS;
use vigil_risk::GeoIp;
use world::World;

const PATTERNS: [&str; 6] = [
    "bust_out",
    "device_farm",
    "card_testing",
    "account_takeover",
    "reshipping",
    "disposable_email",
];

struct Args {
    geoip: PathBuf,
    seed: u64,
    db: Option<String>,
    world: Option<String>,
    detail: bool,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        geoip: PathBuf::new(),
        seed: 1,
        db: None,
        world: None,
        detail: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--geoip" => a.geoip = PathBuf::from(value()?),
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--db" => a.db = Some(value()?),
            "--in-process" => a.db = None,
            "--world" => a.world = Some(value()?).filter(|w| w != "all"),
            "--detail" => a.detail = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.geoip.as_os_str().is_empty() {
        return Err("--geoip FILE (the MMDB the extension uses) is required".into());
    }
    if let Some(w) = &a.world {
        if !WORLDS.iter().any(|s| s.name == w) {
            let names: Vec<&str> = WORLDS.iter().map(|s| s.name).collect();
            return Err(format!(
                "--world: no world {w}; the worlds: {}",
                names.join(", ")
            ));
        }
    }
    Ok(a)
}

/// One world's figures without and with feedback.
struct Outcome {
    world: &'static str,
    without: Vec<Scored>,
    with: Vec<Scored>,
}

fn main() {
    let args = args().unwrap_or_else(|e| {
        eprintln!("vigil-risk-sim: {e}");
        std::process::exit(2)
    });
    let mut outcomes = Vec::new();
    for scenario in WORLDS
        .iter()
        .filter(|w| args.world.as_deref().is_none_or(|n| n == w.name))
    {
        let geo = GeoIp::open(&args.geoip).unwrap_or_else(|e| {
            eprintln!("vigil-risk-sim: {e}");
            std::process::exit(2)
        });
        let started = Instant::now();
        let events = World::generate(args.seed, geo, *scenario);
        let frauds = events.iter().filter(|e| e.fraud).count();
        println!(
            "\n# world {}: {}\n\n{} purchases over {} days, {} fraud ({:.2}%), seed {}, made in {:.1} s",
            scenario.name,
            scenario.about,
            events.len(),
            params::DAYS,
            frauds,
            100.0 * frauds as f64 / events.len() as f64,
            args.seed,
            started.elapsed().as_secs_f64()
        );
        let run = |feedback: bool| -> (Vec<Scored>, Tally) {
            let started = Instant::now();
            let mut engine: Box<dyn Engine> = match &args.db {
                None => Box::new(InProcess::default()),
                Some(conninfo) => Box::new(Database::connect(conninfo).unwrap_or_else(|e| {
                    eprintln!("vigil-risk-sim: {e}");
                    std::process::exit(1)
                })),
            };
            let out = replay(&events, scenario, args.seed, feedback, engine.as_mut());
            println!(
                "  {} {}: {:.1} s ({} chargebacks, {} refits, {} adopted a new model)",
                if args.db.is_some() {
                    "through vigil.risk_score"
                } else {
                    "in process"
                },
                if feedback {
                    "with feedback"
                } else {
                    "without feedback"
                },
                started.elapsed().as_secs_f64(),
                out.1.chargebacks,
                out.1.refits,
                out.1.adopted,
            );
            out
        };
        let (without, _) = run(false);
        let (with, _) = run(true);
        if args.detail {
            report(&format!("{}, without feedback", scenario.name), &without);
            report(&format!("{}, with feedback", scenario.name), &with);
        }
        outcomes.push(Outcome {
            world: scenario.name,
            without,
            with,
        });
    }
    summary(&outcomes);
}

/// AUC, fraud caught at 1% and 5% of legitimate flagged, legitimate answered
/// Review or Failed.
fn figures(rows: &[Scored]) -> [f64; 4] {
    [
        auc(rows),
        caught(rows, threshold_at(rows, 0.01), None).1,
        caught(rows, threshold_at(rows, 0.05), None).1,
        legit_flagged(rows),
    ]
}

/// The table per world, and the issue's criteria: with feedback, the catch at
/// 1% is never lower, the legitimate share flagged at most 1.5 times as high,
/// and in some world the catch at 1% is 10 points higher.
fn summary(outcomes: &[Outcome]) {
    println!(
        "\n## Without and with feedback, days {FIRST_LABELS_DAY}-{}\n",
        params::DAYS
    );
    println!("| world | AUC | caught at 1% | caught at 5% | legitimate flagged | with feedback: AUC | caught at 1% | caught at 5% | legitimate flagged | holds |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut best_gain: f64 = f64::NEG_INFINITY;
    let mut all_hold = true;
    for o in outcomes {
        let [a0, c10, c50, l0] = figures(&o.without);
        let [a1, c11, c51, l1] = figures(&o.with);
        let holds = c11 >= c10 && l1 <= 1.5 * l0.max(1e-4);
        all_hold &= holds;
        best_gain = best_gain.max(c11 - c10);
        println!(
            "| {} | {a0:.3} | {:.1}% | {:.1}% | {:.2}% | {a1:.3} | {:.1}% | {:.1}% | {:.2}% | {} |",
            o.world,
            100.0 * c10,
            100.0 * c50,
            100.0 * l0,
            100.0 * c11,
            100.0 * c51,
            100.0 * l1,
            if holds { "yes" } else { "NO" },
        );
    }
    println!(
        "\nEvery world holds: {}; the largest gain in fraud caught at 1%: {:+.1} points (wanted: +10 in one world or more).",
        if all_hold { "yes" } else { "NO" },
        100.0 * best_gain
    );
}

fn report(title: &str, rows: &[Scored]) {
    let t1 = threshold_at(rows, 0.01);
    let t5 = threshold_at(rows, 0.05);
    let fraud = rows.iter().filter(|r| r.fraud).count();
    println!("\n## {title}\n");
    println!(
        "days {}-{}: {} purchases, {} fraud; AUC {:.3}; fraud caught at 1% of legitimate flagged {:.1}% (score >= {:.1}), at 5% {:.1}% (score >= {:.1})\n",
        FIRST_LABELS_DAY,
        params::DAYS,
        rows.len(),
        fraud,
        auc(rows),
        100.0 * caught(rows, t1, None).1,
        t1,
        100.0 * caught(rows, t5, None).1,
        t5,
    );
    println!("| pattern | purchases | caught at 1% | caught at 5% | Review or Failed |");
    println!("|---|---|---|---|---|");
    for p in PATTERNS {
        let (n, c1) = caught(rows, t1, Some(p));
        let (_, c5) = caught(rows, t5, Some(p));
        let flagged = rows
            .iter()
            .filter(|r| r.pattern == p && r.result != "Passed")
            .count();
        println!(
            "| {p} | {n} | {:.1}% | {:.1}% | {:.1}% |",
            100.0 * c1,
            100.0 * c5,
            100.0 * flagged as f64 / n.max(1) as f64
        );
    }
    println!("\n| Result | share of purchases | of legitimate | of fraud |");
    println!("|---|---|---|---|");
    let legit = rows.len() - fraud;
    for result in ["Passed", "Review", "Failed"] {
        let all = rows.iter().filter(|r| r.result == result).count();
        let l = rows
            .iter()
            .filter(|r| r.result == result && !r.fraud)
            .count();
        let f = all - l;
        println!(
            "| {result} | {:.2}% | {:.2}% | {:.1}% |",
            100.0 * all as f64 / rows.len().max(1) as f64,
            100.0 * l as f64 / legit.max(1) as f64,
            100.0 * f as f64 / fraud.max(1) as f64
        );
    }
}
