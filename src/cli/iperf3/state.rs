//! What parsing an iperf3 command line gathers while the rows apply.

use std::time::Duration;

use crate::cli::values::SearchRequest;
use crate::config::TestConfig;

/// The configuration being built, plus what the cross-option checks need
/// to know about how it was asked for.
#[derive(Debug)]
pub struct ParseState {
    /// The configuration so far.
    pub(super) cfg: TestConfig,
    /// `-s` was given.
    pub(super) is_server: bool,
    /// `-c host` (without its `%dev`).
    pub(super) client: Option<String>,
    /// `--loopback`.
    pub(super) loopback: bool,
    /// How many of `-t`, `-n`, `-k` were given.
    pub(super) end_conditions: u32,
    /// `-t`, applied after the checks (it must not override `-n`/`-k`).
    pub(super) time: Option<Duration>,
    /// `-l`, checked once the protocol is known.
    pub(super) length: Option<f64>,
    /// Warnings to print before the test.
    pub(super) warnings: Vec<String>,
    /// `--rcv-timeout` was given.
    pub(super) rcv_timeout_given: bool,
    /// `-f` was given.
    pub(super) format_given: bool,
    /// `-R`.
    pub(super) reverse: bool,
    /// `--bidir`.
    pub(super) bidir: bool,
    /// `-u`.
    pub(super) udp: bool,
    /// `--udp-search`, `--max-loss`.
    pub(super) search: SearchRequest,
}

impl ParseState {
    /// Nothing given yet: iperf3's defaults.
    pub(super) fn new() -> ParseState {
        ParseState {
            cfg: TestConfig::default(),
            is_server: false,
            client: None,
            loopback: false,
            end_conditions: 0,
            time: None,
            length: None,
            warnings: Vec::new(),
            rcv_timeout_given: false,
            format_given: false,
            reverse: false,
            bidir: false,
            udp: false,
            search: SearchRequest::default(),
        }
    }
}

impl crate::cli::apply::Gather for ParseState {
    type Error = crate::error::Error;

    fn cfg(&mut self) -> &mut TestConfig {
        &mut self.cfg
    }

    fn search(&mut self) -> &mut SearchRequest {
        &mut self.search
    }

    fn set_udp(&mut self) {
        self.udp = true;
    }

    fn set_reverse(&mut self) {
        self.reverse = true;
    }

    fn value_error(code: crate::error::Code, msg: String) -> Self::Error {
        crate::error::Error::param_msg(code, msg)
    }
}
