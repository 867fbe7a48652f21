//! `jsonb` to and from `serde_json::Value` without a trip through text.
//!
//! pgrx's `JsonB` converts through text both ways: reading is `jsonb_out`
//! and then serde_json's parser, writing is serde_json's printer and then
//! `jsonb_in` (lex, parse, build). A risk assessment reads one body and writes
//! four values, and those conversions were a sixth of its time. [`Jsonb`]
//! walks the stored jsonb with its iterator, and builds a new one by pushing
//! the values (`pushJsonbValue`), which is what `jsonb_in` does after parsing.
//!
//! Both directions give what the text route gives: object keys are sorted
//! and de-duplicated by Postgres as `jsonb_in` does, numbers keep serde_json's
//! spelling (its shortest round trip, read by `numeric_in`), and a document
//! nested deeper than serde_json's limit is refused here as it is there.

use std::ffi::CStr;

use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pg_sys;
use pgrx::pg_sys::JsonbIteratorToken as Token;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;
use serde_json::{Map, Number, Value};

/// Deepest nesting read or written: what serde_json's parser accepts (its
/// recursion limit of 128 refuses the 128th level), so SQL callers and the
/// sidecar, which parses with serde_json, accept the same documents.
const MAX_DEPTH: usize = 127;

/// A `jsonb` argument or result, held as a `serde_json::Value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Jsonb(pub Value);

unsafe impl SqlTranslatable for Jsonb {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(Jsonb);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("jsonb"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("jsonb")));
}

impl FromDatum for Jsonb {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Jsonb> {
        if is_null {
            return None;
        }
        Some(Jsonb(
            read(datum).unwrap_or_else(|message| refuse(&message)),
        ))
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for Jsonb {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        arg.unbox_arg_using_from_datum()
            .unwrap_or_else(|| refuse(&format!("argument {index} must not be null")))
    }
}

unsafe impl BoxRet for Jsonb {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        match self.into_datum() {
            Some(datum) => fcinfo.return_raw_datum(datum),
            None => fcinfo.return_null(),
        }
    }
}

impl IntoDatum for Jsonb {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        Some(write(&self.0).unwrap_or_else(|message| refuse(&message)))
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::JSONBOID
    }
}

/// ERROR 22023 (invalid parameter value) with `message`, about the whole value.
fn refuse(message: &str) -> ! {
    super::invalid_input("", message)
}

/// Reads a non-NULL jsonb datum.
///
/// # Safety
/// `datum` must be a jsonb datum.
unsafe fn read(datum: pg_sys::Datum) -> Result<Value, String> {
    let jsonb = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()) as *mut pg_sys::Jsonb;
    let mut iterator = pg_sys::JsonbIteratorInit(&mut (*jsonb).root);
    let mut reader = Reader {
        iterator: &mut iterator,
        depth: 0,
    };
    let mut first: pg_sys::JsonbValue = std::mem::zeroed();
    let token = reader.next(&mut first);
    reader.value(token, &first).map_err(ReadError::into_message)
}

/// Why a document could not be read. The path to the value is gathered only
/// as the error travels out, so reading costs nothing for it.
struct ReadError {
    problem: Problem,
    /// Keys and array positions, innermost first.
    path: Vec<String>,
}

enum Problem {
    TooDeep,
    NumberOutOfRange,
    NotUtf8,
    UnexpectedType(pg_sys::jbvType::Type),
}

impl ReadError {
    fn new(problem: Problem) -> ReadError {
        ReadError {
            problem,
            path: Vec::new(),
        }
    }

    /// The same error, inside the member or element `part`.
    fn within(mut self, part: impl FnOnce() -> String) -> ReadError {
        self.path.push(part());
        self
    }

    fn into_message(self) -> String {
        let at = if self.path.is_empty() {
            "the top".to_owned()
        } else {
            self.path.into_iter().rev().collect::<Vec<_>>().join(".")
        };
        match self.problem {
            Problem::TooDeep => format!("JSON nested deeper than {MAX_DEPTH} levels"),
            Problem::NumberOutOfRange => format!("the number at {at} is out of range"),
            Problem::NotUtf8 => format!("the string at {at} is not valid UTF-8"),
            Problem::UnexpectedType(t) => format!("unexpected jsonb value type {t} at {at}"),
        }
    }
}

