//! `--udp-search`: the highest UDP rate a path carries with acceptable loss.
//!
//! The tutorials' method, automated: run a short UDP test, raise `-b` while
//! the loss stays under the threshold, lower it when it does not. The rate
//! goes up by doubling until a probe loses too much (or down by halving if
//! the first one already does), then bisects between the highest good and
//! the lowest bad rate until they are within [`RESOLUTION`] of each other.
//!
//! [`Searcher`] is the pure part (which rate to try next, given the verdicts
//! so far) and is unit-tested against synthetic paths; [`run`] drives it with
//! real probes, each a complete client test whose numbers come from its
//! `End` event, the same numbers `-J` would print.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::config::{Direction, EndCondition, Protocol, TestConfig};
use crate::error::{Code, Error, Kind};
use crate::events::Event;
use crate::report::{Output, Recorder, Reporter};

/// Search settings (`--udp-search [--max-loss P%]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchOptions {
    /// Highest acceptable loss, percent of the datagrams sent.
    pub max_loss_percent: f64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            max_loss_percent: DEFAULT_MAX_LOSS,
        }
    }
}

/// Between two probes against an iperf 2 server.
const IPERF2_PAUSE: Duration = Duration::from_millis(400);

/// `--max-loss` when not given, percent.
pub const DEFAULT_MAX_LOSS: f64 = 0.1;
/// Length of one probe when `-t` is not given.
pub const DEFAULT_PROBE: Duration = Duration::from_secs(2);
/// First rate tried when `-b` is not given, bit/s (all streams together).
pub const DEFAULT_START: u64 = 1_000_000;
/// The search stops when the highest good and the lowest bad rate are
/// closer than this fraction.
pub const RESOLUTION: f64 = 0.02;
/// Highest rate the search asks for, bit/s.
pub const CEILING: u64 = 400_000_000_000;
/// Most rates one search tries (a rate that loses too much is probed twice).
pub const MAX_PROBES: usize = 40;
/// A sender that reaches less than this fraction of the asked rate is
/// the limit, not the path.
const SENDER_SHORTFALL: f64 = 0.97;

/// Parses `--max-loss`: a percentage, with or without `%`.
pub fn parse_max_loss(s: &str) -> Option<f64> {
    let v: f64 = s.trim().trim_end_matches('%').trim().parse().ok()?;
    (v.is_finite() && (0.0..100.0).contains(&v)).then_some(v)
}

/// What one probe measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Rate asked of all streams together, bit/s.
    pub rate: u64,
    /// Rate the sender reached, bit/s.
    pub sent_bps: f64,
    /// Rate the receiver counted, bit/s.
    pub received_bps: f64,
    /// Datagrams the receiver expected (its highest sequence numbers).
    pub packets: i64,
    /// Datagrams lost.
    pub lost: i64,
    /// Loss, percent.
    pub lost_percent: f64,
    /// Receiver's jitter, ms.
    pub jitter_ms: f64,
    /// The sender fell well short of the asked rate.
    pub sender_limited: bool,
    /// Loss within the threshold and the sender reached the rate.
    pub ok: bool,
    /// This probe re-checks a rate whose first probe lost too much.
    pub retry: bool,
    /// The loss was within the threshold (whatever rate was reached).
    pub loss_ok: bool,
}

/// Why the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Good and bad rates are within the resolution.
    Converged,
    /// Every rate up to the ceiling was good.
    Ceiling,
    /// The sender could not reach higher rates: the answer is the sender's.
    SenderLimited,
    /// Even the lowest rate lost too much.
    NoGoodRate,
    /// The probe budget ran out.
    ProbeLimit,
}

/// The pure search: which rate to try next.
#[derive(Debug, Clone)]
pub struct Searcher {
    start: u64,
    floor: u64,
    /// Highest rate that was good.
    good: Option<u64>,
    /// Lowest rate that was bad.
    bad: Option<u64>,
    sender_limited: bool,
    probes: usize,
}

impl Searcher {
    /// A search starting at `start` bit/s that never goes below `floor`.
    pub fn new(start: u64, floor: u64) -> Searcher {
        let floor = floor.max(1);
        Searcher {
            start: start.clamp(floor, CEILING),
            floor,
            good: None,
            bad: None,
            sender_limited: false,
            probes: 0,
        }
    }

