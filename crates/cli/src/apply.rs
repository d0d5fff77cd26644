//! The apply steps both dialects' tables share: an option that means the
//! same in iperf3's and iperf 2's command lines records the same thing
//! through the same function. Each dialect's parse state says how it is
//! reached ([`Gather`]) and words a bad value its own way (iperf3: a
//! parameter error with its code; iperf 2: its one line).

use std::path::PathBuf;

use super::getopt::Occurrence;
use super::values::{self, SearchRequest};
use wirespeed_core::config::TestConfig;
use wirespeed_core::error::Code;

/// What parsing either dialect's command line gathers alike: the
/// configuration being built and the options both tables have that the
/// cross-option checks need to know were given. Each dialect's parse state
/// holds one and reads through to it (`s.cfg`, `s.udp`).
#[derive(Debug)]
pub struct Gathered {
    /// The configuration so far.
    pub cfg: TestConfig,
    /// Warnings to print before the test.
    pub warnings: Vec<String>,
    /// `-c host` (without its `%dev`).
    pub client: Option<String>,
    /// `-u`.
    pub udp: bool,
    /// `-R`.
    pub reverse: bool,
    /// `--udp-search`, `--max-loss`.
    pub search: SearchRequest,
    /// `--ecn`: the ECN field's value (1 ECT(1), 2 ECT(0)), put into the
    /// TOS byte once every option is read, so `-S`/`--dscp` in any order
    /// keep their DSCP bits.
    pub ecn: Option<u8>,
}

impl Gathered {
    /// Nothing given yet, from the dialect's default configuration.
    pub fn new(cfg: TestConfig) -> Gathered {
        Gathered {
            cfg,
            warnings: Vec::new(),
            client: None,
            udp: false,
            reverse: false,
            search: SearchRequest::default(),
            ecn: None,
        }
    }

    /// Puts `--ecn`'s bits into the TOS byte. Refuses it for a TCP test:
    /// the kernel owns a TCP socket's ECN bits.
    pub fn settle_ecn(&mut self) -> Result<(), String> {
        let Some(e) = self.ecn else { return Ok(()) };
        if !self.udp && !self.search.search {
            return Err("--ecn sets the ECN field of UDP datagrams (-u); TCP's belongs to the kernel".into());
        }
        self.cfg.params.tos = (self.cfg.params.tos & !3) | e;
        Ok(())
    }
}

/// A dialect's parse state reads through to its `common` [`Gathered`].
macro_rules! reads_through {
    ($state:ty) => {
        impl std::ops::Deref for $state {
            type Target = $crate::apply::Gathered;

            fn deref(&self) -> &Self::Target {
                &self.common
            }
        }

        impl std::ops::DerefMut for $state {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.common
            }
        }
    };
}
pub(crate) use reads_through;

/// What a dialect's parse state gives the shared apply steps: what it
/// gathered alike, and its own way of wording a bad value.
pub trait Gather: std::ops::DerefMut<Target = Gathered> {
    /// The dialect's parse error.
    type Error;
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
    s.cfg.output.json = true;
    Ok(())
}

/// `--json-stream`: JSON lines as the test runs (implies `-J`).
pub fn json_stream<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg.output.json = true;
    s.cfg.output.json_stream = true;
    Ok(())
}

/// `--report file.html`: an HTML report with charts when the test ends.
pub fn report<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg.output.html_report = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--live`: a client's status line on a terminal.
pub fn live<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg.output.live = true;
    Ok(())
}

/// `--ecn ect0|ect1`: the ECN codepoint a UDP sender sets (the TOS byte's
/// two low bits; `-S`/`--dscp` set the rest).
pub fn ecn<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let v = value(o);
    s.ecn = Some(match v.to_ascii_lowercase().as_str() {
        "ect0" | "ect(0)" => 2,
        "ect1" | "ect(1)" => 1,
        _ => {
            return Err(S::value_error(
                Code::BADTOS,
                format!("--ecn value of '{v}' not recognized (ect0 or ect1)"),
            ));
        }
    });
    Ok(())
}

/// `--udp-search`: the highest UDP rate with acceptable loss.
pub fn udp_search<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.search.search = true;
    Ok(())
}

/// `--max-loss P[%]`: the loss the search accepts.
pub fn max_loss<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let p = values::max_loss(value(o)).map_err(|m| S::value_error(Code::UNITVAL, m))?;
    s.search.max_loss = Some(p);
    Ok(())
}

/// `--rpm`: the responsiveness test.
pub fn rpm<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg.rpm = true;
    Ok(())
}

/// `--latency[=N]`: N round-trip probes per second beside the load.
pub fn latency<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let n = values::latency_rate(o.value.as_deref()).map_err(|m| S::value_error(Code::UNITVAL, m))?;
    s.cfg.latency = Some(n);
    Ok(())
}

/// `-u`.
pub fn udp<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.udp = true;
    Ok(())
}

/// `-R`.
pub fn reverse<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.reverse = true;
    Ok(())
}

/// iperf3's `-C algo`, iperf 2's `-Z algo`: the congestion control.
pub fn congestion<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg.params.congestion = Some(value(o).to_string());
    Ok(())
}

/// `-D`: run as a daemon.
pub fn daemon<S: Gather, O>(s: &mut S, _: &Occurrence<O>) -> Step<S> {
    s.cfg.server.daemon = true;
    Ok(())
}

/// `--ui ADDR:PORT` (server): the web page watching the server's tests.
pub fn ui<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg.server.ui = Some(value(o).to_string());
    s.server_option("--ui");
    Ok(())
}

/// `--db PATH` (server, with `--ui`): where the page's history is kept.
pub fn db<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg.server.db = Some(value(o).to_string());
    s.server_option("--db");
    Ok(())
}

/// `--rpm-listen ADDR:PORT` (server): the networkQuality (RPM) server.
pub fn rpm_listen<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg.server.rpm_listen = Some(value(o).to_string());
    s.server_option("--rpm-listen");
    Ok(())
}

/// `--tls-cert FILE` (server, with `--rpm-listen`): its certificate (PEM).
pub fn tls_cert<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg.server.tls_cert = Some(PathBuf::from(value(o)));
    s.server_option("--tls-cert");
    Ok(())
}

/// `--tls-key FILE` (server, with `--tls-cert`): the certificate's key (PEM).
pub fn tls_key<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    s.cfg.server.tls_key = Some(PathBuf::from(value(o)));
    s.server_option("--tls-key");
    Ok(())
}

/// `--allow list` (server): only these clients.
pub fn allow<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let list =
        wirespeed_iperf::server::access::split_list("--allow", value(o)).map_err(|m| S::value_error(Code::NONE, m))?;
    s.cfg.server.allow.extend(list);
    s.server_option("--allow");
    Ok(())
}

/// `--deny list` (server): never these clients.
pub fn deny<S: Gather, O>(s: &mut S, o: &Occurrence<O>) -> Step<S> {
    let list =
        wirespeed_iperf::server::access::split_list("--deny", value(o)).map_err(|m| S::value_error(Code::NONE, m))?;
    s.cfg.server.deny.extend(list);
    s.server_option("--deny");
    Ok(())
}
