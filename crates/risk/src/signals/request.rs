//! Signals from the request's own fields: a VPN, the IP address's and the
//! addresses' countries, the e-mail, the account's age, the amount (also
//! against the customer's earlier amounts), the addresses, the counts the
//! client reports, and the hour.

use std::sync::OnceLock;

use super::{
    grade_at_least, grade_below, plural, Collector, ADDRESS_MISMATCH, AMOUNT_ABOVE_HISTORY,
    DISPOSABLE_EMAIL, EMAIL_DOMAIN_MISMATCH, EMAIL_MISMATCH, ESTABLISHED_ACCOUNT, HIGH_AMOUNT,
    HIGH_FREQUENCY, IP_COUNTRY_MISMATCH, NEW_ACCOUNT, NIGHT_TIME, UNUSUAL_QUANTITY, VPN_OR_PROXY,
};
use crate::features::Features;
use crate::geo::address_country;
use crate::history::History;
use crate::input::{normalized_chars, Request};

/// Thresholds, mildest first, matching each signal's `points` grades.
const HIGH_AMOUNT_AT: [f64; 4] = [1_000.0, 5_000.0, 10_000.0, 50_000.0];
const HISTORY_RATIO_AT: [f64; 3] = [2.0, 5.0, 10.0];
const HISTORY_MIN_COUNT: u32 = 3;
const HISTORY_MIN_Z: f64 = 2.0;
/// `accountAge` below these many days.
const NEW_ACCOUNT_BELOW: [f64; 3] = [30.0, 7.0, 1.0];
const ESTABLISHED_DAYS: u32 = 365;
const FREQUENCY_AT: [f64; 3] = [5.0, 10.0, 20.0];
const QUANTITY_AT: [f64; 3] = [10.0, 50.0, 200.0];
const NIGHT_END_HOUR: u8 = 6;

/// Disposable-address domains from `mailchecker`, sorted once for binary search.
///
/// Why not `mailchecker::is_valid`: it scans its ~56,000-entry list linearly for every
/// suffix and allocates per call (hundreds of microseconds, our whole budget is 50), and
/// it also says "invalid" for e-mails its strict syntax check dislikes, which are not
/// disposable. The list is the same.
fn disposable_domains() -> &'static [&'static str] {
    static LIST: OnceLock<Vec<&'static str>> = OnceLock::new();
    LIST.get_or_init(|| {
        let mut v = mailchecker::blacklist();
        v.sort_unstable();
        v.dedup();
        v
    })
}

/// Whether the domain of `email`, or any parent domain below the TLD, is disposable.
pub fn is_disposable_email(email: &str) -> bool {
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    let list = disposable_domains();
    let mut candidate = domain;
    // "a.b.example.com", "b.example.com", "example.com"; never the bare TLD.
    while let Some((_, parent)) = candidate.split_once('.') {
        if list.binary_search(&candidate).is_ok() {
            return true;
        }
        candidate = parent;
    }
    false
}

/// Whether `domain` is `given` or a subdomain of it.
fn domain_matches(domain: &str, given: &str) -> bool {
    domain == given
        || (domain.len() > given.len()
            && domain.ends_with(given)
            && domain.as_bytes().get(domain.len() - given.len() - 1) == Some(&b'.'))
}

/// `1234.5` → `"1,234.50"`.
fn money(v: f64) -> String {
    if !v.is_finite() || v < 0.0 {
        return format!("{v:.2}");
    }
    let cents = (v * 100.0).round() as u64;
    let whole = (cents / 100).to_string();
    let mut out = String::with_capacity(whole.len() + whole.len() / 3 + 3);
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(&format!(".{:02}", cents % 100));
    out
}

pub(super) fn vpn(req: &Request, out: &mut Collector) {
    match (req.is_vpn == Some(true), req.proxy_or_vpn == Some(true)) {
        (true, true) => out.fire(
            &VPN_OR_PROXY,
            1,
            "both isVPN and proxyOrVPN report a VPN or proxy".into(),
        ),
        (true, false) => out.fire(&VPN_OR_PROXY, 0, "isVPN reports a VPN".into()),
        (false, true) => out.fire(&VPN_OR_PROXY, 0, "proxyOrVPN reports a VPN or proxy".into()),
        (false, false) => {}
    }
}

/// The code as text (only ASCII letters reach here).
fn code_str(c: &[u8; 2]) -> &str {
    std::str::from_utf8(c).unwrap_or("??")
}

/// The address's country, and whether the IP's differs from it.
pub(super) fn ip_mismatch(
    req: &Request,
    ip_country: Option<[u8; 2]>,
    out: &mut Collector,
) -> (Option<[u8; 2]>, bool) {
    let (which, addr_country) = match req.billing_address.as_deref().and_then(address_country) {
        Some(c) => ("billing", Some(c)),
        None => (
            "shipping",
            req.shipping_address.as_deref().and_then(address_country),
        ),
    };
    if let (Some(ip), Some(addr)) = (ip_country, addr_country) {
        if ip != addr {
            out.fire(
                &IP_COUNTRY_MISMATCH,
                0,
                format!(
                    "the IP address is in {}, the {which} address in {}",
                    code_str(&ip),
                    code_str(&addr)
                ),
            );
            return (addr_country, true);
        }
    }
    (addr_country, false)
}

