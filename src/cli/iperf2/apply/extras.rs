//! wirespeed's own options (2.1.8 has none of these): JSON output, the
//! HTML report, the live status line and the UDP rate search, with the
//! iperf3 dialect's meanings.

use std::path::PathBuf;

use super::value;
use crate::cli::getopt::Occurrence;
use crate::cli::iperf2::CliError;
use crate::cli::iperf2::opt::Opt;
use crate::cli::iperf2::state::ParseState;
use crate::cli::values;

type Result = std::result::Result<(), CliError>;

/// `-J`, `--json`: one JSON document.
pub fn json(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.output.json = true;
    Ok(())
}

/// `--json-stream`: JSON lines as the test runs (implies `-J`).
pub fn json_stream(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.output.json = true;
    s.cfg.output.json_stream = true;
    Ok(())
}

/// `--report file.html`: an HTML report with plots when the test ends.
pub fn report(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.cfg.output.html_report = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--live`: a client's status line on a terminal.
pub fn live(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.output.live = true;
    Ok(())
}

/// `--udp-search`: find the highest UDP rate with acceptable loss.
pub fn udp_search(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.search.search = true;
    Ok(())
}

/// `--latency[=N]`: N round-trip probes per second beside the load.
pub fn latency(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.cfg.latency = Some(values::latency_rate(o.value.as_deref()).map_err(CliError::err)?);
    Ok(())
}

/// `--rpm`: the responsiveness test.
pub fn rpm(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.rpm = true;
    Ok(())
}

/// `--max-loss P[%]`: the loss the search accepts.
pub fn max_loss(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.search.max_loss = Some(values::max_loss(value(o)).map_err(CliError::err)?);
    Ok(())
}
