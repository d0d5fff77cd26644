//! The standard responsiveness test (draft-ietf-ippm-responsiveness) over
//! HTTP/2 and TLS 1.3, both ends: the networkQuality server beside the
//! iperf ports (`--rpm-listen`, [`server`]) and the `--rpm=URL` client of
//! any such server ([`client`]). The only crate with tokio, hyper, h2 and
//! rustls; each end is behind a feature of its own (`server`, `client`).
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod client;
pub mod server;
