//! What the database knows about a transaction's identities within its
//! account, and the record of each assessment.
//!
//! The history is read from index ranges directly ([`crate::pg::index_range`]),
//! keyed by identity and event time (`occurred_at`): each identity's rows up to
//! the transaction's event time (for devices, IPs and cards the same entries
//! carry the e-mail, to count the others over 1, 30 and 90 days), the start of
//! each range (first seen), the e-mail's range newest first, which also gives
//! this customer's last 100 amounts, and the hard rules (blocklist and
//! confirmed-fraud primary keys). The record is
//! one prepared INSERT through SPI, so it gets the table's defaults, domains,
//! indexes and triggers.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ops::ControlFlow;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use vigil_risk::history::{LinkageCounter, LINKAGE_SCAN_CAP};
use vigil_risk::{
    network_hash, AmountStats, Assessment, HardRule, HardRuleSource, History, Identities,
    IdentityKind, NetworkLink, Request, Window,
};

use crate::pg::index_range::{scan, Direction, Entry, Key, Relation, Snapshot};
use crate::pg::jsonb::Jsonb;

const RECORD: &str = "
INSERT INTO vigil.transactions
  (id, api_key_id, request, features, score, level, result, confidence, reasons,
   email, device, ip, card, amount, occurred_at, model_x, account)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)";

thread_local! {
    static RECORD_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
}

/// Columns of the history's indexes (schema.sql), in index order; each
/// index's first is the account.
mod column {
    /// `transactions_<identity> (account, <identity>, occurred_at) INCLUDE (...)`.
    pub const OCCURRED_AT: usize = 3;
    /// `transactions_email`: `INCLUDE (amount)`.
    pub const AMOUNT: usize = 4;
    /// `transactions_device`, `transactions_ip` and `transactions_card`: `INCLUDE (email)`.
    pub const EMAIL: usize = 4;
    /// `blocklist_pkey (account, kind, value) INCLUDE (expires_at)`.
    pub const EXPIRES_AT: usize = 4;
    /// `fraud_identities_pkey (account, kind, value, transaction_id) INCLUDE (occurred_at)`.
    pub const FRAUD_OCCURRED_AT: usize = 5;
    /// `network_fraud_pkey (kind, hash, account, transaction_id)`.
    pub const NETWORK_ACCOUNT: usize = 3;
}

/// Other accounts counted per identity: past this, more say nothing new
/// (the points are capped long before).
const NETWORK_ACCOUNTS_CAP: usize = 50;

