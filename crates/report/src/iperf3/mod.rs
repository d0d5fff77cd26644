//! iperf3's text output.

pub mod text;
