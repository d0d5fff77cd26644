//! Running a set of iperf 2 flows through the one test loop: what iperf 2
//! adds to it is its way of ending (senders half-close and wait for the
//! peer to close; a UDP receiver answers its sender's FIN at once) and its
//! presentation (intervals on the grid, the FIN counted as a datagram).

use std::io::Read;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token, Waker};

use crate::server::guards::{Breach, Guards};
use wirespeed_core::config::TestParams;
use wirespeed_core::engine::drain::{DrainTimes, PathTiming};
use wirespeed_core::engine::run::{RunSpec, Steering, Turn};
use wirespeed_core::engine::{DataStream, LocalOpts, Session, StreamExtras};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{Event, Side, StartInfo, StreamSample};
use wirespeed_core::stats::Presentation;
use wirespeed_report::Reporter;
use wirespeed_sys::AsSock;

/// One direction of one connection, ready to run.
pub struct Flow {
    /// The stream (id = transfer id).
    pub ds: DataStream,
    /// Its hook, pre-counted bytes and what the reporter knows of it.
    pub extras: StreamExtras,
    /// For a connection that only sends: a handle to wait on for the peer's
    /// close once we have half-closed (iperf 2's "await server close",
    /// which also drains a 2.1 server's unsolicited ack).
    pub await_close: Option<TcpStream>,
    /// Called once with the flow's whole-test line: as soon as its sender's
    /// FIN ended it (a UDP receiver answers with its report at once), else
    /// after the end report.
    pub on_end: Option<OnEnd>,
}

/// What a flow does with its whole-test line.
pub(crate) type OnEnd = Box<dyn FnOnce(&StreamSample) + Send>;

impl Flow {
    /// A flow with no close to await and nothing to do at its end.
    pub fn new(ds: DataStream, extras: StreamExtras) -> Flow {
        Flow {
            ds,
            extras,
            await_close: None,
            on_end: None,
        }
    }
}

/// How a set of flows runs.
pub(crate) struct RunOpts {
    /// Reporting interval.
    pub interval: Option<Duration>,
    /// This end stops the senders at the test's time (else flows end when
    /// their peers close).
    pub decides_end: bool,
    /// Give up on everything at this time (a stuck peer).
    pub watchdog: Option<Instant>,
    /// How long receivers may take to reach EOF once the senders stopped.
    pub drain: Duration,
    /// End when nothing has been received for this long (a vanished peer).
    pub idle_limit: Option<Duration>,
    /// Raised to end the test early (a server's listen time, a signal seen
    /// elsewhere).
    pub stop: Arc<AtomicBool>,
    /// Signals: nonzero ends the test early.
    pub signal: Arc<AtomicUsize>,
    /// `-F` on a sender.
    pub file: Option<std::path::PathBuf>,
    /// Samples for a chart only (see [`LocalOpts::samples`]).
    pub samples: Option<Duration>,
    /// Where the test's `start` says it connected to, or whom it accepted.
    pub start: StartInfo,
}

/// How long a pure sender waits for its peer to close after half-closing.
fn await_close_limit(params: &TestParams) -> Duration {
    params
        .duration()
        .unwrap_or(Duration::ZERO)
        .clamp(Duration::from_secs(2), Duration::from_secs(10))
}

/// Reads until EOF (or error, or the deadline): the peer closed.
fn await_close(mut s: TcpStream, deadline: Instant) {
    let mut buf = [0u8; 4096];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let _ = s.set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))));
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// How soon after connecting a server that refuses a client closes on it:
/// the round trip of the header and the close, and time to decide.
fn refusal_window(path: PathTiming) -> Duration {
    Duration::from_secs(1).max(path.rtt * 3)
}

