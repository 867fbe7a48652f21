//! The simulator's parameters, apart from the scorer's on purpose: they describe
//! traffic (how often, how many, how shared), never the engine's thresholds or
//! points. Figures are round numbers from public descriptions of e-commerce fraud
//! (fraud at 1-3% of orders, most of it on new or taken-over accounts) and of
//! ordinary sharing (households, offices, carrier NAT, VPN users); they were set
//! before the scorer was calibrated and are not tuned to it.

/// Days simulated; "month" in reports is 30 days.
pub const DAYS: u32 = 120;
/// Customers with an account before the first day.
pub const EXISTING_CUSTOMERS: usize = 5_000;
/// Customers who sign up during the simulation (spread evenly): first
/// purchases are about a tenth of orders, as in a shop that is growing.
pub const NEW_CUSTOMERS: usize = 5_000;
/// New customers who buy once and never again.
pub const ONE_TIME_BUYERS: f64 = 0.5;
/// Existing accounts that had never bought (their first purchase comes on an
/// old account).
pub const DORMANT_ACCOUNTS: f64 = 0.1;
/// Purchases per customer per 30 days: log-normal with this median and spread.
pub const PURCHASES_MEDIAN: f64 = 1.4;
pub const PURCHASES_SIGMA: f64 = 0.9;
/// A customer's typical amount: log-normal median and spread; each purchase
/// varies around it with `AMOUNT_SIGMA`.
pub const BASKET_MEDIAN: f64 = 60.0;
pub const BASKET_SIGMA: f64 = 0.8;
pub const AMOUNT_SIGMA: f64 = 0.5;
/// Share of new customers whose first purchase is on the day they sign up
/// (accounts made at checkout).
pub const NEW_BUY_SAME_DAY: f64 = 0.35;

// Legitimate noise.
/// Customers living in a household of 2-4 that shares a home IP.
pub const HOUSEHOLD_SHARE: f64 = 0.3;
/// Households that also share one computer.
pub const HOUSEHOLD_SHARED_DEVICE: f64 = 0.3;
/// Purchases made from an office IP shared by 20-80 colleagues.
pub const OFFICE_PURCHASES: f64 = 0.1;
/// Purchases over a mobile carrier's NAT (a few IPs per country for everyone).
pub const CARRIER_PURCHASES: f64 = 0.2;
/// Fingerprints of the commonest phones and browsers, which many customers
/// share (used by the `shared_devices` world).
pub const POPULAR_FINGERPRINTS: usize = 50;
/// Customers who always use a VPN (exit IPs abroad, shared by all its users).
pub const VPN_USERS: f64 = 0.05;
/// Purchases made while travelling (a foreign IP).
pub const TRAVEL_PURCHASES: f64 = 0.02;
/// Purchases from a new device fingerprint of the customer (a new phone, a
/// browser update or cleared cookies).
pub const NEW_DEVICE_PURCHASES: f64 = 0.08;
/// Purchases at home after the provider gave the home a new address.
pub const HOME_IP_CHANGES: f64 = 0.15;
/// Purchases shipped to the customer's workplace.
pub const SHIP_TO_WORK: f64 = 0.05;
/// Gifts: shipped to another address in the country, or abroad.
pub const GIFT_PURCHASES: f64 = 0.08;
pub const GIFT_ABROAD: f64 = 0.01;
/// Customers whose baskets are ten times the usual (loyal big spenders).
pub const BIG_SPENDERS: f64 = 0.03;
/// Customers with two-factor authentication on.
pub const TWO_FACTOR: f64 = 0.3;
/// Purchases placed between 00:00 and 06:00.
pub const NIGHT_PURCHASES: f64 = 0.06;
/// Customers using a disposable-address service for their e-mail.
pub const LEGIT_DISPOSABLE: f64 = 0.005;

// Fraud: campaigns per 30 days of each pattern.
/// New-account bust-out: sign up, buy dear goods within hours with a stolen
/// card, ship to a drop.
pub const BUST_OUTS: u32 = 40;
/// Device farms: a few emulated devices behind many fresh accounts, rotating proxies.
pub const DEVICE_FARMS: u32 = 3;
pub const FARM_DEVICES: (u32, u32) = (2, 6);
pub const FARM_ACCOUNTS: (u32, u32) = (10, 30);
/// Card testing: one device and IP, many stolen cards, small amounts in minutes.
pub const CARD_TESTS: u32 = 6;
pub const CARD_TEST_TRIES: (u32, u32) = (5, 25);
/// Account takeover: an existing customer's account on the fraudster's device,
/// from abroad or a proxy, a bigger basket, a new shipping address.
pub const TAKEOVERS: u32 = 30;
/// Reshipping: stolen card with the victim's billing address, goods shipped
/// abroad, an account a few weeks old.
pub const RESHIPPERS: u32 = 20;
/// Throwaway accounts on disposable e-mail addresses.
pub const DISPOSABLES: u32 = 15;

/// Share of fraud that takes care: an aged (bought) account, a residential IP
/// in the victim's country, no proxy flag.
pub const CAREFUL_FRAUD: f64 = 0.25;
/// Fraud connecting through the proxies every fraudster rents (a pool of this
/// many addresses), rather than a fresh address.
pub const SHARED_PROXY_FRAUD: f64 = 0.4;
pub const SHARED_PROXIES: usize = 300;
/// Fraud shipped to the card's billing address (parcel intercepted there).
pub const FRAUD_SHIPS_TO_BILLING: f64 = 0.3;
