//! The simulated shop: customers, their households, offices, phones and VPNs, and
//! the fraud campaigns of [`crate::params`], as one stream of form B requests in
//! time order, each with its label and pattern.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use vigil_risk::GeoIp;

use crate::params::*;
use crate::scenario::Scenario;

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

/// Countries customers live in, with their weight, and where proxies and
/// reshippers are.
const HOME: [(&str, &str, f64); 9] = [
    ("US", "United States", 0.40),
    ("GB", "United Kingdom", 0.15),
    ("DE", "Germany", 0.12),
    ("FR", "France", 0.08),
    ("CA", "Canada", 0.07),
    ("AU", "Australia", 0.05),
    ("NL", "Netherlands", 0.05),
    ("ES", "Spain", 0.04),
    ("IT", "Italy", 0.04),
];
const ELSEWHERE: [(&str, &str); 8] = [
    ("BR", "Brazil"),
    ("NG", "Nigeria"),
    ("RU", "Russia"),
    ("VN", "Vietnam"),
    ("ID", "Indonesia"),
    ("UA", "Ukraine"),
    ("RO", "Romania"),
    ("SG", "Singapore"),
];
const VPN_EXITS: [&str; 4] = ["NL", "SE", "CH", "US"];

const FIRST: [&str; 24] = [
    "james", "mary", "john", "linda", "peter", "anna", "lukas", "emma", "noah", "olivia", "liam",
    "sophie", "marco", "giulia", "pierre", "chloe", "jack", "isla", "david", "sarah", "tom",
    "laura", "max", "mia",
];
const LAST: [&str; 20] = [
    "smith", "jones", "brown", "miller", "wilson", "taylor", "muller", "schmidt", "martin",
    "bernard", "rossi", "russo", "garcia", "lopez", "devries", "jansen", "clark", "lewis",
    "walker", "young",
];
const DOMAINS: [&str; 7] = [
    "gmail.com",
    "yahoo.com",
    "outlook.com",
    "hotmail.com",
    "icloud.com",
    "gmx.de",
    "orange.fr",
];
const DISPOSABLE: [&str; 5] = [
    "mailinator.com",
    "guerrillamail.com",
    "yopmail.com",
    "10minutemail.com",
    "trashmail.com",
];
const STREETS: [&str; 10] = [
    "Oak Street",
    "High Street",
    "Main Road",
    "Station Road",
    "Church Lane",
    "Park Avenue",
    "Mill Lane",
    "King Street",
    "Elm Road",
    "Bridge Street",
];
const BROWSERS: [&str; 4] = ["Chrome", "Safari", "Firefox", "Edge"];
const REFERRALS: [&str; 4] = ["Direct", "Google", "Facebook", "Newsletter"];

/// IPv4 addresses by country, found by sampling the MMDB.
struct IpPools {
    by_country: HashMap<[u8; 2], Vec<Ipv4Addr>>,
    next: HashMap<[u8; 2], usize>,
}

fn code(c: &str) -> [u8; 2] {
    let b = c.as_bytes();
    [b[0], b[1]]
}

impl IpPools {
    fn build(geo: &GeoIp, rng: &mut SmallRng) -> IpPools {
        let wanted: Vec<[u8; 2]> = HOME
            .iter()
            .map(|h| code(h.0))
            .chain(ELSEWHERE.iter().map(|e| code(e.0)))
            .chain(VPN_EXITS.iter().map(|c| code(c)))
            .collect();
        let mut by_country: HashMap<[u8; 2], Vec<Ipv4Addr>> = HashMap::new();
        for _ in 0..6_000_000 {
            let ip = Ipv4Addr::from(rng.random::<u32>());
            if ip.is_private() || ip.is_loopback() || ip.is_multicast() || ip.octets()[0] >= 224 {
                continue;
            }
            if let Some(c) = geo.country(IpAddr::V4(ip)) {
                if wanted.contains(&c) {
                    let pool = by_country.entry(c).or_default();
                    if pool.len() < 20_000 {
                        pool.push(ip);
                    }
                }
            }
            if wanted
                .iter()
                .all(|c| by_country.get(c).is_some_and(|p| p.len() >= 20_000))
            {
                break;
            }
        }
        IpPools {
            by_country,
            next: HashMap::new(),
        }
    }

