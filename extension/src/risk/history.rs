//! What the database knows about a transaction's identities, and the record of
//! each assessment.
//!
//! Both statements are prepared once per backend. The history is one query
//! whose parts are each an index range: each identity's rows in the last day
//! (`transactions_<identity>` indexes; for devices and IPs the same range also
//! counts the other e-mails), this customer's last 100 amounts, and the hard
//! rules (blocklist and confirmed-fraud primary keys).

use std::cell::RefCell;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;
use pgrx::spi::OwnedPreparedStatement;
use pgrx::JsonB;
use vigil_risk::{
    AmountStats, Assessment, HardRule, HardRuleSource, History, Identities, IdentityKind, Request,
    Window,
};

const HISTORY: &str = "
SELECT
  (SELECT ARRAY[count(*) FILTER (WHERE received_at > now() - interval '1 hour'), count(*)]
     FROM vigil.transactions WHERE email = $1 AND received_at > now() - interval '1 day'),
  (SELECT ARRAY[count(*) FILTER (WHERE received_at > now() - interval '1 hour'), count(*),
                count(DISTINCT email) FILTER (WHERE email IS DISTINCT FROM $1)]
     FROM vigil.transactions WHERE device = $2 AND received_at > now() - interval '1 day'),
  (SELECT ARRAY[count(*) FILTER (WHERE received_at > now() - interval '1 hour'), count(*),
                count(DISTINCT email) FILTER (WHERE email IS DISTINCT FROM $1)]
     FROM vigil.transactions WHERE ip = $3 AND received_at > now() - interval '1 day'),
  (SELECT ARRAY[count(*) FILTER (WHERE received_at > now() - interval '1 hour'), count(*)]
     FROM vigil.transactions WHERE card = $4 AND received_at > now() - interval '1 day'),
  (SELECT ARRAY[count(amount), coalesce(avg(amount), 0), coalesce(stddev_samp(amount), 0),
                coalesce(max(amount), 0)]::float8[]
     FROM (SELECT amount FROM vigil.transactions
            WHERE email = $1 AND amount IS NOT NULL ORDER BY received_at DESC LIMIT 100) recent),
  (SELECT array_agg(kind || ':' || source ORDER BY kind, source) FROM (
     SELECT kind, 'blocklist' AS source FROM vigil.blocklist
      WHERE (kind, value) IN (('email', $1), ('device', $2), ('ip', $3), ('card', $4))
        AND (expires_at IS NULL OR expires_at > now())
     UNION
     SELECT kind, 'fraud' FROM vigil.fraud_identities
      WHERE (kind, value) IN (('email', $1), ('device', $2), ('ip', $3), ('card', $4))) rules)
";

const RECORD: &str = "
INSERT INTO vigil.transactions
  (id, api_key_id, request, features, score, level, result, confidence, reasons,
   email, device, ip, card, amount)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

thread_local! {
    static HISTORY_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
    static RECORD_PLAN: RefCell<Option<OwnedPreparedStatement>> = const { RefCell::new(None) };
}

fn identity_args(ids: &Identities) -> [DatumWithOid<'_>; 4] {
    [
        ids.email.clone().into(),
        ids.device.clone().into(),
        ids.ip.clone().into(),
        ids.card.clone().into(),
    ]
}

pub fn load(ids: &Identities) -> History {
    let text = PgOid::BuiltIn(PgBuiltInOids::TEXTOID);
    let result = Spi::connect(|client| {
        HISTORY_PLAN.with(|cell| -> Result<History, pgrx::spi::Error> {
            let mut plan = cell.borrow_mut();
            if plan.is_none() {
                *plan = Some(client.prepare(HISTORY, &[text, text, text, text])?.keep());
            }
            let Some(statement) = plan.as_ref() else {
                unreachable!("prepared above")
            };
            let row = client
                .select(statement, Some(1), &identity_args(ids))?
                .first();
            // [last hour, last day(, other e-mails in the last day)] per identity.
            let counts = |i: usize| -> Result<Vec<i64>, pgrx::spi::Error> {
                Ok(row.get(i)?.unwrap_or_default())
            };
            let window = |c: &[i64]| Window {
                last_hour: count(c.first()),
                last_day: count(c.get(1)),
            };
            let (email, device, ip, card) = (counts(1)?, counts(2)?, counts(3)?, counts(4)?);
            let amounts: Vec<f64> = row.get(5)?.unwrap_or_default();
            let rules: Vec<String> = row.get(6)?.unwrap_or_default();
            Ok(History {
                email: window(&email),
                device: window(&device),
                ip: window(&ip),
                card: window(&card),
                device_distinct_emails_day: count(device.get(2)),
                ip_distinct_emails_day: count(ip.get(2)),
                customer_amounts: AmountStats {
                    count: amounts.first().map_or(0, |c| *c as u32),
                    mean: amounts.get(1).copied().unwrap_or(0.0),
                    stddev: amounts.get(2).copied().unwrap_or(0.0),
                    max: amounts.get(3).copied().unwrap_or(0.0),
                },
                hard_rules: rules.iter().filter_map(|r| hard_rule(r)).collect(),
            })
        })
    });
    result.unwrap_or_else(|e| error!("could not read the transaction history: {e}"))
}

fn count(value: Option<&i64>) -> u32 {
    value.map_or(0, |v| u32::try_from(*v).unwrap_or(u32::MAX))
}

/// `kind:source` as the history query spells a hard rule.
fn hard_rule(spelled: &str) -> Option<HardRule> {
    let (kind, source) = spelled.split_once(':')?;
    let identity = match kind {
        "email" => IdentityKind::Email,
        "device" => IdentityKind::Device,
        "ip" => IdentityKind::Ip,
        "card" => IdentityKind::Card,
        _ => return None,
    };
    let source = match source {
        "blocklist" => HardRuleSource::Blocklist,
        _ => HardRuleSource::ConfirmedFraud,
    };
    // The reason the engine writes already says which identity and why.
    Some(HardRule {
        identity,
        source,
        detail: String::new(),
    })
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
    let mut id = crate::strong_random::<16>("a transaction id");
    id[6] = (id[6] & 0x0f) | 0x40;
    id[8] = (id[8] & 0x3f) | 0x80;
    let id = pgrx::Uuid::from_bytes(id);
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
                JsonB(request.to_json()).into(),
                JsonB(features).into(),
                assessment.score.into(),
                i16::from(assessment.level).into(),
                assessment.result.as_str().into(),
                assessment.confidence.as_str().into(),
                JsonB(assessment.reasons_json()).into(),
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
