//! Request extractors that make an endpoint its types plus one SQL call.
//!
//! - [`ApiKey`]: an API key with scope `S` (header `x-api-key`), checked
//!   from the request's head, so a caller without one gets 401 before any 415
//!   or 400 about its body (`/assess-id` reads its multipart body after it).
//! - [`KeyedJson`]: an [`ApiKey`], then a JSON body, then a pooled connection.
//! - [`AccountJson`]: a JSON body carrying the body credentials `userKey`,
//!   `account` and `dbName` beside the endpoint's own fields; the account is
//!   entered inside the request's transaction by [`Account::enter`], or, when
//!   [`Account::admit_early`] lets it, each statement is run for it with its
//!   check in one round trip ([`Admitted`]). A body
//!   longer than [`CREDENTIALS_WITHIN`] that gives its credentials in that
//!   prefix has them checked before the rest is read; one that gives them
//!   later is read within a budget all such bodies share
//!   (`--unauthenticated-body-mb`), then checked.
//!
//! No request holds a pooled connection while its body arrives: a client
//! sending slowly holds up nobody else. Unauthenticated bodies hold at most
//! [`CREDENTIALS_WITHIN`] bytes each, and the budget in all, of memory.

pub mod client_ip;

use std::marker::PhantomData;
use std::net::IpAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;
use utoipa::ToSchema;

use crate::abandon::Conn;
use crate::auth::{self, AccountCredentials, ApiCaller, Limits};
use crate::error::ApiError;
use crate::json::{
    parse, read_body, read_head, read_rest, refuse_nul, require_json, required_text,
    top_level_strings, Head, JsonBody,
};
use crate::state::AppState;
use client_ip::ClientIp;

/// An API key scope, as a type, so each endpoint names its own in its signature.
pub trait Scope {
    const NAME: &'static str;
}

/// The scope of `POST /api/transaction` and its feedback.
pub struct TransactionScope;

impl Scope for TransactionScope {
    const NAME: &'static str = "transaction";
}

/// The scope of `POST /assess-id`.
pub struct IdentityScope;

impl Scope for IdentityScope {
    const NAME: &'static str = "identity";
}

/// A caller whose API key holds scope `S`. The key is checked on a
/// connection returned at once: the endpoint takes its own once the body is in.
pub struct ApiKey<S> {
    pub caller: ApiCaller,
    scope: PhantomData<fn() -> S>,
}

impl<S: Scope> FromRequestParts<AppState> for ApiKey<S> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let ClientIp(ip) = ClientIp::from_request_parts(parts, state).await?;
        let caller = auth::check_api_key(
            &state.limits,
            || state.db(),
            &parts.headers,
            ip,
            Some(S::NAME),
        )
        .await?;
        Ok(ApiKey {
            caller,
            scope: PhantomData,
        })
    }
}

/// A caller whose API key holds scope `S`, its JSON body, and the
/// connection for the endpoint's call, taken once the body was read.
pub struct KeyedJson<S, T> {
    pub caller: ApiCaller,
    pub db: Conn,
    pub body: T,
    scope: PhantomData<fn() -> S>,
}

impl<S: Scope, T: DeserializeOwned + Send> FromRequest<AppState> for KeyedJson<S, T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let ApiKey { caller, .. } = ApiKey::<S>::from_request_parts(&mut parts, state).await?;
        let JsonBody(body) =
            JsonBody::from_request(Request::from_parts(parts, body), state).await?;
        let db = state.db().await?;
        Ok(KeyedJson {
            caller,
            db,
            body,
            scope: PhantomData,
        })
    }
}

