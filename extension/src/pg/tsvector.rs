//! `tsvector` arguments as their stored bytes, for `vigil_search::tsvector`.

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;

/// A `tsvector` argument: its bytes after the varlena header, detoasted.
pub struct TsVectorBytes(pub Vec<u8>);

unsafe impl SqlTranslatable for TsVectorBytes {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(TsVectorBytes);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> =
        Ok(SqlMappingRef::literal("tsvector"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("tsvector")));
}

impl FromDatum for TsVectorBytes {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<TsVectorBytes> {
        if is_null {
            return None;
        }
        let detoasted = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
        Some(TsVectorBytes(
            pgrx::varlena_to_byte_slice(detoasted).to_vec(),
        ))
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for TsVectorBytes {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        arg.unbox_arg_using_from_datum().unwrap_or_else(|| {
            super::invalid_input("", &format!("argument {index} must not be null"))
        })
    }
}
