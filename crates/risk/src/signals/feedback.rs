//! Signals from what this installation and the network were told: the
//! blocklist, transactions confirmed as fraud, and links to them through a
//! device, an IP address or another account. What they add beyond the hard
//! rules is bounded, because feedback alone never fails a transaction.

use super::{
    Collector, BLOCKLISTED, CONFIRMED_FRAUD, FRAUD_LINKED_DEVICE, FRAUD_LINKED_IP,
    NETWORK_FRAUD_LINK,
};
use crate::features::LinkWeights;
use crate::history::{HardRuleSource, History, IdentityKind, Window};

pub(super) fn hard_rules(hist: &History, out: &mut Collector) {
    for (source, info, what) in [
        (HardRuleSource::Blocklist, &BLOCKLISTED, "on the blocklist"),
        (
            HardRuleSource::ConfirmedFraud,
            &CONFIRMED_FRAUD,
            "linked to confirmed fraud",
        ),
    ] {
        let mut detail = String::new();
        for rule in hist
            .hard_rules
            .iter()
            .filter(|r| r.source == source && r.is_hard())
        {
            if !detail.is_empty() {
                detail.push_str("; ");
            }
            detail.push_str("the ");
            detail.push_str(rule.identity.describe());
            detail.push_str(" is ");
            detail.push_str(what);
            if !rule.detail.is_empty() {
                detail.push_str(" (");
                detail.push_str(&rule.detail);
                detail.push(')');
            }
        }
        if !detail.is_empty() {
            out.fire(info, 0, detail);
        }
    }
}

/// Half-life of a link to confirmed fraud, in days.
pub const FRAUD_LINK_HALF_LIFE_DAYS: f64 = 30.0;

/// The graded signals of a device or IP address linked to confirmed fraud;
/// returns, for the record, the days since that fraud for each (device, IP).
pub(super) fn fraud_links(
    hist: &History,
    weights: LinkWeights,
    out: &mut Collector,
) -> [Option<f64>; 2] {
    let mut days = [None, None];
    for (slot, (kind, info, others, weight, window)) in [
        (
            IdentityKind::Device,
            &FRAUD_LINKED_DEVICE,
            hist.device_others.quarter,
            weights.device,
            "90 days",
        ),
        (
            IdentityKind::Ip,
            &FRAUD_LINKED_IP,
            hist.ip_others.month,
            weights.ip,
            "30 days",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(rule) = hist
            .hard_rules
            .iter()
            .find(|r| r.identity == kind && !r.is_hard())
        else {
            continue;
        };
        let age_days = rule
            .fraud_age_us
            .map_or(0.0, |us| us.max(0) as f64 / Window::DAY_US as f64);
        days[slot] = Some((age_days * 100.0).round() / 100.0);
        let top = info.points.last().copied().unwrap_or_default();
        let strength = top * 0.5f64.powf(age_days / FRAUD_LINK_HALF_LIFE_DAYS)
            / (1.0 + f64::from(others)).sqrt()
            * weight;
        let Some(grade) = info.points.iter().rposition(|p| *p <= strength) else {
            continue;
        };
        out.fire(
            info,
            grade,
            format!(
                "the {} was in a transaction confirmed as fraud {age_days:.0} days before; {} other e-mails used it in {window}; links weigh {weight:.2} here",
                kind.describe(),
                others,
            ),
        );
    }
    days
}

/// The network layer's evidence: identities other opted-in accounts
/// confirmed as fraud. Bounded (20 at most), and counted with what feedback
/// adds, so it never fails a transaction alone.
pub(super) fn network(hist: &History, out: &mut Collector) {
    if hist.network.is_empty() {
        return;
    }
    let mut strength = 0.0;
    let mut said = Vec::new();
    for link in &hist.network {
        let base = match link.identity {
            IdentityKind::Email | IdentityKind::Card => 12.0,
            IdentityKind::Device => 6.0,
            // Not shared; a caller that sends one adds nothing.
            IdentityKind::Ip => continue,
        };
        let accounts = link.accounts.max(1);
        strength += base * (1.0 + 0.5 * f64::from(accounts - 1));
        said.push(format!(
            "the {} by {accounts} other account{}",
            link.identity.describe(),
            if accounts == 1 { "" } else { "s" }
        ));
    }
    let info = &NETWORK_FRAUD_LINK;
    let Some(grade) = info.points.iter().rposition(|p| *p <= strength) else {
        return;
    };
    out.fire(
        info,
        grade,
        format!("confirmed as fraud in the network: {}", said.join("; ")),
    );
}
