//! The history the extension reads from its indexes, kept in memory: the
//! simulator's reference model, so the engine can be measured in process in
//! seconds (`--in-process`), and the replay through Postgres compared with it.
//! It follows `extension/src/risk/history.rs`: windows end at the event time,
//! the device's, IP's and card's reading stops after `LINKAGE_SCAN_CAP` rows
//! past the day, amounts are the e-mail's last 100. Hard rules are not kept.

use std::collections::HashMap;

use vigil_risk::history::{LinkageCounter, LINKAGE_SCAN_CAP};
use vigil_risk::{AmountStats, History, Identities, Window};

#[derive(Default)]
pub struct Ledger {
    email: HashMap<String, Vec<(i64, Option<f64>)>>,
    device: HashMap<String, Vec<(i64, Option<String>)>>,
    ip: HashMap<String, Vec<(i64, Option<String>)>>,
    card: HashMap<String, Vec<(i64, Option<String>)>>,
}

impl Ledger {
    /// The history of a transaction with `ids` at `at_us` (events arrive in time order).
    pub fn history(&self, ids: &Identities, at_us: i64) -> History {
        let mut h = History::default();
        if let Some(rows) = ids.email.as_ref().and_then(|e| self.email.get(e)) {
            let mut amounts = Vec::new();
            for (t, amount) in rows.iter().rev() {
                let age = at_us - t;
                h.email.add(age);
                if amounts.len() < AmountStats::RECENT {
                    amounts.extend(*amount);
                }
                if amounts.len() >= AmountStats::RECENT && !Window::in_day(age) {
                    break;
                }
            }
            h.customer_amounts = AmountStats::of(&amounts);
            h.email_first_seen_us = rows.first().map(|(t, _)| at_us - t);
        }
        let email = ids.email.as_deref();
        let mut others = LinkageCounter::default();
        for (value, map, window, linkage, first) in [
            (
                &ids.device,
                &self.device,
                &mut h.device,
                &mut h.device_others,
                Some(&mut h.device_first_seen_us),
            ),
            (
                &ids.ip,
                &self.ip,
                &mut h.ip,
                &mut h.ip_others,
                Some(&mut h.ip_first_seen_us),
            ),
            (&ids.card, &self.card, &mut h.card, &mut h.card_others, None),
        ] {
            let Some(value) = value else { continue };
            *window = Window::with_month();
            let Some(rows) = map.get(value) else { continue };
            others.clear();
            let mut read = 0;
            for (t, other) in rows.iter().rev() {
                let age = at_us - t;
                if age >= Window::QUARTER_US {
                    break;
                }
                let in_day = Window::in_day(age);
                window.add(age);
                if let Some(o) = other.as_deref().filter(|o| Some(*o) != email) {
                    others.add(o.as_bytes(), age);
                }
                read += 1;
                if read >= LINKAGE_SCAN_CAP && !in_day {
                    break;
                }
            }
            *linkage = others.finish();
            if let Some(first) = first {
                *first = rows.first().map(|(t, _)| at_us - t);
            }
        }
        h
    }

    /// Records a transaction.
    pub fn record(&mut self, ids: &Identities, at_us: i64, amount: Option<f64>) {
        if let Some(e) = &ids.email {
            self.email
                .entry(e.clone())
                .or_default()
                .push((at_us, amount));
        }
        for (value, map) in [
            (&ids.device, &mut self.device),
            (&ids.ip, &mut self.ip),
            (&ids.card, &mut self.card),
        ] {
            if let Some(v) = value {
                map.entry(v.clone())
                    .or_default()
                    .push((at_us, ids.email.clone()));
            }
        }
    }
}