pub(super) fn email(req: &Request, out: &mut Collector, f: &mut Features) {
    if let Some(email) = &req.email {
        let disposable = is_disposable_email(email)
            || req
                .registered_email
                .as_deref()
                .is_some_and(is_disposable_email);
        f.disposable_email = Some(disposable);
        if disposable {
            out.fire(
                &DISPOSABLE_EMAIL,
                0,
                "the e-mail address is at a disposable-address service".into(),
            );
        }
        if let (Some(given), Some((_, domain))) = (&req.email_domain, email.rsplit_once('@')) {
            let matches = domain_matches(domain, given);
            f.email_domain_matches = Some(matches);
            if !matches {
                out.fire(
                    &EMAIL_DOMAIN_MISMATCH,
                    0,
                    "emailDomain does not match the e-mail address's domain".into(),
                );
            }
        }
    }
    if req.registered_email.is_some() {
        out.fire(
            &EMAIL_MISMATCH,
            0,
            "customerEmail differs from the registered e-mail".into(),
        );
    }
}

pub(super) fn account(req: &Request, out: &mut Collector) {
    let Some(days) = req.account_age_days else {
        return;
    };
    if let Some(g) = grade_below(f64::from(days), &NEW_ACCOUNT_BELOW) {
        out.fire(
            &NEW_ACCOUNT,
            g,
            format!("the account is {} old", plural(days, "day", "days")),
        );
    }
    if days >= ESTABLISHED_DAYS {
        out.fire(
            &ESTABLISHED_ACCOUNT,
            0,
            format!("the account is {days} days old"),
        );
    }
}

pub(super) fn amount(req: &Request, hist: &History, out: &mut Collector, f: &mut Features) {
    let Some(amount) = req.amount else {
        return;
    };
    if let Some(g) = grade_at_least(amount, &HIGH_AMOUNT_AT) {
        let at = HIGH_AMOUNT_AT.get(g).copied().unwrap_or(0.0);
        out.fire(
            &HIGH_AMOUNT,
            g,
            format!("amount {} is at least {}", money(amount), money(at)),
        );
    }
    let s = hist.customer_amounts;
    if s.count < HISTORY_MIN_COUNT || !s.mean.is_finite() || s.mean <= 0.0 {
        return;
    }
    let ratio = amount / s.mean;
    f.amount_ratio_to_mean = Some(ratio);
    let z = if s.stddev > 0.0 && s.stddev.is_finite() {
        let z = (amount - s.mean) / s.stddev;
        f.amount_z = Some(z);
        z
    } else {
        f64::INFINITY
    };
    if amount <= s.max || z < HISTORY_MIN_Z {
        return;
    }
    if let Some(g) = grade_at_least(ratio, &HISTORY_RATIO_AT) {
        out.fire(
            &AMOUNT_ABOVE_HISTORY,
            g,
            format!(
                "amount {} is {:.1}x this customer's average of {} (highest before: {}, {} earlier)",
                money(amount),
                ratio,
                money(s.mean),
                money(s.max),
                s.count
            ),
        );
    }
}

pub(super) fn addresses(req: &Request, out: &mut Collector, f: &mut Features) {
    let differ = match (&req.billing_address, &req.shipping_address) {
        (Some(b), Some(s)) => Some(!normalized_chars(b).eq(normalized_chars(s))),
        _ => None,
    };
    f.addresses_differ = differ;
    let flagged = req.address_mismatch == Some(true);
    let detail = match (flagged, differ == Some(true)) {
        (true, true) => "billing and shipping addresses differ (also reported by the client)",
        (true, false) => "the client reports a billing/shipping address mismatch",
        (false, true) => "billing and shipping addresses differ",
        (false, false) => return,
    };
    // Shipping abroad from the billing country: reshipping, not a gift next door.
    let countries = (
        req.billing_address.as_deref().and_then(address_country),
        req.shipping_address.as_deref().and_then(address_country),
    );
    match countries {
        (Some(b), Some(s)) if b != s && differ == Some(true) => out.fire(
            &ADDRESS_MISMATCH,
            1,
            format!(
                "billing address in {}, shipping address in {}",
                code_str(&b),
                code_str(&s)
            ),
        ),
        _ => out.fire(&ADDRESS_MISMATCH, 0, detail.into()),
    }
}

pub(super) fn client_counts(req: &Request, out: &mut Collector) {
    if let Some(n) = req.transaction_frequency {
        if let Some(g) = grade_at_least(f64::from(n), &FREQUENCY_AT) {
            out.fire(&HIGH_FREQUENCY, g, format!("transactionFrequency is {n}"));
        }
    }
    if let Some(n) = req.order_quantity {
        if let Some(g) = grade_at_least(f64::from(n), &QUANTITY_AT) {
            out.fire(&UNUSUAL_QUANTITY, g, format!("order quantity {n}"));
        }
    }
}

pub(super) fn night(req: &Request, out: &mut Collector, f: &mut Features) {
    let Some(t) = req.time else {
        return;
    };
    let hour = t.hour();
    f.hour = Some(hour);
    f.night = hour < NIGHT_END_HOUR;
    if f.night {
        let dt = t.datetime();
        out.fire(
            &NIGHT_TIME,
            0,
            format!(
                "placed at {:02}:{:02}, between 00:00 and 05:59",
                dt.hour(),
                dt.minute()
            ),
        );
    }
}
