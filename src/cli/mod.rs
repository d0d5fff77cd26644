//! Command lines: one option table per personality, both producing a
//! [`crate::config::TestConfig`].

pub mod completions;
pub mod getopt;
pub mod iperf2;
pub mod iperf3;
pub mod report;
pub mod units;
pub mod values;
