//! Honest customers: households that share a home IP and sometimes a
//! device, offices, phones on carriers, VPN users, travellers, and each
//! customer's own purchases over the months.

use rand::Rng;

use super::pools::{code, DISPOSABLE, DOMAINS, HOME};
use super::request::Purchase;
use super::{lognormal, pick, World};
use crate::params::*;

/// An honest customer: who they are, where they connect from, and how
/// often and how much they buy.
#[derive(Clone)]
pub(super) struct Customer {
    pub(super) email: String,
    pub(super) name: String,
    pub(super) country: usize,
    pub(super) billing: String,
    pub(super) home_ip: String,
    pub(super) office_ip: String,
    pub(super) devices: Vec<String>,
    pub(super) signup: f64,
    pub(super) rate: f64,
    pub(super) basket: f64,
    pub(super) vpn: bool,
    pub(super) two_factor: bool,
    pub(super) payment: &'static str,
}

impl World {
    pub(super) fn populate(&mut self) {
        let total = EXISTING_CUSTOMERS + NEW_CUSTOMERS;
        let mut offices: Vec<Vec<String>> = vec![Vec::new(); HOME.len()];
        while self.customers.len() < total {
            let country = self.home_country();
            let size = if self.rng.random_bool(HOUSEHOLD_SHARE) {
                self.rng.random_range(2..=4)
            } else {
                1
            };
            let home_ip = self.ips.take(code(HOME[country].0));
            let billing = self.address(country);
            let shared_device =
                (size > 1 && self.rng.random_bool(HOUSEHOLD_SHARED_DEVICE)).then(|| self.device());
            for _ in 0..size {
                let i = self.customers.len();
                let signup = if i < EXISTING_CUSTOMERS {
                    -self.rng.random_range(1.0..1500.0)
                } else {
                    (i - EXISTING_CUSTOMERS) as f64 / NEW_CUSTOMERS as f64 * f64::from(DAYS)
                };
                let (name, local) = self.person();
                let domain = if self.rng.random_bool(LEGIT_DISPOSABLE) {
                    *pick(&mut self.rng, &DISPOSABLE)
                } else {
                    *pick(&mut self.rng, &DOMAINS)
                };
                let office_ip = if offices[country].len() < 40 || self.rng.random_bool(0.02) {
                    let ip = self.ips.take(code(HOME[country].0));
                    offices[country].push(ip.clone());
                    ip
                } else {
                    pick(&mut self.rng, &offices[country]).clone()
                };
                let mut devices = vec![self.device()];
                if self.rng.random_bool(0.5) {
                    devices.push(self.device());
                }
                if let Some(d) = &shared_device {
                    devices[0] = d.clone();
                }
                let big = self.rng.random_bool(BIG_SPENDERS);
                let basket = lognormal(&mut self.rng, BASKET_MEDIAN, BASKET_SIGMA)
                    * if big { 10.0 } else { 1.0 };
                let rate = lognormal(&mut self.rng, PURCHASES_MEDIAN, PURCHASES_SIGMA);
                let payment = *pick(
                    &mut self.rng,
                    &[
                        "Credit Card",
                        "Credit Card",
                        "Credit Card",
                        "PayPal",
                        "Debit Card",
                    ],
                );
                let customer = Customer {
                    email: format!("{local}@{domain}"),
                    name,
                    country,
                    billing: billing.clone(),
                    home_ip: home_ip.clone(),
                    office_ip,
                    devices,
                    signup,
                    rate,
                    basket,
                    vpn: self.rng.random_bool(VPN_USERS),
                    two_factor: self.rng.random_bool(TWO_FACTOR),
                    payment,
                };
                self.customers.push(customer);
            }
        }
        self.customers.truncate(total);
    }

    /// A time of day in days: mostly 07:00-24:00, sometimes at night.
    fn time_of_day(&mut self) -> f64 {
        let hours = if self.rng.random_bool(NIGHT_PURCHASES) {
            self.rng.random_range(0.0..6.0)
        } else {
            self.rng.random_range(7.0..24.0)
        };
        hours / 24.0
    }

    /// One customer's own purchases.
    pub(super) fn shop(&mut self, i: usize) {
        let c = self.customers[i].clone();
        let mut t = if c.signup >= 0.0 {
            if self.rng.random_bool(NEW_BUY_SAME_DAY) {
                c.signup + self.rng.random_range(0.01..0.2)
            } else {
                c.signup + -10.0 * self.rng.random::<f64>().max(1e-9).ln()
            }
        } else if self.rng.random_bool(DORMANT_ACCOUNTS) {
            // First purchase some time in the window, on an old account.
            self.rng.random_range(0.0..f64::from(DAYS))
        } else {
            -(30.0 / c.rate) * self.rng.random::<f64>().max(1e-9).ln()
        };
        let mut devices = c.devices.clone();
        let mut first = true;
        while t < f64::from(DAYS) {
            let day = t.floor() + self.time_of_day();
            let (ip, vpn) = if c.vpn {
                (
                    pick(&mut self.rng, &self.vpn_exits).clone(),
                    self.rng.random_bool(0.8),
                )
            } else if self.rng.random_bool(TRAVEL_PURCHASES) {
                let (abroad, _, _) = *pick(&mut self.rng, &HOME);
                (self.ips.take(code(abroad)), false)
            } else if self.rng.random_bool(OFFICE_PURCHASES) {
                (c.office_ip.clone(), false)
            } else if self.rng.random_bool(self.scenario.carrier_purchases) {
                (
                    pick(&mut self.rng, &self.carriers[c.country]).clone(),
                    false,
                )
            } else if self.rng.random_bool(HOME_IP_CHANGES) {
                (self.ips.take(code(HOME[c.country].0)), false)
            } else {
                (c.home_ip.clone(), false)
            };
            if self.rng.random_bool(NEW_DEVICE_PURCHASES) {
                let d = self.device();
                devices.push(d);
            }
            let device = if self.chance(self.scenario.popular_devices) {
                pick(&mut self.rng, &self.popular).clone()
            } else {
                pick(&mut self.rng, &devices).clone()
            };
            let shipping = if self.rng.random_bool(GIFT_ABROAD) {
                let other = self.home_country();
                self.address(other)
            } else if self.rng.random_bool(GIFT_PURCHASES + SHIP_TO_WORK) {
                self.address(c.country)
            } else {
                c.billing.clone()
            };
            let amount = c.basket * lognormal(&mut self.rng, 1.0, AMOUNT_SIGMA);
            let body = Purchase {
                email: &c.email,
                name: &c.name,
                billing: &c.billing,
                shipping: &shipping,
                ip: &ip,
                device: &device,
                amount,
                day,
                signup: c.signup,
                vpn,
                proxy: false,
                two_factor: c.two_factor,
                payment: c.payment,
                quantity: self.rng.random_range(1..4),
            };
            self.push(body, "legit");
            if c.signup >= 0.0 && first && self.rng.random_bool(ONE_TIME_BUYERS) {
                break;
            }
            first = false;
            t += -(30.0 / c.rate) * self.rng.random::<f64>().max(1e-9).ln();
        }
    }
}
