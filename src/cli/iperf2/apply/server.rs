//! Server options: the role, its process, whom it serves, and its side of
//! the sockets.

use super::{int_value, unit_value, value};
use crate::cli::getopt::Occurrence;
use crate::cli::iperf2::opt::Opt;
use crate::cli::iperf2::state::ParseState;
use crate::cli::iperf2::{CliError, tos_value};

type Result = std::result::Result<(), CliError>;

/// `-s`.
pub fn server(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.server = true;
    Ok(())
}

/// `-1`.
pub fn single_client(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.cfg.iperf2.single_client = true;
    Ok(())
}

/// `-H host`: the SSM source (checked with `-B` later).
pub fn ssm_host(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.cfg.iperf2.ssm_host = Some(value(o).to_string());
    Ok(())
}

/// `--tcp-rx-window-clamp bytes`: TCP_WINDOW_CLAMP.
pub fn tcp_rx_window_clamp(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
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

/// `--max-tests n` (a wirespeed addition): clients served at once; one
/// more is dropped with `(server is busy)`. Without it, no limit, as 2.1.8.
pub fn max_tests(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let n = int_value(&o.spelled, value(o))?;
    if !(1..=100_000).contains(&n) {
        return Err(CliError::err(format!("{} must be between 1 and 100000", o.spelled)));
    }
    s.cfg.server.max_tests = n as u32;
    s.server_opt = Some("--max-tests".into());
    Ok(())
}