/// The body credentials of the vector endpoints. OpenAPI security schemes
/// cannot say "in the body", so the document shows them as this schema,
/// which every vector request includes.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BodyCredentials {
    /// A user key (vu_…) of the account, granted the database.
    #[schema(required = true, value_type = String)]
    user_key: Option<String>,
    /// The account, an e-mail-like identifier.
    #[schema(required = true, value_type = String, example = "demo@vigil.local")]
    account: Option<String>,
    /// The vector database the request is about: 1 to 63 letters, digits,
    /// `_`, `.` or `-`, starting with a letter or digit.
    #[schema(required = true, value_type = String, example = "notes",
             pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")]
    db_name: Option<String>,
}

/// A longer body whose credentials come within this many bytes has them
/// checked before the rest is read: an unauthenticated client makes the
/// sidecar hold no more than this of such a body.
pub const CREDENTIALS_WITHIN: usize = 64 * 1024;

/// A body with no fields of its own beyond the credentials.
#[derive(Deserialize)]
pub struct NoFields {}

/// A JSON body with body credentials, not yet checked, and the endpoint's own fields.
pub struct AccountJson<T> {
    pub account: Account,
    pub body: T,
}

/// The credentials to enter the account with, and the request's connection
/// once taken: [`Account::enter`] takes it, so a handler may first wait its
/// turn for something else (a store's model time) without holding one.
pub struct Account {
    state: AppState,
    db: Option<Conn>,
    ip: IpAddr,
    credentials: AccountCredentials,
    db_name: String,
    /// The request's rate-limit token is taken ([`Account::admit_early`]).
    charged: bool,
    /// The share of the unauthenticated budget a long body read before its
    /// credentials holds, until the request is answered.
    _budget: Option<OwnedSemaphorePermit>,
}

/// The request's transaction, acting for the account (row-level security
/// keys on it), and the database it may use. Dropped without commit, it rolls back.
pub struct Entered<'a> {
    pub tx: Transaction<'a>,
    pub db_name: &'a str,
}

/// An account [`Account::admit_early`] admitted, owned, so that its
/// statements may run later and on any connection (a query embedder's, or
/// the request's), each in one round trip with the account check
/// (`auth::enter_account_and_run`). The statement runs before the check
/// answers, which is why only a request whose rate-limit token is taken
/// gets one.
pub struct Admitted {
    limits: Arc<Limits>,
    credentials: AccountCredentials,
    db_name: String,
    ip: IpAddr,
}

impl<T: DeserializeOwned + Send + 'static> FromRequest<AppState> for AccountJson<T> {
    type Rejection = ApiError;

    /// The credentials and the endpoint's fields are two reads of the same
    /// object, each skipping what is not its own: serde's `flatten` would
    /// buffer the body and lose the path that names a field at fault.
    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let ClientIp(ip) = ClientIp::from_request_parts(&mut parts, state).await?;
        require_json(&parts.headers)?;
        let (bytes, budget) = match read_head(body, CREDENTIALS_WITHIN).await? {
            Head::Whole(bytes) => (bytes, None),
            Head::Partial { head, rest } => {
                if check_head(state, &head, ip).await? {
                    let (pieces, _) = read_rest(head, rest, None).await?;
                    (pieces.join(), None)
                } else {
                    late_credentials(state, head, rest, ip).await?
                }
            }
        };
        let (context, body) = read_body(bytes, |bytes| {
            Ok((parse::<BodyCredentials>(bytes)?, parse::<T>(bytes)?))
        })
        .await?;
        let db_name = required_text(context.db_name, "dbName")?;
        let credentials = without_nul(AccountCredentials {
            user_key: context.user_key,
            account: context.account,
        })?;
        let account = Account {
            state: state.clone(),
            db: None,
            ip,
            credentials,
            db_name,
            charged: false,
            _budget: budget,
        };
        Ok(AccountJson { account, body })
    }
}

