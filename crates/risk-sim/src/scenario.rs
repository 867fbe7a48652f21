//! The worlds of `make bench-risk-quality`: the same shop under conditions
//! that make feedback hard. Each names what it changes from the baseline
//! (`crates/risk-sim/src/params.rs`); none reads the engine's thresholds.

/// What a world changes, and how its labels arrive.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    /// Share of honest purchases made on one of the popular fingerprints
    /// (`params::POPULAR_FINGERPRINTS`: a common phone and browser look alike).
    pub popular_devices: f64,
    /// Share of fraudsters' devices that are popular fingerprints too.
    pub fraud_popular_devices: f64,
    /// Share of purchases over a mobile carrier's NAT (a few addresses per
    /// country shared by everyone on it).
    pub carrier_purchases: f64,
    /// Share of fraud connecting through a carrier's NAT.
    pub fraud_over_carriers: f64,
    /// Share of a ring's devices and addresses an honest customer takes up
    /// after the ring has moved on (a resold phone, a recycled residential
    /// address), before its chargebacks land.
    pub handed_on: f64,
    /// Whether the dominant fraud pattern changes half-way: bust-outs and
    /// device farms fade, account takeover and reshipping take over.
    pub drift: bool,
    /// Days from a fraudulent purchase to its chargeback (uniform in the range).
    pub label_delay_days: (f64, f64),
    /// Share of fraud ever reported.
    pub labelled: f64,
}

const BASELINE: Scenario = Scenario {
    name: "baseline",
    about: "the shop of params.rs; chargebacks 30 days after each fraud",
    popular_devices: 0.0,
    fraud_popular_devices: 0.0,
    carrier_purchases: crate::params::CARRIER_PURCHASES,
    fraud_over_carriers: 0.0,
    handed_on: 0.0,
    drift: false,
    label_delay_days: (30.0, 30.0),
    labelled: 1.0,
};

/// Every world, baseline first.
pub const WORLDS: [Scenario; 5] = [
    BASELINE,
    Scenario {
        name: "rings_move_on",
        about: "rings stop before their chargebacks land; half their devices and addresses pass to honest customers afterwards",
        handed_on: 0.5,
        ..BASELINE
    },
    Scenario {
        name: "shared_devices",
        about: "a third of honest purchases on 50 popular fingerprints, as half the fraud; carrier NAT for 40% of purchases and 30% of fraud",
        popular_devices: 0.33,
        fraud_popular_devices: 0.5,
        carrier_purchases: 0.4,
        fraud_over_carriers: 0.3,
        ..BASELINE
    },
    Scenario {
        name: "drift",
        about: "bust-outs and device farms at twice their rate in the first two months and a quarter of it after; account takeover and reshipping the other way",
        drift: true,
        ..BASELINE
    },
    Scenario {
        name: "late_labels",
        about: "only chargebacks, 30 to 90 days late, and a third of the fraud never reported",
        label_delay_days: (30.0, 90.0),
        labelled: 2.0 / 3.0,
        ..BASELINE
    },
];