/// A TCP client's flow the server closed (reset, or a broken pipe) as it
/// began, before anything came back: the server refused this client. iperf
/// 2 has no way to say why (a 2.1.8 server closes a client whose permit
/// key is wrong; ours one its --allow/--deny does not admit, or beyond
/// --max-tests), so the error says what is known, and replaces the end
/// report, whose "transfer" would be what the client wrote into a closing
/// connection.
fn closed_before_start(params: &TestParams, session: &Session, e: &Error, at: Instant) -> Option<Error> {
    let by_peer = matches!(e.errno, Some(libc::ECONNRESET | libc::EPIPE));
    let early = at.saturating_duration_since(session.started) < refusal_window(session.path_timing());
    let nothing_back = session.stats.total_bytes(wirespeed_core::stats::StreamRole::Recv) == 0;
    (params.protocol == wirespeed_core::config::Protocol::Tcp && by_peer && early && nothing_back).then(|| {
        let mut refused = Error::msg(
            e.code,
            format!(
                "the server closed the connection before the test started ({}): it may have refused this client",
                e.why()
            ),
        );
        // Kept, so a caller can tell a refusal from other failures
        // (`--rpm` tries a refused load flow once more).
        refused.errno = e.errno;
        refused
    })
}

/// iperf 2's part of the test loop.
struct Iperf2Steering<'a> {
    opts: &'a RunOpts,
    poll: Poll,
    events: Events,
    on_end: Vec<Option<OnEnd>>,
    closers: Vec<TcpStream>,
    close_limit: Duration,
    failure: Option<Error>,
    /// When the first stream failed.
    failed_at: Option<Instant>,
    /// A server's guards (`server::guards`), and the limit that ended the
    /// test, if one did.
    guards: Option<Guards>,
    breach: Option<Breach>,
}

impl Steering for Iperf2Steering<'_> {
    fn check(&mut self, session: &Session, now: Instant) -> Result<Turn, Error> {
        let o = self.opts;
        if o.stop.load(Relaxed) || o.signal.load(Relaxed) != 0 || o.watchdog.is_some_and(|w| now >= w) {
            return Ok(Turn::Finish);
        }
        // The flows' own end when no FIN comes (a UDP receiver's sender
        // that sends none, or whose FIN was lost), before the guards.
        if let (Some(limit), Some(idle)) = (o.idle_limit, session.stats.rx_idle(now))
            && idle >= limit
        {
            return Ok(Turn::Finish);
        }
        if let Some(g) = self.guards.as_mut() {
            let r = g
                .check(session, now, &|| session.path_timing())
                .and_then(|()| g.tick(now, session.stats.moved()));
            if let Err(b) = r {
                // The test is over: its streams close now (a TCP client's
                // next write meets a reset), its reports still print.
                self.breach = Some(b);
                return Ok(Turn::Abort);
            }
        }
        // A receiver its sender's FIN ended answers now, not when the
        // other flows are done.
        for (i, slot) in self.on_end.iter_mut().enumerate() {
            let st = &session.stats.streams[i];
            if slot.is_some()
                && st.meta.detail.as_ref().is_some_and(|d| d.fin())
                && session.stats.ended_at(i).is_some()
                && let (Some(f), Some(line)) = (slot.take(), session.stats.stream_total(i))
            {
                f(&line);
            }
        }
        Ok(Turn::Go)
    }

    fn wait(&mut self, _session: &Session, until: Instant) -> Result<Turn, Error> {
        let left = until.saturating_duration_since(Instant::now());
        let _ = self.poll.poll(&mut self.events, Some(left));
        Ok(Turn::Go)
    }

    /// A failed stream ends the test at once; the reports still print.
    fn stream_failed(&mut self, e: Error) -> Result<Turn, Error> {
        self.failure = Some(e);
        self.failed_at = Some(Instant::now());
        Ok(Turn::Abort)
    }

    fn senders_stopped(&mut self, _session: &mut Session) -> Result<(), Error> {
        // What was written last may still cross a long path (and wait out a
        // retransmission) before the peer can close.
        let timing = self
            .closers
            .iter()
            .map(|c| PathTiming::of_socket(c.raw_sock()))
            .fold(PathTiming::default(), PathTiming::max);
        let limit = DrainTimes::new(self.close_limit, timing, true).soft;
        let close_by = Instant::now() + limit;
        for c in self.closers.drain(..) {
            await_close(c, close_by);
        }
        Ok(())
    }
}

