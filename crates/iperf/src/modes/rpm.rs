//! `--rpm`: responsiveness under working conditions, after
//! draft-ietf-ippm-responsiveness, adapted to a tool without HTTP or TLS
//! (`docs/protocols.md`, Responsiveness (`--rpm`); the result is a TCP-only RPM).
//!
//! Load: capacity-seeking TCP flows, each a test of its own against the
//! server (a wirespeed server runs them side by side, in either dialect,
//! and so does a real iperf 2 server in the iperf 2 dialect): one at first, one
//! more every interval (ID, 1 s) up to 16 (`-P` sets the most), upload,
//! download (`-R`) or both (`--bidir`). Goodput is saturated when the
//! standard deviation of the last MAD (4) moving averages is under SDT
//! (5 %) of the latest.
//!
//! Probes, from the start: "foreign" probes each open a new TCP connection
//! to the server (its handshake time, `tcp_f`) and make one request/response
//! on it (an iperf 2 bounceback message, `rr_f`); "self" latency is the
//! load flows' own smoothed RTT from TCP_INFO (the draft's fallback where
//! a request cannot ride inside a load connection), which the sending side
//! has: upload flows, not download ones.
//!
//! Each interval's responsiveness comes from the probes of the last MAD
//! intervals: `Foreign = 60000 / ((TM(tcp_f) + TM(rr_f)) / 2)`, `Loaded =
//! 60000 / TM(self)`, `RPM = (Foreign + Loaded) / 2` (Foreign alone when no
//! flow sends), TM being the mean of the fastest 95 %. Once goodput is
//! saturated and the last MAD values agree within SDT, the result is final
//! (confidence high); the time limit (`-t`) ends the test otherwise, with
//! medium (MAD intervals ran) or low confidence.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wirespeed_core::config::{Direction, EndCondition, TestConfig};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{Event, ModeEvent, RpmEnd, RpmStart};
use wirespeed_report::{Reporter, Sink};

/// The interval between evaluations and added flows (ID).
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Moving-average distance, intervals (MAD).
pub const MAD: usize = 4;
/// Standard-deviation tolerance (SDT).
pub const SDT: f64 = 0.05;
/// Most load flows unless `-P` says (MNP).
pub const MAX_FLOWS: u32 = 16;
/// Foreign probes per second.
pub(crate) const PROBES_PER_SECOND: u32 = 20;
/// Share of the samples the trimmed mean keeps (the fastest).
pub const TRIM_KEEP: f64 = 0.95;
/// Foreign probes on the idle path before the load.
const IDLE_PROBES: usize = 5;
/// A probe that takes longer is counted as failed.
const PROBE_WAIT: Duration = Duration::from_secs(5);
/// How often a load flow reports (its bytes count towards goodput).
const FLOW_INTERVAL: Duration = Duration::from_millis(100);

/// The single-sided trimmed mean: the mean of the fastest [`TRIM_KEEP`]
/// of `v` (ms); `None` for no samples.
pub fn trimmed_mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let keep = ((s.len() as f64 * TRIM_KEEP).ceil() as usize).clamp(1, s.len());
    Some(s[..keep].iter().sum::<f64>() / keep as f64)
}

/// The draft's words for an RPM.
pub fn class(rpm: f64) -> &'static str {
    match rpm {
        r if r < 300.0 => "Poor",
        r if r < 1000.0 => "Fair",
        r if r < 6000.0 => "Good",
        _ => "Excellent",
    }
}

/// Whether the last [`MAD`] values agree within [`SDT`] of the last.
pub fn stable(values: &[f64]) -> bool {
    if values.len() < MAD {
        return false;
    }
    let w = &values[values.len() - MAD..];
    let mean = w.iter().sum::<f64>() / MAD as f64;
    let var = w.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / MAD as f64;
    let last = w[MAD - 1];
    last > 0.0 && var.sqrt() < SDT * last
}

/// One foreign probe's times, ms, and when it ended.
#[derive(Debug, Clone, Copy)]
struct Probe {
    at: Instant,
    tcp_ms: f64,
    rr_ms: f64,
}

/// Latency samples, one source each.
#[derive(Debug, Clone, Copy)]
struct SelfRtt {
    at: Instant,
    ms: f64,
}

