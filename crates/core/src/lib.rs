//! wirespeed's measurement core: the one model of a test both command
//! lines produce ([`config`]), numbers and units ([`units`]), clocks,
//! sockets ([`net`]), the one vocabulary every output reads ([`events`]),
//! the counters and what is computed from them ([`stats`]) and the data
//! plane with the one test loop ([`engine`]).
//!
//! It knows no output format, no server and no command line; the crates
//! above it (report, iperf, cli, web, rpm-http) do. `docs/ARCHITECTURE.md`
//! maps them.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod clock;
pub mod config;
pub mod debug;
pub mod engine;
pub mod error;
pub mod events;
pub mod net;
pub mod stats;
pub mod units;
pub mod util;
pub mod version;
