//! One probe: a `/probe` request's parameters checked into a [`Spec`], the
//! client test it asks for built as a `TestConfig` (never a command line),
//! run through the dialect's normal client, and its End summary written
//! with iperf3_exporter's metric names.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use crate::config::{Dialect, Direction, EndCondition, Protocol, Role, TestConfig};
use crate::error::Error;
use crate::events::{Event, PeerReport, Summary};
use crate::http::Request;
use crate::metrics::{head, number};
use crate::report::{Recorder, Reporter};

/// Period when the request names none.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(5);
/// Longest period a request may ask for.
pub const MAX_PERIOD: Duration = Duration::from_secs(300);
/// Shortest period a probe runs for.
pub const MIN_PERIOD: Duration = Duration::from_millis(500);
/// Most streams a probe may ask for.
pub const MAX_PARALLEL: u32 = 16;
/// Kept from Prometheus' scrape timeout, for the answer to reach it.
pub const SCRAPE_MARGIN: Duration = Duration::from_millis(500);
/// Allowed beyond the period for connecting and exchanging results.
pub const SETUP: Duration = Duration::from_millis(1500);

/// The parameters `/probe` accepts (and `token`, which the exporter reads).
const KNOWN: [&str; 10] = [
    "target",
    "port",
    "reverse_mode",
    "udp_mode",
    "bitrate",
    "period",
    "bind",
    "dialect",
    "parallel",
    "token",
];

/// What one probe runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Host name or address, as given.
    pub target: String,
    /// Server port (the dialect's default unless given).
    pub port: u16,
    /// Which client.
    pub dialect: Dialect,
    /// The server sends.
    pub reverse: bool,
    /// UDP instead of TCP.
    pub udp: bool,
    /// Bit/s over all streams (0: the dialect's default).
    pub bitrate: u64,
    /// How long the test runs.
    pub period: Duration,
    /// Local address to send from.
    pub bind: Option<IpAddr>,
    /// Streams.
    pub parallel: u32,
}

/// A value a request may carry: printable, no spaces, no leading dash
/// (nothing that could read as an option anywhere).
fn plain(name: &str, v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Err(format!("parameter '{name}' is empty"));
    }
    if v.len() > 255 || v.chars().any(|c| c.is_whitespace() || c.is_control()) || v.starts_with('-') {
        return Err(format!(
            "parameter '{name}' must be one word without spaces or a leading '-'"
        ));
    }
    Ok(())
}

fn boolean(name: &str, v: &str) -> Result<bool, String> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(format!("parameter '{name}' wants true or false, not '{v}'")),
    }
}

/// A host name (letters, digits, '-', '.', '_') or an address.
fn host(v: &str) -> Result<String, String> {
    let bare = v.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        return Ok(bare.to_string());
    }
    let ok = bare.len() <= 253
        && bare.split('.').all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        });
    if ok {
        Ok(bare.to_string())
    } else {
        Err(format!("parameter 'target' is not a host name or address: '{v}'"))
    }
}

/// Checks a request's parameters; the error is the one line a 400 carries.
pub fn parse(req: &Request) -> Result<Spec, String> {
    let mut seen: Vec<&str> = Vec::new();
    for (k, v) in &req.query {
        if !KNOWN.contains(&k.as_str()) {
            return Err(format!("unknown parameter '{k}' (known: {})", KNOWN.join(", ")));
        }
        if seen.contains(&k.as_str()) {
            return Err(format!("parameter '{k}' given twice"));
        }
        seen.push(k);
        if k != "token" {
            plain(k, v)?;
        }
    }
    let target = host(req.param("target").ok_or("parameter 'target' is missing")?)?;
    let dialect = match req.param("dialect") {
        None | Some("iperf3") => Dialect::Iperf3,
        Some("iperf2") => Dialect::Iperf2,
        Some(d) => return Err(format!("parameter 'dialect' wants iperf3 or iperf2, not '{d}'")),
    };
    let port = match req.param("port") {
        None if dialect == Dialect::Iperf2 => crate::cli::iperf2::DEFAULT_PORT,
        None => 5201,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("parameter 'port' wants 1 to 65535, not '{p}'"))?,
    };
    let reverse = req
        .param("reverse_mode")
        .map_or(Ok(false), |v| boolean("reverse_mode", v))?;
    let udp = req.param("udp_mode").map_or(Ok(false), |v| boolean("udp_mode", v))?;
    let bitrate = match req.param("bitrate") {
        None => 0,
        Some(b) => crate::units::parse_rate_iperf3(b)
            .ok()
            .filter(|r| r.is_finite() && *r >= 0.0 && *r <= 1e12)
            .ok_or_else(|| format!("parameter 'bitrate' wants a rate such as 100M (at most 1000G), not '{b}'"))?
            as u64,
    };
    let period = match req.param("period") {
        None => DEFAULT_PERIOD,
        Some(p) => period(p)?,
    };
    let bind = match req.param("bind") {
        None => None,
        Some(b) => Some(
            b.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .map_err(|_| format!("parameter 'bind' wants a local address, not '{b}'"))?,
        ),
    };
    let parallel = match req.param("parallel") {
        None => 1,
        Some(n) => n
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_PARALLEL).contains(n))
            .ok_or_else(|| format!("parameter 'parallel' wants 1 to {MAX_PARALLEL}, not '{n}'"))?,
    };
    Ok(Spec {
        target,
        port,
        dialect,
        reverse,
        udp,
        bitrate,
        period,
        bind,
        parallel,
    })
}

