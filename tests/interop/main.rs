//! Tests against the real programs: iperf3 and iperf 2 clients against our
//! server and our client against theirs, both dialects, TCP and UDP; their
//! outputs held to ours line by line (golden) and key by key (JSON).
//!
//! One test binary for the tier, a module per file.

#[path = "../common/mod.rs"]
mod common;

mod bounceback;
mod golden;
mod interop_iperf2;
mod interop_iperf2_udp;
mod interop_iperf3;
mod iperf2_22_options;
mod iperf2_banner;
mod iperf2_l4s;
mod iperf2_latency_tools;
mod iperf2_load_tools;
mod json_parity;
mod nq_mach;
mod nq_nginx;
mod prometheus;
mod quic_perf;
