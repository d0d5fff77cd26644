//! Server options: the role, its process, whom it serves, and its side of
//! the sockets.

use std::time::Duration;

use super::{int_value, unit_value, value};
use crate::getopt::Occurrence;
use crate::iperf2::opt::Opt;
use crate::iperf2::state::ParseState;
use crate::iperf2::{CliError, tos_value};

use wirespeed_core::units::{parse_rate_iperf3, parse_seconds};

type Result = std::result::Result<(), CliError>;

/// `-s`.
pub fn server(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.server = true;
    Ok(())
}

/// `-1`.
pub fn single_client(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.single_client = true;
    Ok(())
}

/// `-H host`: the SSM source (checked with `-B` later).
pub fn ssm_host(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.ssm_host = Some(value(o).to_string());
    Ok(())
}

/// `--tcp-rx-window-clamp bytes`: TCP_WINDOW_CLAMP.
pub(crate) fn tcp_rx_window_clamp(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let c = unit_value(sp, v)?;
    if !(1.0..=i32::MAX as f64).contains(&c) {
        return Err(CliError::err(format!("{sp} value of '{v}' is out of range")));
    }
    s.clamp = Some(c as u32);
    Ok(())
}

/// `--tos-override tos`: what the server sends back with.
pub fn tos_override(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let t = tos_value(v).ok_or_else(|| CliError::err(format!("{} value of '{v}' not recognized", o.spelled)))?;
    s.tos_override = Some(t);
    Ok(())
}

/// `--server-bitrate-limit rate[/secs]` (a wirespeed addition, the iperf3
/// server's option): a running test's average rate over the window (0.1
/// to 60 s, default 5 s) at most `rate` (iperf3's rate syntax).
pub fn bitrate_limit(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let bad = || CliError::err(format!("{}: invalid rate '{v}'", o.spelled));
    let (r, w) = match v.split_once('/') {
        Some((r, w)) => (r, Some(w)),
        None => (v, None),
    };
    let rate = parse_rate_iperf3(r).map_err(|_| bad())?;
    if !(0.0..=u64::MAX as f64).contains(&rate) {
        return Err(bad());
    }
    s.common.cfg.server.bitrate_limit = rate as u64;
    if let Some(w) = w {
        let secs = parse_seconds(w)
            .filter(|s| (0.1..=60.0).contains(s))
            .ok_or_else(|| CliError::err(format!("{}: the window must be 0.1 to 60 seconds", o.spelled)))?;
        s.common.cfg.server.bitrate_limit_window = Duration::from_secs_f64(secs);
    }
    s.server_opt = Some("--server-bitrate-limit".into());
    Ok(())
}

/// `--server-max-duration secs` (a wirespeed addition, the iperf3 server's
/// option): a header asking for longer is refused; up to a day, 0 is none.
pub fn max_duration(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let secs = int_value(&o.spelled, value(o))?;
    if !(0..=86400).contains(&secs) {
        return Err(CliError::err(format!("{} must be between 0 and 86400", o.spelled)));
    }
    s.common.cfg.server.max_duration = (secs > 0).then(|| Duration::from_secs(secs as u64));
    s.server_opt = Some("--server-max-duration".into());
    Ok(())
}

/// `--rcv-timeout ms` (a wirespeed addition, the iperf3 server's option):
/// a test that receives nothing, or moves nothing, this long is ended;
/// 100 ms to a day.
pub fn rcv_timeout(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let ms = int_value(&o.spelled, value(o))?;
    if !(100..=86_400_000).contains(&ms) {
        return Err(CliError::err(format!(
            "{} must be between 100 and 86400000 (ms)",
            o.spelled
        )));
    }
    s.common.cfg.net.rcv_timeout = Some(Duration::from_millis(ms as u64));
    s.server_opt = Some("--rcv-timeout".into());
    Ok(())
}

/// `--max-tests n` (a wirespeed addition): clients served at once; one
/// more is dropped with `(server is busy)`. Without it, no limit, as 2.1.8.
pub fn max_tests(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let n = int_value(&o.spelled, value(o))?;
    if !(1..=100_000).contains(&n) {
        return Err(CliError::err(format!("{} must be between 1 and 100000", o.spelled)));
    }
    s.common.cfg.server.max_tests = n as u32;
    s.server_opt = Some("--max-tests".into());
    Ok(())
}