/// `5`, `2.5s`, `500ms`, `1m`: within [`MIN_PERIOD`] and [`MAX_PERIOD`].
fn period(p: &str) -> Result<Duration, String> {
    let secs = if let Some(ms) = p.strip_suffix("ms") {
        ms.parse::<f64>().ok().map(|v| v / 1000.0)
    } else if let Some(m) = p.strip_suffix('m') {
        m.parse::<f64>().ok().map(|v| v * 60.0)
    } else {
        p.strip_suffix('s').unwrap_or(p).parse::<f64>().ok()
    };
    secs.filter(|s| s.is_finite() && *s >= MIN_PERIOD.as_secs_f64() && *s <= MAX_PERIOD.as_secs_f64())
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            format!(
                "parameter 'period' wants {} to {} seconds (5, 2.5s, 500ms, 1m), not '{p}'",
                MIN_PERIOD.as_secs_f64(),
                MAX_PERIOD.as_secs()
            )
        })
}

/// The period that fits Prometheus' scrape timeout (the
/// `X-Prometheus-Scrape-Timeout-Seconds` header): the timeout less
/// [`SCRAPE_MARGIN`] and [`SETUP`]. `Err` when none fits, or the header is
/// not a number.
pub fn fit(period: Duration, scrape_timeout: Option<&str>) -> Result<(Duration, Duration), String> {
    let Some(t) = scrape_timeout else {
        return Ok((period, period + SETUP * 4));
    };
    let secs = t
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .ok_or_else(|| format!("X-Prometheus-Scrape-Timeout-Seconds is not a number of seconds: '{t}'"))?;
    let budget = Duration::from_secs_f64(secs).saturating_sub(SCRAPE_MARGIN);
    let room = budget.saturating_sub(SETUP);
    if room < MIN_PERIOD {
        return Err(format!(
            "a scrape timeout of {secs} s leaves no time for a test (at least {} s)",
            (MIN_PERIOD + SETUP + SCRAPE_MARGIN).as_secs_f64()
        ));
    }
    Ok((period.min(room), budget))
}

/// The client test of `spec` against `host` (the target, or the address
/// the access list checked). Each dialect's defaults come from its parser
/// given a fixed command line (`-c` and, for UDP, `-u`); every value of
/// the request is set on the configuration itself.
pub fn config(spec: &Spec, host: &str, budget: Duration) -> Result<TestConfig, Error> {
    let base: &[&str] = if spec.udp {
        &["-c", "localhost", "-u"]
    } else {
        &["-c", "localhost"]
    };
    let base: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    let mut cfg = match spec.dialect {
        Dialect::Iperf3 => match crate::cli::iperf3::parse_args(&base)? {
            crate::cli::iperf3::Command::Run(c, _) => *c,
            _ => {
                return Err(Error::msg(
                    crate::error::Code::NONE,
                    "the iperf3 client's defaults are missing",
                ));
            }
        },
        Dialect::Iperf2 => match crate::cli::iperf2::parse_args_with_env(&base, &|_| None)
            .map_err(|e| Error::msg(crate::error::Code::NONE, e.line("wirespeed")))?
        {
            crate::cli::iperf2::Command::Run(c, _) => *c,
            _ => {
                return Err(Error::msg(
                    crate::error::Code::NONE,
                    "the iperf 2 client's defaults are missing",
                ));
            }
        },
    };
    cfg.role = Role::Client(host.to_string());
    cfg.port = spec.port;
    cfg.params.protocol = if spec.udp { Protocol::Udp } else { Protocol::Tcp };
    cfg.params.direction = if spec.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    cfg.params.streams = spec.parallel;
    cfg.params.end = EndCondition::Time(spec.period);
    if spec.bitrate > 0 {
        cfg.params.rate = (spec.bitrate / u64::from(spec.parallel)).max(1);
    }
    cfg.net.bind = spec.bind.map(|ip| ip.to_string());
    cfg.net.connect_timeout = Some(budget.min(Duration::from_secs(5)));
    cfg.output.interval = None;
    cfg.output.json = false;
    cfg.output.json_stream = false;
    cfg.output.live = false;
    cfg.output.html_report = None;
    Ok(cfg)
}

