//! What a TCP and a UDP iperf 2 client do differently (the [`ClientTransport`]
//! each supplies to the one client skeleton in `client.rs`), and the
//! banner settings every kind of client shows.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use super::runner::Flow;
use wirespeed_core::config::{Protocol, TestConfig};
use wirespeed_core::error::Error;
use wirespeed_core::events::{BannerNote, Settings};
use wirespeed_report::Reporter;

/// What differs between a TCP and a UDP client.
pub(super) trait ClientTransport {
    /// The banner's socket buffer size and extra lines.
    fn banner(&self, cfg: &TestConfig, addr: SocketAddr) -> (u64, Vec<BannerNote>);
    /// Connects the `-P` flows, printing their connection lines.
    fn connect(&mut self, cfg: &TestConfig, addrs: &[SocketAddr], reporter: &mut Reporter) -> Result<Vec<Flow>, Error>;
    /// After connecting, before the flows run (UDP `-R`: the hellos).
    fn before_run(&mut self, _signal: &Arc<AtomicUsize>) {}
    /// After the flows ran (UDP: the FINs and the server's reports).
    fn after_run(&mut self, _reporter: &mut Reporter, _signal: &Arc<AtomicUsize>) {}
    /// How long receivers may take to drain.
    fn drain(&self) -> Duration;
    /// Idle limit of a reverse-only test (none: the server closes).
    fn reverse_idle(&self) -> Option<Duration> {
        None
    }
}

/// The settings a client's banner shows.
pub(super) fn settings(cfg: &TestConfig, window: u64, notes: Vec<BannerNote>) -> Settings {
    let p = &cfg.params;
    Settings {
        protocol: p.protocol,
        pid: std::process::id(),
        flows: p.streams,
        block_len: p.block_len_or_default(),
        tos: p.tos,
        nodelay: p.protocol == Protocol::Tcp && (p.nodelay || cfg.iperf2.bounceback.is_some()),
        window,
        window_requested: p.window.map(u64::from),
        notes,
    }
}
