//! The responsiveness ("RPM") server a networkQuality client measures
//! against (`--rpm-listen`), as the network-quality/server project's
//! SERVER_SPEC describes it: over TLS 1.3, HTTP/2 (ALPN `h2`) or
//! HTTP/1.1, a config document at `/.well-known/nq` and `/config`, a
//! 1-byte `/small`, an endless `/large` and a `/slurp` (`/upload`) that
//! reads and discards what is posted.
//!
//! It runs beside the iperf ports on a thread of its own with a small
//! tokio runtime (`serve.rs`), so the rest of the program stays
//! thread-based. Binding and loading the certificate happen at start, so
//! a busy address or a bad file is one line and exit 1; serving starts
//! after a daemon detaches. A build without the `rpm-server` feature
//! refuses `--rpm-listen` in one line.
// Without the `server` feature only the option checks stay.
#![cfg_attr(not(feature = "server"), allow(dead_code))]

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use std::fmt::Write as _;

use wirespeed_core::config::TestConfig;
use wirespeed_core::error::{Code, Error};
use wirespeed_report::metrics::{Collector, head};

#[cfg(feature = "server")]
mod serve;

/// Checks the options among themselves: `--tls-cert` and `--tls-key`
/// go together, and only with `--rpm-listen` (or `--quic-perf-listen`,
/// which takes the same certificate).
pub fn check_options(cfg: &TestConfig) -> Result<(), Error> {
    let s = &cfg.server;
    let refuse = |m: &str| Err(Error::param_msg(Code::NONE, m));
    let listen = s.rpm_listen.as_ref().or(s.quic_perf_listen.as_ref());
    match (listen, &s.tls_cert, &s.tls_key) {
        (None, Some(_), _) | (None, _, Some(_)) => {
            refuse("--tls-cert and --tls-key are the certificate of --rpm-listen: give --rpm-listen too")
        }
        (Some(_), Some(_), None) => refuse("--tls-cert needs --tls-key (the certificate's private key, PEM)"),
        (Some(_), None, Some(_)) => refuse("--tls-key needs --tls-cert (the certificate chain, PEM)"),
        _ => Ok(()),
    }
}

#[cfg(feature = "server")]
pub use serve::{Endpoint, IDLE, MAX_CONNECTIONS, Serving};

/// The unsent backlog an RPM connection's socket keeps at most
/// (TCP_NOTSENT_LOWAT), on our server and our client alike: what waits in
/// a sender's own buffer delays a probe behind the load as much as a
/// queue in the path does, and the test is meant to measure the path. A
/// responsive server is set up this way (the draft asks for it); 16 KiB
/// still keeps a loopback connection at several Gbit/s.
pub(crate) const UNSENT: u32 = 2 * 1024;

/// What an RPM connection's HTTP/2 layer buffers per stream, and its TLS
/// layer in all, before the socket takes it, for the same reason: a load
/// connection's share of a slow path can be a few hundred KB/s, where
/// every 64 KiB held back is a probe's 200 ms.
pub(crate) const H2_SEND_BUFFER: usize = 4 * 1024;
/// See [`H2_SEND_BUFFER`].
pub(crate) const TLS_SEND_BUFFER: usize = 4 * 1024;

/// The paths requests are counted by (anything else is `other`).
pub(crate) const PATHS: [&str; 5] = ["config", "small", "large", "upload", "other"];

/// What the RPM server has served, for the server's `--metrics`.
#[derive(Debug, Default)]
pub struct Served {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections past the limit, answered 429 on every request.
    pub busy: AtomicU64,
    /// Connections past those, closed at once.
    pub closed_at_once: AtomicU64,
    /// TLS handshakes that failed or passed their deadline.
    pub tls_failures: AtomicU64,
    /// Requests answered, by [`PATHS`] (a 429 is counted as busy only).
    pub requests: [AtomicU64; 5],
    /// HTTP bytes (inside TLS) sent.
    pub sent: AtomicU64,
    /// HTTP bytes (inside TLS) received.
    pub received: AtomicU64,
}

impl Served {
    /// Counts one request for `path` (an index in [`PATHS`]).
    pub fn request(&self, path: usize) {
        if let Some(c) = self.requests.get(path) {
            c.fetch_add(1, Relaxed);
        }
    }
}

/// Without the `rpm-server` feature: the option is refused at start.
#[cfg(not(feature = "server"))]
pub struct Endpoint;

/// Without the `rpm-server` feature nothing is ever served.
#[cfg(not(feature = "server"))]
pub struct Serving;

#[cfg(not(feature = "server"))]
impl Endpoint {
    /// Refuses: this build has no RPM server.
    pub fn bind(_cfg: &TestConfig) -> Result<Endpoint, Error> {
        Err(Error::param_msg(
            Code::NONE,
            "--rpm-listen: this wirespeed was built without the RPM server (feature rpm-server)",
        ))
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

/// The RPM server's counters in Prometheus' text format, for the server's
/// `--metrics`.
impl Collector for Served {
    fn render(&self, o: &mut String) {
        let served = self;
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        let get = |c: &AtomicU64| c.load(Relaxed);
        let one = |o: &mut String, name: &str, kind: &str, help: &str, v: u64| {
            head(o, name, kind, help);
            let _ = writeln!(o, "{name} {v}");
        };
        one(
            o,
            "wirespeed_rpm_server_connections_total",
            "counter",
            "Connections the RPM server (--rpm-listen) accepted.",
            get(&served.connections),
        );
        one(
            o,
            "wirespeed_rpm_server_open_connections",
            "gauge",
            "Connections to the RPM server open now.",
            get(&served.open),
        );
        let name = "wirespeed_rpm_server_turned_away_total";
        head(
            o,
            name,
            "counter",
            "Connections past the RPM server's limit: answered 429 with Retry-After (busy), or closed at once.",
        );
        let _ = writeln!(o, "{name}{{how=\"busy\"}} {}", get(&served.busy));
        let _ = writeln!(o, "{name}{{how=\"closed\"}} {}", get(&served.closed_at_once));
        one(
            o,
            "wirespeed_rpm_server_tls_failures_total",
            "counter",
            "TLS handshakes to the RPM server that failed or passed their deadline.",
            get(&served.tls_failures),
        );
        let name = "wirespeed_rpm_server_requests_total";
        head(o, name, "counter", "Requests the RPM server answered, by path.");
        for (p, c) in PATHS.iter().zip(&served.requests) {
            let _ = writeln!(o, "{name}{{path=\"{p}\"}} {}", get(c));
        }
        let name = "wirespeed_rpm_server_bytes_total";
        head(
            o,
            name,
            "counter",
            "HTTP bytes (inside TLS) the RPM server sent and received.",
        );
        let _ = writeln!(o, "{name}{{direction=\"sent\"}} {}", get(&served.sent));
        let _ = writeln!(o, "{name}{{direction=\"received\"}} {}", get(&served.received));
    }
}