    /// A fresh address in `country` (cycling when the pool runs out).
    fn take(&mut self, country: [u8; 2]) -> String {
        let pool = &self.by_country[&country];
        let n = self.next.entry(country).or_default();
        let ip = pool[*n % pool.len()];
        *n += 1;
        ip.to_string()
    }
}

/// A stolen card: the victim's name and billing address.
#[derive(Clone)]
struct Card {
    name: String,
    billing: String,
    country: usize,
}

#[derive(Clone)]
struct Customer {
    email: String,
    name: String,
    country: usize,
    billing: String,
    home_ip: String,
    office_ip: String,
    devices: Vec<String>,
    signup: f64,
    rate: f64,
    basket: f64,
    vpn: bool,
    two_factor: bool,
    payment: &'static str,
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

    fn populate(&mut self) {
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
    fn shop(&mut self, i: usize) {
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

    /// Whether an event of probability `p` happens; draws nothing when `p`
    /// is 0, so a world without the knob is the baseline's, draw for draw.
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p)
    }

    /// A fraudster's device: a fresh one, or one of the popular fingerprints.
    fn fraud_device(&mut self) -> String {
        if self.chance(self.scenario.fraud_popular_devices) {
            pick(&mut self.rng, &self.popular).clone()
        } else {
            self.device()
        }
    }

    /// The `rings_move_on` world: a share of the rings' devices and
    /// addresses passes to an honest customer, who uses it from a few days
    /// after the ring's last purchase on.
    fn hand_on(&mut self) {
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

    fn fraud(&mut self) {
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
}

/// The fields of one request.
struct Purchase<'a> {
    email: &'a str,
    name: &'a str,
    billing: &'a str,
    shipping: &'a str,
    ip: &'a str,
    device: &'a str,
    amount: f64,
    day: f64,
    signup: f64,
    vpn: bool,
    proxy: bool,
    two_factor: bool,
    payment: &'static str,
    quantity: u32,
}

/// 2026-01-05T00:00:00Z, the simulation's day 0, in Unix seconds.
pub const START_UNIX: i64 = 1_767_571_200;

impl<'a> Purchase<'a> {
    #[allow(clippy::too_many_arguments)]
    fn fraud(
        email: &'a str,
        card: &'a Card,
        shipping: &'a str,
        ip: &'a str,
        device: &'a str,
        amount: f64,
        day: f64,
        signup: f64,
        proxy: bool,
    ) -> Purchase<'a> {
        Purchase {
            email,
            name: &card.name,
            billing: &card.billing,
            shipping,
            ip,
            device,
            amount,
            day,
            signup,
            vpn: false,
            proxy,
            two_factor: false,
            payment: "Credit Card",
            quantity: 1,
        }
    }

    fn json(&self, browser: &str, referral: &str) -> Value {
        let seconds = START_UNIX + (self.day * 86_400.0) as i64;
        json!({
            "customerEmail": self.email,
            "customerName": self.name,
            "amount": (self.amount * 100.0).round() / 100.0,
            "time": rfc3339(seconds),
            "ipAddress": self.ip,
            "deviceFingerprint": self.device,
            "billingAddress": self.billing,
            "shippingAddress": self.shipping,
            "paymentMethod": self.payment,
            "accountAge": (self.day - self.signup).max(0.0).floor() as u32,
            "isVPN": self.vpn,
            "proxyOrVPN": self.proxy,
            "twoFactorAuth": self.two_factor,
            "orderQuantity": self.quantity,
            "clientBrowser": browser,
            "referralSource": referral,
            "onlinePurchase": true,
            "strictness": 50,
        })
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds (days from the civil calendar).
fn rfc3339(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_times() {
        assert_eq!(super::rfc3339(super::START_UNIX), "2026-01-05T00:00:00Z");
        assert_eq!(super::rfc3339(951_782_400 + 86_399), "2000-02-29T23:59:59Z");
    }
}
