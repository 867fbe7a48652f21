//! The fraud patterns of [`crate::params`]: bust-outs, device farms, card
//! testing, account takeover, reshipping and throwaway accounts, each in
//! campaigns; and, in the `rings_move_on` world, the rings' devices and
//! addresses handed on to honest customers.

use std::collections::HashMap;
use std::net::IpAddr;

use rand::Rng;
use serde_json::Value;

use super::pools::{code, DISPOSABLE, DOMAINS, ELSEWHERE, HOME};
use super::request::Purchase;
use super::{lognormal, pick, World};
use crate::params::*;

/// A stolen card: the victim's name and billing address.
#[derive(Clone)]
pub(super) struct Card {
    pub(super) name: String,
    pub(super) billing: String,
    pub(super) country: usize,
}

impl World {
    pub(super) fn fraud(&mut self) {
        // New-account bust-out.
        for start in self.campaigns(BUST_OUTS, (2.0, 0.25)) {
            let careful = self.rng.random_bool(CAREFUL_FRAUD);
            let card = self.stolen_card();
            let email = self.fraud_email(0.1);
            let device = self.fraud_device();
            let signup = if careful {
                start - self.rng.random_range(30.0..200.0)
            } else {
                start
            };
            let shipping = if self.rng.random_bool(FRAUD_SHIPS_TO_BILLING) {
                card.billing.clone()
            } else if self.rng.random_bool(0.7) {
                self.address(card.country)
            } else {
                self.foreign_address()
            };
            for k in 0..self.rng.random_range(1..=3) {
                let (ip, proxy) = self.fraud_ip(&card, careful);
                let day = start + 0.01 + f64::from(k) * 0.05;
                let amount = lognormal(&mut self.rng, 400.0, 0.6);
                self.push(
                    Purchase::fraud(
                        &email, &card, &shipping, &ip, &device, amount, day, signup, proxy,
                    ),
                    "bust_out",
                );
            }
        }
        // Device farms.
        for start in self.campaigns(DEVICE_FARMS, (2.0, 0.25)) {
            let devices: Vec<String> = (0..self.rng.random_range(FARM_DEVICES.0..=FARM_DEVICES.1))
                .map(|_| self.fraud_device())
                .collect();
            for _ in 0..self.rng.random_range(FARM_ACCOUNTS.0..=FARM_ACCOUNTS.1) {
                let careful = self.rng.random_bool(CAREFUL_FRAUD);
                let card = self.stolen_card();
                let email = self.fraud_email(0.15);
                let signup_at = start + self.rng.random_range(0.0..10.0);
                let signup = if careful {
                    signup_at - self.rng.random_range(20.0..90.0)
                } else {
                    signup_at
                };
                for k in 0..self.rng.random_range(1..=2) {
                    let device = pick(&mut self.rng, &devices).clone();
                    let (ip, proxy) = self.fraud_ip(&card, careful);
                    let day = signup_at + self.rng.random_range(0.0..2.0) + f64::from(k) * 0.1;
                    let amount = lognormal(&mut self.rng, 150.0, 0.6);
                    let shipping = if self.rng.random_bool(FRAUD_SHIPS_TO_BILLING) {
                        card.billing.clone()
                    } else {
                        self.address(card.country)
                    };
                    self.push(
                        Purchase::fraud(
                            &email, &card, &shipping, &ip, &device, amount, day, signup, proxy,
                        ),
                        "device_farm",
                    );
                }
            }
        }
        // Card testing.
        for start in self.campaigns(CARD_TESTS, (1.0, 1.0)) {
            let device = self.fraud_device();
            let card0 = self.stolen_card();
            let (ip, proxy) = self.fraud_ip(&card0, false);
            let email = self.fraud_email(0.2);
            let signup = start - self.rng.random_range(0.0..3.0);
            let tries = self.rng.random_range(CARD_TEST_TRIES.0..=CARD_TEST_TRIES.1);
            let mut last = card0.clone();
            for k in 0..tries {
                let card = self.stolen_card();
                let day = start + f64::from(k) * self.rng.random_range(0.001..0.004);
                let amount = self.rng.random_range(1.0..10.0);
                self.push(
                    Purchase::fraud(
                        &email,
                        &card,
                        &card.billing,
                        &ip,
                        &device,
                        amount,
                        day,
                        signup,
                        proxy,
                    ),
                    "card_testing",
                );
                last = card;
            }
            let amount = lognormal(&mut self.rng, 400.0, 0.5);
            let day = start + 0.1;
            self.push(
                Purchase::fraud(
                    &email,
                    &last,
                    &last.billing,
                    &ip,
                    &device,
                    amount,
                    day,
                    signup,
                    proxy,
                ),
                "card_testing",
            );
        }
        // Account takeover of customers with a past.
        let candidates: Vec<usize> = (0..EXISTING_CUSTOMERS)
            .filter(|i| self.customers[*i].signup < -60.0)
            .collect();
        for start in self.campaigns(TAKEOVERS, (0.25, 2.0)) {
            let c = self.customers[*pick(&mut self.rng, &candidates)].clone();
            let card = Card {
                name: c.name.clone(),
                billing: c.billing.clone(),
                country: c.country,
            };
            let device = self.fraud_device();
            let shipping = if self.rng.random_bool(0.6) {
                self.address(c.country)
            } else {
                self.foreign_address()
            };
            for k in 0..self.rng.random_range(1..=3) {
                let (ip, proxy) = self.fraud_ip(&card, false);
                let day = start + f64::from(k) * 0.08;
                let amount = c.basket * self.rng.random_range(3.0..10.0);
                let mut p = Purchase::fraud(
                    &c.email, &card, &shipping, &ip, &device, amount, day, c.signup, proxy,
                );
                p.payment = c.payment;
                self.push(p, "account_takeover");
            }
        }
        // Reshipping.
        for start in self.campaigns(RESHIPPERS, (0.25, 2.0)) {
            let careful = self.rng.random_bool(CAREFUL_FRAUD);
            let card = self.stolen_card();
            let email = self.fraud_email(0.05);
            let device = self.fraud_device();
            let signup = start - self.rng.random_range(7.0..60.0);
            let shipping = self.foreign_address();
            for k in 0..self.rng.random_range(1..=4) {
                let (ip, proxy) = self.fraud_ip(&card, careful);
                let day = start + f64::from(k) * self.rng.random_range(0.5..5.0);
                let amount = lognormal(&mut self.rng, 300.0, 0.6);
                self.push(
                    Purchase::fraud(
                        &email, &card, &shipping, &ip, &device, amount, day, signup, proxy,
                    ),
                    "reshipping",
                );
            }
        }
        // Throwaway accounts on disposable e-mail.
        for start in self.campaigns(DISPOSABLES, (1.0, 1.0)) {
            let card = self.stolen_card();
            let email = self.fraud_email(1.0);
            let device = self.fraud_device();
            let (ip, proxy) = self.fraud_ip(&card, false);
            let signup = start - self.rng.random_range(0.0..2.0);
            let amount = lognormal(&mut self.rng, 120.0, 0.6);
            let shipping = self.address(card.country);
            self.push(
                Purchase::fraud(
                    &email, &card, &shipping, &ip, &device, amount, start, signup, proxy,
                ),
                "disposable_email",
            );
        }
        // Purchases after the last day are not in the window.
        self.events.retain(|e| e.day < f64::from(DAYS));
    }

