//! What each iperf3 option does to the configuration, grouped by concern.
//! Every function here is a row's apply step (see [`super::table`]): it
//! checks the option's own value and records it; checks that involve
//! several options wait for [`super::check`].

pub mod auth;
pub mod extras;
pub mod network;
pub mod output;
pub mod server;
pub mod test;

use super::opt::Opt;
use crate::getopt::Occurrence;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::units::parse_int;

/// A parameter error with the code's own words.
pub(super) fn perr(code: Code) -> Error {
    Error::param(code)
}

/// iperf3's words for a number it cannot read.
pub(super) fn unit_err(arg: &str) -> Error {
    Error::param_msg(Code::UNITVAL, format!("invalid unit value or suffix: '{arg}'"))
}

/// The option's value (empty for a flag).
pub(super) fn value(o: &Occurrence<Opt>) -> &str {
    o.value.as_deref().unwrap_or("")
}

/// The option's value as a plain integer; `code` names the rule when it
/// is not one.
pub(super) fn int_arg(o: &Occurrence<Opt>, code: Code) -> Result<i64, Error> {
    // iperf3 uses atoi for these: a trailing suffix is ignored, garbage is 0.
    // We are stricter: garbage is an error naming the option's rule.
    parse_int(value(o), false).ok_or_else(|| perr(code))
}
