//! Sans-IO protocol cores of both dialects: bytes in, values and decisions
//! out. No sockets, no clocks, no configuration beyond the test both ends
//! agree on ([`params`]); the drivers in the tool do the I/O. Its own crate,
//! so that nothing else creeps in, and what the fuzz targets build on.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod ecn;
pub mod error;
pub mod iperf2;
pub mod iperf3;
pub mod json;
pub mod params;
pub mod sniff;
