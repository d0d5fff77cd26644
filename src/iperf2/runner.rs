//! Running a set of iperf 2 flows to the end: the session's threads, the
//! interval timer, the orderly stop (senders half-close and wait for the
//! peer to close; receivers read to EOF), and the flow reports.

use std::io::Read;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token, Waker};

use crate::config::TestParams;
use crate::error::{Code, Error};
use crate::report::Reporter;
use crate::report::event::FlowLine;
use crate::report::event::{Event, Side};
use crate::session::{DataStream, LocalOpts, Session, StreamExtras};
use crate::stats::flow::{FlowInfo, FlowStats};

/// One direction of one connection, ready to run.
pub struct Flow {
    /// The stream (id = transfer id).
    pub ds: DataStream,
    /// Its hook and pre-counted bytes.
    pub extras: StreamExtras,
    /// What the reporter needs to know of it.
    pub info: FlowInfo,
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
pub type OnEnd = Box<dyn FnOnce(&FlowLine) + Send>;

impl Flow {
    /// A flow with no close to await and nothing to do at its end.
    pub fn new(ds: DataStream, extras: StreamExtras, info: FlowInfo) -> Flow {
        Flow {
            ds,
            extras,
            info,
            await_close: None,
            on_end: None,
        }
    }
}

/// How a set of flows runs.
pub struct RunOpts {
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

/// Whether flow `i` was ended by its sender's FIN.
fn infos_fin(fstats: &FlowStats, i: usize) -> bool {
    fstats.counters_of(i).is_some_and(|c| c.fin())
}

/// Runs `flows` to their end and emits their flow reports. Stream failures
/// end the test early and come back as the error, after the reports.
pub fn run_flows(
    params: &TestParams,
    side: Side,
    flows: Vec<Flow>,
    opts: &RunOpts,
    reporter: &mut Reporter,
) -> Result<(), Error> {
    let mut poll = Poll::new().map_err(|e| Error::io(Code::INITTEST, &e))?;
    let waker = Arc::new(Waker::new(poll.registry(), Token(0)).map_err(|e| Error::io(Code::INITTEST, &e))?);
    let mut streams = Vec::with_capacity(flows.len());
    let mut infos = Vec::with_capacity(flows.len());
    let mut closers = Vec::new();
    let mut on_end = Vec::with_capacity(flows.len());
    for f in flows {
        streams.push((f.ds, f.extras));
        on_end.push(f.on_end);
        infos.push(f.info);
        if let Some(c) = f.await_close {
            closers.push(c);
        }
    }
    let local = LocalOpts {
        interval: opts.interval,
        affinity: None,
        file: opts.file.clone(),
        decides_end: opts.decides_end,
    };
    let mut session = Session::start_with(params, side, streams, waker, &local)?;
    let mut fstats = FlowStats::new(infos, opts.interval);
    let mut events = Events::with_capacity(4);
    let mut failure = None;
    loop {
        let now = Instant::now();
        if opts.stop.load(Relaxed) || opts.signal.load(Relaxed) != 0 || opts.watchdog.is_some_and(|w| now >= w) {
            break;
        }
        if let Some(e) = session.stream_error() {
            failure = Some(e);
            break;
        }
        if let (Some(limit), Some(idle)) = (opts.idle_limit, session.stats.rx_idle(now))
            && idle >= limit
        {
            break;
        }
        let mut evs = Vec::new();
        session.on_timers(now, &mut |e| evs.push(e));
        for e in evs {
            if let Event::Interval(r) = e {
                reporter.emit(Event::Flows(Box::new(fstats.interval(&r, &session.stats, false))));
            }
        }
        // A receiver its sender's FIN ended answers now, not when the
        // other flows are done.
        for (i, slot) in on_end.iter_mut().enumerate() {
            if slot.is_some()
                && infos_fin(&fstats, i)
                && session.stats.streams[i].counters.ended_ns.load(Relaxed) != 0
                && let (Some(f), Some(line)) = (slot.take(), fstats.flow_end(&session.stats, i))
            {
                f(&line);
            }
        }
        if session.finished(now) {
            break;
        }
        let wake = session
            .next_deadline()
            .map(|d| d.min(now + Duration::from_millis(100)))
            .unwrap_or(now + Duration::from_millis(100));
        let _ = poll.poll(&mut events, Some(wake.saturating_duration_since(Instant::now())));
    }
    session.stop_senders();
    let close_by = Instant::now() + await_close_limit(params);
    for c in closers {
        await_close(c, close_by);
    }
    if failure.is_some() {
        session.abort();
    } else {
        session.drain_receivers(Instant::now() + opts.drain);
    }
    let mut evs = Vec::new();
    session.final_sample(Instant::now(), &mut |e| evs.push(e));
    for e in evs {
        if let Event::Interval(r) = e {
            let rep = fstats.interval(&r, &session.stats, true);
            // Like iperf 2, a last sliver under a quarter interval is only
            // part of the totals.
            // An interval covering the whole test would only repeat the total.
            let long_enough = opts
                .interval
                .is_none_or(|i| rep.sum.end - rep.sum.start >= i.as_secs_f64() * 0.25);
            if long_enough && rep.sum.start > 0.0 {
                reporter.emit(Event::Flows(Box::new(rep)));
            }
        }
    }
    let end = fstats.end(&session.stats);
    reporter.emit(Event::Flows(Box::new(end.clone())));
    for (slot, line) in on_end.iter_mut().zip(&end.flows) {
        if let Some(f) = slot.take() {
            f(line);
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
