//! Server options: the role, its process, and the limits it enforces.

use std::path::PathBuf;
use std::time::Duration;

use super::{int_arg, perr, unit_err, value};
use crate::getopt::Occurrence;
use crate::iperf3::opt::Opt;
use crate::iperf3::state::ParseState;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::units::{parse_rate_iperf3, parse_seconds};

type Result = std::result::Result<(), Error>;

/// `-s`.
pub fn server(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.is_server = true;
    Ok(())
}

/// `-1`.
pub fn one_off(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.one_off = true;
    Ok(())
}

/// `-I file`.
pub fn pidfile(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.pidfile = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--server-bitrate-limit rate[/secs]`: the averaging window is 0.1 to 60 s.
pub fn bitrate_limit(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let (r, w) = match v.split_once('/') {
        Some((r, w)) => (r, Some(w)),
        None => (v, None),
    };
    let rate = parse_rate_iperf3(r).map_err(|_| unit_err(v))?;
    if rate < 0.0 {
        return Err(unit_err(v));
    }
    s.common.cfg.server.bitrate_limit = rate as u64;
    if let Some(w) = w {
        let secs = parse_seconds(w)
            .filter(|s| (0.1..=60.0).contains(s))
            .ok_or_else(|| perr(Code::TOTALINTERVAL))?;
        s.common.cfg.server.bitrate_limit_window = Duration::from_secs_f64(secs);
    }
    Ok(())
}

/// `--idle-timeout secs`: 1 s to a day.
pub fn idle_timeout(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let secs = int_arg(o, Code::IDLETIMEOUT)?;
    if !(1..=86400).contains(&secs) {
        return Err(perr(Code::IDLETIMEOUT));
    }
    s.common.cfg.server.idle_timeout = Some(Duration::from_secs(secs as u64));
    Ok(())
}

/// `--server-max-duration secs`: up to a day; 0 is no limit.
pub fn max_duration(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let secs = int_arg(o, Code::DURATION)?;
    if !(0..=86400).contains(&secs) {
        return Err(perr(Code::DURATION));
    }
    s.common.cfg.server.max_duration = (secs > 0).then(|| Duration::from_secs(secs as u64));
    Ok(())
}

/// A count between 1 and `max`, or the error naming the option's range.
fn count(o: &Occurrence<Opt>, name: &str, max: i64) -> std::result::Result<u32, Error> {
    int_arg(o, Code::NONE)
        .ok()
        .filter(|n| *n >= 1 && *n <= max)
        .map(|n| n as u32)
        .ok_or_else(|| Error::param_msg(Code::NONE, format!("{name} must be between 1 and {max}")))
}

/// `--max-tests n` (a wirespeed addition): tests served at once.
pub fn max_tests(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.max_tests = count(o, "--max-tests", 100_000)?;
    Ok(())
}

/// `--max-streams n` (a wirespeed addition): streams one test may open.
pub fn max_streams(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.max_streams = count(o, "--max-streams", 1_000_000)?;
    Ok(())
}
