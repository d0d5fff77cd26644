//! The one test loop: every test of either dialect, on either end, runs
//! its streams through [`run`].
//!
//! The loop ticks the reporting intervals, watches the streams, the end
//! condition (time, bytes, blocks, every stream ended) and whatever the
//! dialect watches besides (a control connection, signals, watchdogs,
//! idle peers), then stops the test in order: senders stop and half-close,
//! the dialect says so to its peer, receivers drain what is in flight, and
//! the last interval is taken. What differs between the dialects and ends
//! — the iperf3 control exchange, iperf 2's closes and FINs — is the
//! [`Steering`] a driver passes in; the results exchange and the final
//! summary are the driver's, after the loop.

use std::time::{Duration, Instant};

use crate::engine::Session;
use crate::engine::drain::PathTiming;
use crate::error::Error;
use crate::events::Event;

/// What the loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Keep running.
    Go,
    /// End the test in order (its end condition, or the peer's word).
    Finish,
    /// Stop everything now; the measured part is still reported.
    Abort,
}

/// How the loop ended.
#[derive(Debug, Clone)]
pub enum Ended {
    /// In order: senders stopped, receivers drained, last interval taken.
    Finished,
    /// Cut short ([`Turn::Abort`]): streams stopped at once.
    Aborted,
    /// The test ran to its end, but the peer did not answer the end (a
    /// path or peer gone quiet): the last interval is taken, the error
    /// says what was missing.
    Unanswered(Error),
}

/// A dialect's part of the loop. Every method has a default that does
/// nothing, so a steering says only what its dialect adds.
pub trait Steering {
    /// Before each turn: signals, watchdogs, idle peers.
    fn check(&mut self, _session: &Session, _now: Instant) -> Result<Turn, Error> {
        Ok(Turn::Go)
    }

    /// Waits up to `until` for the peer (a control connection) or a wake-up.
    fn wait(&mut self, session: &Session, until: Instant) -> Result<Turn, Error>;

    /// A stream failed: the error to end with, or how to go on.
    fn stream_failed(&mut self, e: Error) -> Result<Turn, Error> {
        Err(e)
    }

    /// After each turn's timers (an interval may have been reported).
    fn after_timers(&mut self, _session: &Session, _interval: bool) -> Result<(), Error> {
        Ok(())
    }

    /// The senders have stopped (half-closed): tell the peer, wait for it.
    fn senders_stopped(&mut self, _session: &mut Session) -> Result<(), Error> {
        Ok(())
    }

    /// What the dialect knows of the path's timing besides the data
    /// streams (a control connection's TCP_INFO, fresh from the end's
    /// exchange): the drain waits at least that long.
    fn path_hint(&self) -> PathTiming {
        PathTiming::default()
    }
}

/// How a test ends and reports its last interval.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec {
    /// The least time receivers are given to drain once the senders
    /// stopped; a long path stretches it (see [`crate::engine::drain`]).
    pub drain: Duration,
    /// How often the loop looks at the streams when nothing wakes it.
    pub tick: Duration,
    /// The last partial interval is reported only if it spans at least
    /// this fraction of an interval (and, then, not if it would cover the
    /// whole test, repeating the total): iperf 2's rule. `None`: iperf3's,
    /// which reports any last interval that carried data or is at least a
    /// tenth of an interval long.
    pub last_interval_min: Option<f64>,
    /// The peer says when the test ends (iperf3's server waits for
    /// TEST_END): the loop runs until the steering finishes it, whatever
    /// the streams do meanwhile.
    pub peer_ends: bool,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            drain: Duration::from_secs(3),
            tick: Duration::from_millis(250),
            last_interval_min: None,
            peer_ends: false,
        }
    }
}

/// Runs `session` to its end, emitting its intervals.
pub fn run(
    session: &mut Session,
    spec: &RunSpec,
    steer: &mut dyn Steering,
    emit: &mut dyn FnMut(Event),
) -> Result<Ended, Error> {
    let r = turns(session, spec, steer, emit);
    match r {
        Ok(Turn::Abort) => {
            session.abort();
            last_interval(session, spec, emit);
            Ok(Ended::Aborted)
        }
        Ok(_) => {
            session.stop_senders();
            if let Err(e) = steer.senders_stopped(session) {
                session.abort();
                last_interval(session, spec, emit);
                return Ok(Ended::Unanswered(e));
            }
            session.drain_receivers(spec.drain, steer.path_hint());
            last_interval(session, spec, emit);
            Ok(Ended::Finished)
        }
        Err(e) => {
            session.abort();
            Err(e)
        }
    }
}

