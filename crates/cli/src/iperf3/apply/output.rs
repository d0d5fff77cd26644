//! Output options: what is printed, how, and where.

use std::path::PathBuf;
use std::time::Duration;

use super::{perr, value};
use crate::getopt::Occurrence;
use crate::iperf3::opt::Opt;
use crate::iperf3::state::ParseState;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::units::{parse_int, parse_seconds};

type Result = std::result::Result<(), Error>;

/// `-f [kmgtKMGT]`.
pub fn format(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let c = v.chars().next().unwrap_or(' ');
    if v.len() != 1 || !"kmgtKMGT".contains(c) {
        return Err(perr(Code::BADFORMAT));
    }
    s.common.cfg.output.format = c;
    s.format_given = true;
    Ok(())
}

/// `-i secs`: 0 turns periodic reports off, else 0.1 to 60.
pub fn interval(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let i = parse_seconds(value(o)).ok_or_else(|| perr(Code::INTERVAL))?;
    if i != 0.0 && !(0.1..=60.0).contains(&i) {
        return Err(perr(Code::INTERVAL));
    }
    s.common.cfg.output.interval = (i > 0.0).then(|| Duration::from_secs_f64(i));
    Ok(())
}

/// `-V`: more detail, and the window advice.
pub fn verbose(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.verbose = true;
    s.common.cfg.output.window_advice = true;
    Ok(())
}

/// `--json-stream-full-output`.
pub fn json_stream_full(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.json_stream_full = true;
    Ok(())
}

/// `--logfile file` (appended to).
pub fn logfile(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.logfile = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--forceflush`.
pub fn forceflush(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.forceflush = true;
    Ok(())
}

/// `--timestamps[=format]` (strftime; `%c ` when not given).
pub fn timestamps(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.timestamps = Some(o.value.clone().unwrap_or_else(|| "%c ".to_string()));
    Ok(())
}

/// `-d[=level]`: 1 to 4, 4 when not given.
pub fn debug(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let lvl = match &o.value {
        None => 4,
        Some(v) => parse_int(v, false)
            .filter(|l| (1..=4).contains(l))
            .ok_or_else(|| Error::param_msg(Code::NONE, format!("invalid debug level '{v}' (valid levels are 1-4)")))?
            as u8,
    };
    s.common.cfg.output.debug = lvl;
    Ok(())
}

/// `-T str`: a prefix for every output line, also sent to the server.
pub fn title(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.title = Some(value(o).to_string());
    s.common.cfg.params.title = Some(value(o).to_string());
    Ok(())
}
