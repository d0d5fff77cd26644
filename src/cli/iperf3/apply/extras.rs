//! wirespeed's own options (iperf3 has none of these).

use std::path::PathBuf;

use super::value;
use crate::cli::getopt::Occurrence;
use crate::cli::iperf3::opt::Opt;
use crate::cli::iperf3::state::ParseState;
use crate::cli::values;
use crate::error::{Code, Error};

type Result = std::result::Result<(), Error>;

/// `--loopback`: a client against a built-in server.
pub fn loopback(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.loopback = true;
    Ok(())
}

/// `--live`: a status line on a terminal.
pub fn live(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.output.live = true;
    Ok(())
}

/// `--csv`: iperf 2's `-y C` rows instead of text.
pub fn csv(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.output.csv = true;
    Ok(())
}

/// `--report file.html`.
pub fn report(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.cfg.output.html_report = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--udp-search`.
pub fn udp_search(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.search.search = true;
    Ok(())
}

/// `--rpm`: the responsiveness test.
pub fn rpm(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.rpm = true;
    Ok(())
}

/// `--latency[=N]`: N round-trip probes per second beside the load.
pub fn latency(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let n = values::latency_rate(o.value.as_deref()).map_err(|m| Error::param_msg(Code::UNITVAL, m))?;
    s.cfg.latency = Some(n);
    Ok(())
}

/// `--max-loss P[%]`.
pub fn max_loss(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let p = values::max_loss(value(o)).map_err(|m| Error::param_msg(Code::UNITVAL, m))?;
    s.search.max_loss = Some(p);
    Ok(())
}

/// `--metrics addr:port` (server).
pub fn metrics(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.cfg.server.metrics = Some(value(o).to_string());
    Ok(())
}

/// `--ui ADDR:PORT` (server).
pub fn ui(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.cfg.server.ui = Some(value(o).to_string());
    Ok(())
}

/// `--allow list` (server).
pub fn allow(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let list = crate::server::access::split_list("--allow", value(o)).map_err(|m| Error::param_msg(Code::NONE, m))?;
    s.cfg.server.allow.extend(list);
    Ok(())
}

/// `--deny list` (server).
pub fn deny(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let list = crate::server::access::split_list("--deny", value(o)).map_err(|m| Error::param_msg(Code::NONE, m))?;
    s.cfg.server.deny.extend(list);
    Ok(())
}
