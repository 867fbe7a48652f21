//! Errors that name the input field at fault.
//!
//! Invalid input is raised as SQLSTATE 22023 (invalid_parameter_value) with the
//! message "invalid <field>: <why>" and the field in the error's COLUMN, where
//! clients read it: psql shows it, and the sidecar answers 400 naming it without
//! validating anything itself.
//!
//! pgrx's `ereport!` cannot set COLUMN, so [`invalid_input`] remembers the field
//! with the exact message it raises, and an `emit_log_hook` (installed by
//! [`register`]) copies it into the error as Postgres reports it. The hook only
//! acts on an error whose SQLSTATE and message are the remembered ones, so an error caught by a
//! PL/pgSQL handler and never reported cannot lend its field to another. The
//! hook runs when the error is logged; with `log_min_messages` above ERROR it does
//! not run, and the error goes out without COLUMN.

use std::cell::RefCell;
use std::ffi::{CStr, CString};

use pgrx::pg_sys;
use pgrx::prelude::*;

thread_local! {
    /// (SQLSTATE, message, field) of the last input error this backend raised.
    static PENDING: RefCell<Option<(i32, CString, CString)>> = const { RefCell::new(None) };
}

static mut PREVIOUS_HOOK: pg_sys::emit_log_hook_type = None;

/// Installs the hook; from `_PG_init`, once per backend.
pub fn register() {
    // SAFETY: _PG_init runs once, in the backend's only thread, before any query.
    unsafe {
        PREVIOUS_HOOK = pg_sys::emit_log_hook;
        pg_sys::emit_log_hook = Some(emit_log);
    }
}

/// ERROR 22023 "invalid `field`: `message`" with COLUMN `field` (see the module
/// docs); an empty `field` means the whole input, and the message stands alone.
pub fn invalid_input(field: &str, message: &str) -> ! {
    refuse(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        field,
        message,
    )
}

/// ERROR `code` "invalid `field`: `message`" with COLUMN `field`, for input
/// refused with a more specific SQLSTATE than 22023 (an image of an
/// unsupported format, one over a size limit), so callers can tell them apart.
pub fn refuse(code: PgSqlErrorCode, field: &str, message: &str) -> ! {
    let text = if field.is_empty() {
        message.to_owned()
    } else {
        format!("invalid {field}: {message}")
    };
    // NUL cannot come from JSON text or a Rust &str of a field name in practice;
    // if it does, the error simply goes out without COLUMN.
    let pending = match (CString::new(text.as_str()), CString::new(field)) {
        (Ok(m), Ok(f)) if !field.is_empty() => Some((code as i32, m, f)),
        _ => None,
    };
    PENDING.with(|p| *p.borrow_mut() = pending);
    ereport!(PgLogLevel::ERROR, code, text);
    unreachable!("ereport(ERROR) does not return")
}

#[pg_guard]
unsafe extern "C-unwind" fn emit_log(edata: *mut pg_sys::ErrorData) {
    // SAFETY: Postgres passes the error being reported, valid for this call.
    unsafe {
        let e = &mut *edata;
        if e.column_name.is_null() && !e.message.is_null() {
            let message = CStr::from_ptr(e.message);
            let field = PENDING.with(|p| {
                let mut p = p.borrow_mut();
                match p.as_ref() {
                    Some((code, m, _)) if *code == e.sqlerrcode && m.as_c_str() == message => {
                        p.take().map(|(_, _, f)| f)
                    }
                    _ => None,
                }
            });
            if let Some(field) = field {
                // The error's own memory context, freed with the error.
                e.column_name = pg_sys::MemoryContextStrdup(e.assoc_context, field.as_ptr());
            }
        }
        if let Some(previous) = PREVIOUS_HOOK {
            previous(edata);
        }
    }
}
