//! Tests of many flows and of hostile input: thousands of streams, many
//! clients at once, a server attacked with junk, floods and dead
//! clients, and the UI's history through crashes and a full disk.
//!
//! One test binary for the tier, a module per file.

#[path = "../common/mod.rs"]
mod common;

mod hostile;
mod http_ports;
mod many_flows;
mod quic_hostile;
mod rpm_hostile;
mod ui_crash;
