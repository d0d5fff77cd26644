//! `--latency[=N]`: round-trip probes beside any test's load, on a
//! connection of their own. The probes are iperf 2 bounceback messages
//! (`docs/protocols.md`, iperf 2: bounceback), so a wirespeed server on either dialect's port
//! and a real iperf 2 server answer them; an iperf3 server does not, and
//! the client says so before the test starts. A `--quic` test's probes
//! ride a stream of the test's own QUIC connection instead, which the
//! server echoes ([`Link::Stream`]).
//!
//! First a few probes on the idle path give the idle RTT; from the test's
//! start a thread sends one probe every `1/N` s (the next only once the
//! last came back: a queue that holds a probe for a second makes fewer
//! probes, not a pile of them) until the test ends. Each interval reports
//! the probes that came back in it; the end reports the idle and the
//! loaded distributions.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::SockRef;

use wirespeed_core::clock::wall_clock;
use wirespeed_core::config::TestConfig;
use wirespeed_core::engine::pipe::ByteStream;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{Event, LatencySummary, RttStats};
use wirespeed_proto::iperf2::bounceback::{
    BB_DEFAULT_SIZE, BB_HEADER_LEN, BB_QUICKACK, BbHeader, LATENCY_PROBE_MARK, PreviousRtt,
};

/// Probes on the idle path before the load starts.
pub const IDLE_PROBES: usize = 10;
/// The most time between two idle probes.
const IDLE_GAP: Duration = Duration::from_millis(20);
/// How long an idle probe may take before the server is taken for one
/// that does not answer probes.
const IDLE_WAIT: Duration = Duration::from_secs(2);
/// How long a probe under load may take before probing gives up.
const LOADED_WAIT: Duration = Duration::from_secs(10);
/// Loaded round trips kept for the whole test's percentiles (8 MB); later
/// ones still count in their intervals.
const MAX_KEPT: usize = 1_000_000;
/// The most probes per second.
pub const MAX_RATE: u32 = 1000;

/// What the probing thread shares with the reporter.
#[derive(Default)]
struct Shared {
    /// Round trips (s) that came back since the last interval report.
    pending: Vec<f64>,
    /// Every loaded round trip (up to [`MAX_KEPT`]).
    all: Vec<f64>,
    /// Why probing stopped early.
    failed: Option<String>,
}

/// How long one read of a probe stream waits before looking at `stop`.
const STREAM_POLL: Duration = Duration::from_millis(100);

/// Where the probes travel.
pub enum Link {
    /// A TCP connection of their own to the test's server and port.
    Tcp(TcpStream),
    /// A stream of the test's own QUIC connection (`--quic`): the server
    /// sends back every byte, in order.
    Stream(Arc<dyn ByteStream>),
}

impl Link {
    fn try_clone(&self) -> std::io::Result<Link> {
        Ok(match self {
            Link::Tcp(s) => Link::Tcp(s.try_clone()?),
            Link::Stream(s) => Link::Stream(s.clone()),
        })
    }