    /// The next rate to probe, or why the search is over.
    pub fn next(&self) -> Result<u64, Finish> {
        if self.probes >= MAX_PROBES {
            return Err(Finish::ProbeLimit);
        }
        match (self.good, self.bad) {
            (None, None) => Ok(self.start),
            (Some(g), None) => {
                if g >= CEILING {
                    Err(Finish::Ceiling)
                } else {
                    Ok(g.saturating_mul(2).min(CEILING))
                }
            }
            (None, Some(b)) => {
                let down = b / 2;
                if down < self.floor {
                    Err(Finish::NoGoodRate)
                } else {
                    Ok(down)
                }
            }
            (Some(g), Some(b)) => {
                if (b as f64) <= g as f64 * (1.0 + RESOLUTION) {
                    Err(if self.sender_limited {
                        Finish::SenderLimited
                    } else {
                        Finish::Converged
                    })
                } else {
                    Ok(g + (b - g) / 2)
                }
            }
        }
    }

    /// Records a probe of `rate`: whether its loss was within the threshold
    /// and, for a sender that fell short of `rate`, the rate it did reach
    /// (which then bounds the search).
    pub fn record(&mut self, rate: u64, loss_ok: bool, reached: Option<u64>) {
        self.probes += 1;
        match reached {
            Some(r) if loss_ok => {
                // The sender is the limit: what it reached was good, the
                // asked rate is out of reach.
                self.sender_limited = true;
                if self.good.is_none_or(|g| r > g) {
                    self.good = Some(r.min(rate));
                }
                self.mark_bad(rate);
            }
            _ if loss_ok => {
                if self.good.is_none_or(|g| rate > g) {
                    self.good = Some(rate);
                }
            }
            _ => self.mark_bad(rate),
        }
        // A good rate above a bad one (noise): the bad one is not the limit.
        if let (Some(g), Some(b)) = (self.good, self.bad)
            && g >= b
        {
            self.bad = None;
        }
    }

    fn mark_bad(&mut self, rate: u64) {
        if self.bad.is_none_or(|b| rate < b) {
            self.bad = Some(rate);
        }
    }

    /// The highest good rate so far.
    pub fn best(&self) -> Option<u64> {
        self.good
    }
}

/// Checks the options a search cannot honour; returns a parameter error
/// naming the first one. `given` says which were given on the command line.
pub fn check_config(cfg: &TestConfig, interval_given: bool) -> Result<(), Error> {
    let no = |what: &str| Error::param_msg(Code::UNIMP, format!("--udp-search cannot be used with {what}"));
    if cfg.params.protocol != Protocol::Udp {
        return Err(no("a protocol other than UDP"));
    }
    if cfg.params.direction == Direction::Bidir {
        return Err(no("--bidir (it measures one direction)"));
    }
    match cfg.params.end {
        EndCondition::Bytes(_) => return Err(no("-n (each probe runs for -t seconds)")),
        EndCondition::Blocks(_) => return Err(no("-k (each probe runs for -t seconds)")),
        EndCondition::Time(_) => {}
    }
    if cfg.params.pps.is_some() {
        return Err(no("a packet rate (-b Npps); give the start rate in bits/s"));
    }
    if cfg.file.is_some() {
        return Err(no("-F"));
    }
    if interval_given {
        return Err(no("-i (it prints one line per probe)"));
    }
    if cfg.params.get_server_output {
        return Err(no("--get-server-output"));
    }
    if cfg.output.html_report.is_some() {
        return Err(no("--report"));
    }
    if cfg.output.live {
        return Err(no("--live"));
    }
    Ok(())
}

/// Runs one client test with the given configuration and reporter.
type ProbeFn<'a> = dyn FnMut(&TestConfig, &mut Reporter) -> Result<(), Error> + 'a;

