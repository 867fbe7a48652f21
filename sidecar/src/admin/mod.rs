//! The admin command: `keys`, `accounts`, `user-keys` and `blocklist`.
//!
//! Each subcommand is one call of the extension's admin SQL functions (the same
//! ones psql users call), made as the `vigil_admin` role, which may call those
//! and nothing else. A new key is printed once, alone on stdout, so it can be
//! captured (`KEY=$(vigil-sidecar keys create --name shop)`); what it is goes to
//! stderr. `--json` prints records instead.

mod output;

use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};
use ipnet::IpNet;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls};

use output::{print_created, print_listing};

type BoxError = Box<dyn std::error::Error>;

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// API keys: create and list them; status, rotate and revoke take the
    /// prefix of any key, API (`vk_`) or user (`vu_`).
    Keys {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Accounts: the tenants. Each owns its API keys, user keys, vector databases,
    /// transactions, labels, models, blocklist and identity assessments.
    Accounts {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        action: AccountsAction,
    },
    /// User keys of vector accounts (rotate and revoke them with `keys`).
    UserKeys {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        action: UserKeysAction,
    },
    /// E-mails, devices, IPs and cards whose transactions always fail (level 2).
    Blocklist {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        action: BlocklistAction,
    },
}

#[derive(Subcommand, Debug)]
pub enum BlocklistAction {
    /// Block an identity (normalised as transactions record it); updates an existing entry.
    Add {
        #[arg(value_parser = ["email", "device", "ip", "card"])]
        kind: String,
        value: String,
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        expiry: Expiry,
        /// The account whose transactions it blocks. Default: the default account.
        #[arg(long)]
        account: Option<String>,
    },
    /// List the entries, every account's unless `--account` names one.
    List {
        #[arg(long)]
        account: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove an entry.
    Remove {
        #[arg(value_parser = ["email", "device", "ip", "card"])]
        kind: String,
        value: String,
        /// Default: the default account.
        #[arg(long)]
        account: Option<String>,
    },
}

#[derive(Args, Debug)]
pub struct Connection {
    /// PostgreSQL URL of a role allowed the admin functions (`vigil_admin`).
    #[arg(
        long,
        env = "VIGIL_ADMIN_DATABASE_URL",
        hide_env_values = true,
        global = true
    )]
    database_url: Option<String>,
}

/// When a new key stops working; neither flag: never.
#[derive(Args, Debug)]
pub struct Expiry {
    /// Lifetime from now, e.g. `90d`, `12h`.
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "expires_at")]
    expires_in: Option<Duration>,
    /// Absolute expiry, e.g. `2027-01-31T00:00:00Z`.
    #[arg(long)]
    expires_at: Option<String>,
}

impl Expiry {
    /// A timestamp PostgreSQL reads, or None for never.
    fn timestamp(&self) -> Result<Option<String>, BoxError> {
        if let Some(lifetime) = self.expires_in {
            let at = SystemTime::now()
                .checked_add(lifetime)
                .ok_or("--expires-in is too far in the future")?;
            return Ok(Some(humantime::format_rfc3339(at).to_string()));
        }
        Ok(self.expires_at.clone())
    }
}

/// A key's own rate limit in the sidecar; unset: the sidecar's defaults.
#[derive(Args, Debug)]
pub struct RateLimit {
    /// Requests per second this key may sustain.
    #[arg(long)]
    rate_per_second: Option<f32>,
    /// Requests this key may make at once above its rate.
    #[arg(long)]
    burst: Option<i32>,
}

