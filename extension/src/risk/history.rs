//! What the database knows about a transaction's identities, and the record of
//! each assessment.
//!
//! The history is read from index ranges directly ([`crate::pg::index_range`]): each
//! identity's rows of the last day (`transactions_<identity>`; for devices and
//! IPs the same entries carry the e-mail, to count the others), the e-mail's
//! range newest first, which also gives this customer's last 100 amounts, and
//! the hard rules (blocklist and confirmed-fraud primary keys). The record is
//! one prepared INSERT through SPI, so it gets the table's defaults, domains,
//! indexes and triggers.

use std::cell::RefCell;
use std::ops::ControlFlow;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use vigil_risk::history::{LINKAGE_DAYS, LINKAGE_SCAN_CAP};
use vigil_risk::{
    AmountStats, Assessment, HardRule, HardRuleSource, History, Identities, IdentityKind, Request,
    Window,
};

use crate::pg::index_range::{scan, Direction, Entry, Key, Relation, Snapshot};
use crate::pg::jsonb::Jsonb;

const RECORD: &str = "
INSERT INTO vigil.transactions
  (id, api_key_id, request, features, score, level, result, confidence, reasons,
   email, device, ip, card, amount)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

thread_local! {
    static RECORD_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
}

/// Columns of the history's indexes (schema.sql), in index order.
mod column {
    /// `transactions_<identity> (<identity>, received_at) INCLUDE (...)`.
    pub const RECEIVED_AT: usize = 2;
    /// `transactions_email`: `INCLUDE (amount)`.
    pub const AMOUNT: usize = 3;
    /// `transactions_device` and `transactions_ip`: `INCLUDE (email)`.
    pub const EMAIL: usize = 3;
    /// `blocklist_pkey (kind, value) INCLUDE (expires_at)`.
    pub const EXPIRES_AT: usize = 3;
}

