//! A purchase as the shop sends it: the form B request body, its time in
//! RFC 3339 from the simulation's day 0.

use serde_json::{json, Value};

use super::fraud::Card;

/// The fields of one request.
pub(super) struct Purchase<'a> {
    pub(super) email: &'a str,
    pub(super) name: &'a str,
    pub(super) billing: &'a str,
    pub(super) shipping: &'a str,
    pub(super) ip: &'a str,
    pub(super) device: &'a str,
    pub(super) amount: f64,
    pub(super) day: f64,
    pub(super) signup: f64,
    pub(super) vpn: bool,
    pub(super) proxy: bool,
    pub(super) two_factor: bool,
    pub(super) payment: &'static str,
    pub(super) quantity: u32,
}

/// 2026-01-05T00:00:00Z, the simulation's day 0, in Unix seconds.
pub const START_UNIX: i64 = 1_767_571_200;

impl<'a> Purchase<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fraud(
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

    pub(super) fn json(&self, browser: &str, referral: &str) -> Value {
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
