//! The apply steps both dialects' tables share: an option that means the
//! same in iperf3's and iperf 2's command lines records the same thing
//! through the same function. Each dialect's parse state says how it is
//! reached ([`Gather`]) and words a bad value its own way (iperf3: a
//! parameter error with its code; iperf 2: its one line).

use std::path::PathBuf;

use super::getopt::Occurrence;
use super::values::{self, SearchRequest};
use crate::config::TestConfig;
use crate::error::Code;

/// What a dialect's parse state gives the shared apply steps.
pub trait Gather {
    /// The dialect's parse error.
    type Error;
    /// The configuration being built.
    fn cfg(&mut self) -> &mut TestConfig;
    /// `--udp-search`, `--max-loss`.
    fn search(&mut self) -> &mut SearchRequest;
    /// `-u` was given.
    fn set_udp(&mut self);
    /// `-R` was given.
    fn set_reverse(&mut self);
    /// A bad value, in the dialect's words (`code`: iperf3's error code).
    fn value_error(code: Code, msg: String) -> Self::Error;
    /// A server's option was given (iperf 2 warns a client that gives one).
    fn server_option(&mut self, _spelled: &str) {}
}

type Step<S> = Result<(), <S as Gather>::Error>;

/// The option's value (empty for a flag).
fn value<O>(o: &Occurrence<O>) -> &str {
    o.value.as_deref().unwrap_or("")
}

/// `-J`, `--json`: one JSON document.
pub fn json<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg().output.json = true;
    Ok(())
}

/// `--json-stream`: JSON lines as the test runs (implies `-J`).
pub fn json_stream<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg().output.json = true;
    s.cfg().output.json_stream = true;
    Ok(())
}

/// `--report file.html`: an HTML report with charts when the test ends.
pub fn report<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg().output.html_report = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--live`: a client's status line on a terminal.
pub fn live<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg().output.live = true;
    Ok(())
}

/// `--udp-search`: the highest UDP rate with acceptable loss.
pub fn udp_search<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.search().search = true;
    Ok(())
}

/// `--max-loss P[%]`: the loss the search accepts.
pub fn max_loss<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let p = values::max_loss(value(o)).map_err(|m| S::value_error(Code::UNITVAL, m))?;
    s.search().max_loss = Some(p);
    Ok(())
}

/// `--rpm`: the responsiveness test.
pub fn rpm<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg().rpm = true;
    Ok(())
}

/// `--latency[=N]`: N round-trip probes per second beside the load.
pub fn latency<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let n = values::latency_rate(o.value.as_deref()).map_err(|m| S::value_error(Code::UNITVAL, m))?;
    s.cfg().latency = Some(n);
    Ok(())
}

/// `-u`.
pub fn udp<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.set_udp();
    Ok(())
}

/// `-R`.
pub fn reverse<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.set_reverse();
    Ok(())
}

/// iperf3's `-C algo`, iperf 2's `-Z algo`: the congestion control.
pub fn congestion<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg().params.congestion = Some(value(o).to_string());
    Ok(())
}

/// `-D`: run as a daemon.
pub fn daemon<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg().server.daemon = true;
    Ok(())
}

/// `--ui ADDR:PORT` (server): the web page watching the server's tests.
pub fn ui<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg().server.ui = Some(value(o).to_string());
    s.server_option("--ui");
    Ok(())
}

/// `--allow list` (server): only these clients.
pub fn allow<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let list = crate::server::access::split_list("--allow", value(o)).map_err(|m| S::value_error(Code::NONE, m))?;
    s.cfg().server.allow.extend(list);
    s.server_option("--allow");
    Ok(())
}

/// `--deny list` (server): never these clients.
pub fn deny<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let list = crate::server::access::split_list("--deny", value(o)).map_err(|m| S::value_error(Code::NONE, m))?;
    s.cfg().server.deny.extend(list);
    s.server_option("--deny");
    Ok(())
}