/// Runs the search against a server, printing each probe and the answer
/// on `out` (text, `-J` document or `--json-stream` lines). `probe` runs one
/// client test (against `host:port`, or the loopback server).
pub fn run(
    cfg: &TestConfig,
    opts: SearchOptions,
    out: &Output,
    signal: &Arc<AtomicUsize>,
    probe: &mut ProbeFn<'_>,
) -> Result<(), Error> {
    let streams = cfg.params.streams.max(1) as u64;
    let secs = match cfg.params.end {
        EndCondition::Time(t) if !t.is_zero() => t,
        _ => DEFAULT_PROBE,
    };
    let len = cfg.params.block_len.unwrap_or(crate::config::DEFAULT_UDP_BLOCK) as f64;
    // A probe must carry enough datagrams per stream for its loss to mean
    // something: at least 20.
    let floor = ((20.0 * len * 8.0 / secs.as_secs_f64()).ceil() as u64 * streams).max(1000);
    let start = if cfg.params.rate > 0 {
        cfg.params.rate.saturating_mul(streams)
    } else {
        DEFAULT_START
    };
    // Every probe logs in: ask for the password once, not once a probe.
    let owned;
    let mut cfg = cfg;
    if cfg.auth.username.is_some() && cfg.auth.password.is_none() {
        let p = crate::auth::password(&|| signal.load(Relaxed) != 0)?;
        let mut c = cfg.clone();
        c.auth.password = Some(crate::config::Secret(p));
        owned = c;
        cfg = &owned;
    }
    let mut search = Searcher::new(start, floor);
    let printer = Printer::new(cfg, opts, secs, out.clone());
    printer.begin();
    let mut probes: Vec<Probe> = Vec::new();
    let finish = loop {
        let rate = match search.next() {
            Ok(r) => r,
            Err(f) => break f,
        };
        // A probe that loses too much is run once more before the rate is
        // called bad: a stall on a busy host (the sender repays it at twice
        // the rate) or a burst of other traffic can cost a good rate its
        // probe, and one spurious failure would cap the whole search. Loss
        // only ever adds up, so either run being clean means the path
        // carries the rate.
        let mut verdict = None;
        for retry in [false, true] {
            // iperf 2.1.8's UDP server crashes (SIGSEGV) when a test
            // starts within ~0.2 s of the previous one (2.2.1 does not):
            // probes of the iperf 2 dialect leave it a pause.
            if cfg.dialect == crate::config::Dialect::Iperf2 && !probes.is_empty() {
                std::thread::sleep(IPERF2_PAUSE);
            }
            let mut p = match one_probe(cfg, rate, streams, secs, opts, signal, probe) {
                Ok(p) => p,
                Err(e) => {
                    printer.fail(&probes, &e);
                    return Err(e);
                }
            };
            p.retry = retry;
            printer.probe(probes.len() + 1, &p);
            let again = !p.ok && !p.sender_limited && !retry;
            verdict = Some((p.loss_ok, p.sender_limited.then_some(p.sent_bps as u64)));
            probes.push(p);
            if !again {
                break;
            }
        }
        if let Some((ok, reached)) = verdict {
            search.record(rate, ok, reached);
        }
    };
    let best = search.best().and_then(|b| {
        // The probe that established the answer (the sender-limited case
        // records what was reached, not what was asked).
        probes
            .iter()
            .rfind(|p| (p.ok && p.rate == b) || (p.sender_limited && p.sent_bps as u64 == b))
            .cloned()
            .map(|p| (b, p))
    });
    match (finish, best) {
        (Finish::NoGoodRate, _) | (_, None) => {
            let lowest = probes.iter().map(|p| p.rate).min().unwrap_or(start);
            let e = Error::msg(
                Code::UNIMP,
                format!(
                    "no rate with loss under {}% was found: {} still lost too much",
                    trim_num(opts.max_loss_percent),
                    rate_text(lowest as f64, 'a')
                ),
            );
            printer.fail(&probes, &e);
            Err(e)
        }
        (finish, Some((rate, p))) => {
            printer.answer(&probes, rate, &p, finish);
            Ok(())
        }
    }
}

