//! Countries: the MMDB lookup and free-text addresses.

use std::path::PathBuf;

use vigil_risk::{address_country, GeoIp};

/// `VIGIL_GEOIP_MMDB` (make test sets it), else where `make setup` installs
/// the file for PostgreSQL 15 on Debian.
fn mmdb_path() -> PathBuf {
    std::env::var_os("VIGIL_GEOIP_MMDB")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from("/usr/share/postgresql/15/vigil/geoip/geo-whois-asn-country.mmdb")
        })
}

/// The database, or a failure that says what is missing: a test of the
/// lookup never passes without one (make setup installs it).
fn open() -> GeoIp {
    let path = mmdb_path();
    assert!(
        path.exists(),
        "the GeoIP database {} is missing: `make setup` installs it, or set VIGIL_GEOIP_MMDB to its path",
        path.display()
    );
    GeoIp::open(&path).expect("the MMDB file opens")
}

#[test]
fn ip_countries() {
    let geo = open();
    let c = |ip: &str| geo.country(ip.parse().unwrap());
    assert_eq!(c("8.8.8.8"), Some(*b"US"));
    // DFN, the German research network (Deutsches Forschungsnetz).
    assert_eq!(c("193.174.0.1"), Some(*b"DE"));
    // IPv6: Google's public resolver.
    assert_eq!(c("2001:4860:4860::8888"), Some(*b"US"));
    // Private space has no country.
    assert_eq!(c("192.168.1.1"), None);
    assert_eq!(c("10.0.0.1"), None);
}

#[test]
fn open_errors_are_sentences() {
    let e = GeoIp::open(std::path::Path::new("/nonexistent/geo.mmdb")).unwrap_err();
    assert!(e.contains("/nonexistent/geo.mmdb"));
    assert!(GeoIp::from_bytes(b"not an mmdb".to_vec()).is_err());
}

#[test]
fn address_countries() {
    let cases: &[(&str, Option<&[u8; 2]>)] = &[
        ("Unter den Linden 1, 10117 Berlin, Germany", Some(b"DE")),
        ("Unter den Linden 1, 10117 Berlin, DE", Some(b"DE")),
        ("Unter den Linden 1, 10117 Berlin, Deutschland", Some(b"DE")),
        ("10117 Berlin Germany", Some(b"DE")),
        (
            "1600 Amphitheatre Pkwy, Mountain View, CA 94043, USA",
            Some(b"US"),
        ),
        (
            "1600 Amphitheatre Pkwy, Mountain View, CA 94043, U.S.A.",
            Some(b"US"),
        ),
        (
            "1600 Amphitheatre Pkwy, Mountain View, CA 94043",
            Some(b"US"),
        ),
        ("12 Main St, Springfield, IL 62704-1234", Some(b"US")),
        ("1 Main St, New York, United States", Some(b"US")),
        (
            "10 Downing St, London SW1A 2AA, United Kingdom",
            Some(b"GB"),
        ),
        ("10 Downing St, London, UK", Some(b"GB")),
        ("10 Downing St, London, GB", Some(b"GB")),
        ("10 Downing St, London, England", Some(b"GB")),
        ("Damrak 1, Amsterdam, The Netherlands", Some(b"NL")),
        ("Gangnam-daero 1, Seoul, South Korea", Some(b"KR")),
        ("Port Moresby, Papua New Guinea", Some(b"PG")),
        ("Conakry, Guinea", Some(b"GN")),
        ("Bissau, Guinea-Bissau", Some(b"GW")),
        ("Kinshasa, Democratic Republic of the Congo", Some(b"CD")),
        ("5 Rue de Rivoli, 75001 Paris, FRA", Some(b"FR")),
        ("Santa Fe, New Mexico", Some(b"US")),
        ("Moscow, Russia", Some(b"RU")),
        ("1 Main St", None),
        ("12 Main St, Springfield", None),
        ("12 Main St, Springfield, IL 62704, ", Some(b"US")),
        ("", None),
        (" , ; ", None),
        ("Somewhere 12345", None),
    ];
    for (addr, want) in cases {
        assert_eq!(address_country(addr), want.copied(), "{addr}");
    }
}

#[test]
fn address_country_survives_odd_text() {
    for s in [
        "ÄÖÜ, ßß",
        "x, 台灣",
        "x,,,,",
        &"word ".repeat(500),
        &format!("a, {}", "longword".repeat(30)),
        "🙂, 🙂🙂",
        "İstanbul, Türkiye",
    ] {
        let _ = address_country(s);
    }
    assert_eq!(address_country("İstanbul, Türkiye"), Some(*b"TR"));
}
