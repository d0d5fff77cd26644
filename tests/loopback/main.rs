//! Tests that need only this machine's loopback (and, where installed, the
//! real iperf3 and iperf to compare with): the command lines, every output
//! format, the server, authentication, metrics, the manual and packaging
//! files, and the shape of the code.
//!
//! One test binary for the tier, a module per file.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod auth;
mod cli_abbreviations;
mod cli_additions;
mod cli_errors;
mod dialect_outputs;
mod exporter;
mod html_report;
mod inprocess;
mod iperf2_l4s;
mod iperf2_port_range;
mod iperf2_socket_options;
mod k8s;
mod live;
mod manual;
mod metrics;
mod modes_events;
mod options;
mod properties;
mod pscheduler;
mod quic_iperf3;
#[cfg(feature = "rpm-server")]
mod rpm_server;
mod server;
mod server_guards;
mod server_json_errors;
mod tcp_ecn;
mod udp;
mod ui_history;
mod window_size;
