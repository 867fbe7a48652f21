//! The HTTP surface integrators and operators use: CORS for browsers, the
//! OpenAPI document (real answers of every endpoint must match it), and the
//! Prometheus metrics.

use std::sync::OnceLock;

use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::Method;
use serde_json::{json, Value};
use vigil_e2e::{shared, Env, SidecarOptions};

const ALLOWED: &str = "http://localhost:3000";
const OTHER: &str = "http://evil.example";

/// A sidecar that allows `ALLOWED`, with a burst of 3 per key so a 429 is
/// quick to reach.
fn cors_env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        shared().with_sidecar(SidecarOptions {
            args: &["--rate-burst", "3", "--rate-per-second", "0.01"],
            env: &[("VIGIL_CORS_ORIGINS", ALLOWED)],
            ..Default::default()
        })
    })
}

fn api_key(env: &Env, name: &str) -> String {
    env.admin_ok(&["keys", "create", "--name", name])
}

fn header<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

fn preflight(env: &Env, origin: &str) -> Response {
    Client::new()
        .request(Method::OPTIONS, env.url("/api/transaction"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type,x-api-key")
        .send()
        .expect("preflight sent")
}

fn assess_from(env: &Env, origin: &str, key: Option<&str>) -> Response {
    let mut request = Client::new()
        .post(env.url("/api/transaction"))
        .header("origin", origin)
        .json(&json!({"amount": 10, "customerEmail": "cors@example.com"}));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    request.send().expect("request sent")
}

#[test]
fn a_preflight_from_an_allowed_origin_gets_204_with_methods_and_headers() {
    let env = cors_env();
    let ok = preflight(env, ALLOWED);
    assert_eq!(ok.status(), 204);
    assert_eq!(header(&ok, "access-control-allow-origin"), Some(ALLOWED));
    let methods = header(&ok, "access-control-allow-methods").unwrap_or("");
    for method in ["GET", "POST", "OPTIONS"] {
        assert!(methods.contains(method), "{methods}");
    }
    let headers = header(&ok, "access-control-allow-headers").unwrap_or("");
    assert!(
        headers.contains("content-type") && headers.contains("x-api-key"),
        "{headers}"
    );

    let other = preflight(env, OTHER);
    assert_eq!(header(&other, "access-control-allow-origin"), None);
    // The default sidecar allows no origin at all.
    let off = preflight(shared(), ALLOWED);
    assert_eq!(header(&off, "access-control-allow-origin"), None);
}

#[test]
fn answers_and_errors_carry_cors_headers_for_allowed_origins_only() {
    let env = cors_env();
    let key = api_key(env, "cors");
    let ok = assess_from(env, ALLOWED, Some(&key));
    assert_eq!(ok.status(), 200);
    assert_eq!(header(&ok, "access-control-allow-origin"), Some(ALLOWED));
    let exposed = header(&ok, "access-control-expose-headers").unwrap_or("");
    assert!(
        exposed.contains("x-request-id") && exposed.contains("retry-after"),
        "{exposed}"
    );

    let unauthorized = assess_from(env, ALLOWED, None);
    assert_eq!(unauthorized.status(), 401);
    assert_eq!(
        header(&unauthorized, "access-control-allow-origin"),
        Some(ALLOWED)
    );

    let other = assess_from(env, OTHER, Some(&key));
    assert_eq!(other.status(), 200);
    assert_eq!(header(&other, "access-control-allow-origin"), None);
    let other_error = assess_from(env, OTHER, None);
    assert_eq!(other_error.status(), 401);
    assert_eq!(header(&other_error, "access-control-allow-origin"), None);

    // A 429 too, so a browser can read its Retry-After.
    let limited = api_key(env, "cors limited");
    let statuses: Vec<u16> = (0..4)
        .map(|_| assess_from(env, ALLOWED, Some(&limited)))
        .map(|r| {
            if r.status() == 429 {
                assert_eq!(header(&r, "access-control-allow-origin"), Some(ALLOWED));
                assert!(header(&r, "retry-after").is_some());
            }
            r.status().as_u16()
        })
        .collect();
    assert_eq!(statuses, [200, 200, 200, 429]);
}

/// `/openapi.json` of the shared sidecar, parsed once.
fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let response = reqwest::blocking::get(shared().url("/openapi.json")).expect("served");
        assert_eq!(response.status(), 200);
        response.json().expect("the document is JSON")
    })
}