/// Checks the credentials a long body gives in its first
/// [`CREDENTIALS_WITHIN`] bytes, before the rest of it is read; false when
/// they are not all there (strings, as they must be).
async fn check_head(state: &AppState, head: &[u8], ip: IpAddr) -> Result<bool, ApiError> {
    let [user_key, account, db_name] = top_level_strings(head, ["userKey", "account", "dbName"]);
    if user_key.is_none() || account.is_none() || db_name.is_none() {
        return Ok(false);
    }
    check_credentials(state, user_key, account, db_name, ip).await?;
    Ok(true)
}

/// The rest of a body whose credentials were not in its first
/// [`CREDENTIALS_WITHIN`] bytes: a locked-out address is refused before it
/// is read, it is read within the budget such bodies share, and its
/// credentials are read from its pieces and checked before it is joined or
/// its fields are parsed, so a body that does not authenticate costs its
/// bytes and no more (three of 48 MB, parsed first, grew the sidecar by
/// 145 MB).
async fn late_credentials(
    state: &AppState,
    head: Vec<u8>,
    rest: Body,
    ip: IpAddr,
) -> Result<(Bytes, Option<OwnedSemaphorePermit>), ApiError> {
    state.limits.refuse_address_locked_out(ip)?;
    let budget = Some(Arc::clone(&state.unauthenticated_body));
    let (pieces, permit) = read_rest(head, rest, budget).await?;
    let given = pieces.parse::<BodyCredentials>().await?;
    check_credentials(state, given.user_key, given.account, given.db_name, ip).await?;
    Ok((pieces.join(), permit))
}

/// Checks the credentials a body gives, answering as the request would: 400
/// without `dbName`, 401 for a user key missing or wrong, 403 for a
/// database the key may not use, 429 for an address locked out.
async fn check_credentials(
    state: &AppState,
    user_key: Option<String>,
    account: Option<String>,
    db_name: Option<String>,
    ip: IpAddr,
) -> Result<(), ApiError> {
    let db_name = required_text(db_name, "dbName")?;
    let credentials = without_nul(AccountCredentials { user_key, account })?;
    auth::check_account(
        &state.limits,
        || state.db(),
        &credentials,
        Some(&db_name),
        ip,
    )
    .await
}

/// The credentials, or a 400 naming one that holds a NUL character, which
/// no key or account has (PostgreSQL's text cannot hold it).
fn without_nul(credentials: AccountCredentials) -> Result<AccountCredentials, ApiError> {
    for (value, field) in [
        (&credentials.user_key, "userKey"),
        (&credentials.account, "account"),
    ] {
        refuse_nul(value.as_deref().unwrap_or(""), field)?;
    }
    Ok(credentials)
}

impl Account {
    /// Whether these credentials entered this database a moment ago, so the
    /// request may do its costly work before [`Account::enter`] (which still
    /// checks them): see `auth::Limits::admit_early`. Takes the rate-limit
    /// token when so.
    pub fn admit_early(&mut self) -> Result<bool, ApiError> {
        if self.charged {
            return Ok(true);
        }
        self.charged =
            self.state
                .limits
                .admit_early(&self.credentials, Some(&self.db_name), self.ip)?;
        Ok(self.charged)
    }

    /// What runs statements for this account without entering it first:
    /// only for a request [`Account::admit_early`] admitted.
    pub fn admitted(&self) -> Result<Admitted, ApiError> {
        if !self.charged {
            return Err(ApiError::internal(
                "a statement ran before its account was admitted",
            ));
        }
        Ok(Admitted {
            limits: Arc::clone(&self.state.limits),
            credentials: self.credentials.clone(),
            db_name: self.db_name.clone(),
            ip: self.ip,
        })
    }

    /// The request's connection, taken from the pool when first asked for.
    pub async fn connection(&mut self) -> Result<Conn, ApiError> {
        match self.db.take() {
            Some(db) => Ok(db),
            None => self.state.db().await,
        }
    }

    /// The database the request is about (`dbName`).
    pub fn db_name(&self) -> &str {
        &self.db_name
    }

