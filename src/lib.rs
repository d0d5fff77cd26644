//! wirespeed: an iperf3- and iperf 2-compatible network measurement tool.
//!
//! The binary's own library: the application ([`app`]: which dialect a
//! command line speaks and running what it asks for) and signals, over the
//! workspace's crates, one per layer (`docs/ARCHITECTURE.md` maps them):
//! `wirespeed-proto` and `wirespeed-sys` at the bottom, then
//! `wirespeed-core` (configuration, events, statistics, the engine),
//! `wirespeed-report` (every output), `wirespeed-iperf` (the server and
//! both dialects), `wirespeed-cli` (both command lines), `wirespeed-web`
//! (UI, exporter, metrics endpoint) and `wirespeed-rpm-http` (the standard
//! responsiveness test over HTTP/2).
//!
//! The re-exports below keep the layers' modules under one name for the
//! integration tests and benches, which use this package.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod app;
#[cfg(windows)]
pub mod service;
pub mod signals;

pub use app::run;
pub use wirespeed_cli as cli;
pub use wirespeed_core::error;
pub use wirespeed_core::version::{CLIENT_VERSION, VERSION, version_string};
pub use wirespeed_core::{clock, config, debug, engine, events, net, stats, units, util, version};
pub use wirespeed_http as http;
pub use wirespeed_http::metrics as metrics_endpoint;
pub use wirespeed_iperf::{auth, dialect, modes, server};
/// The protocol codecs of both dialects, sans IO (`crates/proto`).
pub use wirespeed_proto as proto;
pub use wirespeed_proto::json;
pub use wirespeed_report as report;
/// The system calls std and socket2 lack: the one crate that may use
/// `unsafe` (`crates/sys`).
pub use wirespeed_sys as sys;
pub use wirespeed_web::{exporter, ui};
