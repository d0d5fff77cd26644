//! `wirespeed -s --metrics ADDR:PORT`: a server you can watch.
//!
//! A [`Metrics`] registry is shared by the server's tests; each test feeds
//! it through a [`MetricsSink`] on its event stream (so the numbers are the
//! ones every other output prints), and the acceptor reports refusals. The
//! [`http`] endpoint serves the registry in Prometheus' text exposition
//! format on a thread of its own.
//!
//! Label cardinality is bounded: dialect and protocol are small fixed sets,
//! refusal reasons are a fixed list, and "last result per client address"
//! keeps at most [`MAX_CLIENTS`] addresses (the least recently seen goes,
//! counted in `wirespeed_client_results_evicted_total`).

mod sink;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

pub use sink::{MetricsSink, ModeMetrics};

use wirespeed_core::config::{Dialect, Protocol};
use wirespeed_core::error::{Code, Error};

/// Client addresses whose last result is kept.
pub(crate) const MAX_CLIENTS: usize = 64;

/// Why the server turned a connection away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Refusal {
    /// `--max-tests` tests were running.
    Busy,
    /// A test with the same cookie was already running.
    DuplicateCookie,
    /// The first bytes were neither an iperf3 cookie nor a dialect we serve.
    Unrecognized,
    /// The parameters never arrived (timeout, closed connection).
    NoParameters,
    /// The parameters were malformed or out of range.
    BadParameters,
    /// The parameters broke a server limit (`--max-streams`, duration, rate).
    Limit,
    /// The client's address is refused by `--allow`/`--deny` (or iperf 2's `-c host`).
    Policy,
    /// The client did not authenticate (`--rsa-private-key-path`).
    Unauthorized,
}

impl Refusal {
    const ALL: [Refusal; 8] = [
        Refusal::Busy,
        Refusal::DuplicateCookie,
        Refusal::Unrecognized,
        Refusal::NoParameters,
        Refusal::BadParameters,
        Refusal::Limit,
        Refusal::Policy,
        Refusal::Unauthorized,
    ];

    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Busy => "busy",
            Refusal::DuplicateCookie => "duplicate_cookie",
            Refusal::Unrecognized => "unrecognized",
            Refusal::NoParameters => "no_parameters",
            Refusal::BadParameters => "bad_parameters",
            Refusal::Limit => "limit",
            Refusal::Policy => "policy",
            Refusal::Unauthorized => "unauthorized",
        }
    }

    /// The refusal a parameter-exchange error stands for.
    pub fn of_params_error(e: &Error) -> Refusal {
        match e.code {
            Code::NUMSTREAMS | Code::MAXSERVERTESTDURATIONEXCEEDED | Code::TOTALRATE => Refusal::Limit,
            Code::AUTHTEST => Refusal::Unauthorized,
            Code::RECVPARAMS | Code::CTRLREAD | Code::CTRLCLOSE | Code::CTRLWRITE | Code::SENDMESSAGE => {
                Refusal::NoParameters
            }
            _ => Refusal::BadParameters,
        }
    }
}

/// The label values of a test.
pub fn labels(dialect: Dialect, protocol: Protocol) -> (&'static str, &'static str) {
    let d = match dialect {
        Dialect::Iperf3 => "iperf3",
        Dialect::Iperf2 => "iperf2",
    };
    let p = match protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
        Protocol::Sctp => "sctp",
        Protocol::Quic => "quic",
    };
    (d, p)
}

#[derive(Debug, Default, Clone, Copy)]
struct TestCounts {
    started: u64,
    completed: u64,
    failed: u64,
}

/// The last test of one client address.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientResult {
    /// Client IP address (no port: ports are ephemeral).
    pub client: String,
    /// Rate this server received, bit/s (`None` if it received nothing).
    pub received_bps: Option<f64>,
    /// Rate this server sent, bit/s.
    pub sent_bps: Option<f64>,
    /// Bytes moved either way.
    pub bytes: u64,
    /// TCP retransmits of what this server sent.
    pub retransmits: Option<i64>,
    /// When the test ended, Unix seconds.
    pub ended_at: f64,
    /// The test ended without error.
    pub success: bool,
}

