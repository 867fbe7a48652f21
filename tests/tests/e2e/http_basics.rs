//! The sidecar's skeleton over real HTTP: health, and JSON errors for what no
//! handler answers (unknown route, wrong method, oversized body).

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::Value;
use vigil_e2e::{shared, start};

fn error_code(body: &Value) -> &str {
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not our JSON error: {body}"))
}

#[test]
fn healthz_is_200_when_the_database_answers() {
    let env = shared();
    let resp = reqwest::blocking::get(env.url("/healthz")).unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["database"], "ok");
}

#[test]
fn unknown_route_is_a_json_404() {
    let resp = reqwest::blocking::Client::new()
        .post(shared().url("/no/such/thing"))
        .body("{}")
        .send()
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(error_code(&resp.json().unwrap()), "not_found");
}

#[test]
fn wrong_method_is_a_json_405_that_says_what_is_allowed() {
    let resp = reqwest::blocking::Client::new()
        .delete(shared().url("/healthz"))
        .send()
        .unwrap();
    assert_eq!(resp.status(), 405);
    let allow = resp
        .headers()
        .get("allow")
        .expect("Allow header kept")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(allow.contains("GET"), "{allow}");
    assert_eq!(error_code(&resp.json().unwrap()), "method_not_allowed");
}

/// Raw HTTP, so the client does not need to push megabytes the server refuses to read.
fn raw_request(base: &str, head: &str) -> (u16, Value) {
    let addr = base.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    (
        status,
        serde_json::from_str(body).unwrap_or_else(|_| panic!("body is not JSON: {response}")),
    )
}

#[test]
fn oversized_body_is_a_json_413_before_it_is_read() {
    let env = shared();
    let head = format!(
        "POST /api/transaction HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        env.base.strip_prefix("http://").unwrap(),
        2 * 1024 * 1024
    );
    let (status, body) = raw_request(&env.base, &head);
    assert_eq!(status, 413);
    assert_eq!(error_code(&body), "payload_too_large");
}

#[test]
fn healthz_is_503_when_the_database_is_down() {
    let env = start(&["--request-timeout-ms", "3000"]);
    assert_eq!(
        reqwest::blocking::get(env.url("/healthz"))
            .unwrap()
            .status(),
        200
    );
    let stopped =
        std::process::Command::new(vigil_e2e::workspace_root().join("scripts/pg-cluster.sh"))
            .args(["down", env.cluster_dir.to_str().unwrap()])
            .status()
            .unwrap();
    assert!(stopped.success());
    let resp = reqwest::blocking::get(env.url("/healthz")).unwrap();
    assert_eq!(resp.status(), 503);
    let body: Value = resp.json().unwrap();
    assert_eq!(error_code(&body), "unavailable");
    assert!(
        !body.to_string().contains("vigil_app:"),
        "credentials leaked: {body}"
    );
}
