//! Where the running server keeps its files, and path settings that default
//! to them: each capability's data files (model, runtime, IP database) live under
//! `$sharedir/vigil` or `$pkglibdir/vigil`, found the way Postgres finds them, so
//! a relocated installation (the private copy the extension tests run in) works
//! without configuration.

use std::ffi::{CStr, CString};
use std::path::PathBuf;

use pgrx::{pg_sys, GucSetting};

/// The path a string setting holds; None when it is unset or empty (meaning:
/// use the default).
pub fn non_empty(setting: &GucSetting<Option<CString>>) -> Option<PathBuf> {
    setting
        .get()
        .map(|s| PathBuf::from(s.to_string_lossy().into_owned()))
        .filter(|p| !p.as_os_str().is_empty())
}

/// `$sharedir` of the running server, found the way Postgres finds it.
pub fn share_dir() -> PathBuf {
    let mut buf = [0 as std::ffi::c_char; pg_sys::MAXPGPATH as usize];
    // SAFETY: my_exec_path is a NUL-terminated global set at startup; buf has the
    // MAXPGPATH bytes get_share_path writes at most.
    let path = unsafe {
        pg_sys::get_share_path(
            std::ptr::addr_of!(pg_sys::my_exec_path).cast(),
            buf.as_mut_ptr(),
        );
        CStr::from_ptr(buf.as_ptr())
    };
    PathBuf::from(path.to_string_lossy().into_owned())
}

/// `$pkglibdir` of the running server.
pub fn pkglib_dir() -> PathBuf {
    // SAFETY: pkglib_path is a NUL-terminated global set at startup.
    let path = unsafe { CStr::from_ptr(std::ptr::addr_of!(pg_sys::pkglib_path).cast()) };
    PathBuf::from(path.to_string_lossy().into_owned())
}