/// Reads the history of `ids` as of now (the transaction's start, as `now()`).
pub fn load(ids: &Identities) -> History {
    let now = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
    let day_ago = now - Window::DAY_US;
    let age = |entry: &Entry| now - entry.timestamp(column::RECEIVED_AT).unwrap_or(now);
    let snapshot = Snapshot::take();
    let table = Relation::open("transactions");
    let mut history = History::default();

    if let Some(email) = &ids.email {
        // Newest first: the day's velocity, then amounts until there are 100.
        let index = Relation::open("transactions_email");
        let mut amounts = Vec::with_capacity(AmountStats::RECENT);
        scan(
            &table,
            &index,
            &snapshot,
            &[Key::TextEq(email)],
            Direction::Backward,
            |entry| {
                let age = age(entry);
                history.email.add(age);
                if amounts.len() < AmountStats::RECENT {
                    amounts.extend(entry.float8(column::AMOUNT));
                }
                if amounts.len() >= AmountStats::RECENT && !Window::in_day(age) {
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            },
        );
        history.customer_amounts = AmountStats::of(&amounts);
        index.close();
    }
    let email = ids.email.as_deref().map(str::as_bytes);
    // A device's and an IP's last LINKAGE_DAYS, newest first: the day's
    // velocity and other e-mails (always all of the day), and the other
    // e-mails of the whole window (past the day, reading stops after
    // LINKAGE_SCAN_CAP rows). The card: its day only.
    let linkage_start = now - LINKAGE_DAYS * Window::DAY_US;
    let (mut day_others, mut long_others) = (Vec::new(), Vec::new());
    for (value, index, window, distinct) in [
        (
            &ids.device,
            "transactions_device",
            &mut history.device,
            Some((
                &mut history.device_distinct_emails_day,
                &mut history.device_distinct_emails_long,
            )),
        ),
        (
            &ids.ip,
            "transactions_ip",
            &mut history.ip,
            Some((
                &mut history.ip_distinct_emails_day,
                &mut history.ip_distinct_emails_long,
            )),
        ),
        (&ids.card, "transactions_card", &mut history.card, None),
    ] {
        let Some(value) = value else { continue };
        let index = Relation::open(index);
        day_others.clear();
        long_others.clear();
        let since = if distinct.is_some() {
            linkage_start
        } else {
            day_ago
        };
        let keys = [Key::TextEq(value), Key::After(since)];
        let mut read = 0usize;
        scan(
            &table,
            &index,
            &snapshot,
            &keys,
            Direction::Backward,
            |entry| {
                let age = age(entry);
                let in_day = Window::in_day(age);
                if in_day {
                    window.add(age);
                }
                if distinct.is_some() {
                    // Other e-mails seen with this identity (IS DISTINCT FROM).
                    if let Some(other) = entry.text(column::EMAIL).filter(|e| Some(*e) != email) {
                        if in_day {
                            day_others.push(other.to_vec());
                        }
                        long_others.push(other.to_vec());
                    }
                }
                read += 1;
                if read >= LINKAGE_SCAN_CAP && !in_day {
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            },
        );
        if let Some((day, long)) = distinct {
            for (others, out) in [(&mut day_others, day), (&mut long_others, long)] {
                others.sort_unstable();
                others.dedup();
                *out = count(others.len());
            }
        }
        index.close();
    }
    history.hard_rules = hard_rules(ids, now, &snapshot);
    table.close();
    snapshot.release();
    history
}

/// Blocklist entries (unexpired) and confirmed-fraud identities among `ids`,
/// ordered by kind name.
fn hard_rules(ids: &Identities, now: pg_sys::TimestampTz, snapshot: &Snapshot) -> Vec<HardRule> {
    let mut rules = Vec::new();
    for (source, table, index) in [
        (HardRuleSource::Blocklist, "blocklist", "blocklist_pkey"),
        (
            HardRuleSource::ConfirmedFraud,
            "fraud_identities",
            "fraud_identities_pkey",
        ),
    ] {
        let (table, index) = (Relation::open(table), Relation::open(index));
        for (kind, value) in
            IdentityKind::ALL
                .into_iter()
                .zip([&ids.email, &ids.device, &ids.ip, &ids.card])
        {
            let Some(value) = value else { continue };
            let mut found = false;
            let keys = [Key::TextEq(kind.as_str()), Key::TextEq(value)];
            scan(
                &table,
                &index,
                snapshot,
                &keys,
                Direction::Forward,
                |entry| {
                    let expired = source == HardRuleSource::Blocklist
                        && entry
                            .timestamp(column::EXPIRES_AT)
                            .is_some_and(|at| at <= now);
                    found = !expired;
                    if found {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            );
            if found {
                // The reason the engine writes already says which identity and why.
                rules.push(HardRule {
                    identity: kind,
                    source,
                    detail: String::new(),
                });
            }
        }
        index.close();
        table.close();
    }
    rules.sort_by_key(|rule| rule.identity.as_str());
    rules
}

fn identity_args(ids: &Identities) -> [DatumWithOid<'_>; 4] {
    [
        ids.email.clone().into(),
        ids.device.clone().into(),
        ids.ip.clone().into(),
        ids.card.clone().into(),
    ]
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Inserts the assessment with its `features`; returns the transaction id it
/// was given (a random version 4 UUID).
pub fn record(
    api_key_id: Option<i64>,
    request: &Request,
    ids: &Identities,
    assessment: &Assessment,
    features: serde_json::Value,
) -> pgrx::Uuid {
    let id = crate::pg::random_uuid("a transaction id");
    let oid = |o: PgBuiltInOids| PgOid::BuiltIn(o);
    let result = Spi::connect_mut(|client| {
        RECORD_PLAN.with(|cell| -> Result<(), pgrx::spi::Error> {
            let mut plan = cell.borrow_mut();
            if plan.is_none() {
                use PgBuiltInOids as T;
                let types = [
                    T::UUIDOID,
                    T::INT8OID,
                    T::JSONBOID,
                    T::JSONBOID,
                    T::FLOAT8OID,
                    T::INT2OID,
                    T::TEXTOID,
                    T::TEXTOID,
                    T::JSONBOID,
                    T::TEXTOID,
                    T::TEXTOID,
                    T::TEXTOID,
                    T::TEXTOID,
                    T::FLOAT8OID,
                ]
                .map(oid);
                *plan = Some(client.prepare_mut(RECORD, &types)?.keep());
            }
            let Some(statement) = plan.as_ref() else {
                unreachable!("prepared above")
            };
            let [email, device, ip, card] = identity_args(ids);
            let args: [DatumWithOid; 14] = [
                id.into(),
                api_key_id.into(),
                Jsonb(request.to_json()).into(),
                Jsonb(features).into(),
                assessment.score.into(),
                i16::from(assessment.level).into(),
                assessment.result.as_str().into(),
                assessment.confidence.as_str().into(),
                Jsonb(assessment.reasons_json()).into(),
                email,
                device,
                ip,
                card,
                request.amount.into(),
            ];
            client.update(statement, None, &args)?;
            Ok(())
        })
    });
    if let Err(e) = result {
        error!("could not record the transaction: {e}");
    }
    id
}
