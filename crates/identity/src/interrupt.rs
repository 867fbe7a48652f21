//! Stopping an analysis from outside it: in the extension, a cancel, a
//! statement timeout or a terminate (PostgreSQL's pending interrupt).
//!
//! The host installs, once, a check that says whether the work should stop
//! ([`set_check`]); the analysis asks it between its stages and between the
//! zone's readings, on any of its threads, and gives up with
//! [`DecodeError::Interrupted`]. The host then raises its own error on its
//! own thread: PostgreSQL's may only be raised on the backend's. Without a
//! check (tests, benchmarks) nothing is ever interrupted.
//!
//! Decoding is the one stage that cannot be cut short (the decoders run to
//! the end): with a check installed it runs on a thread of its own while the
//! caller's thread watches for the interrupt, so the caller gives up at once
//! and the decode, bounded by the size limits (about 0.3 s for the largest
//! image), finishes and frees its memory on its own.

use std::sync::OnceLock;

use crate::DecodeError;

static CHECK: OnceLock<fn() -> bool> = OnceLock::new();

/// Installs the check, once per process; a later call changes nothing.
pub fn set_check(check: fn() -> bool) {
    let _ = CHECK.set(check);
}

/// Whether the host asks the work to stop.
pub fn pending() -> bool {
    CHECK.get().is_some_and(|check| check())
}

/// Whether a check is installed.
pub(crate) fn installed() -> bool {
    CHECK.get().is_some()
}

/// `Err(Interrupted)` if the host asks the work to stop.
pub(crate) fn check() -> Result<(), DecodeError> {
    if pending() {
        Err(DecodeError::Interrupted)
    } else {
        Ok(())
    }
}
