//! What parsing an iperf3 command line gathers while the rows apply.

use std::time::Duration;

use crate::apply::Gathered;
use wirespeed_core::config::TestConfig;

/// The configuration being built, plus what the cross-option checks need
/// to know about how it was asked for.
#[derive(Debug)]
pub struct ParseState {
    /// What both dialects gather alike (`cfg`, `client`, `-u`, `-R`, ...).
    pub(super) common: Gathered,
    /// `-s` was given.
    pub(super) is_server: bool,
    /// `--loopback`.
    pub(super) loopback: bool,
    /// How many of `-t`, `-n`, `-k` were given.
    pub(super) end_conditions: u32,
    /// `-t`, applied after the checks (it must not override `-n`/`-k`).
    pub(super) time: Option<Duration>,
    /// `-l`, checked once the protocol is known.
    pub(super) length: Option<f64>,
    /// `--rcv-timeout` was given.
    pub(super) rcv_timeout_given: bool,
    /// `-f` was given.
    pub(super) format_given: bool,
    /// `--bidir`.
    pub(super) bidir: bool,
    /// `--rpm=URL`, `--cacert FILE` and `--insecure`, put together by the
    /// checks.
    pub(super) nq: wirespeed_core::config::NqOptions,
}

impl ParseState {
    /// Nothing given yet: iperf3's defaults.
    pub(super) fn new() -> ParseState {
        ParseState {
            common: Gathered::new(TestConfig::default()),
            is_server: false,
            loopback: false,
            end_conditions: 0,
            time: None,
            length: None,
            rcv_timeout_given: false,
            format_given: false,
            bidir: false,
            nq: wirespeed_core::config::NqOptions::default(),
        }
    }
}

crate::apply::reads_through!(ParseState);

impl crate::apply::Gather for ParseState {
    type Error = wirespeed_core::error::Error;

    fn value_error(code: wirespeed_core::error::Code, msg: String) -> Self::Error {
        wirespeed_core::error::Error::param_msg(code, msg)
    }
}