#[derive(Debug, Default)]
struct State {
    tests: BTreeMap<(&'static str, &'static str), TestCounts>,
    bytes: BTreeMap<(&'static str, &'static str, &'static str), u64>,
    active_tests: u64,
    active_streams: u64,
    refusals: BTreeMap<Refusal, u64>,
    /// Oldest first.
    clients: Vec<ClientResult>,
    evicted: u64,
    scrapes: u64,
    rtt_idle: RttHistogram,
    rtt_loaded: RttHistogram,
    /// A client's `--rpm`, once it reported.
    rpm: Option<RpmGauges>,
    /// A client's `--udp-search`, once a probe ended.
    search: Option<SearchGauges>,
}

/// The latest figures of a responsiveness test (`--rpm`).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RpmGauges {
    /// The latest interval's responsiveness, or the result once final.
    pub rpm: Option<f64>,
    /// The goodput's moving average, bit/s.
    pub goodput: f64,
    /// Load flows running.
    pub flows: u32,
    /// The result is final.
    pub done: bool,
}

/// The latest figures of a UDP rate search (`--udp-search`).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SearchGauges {
    /// Probes run.
    pub probes: u64,
    /// The latest probe: rate asked, rate received (bit/s), loss (percent).
    pub probe: (f64, f64, f64),
    /// The answer: the highest rate with acceptable loss, bit/s.
    pub answer: Option<f64>,
    /// The loss floor the probes showed, percent.
    pub loss_floor: Option<f64>,
}

/// Upper bounds (s) of the round-trip histogram's buckets: 100 µs to 5 s,
/// loopback to a badly bloated queue.
const RTT_BUCKETS: [f64; 15] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// A Prometheus histogram of round trips.
#[derive(Debug, Default, Clone)]
struct RttHistogram {
    /// Per bucket (not cumulative), then the overflow past the last bound.
    counts: [u64; RTT_BUCKETS.len() + 1],
    sum: f64,
}

impl RttHistogram {
    fn record(&mut self, v: f64) {
        let i = RTT_BUCKETS.iter().position(|b| v <= *b).unwrap_or(RTT_BUCKETS.len());
        self.counts[i] += 1;
        self.sum += v;
    }

