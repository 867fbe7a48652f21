//! The credentials a request carries, as read and as believed: an API key
//! (its header, the key kept out of logs, the caller it passed as) and the
//! body credentials of the vector endpoints.

use std::fmt;

use super::rate::Quota;

/// The header that carries API keys.
pub const API_KEY_HEADER: &str = "x-api-key";

/// An API key that passed: what the handlers and the records need of it.
#[derive(Debug, Clone)]
pub struct ApiCaller {
    /// The key's database id, recorded with what it does.
    pub key_id: i64,
    /// The key itself, which the handler's statement gives to
    /// `vigil.enter_api_key` so that it acts for the key's account.
    pub key: ApiKeySecret,
    pub name: String,
    pub prefix: String,
    pub scopes: Vec<String>,
    /// ISO 8601, or None for a key that does not expire.
    pub expires_at: Option<String>,
    pub quota: Quota,
}

/// An API key as sent, kept out of logs.
#[derive(Clone)]
pub struct ApiKeySecret(pub(super) String);

impl ApiKeySecret {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    #[cfg(test)]
    pub fn for_tests(key: &str) -> Self {
        ApiKeySecret(key.to_owned())
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The body credentials of the vector endpoints, as read by `extract::AccountJson`.
#[derive(Default, Clone)]
pub struct AccountCredentials {
    pub user_key: Option<String>,
    pub account: Option<String>,
}

impl AccountCredentials {
    /// What entering the account checks: these credentials, for `db`.
    pub(super) fn check<'a>(&'a self, db: Option<&'a str>) -> [Option<&'a str>; 3] {
        [self.user_key.as_deref(), self.account.as_deref(), db]
    }
}

impl fmt::Debug for AccountCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountCredentials")
            .field("user_key", &self.user_key.as_ref().map(|_| "<redacted>"))
            .field("account", &self.account)
            .finish()
    }
}