/// What the load flows and the probes share with the controller.
#[derive(Default)]
struct Shared {
    /// Payload bytes the load flows moved (their reports').
    bytes: AtomicU64,
    probes: Mutex<Vec<Probe>>,
    selfs: Mutex<Vec<SelfRtt>>,
    failures: AtomicU64,
    /// The first load flow's failure, which ends the test.
    failed: Mutex<Option<Error>>,
}

/// A load flow's sink: adds its bytes and its senders' RTTs.
struct LoadSink(Arc<Shared>);

impl Sink for LoadSink {
    fn event(&mut self, ev: &Event) {
        if let Event::Interval(r) = ev {
            let now = Instant::now();
            for s in &r.streams {
                self.0.bytes.fetch_add(s.bytes, Relaxed);
                if let Some(t) = s.tcp.filter(|t| s.sender && t.rtt > 0)
                    && let Ok(mut v) = self.0.selfs.lock()
                {
                    v.push(SelfRtt {
                        at: now,
                        ms: t.rtt as f64 / 1e3,
                    });
                }
            }
        }
    }
}

pub use wirespeed_core::events::RpmInterval;

fn rpm_of(ms: f64) -> f64 {
    60_000.0 / ms.max(1e-6)
}

/// One foreign probe: a new connection, one request/response, closed.
fn foreign_probe(cfg: &TestConfig, host: &str, stop: &AtomicBool) -> Result<Probe, String> {
    let t0 = Instant::now();
    let sock: TcpStream = wirespeed_core::net::connect_client(&cfg.net, host, cfg.port).map_err(|e| e.text())?;
    let tcp_ms = t0.elapsed().as_secs_f64() * 1e3;
    let _ = sock.set_nodelay(true);
    let link = crate::latency::Link::Tcp(sock);
    let rr = crate::latency::probe(&link, 1, None, PROBE_WAIT, stop)?.ok_or("stopped")?;
    Ok(Probe {
        at: Instant::now(),
        tcp_ms,
        rr_ms: rr * 1e3,
    })
}

/// The load flow's own test: one stream, the test's direction, until
/// `until` (or the stop).
fn load_config(cfg: &TestConfig, remaining: Duration) -> TestConfig {
    let mut c = cfg.clone();
    c.params.streams = 1;
    c.params.end = EndCondition::Time(remaining.max(Duration::from_millis(500)));
    c.output.json = false;
    c.output.json_stream = false;
    c.output.interval = Some(FLOW_INTERVAL);
    c.output.html_report = None;
    c.rpm = false;
    c.latency = None;
    // iperf 2's clients sample TCP_INFO in enhanced reports.
    c.output.enhanced = true;
    c.output.csv = false;
    c
}

/// Runs the responsiveness test, telling it to `reporter` as
/// [`ModeEvent`]s; a failure is told as a client's (`Error`, `Done`).
pub fn run(cfg: &TestConfig, host: &str, reporter: &mut Reporter, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    let r = measure(cfg, host, reporter, signal);
    if let Err(e) = &r {
        reporter.emit(Event::Error(e.clone()));
        reporter.emit(Event::Done);
    }
    r
}

/// The test's time limit and most load flows.
fn limits(cfg: &TestConfig) -> (Duration, u32) {
    let limit = match cfg.params.end {
        EndCondition::Time(t) if !t.is_zero() => t,
        _ => Duration::from_secs(10),
    };
    let max_flows = if cfg.params.streams > 1 {
        cfg.params.streams
    } else {
        MAX_FLOWS
    };
    (limit, max_flows)
}

