//! Countries of IP addresses and of free-text addresses, for the IP-country mismatch
//! signal.
//!
//! IP addresses are looked up in an MMDB file (MaxMind format, e.g. the
//! `geo-whois-asn-country` database, whose records hold `country_code`; GeoIP2/GeoLite2
//! `country.iso_code` records work too). Postal addresses are free text, so
//! [`address_country`] only reads what is unambiguous enough at their end; see its docs.

use std::net::IpAddr;
use std::path::Path;

use celes::Country;
use maxminddb::{PathElement, Reader};

/// Country lookups of IP addresses (an MMDB file, read with the `maxminddb` crate).
///
/// The file is read into memory once; lookups are lock-free and allocation-free, so one
/// `GeoIp` can be shared (it is `Send + Sync`) for the life of a backend.
pub struct GeoIp {
    reader: Reader<Vec<u8>>,
}

impl std::fmt::Debug for GeoIp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeoIp")
            .field("database_type", &self.reader.metadata().database_type)
            .finish()
    }
}

impl GeoIp {
    /// Opens an MMDB file. The error is a sentence naming the path.
    pub fn open(path: &Path) -> Result<GeoIp, String> {
        Reader::open_readfile(path)
            .map(|reader| GeoIp { reader })
            .map_err(|e| format!("cannot open GeoIP database {}: {e}", path.display()))
    }

    /// Uses an MMDB image already in memory (e.g. read by the caller from elsewhere).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<GeoIp, String> {
        Reader::from_source(bytes)
            .map(|reader| GeoIp { reader })
            .map_err(|e| format!("not a GeoIP database: {e}"))
    }

    /// ISO 3166-1 alpha-2 code (upper case) of `ip`'s country; `None` when the database
    /// has no country for it (private ranges, unallocated space) or the record is odd.
    /// Non-public addresses (private, loopback, link-local, shared, documentation,
    /// multicast) are `None` without a lookup: they have no country, whatever a
    /// database's data says.
    pub fn country(&self, ip: IpAddr) -> Option<[u8; 2]> {
        let ip = ip.to_canonical();
        if !is_public(ip) {
            return None;
        }
        let found = self.reader.lookup(ip).ok()?;
        let code: Option<&str> = found
            .decode_path(&[PathElement::Key("country_code")])
            .ok()
            .flatten();
        let code = match code {
            Some(c) => c,
            None => found
                .decode_path(&[PathElement::Key("country"), PathElement::Key("iso_code")])
                .ok()
                .flatten()?,
        };
        alpha2(code)
    }
}

/// Whether `ip` is routable on the public Internet (the std `is_global` is unstable).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            let shared = a == 100 && (64..128).contains(&b); // 100.64.0.0/10, CGNAT
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || shared
                || a == 0
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            let unique_local = first & 0xfe00 == 0xfc00; // fc00::/7
            let link_local = first & 0xffc0 == 0xfe80; // fe80::/10
            let documentation = first == 0x2001 && v6.segments()[1] == 0x0db8;
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || unique_local
                || link_local
                || documentation)
        }
    }
}

/// Two ASCII letters, upper-cased.
fn alpha2(code: &str) -> Option<[u8; 2]> {
    match code.as_bytes() {
        [a, b] if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
            Some([a.to_ascii_uppercase(), b.to_ascii_uppercase()])
        }
        _ => None,
    }
}

/// Names and abbreviations people write that are not in `celes`' aliases (compact form:
/// lower-case letters, no spaces). The two US states ending in a country's name are here
/// so that "New Mexico" is not read as Mexico.
const EXTRA_ALIASES: &[(&str, &str)] = &[
    ("us", "US"),
    ("usa", "US"),
    ("uk", "GB"),
    ("britain", "GB"),
    ("wales", "GB"),
    ("korea", "KR"),
    ("uae", "AE"),
    ("deutschland", "DE"),
    ("espana", "ES"),
    ("españa", "ES"),
    ("italia", "IT"),
    ("nederland", "NL"),
    ("schweiz", "CH"),
    ("suisse", "CH"),
    ("svizzera", "CH"),
    ("österreich", "AT"),
    ("osterreich", "AT"),
    ("polska", "PL"),
    ("brasil", "BR"),
    ("méxico", "MX"),
    ("belgique", "BE"),
    ("belgië", "BE"),
    ("belgie", "BE"),
    ("sverige", "SE"),
    ("norge", "NO"),
    ("danmark", "DK"),
    ("suomi", "FI"),
    ("newmexico", "US"),
    ("newjersey", "US"),
];

/// US state and territory abbreviations, for "Springfield, IL 62704" (no country
/// written, but a state and a ZIP code are unmistakably American).
const US_STATES: &[&str] = &[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA",
    "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM",
    "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA",
    "WV", "WI", "WY", "PR", "GU", "VI", "AS", "MP",
];

/// Most words of the last segment tried as a country name.
const MAX_NAME_WORDS: usize = 6;

/// A small stack buffer for compact (lower-case, letters only) keys: no allocation per
/// lookup. Keys longer than the buffer are simply not countries.
struct Key {
    bytes: [u8; 96],
    len: usize,
}

impl Key {
    fn new() -> Self {
        Key {
            bytes: [0; 96],
            len: 0,
        }
    }

