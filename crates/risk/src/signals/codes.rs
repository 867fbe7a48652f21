//! The reason codes: one [`SignalInfo`] per signal, the only place its points
//! live, and [`SIGNALS`], the table the engine fires from and the reference
//! (docs/reference/signals.md) prints.

use super::{SignalInfo, SignalKind};

pub const VPN_OR_PROXY: SignalInfo = SignalInfo {
    code: "VPN_OR_PROXY",
    kind: SignalKind::Strong,
    points: &[15.0, 18.0],
    description: "isVPN or proxyOrVPN is true (18 when both say so)",
};
pub const IP_COUNTRY_MISMATCH: SignalInfo = SignalInfo {
    code: "IP_COUNTRY_MISMATCH",
    kind: SignalKind::Strong,
    points: &[15.0],
    description:
        "the IP address's country differs from the billing (else shipping) address's country",
};
pub const DISPOSABLE_EMAIL: SignalInfo = SignalInfo {
    code: "DISPOSABLE_EMAIL",
    kind: SignalKind::Strong,
    points: &[20.0],
    description: "the e-mail's domain is a disposable-address service (mailchecker list)",
};
pub const NEW_ACCOUNT: SignalInfo = SignalInfo {
    code: "NEW_ACCOUNT",
    kind: SignalKind::Strong,
    points: &[6.0, 15.0, 30.0],
    description: "accountAge under 30 days (6), under 7 (15), 0: opened the same day (30)",
};
pub const NEW_DEVICE: SignalInfo = SignalInfo {
    code: "NEW_DEVICE",
    kind: SignalKind::Strong,
    points: &[8.0],
    description:
        "a customer first seen 30 or more days ago on a device never seen before (account takeover)",
};
pub const HIGH_AMOUNT: SignalInfo = SignalInfo {
    code: "HIGH_AMOUNT",
    kind: SignalKind::Strong,
    points: &[5.0, 12.0, 20.0, 30.0],
    description: "amount at least 1,000 (5), 5,000 (12), 10,000 (20), 50,000 (30)",
};
pub const AMOUNT_ABOVE_HISTORY: SignalInfo = SignalInfo {
    code: "AMOUNT_ABOVE_HISTORY",
    kind: SignalKind::Strong,
    points: &[8.0, 15.0, 25.0],
    description: "with 3+ earlier amounts: above the customer's maximum, z-score at least 2 (when they vary), and at least 2x (8), 5x (15), 10x (25) their mean",
};
pub const EMAIL_VELOCITY: SignalInfo = SignalInfo {
    code: "EMAIL_VELOCITY",
    kind: SignalKind::Strong,
    points: &[8.0, 15.0, 25.0],
    description:
        "earlier transactions with this e-mail: 3/5/10 in the last hour or 10/20/50 in the last day",
};
pub const DEVICE_VELOCITY: SignalInfo = SignalInfo {
    code: "DEVICE_VELOCITY",
    kind: SignalKind::Strong,
    points: &[8.0, 15.0, 25.0],
    description:
        "earlier transactions with this device: 3/5/10 in the last hour or 10/20/50 in the last day; a grade only as high as the day is above the usual daily count of the last 30 days (2x, 4x, 8x)",
};
pub const IP_VELOCITY: SignalInfo = SignalInfo {
    code: "IP_VELOCITY",
    kind: SignalKind::Strong,
    points: &[6.0, 12.0, 20.0],
    description: "earlier transactions from this IP address: 5/10/20 in the last hour or 20/50/100 in the last day; a grade only as high as the day is above the usual daily count of the last 30 days (2x, 4x, 8x)",
};
pub const CARD_VELOCITY: SignalInfo = SignalInfo {
    code: "CARD_VELOCITY",
    kind: SignalKind::Strong,
    points: &[10.0, 18.0, 28.0],
    description: "earlier transactions with this card identity: 3/5/10 in the last hour or 6/12/25 in the last day; a grade only as high as the day is above the usual daily count of the last 30 days (2x, 4x, 8x)",
};
pub const DEVICE_SHARED: SignalInfo = SignalInfo {
    code: "DEVICE_SHARED",
    kind: SignalKind::Strong,
    points: &[6.0, 14.0, 24.0, 32.0],
    description: "other e-mails seen on this device in the last 90 days: 1 (6), 2 (14), 4 (24), 10 (32); in the last 24 h one grade higher",
};
pub const IP_SHARED: SignalInfo = SignalInfo {
    code: "IP_SHARED",
    kind: SignalKind::Strong,
    points: &[5.0, 12.0, 20.0],
    description: "other e-mails seen from this IP address in the last 24 h: 3 (5), 10 (12), 30 (20); in the last 30 days: 10 (5), 30 (12), 100 (20)",
};
pub const CARD_SHARED: SignalInfo = SignalInfo {
    code: "CARD_SHARED",
    kind: SignalKind::Strong,
    points: &[10.0, 20.0, 30.0],
    description: "other e-mails seen with this card in the last 90 days: 1 (10), 2 (20), 4 (30)",
};
pub const ADDRESS_MISMATCH: SignalInfo = SignalInfo {
    code: "ADDRESS_MISMATCH",
    kind: SignalKind::Weak,
    points: &[10.0, 18.0],
    description: "addressMismatch is true, or billing and shipping addresses differ (ignoring case, spacing, punctuation) (10); in different countries (18)",
};
pub const EMAIL_DOMAIN_MISMATCH: SignalInfo = SignalInfo {
    code: "EMAIL_DOMAIN_MISMATCH",
    kind: SignalKind::Weak,
    points: &[8.0],
    description: "emailDomain is neither the e-mail's domain nor a parent of it",
};
pub const EMAIL_MISMATCH: SignalInfo = SignalInfo {
    code: "EMAIL_MISMATCH",
    kind: SignalKind::Weak,
    points: &[6.0],
    description: "customerEmail differs from the registered email (form A)",
};
pub const HIGH_FREQUENCY: SignalInfo = SignalInfo {
    code: "HIGH_FREQUENCY",
    kind: SignalKind::Weak,
    points: &[5.0, 10.0, 15.0],
    description:
        "transactionFrequency (as reported by the client) at least 5 (5), 10 (10), 20 (15)",
};
pub const UNUSUAL_QUANTITY: SignalInfo = SignalInfo {
    code: "UNUSUAL_QUANTITY",
    kind: SignalKind::Weak,
    points: &[4.0, 8.0, 12.0],
    description: "orderQuantity at least 10 (4), 50 (8), 200 (12)",
};
pub const NIGHT_TIME: SignalInfo = SignalInfo {
    code: "NIGHT_TIME",
    kind: SignalKind::Weak,
    points: &[5.0],
    description: "time between 00:00 and 05:59 as written (form A: local; Z: UTC; offset: that offset's clock)",
};
pub const TWO_FACTOR_AUTH: SignalInfo = SignalInfo {
    code: "TWO_FACTOR_AUTH",
    kind: SignalKind::Mitigation,
    points: &[-10.0],
    description: "twoFactorAuth is true",
};
pub const KNOWN_CUSTOMER: SignalInfo = SignalInfo {
    code: "KNOWN_CUSTOMER",
    kind: SignalKind::Mitigation,
    points: &[-10.0],
    description: "the e-mail and the device were both first seen 30 or more days ago, and no other e-mail used the device in the last 90 days",
};
pub const ESTABLISHED_ACCOUNT: SignalInfo = SignalInfo {
    code: "ESTABLISHED_ACCOUNT",
    kind: SignalKind::Mitigation,
    points: &[-10.0],
    description: "accountAge at least 365 days",
};
pub const LEARNED_MODEL: SignalInfo = SignalInfo {
    code: "LEARNED_MODEL",
    kind: SignalKind::Learned,
    points: &[-30.0, 40.0],
    description: "the model fitted on this installation's feedback labels (vigil.risk_refit) rates the transaction riskier (positive) or safer (negative) than the rules do; from -30 to 40",
};
pub const BLOCKLISTED: SignalInfo = SignalInfo {
    code: "BLOCKLISTED",
    kind: SignalKind::HardRule,
    points: &[100.0],
    description:
        "an e-mail, device, IP address or card identity of the request is on the blocklist",
};
pub const CONFIRMED_FRAUD: SignalInfo = SignalInfo {
    code: "CONFIRMED_FRAUD",
    kind: SignalKind::HardRule,
    points: &[100.0],
    description: "the e-mail or card identity of the request (the same payer) was in a transaction confirmed as fraud",
};
pub const FRAUD_LINKED_DEVICE: SignalInfo = SignalInfo {
    code: "FRAUD_LINKED_DEVICE",
    kind: SignalKind::Strong,
    points: &[4.0, 8.0, 15.0, 25.0],
    description: "the device was in a transaction confirmed as fraud: 25 halved for every 30 days since that fraud, divided by the square root of 1 + the other e-mails on the device in 90 days, times how often such links were fraud in this installation's labels (1 without labels); the highest grade at or under that",
};
pub const FRAUD_LINKED_IP: SignalInfo = SignalInfo {
    code: "FRAUD_LINKED_IP",
    kind: SignalKind::Strong,
    points: &[2.0, 4.0, 8.0, 12.0],
    description: "the IP address was in a transaction confirmed as fraud: as FRAUD_LINKED_DEVICE from 12, with the other e-mails from the IP in 30 days (households, offices and carriers share addresses)",
};