fn one_probe(
    cfg: &TestConfig,
    rate: u64,
    streams: u64,
    secs: Duration,
    opts: SearchOptions,
    signal: &Arc<AtomicUsize>,
    probe: &mut ProbeFn<'_>,
) -> Result<Probe, Error> {
    let mut pc = cfg.clone();
    pc.params.rate = (rate / streams).max(1);
    pc.params.end = EndCondition::Time(secs);
    pc.output.json = false;
    pc.output.json_stream = false;
    pc.output.interval = None;
    pc.search = None;
    let mut attempt = 0;
    loop {
        let rec = Recorder::default();
        let mut reporter = Reporter::new();
        reporter.add(Box::new(rec.clone()));
        let r = probe(&pc, &mut reporter);
        if signal.load(Relaxed) != 0 {
            return Err(Error {
                kind: Kind::Interrupt,
                detail: Some("the search was interrupted by a signal".into()),
                ..Error::new(Code::CLIENTTERM)
            });
        }
        match r {
            Err(e) if e.code == Code::ACCESSDENIED && attempt < 10 => {
                // A one-test-at-a-time server (iperf3) may still be
                // finishing the previous probe.
                attempt += 1;
                std::thread::sleep(Duration::from_millis(300));
                continue;
            }
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        let events = rec.events.lock().map(|e| e.clone()).unwrap_or_default();
        let Some(end) = events.iter().rev().find_map(|e| match e {
            Event::End(s) => Some(s.clone()),
            _ => None,
        }) else {
            return Err(Error::msg(Code::RECVRESULTS, "a probe ended without results"));
        };
        let d = &end.forward;
        let Some(seen) = received(&end, &events, cfg.dialect) else {
            let hint = if cfg.dialect == crate::config::Dialect::Iperf2 {
                " (an iperf 2 server must run with -u, and not with --no-udp-fin)"
            } else {
                ""
            };
            return Err(Error::msg(
                Code::RECVRESULTS,
                format!("the server did not report the probe's loss{hint}"),
            ));
        };
        let lost_percent = if seen.packets > 0 {
            100.0 * seen.lost as f64 / seen.packets as f64
        } else {
            100.0
        };
        let sent_bps = d.sent.bits_per_second;
        let sender_limited = sent_bps < rate as f64 * SENDER_SHORTFALL;
        let loss_ok = seen.packets > 0 && lost_percent <= opts.max_loss_percent;
        return Ok(Probe {
            rate,
            sent_bps,
            received_bps: seen.bits_per_second,
            packets: seen.packets,
            lost: seen.lost,
            lost_percent,
            jitter_ms: seen.jitter_ms,
            sender_limited,
            ok: loss_ok && !sender_limited,
            retry: false,
            loss_ok,
        });
    }
}

/// What the receiver saw of a probe.
struct Received {
    packets: i64,
    lost: i64,
    jitter_ms: f64,
    bits_per_second: f64,
}

/// The receiver's side of a probe: from the results exchange (iperf3),
/// or from the UDP server's reports (iperf 2); `None` if it did not say.
fn received(end: &crate::events::Summary, events: &[Event], dialect: crate::config::Dialect) -> Option<Received> {
    let reports: Vec<&crate::events::StreamSample> = events
        .iter()
        .filter_map(|e| match e {
            Event::PeerReport(crate::events::PeerReport::Report(l)) => Some(&**l),
            _ => None,
        })
        .collect();
    // An iperf 2 sender hears of loss only from a server report: without
    // one (a server that is gone, or not listening for UDP), nothing is
    // known, which is not 100% loss.
    let missing = events
        .iter()
        .any(|e| matches!(e, Event::PeerReport(crate::events::PeerReport::Missing { .. })));
    if missing || (dialect == crate::config::Dialect::Iperf2 && reports.is_empty()) {
        return None;
    }
    if !reports.is_empty() {
        let udp: Vec<_> = reports.iter().filter_map(|l| l.udp).collect();
        return Some(Received {
            packets: udp.iter().map(|u| u.packets).sum(),
            lost: udp.iter().map(|u| u.lost.max(0)).sum(),
            jitter_ms: udp.iter().map(|u| u.jitter_ms).sum::<f64>() / udp.len().max(1) as f64,
            bits_per_second: reports.iter().map(|l| l.bits_per_second).sum(),
        });
    }
    let udp = end.forward.udp?;
    Some(Received {
        packets: udp.packets,
        lost: udp.lost?,
        jitter_ms: udp.jitter_ms,
        bits_per_second: end.forward.received.bits_per_second,
    })
}

/// A loss for the search's own lines: two significant digits like
/// iperf's, but never "1e+02".
fn percent(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        crate::json::format_g(v, 2)
    }
}

fn trim_num(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(crate) fn rate_text(bps: f64, fmt: char) -> String {
    format!("{}s/sec", crate::cli::units::format_iperf3(bps / 8.0, fmt))
}

fn probe_json(p: &Probe) -> Value {
    json!({
        "bits_per_second": p.rate,
        "sent_bits_per_second": p.sent_bps,
        "received_bits_per_second": p.received_bps,
        "packets": p.packets,
        "lost_packets": p.lost,
        "lost_percent": p.lost_percent,
        "jitter_ms": p.jitter_ms,
        "sender_limited": p.sender_limited,
        "ok": p.ok,
        "retry": p.retry,
    })
}

fn finish_name(f: Finish) -> &'static str {
    match f {
        Finish::Converged => "converged",
        Finish::Ceiling => "ceiling",
        Finish::SenderLimited => "sender_limited",
        Finish::NoGoodRate => "no_good_rate",
        Finish::ProbeLimit => "probe_limit",
    }
}

