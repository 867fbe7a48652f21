//! The simulated shop: customers, their households, offices, phones and VPNs, and
//! the fraud campaigns of [`crate::params`], as one stream of form B requests in
//! time order, each with its label and pattern.
//!
//! The generator's state and its small draws are here; what it draws from is
//! in `pools`, honest customers and their purchases in `customers`, the
//! fraud patterns in `fraud`, and the request body of a purchase in `request`.

mod customers;
mod fraud;
mod pools;
mod request;

use std::net::IpAddr;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use vigil_risk::GeoIp;

use crate::params::*;
use crate::scenario::Scenario;
use customers::Customer;
use pools::{code, IpPools, BROWSERS, ELSEWHERE, FIRST, HOME, LAST, REFERRALS, STREETS, VPN_EXITS};
use request::Purchase;

pub use request::START_UNIX;

/// One simulated purchase.
#[derive(Debug, Clone)]
pub struct Event {
    /// Days since the start.
    pub day: f64,
    /// The form B request, `time` included.
    pub body: Value,
    pub fraud: bool,
    /// `legit` or the fraud pattern's name.
    pub pattern: &'static str,
    /// The IP address's country, as the MMDB says.
    pub ip_country: Option<[u8; 2]>,
}

/// Generates the whole stream, sorted by time.
pub struct World {
    scenario: Scenario,
    /// Fingerprints many customers share (`POPULAR_FINGERPRINTS`).
    popular: Vec<String>,
    rng: SmallRng,
    ips: IpPools,
    geo: GeoIp,
    carriers: Vec<Vec<String>>,
    vpn_exits: Vec<String>,
    proxies: Vec<(String, [u8; 2])>,
    customers: Vec<Customer>,
    events: Vec<Event>,
    serial: u64,
}

fn lognormal(rng: &mut SmallRng, median: f64, sigma: f64) -> f64 {
    // Box-Muller.
    let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
    median * (sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()).exp()
}

fn pick<'a, T>(rng: &mut SmallRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

impl World {
    pub fn generate(seed: u64, geo: GeoIp, scenario: Scenario) -> Vec<Event> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut ips = IpPools::build(&geo, &mut rng);
        let carriers = HOME
            .iter()
            .map(|h| (0..6).map(|_| ips.take(code(h.0))).collect())
            .collect();
        let vpn_exits = (0..24)
            .map(|i| ips.take(code(VPN_EXITS[i % VPN_EXITS.len()])))
            .collect();
        let proxies = (0..SHARED_PROXIES)
            .map(|i| {
                let (c, _, _) = HOME[i % HOME.len()];
                (ips.take(code(c)), code(c))
            })
            .collect();
        let popular = (0..POPULAR_FINGERPRINTS)
            .map(|i| format!("dev-popular-{i:03}"))
            .collect();
        let mut w = World {
            scenario,
            popular,
            rng,
            ips,
            geo,
            carriers,
            vpn_exits,
            proxies,
            customers: Vec::new(),
            events: Vec::new(),
            serial: 0,
        };
        w.populate();
        for c in 0..w.customers.len() {
            w.shop(c);
        }
        w.fraud();
        w.hand_on();
        let mut events = w.events;
        events.sort_by(|a, b| a.day.total_cmp(&b.day));
        events
    }

    fn id(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    fn home_country(&mut self) -> usize {
        let mut x: f64 = self.rng.random();
        for (i, h) in HOME.iter().enumerate() {
            x -= h.2;
            if x <= 0.0 {
                return i;
            }
        }
        0
    }

    fn address(&mut self, country: usize) -> String {
        let n = self.rng.random_range(1..300);
        let street = *pick(&mut self.rng, &STREETS);
        let city = self.rng.random_range(1..400);
        format!("{n} {street}, District {city}, {}", HOME[country].1)
    }

    fn foreign_address(&mut self) -> String {
        let (_, name) = *pick(&mut self.rng, &ELSEWHERE);
        let n = self.rng.random_range(1..900);
        format!("Unit {n}, Freight Park, {name}")
    }

    fn device(&mut self) -> String {
        format!("dev-{:016x}", self.rng.random::<u64>())
    }

    fn person(&mut self) -> (String, String) {
        let first = *pick(&mut self.rng, &FIRST);
        let last = *pick(&mut self.rng, &LAST);
        let n = self.id();
        (format!("{first} {last}"), format!("{first}.{last}{n}"))
    }

    fn push(&mut self, p: Purchase, pattern: &'static str) {
        let browser = *pick(&mut self.rng, &BROWSERS);
        let referral = *pick(&mut self.rng, &REFERRALS);
        let ip_country =
            p.ip.parse::<IpAddr>()
                .ok()
                .and_then(|ip| self.geo.country(ip));
        let body = p.json(browser, referral);
        self.events.push(Event {
            day: p.day,
            body,
            fraud: pattern != "legit",
            pattern,
            ip_country,
        });
    }

    /// Whether an event of probability `p` happens; draws nothing when `p`
    /// is 0, so a world without the knob is the baseline's, draw for draw.
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p)
    }
}