pub const NETWORK_FRAUD_LINK: SignalInfo = SignalInfo {
    code: "NETWORK_FRAUD_LINK",
    kind: SignalKind::Strong,
    points: &[5.0, 10.0, 15.0, 20.0],
    description: "another account of the network (accounts that opted in to share risk signals) confirmed the e-mail, card or device as fraud: 12 for an e-mail or card, 6 for a device, each grown by half for every further account that confirmed it, summed; the highest grade at or under that, 20 at most, and never a failure alone",
};

/// Every reason code, strongest kinds first.
pub const SIGNALS: &[SignalInfo] = &[
    BLOCKLISTED,
    CONFIRMED_FRAUD,
    FRAUD_LINKED_DEVICE,
    FRAUD_LINKED_IP,
    NETWORK_FRAUD_LINK,
    VPN_OR_PROXY,
    IP_COUNTRY_MISMATCH,
    DISPOSABLE_EMAIL,
    NEW_ACCOUNT,
    NEW_DEVICE,
    HIGH_AMOUNT,
    AMOUNT_ABOVE_HISTORY,
    EMAIL_VELOCITY,
    DEVICE_VELOCITY,
    IP_VELOCITY,
    CARD_VELOCITY,
    DEVICE_SHARED,
    IP_SHARED,
    CARD_SHARED,
    ADDRESS_MISMATCH,
    EMAIL_DOMAIN_MISMATCH,
    EMAIL_MISMATCH,
    HIGH_FREQUENCY,
    UNUSUAL_QUANTITY,
    NIGHT_TIME,
    TWO_FACTOR_AUTH,
    KNOWN_CUSTOMER,
    ESTABLISHED_ACCOUNT,
    LEARNED_MODEL,
];

/// [`SIGNALS`] as a Markdown table (code, points at strictness 50, kind, description),
/// for docs/reference/signals.md.
pub fn signals_markdown() -> String {
    let mut out = String::from(
        "| code | points at strictness 50 | kind | description |\n|---|---|---|---|\n",
    );
    for s in SIGNALS {
        let points: Vec<String> = match s.kind {
            SignalKind::Learned => vec![format!("{} to {}", s.points[0], s.points[1])],
            _ => s.points.iter().map(|p| format!("{p}")).collect(),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            s.code,
            points.join(" / "),
            s.kind.as_str(),
            s.description
        ));
    }
    out
}

/// Looks up a signal by code.
pub fn signal(code: &str) -> Option<&'static SignalInfo> {
    SIGNALS.iter().find(|s| s.code == code)
}