/// `text` as one JSON pointer token inside a URI fragment.
fn pointer_token(text: &str) -> String {
    text.replace('~', "~0")
        .replace('/', "~1")
        .replace('{', "%7B")
        .replace('}', "%7D")
}

/// Checks `body` against the schema at `pointer` in the document: the root
/// is the whole document plus a `$ref` to it, so `#/components/...` resolve.
fn assert_matches(pointer: &str, body: &Value, what: &str) {
    let mut root = document().clone();
    root["$ref"] = Value::from(pointer);
    let validator = jsonschema::draft202012::new(&root)
        .unwrap_or_else(|e| panic!("{what}: the schema at {pointer} does not compile: {e}"));
    let errors: Vec<String> = validator.iter_errors(body).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{what}: {body}\ndoes not match {pointer}: {errors:?}"
    );
}

/// Sends `request`, then checks its answer against what the document says
/// `method template` answers with that status (else the operation's
/// `default`). Returns the status and the body.
fn checked(method: &str, template: &str, request: RequestBuilder) -> (u16, Value) {
    let response = request.send().expect("request sent");
    let status = response.status().as_u16();
    let content_type = header(&response, "content-type").unwrap_or("").to_owned();
    let text = response.text().expect("a body");
    let body = if content_type.starts_with("application/json") {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
    } else {
        Value::String(text)
    };
    let operation = format!("#/paths/{}/{method}", pointer_token(template));
    let responses = &document()["paths"][template][method]["responses"];
    assert!(
        responses.is_object(),
        "{method} {template} is not documented"
    );
    let key = if responses.get(status.to_string()).is_some() {
        status.to_string()
    } else {
        "default".to_owned()
    };
    let media = responses[&key]["content"]
        .as_object()
        .and_then(|c| c.keys().next().cloned())
        .unwrap_or_else(|| panic!("{method} {template} {status}: no content documented"));
    assert!(
        content_type.starts_with(&media),
        "{method} {template} {status}: {content_type}, documented {media}"
    );
    let pointer = format!(
        "{operation}/responses/{key}/content/{}/schema",
        pointer_token(&media)
    );
    assert_matches(&pointer, &body, &format!("{method} {template} {status}"));
    (status, body)
}

#[test]
fn the_document_is_openapi_3_1_with_every_endpoint_and_the_security_schemes() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    let expected = [
        ("/healthz", "get"),
        ("/api/key", "get"),
        ("/api/transaction", "post"),
        ("/api/transaction/{transactionId}/feedback", "post"),
        ("/assess-id", "post"),
        ("/createDatabase", "post"),
        ("/storeEmbedding", "post"),
        ("/storeEmbeddings", "post"),
        ("/getEmbeddings", "post"),
        ("/queryEmbeddings", "post"),
        ("/hybridSearch", "post"),
        ("/deleteEmbedding", "post"),
        ("/deleteDatabase", "post"),
        ("/openapi.json", "get"),
        ("/metrics", "get"),
    ];
    for (path, method) in expected {
        let operation = &doc["paths"][path][method];
        assert!(
            operation["responses"].is_object(),
            "{method} {path}: {operation}"
        );
        assert!(
            operation["responses"]["default"].is_object(),
            "{method} {path}: no default"
        );
    }
    let scheme = &doc["components"]["securitySchemes"]["apiKey"];
    assert_eq!(
        (&scheme["type"], &scheme["in"], &scheme["name"]),
        (&json!("apiKey"), &json!("header"), &json!("x-api-key"))
    );
    assert_eq!(
        doc["paths"]["/api/transaction"]["post"]["security"],
        json!([{"apiKey": []}])
    );
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    for name in [
        "ErrorBody",
        "BodyCredentials",
        "TransactionRequest",
        "Assessment",
        "IdentityUpload",
        "IdentityAssessment",
    ] {
        assert!(schemas.contains_key(name), "no schema {name}");
    }
    for (name, schema) in schemas {
        assert!(
            jsonschema::draft202012::meta::is_valid(schema),
            "{name} is not a JSON Schema 2020-12 schema: {schema}"
        );
    }
    // Every $ref points into the document.
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| match (k.as_str(), v) {
                ("$ref", Value::String(r)) => out.push(r),
                _ => refs(v, out),
            }),
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(doc, &mut all);
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or(r);
        assert!(schemas.contains_key(name), "dangling $ref {r}");
    }
    // The transaction request lists SPEC's fields and allows others.
    let request = &schemas["TransactionRequest"];
    for field in [
        "amount",
        "isVPN",
        "time",
        "strictness",
        "customerEmail",
        "email",
    ] {
        assert!(request["properties"][field].is_object(), "{field}");
    }
    assert_ne!(request["additionalProperties"], json!(false));
}