    /// Writes all of `msg` by `deadline` (a stream's writes look at
    /// `stop` between waits).
    fn send(&self, msg: &[u8], deadline: Instant, stop: &AtomicBool) -> Result<(), String> {
        match self {
            Link::Tcp(s) => (&*s).write_all(msg).map_err(|e| wirespeed_core::error::errno_text(&e)),
            Link::Stream(s) => {
                let mut off = 0;
                while off < msg.len() && !stop.load(Relaxed) {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err("the probe could not be sent in time".into());
                    }
                    match s.write(&msg[off..], left.min(STREAM_POLL)) {
                        Ok(0) => return Err("the probe stream closed".into()),
                        Ok(n) => off += n,
                        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
                Ok(())
            }
        }
    }

    /// Fills `buf` by `deadline`: false at the end, an error, the deadline
    /// or `stop`.
    fn recv(&self, buf: &mut [u8], deadline: Instant, stop: &AtomicBool) -> bool {
        match self {
            Link::Tcp(s) => wirespeed_core::net::read_exact_by(s, buf, deadline, stop, false),
            Link::Stream(s) => {
                let mut got = 0;
                while got < buf.len() {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() || stop.load(Relaxed) {
                        return false;
                    }
                    match s.read(&mut buf[got..], left.min(STREAM_POLL)) {
                        Ok(0) => return false,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => return false,
                    }
                }
                true
            }
        }
    }

    /// After a reply: a TCP probe connection acks at once again.
    fn replied(&self) {
        if let Link::Tcp(s) = self {
            let _ = wirespeed_sys::socket::set_quickack(&SockRef::from(s));
        }
    }

    /// Ends the probes' connection (a TCP one at once, which also wakes a
    /// blocked write) or, once no probe is under way, our half of the
    /// stream.
    fn close(&self) {
        match self {
            Link::Tcp(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            Link::Stream(s) => s.finish(),
        }
    }
}

/// The probes of one client test.
pub struct Prober {
    link: Link,
    rate: u32,
    idle: Vec<f64>,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// When the loaded probes started.
    loaded_since: Option<Instant>,
}

/// One probe: write a message (telling the server the round trip before
/// it, `previous`), read it back; its round trip in seconds, or `None`
/// when `stop` was raised.
pub fn probe(
    link: &Link,
    id: u32,
    previous: Option<PreviousRtt>,
    wait: Duration,
    stop: &AtomicBool,
) -> Result<Option<f64>, String> {
    let h = BbHeader {
        size: BB_DEFAULT_SIZE,
        id,
        bbflags: BB_QUICKACK,
        tos: u16::from_be_bytes([0x5a, 0x5a]),
        client_tx: wall_clock(),
        ..BbHeader::default()
    };
    let mut msg = h.client_message();
    msg[BB_HEADER_LEN..BB_HEADER_LEN + LATENCY_PROBE_MARK.len()].copy_from_slice(LATENCY_PROBE_MARK);
    if let Some(p) = previous {
        p.put(&mut msg);
    }
    let sent = Instant::now();
    link.send(&msg, sent + wait, stop)?;
    let mut reply = vec![0u8; msg.len()];
    if !link.recv(&mut reply, sent + wait, stop) {
        if stop.load(Relaxed) {
            return Ok(None);
        }
        return Err("no echo came back".into());
    }
    let rtt = sent.elapsed().as_secs_f64();
    link.replied();
    // An echo carries our message back (the server stamps its times).
    match BbHeader::decode(&reply) {
        Ok(r) if r.id == id && r.size == BB_DEFAULT_SIZE => Ok(Some(rtt)),
        _ => Err("the reply is not a round-trip probe".into()),
    }
}

impl Prober {
    /// Connects to the test's server and port and measures the idle
    /// round trip; an error when the server does not answer probes.
    pub fn connect(cfg: &TestConfig, host: &str, rate: u32) -> Result<Prober, Error> {
        let sock = wirespeed_core::net::connect_client(&cfg.net, host, cfg.port)?;
        let _ = sock.set_nodelay(true);
        let _ = wirespeed_sys::socket::set_quickack(&SockRef::from(&sock));
        let _ = sock.set_write_timeout(Some(LOADED_WAIT));
        Prober::idle(Link::Tcp(sock), rate).map_err(|why| {
            Error::msg(
                Code::CONNECT,
                format!(
                    "--latency: the server at {host} port {} does not answer round-trip probes ({why}); \
                     a wirespeed or iperf 2 server does, an iperf3 server cannot",
                    cfg.port
                ),
            )
        })
    }

    /// Measures the idle round trip on a `--quic` test's probe stream
    /// (before the test starts: the connection carries nothing else yet).
    pub fn over_stream(stream: Arc<dyn ByteStream>, rate: u32) -> Result<Prober, Error> {
        Prober::idle(Link::Stream(stream), rate).map_err(|why| {
            Error::msg(
                Code::STREAMCONNECT,
                format!("--latency: no echo of the round-trip probes on the QUIC connection ({why})"),
            )
        })
    }

    /// The idle probes on `link`; why they failed, if one did.
    fn idle(link: Link, rate: u32) -> Result<Prober, String> {
        let never = AtomicBool::new(false);
        let gap = Duration::from_secs_f64(1.0 / f64::from(rate.max(1))).min(IDLE_GAP);
        let mut idle: Vec<f64> = Vec::with_capacity(IDLE_PROBES);
        for i in 0..IDLE_PROBES {
            let previous = idle.last().map(|r| micros(*r, false));
            if let Some(rtt) = probe(&link, i as u32 + 1, previous, IDLE_WAIT, &never)? {
                idle.push(rtt);
            }
            std::thread::sleep(gap);
        }
        Ok(Prober {
            link,
            rate,
            idle,
            shared: Arc::new(Mutex::new(Shared::default())),
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            loaded_since: None,
        })
    }

    /// Starts probing beside the load.
    pub(crate) fn start_loaded(&mut self) {
        if self.thread.is_some() {
            return;
        }
        let Ok(link) = self.link.try_clone() else {
            self.note("the probe connection could not be shared".into());
            return;
        };
        let (shared, stop) = (self.shared.clone(), self.stop.clone());
        let period = Duration::from_secs_f64(1.0 / f64::from(self.rate.max(1)));
        let last_idle = self.idle.last().map(|r| micros(*r, false));
        let spawned = std::thread::Builder::new()
            .name("ws-latency".into())
            .spawn(move || loaded_loop(&link, period, last_idle, &shared, &stop));
        match spawned {
            Ok(t) => {
                self.thread = Some(t);
                self.loaded_since = Some(Instant::now());
            }
            Err(e) => self.note(format!("no probe thread: {e}")),
        }
    }

    fn note(&self, why: String) {
        if let Ok(mut s) = self.shared.lock() {
            s.failed.get_or_insert(why);
        }
    }

    /// The probes that came back since the last call.
    pub(crate) fn take_interval(&self) -> RttStats {
        let mut v = self
            .shared
            .lock()
            .map(|mut s| std::mem::take(&mut s.pending))
            .unwrap_or_default();
        RttStats::of(&mut v)
    }

    /// Ends the probing thread and the connection.
    fn stop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Link::Tcp(_) = self.link {
            self.link.close();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Link::Stream(_) = self.link {
            self.link.close();
        }
    }

    /// Stops probing; the idle and loaded distributions.
    pub fn finish(&mut self) -> LatencySummary {
        self.stop();
        let (mut all, failed) = self
            .shared
            .lock()
            .map(|mut s| (std::mem::take(&mut s.all), s.failed.take()))
            .unwrap_or_default();
        let mut idle = self.idle.clone();
        let secs = self.loaded_since.map_or(0.0, |t| t.elapsed().as_secs_f64());
        LatencySummary {
            rate: self.rate,
            achieved_rate: if secs > 0.0 { all.len() as f64 / secs } else { 0.0 },
            idle: RttStats::of(&mut idle),
            loaded: RttStats::of(&mut all),
            note: failed,
            in_test_connection: matches!(self.link, Link::Stream(_)),
        }
    }

    /// Fills in the latency of the events a test emits: starts the loaded
    /// probes at the test's start, adds each interval's and the end's.
    pub fn stage(mut self) -> impl FnMut(&mut Event) + Send {
        let mut finished = false;
        move |ev: &mut Event| match ev {
            Event::Start(_) => self.start_loaded(),
            // (An iperf 2 `-r` runs a second test after the first's end:
            // the probes ended with the first.)
            Event::Interval(r) if !finished => r.latency = Some(self.take_interval()),
            Event::End(s) if !finished => {
                finished = true;
                s.latency = Some(self.finish());
            }
            _ => {}
        }
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A round trip as a probe reports it to the server.
fn micros(rtt: f64, loaded: bool) -> PreviousRtt {
    PreviousRtt {
        loaded,
        micros: (rtt * 1e6).round().clamp(0.0, u32::MAX as f64) as u32,
    }
}

fn loaded_loop(
    link: &Link,
    period: Duration,
    mut previous: Option<PreviousRtt>,
    shared: &Mutex<Shared>,
    stop: &AtomicBool,
) {
    let mut next = Instant::now();
    let mut id = IDLE_PROBES as u32;
    while !stop.load(Relaxed) {
        id = id.wrapping_add(1);
        match probe(link, id, previous, LOADED_WAIT, stop) {
            Ok(Some(rtt)) => {
                previous = Some(micros(rtt, true));
                if let Ok(mut s) = shared.lock() {
                    s.pending.push(rtt);
                    if s.all.len() < MAX_KEPT {
                        s.all.push(rtt);
                    }
                }
            }
            Ok(None) => break,
            Err(why) => {
                if let Ok(mut s) = shared.lock() {
                    s.failed.get_or_insert(format!("probing stopped: {why}"));
                }
                break;
            }
        }
        next += period;
        let now = Instant::now();
        if next < now {
            // A slow reply: the next probe goes now, not a burst to catch up.
            next = now;
        }
        while !stop.load(Relaxed) && Instant::now() < next {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
        }
    }
}
