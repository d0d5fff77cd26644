//! The perf server (`-s --quic-perf-listen ADDR:PORT`): on each
//! bidirectional stream a client opens, it reads the 8-byte request, reads
//! and counts (and throws away) everything else until the client's FIN,
//! then sends the bytes asked for and its own FIN. It runs beside the iperf
//! ports on a thread of its own with a current-thread tokio runtime.
//! Binding and loading the certificate happen at start, so a busy address
//! or a bad file is one line and exit 1.
//!
//! Every connection is held to the limits below (docs/limits.md): the
//! connections open at once, the streams open at once on each, the
//! handshake's deadline, the idle timeout, a stream that makes no progress,
//! and a connection's whole life. A request for 2^64 bytes is served as
//! fast as the client reads (QUIC's flow control) until one of those ends
//! it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use wirespeed_core::config::TestConfig;
use wirespeed_core::error::{Code, Error};

/// Connections served at once (handshakes in progress included); one past
/// them is refused (a CONNECTION_REFUSED close).
pub const MAX_CONNECTIONS: usize = 64;
/// Bidirectional streams a client may have open at once on a connection
/// (QUIC's MAX_STREAMS; each one that ends makes room for another).
pub const MAX_STREAMS: u32 = 128;
/// From the first datagram to the end of the handshake.
pub const HANDSHAKE: Duration = Duration::from_secs(10);
/// A connection that hears nothing from its client for this long is
/// closed (QUIC's idle timeout).
pub const IDLE: Duration = Duration::from_secs(10);
/// A stream on which nothing moves for this long (no request, no upload,
/// or a client that does not read what it asked for) is reset.
pub const STALL: Duration = Duration::from_secs(10);
/// The longest a connection is served.
pub const LIFETIME: Duration = Duration::from_secs(3600);
/// What a stream may buffer of a client's upload ahead of our reads, and
/// a connection in all: bounds memory at `MAX_CONNECTIONS` × this.
pub const CONNECTION_WINDOW: u32 = 8 << 20;
/// See [`CONNECTION_WINDOW`].
pub const STREAM_WINDOW: u32 = 4 << 20;

/// Checks `--quic-perf-listen`'s address and `--quic-perf`'s target, so
/// a bad one is one line before anything starts.
pub fn check_options(cfg: &TestConfig) -> Result<(), Error> {
    if !cfg!(feature = "perf") {
        if cfg.quic_perf.is_some() {
            return Err(crate::not_built("--quic-perf"));
        }
        if cfg.server.quic_perf_listen.is_some() {
            return Err(crate::not_built("--quic-perf-listen"));
        }
    }
    if let Some(spec) = &cfg.server.quic_perf_listen {
        listen_address(spec)?;
    }
    if let Some(target) = &cfg.quic_perf {
        crate::split_target(target, "--quic-perf")?;
    }
    Ok(())
}

/// `ADDR:PORT`, `[IPv6]:PORT` or `:PORT` (every address) as a host (none
/// for every address) and port.
pub(crate) fn listen_address(spec: &str) -> Result<(Option<String>, u16), Error> {
    let bad = || {
        Error::param_msg(
            Code::NONE,
            format!("--quic-perf-listen wants ADDR:PORT (or :PORT, or [IPv6]:PORT), not '{spec}'"),
        )
    };
    let (host, port) = spec.rsplit_once(':').unwrap_or(("", spec));
    let port: u16 = port.parse().ok().filter(|p| *p > 0).ok_or_else(bad)?;
    let bracketed = host.starts_with('[') && host.ends_with(']');
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.contains(':') && !bracketed {
        return Err(bad());
    }
    Ok(((!host.is_empty()).then(|| host.to_string()), port))
}

