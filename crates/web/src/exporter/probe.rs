//! One probe: a `/probe` request's parameters checked into a [`Spec`], the
//! client test it asks for built as a `TestConfig` (never a command line),
//! run through the dialect's normal client, and its End summary written
//! with iperf3_exporter's metric names. `latency=true` adds the client's
//! `--latency` probes (idle round trips first, then beside the load) and
//! their percentiles; `rpm=true` runs the responsiveness test
//! (`modes::rpm`, the client's `--rpm`) instead of one test.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use wirespeed_core::config::{Dialect, Direction, EndCondition, Protocol, Role, TestConfig};
use wirespeed_core::error::Error;
use wirespeed_core::events::{Event, LatencySummary, ModeEvent, PeerReport, RpmEnd, RpmInterval, RttStats, Summary};
use wirespeed_http::Request;
use wirespeed_report::metrics::{esc, head, number};
use wirespeed_report::{Recorder, Reporter};

/// Period when the request names none.
pub(crate) const DEFAULT_PERIOD: Duration = Duration::from_secs(5);
/// Longest period a request may ask for.
pub(crate) const MAX_PERIOD: Duration = Duration::from_secs(300);
/// Shortest period a probe runs for.
pub(crate) const MIN_PERIOD: Duration = Duration::from_millis(500);
/// Most streams a probe may ask for.
pub const MAX_PARALLEL: u32 = 16;
/// Kept from Prometheus' scrape timeout, for the answer to reach it.
pub(crate) const SCRAPE_MARGIN: Duration = Duration::from_millis(500);
/// Allowed beyond the period for connecting and exchanging results.
pub const SETUP: Duration = Duration::from_millis(1500);
/// Kept for `latency=true`'s idle round trips before the test (ten on a
/// path of up to some 30 ms; a longer path's take from the period).
pub(crate) const LATENCY_IDLE: Duration = Duration::from_millis(500);
/// Kept for `rpm=true`'s idle probes before its load and for ending its
/// load flows and probes after it.
pub(crate) const RPM_RESERVE: Duration = Duration::from_secs(1);
/// An RPM probe's period is whole evaluation intervals, at least one.
pub(crate) const RPM_MIN_PERIOD: Duration = wirespeed_iperf::modes::rpm::INTERVAL;