#[derive(Subcommand, Debug)]
pub enum KeysAction {
    /// Create an API key and print it (once).
    Create {
        #[arg(long)]
        name: String,
        /// What the key may call; repeat for several. Default: all.
        #[arg(long = "scope", value_parser = ["transaction", "identity"])]
        scopes: Vec<String>,
        /// Client networks the key may be used from (CIDR); repeat for several.
        #[arg(long = "allow-ip")]
        allowed_ips: Vec<IpNet>,
        #[command(flatten)]
        expiry: Expiry,
        #[command(flatten)]
        rate: RateLimit,
        /// The account whose transactions, labels, models and assessments the
        /// key reads and writes (create it with `accounts create`). Default:
        /// the default account, `default@localhost`.
        #[arg(long)]
        account: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List API keys (never their secrets).
    List {
        /// Include revoked and expired keys.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Print `active`, `expired` or `revoked`; exit status 1 if no such key.
    Status { prefix: String },
    /// Issue a new key like the old one; the old one keeps working for a while.
    Rotate {
        prefix: String,
        /// How long the old key keeps working, e.g. `24h`, `0s`.
        #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
        old_key_lives: Duration,
        #[command(flatten)]
        expiry: Expiry,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key now.
    Revoke { prefix: String },
}

#[derive(Subcommand, Debug)]
pub enum AccountsAction {
    /// Create an account (an e-mail-like identifier); no-op if it exists.
    Create { account: String },
    /// List accounts with their active user keys and databases.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Delete an account with its keys, vector databases, transactions, labels,
    /// models, blocklist and identity assessments (not the default account).
    Delete { account: String },
    /// Change an account's settings (one or both, in one transaction).
    #[command(group(clap::ArgGroup::new("setting").required(true).multiple(true)))]
    Set {
        account: String,
        /// Join (true) or leave (false) the network layer: share the
        /// account's confirmed frauds' e-mails, devices and cards, as hashes,
        /// with the other accounts that share, and receive theirs.
        #[arg(long, action = clap::ArgAction::Set, group = "setting")]
        share_risk_signals: Option<bool>,
        /// The share of the account's transactions its people can review
        /// (above 0, at most 0.5): each refit moves the account's Review
        /// cut-off to it. `default`: the installation's `vigil.risk_review_rate`.
        #[arg(long, value_parser = review_rate, group = "setting")]
        review_rate: Option<ReviewRate>,
    },
}

/// `--review-rate`: a share, or `default` (None: the installation's).
#[derive(Clone, Copy, Debug)]
pub struct ReviewRate(Option<f32>);

fn review_rate(text: &str) -> Result<ReviewRate, String> {
    if text == "default" {
        return Ok(ReviewRate(None));
    }
    // The range is the database's to check (vigil.set_risk_review_rate), so
    // that SQL and this command refuse the same values with the same words.
    text.parse::<f32>()
        .map(|rate| ReviewRate(Some(rate)))
        .map_err(|_| "a share such as 0.02, or `default`".to_owned())
}

#[derive(Subcommand, Debug)]
pub enum UserKeysAction {
    /// Create a user key of an account and print it (once).
    Create {
        account: String,
        #[arg(long, default_value = "default")]
        name: String,
        /// Databases the key may use; repeat for several. Default: all of the account's.
        #[arg(long = "database")]
        databases: Vec<String>,
        #[command(flatten)]
        expiry: Expiry,
        #[command(flatten)]
        rate: RateLimit,
        #[arg(long)]
        json: bool,
    },
    /// List user keys (never their secrets).
    List {
        /// Only this account's.
        #[arg(long)]
        account: Option<String>,
        /// Include revoked and expired keys.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(command: AdminCommand) -> Result<(), BoxError> {
    match command {
        AdminCommand::Keys { connection, action } => {
            keys(&connect(connection).await?, action).await
        }
        AdminCommand::Accounts { connection, action } => {
            accounts(&connect(connection).await?, action).await
        }
        AdminCommand::UserKeys { connection, action } => {
            user_keys(&connect(connection).await?, action).await
        }
        AdminCommand::Blocklist { connection, action } => {
            blocklist(&connect(connection).await?, action).await
        }
    }
}

async fn connect(connection: Connection) -> Result<Client, BoxError> {
    let url = connection
        .database_url
        .ok_or("set VIGIL_ADMIN_DATABASE_URL or --database-url (a role with the admin functions, e.g. vigil_admin)")?;
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| format!("the admin database URL is not valid: {e}"))?;
    config.application_name("vigil-sidecar admin");
    config.options("-c TimeZone=UTC");
    let (client, conn) = config
        .connect(NoTls)
        .await
        .map_err(|e| format!("cannot connect to the database: {}", db_message(&e)))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            eprintln!("vigil-sidecar: database connection: {e}");
        }
    });
    Ok(client)
}

/// The server's own message when there is one (it names the problem).
fn db_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.hint() {
            Some(hint) => format!("{} (hint: {hint})", db.message()),
            None => db.message().to_owned(),
        },
        None => e.to_string(),
    }
}