/// What the perf server has served.
#[derive(Debug, Default)]
pub struct Served {
    /// Connections whose handshake completed.
    pub connections: AtomicU64,
    /// Connections (handshakes included) open now.
    pub open: AtomicU64,
    /// Connections refused: past [`MAX_CONNECTIONS`].
    pub refused: AtomicU64,
    /// Handshakes that failed or passed [`HANDSHAKE`].
    pub handshake_failures: AtomicU64,
    /// Streams served to their end.
    pub streams: AtomicU64,
    /// Streams reset: stalled, or cut by the client or a limit.
    pub streams_cut: AtomicU64,
    /// Upload bytes read (the requests' 8 bytes not counted).
    pub received: AtomicU64,
    /// Bytes sent back.
    pub sent: AtomicU64,
}

impl Served {
    fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }
}

/// The perf server's counters in Prometheus' text format, for the
/// server's `--metrics`.
impl wirespeed_report::metrics::Collector for Served {
    fn render(&self, o: &mut String) {
        use std::fmt::Write as _;
        use wirespeed_report::metrics::head;
        let get = |c: &AtomicU64| c.load(Relaxed);
        let mut one = |name: &str, kind: &str, help: &str, v: u64| {
            head(o, name, kind, help);
            let _ = writeln!(o, "{name} {v}");
        };
        one(
            "wirespeed_quic_perf_connections_total",
            "counter",
            "Connections the QUIC perf server (--quic-perf-listen) completed a handshake with.",
            get(&self.connections),
        );
        one(
            "wirespeed_quic_perf_open_connections",
            "gauge",
            "Connections to the QUIC perf server open now, handshakes included.",
            get(&self.open),
        );
        one(
            "wirespeed_quic_perf_refused_total",
            "counter",
            "Connections the QUIC perf server refused: past its limit.",
            get(&self.refused),
        );
        one(
            "wirespeed_quic_perf_handshake_failures_total",
            "counter",
            "QUIC perf handshakes that failed or passed their deadline.",
            get(&self.handshake_failures),
        );
        one(
            "wirespeed_quic_perf_streams_total",
            "counter",
            "QUIC perf streams served to their end.",
            get(&self.streams),
        );
        one(
            "wirespeed_quic_perf_streams_cut_total",
            "counter",
            "QUIC perf streams reset: stalled, or cut by the client or a limit.",
            get(&self.streams_cut),
        );
        let name = "wirespeed_quic_perf_bytes_total";
        head(
            o,
            name,
            "counter",
            "Stream bytes the QUIC perf server received (uploads) and sent.",
        );
        let _ = writeln!(o, "{name}{{direction=\"received\"}} {}", get(&self.received));
        let _ = writeln!(o, "{name}{{direction=\"sent\"}} {}", get(&self.sent));
    }
}

#[cfg(feature = "perf")]
mod serve;
#[cfg(feature = "perf")]
pub use serve::{Endpoint, Serving};

/// Without the `quic-perf` feature: the option is refused at start.
#[cfg(not(feature = "perf"))]
pub struct Endpoint;

/// Without the `quic-perf` feature nothing is ever served.
#[cfg(not(feature = "perf"))]
pub struct Serving;

#[cfg(not(feature = "perf"))]
impl Endpoint {
    /// Refuses: this build has no QUIC perf.
    pub fn bind(_cfg: &TestConfig) -> Result<Endpoint, Error> {
        Err(crate::not_built("--quic-perf-listen"))
    }

    /// Never reached: `bind` refuses.
    pub fn announcement(&self) -> String {
        String::new()
    }

    /// Never reached: `bind` refuses.
    pub fn serve(self, _served: std::sync::Arc<Served>) -> Result<Serving, Error> {
        Ok(Serving)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            listen_address("127.0.0.1:4443").unwrap(),
            (Some("127.0.0.1".into()), 4443)
        );
        assert_eq!(listen_address(":4443").unwrap(), (None, 4443));
        assert_eq!(listen_address("4443").unwrap(), (None, 4443));
        assert_eq!(listen_address("[::1]:4443").unwrap(), (Some("::1".into()), 4443));
        for bad in ["::1:4443", "127.0.0.1:0", "x", "127.0.0.1:"] {
            assert!(listen_address(bad).is_err(), "{bad}");
        }
    }
}
