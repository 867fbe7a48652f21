//! What passes between the signals and the learned model: the values the
//! signals compute and the model learns from, and the link weights a refit
//! sets and the signals grade by. Both read this module, so neither imports
//! the other.
//!
//! The signals fill a [`Features`] as they run; [`feature_vector`] turns it,
//! with the request and its history, into the model's inputs. The other way,
//! a refit measures [`LinkWeights`] from the labels
//! ([`crate::model::link_weights`]) and the assessment passes them to the
//! signals.

use crate::history::{History, Window};
use crate::input::Request;

/// Intermediate values worth recording with the assessment.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Features {
    pub address_country: Option<[u8; 2]>,
    pub addresses_differ: Option<bool>,
    pub disposable_email: Option<bool>,
    pub email_domain_matches: Option<bool>,
    pub hour: Option<u8>,
    /// NIGHT_TIME and IP_COUNTRY_MISMATCH fired.
    pub night: bool,
    pub ip_country_mismatch: bool,
    pub amount_ratio_to_mean: Option<f64>,
    pub amount_z: Option<f64>,
    /// Days since the confirmed fraud the device and the IP were linked to.
    pub fraud_links: [Option<f64>; 2],
    /// The points those links fired, and the network's
    /// ([`crate::signals::NETWORK_FRAUD_LINK`]): what feedback adds, which
    /// never fails a transaction alone.
    pub fraud_link_points: f64,
}

/// The features, in the order of [`feature_vector`]'s values. Stored with each
/// model, so a model is only used with vectors of the same layout.
pub const FEATURE_NAMES: [&str; 24] = [
    "accountSameDay",
    "accountUnderWeek",
    "accountUnderMonth",
    "accountAgeMissing",
    "lnAmount",
    "lnAmountOverHistory",
    "firstPurchase",
    "newDevice",
    "newIp",
    "lnDeviceOthers90d",
    "lnDeviceOthersDay",
    "lnIpOthers30d",
    "lnCardOthers90d",
    "lnEmailDay",
    "lnDeviceDay",
    "lnIpDay",
    "lnCardDay",
    "disposableEmail",
    "ipCountryMismatch",
    "addressesDiffer",
    "night",
    "twoFactor",
    "lnCustomerDays",
    "lnDeviceDays",
];

/// Number of features.
pub const FEATURES: usize = FEATURE_NAMES.len();

fn ln1p_count(n: u32) -> f64 {
    f64::from(n).ln_1p()
}

fn days_ln(us: Option<i64>) -> f64 {
    us.map_or(0.0, |us| (us.max(0) as f64 / Window::DAY_US as f64).ln_1p())
}

/// The feature vector of one assessment (see [`FEATURE_NAMES`]), from the
/// request, its history and what the signals computed.
pub(crate) fn feature_vector(req: &Request, hist: &History, f: &Features) -> [f64; FEATURES] {
    let age = req.account_age_days;
    let flag = |b: bool| f64::from(u8::from(b));
    [
        flag(age == Some(0)),
        flag(age.is_some_and(|a| (1..7).contains(&a))),
        flag(age.is_some_and(|a| (7..30).contains(&a))),
        flag(age.is_none()),
        req.amount.map_or(0.0, |a| a.max(0.0).ln_1p()),
        f.amount_ratio_to_mean
            .filter(|r| r.is_finite())
            .map_or(0.0, |r| r.max(1.0).ln()),
        flag(req.email.is_some() && hist.email_first_seen_us.is_none()),
        flag(req.device_fingerprint.is_some() && hist.device_first_seen_us.is_none()),
        flag(req.ip_address.is_some() && hist.ip_first_seen_us.is_none()),
        ln1p_count(hist.device_others.quarter),
        ln1p_count(hist.device_others.day),
        ln1p_count(hist.ip_others.month),
        ln1p_count(hist.card_others.quarter),
        ln1p_count(hist.email.last_day),
        ln1p_count(hist.device.last_day),
        ln1p_count(hist.ip.last_day),
        ln1p_count(hist.card.last_day),
        flag(f.disposable_email == Some(true)),
        flag(f.ip_country_mismatch),
        flag(f.addresses_differ == Some(true)),
        flag(f.night),
        flag(req.two_factor_auth == Some(true)),
        days_ln(hist.email_first_seen_us),
        days_ln(hist.device_first_seen_us),
    ]
}

/// How much a link to confirmed fraud weighs in this installation, per kind:
/// the share of labelled transactions with such a link that were fraud, over
/// the prior's one half (so 1 with no labels), with two pseudo-labels of prior
/// and at most [`LinkWeights::MAX`] ([`crate::model::link_weights`]). Where the
/// later users of a marked device are mostly honest, the weight falls, and the
/// link's points with it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkWeights {
    pub device: f64,
    pub ip: f64,
}

impl Default for LinkWeights {
    fn default() -> Self {
        LinkWeights {
            device: 1.0,
            ip: 1.0,
        }
    }
}

impl LinkWeights {
    pub const MAX: f64 = 1.5;
}
