//! What the world draws from: the countries customers live in and where
//! fraud comes from, names, e-mail domains, streets, browsers, and IPv4
//! addresses by country, sampled from the MMDB so the engine sees real ones.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use rand::rngs::SmallRng;
use rand::Rng;
use vigil_risk::GeoIp;

/// Countries customers live in, with their weight, and where proxies and
/// reshippers are.
pub(super) const HOME: [(&str, &str, f64); 9] = [
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
pub(super) const ELSEWHERE: [(&str, &str); 8] = [
    ("BR", "Brazil"),
    ("NG", "Nigeria"),
    ("RU", "Russia"),
    ("VN", "Vietnam"),
    ("ID", "Indonesia"),
    ("UA", "Ukraine"),
    ("RO", "Romania"),
    ("SG", "Singapore"),
];
pub(super) const VPN_EXITS: [&str; 4] = ["NL", "SE", "CH", "US"];

pub(super) const FIRST: [&str; 24] = [
    "james", "mary", "john", "linda", "peter", "anna", "lukas", "emma", "noah", "olivia", "liam",
    "sophie", "marco", "giulia", "pierre", "chloe", "jack", "isla", "david", "sarah", "tom",
    "laura", "max", "mia",
];
pub(super) const LAST: [&str; 20] = [
    "smith", "jones", "brown", "miller", "wilson", "taylor", "muller", "schmidt", "martin",
    "bernard", "rossi", "russo", "garcia", "lopez", "devries", "jansen", "clark", "lewis",
    "walker", "young",
];
pub(super) const DOMAINS: [&str; 7] = [
    "gmail.com",
    "yahoo.com",
    "outlook.com",
    "hotmail.com",
    "icloud.com",
    "gmx.de",
    "orange.fr",
];
pub(super) const DISPOSABLE: [&str; 5] = [
    "mailinator.com",
    "guerrillamail.com",
    "yopmail.com",
    "10minutemail.com",
    "trashmail.com",
];
pub(super) const STREETS: [&str; 10] = [
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
pub(super) const BROWSERS: [&str; 4] = ["Chrome", "Safari", "Firefox", "Edge"];
pub(super) const REFERRALS: [&str; 4] = ["Direct", "Google", "Facebook", "Newsletter"];

/// IPv4 addresses by country, found by sampling the MMDB.
pub(super) struct IpPools {
    by_country: HashMap<[u8; 2], Vec<Ipv4Addr>>,
    next: HashMap<[u8; 2], usize>,
}

pub(super) fn code(c: &str) -> [u8; 2] {
    let b = c.as_bytes();
    [b[0], b[1]]
}

impl IpPools {
    pub(super) fn build(geo: &GeoIp, rng: &mut SmallRng) -> IpPools {
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
    pub(super) fn take(&mut self, country: [u8; 2]) -> String {
        let pool = &self.by_country[&country];
        let n = self.next.entry(country).or_default();
        let ip = pool[*n % pool.len()];
        *n += 1;
        ip.to_string()
    }
}
