//! Command lines: one option table per personality, both producing a
//! [`wirespeed_core::config::TestConfig`].
//!
//! [`getopt`] matches the words against a table (GNU `getopt_long`'s rules,
//! with wirespeed's additions kept from changing the peers' abbreviations);
//! [`iperf3`] and [`iperf2`] hold each personality's table, whose rows
//! carry what their option does, and the checks that involve several
//! options, over the apply steps both share ([`apply`]); [`values`] and [`wirespeed_core::units`] read the values both personalities
//! read alike.

pub mod apply;
pub mod completions;
pub mod getopt;
pub mod iperf2;
pub mod iperf3;
pub mod report;
pub mod values;
