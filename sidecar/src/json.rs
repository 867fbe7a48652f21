//! `JsonBody<T>`: the JSON request body extractor with our errors.
//!
//! Unlike `axum::Json`, a body that does not fit names the field at fault
//! (through `serde_path_to_error`), and every refusal is an [`ApiError`]:
//! 415 without a JSON content type, 413 over the body limit, 400 otherwise.
//! serde_json's recursion limit turns absurdly deep nesting into a 400 too
//! (unknown fields are skipped without recursion, so they need none).

use std::sync::Arc;

use axum::body::{Body, Bytes, HttpBody as _};
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, StatusCode};
use http_body_util::{BodyExt, LengthLimitError};
use serde::de::DeserializeOwned;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        parse(&json_bytes(req, state).await?).map(JsonBody)
    }
}

/// The body of a request that says it is JSON, not yet parsed.
pub async fn json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    require_json(req.headers())?;
    Bytes::from_request(req, state)
        .await
        .map_err(|rejection| ApiError::from_status(rejection.status()))
}

/// 415 unless the request says its body is JSON.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|mime| mime.split(';').next())
        .map(str::trim)
        .unwrap_or("");
    let json = essence.eq_ignore_ascii_case("application/json")
        || (essence.starts_with("application/") && essence.ends_with("+json"));
    if json {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the body must be JSON (Content-Type: application/json)",
        ))
    }
}

/// A body read up to a point: all of it, or its first bytes and the rest.
pub enum Head {
    Whole(Bytes),
    Partial { head: Vec<u8>, rest: Body },
}

/// Reads `body` until it ends or more than `prefix` bytes have come.
pub async fn read_head(mut body: Body, prefix: usize) -> Result<Head, ApiError> {
    let mut head = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.map_err(body_error)?.into_data() {
            head.extend_from_slice(&data);
            if head.len() > prefix {
                return Ok(Head::Partial { head, rest: body });
            }
        }
    }
    Ok(Head::Whole(Bytes::from(head)))
}

/// The rest of a body [`read_head`] stopped reading, after its `head`. With
/// a `budget` (the memory all bodies whose credentials are not known yet
/// may hold at once), every KiB of it, the head's included, takes a permit,
/// kept until the returned one is dropped; 503 when the budget is spent.
/// What the rest says it holds (its `Content-Length`) is taken at once, so
/// a body that cannot fit is refused before another byte is read. Its
/// pieces are kept as they come and joined once at the end: a buffer
/// doubled while it was read held its old and new copies at once, and the
/// allocator kept the old ones (six bodies over a budget of 16 MiB grew the
/// sidecar by 27 to 51 MiB; `tests/tests/e2e/hostile.rs`).
pub async fn read_rest(
    head: Vec<u8>,
    mut rest: Body,
    budget: Option<Arc<Semaphore>>,
) -> Result<(Pieces, Option<OwnedSemaphorePermit>), ApiError> {
    let kib = |bytes: usize| u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX);
    let take = |n: u32| -> Result<Option<OwnedSemaphorePermit>, ApiError> {
        let Some(budget) = &budget else {
            return Ok(None);
        };
        Arc::clone(budget)
            .try_acquire_many_owned(n)
            .map(Some)
            .map_err(|_| {
                ApiError::unavailable(
                    "too many long bodies whose credentials come after their first 64 KiB are \
                 being read; retry, or give userKey, account and dbName first",
                )
            })
    };
    let declared = usize::try_from(rest.size_hint().lower()).unwrap_or(usize::MAX);
    let mut taken = kib(head.len().saturating_add(declared));
    let mut permit = take(taken)?;
    let mut len = head.len();
    let mut pieces = vec![Bytes::from(head)];
    while let Some(frame) = rest.frame().await {
        if let Ok(data) = frame.map_err(body_error)?.into_data() {
            len += data.len();
            let needed = kib(len);
            if needed > taken {
                if let (Some(permit), Some(more)) = (permit.as_mut(), take(needed - taken)?) {
                    permit.merge(more);
                }
                taken = needed;
            }
            pieces.push(data);
        }
    }
    Ok((Pieces { pieces, len }, permit))
}

