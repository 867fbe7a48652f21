//! `tsvector` arguments as their stored bytes, for `vigil_search::tsvector`.

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;

/// A `tsvector` argument: its bytes after the varlena header, detoasted and
/// borrowed for the call (BM25 scores one per candidate record; no copy).
pub struct TsVectorBytes<'a>(pub &'a [u8]);

unsafe impl SqlTranslatable for TsVectorBytes<'_> {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(TsVectorBytes<'static>);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> =
        Ok(SqlMappingRef::literal("tsvector"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("tsvector")));
}

impl<'a> FromDatum for TsVectorBytes<'a> {
    /// Borrowed as pgrx borrows `bytea` into `&[u8]`: the detoasted value
    /// lives in the call's memory context.
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<TsVectorBytes<'a>> {
        if is_null {
            return None;
        }
        let detoasted = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
        Some(TsVectorBytes(pgrx::varlena_to_byte_slice(detoasted)))
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for TsVectorBytes<'fcx> {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        arg.unbox_arg_using_from_datum().unwrap_or_else(|| {
            super::invalid_input("", &format!("argument {index} must not be null"))
        })
    }
}
