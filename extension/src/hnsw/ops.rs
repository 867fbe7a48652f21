//! `real[]` as a vector: reading one from a datum, and the exact distance
//! functions behind the `<->`, `<=>` and `<#>` operators.
//!
//! These are plain C functions (declared in `schema.sql`) rather than
//! `#[pg_extern]`s so that a vector is read straight from the array's
//! detoasted bytes: no per-element conversion, and one-dimensionality and
//! NULL-freedom are checked exactly. An exact scan calls them once per row.

use pgrx::pg_sys;
use pgrx::prelude::*;
use vigil_hnsw::distance;

/// Header of an `ArrayType` (`utils/array.h`): length word, ndim, data
/// offset (non-zero when there is a NULL bitmap), element type.
const ARRAY_HEADER: usize = 16;

/// Reads a `real[]` datum as a vector: one dimension, no NULLs, at least
/// one element. The slice points into the detoasted array, which lives in
/// the current memory context.
///
/// # Safety
/// `datum` must be a non-NULL array datum.
pub unsafe fn vector_from_datum<'a>(datum: pg_sys::Datum) -> Result<&'a [f32], String> {
    let array = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()) as *const u8;
    let word = |at: usize| i32::from_ne_bytes(*(array.add(at) as *const [u8; 4]));
    let (ndim, data_offset, elem_type) = (word(4), word(8), pg_sys::Oid::from(word(12) as u32));
    if elem_type != pg_sys::FLOAT4OID {
        return Err("a vector must be real[] (float4[])".into());
    }
    if ndim == 0 {
        return Err("a vector must not be empty".into());
    }
    if ndim != 1 {
        return Err(format!(
            "a vector must be a one-dimensional array, not {ndim}-dimensional"
        ));
    }
    if data_offset != 0 {
        return Err("a vector must not contain NULLs".into());
    }
    let len = word(ARRAY_HEADER);
    if len <= 0 {
        return Err("a vector must not be empty".into());
    }
    // Data follows the dims and lower bounds, MAXALIGNed (ARR_OVERHEAD_NONULLS).
    let data = array.add(vigil_hnsw_page::maxalign(ARRAY_HEADER + 8));
    if !(data as usize).is_multiple_of(std::mem::align_of::<f32>()) {
        return Err("misaligned array data".into());
    }
    Ok(std::slice::from_raw_parts(data as *const f32, len as usize))
}

/// The vector in argument `n`, or an ERROR naming the problem.
unsafe fn vector_arg<'a>(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> &'a [f32] {
    let datum = pgrx::fcinfo::pg_getarg_datum_raw(fcinfo, n);
    vector_from_datum(datum).unwrap_or_else(|e| {
        ereport!(ERROR, PgSqlErrorCode::ERRCODE_DATA_EXCEPTION, e);
    })
}

/// Calls `f` on the two vector arguments; they must have equal dimensions.
unsafe fn binary(fcinfo: pg_sys::FunctionCallInfo, f: fn(&[f32], &[f32]) -> f32) -> pg_sys::Datum {
    let (a, b) = (vector_arg(fcinfo, 0), vector_arg(fcinfo, 1));
    if a.len() != b.len() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!(
                "vectors have different dimensions: {} and {}",
                a.len(),
                b.len()
            )
        );
    }
    pg_sys::Datum::from(f64::from(f(a, b)).to_bits())
}

/// Emits the `pg_finfo_*` records that mark C functions as version 1.
macro_rules! function_info_v1 {
    ($($finfo:ident),* $(,)?) => {
        $(
            #[no_mangle]
            #[doc(hidden)]
            pub extern "C" fn $finfo() -> &'static pg_sys::Pg_finfo_record {
                const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
                &V1
            }
        )*
    };
}
pub(crate) use function_info_v1;

function_info_v1!(
    pg_finfo_vigil_l2_distance,
    pg_finfo_vigil_cosine_distance,
    pg_finfo_vigil_negative_inner_product,
    pg_finfo_vigil_inner_product,
);

/// `vigil.l2_distance(real[], real[])`, the `<->` operator.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn vigil_l2_distance(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    binary(fcinfo, distance::l2)
}

/// `vigil.cosine_distance(real[], real[])`, the `<=>` operator.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn vigil_cosine_distance(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    binary(fcinfo, distance::cosine_distance)
}

/// `vigil.negative_inner_product(real[], real[])`, the `<#>` operator.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn vigil_negative_inner_product(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    binary(fcinfo, |a, b| -distance::dot(a, b))
}

/// `vigil.inner_product(real[], real[])`.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn vigil_inner_product(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    binary(fcinfo, distance::dot)
}