#[test]
fn real_answers_of_every_endpoint_match_the_document() {
    let env = shared();
    let key = api_key(env, "openapi");
    let http = Client::new();
    let get = |path: &str| http.get(env.url(path));
    let post = |path: &str| http.post(env.url(path));
    let keyed = |path: &str| post(path).header("x-api-key", &key);

    assert_eq!(checked("get", "/healthz", get("/healthz")).0, 200);
    assert_eq!(
        checked("get", "/api/key", get("/api/key").header("x-api-key", &key)).0,
        200
    );
    assert_eq!(checked("get", "/api/key", get("/api/key")).0, 401);
    assert_eq!(
        checked(
            "get",
            "/api/key",
            get("/api/key?scope=bogus").header("x-api-key", &key)
        )
        .0,
        400
    );

    let tx = "/api/transaction";
    let body = json!({"amount": "2500", "isVPN": "Yes", "Email": "doc@mailinator.com",
                      "time": "2026-11-21 03:12:00", "ammount": 3});
    let (status, assessment) = checked("post", tx, keyed(tx).json(&body));
    assert_eq!(status, 200, "{assessment}");
    let plain = json!({"amount": 5, "customerEmail": "plain@example.com"});
    assert_eq!(checked("post", tx, keyed(tx).json(&plain)).0, 200);
    assert_eq!(checked("post", tx, post(tx).json(&plain)).0, 401);
    let not_object = keyed(tx)
        .header("content-type", "application/json")
        .body("[1, 2]");
    assert_eq!(checked("post", tx, not_object).0, 400);
    assert_eq!(
        checked("post", tx, keyed(tx).json(&json!({"amount": -5}))).0,
        400
    );
    assert_eq!(checked("post", tx, keyed(tx).body("amount=5")).0, 415);

    let feedback = "/api/transaction/{transactionId}/feedback";
    let id = assessment["transactionId"].as_str().expect("an id");
    let labelled = format!("/api/transaction/{id}/feedback");
    let fraud = json!({"label": "fraud", "note": "doc"});
    assert_eq!(
        checked("post", feedback, keyed(&labelled).json(&fraud)).0,
        200
    );
    let label = json!({"label": "maybe"});
    assert_eq!(
        checked("post", feedback, keyed(&labelled).json(&label)).0,
        400
    );
    let unknown = "/api/transaction/00000000-0000-4000-8000-000000000000/feedback";
    assert_eq!(
        checked("post", feedback, keyed(unknown).json(&fraud)).0,
        404
    );

    // The identity check: an assessment, and its refusals.
    let id_check = "/assess-id";
    let upload = |bytes: Vec<u8>| {
        let part = reqwest::blocking::multipart::Part::bytes(bytes).file_name("id.jpg");
        keyed(id_check).multipart(reqwest::blocking::multipart::Form::new().part("image", part))
    };
    let card = vigil_identity::synthetic::card(1);
    let photo = vigil_identity::synthetic::jpeg(&card, 90, None);
    let (status, identity) = checked("post", id_check, upload(photo.clone()));
    assert_eq!(status, 200, "{identity}");
    assert_eq!(
        checked("post", id_check, upload(b"%PDF-1.4".to_vec())).0,
        415
    );
    assert_eq!(
        checked("post", id_check, upload(photo[..photo.len() / 2].to_vec())).0,
        422
    );
    assert_eq!(
        checked("post", id_check, keyed(id_check).json(&plain)).0,
        415
    );
    let no_image =
        keyed(id_check).multipart(reqwest::blocking::multipart::Form::new().text("note", "x"));
    assert_eq!(checked("post", id_check, no_image).0, 400);

    env.admin_ok(&["accounts", "create", "openapi@example.com"]);
    env.admin_ok(&["accounts", "create", "someone@example.com"]);
    let user = env.admin_ok(&["user-keys", "create", "openapi@example.com"]);
    let create = |db: Value| {
        post("/createDatabase")
            .json(&json!({"userKey": user, "account": "openapi@example.com", "dbName": db}))
    };
    assert_eq!(
        checked("post", "/createDatabase", create(json!("docs"))).0,
        201
    );
    assert_eq!(
        checked("post", "/createDatabase", create(json!("docs"))).0,
        200
    );
    assert_eq!(checked("post", "/createDatabase", create(json!(7))).0, 400);
    let stranger = post("/createDatabase")
        .json(&json!({"userKey": user, "account": "someone@example.com", "dbName": "docs"}));
    assert_eq!(checked("post", "/createDatabase", stranger).0, 403);

    // The vector endpoints: each success, and its refusals.
    let vector = |path: &str, fields: Value| {
        let mut body = json!({"userKey": user, "account": "openapi@example.com", "dbName": "docs"});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        (path.to_owned(), post(path).json(&body))
    };
    let expect = |(path, request): (String, RequestBuilder), status: u16| {
        let (got, body) = checked("post", &path, request);
        assert_eq!(got, status, "{path}: {body}");
        body
    };
    let meta = json!({"source": "openapi", "n": [1, {"k": null}]});
    let one = json!({"title": "Refunds", "content": "Money back in 14 days.", "metadata": meta});
    let stored = expect(vector("/storeEmbedding", one.clone()), 201);
    let batch = json!({"records": [one, {"title": "Shipping", "content": "Two days."}]});
    expect(vector("/storeEmbeddings", batch), 201);
    let page = expect(
        vector("/getEmbeddings", json!({"start": 0, "limit": 10})),
        200,
    );
    assert_eq!(page.as_array().map(Vec::len), Some(3), "{page}");
    let query = json!({"query": "can I get my money back"});
    expect(vector("/queryEmbeddings", query.clone()), 200);
    expect(
        vector("/hybridSearch", json!({"query": "refunds", "limit": 10})),
        200,
    );
    for (path, fields) in [
        ("/storeEmbedding", json!({"title": "no content"})),
        ("/storeEmbeddings", json!({"records": []})),
        ("/getEmbeddings", json!({"limit": 0})),
        ("/queryEmbeddings", json!({"query": "q", "limit": "x"})),
        ("/hybridSearch", json!({})),
        ("/deleteEmbedding", json!({"id": "one"})),
    ] {
        expect(vector(path, fields), 400);
    }
    let elsewhere = post("/getEmbeddings")
        .json(&json!({"userKey": user, "account": "openapi@example.com", "dbName": "absent"}));
    assert_eq!(checked("post", "/getEmbeddings", elsewhere).0, 404);
    let deleted = expect(vector("/deleteEmbedding", json!({"id": stored["id"]})), 200);
    assert_eq!(deleted, stored);
    expect(vector("/deleteEmbedding", json!({"id": stored["id"]})), 404);
    let anonymous = post("/queryEmbeddings").json(&json!({"dbName": "docs", "query": "q"}));
    assert_eq!(checked("post", "/queryEmbeddings", anonymous).0, 401);
    expect(vector("/deleteDatabase", json!({})), 200);
    expect(vector("/deleteDatabase", json!({})), 404);

    assert_eq!(checked("get", "/openapi.json", get("/openapi.json")).0, 200);
    assert_eq!(checked("get", "/metrics", get("/metrics")).0, 200);
    // Endpoints that refuse nothing of their own: a wrong method is the JSON error.
    for path in ["/healthz", "/openapi.json", "/metrics"] {
        let response = post(path).send().expect("sent");
        assert_eq!(response.status(), 405, "{path}");
        let error: Value = response.json().expect("JSON");
        assert_matches("#/components/schemas/ErrorBody", &error, path);
    }
}

