//! wirespeed's iperf: one acceptor that serves both dialects on a port
//! ([`server`]), each dialect's client and server ([`dialect`]), iperf3's
//! RSA authentication ([`auth`]), `--latency`'s round-trip prober
//! ([`latency`]) and the modes that run many client tests to answer one
//! question ([`modes`]: `--rpm` over the iperf protocol, `--udp-search`).
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod auth;
pub mod dialect;
pub mod latency;
pub mod modes;
pub mod server;