/// Reads the history of `ids` in `account` as of `event` (the transaction's
/// event time, [`vigil_risk::Request::event_time_us`]): rows that occurred
/// after it are not its history. Hard rules and blocklist expiry are as of now.
pub fn load(
    account: &str,
    ids: &Identities,
    event: pg_sys::TimestampTz,
    snapshot: &Snapshot,
) -> History {
    let now = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
    let age = |entry: &Entry| event - entry.timestamp(column::OCCURRED_AT).unwrap_or(event);
    let table = Relation::open("transactions");
    let mut history = History::default();
    let until_event = Key::Between {
        after: None,
        until: event,
    };

    if let Some(email) = &ids.email {
        // Newest first: the day's velocity, then amounts until there are 100.
        let index = Relation::open("transactions_email");
        let mut amounts = Vec::with_capacity(AmountStats::RECENT);
        let mut oldest = Oldest::default();
        scan(
            &table,
            &index,
            snapshot,
            &[Key::TextEq(account), Key::TextEq(email), until_event],
            Direction::Backward,
            |entry| {
                let age = age(entry);
                oldest.seen = Some(age);
                history.email.add(age);
                if amounts.len() < AmountStats::RECENT {
                    amounts.extend(entry.float8(column::AMOUNT));
                }
                if amounts.len() >= AmountStats::RECENT && !Window::in_day(age) {
                    oldest.stopped = true;
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            },
        );
        history.customer_amounts = AmountStats::of(&amounts);
        history.email_first_seen_us =
            oldest.first_seen(&table, &index, snapshot, [account, email], event);
        index.close();
    }
    let email = ids.email.as_deref().map(str::as_bytes);
    // A device's, an IP's and a card's last LINKAGE_DAYS, newest first: the
    // day's velocity and other e-mails (always all of the day), and the other
    // e-mails of the longer windows (past the day, reading stops after
    // LINKAGE_SCAN_CAP rows).
    let mut others = LinkageCounter::default();
    for (value, index, window, linkage, first) in [
        (
            &ids.device,
            "transactions_device",
            &mut history.device,
            &mut history.device_others,
            Some(&mut history.device_first_seen_us),
        ),
        (
            &ids.ip,
            "transactions_ip",
            &mut history.ip,
            &mut history.ip_others,
            Some(&mut history.ip_first_seen_us),
        ),
        (
            &ids.card,
            "transactions_card",
            &mut history.card,
            &mut history.card_others,
            None,
        ),
    ] {
        let Some(value) = value else { continue };
        let index = Relation::open(index);
        *window = Window::with_month();
        others.clear();
        let keys = [Key::TextEq(account), Key::TextEq(value), until_event];
        let mut read = 0usize;
        let mut oldest = Oldest::default();
        scan(
            &table,
            &index,
            snapshot,
            &keys,
            Direction::Backward,
            |entry| {
                let age = age(entry);
                if age >= Window::QUARTER_US {
                    // Older than the window: it exists, and is not the oldest.
                    oldest.stopped = true;
                    return ControlFlow::Break(());
                }
                oldest.seen = Some(age);
                let in_day = Window::in_day(age);
                window.add(age);
                // Other e-mails seen with this identity (IS DISTINCT FROM).
                if let Some(other) = entry.text(column::EMAIL).filter(|e| Some(*e) != email) {
                    others.add(other, age);
                }
                read += 1;
                if read >= LINKAGE_SCAN_CAP && !in_day {
                    oldest.stopped = true;
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            },
        );
        *linkage = others.finish();
        if let Some(first) = first {
            *first = oldest.first_seen(&table, &index, snapshot, [account, value], event);
        }
        index.close();
    }
    history.hard_rules = hard_rules(account, ids, now, event, snapshot);
    history.network = network(account, ids, snapshot);
    table.close();
    history
}

/// The oldest row a backward scan of one identity's range visited.
#[derive(Default)]
struct Oldest {
    /// Its age.
    seen: Option<i64>,
    /// Whether the scan stopped before the range's start.
    stopped: bool,
}

impl Oldest {
    /// How long before `event` the identity was first seen: the oldest row
    /// visited when the scan read the whole range, else one descent to the
    /// range's start (most identities are read whole, so most need none).
    fn first_seen(
        &self,
        table: &Relation,
        index: &Relation,
        snapshot: &Snapshot,
        [account, value]: [&str; 2],
        event: pg_sys::TimestampTz,
    ) -> Option<i64> {
        if !self.stopped {
            return self.seen;
        }
        let mut first = None;
        let keys = [
            Key::TextEq(account),
            Key::TextEq(value),
            Key::Between {
                after: None,
                until: event,
            },
        ];
        scan(table, index, snapshot, &keys, Direction::Forward, |entry| {
            first = entry.timestamp(column::OCCURRED_AT).map(|at| event - at);
            ControlFlow::Break(())
        });
        first
    }
}

/// Blocklist entries (unexpired) and confirmed-fraud identities among `ids`,
/// ordered by kind name; a confirmed fraud with the time since the youngest
/// such fraud before `event` (the engine grades a device's or IP's link by it).
fn hard_rules(
    account: &str,
    ids: &Identities,
    now: pg_sys::TimestampTz,
    event: pg_sys::TimestampTz,
    snapshot: &Snapshot,
) -> Vec<HardRule> {
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
            // The youngest confirmed fraud's time (None: not recorded).
            let mut youngest: Option<pg_sys::TimestampTz> = None;
            let keys = [
                Key::TextEq(account),
                Key::TextEq(kind.as_str()),
                Key::TextEq(value),
            ];
            scan(
                &table,
                &index,
                snapshot,
                &keys,
                Direction::Forward,
                |entry| {
                    if source == HardRuleSource::Blocklist {
                        found = entry
                            .timestamp(column::EXPIRES_AT)
                            .is_none_or(|at| at > now);
                        return if found {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        };
                    }
                    found = true;
                    let at = entry.timestamp(column::FRAUD_OCCURRED_AT);
                    youngest = youngest.max(at.map(|at| at.min(event)));
                    ControlFlow::Continue(())
                },
            );
            if found {
                // The reason the engine writes already says which identity and why.
                rules.push(HardRule {
                    identity: kind,
                    source,
                    detail: String::new(),
                    fraud_age_us: youngest.map(|at| event - at),
                });
            }
        }
        index.close();
        table.close();
    }
    rules.sort_by_key(|rule| rule.identity.as_str());
    rules
}