    /// The `rings_move_on` world: a share of the rings' devices and
    /// addresses passes to an honest customer, who uses it from a few days
    /// after the ring's last purchase on.
    pub(super) fn hand_on(&mut self) {
        if self.scenario.handed_on <= 0.0 {
            return;
        }
        let mut last_use: HashMap<(&'static str, String), f64> = HashMap::new();
        for e in self.events.iter().filter(|e| e.fraud) {
            for field in ["deviceFingerprint", "ipAddress"] {
                if let Some(v) = e.body[field].as_str() {
                    let at = last_use.entry((field, v.to_owned())).or_insert(e.day);
                    *at = at.max(e.day);
                }
            }
        }
        let mut honest: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, e) in self.events.iter().enumerate().filter(|(_, e)| !e.fraud) {
            if let Some(email) = e.body["customerEmail"].as_str() {
                honest.entry(email.to_owned()).or_default().push(i);
            }
        }
        let mut customers: Vec<Vec<usize>> = honest.into_values().collect();
        customers.sort();
        let mut handed: Vec<((&'static str, String), f64)> = last_use.into_iter().collect();
        handed.sort_by(|a, b| a.0.cmp(&b.0));
        for ((field, value), last) in handed {
            if !self.rng.random_bool(self.scenario.handed_on) {
                continue;
            }
            let from = last + self.rng.random_range(2.0..20.0);
            let events = pick(&mut self.rng, &customers).clone();
            for i in events {
                if self.events[i].day < from {
                    continue;
                }
                let e = &mut self.events[i];
                e.body[field] = Value::from(value.as_str());
                if field == "ipAddress" {
                    e.ip_country = value
                        .parse::<IpAddr>()
                        .ok()
                        .and_then(|ip| self.geo.country(ip));
                }
            }
        }
    }

    fn stolen_card(&mut self) -> Card {
        let country = self.home_country();
        let (name, _) = self.person();
        Card {
            name,
            billing: self.address(country),
            country,
        }
    }

    /// A fraudster's new e-mail: free-mail, sometimes disposable.
    fn fraud_email(&mut self, disposable: f64) -> String {
        let (_, local) = self.person();
        let domain = if self.rng.random_bool(disposable) {
            *pick(&mut self.rng, &DISPOSABLE)
        } else {
            *pick(&mut self.rng, &DOMAINS[..5])
        };
        format!("{local}{}@{domain}", self.rng.random_range(10..99))
    }

    /// Where a fraudster connects from: a residential IP in the victim's
    /// country (careful), else a flagged proxy or a foreign address.
    fn fraud_ip(&mut self, card: &Card, careful: bool) -> (String, bool) {
        if self.chance(self.scenario.fraud_over_carriers) {
            (
                pick(&mut self.rng, &self.carriers[card.country]).clone(),
                false,
            )
        } else if self.rng.random_bool(SHARED_PROXY_FRAUD) {
            let (ip, country) = pick(&mut self.rng, &self.proxies).clone();
            // Flagged by the client's proxy detection now and then.
            let flagged = country != code(HOME[card.country].0) && self.rng.random_bool(0.3);
            (ip, flagged)
        } else if careful || self.rng.random_bool(0.35) {
            (self.ips.take(code(HOME[card.country].0)), false)
        } else if self.rng.random_bool(0.5) {
            let (c, _) = *pick(&mut self.rng, &ELSEWHERE);
            (self.ips.take(code(c)), false)
        } else {
            let (c, _, _) = *pick(&mut self.rng, &HOME);
            (self.ips.take(code(c)), true)
        }
    }

    /// Start days of a pattern's campaigns, `per_month` on average; in the
    /// `drift` world at `early` times the rate in the first half and `late`
    /// times it in the second.
    fn campaigns(&mut self, per_month: u32, (early, late): (f64, f64)) -> Vec<f64> {
        if !self.scenario.drift {
            let n = per_month * DAYS / 30;
            return (0..n)
                .map(|_| self.rng.random_range(0.0..f64::from(DAYS)))
                .collect();
        }
        let half = f64::from(DAYS) / 2.0;
        let per_half = f64::from(per_month) * half / 30.0;
        let mut starts = Vec::new();
        for (rate, from) in [(early, 0.0), (late, half)] {
            let n = (per_half * rate).round() as u32;
            starts.extend((0..n).map(|_| from + self.rng.random_range(0.0..half)));
        }
        starts
    }

    /// A fraudster's device: a fresh one, or one of the popular fingerprints.
    fn fraud_device(&mut self) -> String {
        if self.chance(self.scenario.fraud_popular_devices) {
            pick(&mut self.rng, &self.popular).clone()
        } else {
            self.device()
        }
    }
}
