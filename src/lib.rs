//! wirespeed: an iperf3- and iperf 2-compatible network measurement tool.
//!
//! The binary is a thin shell over this library; tests, benchmarks and
//! fuzzers use the same modules. `docs/ARCHITECTURE.md` maps them and
//! follows one test through them.
#![warn(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod config;
pub mod debug;
pub mod dialect;
pub mod engine;
pub mod events;
pub mod exporter;
pub mod http;
pub mod metrics;
pub mod modes;
pub mod net;
pub mod nq;
pub mod report;
pub mod server;
#[cfg(windows)]
pub mod service;
pub mod signals;
pub mod stats;
pub mod ui;
pub mod units;
pub mod util;
pub mod version;

pub use app::run;
pub use version::{CLIENT_VERSION, VERSION, version_string};
/// The protocol codecs of both dialects, sans IO (`crates/proto`).
pub use wirespeed_proto as proto;
pub use wirespeed_proto::{error, json};
/// The system calls std and socket2 lack: the one crate that may use
/// `unsafe` (`crates/sys`).
pub use wirespeed_sys as sys;
