//! What each iperf 2 option does to the configuration, grouped by concern.
//! Every function here is a row's apply step (see [`super::table`]): it
//! checks the option's own value and records it; checks that involve
//! several options wait for [`super::check`].

pub mod bounceback;
pub mod network;
pub mod output;
pub mod server;
pub mod traffic;

use super::CliError;
use super::opt::Opt;
use crate::getopt::Occurrence;
use wirespeed_core::units::{parse_int, parse_iperf2};

/// The option's value (empty for a flag).
pub(super) fn value(o: &Occurrence<Opt>) -> &str {
    o.value.as_deref().unwrap_or("")
}

/// A non-negative number with iperf 2's suffixes (`k` = 1000, `K` = 1024).
pub(super) fn unit_value(opt: &str, v: &str) -> Result<f64, CliError> {
    parse_iperf2(v)
        .ok()
        .filter(|x| *x >= 0.0)
        .ok_or_else(|| CliError::err(format!("{opt} value of '{v}' not recognized")))
}

/// A plain integer.
pub(super) fn int_value(opt: &str, v: &str) -> Result<i64, CliError> {
    parse_int(v, false).ok_or_else(|| CliError::err(format!("{opt} value of '{v}' not recognized")))
}
