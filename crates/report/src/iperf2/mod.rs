//! iperf 2.1.8's outputs: its text and its `-y C` rows.

pub mod csv;
pub mod text;