/// The parameters `/probe` accepts (and `token`, which the exporter reads).
const KNOWN: [&str; 13] = [
    "target",
    "port",
    "reverse_mode",
    "udp_mode",
    "quic_mode",
    "bitrate",
    "period",
    "bind",
    "dialect",
    "parallel",
    "latency",
    "rpm",
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
    /// QUIC instead of TCP (the client's `-q`; a wirespeed server only).
    pub quic: bool,
    /// Bit/s over all streams (0: the dialect's default).
    pub bitrate: u64,
    /// How long the test runs.
    pub period: Duration,
    /// Local address to send from.
    pub bind: Option<IpAddr>,
    /// Streams (with `rpm`, the most load flows; 1: its default, 16).
    pub parallel: u32,
    /// Round-trip probes idle and beside the load (the client's `--latency`).
    pub latency: bool,
    /// The responsiveness test instead of one test (the client's `--rpm`).
    pub rpm: bool,
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
        None if dialect == Dialect::Iperf2 => wirespeed_cli::iperf2::DEFAULT_PORT,
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
    let quic = req.param("quic_mode").map_or(Ok(false), |v| boolean("quic_mode", v))?;
    let bitrate = match req.param("bitrate") {
        None => 0,
        Some(b) => wirespeed_core::units::parse_rate_iperf3(b)
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
    let latency = req.param("latency").map_or(Ok(false), |v| boolean("latency", v))?;
    let rpm = req.param("rpm").map_or(Ok(false), |v| boolean("rpm", v))?;
    // What would change the responsiveness test's load (as the client's
    // --rpm refuses it).
    let clash = if !rpm {
        None
    } else if udp {
        Some("udp_mode (its load is TCP)")
    } else if latency {
        Some("latency (rpm probes round trips already)")
    } else if bitrate > 0 {
        Some("bitrate (its load seeks the path's capacity)")
    } else {
        None
    };
    if let Some(what) = clash {
        return Err(format!("parameter 'rpm' cannot be used with {what}"));
    }
    // What the client's -q refuses, or has no place for.
    let clash = if !quic {
        None
    } else if udp {
        Some("udp_mode")
    } else if dialect == Dialect::Iperf2 {
        Some("dialect=iperf2 (QUIC is the iperf3 dialect's -q)")
    } else if rpm {
        Some("rpm")
    } else {
        None
    };
    if let Some(what) = clash {
        return Err(format!("parameter 'quic_mode' cannot be used with {what}"));
    }
    Ok(Spec {
        target,
        port,
        dialect,
        reverse,
        udp,
        quic,
        bitrate,
        period,
        bind,
        parallel,
        latency,
        rpm,
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
/// [`SCRAPE_MARGIN`], [`SETUP`] and `reserve` (what runs before or after
/// the test), and the time the whole probe may take. `Err` when less than
/// `shortest` fits, or the header is not a number.
pub fn fit(
    period: Duration,
    scrape_timeout: Option<&str>,
    reserve: Duration,
    shortest: Duration,
) -> Result<(Duration, Duration), String> {
    let Some(t) = scrape_timeout else {
        return Ok((period, period + reserve + SETUP * 4));
    };
    let secs = t
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .ok_or_else(|| format!("X-Prometheus-Scrape-Timeout-Seconds is not a number of seconds: '{t}'"))?;
    let budget = Duration::from_secs_f64(secs).saturating_sub(SCRAPE_MARGIN);
    let room = budget.saturating_sub(SETUP + reserve);
    if room < shortest {
        return Err(format!(
            "a scrape timeout of {secs} s leaves no time for a test (at least {} s)",
            (shortest + SETUP + reserve + SCRAPE_MARGIN).as_secs_f64()
        ));
    }
    Ok((period.min(room), budget))
}

/// [`fit`] for what `spec` runs: `latency` keeps time for the idle round
/// trips, `rpm` for its idle probes and its end, and runs whole seconds
/// (its evaluation interval), at least one. The spec with the period that
/// fits, and the time the whole probe may take.
pub(crate) fn fit_spec(spec: Spec, scrape_timeout: Option<&str>) -> Result<(Spec, Duration), String> {
    let (reserve, shortest, asked) = if spec.rpm {
        let whole = Duration::from_secs(spec.period.as_secs()).max(RPM_MIN_PERIOD);
        (RPM_RESERVE, RPM_MIN_PERIOD, whole)
    } else if spec.latency {
        (LATENCY_IDLE, MIN_PERIOD, spec.period)
    } else {
        (Duration::ZERO, MIN_PERIOD, spec.period)
    };
    let (period, budget) = fit(asked, scrape_timeout, reserve, shortest)?;
    let period = if spec.rpm {
        Duration::from_secs(period.as_secs())
    } else {
        period
    };
    Ok((Spec { period, ..spec }, budget))
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
        Dialect::Iperf3 => match wirespeed_cli::iperf3::parse_args(&base)? {
            wirespeed_cli::iperf3::Command::Run(c, _) => *c,
            _ => {
                return Err(Error::msg(
                    wirespeed_core::error::Code::NONE,
                    "the iperf3 client's defaults are missing",
                ));
            }
        },
        Dialect::Iperf2 => match wirespeed_cli::iperf2::parse_args_with_env(&base, &|_| None)
            .map_err(|e| Error::msg(wirespeed_core::error::Code::NONE, e.line("wirespeed")))?
        {
            wirespeed_cli::iperf2::Command::Run(c, _) => *c,
            _ => {
                return Err(Error::msg(
                    wirespeed_core::error::Code::NONE,
                    "the iperf 2 client's defaults are missing",
                ));
            }
        },
    };
    cfg.role = Role::Client(host.to_string());
    cfg.port = spec.port;
    cfg.params.protocol = if spec.udp {
        Protocol::Udp
    } else if spec.quic {
        Protocol::Quic
    } else {
        Protocol::Tcp
    };
    cfg.params.direction = if spec.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    cfg.params.streams = spec.parallel;
    cfg.params.end = EndCondition::Time(spec.period);
    // The client's --latency (its default rate) and --rpm, set as their
    // options set them.
    cfg.latency = if spec.latency {
        Some(wirespeed_cli::values::latency_rate(None).map_err(|m| Error::msg(wirespeed_core::error::Code::NONE, m))?)
    } else {
        None
    };
    cfg.rpm = spec.rpm;
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
    /// The End summary (none: the test failed, or it was `rpm`).
    pub end: Option<Summary>,
    /// iperf 2's UDP server report: packets, lost, jitter, seconds, bytes.
    pub peer: Option<(i64, i64, f64, f64, u64)>,
    /// Why it failed.
    pub error: Option<String>,
    /// `latency=true`: why the target did not answer the round-trip
    /// probes, or why they stopped early (the test ran without them).
    pub latency_error: Option<String>,
    /// `rpm=true`: the result, and the last interval (its foreign and
    /// loaded parts).
    pub rpm: Option<(RpmEnd, Option<RpmInterval>)>,
    /// The period the test ran when the idle round trips left less than
    /// asked.
    pub period: Option<Duration>,
}

impl Outcome {
    /// The probe's test (or responsiveness test) gave its result.
    pub fn up(&self) -> bool {
        self.end.is_some() || self.rpm.is_some()
    }
}

/// Runs `cfg` through the dialect's client (or the responsiveness test),
/// to end by `until`; `signal` ends it early.
pub fn run(cfg: &TestConfig, host: &str, signal: &Arc<AtomicUsize>, until: Instant) -> Outcome {
    let rec = Recorder::default();
    let mut reporter = Reporter::new();
    reporter.add(Box::new(rec.clone()));
    if cfg.rpm {
        let r = wirespeed_iperf::modes::rpm::run(cfg, host, &mut reporter, signal);
        let events = rec.events.lock().map(|e| e.clone()).unwrap_or_default();
        return rpm_outcome(r, &events);
    }
    let mut shortened = None;
    let own;
    let mut cfg = cfg;
    // (A QUIC test's probes ride its own connection: the client takes the
    // idle round trips once it is up.)
    if let Some(rate) = cfg.latency.filter(|_| cfg.params.protocol != Protocol::Quic) {
        // The idle round trips first, before the test's own connections
        // (as the client's --latency). A target that does not answer
        // them fails the probe, as the client refuses to go on: an iperf3
        // server, handed a connection that is not a test, closes and
        // reopens its listener, so a test right after it would be
        // refused as often as not.
        match wirespeed_iperf::latency::Prober::connect(cfg, host, rate) {
            Ok(p) => reporter.set_stage(Box::new(p.stage())),
            Err(e) => {
                return Outcome {
                    error: Some(e.text()),
                    ..Default::default()
                };
            }
        }
        // What they took comes off the period if the probe would not end
        // in time otherwise.
        let left = until.saturating_duration_since(Instant::now()).saturating_sub(SETUP);
        if let EndCondition::Time(t) = cfg.params.end
            && left < t
        {
            let p = left.max(MIN_PERIOD);
            let mut c = cfg.clone();
            c.params.end = EndCondition::Time(p);
            own = c;
            cfg = &own;
            shortened = Some(p);
        }
    }
    let r = match cfg.dialect {
        Dialect::Iperf3 => wirespeed_iperf::dialect::iperf3::client::run(cfg, host, cfg.port, &mut reporter, signal),
        Dialect::Iperf2 => wirespeed_iperf::dialect::iperf2::client::run(cfg, host, &mut reporter, signal),
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
    let end = if r.is_ok() { end } else { None };
    let latency_error = end
        .as_ref()
        .and_then(|e| e.latency.as_ref())
        .and_then(|l| l.note.clone());
    Outcome {
        end,
        peer,
        error,
        latency_error,
        period: shortened,
        ..Default::default()
    }
}

/// The responsiveness test's outcome from its events.
fn rpm_outcome(r: Result<(), Error>, events: &[Event]) -> Outcome {
    let end = events.iter().rev().find_map(|e| match e {
        Event::Mode(ModeEvent::RpmEnd(r)) => Some((**r).clone()),
        _ => None,
    });
    let last = events.iter().rev().find_map(|e| match e {
        Event::Mode(ModeEvent::RpmInterval(i)) => Some((**i).clone()),
        _ => None,
    });
    let error = match (&r, &end) {
        (Err(e), _) => Some(e.text()),
        (Ok(()), None) => Some("the responsiveness test ended without a result".into()),
        _ => None,
    };
    Outcome {
        rpm: if r.is_ok() { end.map(|e| (e, last)) } else { None },
        error,
        ..Default::default()
    }
}

/// The quantiles a latency phase is written with: label, and its value.
fn quantiles(r: &RttStats) -> [(&'static str, f64); 4] {
    [
        ("0.5", r.p50_ms),
        ("0.9", r.p90_ms),
        ("0.99", r.p99_ms),
        ("1", r.max_ms),
    ]
}

/// `latency=true`'s metrics: whether the target answered, and each
/// phase's round trips (seconds) and probes.
fn render_latency(s: &mut String, l: Option<&LatencySummary>) {
    head(
        s,
        "wirespeed_probe_latency_up",
        "gauge",
        "Did the target answer the round-trip probes of latency=true (1 for yes, 0 for no).",
    );
    let _ = writeln!(s, "wirespeed_probe_latency_up {}", u8::from(l.is_some()));
    let Some(l) = l else { return };
    let phases = [("idle", &l.idle), ("loaded", &l.loaded)];
    head(
        s,
        "wirespeed_probe_latency_seconds",
        "gauge",
        "Round trips of the latency probes by quantile (1: the longest): idle, before the load; loaded, beside it.",
    );
    for (phase, r) in phases.iter().filter(|(_, r)| r.probes > 0) {
        for (q, ms) in quantiles(r) {
            let _ = writeln!(
                s,
                "wirespeed_probe_latency_seconds{{phase=\"{phase}\",quantile=\"{q}\"}} {}",
                number(ms / 1e3)
            );
        }
    }
    head(
        s,
        "wirespeed_probe_latency_probes",
        "gauge",
        "Latency probes that came back: idle, before the load; loaded, beside it.",
    );
    for (phase, r) in phases {
        let _ = writeln!(s, "wirespeed_probe_latency_probes{{phase=\"{phase}\"}} {}", r.probes);
    }
}

/// `rpm=true`'s metrics, after `--metrics`' `wirespeed_rpm*`.
fn render_rpm(s: &mut String, end: &RpmEnd, last: Option<&RpmInterval>) {
    let mut g = |name: &str, help: &str, v: Option<f64>| {
        if let Some(v) = v {
            head(s, name, "gauge", help);
            let _ = writeln!(s, "{name} {}", number(v));
        }
    };
    g(
        "wirespeed_probe_rpm",
        "Responsiveness under working conditions, round trips per minute (the last interval's).",
        end.rpm,
    );
    g(
        "wirespeed_probe_rpm_foreign",
        "Responsiveness of the foreign probes (a new connection and one round trip each), round trips per minute.",
        last.and_then(|i| i.foreign),
    );
    g(
        "wirespeed_probe_rpm_loaded",
        "Responsiveness from the load flows' own TCP round trips, round trips per minute.",
        last.and_then(|i| i.loaded),
    );
    g(
        "wirespeed_probe_rpm_idle",
        "Responsiveness of the foreign probes on the idle path, before the load, round trips per minute.",
        end.idle_rpm,
    );
    g(
        "wirespeed_probe_rpm_goodput_bits_per_second",
        "Goodput of the load flows (moving average), bit/s.",
        Some(end.goodput),
    );
    g(
        "wirespeed_probe_rpm_load_flows",
        "Load flows at the end.",
        Some(f64::from(end.flows)),
    );
    g(
        "wirespeed_probe_rpm_probe_failures",
        "Foreign probes that failed.",
        Some(end.failures as f64),
    );
    head(
        s,
        "wirespeed_probe_rpm_confidence",
        "gauge",
        "The result's confidence: high (saturated and stable), medium (the intervals ran) or low; 1 for the one it has.",
    );
    for level in ["high", "medium", "low"] {
        let _ = writeln!(
            s,
            "wirespeed_probe_rpm_confidence{{level=\"{level}\"}} {}",
            u8::from(end.confidence == level)
        );
    }
}

/// What iperf3_exporter answers a probe that failed, beside `iperf3_up 0`:
/// its other series at 0 (a dashboard's panel drops to 0, not to a gap).
const FAILED_SERIES: [(&str, &str); 7] = [
    ("iperf3_sent_seconds", "Total seconds spent sending packets."),
    ("iperf3_sent_bytes", "Total sent bytes for the last test run."),
    ("iperf3_sent_bps", "Bits per second on sending packets."),
    ("iperf3_received_seconds", "Total seconds spent receiving packets."),
    ("iperf3_received_bytes", "Total received bytes for the last test run."),
    ("iperf3_received_bps", "Bits per second on receiving packets."),
    ("iperf3_retransmits", "Total retransmits for the last test run."),
];

/// The `/probe` answer: iperf3_exporter's metrics and wirespeed's own.
pub fn render(spec: &Spec, o: &Outcome, took: Duration) -> String {
    let mut s = String::new();
    // iperf3_exporter (1.3) labels every iperf3_* series with the probe's
    // target and port, so dashboards and alerts can group by them.
    let labels = format!("{{target=\"{}\",port=\"{}\"}}", esc(&spec.target), spec.port);
    let g = |s: &mut String, name: &str, help: &str, v: f64| {
        head(s, name, "gauge", help);
        let at = if name.starts_with("iperf3_") {
            labels.as_str()
        } else {
            ""
        };
        let _ = writeln!(s, "{name}{at} {}", number(v));
    };
    let up = o.up();
    g(
        &mut s,
        "iperf3_up",
        "Was the last iperf3 probe successful (1 for success, 0 for failure).",
        if up { 1.0 } else { 0.0 },
    );
    if !up {
        // As iperf3_exporter answers a failed probe: its series, at 0.
        for (name, help) in FAILED_SERIES {
            g(&mut s, name, help, 0.0);
        }
    }
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
            g(
                &mut s,
                "iperf3_received_bps",
                "Bits per second on receiving packets.",
                bps,
            );
        }
        if sent_known {
            let sent_bps = if d.sent.seconds > 0.0 {
                d.sent.bytes as f64 * 8.0 / d.sent.seconds
            } else {
                0.0
            };
            g(
                &mut s,
                "iperf3_sent_bps",
                "Bits per second on sending packets.",
                sent_bps,
            );
        }
    }
    if let Some((end, last)) = &o.rpm {
        render_rpm(&mut s, end, last.as_ref());
    }
    if spec.latency {
        render_latency(&mut s, o.end.as_ref().and_then(|e| e.latency.as_ref()));
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
        o.period.unwrap_or(spec.period).as_secs_f64(),
    );
    if !spec.rpm {
        g(
            &mut s,
            "wirespeed_probe_streams",
            "Streams of the probe's test.",
            f64::from(spec.parallel),
        );
    }
    head(&mut s, "wirespeed_probe_info", "gauge", "What the probe ran.");
    let _ = writeln!(
        s,
        "wirespeed_probe_info{{dialect=\"{}\",protocol=\"{}\",direction=\"{}\",mode=\"{}\"}} 1",
        if spec.dialect == Dialect::Iperf2 {
            "iperf2"
        } else {
            "iperf3"
        },
        if spec.udp {
            "udp"
        } else if spec.quic {
            "quic"
        } else {
            "tcp"
        },
        if spec.reverse { "reverse" } else { "forward" },
        if spec.rpm { "rpm" } else { "test" }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(q: &str) -> Request {
        wirespeed_http::parse_head(format!("GET /probe?{q} HTTP/1.1").as_bytes()).unwrap()
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
        let fit = |p: u64, t: Option<&str>| fit(Duration::from_secs(p), t, Duration::ZERO, MIN_PERIOD);
        assert_eq!(fit(5, None).unwrap().0, Duration::from_secs(5));
        let (p, budget) = fit(5, Some("4")).unwrap();
        assert_eq!((p, budget), (Duration::from_secs(2), Duration::from_millis(3500)));
        assert_eq!(fit(1, Some("10")).unwrap().0, Duration::from_secs(1));
        assert!(fit(5, Some("1")).is_err());
        assert!(fit(5, Some("x")).is_err());
    }

    #[test]
    fn latency_and_rpm_keep_time_for_what_runs_beside_the_test() {
        let timed = |q: &str, t: &str| fit_spec(parse(&req(q)).unwrap(), Some(t)).map(|(s, b)| (s.period, b));
        let ms = Duration::from_millis;
        // 4 s: 3.5 s for the probe, 1.5 s of it for setting up.
        assert_eq!(timed("target=h", "4").unwrap(), (ms(2000), ms(3500)));
        assert_eq!(timed("target=h&latency=true", "4").unwrap(), (ms(1500), ms(3500)));
        // rpm: whole seconds, at least one.
        assert_eq!(timed("target=h&rpm=true", "4").unwrap(), (ms(1000), ms(3500)));
        assert_eq!(timed("target=h&rpm=true&period=2.9", "30").unwrap().0, ms(2000));
        assert_eq!(timed("target=h&rpm=true&period=500ms", "30").unwrap().0, ms(1000));
        assert!(timed("target=h&rpm=true", "3.5").is_err());
        assert!(timed("target=h&latency=true", "2.5").is_err());
        // No header: the period asked, with time for the rest.
        let (s, budget) = fit_spec(parse(&req("target=h&rpm=1&period=3")).unwrap(), None).unwrap();
        assert_eq!(s.period, ms(3000));
        assert!(budget >= ms(3000) + RPM_RESERVE, "{budget:?}");
    }

    #[test]
    fn latency_and_rpm_are_set_on_the_configuration() {
        let cfg = |q: &str| config(&parse(&req(q)).unwrap(), "127.0.0.1", Duration::from_secs(5)).unwrap();
        let plain = cfg("target=h");
        assert_eq!((plain.latency, plain.rpm), (None, false));
        assert_eq!(cfg("target=h&latency=true").latency, Some(10));
        assert_eq!(cfg("target=h&latency=true&dialect=iperf2&udp_mode=1").latency, Some(10));
        let rpm = cfg("target=h&rpm=true&reverse_mode=true");
        assert!(rpm.rpm && rpm.latency.is_none());
        assert_eq!(rpm.params.direction, Direction::Reverse);
        assert_eq!(rpm.params.protocol, Protocol::Tcp);
    }

    #[test]
    fn quic_mode_is_the_clients_q_and_refuses_what_it_refuses() {
        let cfg = config(
            &parse(&req("target=h&quic_mode=true&reverse_mode=1")).unwrap(),
            "127.0.0.1",
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(cfg.params.protocol, Protocol::Quic);
        assert_eq!(cfg.params.direction, Direction::Reverse);
        // --latency's probes ride the QUIC connection.
        let cfg = config(
            &parse(&req("target=h&quic_mode=1&latency=1")).unwrap(),
            "127.0.0.1",
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!((cfg.params.protocol, cfg.latency.is_some()), (Protocol::Quic, true));
        for (bad, why) in [
            ("target=h&quic_mode=true&udp_mode=true", "udp_mode"),
            ("target=h&quic_mode=1&dialect=iperf2", "dialect=iperf2"),
            ("target=h&quic_mode=1&rpm=1", "rpm"),
            ("target=h&quic_mode=yes", "wants true or false"),
        ] {
            let e = parse(&req(bad)).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn rpm_refuses_what_would_change_its_load() {
        for bad in [
            "target=h&rpm=true&udp_mode=true",
            "target=h&rpm=1&udp_mode=1",
            "target=h&rpm=true&latency=true",
            "target=h&rpm=true&bitrate=10M",
            "target=h&rpm=maybe",
            "target=h&latency=maybe",
            "target=h&latency=",
            "target=h&latency=true&latency=false",
        ] {
            let e = parse(&req(bad)).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
        assert!(
            parse(&req("target=h&rpm=true&udp_mode=true"))
                .unwrap_err()
                .contains("TCP")
        );
        assert!(parse(&req("target=h&rpm=false&udp_mode=true")).is_ok());
    }

    fn rtt(probes: u64, p50_ms: f64) -> RttStats {
        RttStats {
            probes,
            min_ms: p50_ms / 2.0,
            mean_ms: p50_ms,
            p50_ms,
            p90_ms: p50_ms * 2.0,
            p99_ms: p50_ms * 3.0,
            max_ms: p50_ms * 4.0,
        }
    }

    #[test]
    fn latency_percentiles_are_gauges_in_seconds_by_phase() {
        let s = parse(&req("target=h&latency=true")).unwrap();
        let end = Summary {
            latency: Some(LatencySummary {
                rate: 10,
                achieved_rate: 9.5,
                idle: rtt(10, 0.05),
                loaded: rtt(19, 20.0),
                note: None,
                in_test_connection: false,
            }),
            ..Default::default()
        };
        let o = Outcome {
            end: Some(end),
            ..Default::default()
        };
        let text = render(&s, &o, Duration::from_secs(2));
        for line in [
            "wirespeed_probe_latency_up 1\n",
            "wirespeed_probe_latency_seconds{phase=\"idle\",quantile=\"0.5\"} 0.00005\n",
            "wirespeed_probe_latency_seconds{phase=\"loaded\",quantile=\"0.99\"} 0.06\n",
            "wirespeed_probe_latency_seconds{phase=\"loaded\",quantile=\"1\"} 0.08\n",
            "wirespeed_probe_latency_probes{phase=\"idle\"} 10\n",
            "wirespeed_probe_latency_probes{phase=\"loaded\"} 19\n",
            "# TYPE wirespeed_probe_latency_seconds gauge\n",
            "# HELP wirespeed_probe_latency_probes ",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        // Each family once, its samples together.
        assert_eq!(text.matches("# TYPE wirespeed_probe_latency_seconds").count(), 1);
        // No loaded probes: their count, no quantiles.
        let mut quiet = o.clone();
        if let Some(l) = quiet.end.as_mut().and_then(|e| e.latency.as_mut()) {
            l.loaded = RttStats::default();
        }
        let text = render(&s, &quiet, Duration::from_secs(2));
        assert!(!text.contains("phase=\"loaded\",quantile"), "{text}");
        assert!(
            text.contains("wirespeed_probe_latency_probes{phase=\"loaded\"} 0\n"),
            "{text}"
        );
        // A target that does not answer the probes: tested, no latency.
        let unanswered = Outcome {
            end: Some(Summary::default()),
            latency_error: Some("no".into()),
            ..Default::default()
        };
        let text = render(&s, &unanswered, Duration::from_secs(2));
        let up = format!("iperf3_up{{target=\"{}\",port=\"{}\"}} 1\n", s.target, s.port);
        assert!(
            text.contains(&up) && text.contains("wirespeed_probe_latency_up 0\n"),
            "{text}"
        );
        assert!(!text.contains("wirespeed_probe_latency_seconds"), "{text}");
        // Not asked: not there.
        let text = render(&parse(&req("target=h")).unwrap(), &o, Duration::from_secs(2));
        assert!(!text.contains("wirespeed_probe_latency"), "{text}");
    }

    #[test]
    fn an_rpm_probe_is_up_with_its_result() {
        let s = parse(&req("target=h&rpm=true")).unwrap();
        let end = RpmEnd {
            rpm: Some(1500.0),
            class: Some("Good".into()),
            confidence: "medium".into(),
            direction: "upload".into(),
            goodput: 8e9,
            flows: 4,
            idle_rpm: Some(30000.0),
            idle_ms: Some((1.0, 1.0)),
            tm_ms: (None, None, None),
            self_probe_ms: None,
            p90_ms: None,
            failures: 2,
        };
        let last = RpmInterval {
            at: 4.0,
            flows: 4,
            goodput: 8e9,
            goodput_avg: 8e9,
            foreign: Some(2000.0),
            loaded: Some(1000.0),
            rpm: Some(1500.0),
            saturated: true,
        };
        let o = Outcome {
            rpm: Some((end, Some(last))),
            ..Default::default()
        };
        assert!(o.up());
        let text = render(&s, &o, Duration::from_secs(5));
        let up = format!("iperf3_up{{target=\"{}\",port=\"{}\"}} 1\n", s.target, s.port);
        assert!(text.contains(&up), "{text}");
        for line in [
            "wirespeed_probe_rpm 1500\n",
            "wirespeed_probe_rpm_foreign 2000\n",
            "wirespeed_probe_rpm_loaded 1000\n",
            "wirespeed_probe_rpm_idle 30000\n",
            "wirespeed_probe_rpm_goodput_bits_per_second 8000000000\n",
            "wirespeed_probe_rpm_load_flows 4\n",
            "wirespeed_probe_rpm_probe_failures 2\n",
            "wirespeed_probe_rpm_confidence{level=\"medium\"} 1\n",
            "wirespeed_probe_rpm_confidence{level=\"high\"} 0\n",
            "mode=\"rpm\"",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        assert!(
            !text.contains("iperf3_sent_bytes") && !text.contains("wirespeed_probe_streams"),
            "{text}"
        );
    }

    #[test]
    fn a_failed_probe_is_down_with_its_series_at_zero() {
        // As iperf3_exporter 1.3 answers one, labelled like every iperf3_*
        // series.
        let s = parse(&req("target=h")).unwrap();
        let text = render(&s, &Outcome::default(), Duration::from_secs(1));
        for name in [
            "iperf3_up",
            "iperf3_sent_bytes",
            "iperf3_received_bps",
            "iperf3_retransmits",
        ] {
            let line = format!("{name}{{target=\"h\",port=\"{}\"}} 0\n", s.port);
            assert!(text.contains(&line), "{line}: {text}");
        }
    }
}