    fn render(&self, name: &str, phase: &str, o: &mut String) {
        let mut cumulative = 0;
        for (b, c) in RTT_BUCKETS.iter().zip(self.counts) {
            cumulative += c;
            let _ = writeln!(o, "{name}_bucket{{phase=\"{phase}\",le=\"{b}\"}} {cumulative}");
        }
        cumulative += self.counts[RTT_BUCKETS.len()];
        let _ = writeln!(o, "{name}_bucket{{phase=\"{phase}\",le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(o, "{name}_sum{{phase=\"{phase}\"}} {}", number(self.sum));
        let _ = writeln!(o, "{name}_count{{phase=\"{phase}\"}} {cumulative}");
    }
}

/// Counters kept elsewhere in the program that the registry serves beside
/// the tests' (the RPM server's): each renders its own families with
/// [`head`], [`esc`] and [`number`].
pub trait Collector: Send + Sync + std::fmt::Debug {
    /// Appends this collector's families in Prometheus' text format.
    fn render(&self, out: &mut String);
}

/// The registry the server's tests report into.
#[derive(Debug)]
pub struct Metrics {
    state: Mutex<State>,
    started_at: f64,
    /// Series of other parts of the program (the RPM server's counters,
    /// when `--rpm-listen` serves beside), rendered after the tests'.
    collectors: Mutex<Vec<std::sync::Arc<dyn Collector>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// An empty registry; the known label sets start at zero so that
    /// rates work from the first scrape.
    pub fn new() -> Metrics {
        let mut s = State::default();
        for dialect in ["iperf3", "iperf2"] {
            for p in ["tcp", "udp"] {
                s.tests.insert((dialect, p), TestCounts::default());
                for d in ["received", "sent"] {
                    s.bytes.insert((dialect, p, d), 0);
                }
            }
        }
        for r in Refusal::ALL {
            s.refusals.insert(r, 0);
        }
        Metrics {
            state: Mutex::new(s),
            started_at: wirespeed_sys::time::epoch_now(),
            collectors: Mutex::new(Vec::new()),
        }
    }

    fn with(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
    }

    /// A test's parameters were accepted.
    pub(crate) fn test_started(&self, l: (&'static str, &'static str)) {
        self.with(|s| {
            s.tests.entry(l).or_default().started += 1;
            s.active_tests += 1;
        });
    }

    /// A test ended (successfully or not).
    pub(crate) fn test_ended(&self, l: (&'static str, &'static str), success: bool) {
        self.with(|s| {
            let c = s.tests.entry(l).or_default();
            if success {
                c.completed += 1;
            } else {
                c.failed += 1;
            }
            s.active_tests = s.active_tests.saturating_sub(1);
        });
    }

    /// Data streams came up (`n > 0`) or went away.
    pub fn streams(&self, up: bool, n: u64) {
        self.with(|s| {
            if up {
                s.active_streams += n;
            } else {
                s.active_streams = s.active_streams.saturating_sub(n);
            }
        });
    }

    /// Bytes moved (as interval reports count them).
    pub fn bytes(&self, l: (&'static str, &'static str), sent: bool, n: u64) {
        let dir = if sent { "sent" } else { "received" };
        self.with(|s| *s.bytes.entry((l.0, l.1, dir)).or_default() += n);
    }

    /// A `--latency` client's probe reported a round trip (seconds),
    /// measured on the idle path or under its test's load.
    pub fn latency_probe(&self, loaded: bool, rtt: f64) {
        if !rtt.is_finite() || rtt < 0.0 {
            return;
        }
        self.with(|s| {
            if loaded {
                s.rtt_loaded.record(rtt);
            } else {
                s.rtt_idle.record(rtt);
            }
        });
    }

    /// A responsiveness test's latest figures.
    pub fn rpm(&self, g: RpmGauges) {
        self.with(|s| s.rpm = Some(g));
    }

    /// Changes the UDP search's figures.
    pub fn search(&self, f: impl FnOnce(&mut SearchGauges)) {
        self.with(|s| f(s.search.get_or_insert_with(SearchGauges::default)));
    }

    /// The server turned a connection away.
    pub fn refused(&self, why: Refusal) {
        self.with(|s| *s.refusals.entry(why).or_default() += 1);
    }

    /// Records a client's latest result, forgetting the least recently
    /// seen client past [`MAX_CLIENTS`].
    pub fn client_result(&self, r: ClientResult) {
        self.with(|s| {
            s.clients.retain(|c| c.client != r.client);
            s.clients.push(r);
            while s.clients.len() > MAX_CLIENTS {
                s.clients.remove(0);
                s.evicted += 1;
            }
        });
    }

    /// Serves `c`'s series too, after the tests' own.
    pub fn add_collector(&self, c: std::sync::Arc<dyn Collector>) {
        match self.collectors.lock() {
            Ok(mut v) => v.push(c),
            Err(p) => p.into_inner().push(c),
        }
    }

    /// The registry in Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        s.scrapes += 1;
        let mut o = String::with_capacity(4096);
        self.render_server(&s, &mut o);
        render_tests(&s, &mut o);
        render_clients(&s, &mut o);
        let rtt = "wirespeed_latency_probe_rtt_seconds";
        head(
            &mut o,
            rtt,
            "histogram",
            "Round trips --latency clients measured, before their load (idle) and under it (loaded).",
        );
        s.rtt_idle.render(rtt, "idle", &mut o);
        s.rtt_loaded.render(rtt, "loaded", &mut o);
        render_modes(&s, &mut o);
        let collectors = match self.collectors.lock() {
            Ok(v) => v.clone(),
            Err(p) => p.into_inner().clone(),
        };
        for c in collectors {
            c.render(&mut o);
        }
        head(
            &mut o,
            "wirespeed_scrapes_total",
            "counter",
            "Times these metrics were served.",
        );
        let _ = writeln!(o, "wirespeed_scrapes_total {}", s.scrapes);
        o
    }

    /// The server's own gauges: up, version, start time, what runs now.
    fn render_server(&self, s: &State, o: &mut String) {
        head(o, "wirespeed_up", "gauge", "1 while the wirespeed server runs.");
        o.push_str("wirespeed_up 1\n");
        head(o, "wirespeed_build_info", "gauge", "Version of the running wirespeed.");
        let _ = writeln!(
            o,
            "wirespeed_build_info{{version=\"{}\"}} 1",
            esc(wirespeed_core::version::VERSION)
        );
        head(
            o,
            "wirespeed_start_time_seconds",
            "gauge",
            "When the server started, Unix seconds.",
        );
        let _ = writeln!(o, "wirespeed_start_time_seconds {:.3}", self.started_at);
        head(o, "wirespeed_active_tests", "gauge", "Tests running now.");
        let _ = writeln!(o, "wirespeed_active_tests {}", s.active_tests);
        head(o, "wirespeed_active_streams", "gauge", "Data streams open now.");
        let _ = writeln!(o, "wirespeed_active_streams {}", s.active_streams);
    }
}

/// Counts of tests, bytes and refusals since the server started.
fn render_tests(s: &State, o: &mut String) {
    type Pick = fn(&TestCounts) -> u64;
    let counts: [(&str, &str, Pick); 3] = [
        (
            "wirespeed_tests_started_total",
            "Tests whose parameters the server accepted.",
            |c| c.started,
        ),
        (
            "wirespeed_tests_completed_total",
            "Tests that ended without error.",
            |c| c.completed,
        ),
        (
            "wirespeed_tests_failed_total",
            "Tests that ended with an error or were cut short.",
            |c| c.failed,
        ),
    ];
    for (name, help, pick) in counts {
        head(o, name, "counter", help);
        for ((d, p), c) in &s.tests {
            let _ = writeln!(o, "{name}{{dialect=\"{d}\",protocol=\"{p}\"}} {}", pick(c));
        }
    }
    head(
        o,
        "wirespeed_bytes_total",
        "counter",
        "Payload bytes moved by tests, as their interval reports count them.",
    );
    for ((d, p, dir), n) in &s.bytes {
        let _ = writeln!(
            o,
            "wirespeed_bytes_total{{dialect=\"{d}\",protocol=\"{p}\",direction=\"{dir}\"}} {n}"
        );
    }
    head(
        o,
        "wirespeed_refusals_total",
        "counter",
        "Connections or tests the server turned away, by reason.",
    );
    for (r, n) in &s.refusals {
        let _ = writeln!(o, "wirespeed_refusals_total{{reason=\"{}\"}} {n}", r.name());
    }
}

/// The last result of each client address.
fn render_clients(s: &State, o: &mut String) {
    head(
        o,
        "wirespeed_client_last_bits_per_second",
        "gauge",
        "Rate of the last test of each client address, as this server measured it.",
    );
    for c in &s.clients {
        for (dir, v) in [("received", c.received_bps), ("sent", c.sent_bps)] {
            if let Some(v) = v {
                let _ = writeln!(
                    o,
                    "wirespeed_client_last_bits_per_second{{client=\"{}\",direction=\"{dir}\"}} {}",
                    esc(&c.client),
                    number(v)
                );
            }
        }
    }
    head(
        o,
        "wirespeed_client_last_bytes",
        "gauge",
        "Bytes moved by the last test of each client address.",
    );
    for c in &s.clients {
        let _ = writeln!(
            o,
            "wirespeed_client_last_bytes{{client=\"{}\"}} {}",
            esc(&c.client),
            c.bytes
        );
    }
    head(
        o,
        "wirespeed_client_last_retransmits",
        "gauge",
        "TCP retransmits of what this server sent in the last test of each client address.",
    );
    for c in &s.clients {
        if let Some(r) = c.retransmits {
            let _ = writeln!(
                o,
                "wirespeed_client_last_retransmits{{client=\"{}\"}} {r}",
                esc(&c.client)
            );
        }
    }
    head(
        o,
        "wirespeed_client_last_success",
        "gauge",
        "1 if the last test of each client address ended without error.",
    );
    for c in &s.clients {
        let _ = writeln!(
            o,
            "wirespeed_client_last_success{{client=\"{}\"}} {}",
            esc(&c.client),
            u8::from(c.success)
        );
    }
    head(
        o,
        "wirespeed_client_last_end_time_seconds",
        "gauge",
        "When the last test of each client address ended, Unix seconds.",
    );
    for c in &s.clients {
        let _ = writeln!(
            o,
            "wirespeed_client_last_end_time_seconds{{client=\"{}\"}} {:.3}",
            esc(&c.client),
            c.ended_at
        );
    }
    head(
        o,
        "wirespeed_client_results_evicted_total",
        "counter",
        &format!("Client addresses forgotten to keep at most {MAX_CLIENTS}."),
    );
    let _ = writeln!(o, "wirespeed_client_results_evicted_total {}", s.evicted);
}

/// A client mode's gauges (`--rpm`, `--udp-search`), once it has any.
fn render_modes(s: &State, o: &mut String) {
    if let Some(r) = &s.rpm {
        if let Some(v) = r.rpm {
            head(
                o,
                "wirespeed_rpm",
                "gauge",
                "Responsiveness (round trips per minute) of --rpm: the latest interval's, the result once final.",
            );
            let _ = writeln!(o, "wirespeed_rpm {}", number(v));
        }
        head(
            o,
            "wirespeed_rpm_goodput_bits_per_second",
            "gauge",
            "Goodput of --rpm's load flows (moving average), bit/s.",
        );
        let _ = writeln!(o, "wirespeed_rpm_goodput_bits_per_second {}", number(r.goodput));
        head(o, "wirespeed_rpm_load_flows", "gauge", "Load flows --rpm runs.");
        let _ = writeln!(o, "wirespeed_rpm_load_flows {}", r.flows);
        head(o, "wirespeed_rpm_done", "gauge", "1 once --rpm's result is final.");
        let _ = writeln!(o, "wirespeed_rpm_done {}", u8::from(r.done));
    }
    if let Some(g) = &s.search {
        head(o, "wirespeed_udp_search_probes", "gauge", "Probes --udp-search ran.");
        let _ = writeln!(o, "wirespeed_udp_search_probes {}", g.probes);
        head(
            o,
            "wirespeed_udp_search_probe_bits_per_second",
            "gauge",
            "The latest probe of --udp-search: the rate asked and the rate received, bit/s.",
        );
        let _ = writeln!(
            o,
            "wirespeed_udp_search_probe_bits_per_second{{rate=\"asked\"}} {}",
            number(g.probe.0)
        );
        let _ = writeln!(
            o,
            "wirespeed_udp_search_probe_bits_per_second{{rate=\"received\"}} {}",
            number(g.probe.1)
        );
        head(
            o,
            "wirespeed_udp_search_probe_lost_percent",
            "gauge",
            "Datagrams the latest probe of --udp-search lost, percent.",
        );
        let _ = writeln!(o, "wirespeed_udp_search_probe_lost_percent {}", number(g.probe.2));
        if let Some(f) = g.loss_floor {
            head(
                o,
                "wirespeed_udp_search_loss_floor_percent",
                "gauge",
                "The loss --udp-search found at every rate (random loss), percent.",
            );
            let _ = writeln!(o, "wirespeed_udp_search_loss_floor_percent {}", number(f));
        }
        if let Some(a) = g.answer {
            head(
                o,
                "wirespeed_udp_search_bits_per_second",
                "gauge",
                "The answer of --udp-search: the highest rate with acceptable loss, bit/s.",
            );
            let _ = writeln!(o, "wirespeed_udp_search_bits_per_second {}", number(a));
        }
    }
}

/// Writes a metric family's `# HELP` and `# TYPE` lines.
pub fn head(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value, escaped as the exposition format requires.
pub fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A sample value as the exposition format writes it (`NaN` for no number).
pub fn number(v: f64) -> String {
    if v.is_finite() { format!("{v}") } else { "NaN".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modes_answer_becomes_its_gauges() {
        use crate::Sink;
        use wirespeed_core::events::{Event, Finish, LossFloor, ModeEvent, RpmEnd, SearchAnswer, SearchEnd};
        let m = std::sync::Arc::new(Metrics::new());
        assert!(!m.render().contains("wirespeed_rpm"), "no mode, no gauges");
        let mut sink = ModeMetrics::new(m.clone());
        sink.event(&Event::Mode(ModeEvent::RpmEnd(Box::new(RpmEnd {
            rpm: Some(1234.5),
            class: Some("Good".into()),
            confidence: "high".into(),
            direction: "upload".into(),
            goodput: 8e9,
            flows: 3,
            idle_rpm: None,
            idle_ms: None,
            tm_ms: (None, None, None),
            self_probe_ms: None,
            p90_ms: None,
            failures: 0,
        }))));
        sink.event(&Event::Mode(ModeEvent::SearchEnd(Box::new(SearchEnd {
            probes: Vec::new(),
            floor: Some(LossFloor {
                loss: 0.01,
                packets: 1000,
                up_to: 10,
            }),
            outcome: Ok(SearchAnswer {
                rate: 49_000_000,
                received_bps: 48e6,
                lost_percent: 1.0,
                finish: Finish::Converged,
            }),
        }))));
        let t = m.render();
        for line in [
            "wirespeed_rpm 1234.5\n",
            "wirespeed_rpm_goodput_bits_per_second 8000000000\n",
            "wirespeed_rpm_load_flows 3\n",
            "wirespeed_rpm_done 1\n",
            "wirespeed_udp_search_bits_per_second 49000000\n",
            "wirespeed_udp_search_loss_floor_percent 1\n",
            "# TYPE wirespeed_udp_search_bits_per_second gauge\n",
        ] {
            assert!(t.contains(line), "{line}: {t}");
        }
    }

    fn result(client: &str) -> ClientResult {
        ClientResult {
            client: client.into(),
            received_bps: Some(1e9),
            sent_bps: None,
            bytes: 125_000_000,
            retransmits: None,
            ended_at: 1.5,
            success: true,
        }
    }

    #[test]
    fn exposition_has_help_type_and_samples() {
        let m = Metrics::new();
        let l = labels(Dialect::Iperf3, Protocol::Tcp);
        m.test_started(l);
        m.streams(true, 2);
        m.bytes(l, false, 1000);
        m.refused(Refusal::Busy);
        m.client_result(result("10.0.0.\"1"));
        m.latency_probe(false, 0.00009);
        m.latency_probe(true, 0.003);
        m.latency_probe(true, 7.0);
        m.latency_probe(true, f64::NAN);
        let t = m.render();
        assert!(t.contains("# TYPE wirespeed_latency_probe_rtt_seconds histogram\n"));
        assert!(t.contains("wirespeed_latency_probe_rtt_seconds_bucket{phase=\"idle\",le=\"0.0001\"} 1\n"));
        assert!(t.contains("wirespeed_latency_probe_rtt_seconds_bucket{phase=\"loaded\",le=\"0.0025\"} 0\n"));
        assert!(t.contains("wirespeed_latency_probe_rtt_seconds_bucket{phase=\"loaded\",le=\"0.005\"} 1\n"));
        assert!(t.contains("wirespeed_latency_probe_rtt_seconds_bucket{phase=\"loaded\",le=\"5\"} 1\n"));
        assert!(t.contains("wirespeed_latency_probe_rtt_seconds_bucket{phase=\"loaded\",le=\"+Inf\"} 2\n"));
        assert!(t.contains("wirespeed_latency_probe_rtt_seconds_count{phase=\"loaded\"} 2\n"));
        assert!(t.contains("wirespeed_latency_probe_rtt_seconds_sum{phase=\"loaded\"} 7.003\n"));
        assert!(t.contains("# TYPE wirespeed_tests_started_total counter\n"));
        assert!(t.contains("wirespeed_tests_started_total{dialect=\"iperf3\",protocol=\"tcp\"} 1\n"));
        assert!(t.contains("wirespeed_tests_started_total{dialect=\"iperf3\",protocol=\"udp\"} 0\n"));
        assert!(t.contains("wirespeed_bytes_total{dialect=\"iperf3\",protocol=\"tcp\",direction=\"received\"} 1000\n"));
        assert!(t.contains("wirespeed_active_tests 1\n"));
        assert!(t.contains("wirespeed_active_streams 2\n"));
        assert!(t.contains("wirespeed_refusals_total{reason=\"busy\"} 1\n"));
        assert!(t.contains(
            "wirespeed_client_last_bits_per_second{client=\"10.0.0.\\\"1\",direction=\"received\"} 1000000000\n"
        ));
        m.test_ended(l, false);
        m.streams(false, 2);
        let t = m.render();
        assert!(t.contains("wirespeed_tests_failed_total{dialect=\"iperf3\",protocol=\"tcp\"} 1\n"));
        assert!(t.contains("wirespeed_active_tests 0\n"));
        assert!(t.contains("wirespeed_scrapes_total 2\n"));
        // Every sample line names a metric announced by a TYPE line.
        for line in t.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    name.strip_suffix(s)
                        .filter(|f| t.contains(&format!("# TYPE {f} histogram")))
                })
                .unwrap_or(name);
            assert!(t.contains(&format!("# TYPE {family} ")), "{name}");
        }
    }

    #[test]
    fn client_results_stay_bounded() {
        let m = Metrics::new();
        for i in 0..(MAX_CLIENTS + 10) {
            m.client_result(result(&format!("10.0.{}.{}", i / 256, i % 256)));
        }
        // The same client again replaces its entry rather than adding one.
        m.client_result(result("10.0.0.70"));
        let t = m.render();
        let n = t
            .lines()
            .filter(|l| l.starts_with("wirespeed_client_last_bytes{"))
            .count();
        assert_eq!(n, MAX_CLIENTS);
        assert!(t.contains("wirespeed_client_results_evicted_total 10\n"));
        assert!(!t.contains("client=\"10.0.0.0\""));
    }
}