/// A body as [`read_rest`] read it, in the pieces it came in: joined, it is
/// held twice while it is copied, so a body whose credentials are not known
/// yet is read in its pieces ([`Pieces::parse`]) and joined only once they
/// pass.
pub struct Pieces {
    pieces: Vec<Bytes>,
    len: usize,
}

impl Pieces {
    /// The body in one buffer.
    pub fn join(self) -> Bytes {
        if let [one] = self.pieces.as_slice() {
            return one.clone();
        }
        let mut whole = Vec::with_capacity(self.len);
        for piece in self.pieces {
            whole.extend_from_slice(&piece);
        }
        Bytes::from(whole)
    }

    /// `T` read from the pieces where they lie, on tokio's blocking pool: a
    /// type that skips the fields it does not name (the credentials) costs
    /// no copy of the body.
    pub async fn parse<T: DeserializeOwned + Send + 'static>(&self) -> Result<T, ApiError> {
        let pieces = self.pieces.clone();
        tokio::task::spawn_blocking(move || {
            let reader = std::io::BufReader::new(PiecesReader {
                rest: pieces.iter(),
                current: &[],
            });
            read_json(serde_json::Deserializer::from_reader(reader))
        })
        .await
        .map_err(|e| ApiError::internal(&format!("reading the body stopped: {e}")))?
    }
}

/// The pieces of a body, read in order as one stream.
struct PiecesReader<'a> {
    rest: std::slice::Iter<'a, Bytes>,
    current: &'a [u8],
}

impl std::io::Read for PiecesReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rest.next() {
                Some(piece) => self.current = piece,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = &self.current[n..];
        Ok(n)
    }
}

/// 413 for a body over the route's limit, 400 for one that broke off.
fn body_error(e: axum::Error) -> ApiError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(error) = source {
        if error.is::<LengthLimitError>() {
            return ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE);
        }
        source = error.source();
    }
    ApiError::from_status(StatusCode::BAD_REQUEST).with_message("the body could not be read")
}

/// The string values of the top-level members `names` of the JSON object
/// that `head` begins, as far as `head` goes (it may stop anywhere): so the
/// credentials of a long body can be checked before the rest is read. What
/// is not a string, or not reached, is None; a malformed object ends the
/// search where it breaks (the whole body's parse then says what is wrong).
/// Written here because serde_json parses whole documents only.
pub fn top_level_strings<const N: usize>(head: &[u8], names: [&str; N]) -> [Option<String>; N] {
    let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
    let mut at = skip_space(head, 0);
    if head.get(at) != Some(&b'{') {
        return found;
    }
    at += 1;
    loop {
        at = skip_space(head, at);
        let Some(key_end) = string_end(head, at) else {
            return found;
        };
        let key = serde_json::from_slice::<String>(&head[at..key_end]).ok();
        at = skip_space(head, key_end);
        if head.get(at) != Some(&b':') {
            return found;
        }
        at = skip_space(head, at + 1);
        let value_end = match head.get(at) {
            Some(b'"') => string_end(head, at),
            Some(_) => value_end(head, at),
            None => None,
        };
        let Some(value_end) = value_end else {
            return found;
        };
        if let Some(i) = names.iter().position(|n| key.as_deref() == Some(*n)) {
            if found[i].is_none() {
                found[i] = serde_json::from_slice::<String>(&head[at..value_end]).ok();
            }
        }
        at = skip_space(head, value_end);
        match head.get(at) {
            Some(b',') => at += 1,
            _ => return found,
        }
    }
}

