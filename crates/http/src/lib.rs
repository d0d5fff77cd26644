//! The one HTTP layer of every web port: the web UI, the exporter, the
//! `--metrics` endpoint ([`metrics`]) and (its lifecycle) the RPM server.
//! A crate of its own below the web crate, so the RPM server and the
//! metrics endpoint share it without linking the UI's SQLite.
//!
//! The HTTP that the web UI, the exporter and the metrics endpoint speak:
//! their listener (`listen`, from `ADDR:PORT`) and where it can be
//! reached (`reachable`), the request and response a handler sees and
//! makes, and the server that carries them ([`serve`]: hyper on a small
//! tokio runtime of its own, held to [`Limits`] that stand up to clients
//! that trickle, idle or flood). A handler is plain blocking code; the
//! server runs it on a worker thread, never on the runtime.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod decode;
pub mod metrics;
mod route;
mod serve;

use std::net::{IpAddr, SocketAddr, TcpListener};

use wirespeed_core::config::Family;
use wirespeed_core::error::{Code, Error};

pub(crate) use decode::{parse_pairs, percent_decode};
pub use route::Router;
pub use serve::{Answer, Events, Handler, Limits, Serving, parse_head, serve, spawn};

/// Splits `ADDR:PORT`, `[V6]:PORT`, `:PORT` or `PORT` into host and port.
pub(crate) fn split_address(spec: &str) -> Option<(Option<String>, u16)> {
    let (host, port) = match spec.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None => ("", spec),
    };
    let port: u16 = port.parse().ok().filter(|p| *p > 0)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.contains(':') && !spec.contains('[') {
        // "::1:9100" is ambiguous; IPv6 needs brackets.
        return None;
    }
    Some(((!host.is_empty()).then(|| host.to_string()), port))
}

