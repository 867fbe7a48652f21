//! Signals from how the request's identities were used before: bursts
//! against each identity's usual pace (velocity), e-mails sharing a device,
//! an IP address or a card, and how long the customer and the device are known.

use super::{
    grade_at_least, plural, Collector, SignalInfo, CARD_SHARED, CARD_VELOCITY, DEVICE_SHARED,
    DEVICE_VELOCITY, EMAIL_VELOCITY, IP_SHARED, IP_VELOCITY, KNOWN_CUSTOMER, NEW_DEVICE,
};
use crate::history::History;

/// "Known for a while": first seen at least this long before the purchase.
const KNOWN_FOR_US: i64 = 30 * crate::history::Window::DAY_US;
/// A velocity signal: its thresholds on the last-hour and last-day counts.
struct Velocity {
    info: &'static SignalInfo,
    hour_at: [f64; 3],
    day_at: [f64; 3],
    /// "... in the last hour" phrase.
    what: &'static str,
}
const VELOCITIES: [Velocity; 4] = [
    Velocity {
        info: &EMAIL_VELOCITY,
        hour_at: [3.0, 5.0, 10.0],
        day_at: [10.0, 20.0, 50.0],
        what: "with this e-mail",
    },
    Velocity {
        info: &DEVICE_VELOCITY,
        hour_at: [3.0, 5.0, 10.0],
        day_at: [10.0, 20.0, 50.0],
        what: "from this device",
    },
    Velocity {
        info: &IP_VELOCITY,
        hour_at: [5.0, 10.0, 20.0],
        day_at: [20.0, 50.0, 100.0],
        what: "from this IP address",
    },
    Velocity {
        info: &CARD_VELOCITY,
        hour_at: [3.0, 5.0, 10.0],
        day_at: [6.0, 12.0, 25.0],
        what: "with this card",
    },
];
/// How many times its usual daily count a day must be for each velocity
/// grade (a usual under one a day counts as one).
const ABOVE_USUAL_AT: [f64; 3] = [2.0, 4.0, 8.0];
/// Other e-mails on a device over [`crate::history::LINKAGE_DAYS`]: a
/// household shares a device between two or three people; a ring, between
/// more. The same number within a day grades one higher.
const DEVICE_SHARED_AT: [f64; 4] = [1.0, 2.0, 4.0, 10.0];
/// IPs are shared by households, offices and carriers' NAT: only many others
/// count, within a day or a month.
const IP_SHARED_DAY_AT: [f64; 3] = [3.0, 10.0, 30.0];
const IP_SHARED_MONTH_AT: [f64; 3] = [10.0, 30.0, 100.0];
/// A card is rarely used by two accounts, and a ring's cards by many.
const CARD_SHARED_AT: [f64; 3] = [1.0, 2.0, 4.0];

pub(super) fn velocity(hist: &History, out: &mut Collector) {
    let windows = [hist.email, hist.device, hist.ip, hist.card];
    for (v, w) in VELOCITIES.iter().zip(windows) {
        let g = grade_at_least(f64::from(w.last_hour), &v.hour_at)
            .max(grade_at_least(f64::from(w.last_day), &v.day_at));
        // Graded by how far above this identity's usual the day is: a busy
        // shared IP (an office, a carrier) is not a burst at its usual pace.
        let usual = w.usual_per_day();
        let above = (f64::from(w.last_day) / usual.max(1.0))
            .max(f64::from(w.last_hour) / (usual / 24.0).max(1.0));
        let g = g.and_then(|g| grade_at_least(above, &ABOVE_USUAL_AT).map(|cap| g.min(cap)));
        if let Some(g) = g {
            let mut detail = format!(
                "{} {} in the last hour, {} in the last 24 h",
                plural(w.last_hour, "earlier transaction", "earlier transactions"),
                v.what,
                w.last_day
            );
            if usual >= 1.0 {
                detail.push_str(&format!(" (usually {usual:.0} a day)"));
            }
            out.fire(v.info, g, detail);
        }
    }
    // A device by the day or over the long window, whichever grades higher;
    // an IP by the day only (households, offices and carriers' NAT share IPs
    // for months).
    let d = hist.device_others;
    let long = grade_at_least(f64::from(d.quarter), &DEVICE_SHARED_AT);
    let day = grade_at_least(f64::from(d.day), &DEVICE_SHARED_AT).map(|g| g + 1);
    if let Some(g) = long.max(day) {
        out.fire(
            &DEVICE_SHARED,
            g,
            format!(
                "{} used this device in the last 24 h, {} in the last {} days",
                plural(d.day, "other e-mail", "other e-mails"),
                d.quarter,
                crate::history::LINKAGE_DAYS
            ),
        );
    }
    let i = hist.ip_others;
    let day = grade_at_least(f64::from(i.day), &IP_SHARED_DAY_AT);
    let month = grade_at_least(f64::from(i.month), &IP_SHARED_MONTH_AT);
    if let Some(g) = day.max(month) {
        out.fire(
            &IP_SHARED,
            g,
            format!(
                "{} used this IP address in the last 24 h, {} in the last {} days",
                plural(i.day, "other e-mail", "other e-mails"),
                i.month,
                crate::history::LINKAGE_SHORT_DAYS
            ),
        );
    }
    let c = hist.card_others.quarter;
    if let Some(g) = grade_at_least(f64::from(c), &CARD_SHARED_AT) {
        out.fire(
            &CARD_SHARED,
            g,
            format!(
                "{} used this card in the last {} days",
                plural(c, "other e-mail", "other e-mails"),
                crate::history::LINKAGE_DAYS
            ),
        );
    }
}

/// A long-known customer on a new device (account takeover), or on a device
/// long known and not shared (mitigation).
pub(super) fn familiarity(hist: &History, out: &mut Collector) {
    let long_known = |first: Option<i64>| first.is_some_and(|us| us >= KNOWN_FOR_US);
    if !long_known(hist.email_first_seen_us) {
        return;
    }
    match hist.device_first_seen_us {
        None => out.fire(
            &NEW_DEVICE,
            0,
            "the customer is known for 30 days or more, the device has never been seen".into(),
        ),
        Some(us) if us >= KNOWN_FOR_US && hist.device_others.quarter == 0 => out.fire(
            &KNOWN_CUSTOMER,
            0,
            format!(
                "the customer and the device are known for {} days or more",
                us.min(hist.email_first_seen_us.unwrap_or(us)) / crate::history::Window::DAY_US
            ),
        ),
        Some(_) => {}
    }
}