/// The turns of the loop, until one ends it.
fn turns(
    session: &mut Session,
    spec: &RunSpec,
    steer: &mut dyn Steering,
    emit: &mut dyn FnMut(Event),
) -> Result<Turn, Error> {
    loop {
        let now = Instant::now();
        match steer.check(session, now)? {
            Turn::Go => {}
            t => return Ok(t),
        }
        if let Some(e) = session.stream_error().or_else(|| session.peer_gone()) {
            match steer.stream_failed(e)? {
                Turn::Go => {}
                t => return Ok(t),
            }
        }
        let mut interval = false;
        session.on_timers(now, &mut |e| {
            interval |= matches!(e, Event::Interval(_));
            emit(e)
        });
        steer.after_timers(session, interval)?;
        if !spec.peer_ends && session.finished(now) {
            // A stream that failed may have recorded its error after the
            // look above and then ended (it records the error before it
            // counts as done): its failure, not a normal end.
            return match session.stream_error() {
                Some(e) => match steer.stream_failed(e)? {
                    Turn::Go => Ok(Turn::Finish),
                    t => Ok(t),
                },
                None => Ok(Turn::Finish),
            };
        }
        let wake_by = session
            .next_deadline()
            .map_or(now + spec.tick, |d| d.min(now + spec.tick));
        match steer.wait(session, wake_by)? {
            Turn::Go => {}
            t => return Ok(t),
        }
    }
}

/// The last (partial) interval, if it is worth reporting.
fn last_interval(session: &mut Session, spec: &RunSpec, emit: &mut dyn FnMut(Event)) {
    let interval = session.interval().map(|i| i.as_secs_f64());
    let mut events = Vec::new();
    session.final_sample(Instant::now(), &mut |e| events.push(e));
    for e in events {
        if let (Event::Interval(r), Some(min)) = (&e, spec.last_interval_min) {
            let long_enough = interval.is_none_or(|i| r.sum.end - r.sum.start >= i * min);
            if !long_enough || r.sum.start <= 0.0 {
                continue;
            }
        }
        emit(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TestParams;
    use crate::engine::{DataSock, DataStream, StreamExtras};
    use crate::events::Side;
    use crate::stats::StreamRole;
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;

    /// Resets the sender's peer only after the loop has looked for stream
    /// errors in a turn, and holds that turn until the sender has ended:
    /// the failure lands between the loop's look for errors and its look
    /// at the end.
    struct LateReset {
        peer: Option<TcpStream>,
        poll: mio::Poll,
        events: mio::Events,
    }

    impl Steering for LateReset {
        fn after_timers(&mut self, session: &Session, _interval: bool) -> Result<(), Error> {
            if let Some(p) = self.peer.take() {
                let s = socket2::Socket::from(p);
                let _ = s.set_linger(Some(Duration::ZERO));
                drop(s);
                let until = Instant::now() + Duration::from_secs(10);
                while !session.finished(Instant::now()) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Ok(())
        }

        fn wait(&mut self, _session: &Session, until: Instant) -> Result<Turn, Error> {
            let left = until.saturating_duration_since(Instant::now());
            let _ = self.poll.poll(&mut self.events, Some(left));
            Ok(Turn::Go)
        }
    }

    #[test]
    fn a_stream_failing_as_the_loop_looks_at_the_end_is_a_failure() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (peer, _) = l.accept().unwrap();
        let (local, remote) = (sock.local_addr().unwrap(), sock.peer_addr().unwrap());
        let poll = mio::Poll::new().unwrap();
        let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let ds = DataStream::new(1, StreamRole::Send, DataSock::Tcp(sock), local, remote);
        let params = TestParams::default();
        let local_opts = crate::engine::LocalOpts {
            decides_end: true,
            ..Default::default()
        };
        let mut session = Session::start_with(
            &params,
            Side::Client,
            vec![(ds, StreamExtras::default())],
            waker,
            &local_opts,
        )
        .unwrap();
        let mut steer = LateReset {
            peer: Some(peer),
            poll,
            events: mio::Events::with_capacity(4),
        };
        let spec = RunSpec {
            drain: Duration::from_millis(200),
            ..RunSpec::default()
        };
        let r = run(&mut session, &spec, &mut steer, &mut |_| {});
        let e = r.expect_err("the reset is the test's end");
        assert!(matches!(e.errno, Some(libc::ECONNRESET | libc::EPIPE)), "{e:?}");
    }
}