/// The network layer: this request's e-mail, device and card as other
/// accounts sharing risk signals confirmed them as fraud, with how many
/// accounts did; nothing unless `account` shares too. Read by their hashes
/// (`vigil.network_fraud`), the only thing the network holds.
fn network(account: &str, ids: &Identities, snapshot: &Snapshot) -> Vec<NetworkLink> {
    let mut links = Vec::new();
    if !shares(account, snapshot) {
        return links;
    }
    let (table, index) = (
        Relation::open("network_fraud"),
        Relation::open("network_fraud_pkey"),
    );
    for (kind, value) in [
        (IdentityKind::Email, &ids.email),
        (IdentityKind::Device, &ids.device),
        (IdentityKind::Card, &ids.card),
    ] {
        let Some(value) = value else { continue };
        let hash = network_hash(kind.as_str(), value);
        let mut others = BTreeSet::new();
        let keys = [Key::TextEq(kind.as_str()), Key::TextEq(&hash)];
        scan(
            &table,
            &index,
            snapshot,
            &keys,
            Direction::Forward,
            |entry| {
                if let Some(other) = entry.text(column::NETWORK_ACCOUNT) {
                    if other != account.as_bytes() {
                        others.insert(other.to_vec());
                    }
                }
                if others.len() >= NETWORK_ACCOUNTS_CAP {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        if !others.is_empty() {
            links.push(NetworkLink {
                identity: kind,
                accounts: others.len() as u32,
            });
        }
    }
    index.close();
    table.close();
    links
}

/// Whether `account` shares risk signals (`accounts_sharing`, a partial
/// index of the accounts that do).
fn shares(account: &str, snapshot: &Snapshot) -> bool {
    let (table, index) = (
        Relation::open("accounts"),
        Relation::open("accounts_sharing"),
    );
    let mut found = false;
    scan(
        &table,
        &index,
        snapshot,
        &[Key::TextEq(account)],
        Direction::Forward,
        |_| {
            found = true;
            ControlFlow::Break(())
        },
    );
    index.close();
    table.close();
    found
}

fn identity_args(ids: &Identities) -> [DatumWithOid<'_>; 4] {
    [
        ids.email.clone().into(),
        ids.device.clone().into(),
        ids.ip.clone().into(),
        ids.card.clone().into(),
    ]
}

/// Inserts the assessment with its `features` and event time; returns the transaction id it
/// was given (a random version 4 UUID).
pub fn record(
    account: &str,
    api_key_id: Option<i64>,
    request: &Request,
    ids: &Identities,
    assessment: &Assessment,
    features: serde_json::Value,
    occurred_at: pgrx::datum::TimestampWithTimeZone,
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
                    T::TIMESTAMPTZOID,
                    T::FLOAT4ARRAYOID,
                    T::TEXTOID,
                ]
                .map(oid);
                *plan = Some(client.prepare_mut(RECORD, &types)?.keep());
            }
            let Some(statement) = plan.as_ref() else {
                unreachable!("prepared above")
            };
            let [email, device, ip, card] = identity_args(ids);
            let model_x: Vec<f32> = assessment
                .model_features
                .iter()
                .map(|v| *v as f32)
                .collect();
            let args: [DatumWithOid; 17] = [
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
                DatumWithOid::from(occurred_at),
                model_x.into(),
                account.into(),
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