/// The numbers a probe found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The End summary (none: the test failed).
    pub end: Option<Summary>,
    /// iperf 2's UDP server report: packets, lost, jitter, seconds, bytes.
    pub peer: Option<(i64, i64, f64, f64, u64)>,
    /// Why it failed.
    pub error: Option<String>,
}

/// Runs `cfg` through the dialect's client; `signal` ends it early.
pub fn run(cfg: &TestConfig, host: &str, signal: &Arc<AtomicUsize>) -> Outcome {
    let rec = Recorder::default();
    let mut reporter = Reporter::new();
    reporter.add(Box::new(rec.clone()));
    let r = match cfg.dialect {
        Dialect::Iperf3 => crate::dialect::iperf3::client::run(cfg, host, cfg.port, &mut reporter, signal),
        Dialect::Iperf2 => crate::dialect::iperf2::client::run(cfg, host, &mut reporter, signal),
    };
    let events = rec.events.lock().map(|e| e.clone()).unwrap_or_default();
    let end = events.iter().rev().find_map(|e| match e {
        Event::End(s) => Some((**s).clone()),
        _ => None,
    });
    let reports: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::PeerReport(PeerReport::Report(l)) => Some(&**l),
            _ => None,
        })
        .collect();
    let peer = (!reports.is_empty()).then(|| {
        let udp: Vec<_> = reports.iter().filter_map(|l| l.udp).collect();
        (
            udp.iter().map(|u| u.packets).sum(),
            udp.iter().map(|u| u.lost.max(0)).sum(),
            udp.iter().map(|u| u.jitter_ms).sum::<f64>() / udp.len().max(1) as f64,
            reports.iter().map(|l| l.seconds).fold(0.0, f64::max),
            reports.iter().map(|l| l.bytes).sum(),
        )
    });
    let error = match (&r, &end) {
        (Err(e), _) => Some(e.text()),
        (Ok(()), None) => Some("the test ended without results".into()),
        _ => None,
    };
    Outcome {
        end: if r.is_ok() { end } else { None },
        peer,
        error,
    }
}

