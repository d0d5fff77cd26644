//! What parsing an iperf 2 command line gathers while the rows apply.

use std::time::Duration;

use super::{DEFAULT_PORT, IPERF2_CATCH_UP_US};
use crate::apply::Gathered;
use wirespeed_core::config::{Bounceback, Dialect, TestConfig};

/// The configuration being built, plus what the cross-option checks need
/// to know about how it was asked for.
#[derive(Debug)]
pub struct ParseState {
    /// What both dialects gather alike (`cfg`, `client`, `-u` or `-U`,
    /// `-R`, ...); its warnings go out as [`super::TO_STDERR`] says.
    pub(super) common: Gathered,
    /// `-s`.
    pub(super) server: bool,
    /// `-U`.
    pub(super) single_udp: bool,
    /// `--histograms[=spec]` (a server's option, checked later).
    pub(super) histograms: Option<String>,
    /// `-d`.
    pub(super) dual: bool,
    /// `-r`.
    pub(super) tradeoff: bool,
    /// `--full-duplex`.
    pub(super) full_duplex: bool,
    /// `-l`, checked once the protocol and the test are known.
    pub(super) len: Option<f64>,
    /// `-t`: a client's test time or a server's listening time.
    pub(super) time: Option<f64>,
    /// `-P`: a client's flows or a server's connection count.
    pub(super) parallel: Option<u32>,
    /// `-b` was a packet rate.
    pub(super) rate_pps: bool,
    /// `-b` was given.
    pub(super) rate_given: bool,
    /// `-T`.
    pub(super) ttl: Option<u32>,
    /// `--bounceback-txdelay`.
    pub(super) bb_txdelay: Duration,
    /// `--bounceback-request`, `--bounceback-reply` (iperf 2.2).
    pub(super) bb_request: Option<u32>,
    pub(super) bb_reply: Option<u32>,
    /// `--tcp-cca`, applied unless `-Z` was given.
    pub(super) tcp_cca: Option<String>,
    /// `--burst-size` (bytes) and `--burst-period` (s), checked later.
    pub(super) burst_size: Option<f64>,
    pub(super) burst_period: Option<f64>,
    /// `--isochronous[=fps:mean,stdev]` as given, checked later.
    pub(super) isochronous: Option<Option<String>>,
    /// `--ipg`, milliseconds.
    pub(super) ipg: Option<f64>,
    /// The last server-only wirespeed option given (`--allow`, `--deny`,
    /// `--ui`, `--max-tests`): refused on a client.
    pub(super) server_opt: Option<String>,
    /// `--tcp-rx-window-clamp` (a server's).
    pub(super) clamp: Option<u32>,
    /// `--tos-override` (a server's).
    pub(super) tos_override: Option<u8>,
    /// `--bounceback[=n]`.
    pub(super) bounceback: Option<Bounceback>,
    /// The bounceback settings given, as spelled (they need `--bounceback`).
    pub(super) bb_opts: Vec<String>,
    /// `--bounceback-hold`, µs.
    pub(super) bb_hold: u32,
    /// `--bounceback-period`.
    pub(super) bb_period: Duration,
    /// Not `--bounceback-no-quickack`.
    pub(super) bb_quickack: bool,
    /// `-i` was given.
    pub(super) interval_given: bool,
    /// `--send-delay`/`--tcp-tx-delay` as spelled (UDP refuses it).
    pub(super) send_delay: Option<String>,
    /// `--fq-rate-step` (bits/s) and `--fq-rate-step-interval` (s).
    pub(super) fq_step: Option<u64>,
    pub(super) fq_step_interval: Option<f64>,
    /// `--omit` (s), checked against `-u`.
    pub(super) omit: Option<f64>,
}

impl ParseState {
    /// Nothing given yet: 2.1.8's defaults.
    pub(super) fn new() -> ParseState {
        let mut cfg = TestConfig {
            dialect: Dialect::Iperf2,
            port: DEFAULT_PORT,
            ..TestConfig::default()
        };
        cfg.output.interval = None;
        cfg.params.repeating_payload = true;
        // 2.1.8 serves every client that comes; `--max-tests` sets a limit.
        cfg.server.max_tests = u32::MAX;
        // A paced UDP sender that fell behind (a busy machine) catches up on up
        // to 100 ms of datagrams at once, as 2.1.8's delay accumulator does,
        // so the average rate holds.
        cfg.params.pacing_timer = IPERF2_CATCH_UP_US;
        ParseState {
            common: Gathered::new(cfg),
            server: false,
            single_udp: false,
            histograms: None,
            dual: false,
            tradeoff: false,
            full_duplex: false,
            len: None,
            time: None,
            parallel: None,
            rate_pps: false,
            rate_given: false,
            ttl: None,
            tcp_cca: None,
            bb_txdelay: Duration::ZERO,
            bb_request: None,
            bb_reply: None,
            burst_size: None,
            burst_period: None,
            isochronous: None,
            ipg: None,
            server_opt: None,
            clamp: None,
            tos_override: None,
            bounceback: None,
            bb_opts: Vec::new(),
            bb_hold: 0,
            bb_period: Duration::from_secs(1),
            bb_quickack: true,
            interval_given: false,
            send_delay: None,
            fq_step: None,
            fq_step_interval: None,
            omit: None,
        }
    }
}

crate::apply::reads_through!(ParseState);

impl crate::apply::Gather for ParseState {
    type Error = super::CliError;

    /// iperf 2 says a bad value in one line, with no code.
    fn value_error(_: wirespeed_core::error::Code, msg: String) -> Self::Error {
        super::CliError::err(msg)
    }

    fn server_option(&mut self, spelled: &str) {
        self.server_opt = Some(spelled.to_string());
    }
}
