//! Tests across real paths: network namespaces with a tbf bottleneck, and
//! the path emulator's long, lossy, reordering links, each report held to
//! the path's own counts. They need root; each builds its own namespaces
//! and removes them, two at a time (common::PathTurn).
//!
//! One test binary for the tier, a module per file.

#[path = "../common/mod.rs"]
mod common;

mod ecn;
mod latency;
mod netns_bottleneck;
mod pathemu;
mod paths;
mod quic;
mod rpm_http;
mod tcp_ecn;
mod udp_search;
mod window_advice;