    /// Appends the lower-case form of `word`; false when it does not fit.
    fn push_word(&mut self, word: &str) -> bool {
        for c in word.chars().flat_map(char::to_lowercase) {
            let mut tmp = [0u8; 4];
            let enc = c.encode_utf8(&mut tmp).as_bytes();
            let Some(dst) = self.bytes.get_mut(self.len..self.len + enc.len()) else {
                return false;
            };
            dst.copy_from_slice(enc);
            self.len += enc.len();
        }
        true
    }

    fn as_str(&self) -> &str {
        self.bytes
            .get(..self.len)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }
}

/// A country name or alias in compact form (not a code).
fn country_by_name(compact: &str) -> Option<[u8; 2]> {
    if compact.len() < 4 {
        return None;
    }
    if let Some((_, code)) = EXTRA_ALIASES.iter().find(|(k, _)| *k == compact) {
        return alpha2(code);
    }
    let with_the = || {
        let mut key = Key::new();
        (key.push_word("the") && key.push_word(compact))
            .then(|| Country::from_name(key.as_str()).ok())
            .flatten()
    };
    let found = Country::from_name(compact)
        .or_else(|_| Country::from_alias(compact))
        .ok()
        .or_else(with_the)?;
    alpha2(found.alpha2)
}

/// A country written as a whole segment: a name, an alias, or an ISO code.
fn country_by_segment(compact: &str) -> Option<[u8; 2]> {
    match compact.chars().count() {
        2 => {
            if compact == "uk" {
                return alpha2("GB");
            }
            Country::from_alpha2(compact)
                .ok()
                .and_then(|c| alpha2(c.alpha2))
        }
        3 => EXTRA_ALIASES
            .iter()
            .find(|(k, _)| *k == compact)
            .and_then(|(_, code)| alpha2(code))
            .or_else(|| {
                Country::from_alpha3(compact)
                    .ok()
                    .and_then(|c| alpha2(c.alpha2))
            }),
        _ => country_by_name(compact),
    }
}

/// Country of a free-text address, read from its end.
///
/// Recognised, in the last segment (text after the last `,`, `;`, `|` or line break):
/// - the whole segment as an ISO 3166-1 country name ("Germany", "The Netherlands"),
///   a `celes` alias ("United Kingdom", "Russia", "South Korea", "Czech Republic"), a
///   common extra alias or native name ("USA", "US", "UK", "Britain", "Deutschland",
///   "España", ...; see `EXTRA_ALIASES`), an alpha-2 code ("DE", "GB") or an alpha-3
///   code ("DEU", "USA"); case, dots and spacing do not matter ("u.s.a." works);
/// - otherwise its last 1 to 6 words as a country name or alias, longest first, so
///   "10115 Berlin Germany" is DE and "Port Moresby Papua New Guinea" is PG; codes
///   are not matched this way (too many words are also codes);
/// - "ST 12345" or "ST 12345-6789" with a US state abbreviation in capitals: US.
///
/// Known limits: a lone two-letter final segment is read as an ISO code even where
/// it is meant as a US state ("Dover, DE" is Germany) or a province; "Georgia" is the
/// country; "New Mexico" and "New Jersey" are recognised as US.
pub fn address_country(address: &str) -> Option<[u8; 2]> {
    let segment = address
        .rsplit([',', ';', '|', '\n', '\r'])
        .map(str::trim)
        .find(|s| !s.is_empty())?;

    // Words from the end; '.' and '-' and spaces all separate.
    let mut words: [&str; MAX_NAME_WORDS] = [""; MAX_NAME_WORDS];
    let mut n = 0;
    let mut total = 0;
    for w in segment
        .rsplit(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if let Some(slot) = words.get_mut(n) {
            *slot = w;
            n += 1;
        }
        total += 1;
    }
    if total == 0 {
        return None;
    }

    // US "ST 12345[-6789]".
    if let Some(us) = us_state_zip(&words[..n], total) {
        return Some(us);
    }

    let has_digit = |w: &str| w.chars().any(|c| c.is_ascii_digit());

    // The whole segment, when it has no digits and few enough words.
    if total <= MAX_NAME_WORDS && !words[..n].iter().any(|w| has_digit(w)) {
        let mut key = Key::new();
        if words[..n].iter().rev().all(|w| key.push_word(w)) {
            if let Some(c) = country_by_segment(key.as_str()) {
                return Some(c);
            }
        }
    }

    // The last k words, longest first, as a name.
    for k in (1..=n).rev() {
        let tail = &words[..k];
        if tail.iter().any(|w| has_digit(w)) {
            continue;
        }
        let mut key = Key::new();
        if tail.iter().rev().all(|w| key.push_word(w)) {
            if let Some(c) = country_by_name(key.as_str()) {
                return Some(c);
            }
        }
    }
    None
}

/// `words` are the segment's words from the end.
fn us_state_zip(words: &[&str], total: usize) -> Option<[u8; 2]> {
    let is_zip5 = |w: &str| w.len() == 5 && w.bytes().all(|c| c.is_ascii_digit());
    let is_zip4 = |w: &str| w.len() == 4 && w.bytes().all(|c| c.is_ascii_digit());
    let state = match (total, words) {
        (2, [zip, state, ..]) if is_zip5(zip) => state,
        (3, [plus4, zip, state, ..]) if is_zip4(plus4) && is_zip5(zip) => state,
        _ => return None,
    };
    if US_STATES.contains(state) {
        alpha2("US")
    } else {
        None
    }
}
