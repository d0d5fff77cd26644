//! Output options: what is reported, how, and where.

use std::path::PathBuf;
use std::time::Duration;

use super::value;
use crate::getopt::Occurrence;
use crate::iperf2::opt::Opt;
use crate::iperf2::state::ParseState;
use crate::iperf2::{CliError, MIN_INTERVAL};
use wirespeed_core::units::parse_seconds;

type Result = std::result::Result<(), CliError>;

/// `-e`.
pub fn enhanced(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.enhanced = true;
    Ok(())
}

/// `-f [abkmgtABKMGT]`.
pub fn format(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let c = v.chars().next().unwrap_or(' ');
    if v.chars().count() != 1 || !"abkmgtAKBMGT".contains(c) {
        return Err(CliError::err(format!(
            "format '{v}' not recognized (use one of a b k m g A B K M G)"
        )));
    }
    s.common.cfg.output.format = c;
    Ok(())
}

/// `-i secs`: fractions allowed, rounded up to a microsecond, at least
/// [`MIN_INTERVAL`] (with 2.1.8's warning).
pub fn interval(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    if v == "f" {
        return Err(CliError::err("per-frame intervals (-i f) are not implemented yet"));
    }
    let mut i = parse_seconds(v)
        .filter(|i| *i >= 0.0 && *i <= 86400.0)
        .ok_or_else(|| CliError::err(format!("{} value of '{v}' not recognized", o.spelled)))?;
    if i > 0.0 && i < MIN_INTERVAL {
        s.common.warnings.push(format!(
            "WARNING: interval too small, increasing to {:.4} milliseconds.",
            MIN_INTERVAL * 1e3
        ));
        i = MIN_INTERVAL;
    }
    // Rounded up to a whole microsecond, as 2.1.8 does.
    let us = (i * 1e6).ceil() as u64;
    s.common.cfg.output.interval = (us > 0).then(|| Duration::from_micros(us));
    s.interval_given = true;
    Ok(())
}

/// `-W` (2.1.8: "suggest window size", which 2.1.8 itself no longer
/// does): after a TCP test, say what limited the sender and suggest a `-w`
/// (wirespeed's window advice, iperf3's `-V`). Elsewhere it has no effect.
pub(crate) fn suggest_window(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.window_advice = true;
    Ok(())
}

/// `-m`.
pub fn print_mss(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.print_mss = true;
    Ok(())
}

/// `-o file`: the report goes there (truncated first, as 2.1.8).
pub fn output(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.logfile = Some(PathBuf::from(value(o)));
    s.common.cfg.output.logfile_truncate = true;
    Ok(())
}

/// `-x [CDMSV]`.
pub(crate) fn report_exclude(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    if v.is_empty() || v.chars().any(|c| !"CDMSVcdmsv".contains(c)) {
        return Err(CliError::err(format!(
            "report exclusion '{v}' not recognized (use letters of CDMSV)"
        )));
    }
    s.common.cfg.output.exclude = v.to_ascii_uppercase();
    Ok(())
}

/// `-y C`: CSV.
pub(crate) fn report_style(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    if !v.eq_ignore_ascii_case("c") {
        return Err(CliError::err(format!("report style '{v}' not recognized (only C)")));
    }
    s.common.cfg.output.csv = true;
    Ok(())
}

/// `--sum-only`.
pub fn sum_only(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.sum_only = true;
    Ok(())
}

/// `--hide-ips`.
pub fn hide_ips(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.hide_ips = true;
    Ok(())
}

/// `--histograms[=binwidth[u|m],bins,ci_lower,ci_upper]` (a server's option,
/// checked later).
pub fn histograms(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    wirespeed_core::stats::histogram::HistogramSpec::parse(o.value.as_deref()).map_err(CliError::err)?;
    s.histograms = Some(o.value.clone().unwrap_or_default());
    Ok(())
}
