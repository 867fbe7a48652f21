//! The IP-to-country database: setting `vigil.geoip_path`, and one reader per
//! backend, opened on first use.
//!
//! A missing or broken file does not stop assessments (a fraud check that
//! fails closed on a missing lookup table would stop every payment): the
//! country signal is skipped and a WARNING names the setting, once per backend.

use std::cell::RefCell;
use std::ffi::CString;
use std::net::IpAddr;
use std::path::PathBuf;

use pgrx::prelude::*;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use vigil_risk::GeoIp;

use crate::pg::paths::{non_empty, share_dir};

static GEOIP_PATH: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

pub fn register_settings() {
    GucRegistry::define_string_guc(
        c"vigil.geoip_path",
        c"MMDB file mapping IP addresses to countries, for the risk engine.",
        c"Empty means $sharedir/vigil/geoip/geo-whois-asn-country.mmdb, where scripts/setup.sh installs it.",
        &GEOIP_PATH,
        GucContext::Suset,
        GucFlags::default(),
    );
}

thread_local! {
    /// Where setup.sh installs the file (the server's directories do not move).
    static DEFAULT_PATH: PathBuf = share_dir()
        .join("vigil")
        .join("geoip")
        .join("geo-whois-asn-country.mmdb");
    /// The path it was opened from, and the reader (None when it could not be).
    static READER: RefCell<Option<(PathBuf, Option<GeoIp>)>> = const { RefCell::new(None) };
}

/// ISO 3166-1 alpha-2 country of `ip`, or None if unknown or no database.
pub fn country(ip: IpAddr) -> Option<[u8; 2]> {
    let setting = non_empty(&GEOIP_PATH);
    DEFAULT_PATH.with(|default| {
        let wanted = setting.as_deref().unwrap_or(default);
        READER.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.as_ref().is_none_or(|(opened, _)| opened != wanted) {
                let reader = match GeoIp::open(wanted) {
                    Ok(reader) => Some(reader),
                    Err(e) => {
                        warning!(
                            "IP country checks are off: {e} (setting vigil.geoip_path, file {})",
                            wanted.display()
                        );
                        None
                    }
                };
                *slot = Some((wanted.to_path_buf(), reader));
            }
            slot.as_ref()
                .and_then(|(_, reader)| reader.as_ref())
                .and_then(|reader| reader.country(ip))
        })
    })
}