async fn call(
    db: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<tokio_postgres::Row>, BoxError> {
    db.query(sql, params)
        .await
        .map_err(|e| db_message(&e).into())
}

/// Runs a function that returns whether it found its target.
async fn call_found(
    db: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
    done: String,
    not_found: String,
) -> Result<(), BoxError> {
    let rows = call(db, sql, params).await?;
    if rows.first().is_some_and(|r| r.get::<_, bool>(0)) {
        eprintln!("{done}");
        Ok(())
    } else {
        Err(not_found.into())
    }
}

/// A repeatable flag given no times means NULL (the function's default).
fn unless_empty<T>(values: Vec<T>) -> Option<Vec<T>> {
    if values.is_empty() {
        None
    } else {
        Some(values)
    }
}

async fn keys(db: &Client, action: KeysAction) -> Result<(), BoxError> {
    match action {
        KeysAction::Create {
            name,
            scopes,
            allowed_ips,
            expiry,
            rate,
            account,
            json,
        } => {
            let scopes = unless_empty(scopes);
            let ips = unless_empty(allowed_ips.iter().map(ToString::to_string).collect());
            let expiry_at = expiry.timestamp()?;
            // The account only when named: a key of the default account is
            // made by the same call as before 0.17.0 (a cluster not yet
            // upgraded still takes it).
            let mut args: Vec<&(dyn ToSql + Sync)> = vec![
                &name,
                &scopes,
                &expiry_at,
                &ips,
                &rate.rate_per_second,
                &rate.burst,
            ];
            if let Some(account) = &account {
                args.push(account);
            }
            let rows = call(
                db,
                if account.is_some() {
                    "SELECT id, key, prefix FROM vigil.create_api_key(
                         $1, coalesce($2, ARRAY['transaction', 'identity']), $3::text::timestamptz,
                         $4::text[]::cidr[], $5, $6, $7)"
                } else {
                    "SELECT id, key, prefix FROM vigil.create_api_key(
                         $1, coalesce($2, ARRAY['transaction', 'identity']), $3::text::timestamptz,
                         $4::text[]::cidr[], $5, $6)"
                },
                &args,
            )
            .await?;
            print_created("API key", &rows, json)
        }
        KeysAction::List { all, json } => {
            let rows = call(
                db,
                "SELECT prefix, account, name, array_to_string(scopes, ',') AS scopes, status,
                        coalesce(array_to_string(allowed_ips, ','), 'any') AS allowed_ips,
                        to_char(created_at, 'YYYY-MM-DD HH24:MI') AS created,
                        coalesce(to_char(expires_at, 'YYYY-MM-DD HH24:MI'), 'never') AS expires,
                        coalesce(to_char(last_used_at, 'YYYY-MM-DD HH24:MI'), '-') AS last_used,
                        coalesce(rate_per_second::text, 'default') AS rate_per_second,
                        coalesce(burst::text, 'default') AS burst
                 FROM vigil.api_key_list WHERE $1 OR status = 'active' ORDER BY id",
                &[&all],
            )
            .await?;
            print_listing(&rows, json)
        }
        KeysAction::Status { prefix } => {
            let rows = call(db, "SELECT vigil.key_status($1)", &[&prefix]).await?;
            match rows.first().and_then(|r| r.get::<_, Option<String>>(0)) {
                Some(status) => Ok(output::out(status)?),
                None => Err(format!("no key with prefix {prefix}").into()),
            }
        }
        KeysAction::Rotate {
            prefix,
            old_key_lives,
            expiry,
            json,
        } => {
            let rows = call(
                db,
                "SELECT id, key, prefix FROM vigil.rotate_key(
                     $1, make_interval(secs => $2), $3::text::timestamptz)",
                &[&prefix, &old_key_lives.as_secs_f64(), &expiry.timestamp()?],
            )
            .await?;
            print_created("rotated key", &rows, json)?;
            eprintln!(
                "the old key {prefix} keeps working for {}",
                humantime::format_duration(old_key_lives)
            );
            Ok(())
        }
        KeysAction::Revoke { prefix } => {
            call_found(
                db,
                "SELECT vigil.revoke_key($1)",
                &[&prefix],
                format!("revoked {prefix}"),
                format!("no live key with prefix {prefix}"),
            )
            .await
        }
    }
}