/// A jsonb iterator, and how deep in the document it is.
struct Reader<'a> {
    iterator: &'a mut *mut pg_sys::JsonbIterator,
    /// Containers open around the current value.
    depth: usize,
}

impl Reader<'_> {
    unsafe fn next(&mut self, into: &mut pg_sys::JsonbValue) -> Token::Type {
        pg_sys::JsonbIteratorNext(self.iterator, into, false)
    }

    /// The value that starts with `token` (`current` holds its scalar, or its
    /// array header for `WJB_BEGIN_ARRAY`).
    unsafe fn value(
        &mut self,
        token: Token::Type,
        current: &pg_sys::JsonbValue,
    ) -> Result<Value, ReadError> {
        match token {
            Token::WJB_BEGIN_OBJECT => {
                self.enter()?;
                let mut map = Map::new();
                let mut key: pg_sys::JsonbValue = std::mem::zeroed();
                while self.next(&mut key) == Token::WJB_KEY {
                    let name = string(&key).ok_or_else(|| ReadError::new(Problem::NotUtf8))?;
                    let mut member: pg_sys::JsonbValue = std::mem::zeroed();
                    let token = self.next(&mut member);
                    let value = self
                        .value(token, &member)
                        .map_err(|e| e.within(|| name.clone()))?;
                    map.insert(name, value);
                }
                self.depth -= 1;
                Ok(Value::Object(map))
            }
            Token::WJB_BEGIN_ARRAY => {
                // A document that is a bare scalar is stored as a one-element
                // array flagged rawScalar.
                let raw_scalar = current.val.array.rawScalar;
                if !raw_scalar {
                    self.enter()?;
                }
                let mut items = Vec::new();
                let mut element: pg_sys::JsonbValue = std::mem::zeroed();
                loop {
                    let token = self.next(&mut element);
                    if token == Token::WJB_END_ARRAY || token == Token::WJB_DONE {
                        break;
                    }
                    let at = items.len();
                    let item = self
                        .value(token, &element)
                        .map_err(|e| e.within(|| format!("[{at}]")))?;
                    items.push(item);
                }
                if raw_scalar {
                    return Ok(items.pop().unwrap_or(Value::Null));
                }
                self.depth -= 1;
                Ok(Value::Array(items))
            }
            _ => Self::scalar(current),
        }
    }

    fn enter(&mut self) -> Result<(), ReadError> {
        if self.depth >= MAX_DEPTH {
            return Err(ReadError::new(Problem::TooDeep));
        }
        self.depth += 1;
        Ok(())
    }

    unsafe fn scalar(v: &pg_sys::JsonbValue) -> Result<Value, ReadError> {
        Ok(match v.type_ {
            pg_sys::jbvType::jbvNull => Value::Null,
            pg_sys::jbvType::jbvBool => Value::Bool(v.val.boolean),
            pg_sys::jbvType::jbvString => {
                Value::String(string(v).ok_or_else(|| ReadError::new(Problem::NotUtf8))?)
            }
            pg_sys::jbvType::jbvNumeric => {
                let spelled = pgrx::direct_function_call_as_datum(
                    pg_sys::numeric_out,
                    &[Some(pg_sys::Datum::from(v.val.numeric))],
                )
                .map(|d| CStr::from_ptr(d.cast_mut_ptr()));
                let number = spelled
                    .and_then(|c| c.to_str().ok())
                    .and_then(|s| s.parse::<Number>().ok());
                match number {
                    Some(n) => Value::Number(n),
                    None => return Err(ReadError::new(Problem::NumberOutOfRange)),
                }
            }
            other => return Err(ReadError::new(Problem::UnexpectedType(other))),
        })
    }
}

