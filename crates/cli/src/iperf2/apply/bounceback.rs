//! Bounceback (request/response) options.

use std::time::Duration;

use super::{int_value, value};
use crate::getopt::Occurrence;
use crate::iperf2::CliError;
use crate::iperf2::opt::Opt;
use crate::iperf2::state::ParseState;
use wirespeed_core::config::Bounceback;
use wirespeed_core::units::parse_seconds;

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
        txdelay: Duration::ZERO,
        reply: None,
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
pub(crate) fn no_quickack(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.bb_quickack = false;
    s.bb_opts.push(o.spelled.clone());
    Ok(())
}

/// `--bounceback-congest[=up|down|bidir][,n]` (2.1.8) and its later name
/// `--working-load`: n TCP load flows (default 1, both ways) beside the
/// bounceback flow.
pub fn working_load(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = o.value.as_deref().unwrap_or("");
    let (dir, n) = v.split_once(',').unwrap_or((v, ""));
    let direction = match dir {
        "" | "bidir" => wirespeed_core::config::Direction::FullDuplex,
        "up" => wirespeed_core::config::Direction::Forward,
        "down" => wirespeed_core::config::Direction::Reverse,
        other => {
            return Err(CliError::err(format!(
                "Unrecognized value of {other} for bounceback-congestion, use 'up', 'down' or 'bidir'"
            )));
        }
    };
    let n = if n.is_empty() { 1 } else { int_value(&o.spelled, n)? };
    if !(1..=128).contains(&n) {
        return Err(CliError::err(format!(
            "{} flow count of {n} is out of range (1-128)",
            o.spelled
        )));
    }
    s.common.cfg.iperf2.working_load = Some((direction, n as u32));
    // 2.1.8's name is a bounceback option; 2.2's works with any test.
    if o.spelled.starts_with("--bounceback") {
        s.bb_opts.push(o.spelled.clone());
    }
    Ok(())
}

/// `--bounceback-txdelay secs`: the bounceback flow's wait after connecting.
pub fn txdelay(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let secs = parse_seconds(v)
        .filter(|s| (0.0..=3600.0).contains(s))
        .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized (0-3600 seconds)")))?;
    s.bb_txdelay = Duration::from_secs_f64(secs);
    s.bb_opts.push(sp.into());
    Ok(())
}

/// A 2.2 bounceback size (`--bounceback-request`, `--bounceback-reply`):
/// 64 bytes to 16 MiB.
fn bb_size(o: &Occurrence<Opt>) -> std::result::Result<u32, CliError> {
    let v = super::unit_value(&o.spelled, value(o))?;
    let (lo, hi) = (
        wirespeed_proto::iperf2::bounceback::BB_MIN_SIZE,
        wirespeed_proto::iperf2::bounceback::BB_MAX_SIZE,
    );
    if !(f64::from(lo)..=f64::from(hi)).contains(&v) {
        return Err(CliError::err(format!(
            "{} of {v} bytes is out of range ({lo} to {hi})",
            o.spelled
        )));
    }
    Ok(v as u32)
}

/// `--bounceback-request n` (iperf 2.2): the request's size.
pub fn request(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.bb_request = Some(bb_size(o)?);
    s.bb_opts.push(o.spelled.clone());
    Ok(())
}

/// `--bounceback-reply n` (iperf 2.2): the reply's size (the request's by
/// default).
pub fn reply(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.bb_reply = Some(bb_size(o)?);
    s.bb_opts.push(o.spelled.clone());
    Ok(())
}

/// iperf 2.2's `--working-load-cca algo`: the working load's congestion
/// control (checked against `--working-load` later).
pub fn working_load_cca(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = o.value.as_deref().unwrap_or("");
    // The kernel's names are at most 15 bytes (TCP_CA_NAME_MAX).
    if v.is_empty() || v.len() > 15 || !v.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(CliError::err(format!(
            "--working-load-cca value of '{v}' is not a congestion control name"
        )));
    }
    s.common.cfg.iperf2.load_cca = Some(v.to_string());
    Ok(())
}
