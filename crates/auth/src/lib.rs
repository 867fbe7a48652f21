//! API keys and user keys: how they look, how they are stored, how they are checked.
//!
//! A key is a kind marker and 32 random bytes in hex: `vk_<64 hex>` for API keys
//! (the `x-api-key` header), `vu_<64 hex>` for user keys (the vector endpoints'
//! `userKey`). Its first 8 hex digits, with the marker, are the visible *prefix*,
//! stored in clear to find the key's row and to show in listings. The key itself is
//! stored only as its SHA-256: with 256 random bits, a fast hash loses nothing,
//! and a slow password hash would only slow every request. The presented key's
//! hash is compared with the stored one in constant time.
//!
//! Randomness comes from the caller (in Postgres, `pg_strong_random`), so this
//! crate is deterministic under test.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Bytes of randomness in a key.
pub const SECRET_BYTES: usize = 32;
/// Hex digits of the secret shown in the prefix.
const PREFIX_HEX: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// `x-api-key` for the transaction and identity endpoints.
    Api,
    /// `userKey` of an account, for the vector endpoints.
    User,
}

impl KeyKind {
    pub fn marker(self) -> &'static str {
        match self {
            KeyKind::Api => "vk_",
            KeyKind::User => "vu_",
        }
    }
}

/// A key just made: `secret` is shown once and never stored.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub secret: String,
    pub prefix: String,
    pub hash: [u8; 32],
}

/// Why a presented string is not a key of the expected kind. Deliberately says
/// nothing about the string itself, which must never reach a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("the key is not of the expected kind")]
    WrongKind,
    #[error("the key is malformed")]
    Malformed,
}

/// Makes a key of `kind` from `random` (which must come from a strong source).
pub fn new_key(kind: KeyKind, random: [u8; SECRET_BYTES]) -> NewKey {
    let mut secret = String::with_capacity(3 + 2 * SECRET_BYTES);
    secret.push_str(kind.marker());
    for b in random {
        secret.push_str(&format!("{b:02x}"));
    }
    let prefix = secret[..3 + PREFIX_HEX].to_owned();
    let hash = hash(&secret);
    NewKey {
        secret,
        prefix,
        hash,
    }
}

/// The prefix under which a presented key's row is stored, if it is well-formed.
pub fn prefix_of(kind: KeyKind, presented: &str) -> Result<&str, FormatError> {
    let body = presented
        .strip_prefix(kind.marker())
        .ok_or(FormatError::WrongKind)?;
    let well_formed = body.len() == 2 * SECRET_BYTES
        && body.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    if !well_formed {
        return Err(FormatError::Malformed);
    }
    Ok(&presented[..3 + PREFIX_HEX])
}

/// SHA-256 of a key, as stored.
pub fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Whether `presented` is the key whose hash is `stored`, in time independent of
/// where they differ.
pub fn verify(presented: &str, stored: &[u8]) -> bool {
    stored.len() == 32 && bool::from(hash(presented).as_slice().ct_eq(stored))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(seed: u8) -> [u8; SECRET_BYTES] {
        std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
    }

    #[test]
    fn a_new_key_has_its_kind_prefix_and_verifies() {
        let key = new_key(KeyKind::Api, random(1));
        assert!(key.secret.starts_with("vk_"));
        assert_eq!(key.secret.len(), 3 + 64);
        assert_eq!(key.prefix, &key.secret[..11]);
        assert_eq!(
            prefix_of(KeyKind::Api, &key.secret),
            Ok(key.prefix.as_str())
        );
        assert!(verify(&key.secret, &key.hash));
    }

    #[test]
    fn another_key_or_a_changed_key_does_not_verify() {
        let key = new_key(KeyKind::User, random(2));
        let other = new_key(KeyKind::User, random(3));
        assert!(!verify(&other.secret, &key.hash));
        let mut changed = key.secret.clone();
        changed.pop();
        changed.push(if key.secret.ends_with('0') { '1' } else { '0' });
        assert!(!verify(&changed, &key.hash));
        assert!(
            !verify(&key.secret, &key.hash[..31]),
            "a truncated hash never matches"
        );
    }

    #[test]
    fn kinds_are_not_interchangeable() {
        let user = new_key(KeyKind::User, random(4));
        assert_eq!(
            prefix_of(KeyKind::Api, &user.secret),
            Err(FormatError::WrongKind)
        );
    }

    #[test]
    fn malformed_keys_are_refused_without_echoing_them() {
        for bad in [
            "vk_",
            "vk_xyz",
            "vk_ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
            &format!("vk_{}", "a".repeat(65)),
        ] {
            let err = prefix_of(KeyKind::Api, bad).unwrap_err();
            assert_eq!(err, FormatError::Malformed, "{bad}");
            assert!(!err.to_string().contains(bad));
        }
    }

    #[test]
    fn the_stored_hash_is_sha256_of_the_key() {
        // SHA-256("abc"), FIPS 180-2 test vector.
        assert_eq!(
            hash("abc")
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