/// The `/probe` answer: iperf3_exporter's metrics and wirespeed's own.
pub fn render(spec: &Spec, o: &Outcome, took: Duration) -> String {
    let mut s = String::new();
    let g = |s: &mut String, name: &str, help: &str, v: f64| {
        head(s, name, "gauge", help);
        let _ = writeln!(s, "{name} {}", number(v));
    };
    let up = o.end.is_some();
    g(
        &mut s,
        "iperf3_up",
        "Was the last iperf3 probe successful (1 for yes, 0 for no).",
        if up { 1.0 } else { 0.0 },
    );
    if let Some(end) = &o.end {
        let d = &end.forward;
        let mut recv = (d.received.seconds, d.received.bytes);
        if let (Some(p), true) = (o.peer, spec.dialect == Dialect::Iperf2) {
            recv = (p.3, p.4);
        }
        // An iperf 2 server tells a TCP client nothing of what it counted
        // (received, or sent when reversed): unknown, which is not zero.
        let iperf2_tcp = spec.dialect == Dialect::Iperf2 && !spec.udp;
        let sent_known = !iperf2_tcp || !spec.reverse;
        let known = !iperf2_tcp || spec.reverse;
        if sent_known {
            g(
                &mut s,
                "iperf3_sent_seconds",
                "Total seconds spent sending packets.",
                d.sent.seconds,
            );
            g(
                &mut s,
                "iperf3_sent_bytes",
                "Total sent bytes for the last test run.",
                d.sent.bytes as f64,
            );
        }
        if known {
            g(
                &mut s,
                "iperf3_received_seconds",
                "Total seconds spent receiving packets.",
                recv.0,
            );
            g(
                &mut s,
                "iperf3_received_bytes",
                "Total received bytes for the last test run.",
                recv.1 as f64,
            );
        }
        if spec.udp {
            // The receiver's count, from the results exchange (iperf3) or
            // the server report (iperf 2).
            let (sent_packets, packets, lost, jitter) = match (d.udp, o.peer) {
                (_, Some(p)) if spec.dialect == Dialect::Iperf2 => {
                    (d.udp.map_or(p.0, |u| u.sent_packets.max(p.0)), p.0, p.1, p.2)
                }
                (Some(u), _) => (u.sent_packets, u.packets, u.lost.unwrap_or(0), u.jitter_ms),
                (None, _) => (0, 0, 0, 0.0),
            };
            let pct = |lost: i64, of: i64| if of > 0 { 100.0 * lost as f64 / of as f64 } else { 0.0 };
            g(
                &mut s,
                "iperf3_sent_packets",
                "Total sent packets for the last UDP test run.",
                sent_packets as f64,
            );
            g(
                &mut s,
                "iperf3_sent_jitter_ms",
                "Jitter in milliseconds for sent packets.",
                jitter,
            );
            g(
                &mut s,
                "iperf3_sent_lost_packets",
                "Total lost packets from the sender side.",
                lost as f64,
            );
            g(
                &mut s,
                "iperf3_sent_lost_percent",
                "Percentage of packets lost from the sender side.",
                pct(lost, sent_packets),
            );
            g(
                &mut s,
                "iperf3_received_packets",
                "Total received packets for the last UDP test run.",
                packets as f64,
            );
            g(
                &mut s,
                "iperf3_received_jitter_ms",
                "Jitter in milliseconds for received packets.",
                jitter,
            );
            g(
                &mut s,
                "iperf3_received_lost_packets",
                "Total lost packets from the receiver side.",
                lost as f64,
            );
            g(
                &mut s,
                "iperf3_received_lost_percent",
                "Percentage of packets lost from the receiver side.",
                pct(lost, packets),
            );
        } else if sent_known {
            g(
                &mut s,
                "iperf3_retransmits",
                "Total retransmits for the last test run.",
                d.sent.retransmits.unwrap_or(0) as f64,
            );
        }
        let bps = if recv.0 > 0.0 {
            recv.1 as f64 * 8.0 / recv.0
        } else {
            0.0
        };
        if known {
            g(
                &mut s,
                "wirespeed_probe_received_bits_per_second",
                "The receiver's rate over the probe.",
                bps,
            );
        }
    }
    g(
        &mut s,
        "wirespeed_probe_duration_seconds",
        "How long the probe took, set-up and results included.",
        took.as_secs_f64(),
    );
    g(
        &mut s,
        "wirespeed_probe_period_seconds",
        "How long the probe's test was asked to run.",
        spec.period.as_secs_f64(),
    );
    g(
        &mut s,
        "wirespeed_probe_streams",
        "Streams of the probe's test.",
        f64::from(spec.parallel),
    );
    head(&mut s, "wirespeed_probe_info", "gauge", "What the probe ran.");
    let _ = writeln!(
        s,
        "wirespeed_probe_info{{dialect=\"{}\",protocol=\"{}\",direction=\"{}\"}} 1",
        if spec.dialect == Dialect::Iperf2 {
            "iperf2"
        } else {
            "iperf3"
        },
        if spec.udp { "udp" } else { "tcp" },
        if spec.reverse { "reverse" } else { "forward" }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(q: &str) -> Request {
        crate::http::parse_head(format!("GET /probe?{q} HTTP/1.1").as_bytes()).unwrap()
    }

    #[test]
    fn parameters_are_checked_before_anything_runs() {
        let s = parse(&req(
            "target=127.0.0.1&port=5301&udp_mode=true&reverse_mode=true&bitrate=10M&period=2s&parallel=2",
        ))
        .unwrap();
        assert_eq!(
            (s.port, s.udp, s.reverse, s.bitrate, s.parallel),
            (5301, true, true, 10_000_000, 2)
        );
        assert_eq!(s.period, Duration::from_secs(2));
        assert_eq!(parse(&req("target=h&dialect=iperf2")).unwrap().port, 5001);
        for bad in [
            "target=-s",
            "target=a%20b",
            "target=h&port=-1",
            "target=h&x=1",
            "target=h&target=g",
            "port=1",
            "target=h&period=100000",
            "target=h&period=0",
            "target=h&parallel=17",
            "target=h&bind=-B",
            "target=h&bitrate=lots",
            "target=h&dialect=iperf4",
            "target=h&udp_mode=maybe",
            "target=h;rm",
        ] {
            assert!(parse(&req(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_scrape_timeout_shortens_the_period() {
        assert_eq!(fit(Duration::from_secs(5), None).unwrap().0, Duration::from_secs(5));
        let (p, budget) = fit(Duration::from_secs(5), Some("4")).unwrap();
        assert_eq!((p, budget), (Duration::from_secs(2), Duration::from_millis(3500)));
        assert_eq!(
            fit(Duration::from_secs(1), Some("10")).unwrap().0,
            Duration::from_secs(1)
        );
        assert!(fit(Duration::from_secs(5), Some("1")).is_err());
        assert!(fit(Duration::from_secs(5), Some("x")).is_err());
    }

    #[test]
    fn a_failed_probe_is_down_with_no_numbers() {
        let s = parse(&req("target=h")).unwrap();
        let text = render(&s, &Outcome::default(), Duration::from_secs(1));
        assert!(
            text.contains("iperf3_up 0\n") && !text.contains("iperf3_sent_bytes"),
            "{text}"
        );
    }
}
