//! The client's address: the peer of the TCP connection, or, when that peer is
//! a trusted proxy, the address the proxies recorded in `X-Forwarded-For`.
//!
//! Each proxy appends the address it received from, so the header is read from
//! the right: the first address that is not itself a trusted proxy is the
//! client. Anything left of it was written by the client and proves nothing.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use ipnet::IpNet;

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub IpAddr);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip())
            .ok_or_else(|| ApiError::internal("the connection has no peer address"))?;
        Ok(ClientIp(client_ip(
            peer,
            &parts.headers,
            &state.trusted_proxies,
        )))
    }
}

pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let mut client = peer;
    let hops = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect::<Vec<_>>();
    for hop in hops.iter().rev() {
        match hop.trim().parse::<IpAddr>() {
            Ok(ip) => {
                client = ip;
                if !is_trusted(&ip) {
                    break;
                }
            }
            // Garbage: trust nothing further left of it.
            Err(_) => break,
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        let trusted = ["10.0.0.0/8".parse().unwrap()];
        let h = headers(&["1.2.3.4"]);
        assert_eq!(
            client_ip(ip("203.0.113.9"), &h, &trusted),
            ip("203.0.113.9")
        );
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &[]), ip("10.0.0.1"));
    }

    #[test]
    fn behind_proxies_the_rightmost_untrusted_hop_is_the_client() {
        let trusted = ["10.0.0.0/8".parse().unwrap()];
        let h = headers(&["6.6.6.6, 198.51.100.7", "10.0.0.2"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("198.51.100.7"));
    }

    #[test]
    fn garbage_stops_the_walk() {
        let trusted = ["10.0.0.0/8".parse().unwrap()];
        let h = headers(&["198.51.100.7, nonsense"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("10.0.0.1"));
        assert_eq!(
            client_ip(ip("10.0.0.1"), &headers(&[]), &trusted),
            ip("10.0.0.1")
        );
    }
}