fn skip_space(text: &[u8], mut at: usize) -> usize {
    while matches!(text.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Where the string starting at `at` (a quote) ends, past its closing quote.
fn string_end(text: &[u8], at: usize) -> Option<usize> {
    if text.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Where the non-string value starting at `at` ends: at the `,` or `}` that
/// follows it outside any nested array, object or string.
fn value_end(text: &[u8], mut at: usize) -> Option<usize> {
    let mut depth = 0usize;
    while at < text.len() {
        match text[at] {
            b'"' => {
                at = string_end(text, at)?;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => depth -= 1,
            b',' | b'}' if depth == 0 => return Some(at),
            _ => {}
        }
        at += 1;
    }
    None
}

/// Bodies up to this many bytes are parsed where they are read; longer ones
/// (a batch of records may be megabytes) on tokio's blocking pool.
const PARSE_HERE_BYTES: usize = 1 << 20;

/// `read(bytes)`, on tokio's blocking pool when the body is long: parsing
/// megabytes takes milliseconds, which would hold up every request sharing
/// this worker thread (one per core, or as `--worker-threads` says).
pub async fn read_body<R: Send + 'static>(
    bytes: Bytes,
    read: impl FnOnce(&[u8]) -> Result<R, ApiError> + Send + 'static,
) -> Result<R, ApiError> {
    if bytes.len() <= PARSE_HERE_BYTES {
        return read(&bytes);
    }
    tokio::task::spawn_blocking(move || read(&bytes))
        .await
        .map_err(|e| ApiError::internal(&format!("reading the body stopped: {e}")))?
}

/// A required field's value, or a 400 naming it.
pub fn required<T>(value: Option<T>, field: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::invalid(field, format!("{field} is required")))
}

/// A required text field's value, or a 400 naming it.
pub fn required_text(value: Option<String>, field: &str) -> Result<String, ApiError> {
    let text = required(value, field)?;
    refuse_nul(&text, field)?;
    Ok(text)
}

/// A 400 naming `field` if `text` holds the NUL character, which
/// PostgreSQL's text cannot hold.
pub fn refuse_nul(text: &str, field: &str) -> Result<(), ApiError> {
    if text.contains('\0') {
        return Err(ApiError::invalid(
            field,
            format!("{field} must not contain the NUL character (\\u0000)"),
        ));
    }
    Ok(())
}

pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    read_json(serde_json::Deserializer::from_slice(bytes))
}

/// `T` from `de`, whose input must hold it and nothing after (see [`parse`]).
fn read_json<'de, R: serde_json::de::Read<'de>, T: DeserializeOwned>(
    mut de: serde_json::Deserializer<R>,
) -> Result<T, ApiError> {
    let invalid = |message: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid: {message}"),
        )
    };
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let error = invalid(e.inner().to_string());
        // The body's own field ("metadata" of "metadata.a[3]"); "." is the whole
        // body, "?" a place serde could not name.
        let field = path.split(['.', '[']).next().unwrap_or("");
        if field.is_empty() || path == "." || path.contains('?') {
            error
        } else {
            error.with_field(field)
        }
    })?;
    de.end().map_err(|e| invalid(e.to_string()))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        db_name: Option<String>,
        limit: Option<u32>,
        metadata: Option<serde_json::Value>,
    }

    /// A body read in pieces parses as it does joined, errors included, and
    /// joins to its bytes.
    #[tokio::test]
    async fn pieces_read_as_the_whole_body() {
        let whole = br#"{"dbName": "d\u00e9", "limit": 7, "metadata": {"a": [1, "x"]}}"#;
        for cut in [1, 2, 9, 30, whole.len() - 1] {
            let pieces = Pieces {
                pieces: vec![
                    Bytes::copy_from_slice(&whole[..cut]),
                    Bytes::new(),
                    Bytes::copy_from_slice(&whole[cut..]),
                ],
                len: whole.len(),
            };
            let parsed: Body = pieces.parse().await.unwrap();
            assert_eq!(
                format!("{parsed:?}"),
                format!("{:?}", parse::<Body>(whole).unwrap())
            );
            assert_eq!(&pieces.join()[..], &whole[..]);
        }
        let wrong = Pieces {
            pieces: vec![
                Bytes::from_static(br#"{"limit": "#),
                Bytes::from_static(b"-1}"),
            ],
            len: 13,
        };
        let error = wrong.parse::<Body>().await.unwrap_err();
        assert_eq!(error.field.as_deref(), Some("limit"));
    }

    /// A long body is read off this thread and answers as a short one does.
    #[tokio::test]
    async fn long_bodies_read_elsewhere_read_the_same() {
        let pad = "x".repeat(PARSE_HERE_BYTES);
        for (body, limit) in [
            (format!(r#"{{"dbName":"{pad}","limit":3}}"#), Some(3)),
            (r#"{"dbName":"a","limit":3}"#.to_owned(), Some(3)),
        ] {
            let read = read_body(Bytes::from(body), parse::<Body>).await.unwrap();
            assert_eq!(read.limit, limit);
        }
        let bad = format!(r#"{{"dbName":"{pad}","limit":-1}}"#);
        let e = read_body(Bytes::from(bad), parse::<Body>)
            .await
            .unwrap_err();
        assert_eq!(
            (e.status, e.field.as_deref()),
            (StatusCode::BAD_REQUEST, Some("limit"))
        );
    }

    #[test]
    fn strings_of_the_top_level_are_found_in_a_prefix() {
        let names = ["userKey", "account", "dbName"];
        let body = br#" { "records": [{"title": "a \"quoted\" }, {", "n": [1, {"x": "]"}]}],
            "meta": {"userKey": "nested, not this"}, "userKey" : "vu_\u0041b",
            "n": -1.5e3, "account": "a@b.c", "dbName": "notes", "more": [1, 2"#;
        let found = top_level_strings(body, names);
        assert_eq!(
            found,
            [
                Some("vu_Ab".into()),
                Some("a@b.c".into()),
                Some("notes".into())
            ]
        );
        // Cut anywhere, it finds what it has passed and nothing wrong.
        for cut in 0..body.len() {
            for (i, got) in top_level_strings(&body[..cut], names).iter().enumerate() {
                assert!(got.is_none() || *got == found[i], "cut at {cut}: {got:?}");
            }
        }
        assert_eq!(
            top_level_strings(br#"{"dbName": 5, "account": "x"}"#, names)[1],
            Some("x".into())
        );
        assert_eq!(top_level_strings(b"[1, 2]", names), [None, None, None]);
        assert_eq!(
            top_level_strings(br#"{"dbName": "a", "dbName": "b"}"#, names)[2],
            Some("a".into())
        );
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let e = parse::<Body>(br#"{"dbName": 5}"#).unwrap_err();
        assert_eq!(
            (e.status, e.field.as_deref()),
            (StatusCode::BAD_REQUEST, Some("dbName"))
        );
        let e = parse::<Body>(br#"{"limit": -1}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("limit"));
    }

    #[test]
    fn malformed_trailing_and_deep_bodies_are_400() {
        for body in [&b"{"[..], b"{} {}", b"not json"] {
            let e = parse::<Body>(body).unwrap_err();
            assert_eq!((e.status, e.field), (StatusCode::BAD_REQUEST, None));
        }
        let nested = |field: &str| {
            format!(
                "{{\"{field}\":{}{}}}",
                "[".repeat(10_000),
                "]".repeat(10_000)
            )
        };
        let e = parse::<Body>(nested("metadata").as_bytes()).unwrap_err();
        assert_eq!(
            e.status,
            StatusCode::BAD_REQUEST,
            "over the recursion limit"
        );
        // An unknown field is skipped without recursion: no limit is needed there.
        assert!(parse::<Body>(nested("other").as_bytes()).is_ok());
    }
}
