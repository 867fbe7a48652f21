//! Any bytes through the upload's first gate, many thousands a second: the
//! format sniff, the JPEG structure check (crates/identity/src/jpeg.rs, a
//! walk of our own over untrusted bytes) and the decode within its limits.
//! `analyse` goes on from here through every check, a few dozen a second.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_identity::decode::decode;
use vigil_identity::jpeg;

fuzz_target!(|bytes: &[u8]| {
    let _ = jpeg::check(bytes);
    let _ = decode(bytes);
});
