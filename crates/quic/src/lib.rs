//! The QUIC performance protocol (draft-banks-quic-performance, ALPN
//! `perf`), both roles: the server beside the iperf ports
//! (`-s --quic-perf-listen ADDR:PORT`) and the client (`--quic-perf
//! HOST:PORT`), whose test is told through the same events as any other
//! client's, so every output (text, `-J`, `--json-stream`, `--report`)
//! shows it.
//!
//! The bytes on the wire are [`wire`]'s (and docs/protocols.md's § QUIC
//! perf). QUIC itself is quinn's, with rustls on AWS-LC for TLS 1.3, on a
//! small tokio runtime of this crate's own (one thread per role): the rest
//! of the program stays thread-based and neither tokio nor quinn reaches
//! the core or the outputs. A build without the `perf` feature (the
//! binary's `quic-perf`) refuses both options in one line.
//!
//! [`iperf3`] is the data connection of iperf3 tests run with `-q`/`--quic`
//! (docs/protocols.md § QUIC data): the binary installs it into the iperf3
//! dialect at start ([`install_iperf3`]).

#![forbid(unsafe_code)]
// Without the `perf` feature only the option checks and the wire stay.
#![cfg_attr(not(feature = "perf"), allow(dead_code))]

pub mod client;
#[cfg(feature = "perf")]
pub mod iperf3;
#[cfg(feature = "perf")]
mod net;
pub mod server;
#[cfg(feature = "perf")]
mod tls;
pub mod wire;

use wirespeed_core::error::{Code, Error};

/// `HOST:PORT` (a name, an IPv4 address, or `[IPv6]:PORT`) split, for
/// `option`'s refusal of anything else.
pub fn split_target(spec: &str, option: &str) -> Result<(String, u16), Error> {
    let bad = || {
        Error::param_msg(
            Code::NONE,
            format!("{option} wants HOST:PORT (or [IPv6]:PORT), not '{spec}'"),
        )
    };
    let (host, port) = spec.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().ok().filter(|p| *p > 0).ok_or_else(bad)?;
    let bracketed = host.starts_with('[') && host.ends_with(']');
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || (host.contains(':') && !bracketed) {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// Makes QUIC available to the iperf3 dialect's `--quic` tests (without
/// the `perf` feature there is none, and `--quic` is refused in one line).
pub fn install_iperf3() {
    #[cfg(feature = "perf")]
    iperf3::install();
}

/// The refusal of a build without the `perf` feature.
pub(crate) fn not_built(option: &str) -> Error {
    Error::param_msg(
        Code::NONE,
        format!("{option}: this wirespeed was built without QUIC perf (feature quic-perf)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            split_target("127.0.0.1:443", "--quic-perf").unwrap(),
            ("127.0.0.1".into(), 443)
        );
        assert_eq!(split_target("[::1]:4433", "--quic-perf").unwrap(), ("::1".into(), 4433));
        assert_eq!(
            split_target("host.example:1", "--quic-perf").unwrap(),
            ("host.example".into(), 1)
        );
        for bad in ["127.0.0.1", ":443", "::1:443", "h:0", "h:port", "h:70000"] {
            let e = split_target(bad, "--quic-perf").unwrap_err();
            assert!(e.text().contains("--quic-perf wants HOST:PORT"), "{bad}: {}", e.text());
        }
    }
}