/// The whole test: the idle probes, the load with the probes beside it
/// (one evaluation a second), and the result.
fn measure(cfg: &TestConfig, host: &str, reporter: &mut Reporter, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    let (limit, max_flows) = limits(cfg);
    let tell = |r: &mut Reporter, m: ModeEvent| r.emit(Event::Mode(m));
    tell(
        reporter,
        ModeEvent::RpmStart(Box::new(RpmStart {
            host: host.to_string(),
            port: cfg.port,
            method: METHOD.into(),
            interval_seconds: INTERVAL.as_secs_f64(),
            mad: MAD,
            sdt: SDT,
            max_flows,
            probes_per_second: PROBES_PER_SECOND,
            trimmed_mean_keep: TRIM_KEEP,
            time_limit_seconds: limit.as_secs_f64(),
        })),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let idle_ms = idle_probes(cfg, host, &stop)?;
    let shared = Arc::new(Shared::default());
    let started = Instant::now();
    let load = Load {
        cfg,
        host,
        limit,
        max_flows,
        started,
        shared: shared.clone(),
        load_signal: Arc::new(AtomicUsize::new(0)),
    };
    let (intervals, confidence) = std::thread::scope(|scope| {
        let (sh, st) = (shared.clone(), stop.clone());
        scope.spawn(move || probe_loop(cfg, host, &sh, &st));
        let r = load.run(scope, signal, &mut |iv| {
            tell(reporter, ModeEvent::RpmInterval(Box::new(iv.clone())))
        });
        // End the probes and whatever load still runs; the scope then
        // waits for their threads.
        stop.store(true, Relaxed);
        load.load_signal.store(libc::SIGTERM as usize, Relaxed);
        r
    })?;
    let end = result(
        &shared,
        started,
        limit,
        idle_ms,
        &intervals,
        confidence,
        cfg.params.direction,
    );
    tell(reporter, ModeEvent::RpmEnd(Box::new(end)));
    Ok(())
}

/// The method's name in the outputs.
const METHOD: &str = "TCP-only RPM (draft-ietf-ippm-responsiveness)";

/// A few probes on the quiet path: their trimmed means, ms (TCP
/// handshake, round trip). A server that answers none is a failure.
fn idle_probes(cfg: &TestConfig, host: &str, stop: &AtomicBool) -> Result<Option<(f64, f64)>, Error> {
    let mut idle = Vec::new();
    for _ in 0..IDLE_PROBES {
        match foreign_probe(cfg, host, stop) {
            Ok(p) => idle.push(p),
            Err(why) => {
                return Err(Error::msg(
                    Code::CONNECT,
                    format!(
                        "--rpm: the server at {host} port {} does not answer round-trip probes ({why}); \
                         a wirespeed server does, an iperf3 server cannot",
                        cfg.port
                    ),
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(
        match (
            trimmed_mean(&idle.iter().map(|p| p.tcp_ms).collect::<Vec<_>>()),
            trimmed_mean(&idle.iter().map(|p| p.rr_ms).collect::<Vec<_>>()),
        ) {
            (Some(a), Some(b)) => Some((a, b)),
            _ => None,
        },
    )
}

/// The foreign probes beside the load, [`PROBES_PER_SECOND`] until `stop`.
fn probe_loop(cfg: &TestConfig, host: &str, sh: &Shared, st: &AtomicBool) {
    let period = Duration::from_secs_f64(1.0 / f64::from(PROBES_PER_SECOND));
    let mut next = Instant::now();
    while !st.load(Relaxed) {
        match foreign_probe(cfg, host, st) {
            Ok(p) => {
                if let Ok(mut v) = sh.probes.lock() {
                    v.push(p);
                }
            }
            Err(_) if st.load(Relaxed) => break,
            Err(_) => {
                sh.failures.fetch_add(1, Relaxed);
            }
        }
        next += period;
        let now = Instant::now();
        if next < now {
            next = now;
        }
        while !st.load(Relaxed) && Instant::now() < next {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
        }
    }
}

/// The load and its evaluation.
struct Load<'a> {
    cfg: &'a TestConfig,
    host: &'a str,
    limit: Duration,
    max_flows: u32,
    started: Instant,
    shared: Arc<Shared>,
    /// Raised to end the load flows.
    load_signal: Arc<AtomicUsize>,
}

/// What the evaluations so far remember.
#[derive(Default)]
struct Evaluation {
    goodputs: Vec<f64>,
    averages: Vec<f64>,
    /// The responsiveness of the saturated intervals.
    rpms: Vec<f64>,
    last_bytes: u64,
}

impl<'a> Load<'a> {
    /// Adds a load flow every interval and evaluates each interval
    /// (`told` hears of it) until the result is stable or the time is up;
    /// returns the intervals and the confidence.
    fn run<'s>(
        &'s self,
        scope: &'s std::thread::Scope<'s, '_>,
        signal: &AtomicUsize,
        told: &mut dyn FnMut(&RpmInterval),
    ) -> Result<(Vec<RpmInterval>, &'static str), Error>
    where
        'a: 's,
    {
        let mut flows = 0u32;
        let mut intervals: Vec<RpmInterval> = Vec::new();
        let mut eval = Evaluation::default();
        let mut k = 0u32;
        loop {
            let remaining = self.limit.saturating_sub(self.started.elapsed());
            if flows < self.max_flows && !remaining.is_zero() {
                flows += 1;
                self.add_flow(scope, remaining);
            }
            k += 1;
            let due = self.started + INTERVAL * k;
            while Instant::now() < due && signal.load(Relaxed) == 0 {
                std::thread::sleep((due - Instant::now()).min(Duration::from_millis(20)));
            }
            if signal.load(Relaxed) != 0 {
                return Err(Error::interrupted(Code::CLIENTTERM, "client", signal.load(Relaxed)));
            }
            if let Some(e) = self.shared.failed.lock().ok().and_then(|mut f| f.take()) {
                return Err(e);
            }
            let iv = self.evaluate(&mut eval, flows);
            told(&iv);
            let saturated = iv.saturated;
            intervals.push(iv);
            if saturated && stable(&eval.rpms) {
                return Ok((intervals, "high"));
            }
            if self.started.elapsed() + INTERVAL / 2 >= self.limit {
                let confidence = if intervals.len() >= MAD { "medium" } else { "low" };
                return Ok((intervals, confidence));
            }
        }
    }

    /// Starts one more load flow, a one-stream client test of its own.
    fn add_flow<'s>(&'s self, scope: &'s std::thread::Scope<'s, '_>, remaining: Duration)
    where
        'a: 's,
    {
        let c = load_config(self.cfg, remaining);
        let (sh, sig, host) = (self.shared.clone(), self.load_signal.clone(), self.host);
        scope.spawn(move || {
            let flow = || {
                let mut rep = Reporter::new();
                rep.add(Box::new(LoadSink(sh.clone())));
                match c.dialect {
                    wirespeed_core::config::Dialect::Iperf3 => {
                        crate::dialect::iperf3::client::run(&c, host, c.port, &mut rep, &sig)
                    }
                    wirespeed_core::config::Dialect::Iperf2 => {
                        crate::dialect::iperf2::client::run(&c, host, &mut rep, &sig)
                    }
                }
            };
            let began = Instant::now();
            let mut r = flow();
            // A flow the server reset as it began is tried once more: a
            // real iperf 2.1.8 server, busy with the probes' connections,
            // reset one load flow in a CI run. A server that refuses this
            // client refuses it again.
            if let Err(e) = &r
                && matches!(e.errno, Some(libc::ECONNRESET | libc::EPIPE))
                && began.elapsed() < Duration::from_secs(2)
                && sig.load(Relaxed) == 0
            {
                r = flow();
            }
            if let Err(e) = r
                && sig.load(Relaxed) == 0
                && let Ok(mut f) = sh.failed.lock()
            {
                f.get_or_insert(e);
            }
        });
    }

    /// The interval just ended: goodput and its moving average, whether it
    /// is saturated, and the responsiveness from the last MAD intervals'
    /// probes and load RTTs.
    fn evaluate(&self, e: &mut Evaluation, flows: u32) -> RpmInterval {
        let bytes = self.shared.bytes.load(Relaxed);
        let goodput = (bytes - e.last_bytes) as f64 * 8.0 / INTERVAL.as_secs_f64();
        e.last_bytes = bytes;
        e.goodputs.push(goodput);
        let w = &e.goodputs[e.goodputs.len().saturating_sub(MAD)..];
        let avg = w.iter().sum::<f64>() / w.len() as f64;
        e.averages.push(avg);
        let saturated = stable(&e.averages);
        // The probes of the last MAD intervals.
        let since = Instant::now()
            .checked_sub(INTERVAL * MAD as u32)
            .unwrap_or(self.started);
        let (tcp_f, rr_f): (Vec<f64>, Vec<f64>) = self
            .shared
            .probes
            .lock()
            .map(|v| v.iter().filter(|p| p.at >= since).map(|p| (p.tcp_ms, p.rr_ms)).unzip())
            .unwrap_or_default();
        let selfs: Vec<f64> = self
            .shared
            .selfs
            .lock()
            .map(|v| v.iter().filter(|s| s.at >= since).map(|s| s.ms).collect())
            .unwrap_or_default();
        let foreign = match (trimmed_mean(&tcp_f), trimmed_mean(&rr_f)) {
            (Some(a), Some(b)) => Some(rpm_of((a + b) / 2.0)),
            _ => None,
        };
        let loaded = trimmed_mean(&selfs).map(rpm_of);
        let rpm = match (foreign, loaded) {
            (Some(f), Some(l)) => Some((f + l) / 2.0),
            (f, l) => f.or(l),
        };
        if let (true, Some(r)) = (saturated, rpm) {
            e.rpms.push(r);
        }
        RpmInterval {
            at: self.started.elapsed().as_secs_f64(),
            flows,
            goodput,
            goodput_avg: avg,
            foreign,
            loaded,
            rpm,
            saturated,
        }
    }
}

/// The result: the last interval's responsiveness and goodput, the idle
/// figures, and the loaded trimmed means of the last MAD intervals of the
/// time limit.
fn result(
    shared: &Shared,
    started: Instant,
    limit: Duration,
    idle_ms: Option<(f64, f64)>,
    intervals: &[RpmInterval],
    confidence: &str,
    direction: Direction,
) -> RpmEnd {
    let since = started + limit.saturating_sub(INTERVAL * MAD as u32);
    let probes = shared.probes.lock().map(|v| v.clone()).unwrap_or_default();
    let window: Vec<&Probe> = probes.iter().filter(|p| p.at >= since).collect();
    let mut rr: Vec<f64> = window.iter().map(|p| p.rr_ms).collect();
    rr.sort_by(f64::total_cmp);
    let selfs = shared.selfs.lock().map(|v| v.clone()).unwrap_or_default();
    let last = intervals.last();
    let rpm = last.and_then(|i| i.rpm);
    RpmEnd {
        rpm,
        class: rpm.map(|r| class(r).to_string()),
        confidence: confidence.to_string(),
        direction: match direction {
            Direction::Reverse => "download",
            Direction::Bidir => "upload and download",
            _ => "upload",
        }
        .to_string(),
        goodput: last.map_or(0.0, |i| i.goodput_avg),
        flows: last.map_or(0, |i| i.flows),
        idle_rpm: idle_ms.map(|(a, b)| rpm_of((a + b) / 2.0)),
        idle_ms,
        tm_ms: (
            trimmed_mean(&window.iter().map(|p| p.tcp_ms).collect::<Vec<_>>()),
            trimmed_mean(&rr),
            trimmed_mean(&selfs.iter().filter(|s| s.at >= since).map(|s| s.ms).collect::<Vec<_>>()),
        ),
        p90_ms: (!rr.is_empty()).then(|| rr[((rr.len() as f64 * 0.9).ceil() as usize).clamp(1, rr.len()) - 1]),
        failures: shared.failures.load(Relaxed),
        self_probe_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trimmed_mean_drops_the_slowest_five_percent() {
        let mut v: Vec<f64> = (1..=19).map(f64::from).collect();
        v.push(1000.0);
        // 20 samples: the slowest one goes.
        assert_eq!(trimmed_mean(&v), Some(10.0));
        assert_eq!(trimmed_mean(&[4.0]), Some(4.0));
        assert_eq!(trimmed_mean(&[]), None);
    }

    #[test]
    fn stability_needs_mad_values_within_the_tolerance() {
        assert!(!stable(&[100.0, 100.0, 100.0]));
        assert!(stable(&[100.0, 101.0, 99.0, 100.0]));
        assert!(!stable(&[60.0, 80.0, 100.0, 120.0]));
        assert!(stable(&[10.0, 60.0, 100.0, 101.0, 99.0, 100.0]));
    }

    #[test]
    fn classes_follow_the_draft() {
        assert_eq!(class(250.0), "Poor");
        assert_eq!(class(300.0), "Fair");
        assert_eq!(class(5999.0), "Good");
        assert_eq!(class(6000.0), "Excellent");
        assert_eq!(rpm_of(60.0), 1000.0);
    }
}