/// Prints the search in the configured format.
struct Printer {
    out: Output,
    fmt: char,
    title: String,
    json: bool,
    stream: bool,
    head: Value,
}

impl Printer {
    fn new(cfg: &TestConfig, opts: SearchOptions, secs: Duration, out: Output) -> Printer {
        let head = json!({
            "max_loss_percent": opts.max_loss_percent,
            "probe_seconds": secs.as_secs_f64(),
            "streams": cfg.params.streams.max(1),
            "blksize": cfg.params.block_len.unwrap_or(crate::config::DEFAULT_UDP_BLOCK),
            "reverse": cfg.params.direction == Direction::Reverse,
            "resolution": RESOLUTION,
        });
        Printer {
            out,
            fmt: match cfg.output.format {
                'k' | 'm' | 'g' | 't' | 'K' | 'M' | 'G' | 'T' => cfg.output.format,
                _ => 'a',
            },
            title: cfg.output.title.as_ref().map(|t| format!("{t}:  ")).unwrap_or_default(),
            json: cfg.output.json && !cfg.output.json_stream,
            stream: cfg.output.json_stream,
            head,
        }
    }

    fn line(&self, text: &str) {
        self.out.write(&format!("{}{text}\n", self.title));
    }

    fn stream_event(&self, event: &str, data: Value) {
        let v = json!({ "event": event, "data": data });
        self.out
            .write(&format!("{}\n", serde_json::to_string(&v).unwrap_or_default()));
    }

    fn begin(&self) {
        if self.stream {
            self.stream_event("search_start", self.head.clone());
        } else if !self.json {
            self.line(&format!(
                "Searching for the highest UDP rate with loss <= {}% ({} s probes, {} stream{})",
                trim_num(self.head["max_loss_percent"].as_f64().unwrap_or(0.0)),
                trim_num(self.head["probe_seconds"].as_f64().unwrap_or(0.0)),
                self.head["streams"],
                if self.head["streams"].as_u64() == Some(1) {
                    ""
                } else {
                    "s"
                }
            ));
            self.line("Probe  Asked                Received             Lost/Total Datagrams");
        }
    }

    fn probe(&self, n: usize, p: &Probe) {
        if self.stream {
            self.stream_event("probe", probe_json(p));
        } else if !self.json {
            let verdict = if p.ok && p.retry {
                "ok on a second try"
            } else if p.ok {
                "ok"
            } else if !p.sender_limited && !p.retry {
                "too much loss, trying again"
            } else if p.sender_limited {
                "sender short of the rate"
            } else {
                "too much loss"
            };
            self.line(&format!(
                "{n:>5}  {:<19}  {:<19}  {}/{} ({}%)  {verdict}",
                rate_text(p.rate as f64, self.fmt),
                rate_text(p.received_bps, self.fmt),
                p.lost,
                p.packets,
                percent(p.lost_percent)
            ));
        }
    }