async fn accounts(db: &Client, action: AccountsAction) -> Result<(), BoxError> {
    match action {
        AccountsAction::Create { account } => {
            call(db, "SELECT vigil.create_account($1)", &[&account]).await?;
            eprintln!("account {account} exists");
            Ok(())
        }
        AccountsAction::Set {
            account,
            share_risk_signals,
            review_rate,
        } => {
            let mut done = Vec::new();
            if let Some(share) = share_risk_signals {
                done.push(
                    if share {
                        "shares risk signals"
                    } else {
                        "does not share risk signals"
                    }
                    .to_owned(),
                );
            }
            if let Some(ReviewRate(rate)) = review_rate {
                done.push(match rate {
                    Some(rate) => format!("reviews {rate} of its transactions"),
                    None => "reviews the installation's share (vigil.risk_review_rate)".to_owned(),
                });
            }
            // One statement, so one transaction: a rate refused leaves the
            // sharing as it was.
            call_found(
                db,
                "SELECT (CASE WHEN $2::boolean IS NULL THEN true
                              ELSE vigil.set_risk_sharing($1, $2) END)
                    AND (CASE WHEN NOT $3 THEN true
                              ELSE vigil.set_risk_review_rate($1, $4) END)",
                &[
                    &account,
                    &share_risk_signals,
                    &review_rate.is_some(),
                    &review_rate.and_then(|ReviewRate(rate)| rate),
                ],
                format!("{account} {}", done.join(" and ")),
                format!("no account {account}"),
            )
            .await
        }
        AccountsAction::List { json } => {
            let rows = call(
                db,
                "SELECT account, to_char(created_at, 'YYYY-MM-DD HH24:MI') AS created,
                        active_user_keys::text AS active_user_keys,
                        array_to_string(databases, ',') AS databases,
                        s.share_risk_signals::text AS share_risk_signals,
                        coalesce(s.review_rate::text, 'default') AS review_rate
                 FROM vigil.account_list LEFT JOIN vigil.account_risk_settings() s USING (account)
                 ORDER BY account",
                &[],
            )
            .await?;
            print_listing(&rows, json)
        }
        AccountsAction::Delete { account } => {
            call_found(
                db,
                "SELECT vigil.delete_account($1)",
                &[&account],
                format!("deleted {account} and everything of it"),
                format!("no account {account}"),
            )
            .await
        }
    }
}

async fn user_keys(db: &Client, action: UserKeysAction) -> Result<(), BoxError> {
    match action {
        UserKeysAction::Create {
            account,
            name,
            databases,
            expiry,
            rate,
            json,
        } => {
            let databases = unless_empty(databases);
            let rows = call(
                db,
                "SELECT id, key, prefix FROM vigil.create_user_key(
                     $1, $2, $3, $4::text::timestamptz, $5, $6)",
                &[
                    &account,
                    &name,
                    &databases,
                    &expiry.timestamp()?,
                    &rate.rate_per_second,
                    &rate.burst,
                ],
            )
            .await?;
            print_created("user key", &rows, json)
        }
        UserKeysAction::List { account, all, json } => {
            let rows = call(
                db,
                "SELECT prefix, account, name, coalesce(array_to_string(databases, ','), 'all') AS databases,
                        status, to_char(created_at, 'YYYY-MM-DD HH24:MI') AS created,
                        coalesce(to_char(expires_at, 'YYYY-MM-DD HH24:MI'), 'never') AS expires,
                        coalesce(to_char(last_used_at, 'YYYY-MM-DD HH24:MI'), '-') AS last_used
                 FROM vigil.user_key_list
                 WHERE ($1::text IS NULL OR account = $1) AND ($2 OR status = 'active') ORDER BY id",
                &[&account, &all],
            )
            .await?;
            print_listing(&rows, json)
        }
    }
}

async fn blocklist(db: &Client, action: BlocklistAction) -> Result<(), BoxError> {
    match action {
        BlocklistAction::Add {
            kind,
            value,
            reason,
            expiry,
            account,
        } => {
            let rows = call(
                db,
                "SELECT vigil.blocklist_add($1, $2, $3, $4::text::timestamptz, $5)",
                &[&kind, &value, &reason, &expiry.timestamp()?, &account],
            )
            .await?;
            let normalised: String = rows.first().ok_or("no answer")?.try_get(0)?;
            eprintln!("blocked {kind} {normalised}");
            Ok(())
        }
        BlocklistAction::List { account, json } => {
            let rows = call(
                db,
                "SELECT account, kind, value, coalesce(reason, '') AS reason,
                        to_char(created_at, 'YYYY-MM-DD HH24:MI') AS created,
                        coalesce(to_char(expires_at, 'YYYY-MM-DD HH24:MI'), 'never') AS expires
                 FROM vigil.blocklist_list($1)",
                &[&account],
            )
            .await?;
            print_listing(&rows, json)
        }
        BlocklistAction::Remove {
            kind,
            value,
            account,
        } => {
            call_found(
                db,
                "SELECT vigil.blocklist_remove($1, $2, $3)",
                &[&kind, &value, &account],
                format!("unblocked {kind} {value}"),
                format!("no blocklist entry for {kind} {value}"),
            )
            .await
        }
    }
}
