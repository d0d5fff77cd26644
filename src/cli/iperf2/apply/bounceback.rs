//! Bounceback (request/response) options.

use std::time::Duration;

use super::{int_value, value};
use crate::cli::getopt::Occurrence;
use crate::cli::iperf2::CliError;
use crate::cli::iperf2::state::ParseState;
use crate::cli::iperf2::table::Opt;
use crate::cli::units::parse_seconds;
use crate::config::Bounceback;

type Result = std::result::Result<(), CliError>;

/// `--bounceback[=n]`: bursts of n messages (default 10).
pub fn bounceback(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let count = match &o.value {
        Some(n) => int_value(&o.spelled, n)?,
        None => 10,
    };
    if !(1..=1_000_000).contains(&count) {
        return Err(CliError::err(format!(
            "--bounceback count of {count} is out of range (1-1000000)"
        )));
    }
    s.bounceback = Some(Bounceback {
        count: count as u32,
        period: Duration::ZERO,
        hold_us: 0,
        quickack: true,
    });
    Ok(())
}

/// `--bounceback-hold ms`: the server's hold before replying, up to 60 s.
pub fn hold(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let ms = parse_seconds(v)
        .filter(|ms| (0.0..=60_000.0).contains(ms))
        .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized (0-60000 ms)")))?;
    s.bb_hold = (ms * 1e3).round() as u32;
    s.bb_opts.push(sp.into());
    Ok(())
}

/// `--bounceback-period secs`: between bursts, at most 60 s.
pub fn period(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let secs = parse_seconds(v)
        .filter(|s| *s >= 0.0)
        .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized")))?;
    // wirespeed's server gives up on a bounceback client that is
    // silent for 120 s.
    if secs > 60.0 {
        return Err(CliError::err(format!("{sp} of {v} s is too long (at most 60 s)")));
    }
    s.bb_period = Duration::from_secs_f64(secs);
    s.bb_opts.push(sp.into());
    Ok(())
}

/// `--bounceback-no-quickack`.
pub fn no_quickack(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.bb_quickack = false;
    s.bb_opts.push(o.spelled.clone());
    Ok(())
}