/// A non-blocking listener on `spec` (`ADDR:PORT`; `:PORT` for every
/// address) for `option` (named in the refusal of a bad address); `what`
/// names the service in the error when it cannot listen.
pub fn listen(spec: &str, option: &str, what: &str) -> Result<TcpListener, Error> {
    let (host, port) = split_address(spec).ok_or_else(|| {
        Error::param_msg(
            Code::NONE,
            format!("{option} wants ADDR:PORT (or :PORT, or [IPv6]:PORT), not '{spec}'"),
        )
    })?;
    let failed = |e: &Error| {
        let why = e.errno.map(wirespeed_core::error::strerror).unwrap_or_else(|| e.text());
        Error::msg(Code::LISTEN, format!("unable to start {what} on {spec}: {why}"))
    };
    let listener =
        wirespeed_core::net::listen_tcp(host.as_deref(), port, Family::Any, false, 1024).map_err(|e| failed(&e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| failed(&Error::io(Code::LISTEN, &e)))?;
    Ok(listener)
}

/// Where `listener` can be reached: its own address; or, for one on every
/// address (`0.0.0.0`, `[::]`, `:PORT`), the addresses of this host that
/// it answers on, those another machine could use first and loopback
/// last (IPv6 link-local ones are left out: they need a zone). Empty when
/// it is on every address and the host's addresses cannot be listed.
pub fn reachable(listener: &TcpListener) -> Vec<SocketAddr> {
    let Ok(addr) = listener.local_addr() else {
        return Vec::new();
    };
    let v6only = socket2::SockRef::from(listener).only_v6().unwrap_or(true);
    reachable_at(addr, v6only, &wirespeed_sys::netif::addresses())
}

fn reachable_at(addr: SocketAddr, v6only: bool, host: &[IpAddr]) -> Vec<SocketAddr> {
    if !addr.ip().is_unspecified() {
        return vec![addr];
    }
    let answers = |ip: &IpAddr| match ip {
        IpAddr::V4(_) => addr.is_ipv4() || !v6only,
        IpAddr::V6(v6) => addr.is_ipv6() && (v6.segments()[0] & 0xffc0) != 0xfe80,
    };
    let mut out: Vec<SocketAddr> = host
        .iter()
        .filter(|ip| answers(ip) && !ip.is_unspecified())
        .map(|ip| SocketAddr::new(*ip, addr.port()))
        .collect();
    out.sort_by_key(|a| (a.ip().is_loopback(), a.is_ipv6()));
    out.dedup();
    out
}

/// Where `listener` can be opened, as `url(ADDR:PORT)` of each address
/// [`reachable`] lists; when it is on every address and they cannot be
/// listed, its own address, saying to put one of the host's in its place.
pub fn urls(listener: &TcpListener, url: impl Fn(&str) -> String) -> Vec<String> {
    let mut urls: Vec<String> = reachable(listener).iter().map(|a| url(&a.to_string())).collect();
    if urls.is_empty()
        && let Ok(addr) = listener.local_addr()
    {
        let shown = addr.to_string();
        let ip = shown.rsplit_once(':').map_or(shown.as_str(), |(h, _)| h);
        urls.push(format!(
            "{} (every address of this host: put one in place of {ip})",
            url(&shown)
        ));
    }
    urls
}

/// `lead` and the first of `urls`, then a line for each other, aligned
/// under the first after an "or".
pub fn say(lead: &str, urls: &[String]) -> String {
    let mut out = String::new();
    for (i, u) in urls.iter().enumerate() {
        let pad = if i == 0 {
            lead.to_string()
        } else {
            format!("{:>w$} ", "or", w = lead.len().saturating_sub(1))
        };
        out.push_str(&format!("{pad}{u}\n"));
    }
    out
}

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, percent-decoded, without the query.
    pub path: String,
    /// The query's `key=value` pairs, decoded.
    pub query: Vec<(String, String)>,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl Request {
    /// A header's value (`name` in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// `200 OK`, ...
    pub status: &'static str,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Further header lines (`Name: value`).
    pub headers: Vec<String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with `body`.
    pub fn new(status: &'static str, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A plain-text response.
    pub fn text(status: &'static str, body: impl Into<String>) -> Response {
        Response::new(status, "text/plain; charset=utf-8", body.into().into_bytes())
    }

    /// Adds a header line.
    pub fn with_header(mut self, line: impl Into<String>) -> Response {
        self.headers.push(line.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_on_every_address_is_reached_at_the_hosts_addresses() {
        let host: Vec<IpAddr> = ["127.0.0.1", "::1", "192.0.2.2", "fd00::2", "fe80::1", "10.1.1.1"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let at = |addr: &str, v6only: bool| -> Vec<String> {
            reachable_at(addr.parse().unwrap(), v6only, &host)
                .iter()
                .map(|a| a.to_string())
                .collect()
        };
        // Loopback last, link-local left out, the kernel's order kept.
        assert_eq!(
            at("0.0.0.0:5280", false),
            ["192.0.2.2:5280", "10.1.1.1:5280", "127.0.0.1:5280"]
        );
        assert_eq!(at("[::]:5280", true), ["[fd00::2]:5280", "[::1]:5280"]);
        assert_eq!(
            at("[::]:5280", false),
            [
                "192.0.2.2:5280",
                "10.1.1.1:5280",
                "[fd00::2]:5280",
                "127.0.0.1:5280",
                "[::1]:5280"
            ]
        );
        // One address: that one.
        assert_eq!(at("192.0.2.2:9201", false), ["192.0.2.2:9201"]);
        // Addresses unknown: none to offer.
        assert!(reachable_at("0.0.0.0:1".parse().unwrap(), false, &[]).is_empty());
    }

    #[test]
    fn addresses_take_iperf_like_forms() {
        assert_eq!(split_address("127.0.0.1:9100"), Some((Some("127.0.0.1".into()), 9100)));
        assert_eq!(split_address(":9100"), Some((None, 9100)));
        assert_eq!(split_address("9100"), Some((None, 9100)));
        assert_eq!(split_address("[::1]:9100"), Some((Some("::1".into()), 9100)));
        assert_eq!(split_address("::1:9100"), None);
        assert_eq!(split_address("host:0"), None);
        assert_eq!(split_address("host:http"), None);
    }

    #[test]
    fn pairs_decode_forms() {
        assert_eq!(
            parse_pairs("a=1&b=x%2By&c&=z").unwrap(),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x+y".into()),
                ("c".into(), "".into()),
                ("".into(), "z".into())
            ]
        );
        assert_eq!(parse_pairs("a=%"), None);
        assert_eq!(parse_pairs("a=%ff"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_reach_a_handler_or_are_refused(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            if let Ok(r) = parse_head(&bytes) {
                proptest::prop_assert!(r.path.starts_with('/'));
            }
        }

        #[test]
        fn request_like_text_never_panics(s in "[A-Z]{1,6} /[ -~]{0,40} HTTP/1\\.[01](\r\n[a-zA-Z-]{1,12}: [ -~]{0,20}){0,5}") {
            if let Ok(r) = parse_head(s.as_bytes()) {
                proptest::prop_assert!(r.headers.len() <= 5);
            }
        }

        #[test]
        fn encoded_pairs_decode_back(k in "[ -~]{1,12}", v in "[ -~\u{e9}\u{4e2d}]{0,20}") {
            let enc = |s: &str| s.bytes().map(|b| format!("%{b:02X}")).collect::<String>();
            let pairs = parse_pairs(&format!("{}={}", enc(&k), enc(&v))).unwrap();
            proptest::prop_assert_eq!(pairs, vec![(k, v)]);
        }
    }
}