/// Runs `flows` to their end and emits their reports (start, intervals,
/// end). Stream failures end the test early and come back as the error,
/// after the reports.
pub(crate) fn run_flows(
    params: &TestParams,
    side: Side,
    flows: Vec<Flow>,
    opts: &RunOpts,
    reporter: &mut Reporter,
) -> Result<(), Error> {
    run_flows_guarded(params, side, flows, opts, None, reporter).map(|_| ())
}

/// [`run_flows`] held to a server's `guards`: the limit that ended the
/// test, if one did (its reports have printed; saying why is the
/// caller's).
pub(crate) fn run_flows_guarded(
    params: &TestParams,
    side: Side,
    flows: Vec<Flow>,
    opts: &RunOpts,
    guards: Option<Guards>,
    reporter: &mut Reporter,
) -> Result<Option<Breach>, Error> {
    let poll = Poll::new().map_err(|e| Error::io(Code::INITTEST, &e))?;
    let waker = Arc::new(Waker::new(poll.registry(), Token(0)).map_err(|e| Error::io(Code::INITTEST, &e))?);
    let mut streams = Vec::with_capacity(flows.len());
    let mut closers = Vec::new();
    let mut on_end = Vec::with_capacity(flows.len());
    for f in flows {
        streams.push((f.ds, f.extras));
        on_end.push(f.on_end);
        if let Some(c) = f.await_close {
            closers.push(c);
        }
    }
    let local = LocalOpts {
        interval: opts.interval,
        affinity: None,
        file: opts.file.clone(),
        decides_end: opts.decides_end,
        // iperf 2 ends every TCP flow by closing its sending side.
        peer_half_closes: true,
        presentation: Presentation {
            grid: opts.interval.map(|i| i.as_secs_f64()),
            // iperf 2's UDP senders end with a FIN datagram the receiver
            // counts as data; 2.1.8's sender counts it too.
            fin_datagram: true,
        },
        samples: opts.samples,
        // A client's flows back carry the ECN codepoint it asked for (the
        // server reflects the client's TOS); a server's receiving flows
        // are told by each client's header.
        peer_ecn: (side == Side::Client && params.tos & 3 != 0)
            .then(|| wirespeed_core::events::Ecn::of_tos(params.tos)),
    };
    let mut session = Session::start_with(params, side, streams, waker, &local)?;
    reporter.emit(Event::Start(Box::new(StartInfo {
        connecting_to: opts.start.connecting_to.clone(),
        accepted_connection: opts.start.accepted_connection.clone(),
        ..session.start_info()
    })));
    let mut steer = Iperf2Steering {
        opts,
        poll,
        events: Events::with_capacity(4),
        on_end,
        closers,
        close_limit: await_close_limit(params),
        failure: None,
        failed_at: None,
        guards,
        breach: None,
    };
    let spec = RunSpec {
        drain: opts.drain,
        tick: Duration::from_millis(100),
        // Like iperf 2, a last sliver under a quarter interval is only
        // part of the totals.
        last_interval_min: Some(0.25),
        peer_ends: false,
    };
    wirespeed_core::engine::run::run(&mut session, &spec, &mut steer, &mut |e| reporter.emit(e))?;
    if side == Side::Client
        && let (Some(e), Some(at)) = (&steer.failure, steer.failed_at)
        && let Some(refused) = closed_before_start(params, &session, e, at)
    {
        // No end report: what was written before is no measurement.
        return Err(refused);
    }
    let summary = session.stats.summary(Instant::now(), None, session.congestion());
    let lines = summary.local.streams.clone();
    reporter.emit(Event::End(Box::new(summary)));
    for (slot, line) in steer.on_end.iter_mut().zip(&lines) {
        if let Some(f) = slot.take() {
            f(line);
        }
    }
    match (steer.breach, steer.failure) {
        (Some(b), _) => Ok(Some(b)),
        (None, Some(e)) => Err(e),
        (None, None) => Ok(None),
    }
}