/// A jsonb string's text; None if it is not UTF-8.
unsafe fn string(v: &pg_sys::JsonbValue) -> Option<String> {
    let s = v.val.string;
    let bytes = std::slice::from_raw_parts(s.val as *const u8, s.len as usize);
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

/// Builds a jsonb datum (palloc'd in the current memory context).
fn write(value: &Value) -> Result<pg_sys::Datum, String> {
    let mut state: *mut pg_sys::JsonbParseState = std::ptr::null_mut();
    // SAFETY: every JsonbValue pushed is fully initialised and its strings
    // point into `value`, which outlives JsonbValueToJsonb (that copies them).
    unsafe {
        let root = match value {
            Value::Object(_) | Value::Array(_) => push_container(&mut state, value, 0)?,
            scalar => {
                let mut header: pg_sys::JsonbValue = std::mem::zeroed();
                header.type_ = pg_sys::jbvType::jbvArray;
                header.val.array.rawScalar = true;
                pg_sys::pushJsonbValue(&mut state, Token::WJB_BEGIN_ARRAY, &mut header);
                let mut element = scalar_value(scalar)?;
                pg_sys::pushJsonbValue(&mut state, Token::WJB_ELEM, &mut element);
                pg_sys::pushJsonbValue(&mut state, Token::WJB_END_ARRAY, std::ptr::null_mut())
            }
        };
        Ok(pg_sys::Datum::from(pg_sys::JsonbValueToJsonb(root)))
    }
}

/// Pushes an object or array; returns what `pushJsonbValue` returns at its end
/// (the finished value when it is the outermost).
unsafe fn push_container(
    state: &mut *mut pg_sys::JsonbParseState,
    value: &Value,
    depth: usize,
) -> Result<*mut pg_sys::JsonbValue, String> {
    if depth >= MAX_DEPTH {
        return Err(format!("JSON nested deeper than {MAX_DEPTH} levels"));
    }
    let member = |state: &mut *mut pg_sys::JsonbParseState, v: &Value, token| match v {
        Value::Object(_) | Value::Array(_) => push_container(state, v, depth + 1).map(drop),
        scalar => {
            let mut jv = scalar_value(scalar)?;
            pg_sys::pushJsonbValue(state, token, &mut jv);
            Ok(())
        }
    };
    Ok(match value {
        Value::Object(map) => {
            pg_sys::pushJsonbValue(state, Token::WJB_BEGIN_OBJECT, std::ptr::null_mut());
            for (key, v) in map {
                let mut key = string_value(key)?;
                pg_sys::pushJsonbValue(state, Token::WJB_KEY, &mut key);
                member(state, v, Token::WJB_VALUE)?;
            }
            pg_sys::pushJsonbValue(state, Token::WJB_END_OBJECT, std::ptr::null_mut())
        }
        Value::Array(items) => {
            pg_sys::pushJsonbValue(state, Token::WJB_BEGIN_ARRAY, std::ptr::null_mut());
            for v in items {
                member(state, v, Token::WJB_ELEM)?;
            }
            pg_sys::pushJsonbValue(state, Token::WJB_END_ARRAY, std::ptr::null_mut())
        }
        _ => unreachable!("push_container is called with objects and arrays only"),
    })
}

/// A string value pointing into `s`. jsonb strings cannot hold NUL (`jsonb_in`
/// refuses `\u0000`), so neither may these.
fn string_value(s: &str) -> Result<pg_sys::JsonbValue, String> {
    if s.contains('\0') {
        return Err("a JSON string must not contain the character U+0000".to_owned());
    }
    let len = i32::try_from(s.len()).map_err(|_| "a JSON string is too long".to_owned())?;
    // SAFETY: all-zero is a valid JsonbValue bit pattern (a jbvNull).
    let mut jv: pg_sys::JsonbValue = unsafe { std::mem::zeroed() };
    jv.type_ = pg_sys::jbvType::jbvString;
    jv.val.string.len = len;
    jv.val.string.val = s.as_ptr() as *mut _;
    Ok(jv)
}

fn scalar_value(v: &Value) -> Result<pg_sys::JsonbValue, String> {
    // SAFETY: all-zero is a valid JsonbValue bit pattern (a jbvNull).
    let mut jv: pg_sys::JsonbValue = unsafe { std::mem::zeroed() };
    match v {
        Value::Null => jv.type_ = pg_sys::jbvType::jbvNull,
        Value::Bool(b) => {
            jv.type_ = pg_sys::jbvType::jbvBool;
            jv.val.boolean = *b;
        }
        Value::String(s) => return string_value(s),
        Value::Number(n) => {
            jv.type_ = pg_sys::jbvType::jbvNumeric;
            jv.val.numeric = numeric(n)?;
        }
        Value::Object(_) | Value::Array(_) => {
            unreachable!("scalar_value is called with scalars only")
        }
    }
    Ok(jv)
}

/// The numeric `jsonb_in` would read from serde_json's spelling of `n`.
fn numeric(n: &Number) -> Result<pg_sys::Numeric, String> {
    // SAFETY: int64_to_numeric and numeric_in take these arguments and return a
    // palloc'd numeric; the spelling is serde_json's, which numeric_in reads.
    // (Integers without the function-call interface: most numbers recorded are.)
    let datum = unsafe {
        match n.as_i64() {
            Some(i) => Some(pg_sys::Datum::from(pg_sys::int64_to_numeric(i))),
            None => {
                let spelled = std::ffi::CString::new(n.to_string()).unwrap_or_default();
                pgrx::direct_function_call_as_datum(
                    pg_sys::numeric_in,
                    &[
                        Some(pg_sys::Datum::from(spelled.as_ptr())),
                        Some(pg_sys::Datum::from(pg_sys::InvalidOid)),
                        Some(pg_sys::Datum::from(-1i32)),
                    ],
                )
            }
        }
    };
    datum
        .map(|d| d.cast_mut_ptr())
        .ok_or_else(|| format!("could not store the number {n}"))
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::Jsonb;
    use pgrx::prelude::*;
    use serde_json::{json, Value};

    /// Documents whose route through [`Jsonb`] must match the route through text.
    fn documents() -> Vec<Value> {
        vec![
            json!({"b": 1, "a": [true, false, null], "c": {"z": "ü €", "y": []}, "d": {}}),
            json!([
                1,
                -7,
                12.5,
                0.1,
                1e-7,
                123456789012345678i64,
                18446744073709551615u64,
                1e20
            ]),
            json!("a bare string \"quoted\" \\ \n\t"),
            json!(42),
            json!(null),
            json!(true),
            json!({"amount": "120.00", "isVPN": "Yes", "time": "2026-11-21 10:00:00", "nested": [[[{"k": [1]}]]]}),
        ]
    }

    #[pg_test]
    fn written_jsonb_equals_jsonb_in() {
        for doc in documents() {
            let text = doc.to_string();
            let same = Spi::get_one_with_args::<bool>(
                "SELECT $1 = $2::jsonb AND $1::text = $2::jsonb::text",
                &[Jsonb(doc.clone()).into(), text.as_str().into()],
            );
            assert_eq!(same, Ok(Some(true)), "{text}");
        }
    }

    #[pg_test]
    fn read_jsonb_equals_serde_json_of_its_text() {
        for doc in documents() {
            let text = doc.to_string();
            let read = Spi::get_one_with_args::<Jsonb>("SELECT $1::jsonb", &[text.as_str().into()]);
            assert_eq!(read, Ok(Some(Jsonb(doc))), "{text}");
        }
        // Numbers as Postgres spells them, and duplicate keys as jsonb keeps them (the last).
        let read =
            Spi::get_one::<Jsonb>(r#"SELECT '{"n": 1.50, "n2": 1e3, "k": 1, "k": 2}'::jsonb"#);
        assert_eq!(read, Ok(Some(Jsonb(json!({"n": 1.5, "n2": 1000, "k": 2})))));
    }

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[pg_test]
    fn nesting_up_to_serde_jsons_limit_is_read() {
        let read = Spi::get_one::<Jsonb>(&format!("SELECT '{}'::jsonb", nested(127)));
        assert!(matches!(read, Ok(Some(_))));
        assert!(serde_json::from_str::<Value>(&nested(127)).is_ok());
        assert!(serde_json::from_str::<Value>(&nested(128)).is_err());
    }

    #[pg_test(error = "JSON nested deeper than 127 levels")]
    fn deeper_nesting_is_an_error() {
        let _ = Spi::get_one::<Jsonb>(&format!("SELECT '{}'::jsonb", nested(128)));
    }

    #[pg_test(error = "the number at amount is out of range")]
    fn a_number_serde_json_cannot_hold_is_an_error_naming_it() {
        let _ = Spi::get_one::<Jsonb>(r#"SELECT '{"amount": 1e400}'::jsonb"#);
    }

    #[pg_test(error = "a JSON string must not contain the character U+0000")]
    fn nul_in_a_string_is_refused() {
        let _ = Spi::get_one_with_args::<bool>(
            "SELECT $1 IS NULL",
            &[Jsonb(json!({"a": "x\u{0}y"})).into()],
        );
    }
}