/// The value of the series `series` (name and labels as printed), 0 when absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

fn scrape(env: &Env) -> String {
    let response = reqwest::blocking::get(env.url("/metrics")).expect("scraped");
    assert_eq!(response.status(), 200);
    assert!(header(&response, "content-type")
        .unwrap_or("")
        .starts_with("application/openmetrics-text"));
    response.text().expect("text")
}

#[test]
fn metrics_count_a_request_that_was_just_made() {
    // A sidecar of its own, so no other test's requests land between the scrapes.
    let env = shared().with_sidecar(SidecarOptions::default());
    let key = api_key(&env, "metrics");
    let healthz = r#"vigil_http_requests_total{route="/healthz",method="GET",status="200"}"#;
    let refused =
        r#"vigil_http_requests_total{route="/api/transaction",method="POST",status="401"}"#;
    let before = scrape(&env);

    assert_eq!(
        reqwest::blocking::get(env.url("/healthz"))
            .unwrap()
            .status(),
        200
    );
    let assessment: Value = Client::new()
        .post(env.url("/api/transaction"))
        .header("x-api-key", &key)
        .json(&json!({"amount": 10, "customerEmail": "metrics@example.com"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let result = assessment["Result"].as_str().expect("a Result");
    let wrong_key = "vk_".to_owned() + &"0".repeat(64);
    let refused_response = Client::new()
        .post(env.url("/api/transaction"))
        .header("x-api-key", &wrong_key)
        .json(&json!({}))
        .send()
        .unwrap();
    assert_eq!(refused_response.status(), 401);
    let id = assessment["transactionId"].as_str().unwrap();
    Client::new()
        .post(env.url(&format!("/api/transaction/{id}/feedback")))
        .header("x-api-key", &key)
        .json(&json!({"label": "legit"}))
        .send()
        .unwrap();

    let after = scrape(&env);
    assert_eq!(
        sample(&after, healthz),
        sample(&before, healthz) + 1.0,
        "{after}"
    );
    assert_eq!(
        sample(&after, refused),
        sample(&before, refused) + 1.0,
        "{after}"
    );
    let assessed = format!(r#"vigil_assessments_total{{result="{result}"}}"#);
    assert_eq!(
        sample(&after, &assessed),
        sample(&before, &assessed) + 1.0,
        "{after}"
    );
    let latency = r#"vigil_http_request_duration_seconds_count{route="/healthz"}"#;
    assert!(sample(&after, latency) >= 1.0, "{after}");
    let feedback = r#"vigil_http_requests_total{route="/api/transaction/{transactionId}/feedback",method="POST",status="200"}"#;
    assert_eq!(sample(&after, feedback), 1.0, "{after}");
    for series in [
        "vigil_db_pool_max_size",
        "vigil_db_pool_size",
        "vigil_db_pool_available",
        "vigil_db_pool_waiting",
    ] {
        assert!(after.lines().any(|l| l.starts_with(series)), "no {series}");
    }
    assert!(
        sample(&after, "vigil_db_pool_wait_seconds_count") >= 2.0,
        "{after}"
    );
    // Labels hold patterns, never ids or keys.
    for secret in [id, key.as_str(), wrong_key.as_str()] {
        assert!(!after.contains(secret), "{secret} in the metrics");
    }
}

#[test]
fn rate_limit_rejections_are_counted_by_code() {
    let env = cors_env();
    let key = api_key(env, "rejections");
    let series = r#"vigil_rate_limit_rejections_total{code="rate_limited"}"#;
    let before = sample(&scrape(env), series);
    let statuses: Vec<u16> = (0..4)
        .map(|_| {
            Client::new()
                .get(env.url("/api/key"))
                .header("x-api-key", &key)
                .send()
                .unwrap()
                .status()
                .as_u16()
        })
        .collect();
    assert_eq!(statuses, [200, 200, 200, 429]);
    // Other tests may be limited on this sidecar too: at least ours was counted.
    assert!(sample(&scrape(env), series) > before);
}