    fn document(&self, probes: &[Probe], result: Option<Value>, error: Option<&Error>) -> Value {
        let mut search = match self.head.clone() {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        search.insert("probes".into(), probes.iter().map(probe_json).collect());
        if let Some(r) = result {
            search.insert("result".into(), r);
        }
        let mut start = Map::new();
        start.insert("version".into(), crate::version_string().into());
        start.insert("system_info".into(), crate::sys::process::system_info().into());
        let mut doc = Map::new();
        doc.insert("start".into(), Value::Object(start));
        doc.insert("search".into(), Value::Object(search));
        if let Some(e) = error {
            doc.insert("error".into(), e.text().into());
        }
        Value::Object(doc)
    }

    fn answer(&self, probes: &[Probe], rate: u64, p: &Probe, finish: Finish) {
        let result = json!({
            "bits_per_second": rate,
            "received_bits_per_second": p.received_bps,
            "lost_percent": p.lost_percent,
            "finish": finish_name(finish),
        });
        if self.stream {
            self.stream_event("search_end", result);
        } else if self.json {
            let doc = self.document(probes, Some(result), None);
            self.out.write(&format!("{}\n", crate::json::to_formatted(&doc)));
        } else {
            self.line(&format!(
                "Highest rate with loss <= {}%: {} (received {}, {}% lost)",
                trim_num(self.head["max_loss_percent"].as_f64().unwrap_or(0.0)),
                rate_text(rate as f64, self.fmt),
                rate_text(p.received_bps, self.fmt),
                percent(p.lost_percent)
            ));
            match finish {
                Finish::SenderLimited => {
                    self.line("The sender could not go faster: the path may carry more than this.")
                }
                Finish::Ceiling => self.line("Every rate up to the search's ceiling was carried."),
                Finish::ProbeLimit => self.line("The search stopped at its probe limit before converging."),
                _ => {}
            }
            self.line("");
            self.line("iperf Done.");
        }
    }

    fn fail(&self, probes: &[Probe], e: &Error) {
        if self.stream {
            self.stream_event("error", Value::String(e.text()));
        } else if self.json {
            let doc = self.document(probes, None, Some(e));
            self.out.write(&format!("{}\n", crate::json::to_formatted(&doc)));
        } else {
            self.out.write_err(&format!("{}: {}\n", self.out.program(), e.line()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the pure search against a path that carries `capacity` bit/s
    /// (loss above it) and a sender that can reach `sender` bit/s.
    fn simulate(start: u64, capacity: u64, sender: u64) -> (Result<u64, Finish>, Finish, usize) {
        let mut s = Searcher::new(start, 10_000);
        let finish = loop {
            match s.next() {
                Ok(rate) => {
                    let reached = rate.min(sender);
                    let short = (reached as f64) < rate as f64 * SENDER_SHORTFALL;
                    let ok = reached <= capacity;
                    s.record(rate, ok, short.then_some(reached));
                }
                Err(f) => break f,
            }
        };
        (s.best().ok_or(finish), finish, s.probes)
    }

    #[test]
    fn the_search_lands_within_its_resolution_below_the_capacity() {
        for capacity in [3_000_000, 48_600_000, 941_000_000, 9_400_000_000] {
            let (best, finish, probes) = simulate(DEFAULT_START, capacity, u64::MAX);
            let best = best.unwrap();
            assert_eq!(finish, Finish::Converged);
            assert!(best <= capacity, "{best} > {capacity}");
            assert!(
                best as f64 >= capacity as f64 * (1.0 - 2.0 * RESOLUTION),
                "{best} too far below {capacity}"
            );
            assert!(probes < 30, "{probes} probes for {capacity}");
        }
    }

    #[test]
    fn a_start_above_the_capacity_searches_down() {
        let (best, finish, _) = simulate(1_000_000_000, 48_000_000, u64::MAX);
        assert_eq!(finish, Finish::Converged);
        let best = best.unwrap();
        assert!((47_000_000..=48_000_000).contains(&best), "{best}");
    }

    #[test]
    fn a_path_that_loses_everything_has_no_answer() {
        let (best, finish, _) = simulate(DEFAULT_START, 0, u64::MAX);
        assert_eq!(best, Err(Finish::NoGoodRate));
        assert_eq!(finish, Finish::NoGoodRate);
    }

    #[test]
    fn a_slow_sender_bounds_the_answer_and_says_so() {
        let (best, finish, _) = simulate(DEFAULT_START, u64::MAX, 5_000_000_000);
        assert_eq!(finish, Finish::SenderLimited);
        let best = best.unwrap();
        // A rate the sender reaches to within its shortfall counts as reached.
        let most = (5_000_000_000.0 / SENDER_SHORTFALL) as u64;
        assert!((4_500_000_000..=most).contains(&best), "{best}");
    }

    #[test]
    fn a_noisy_good_rate_above_a_bad_one_reopens_the_search_upward() {
        let mut s = Searcher::new(1_000_000, 1000);
        s.record(1_000_000, true, None);
        s.record(2_000_000, false, None);
        s.record(1_500_000, true, None);
        s.record(3_000_000, true, None);
        assert_eq!(s.best(), Some(3_000_000));
        assert_eq!(s.next(), Ok(6_000_000));
    }

    #[test]
    fn max_loss_takes_a_percentage_with_or_without_the_sign() {
        assert_eq!(parse_max_loss("0.1%"), Some(0.1));
        assert_eq!(parse_max_loss("2"), Some(2.0));
        assert_eq!(parse_max_loss("0"), Some(0.0));
        assert_eq!(parse_max_loss("100"), None);
        assert_eq!(parse_max_loss("-1%"), None);
        assert_eq!(parse_max_loss("abc"), None);
        assert_eq!(parse_max_loss("nan"), None);
    }
}