    /// The account the credentials name (entered, it is the account the
    /// request acts for): what `reads` remembers writes by.
    pub fn name(&self) -> &str {
        self.credentials.account.as_deref().unwrap_or("")
    }

    /// Where the reads go.
    pub fn reads(&self) -> &Arc<crate::reads::Reads> {
        &self.state.reads
    }

    /// After the request's write committed on its connection: where the
    /// primary's WAL stands, for this account's next reads (`reads`).
    pub async fn wrote(&mut self) {
        if let Some(db) = &self.db {
            self.state.reads.wrote(self.name(), db).await;
        }
    }

    /// Runs a read, `work` in the account entered: on a standby that has
    /// replayed the account's writes, else on the primary; a standby's
    /// failure (`Reads::falls_back`) runs it again on the primary.
    pub async fn read<T>(
        &mut self,
        mut work: impl for<'a> FnMut(Entered<'a>) -> BoxFuture<'a, Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        let reads = Arc::clone(&self.state.reads);
        let name = self.name().to_owned();
        let (this, on_standby) = (&mut *self, &mut work);
        let standby = reads.on_standby(&name, |standby| async move {
            this.db = Some(standby);
            let answer = async { on_standby(this.enter().await?).await }.await;
            // The primary's connection, if the read goes there.
            this.db = None;
            answer
        });
        if let Some(answer) = standby.await? {
            return Ok(answer);
        }
        let entered = self.enter().await?;
        work(entered).await
    }

    /// Begins the request's transaction and checks the credentials in it
    /// (401/403 otherwise, and the failure counts against the client address).
    pub async fn enter(&mut self) -> Result<Entered<'_>, ApiError> {
        let db = self.connection().await?;
        let tx = self.db.insert(db).transaction().await?;
        auth::enter_account(
            &self.state.limits,
            &tx,
            &self.credentials,
            Some(&self.db_name),
            self.ip,
            self.charged,
        )
        .await?;
        // The rate-limit token is taken: a read that a standby failed
        // after this is entered again on the primary without another.
        self.charged = true;
        Ok(Entered {
            tx,
            db_name: &self.db_name,
        })
    }
}

impl Admitted {
    /// Runs `sql` with `params` for the account on `db`, in one round trip
    /// with the account check.
    pub async fn run(
        &self,
        db: &deadpool_postgres::Client,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, ApiError> {
        auth::enter_account_and_run(
            &self.limits,
            db,
            &self.credentials,
            Some(&self.db_name),
            self.ip,
            sql,
            params,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Search {
        query: Option<String>,
        limit: Option<u32>,
    }

    fn read<T: DeserializeOwned>(body: &[u8]) -> Result<(BodyCredentials, T), ApiError> {
        Ok((parse(body)?, parse(body)?))
    }

    #[test]
    fn credentials_and_own_fields_come_from_one_object() {
        let (context, search) = read::<Search>(
            br#"{"userKey":"vu_x","account":"a@b.c","dbName":"notes","query":"q","limit":3}"#,
        )
        .unwrap();
        assert_eq!(context.db_name.as_deref(), Some("notes"));
        assert_eq!(context.account.as_deref(), Some("a@b.c"));
        assert_eq!(search.limit, Some(3));
        let (context, NoFields {}) = read(br#"{"dbName":"notes","other":1}"#).unwrap();
        assert!(context.user_key.is_none());
    }

    #[test]
    fn a_wrong_type_is_a_400_naming_its_field() {
        for (body, field) in [
            (&br#"{"dbName": 5}"#[..], Some("dbName")),
            (br#"{"userKey": 5}"#, Some("userKey")),
            (br#"{"limit": -1}"#, Some("limit")),
            (b"[1]", None),
        ] {
            let Err(e) = read::<Search>(body) else {
                panic!("{} was accepted", String::from_utf8_lossy(body));
            };
            assert_eq!(
                (e.status, e.field.as_deref()),
                (StatusCode::BAD_REQUEST, field)
            );
        }
    }
}
