//! `vigil-risk-sim`: months of simulated e-commerce traffic with labelled fraud
//! ([`world`], parameters in [`params`]), scored by the risk engine, and a report
//! of how well `RiskScore` separates fraud (`make bench-risk-quality`).
//!
//! ```text
//! vigil-risk-sim --geoip FILE [--seed N] [--in-process | --db CONNINFO]
//! ```
//!
//! - `--in-process`: the engine in this process over an in-memory history
//!   ([`ledger`]); seconds, for trying a change.
//! - `--db`: every purchase through `vigil.risk_score(jsonb)` in time order (the
//!   database's `vigil.transactions` is emptied first: use a bench cluster). Then a
//!   second replay in which the first month's fraud is reported as chargebacks
//!   (`vigil.transaction_feedback`) and `vigil.risk_refit()` fitted before the
//!   rest is scored.
//!
//! Figures are on the months after the first (days 30 on), which no fitting sees.

mod ledger;
mod metrics;
mod params;
mod world;

use std::path::PathBuf;
use std::time::Instant;

use metrics::{auc, caught, threshold_at, Scored};
use vigil_risk::model::{fit, Labelled};
use vigil_risk::{assess_with, parse_request, GeoIp, Model};
use world::{Event, World};

const PATTERNS: [&str; 6] = [
    "bust_out",
    "device_farm",
    "card_testing",
    "account_takeover",
    "reshipping",
    "disposable_email",
];
/// The first month: labels from it train the model; figures exclude it.
const TRAIN_DAYS: f64 = 30.0;

struct Args {
    geoip: PathBuf,
    seed: u64,
    db: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        geoip: PathBuf::new(),
        seed: 1,
        db: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--geoip" => a.geoip = PathBuf::from(value()?),
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--db" => a.db = Some(value()?),
            "--in-process" => a.db = None,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.geoip.as_os_str().is_empty() {
        return Err("--geoip FILE (the MMDB the extension uses) is required".into());
    }
    Ok(a)
}

fn main() {
    let args = args().unwrap_or_else(|e| {
        eprintln!("vigil-risk-sim: {e}");
        std::process::exit(2)
    });
    let geo = GeoIp::open(&args.geoip).unwrap_or_else(|e| {
        eprintln!("vigil-risk-sim: {e}");
        std::process::exit(2)
    });
    let started = Instant::now();
    let events = World::generate(args.seed, geo);
    let frauds = events.iter().filter(|e| e.fraud).count();
    println!(
        "simulated {} purchases over {} days, {} fraud ({:.2}%), seed {}, in {:.1} s",
        events.len(),
        params::DAYS,
        frauds,
        100.0 * frauds as f64 / events.len() as f64,
        args.seed,
        started.elapsed().as_secs_f64()
    );
    match &args.db {
        None => {
            let (plain, model) = in_process(&events);
            report("in process, rules only", &plain);
            report(
                "in process, with a model fitted on month 1's labels",
                &model,
            );
        }
        Some(conninfo) => {
            let plain = replay(conninfo, &events, false).unwrap_or_else(|e| die(e));
            report("through vigil.risk_score, no labels", &plain);
            let learned = replay(conninfo, &events, true).unwrap_or_else(|e| die(e));
            report(
                "through vigil.risk_score, month 1's fraud reported, vigil.risk_refit()",
                &learned,
            );
        }
    }
}

fn die(e: postgres::Error) -> ! {
    eprintln!("vigil-risk-sim: {e}");
    std::process::exit(1)
}

/// Scores every event in process; returns the later months' scores by the
/// rules, and by the rules plus a model fitted on the first month.
fn in_process(events: &[Event]) -> (Vec<Scored>, Vec<Scored>) {
    let mut ledger = ledger::Ledger::default();
    let mut plain = Vec::new();
    let mut training = Vec::new();
    let mut later = Vec::new();
    for e in events {
        let Ok(req) = parse_request(&e.body) else {
            continue;
        };
        let ids = req.identities();
        let at = req.event_time_us(i64::MAX);
        let history = ledger.history(&ids, at);
        let a = assess_with(&req, &history, e.ip_country, None);
        ledger.record(&ids, at, req.amount);
        if e.day < TRAIN_DAYS {
            training.push(Labelled {
                x: a.model_features,
                expert_points: a.expert_points,
                fraud: e.fraud,
            });
        } else {
            plain.push(scored(e, a.score, a.result.as_str()));
            later.push((e, req, history));
        }
    }
    let model: Option<Model> = fit(&training).ok();
    if std::env::var_os("VIGIL_SIM_DEBUG").is_some() {
        eprintln!("{model:#?}");
    }
    let with_model = later
        .iter()
        .map(|(e, req, history)| {
            let a = assess_with(req, history, e.ip_country, model.as_ref());
            scored(e, a.score, a.result.as_str())
        })
        .collect();
    (plain, with_model)
}

fn scored(e: &Event, score: f64, result: &str) -> Scored {
    Scored {
        score,
        result: result.to_owned(),
        fraud: e.fraud,
        pattern: e.pattern,
    }
}

/// Replays `events` through the database; with `learn`, reports the first
/// month's fraud as chargebacks and refits before the later months.
fn replay(conninfo: &str, events: &[Event], learn: bool) -> Result<Vec<Scored>, postgres::Error> {
    let mut db = postgres::Client::connect(conninfo, postgres::NoTls)?;
    db.batch_execute(
        "TRUNCATE vigil.transactions CASCADE; DELETE FROM vigil.risk_models; \
         DELETE FROM vigil.fraud_identities;",
    )?;
    let score = db.prepare("SELECT vigil.risk_score($1::text::jsonb)::text")?;
    let started = Instant::now();
    let mut out = Vec::new();
    let mut month_one_fraud = Vec::new();
    let mut refitted = !learn;
    for e in events {
        if !refitted && e.day >= TRAIN_DAYS {
            db.execute(
                "SELECT vigil.transaction_feedback(id, 'chargeback') FROM unnest($1::text[]::uuid[]) id",
                &[&month_one_fraud],
            )?;
            let fit: String = db
                .query_one("SELECT vigil.risk_refit(interval '0')::text", &[])?
                .get(0);
            println!(
                "  risk_refit: {}",
                fit.chars().take(160).collect::<String>()
            );
            refitted = true;
        }
        let row = db.query_one(&score, &[&e.body.to_string()])?;
        let text: String = row.get(0);
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let s = answer["RiskScore"].as_f64().unwrap_or(f64::NAN);
        let result = answer["Result"].as_str().unwrap_or("?");
        if e.day < TRAIN_DAYS {
            if e.fraud {
                month_one_fraud.push(
                    answer["transactionId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
        } else {
            out.push(scored(e, s, result));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "  replayed {} purchases in {seconds:.1} s ({:.0}/s, one client)",
        events.len(),
        events.len() as f64 / seconds
    );
    Ok(out)
}

fn report(title: &str, rows: &[Scored]) {
    let t1 = threshold_at(rows, 0.01);
    let t5 = threshold_at(rows, 0.05);
    let fraud = rows.iter().filter(|r| r.fraud).count();
    println!("\n## {title}\n");
    println!(
        "days {}-{}: {} purchases, {} fraud; AUC {:.3}; fraud caught at 1% of legitimate flagged {:.1}% (score >= {:.1}), at 5% {:.1}% (score >= {:.1})\n",
        TRAIN_DAYS,
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
