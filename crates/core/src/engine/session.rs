//! One running test, as both ends see it: the data streams, their threads,
//! the interval and omit timers, and the orderly stop (senders stop and
//! half-close; receivers drain to EOF) that makes totals agree.

use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use wirespeed_sys::AsSock;

use super::drain::{DrainTimes, PathTiming};
use super::pacer::{PaceRate, Pacer};
use super::placement::{ThreadCount, multiplexed};
use super::streams::{DataSock, DataStream, StreamExtras};
use super::udp::UdpOptions;
use super::{Budget, Payload, Sinkhole, StreamHandle, StreamTask, Target, TestControl};
use crate::config::{Direction, EndCondition, Protocol, TestParams};
use crate::error::{Code, Error};
use crate::events::{ConnInfo, Event, RoleTag, Side};
use crate::stats::{Presentation, StreamCounters, StreamRole, StreamStats, TestStats};

/// Multiplexing workers of a test, one set per direction so the senders
/// can be stopped and joined before the receivers drain.
#[derive(Default)]
struct Muxes {
    send: Option<super::mux::Mux>,
    recv: Option<super::mux::Mux>,
}

/// Local settings a session needs besides the negotiated parameters.
#[derive(Debug, Clone, Default)]
pub struct LocalOpts {
    /// Reporting interval.
    pub interval: Option<Duration>,
    /// CPU to pin stream threads to.
    pub affinity: Option<usize>,
    /// `-F` file (sender reads it, receiver writes it).
    pub file: Option<std::path::PathBuf>,
    /// Whether this host decides the end (the client).
    pub decides_end: bool,
    /// How the numbers are presented.
    pub presentation: Presentation,
    /// The peer half-closes each stream after its last byte (a wirespeed
    /// or iperf 2 peer; an iperf3 server, which closes its streams at
    /// TEST_END): receivers drain to EOF instead of until quiet.
    pub peer_half_closes: bool,
    /// Also sample this often for a chart only ([`Event::Sample`]), when
    /// there are no periodic reports to draw.
    pub samples: Option<Duration>,
    /// UDP: the ECN codepoint the peer's senders set, when the dialect
    /// knows it (iperf3's TOS parameter); a stream's own word wins.
    pub peer_ecn: Option<crate::events::Ecn>,
}

/// Samples taken for a chart only, on a chain of their own.
struct ChartSamples {
    every: Duration,
    next: Instant,
    aside: crate::stats::ChartSampler,
}

/// What every stream of a test shares: its steering, its end, its
/// budgets and pacing, where received bytes go.
struct Plan {
    control: Arc<TestControl>,
    omitting: bool,
    block_len: usize,
    /// Exact totals: every sender draws from one budget.
    budget: Option<Arc<Budget>>,
    /// The client watches what it receives (reverse/bidir) to end a test.
    target: Option<Arc<Target>>,
    pace: Option<(PaceRate, u32)>,
    sink_file: Option<Arc<std::sync::Mutex<std::fs::File>>>,
    bidir: bool,
    omit_end: Option<Instant>,
    end_at: Option<Instant>,
    udp: UdpOptions,
    multiplex: bool,
}

impl Plan {
    fn new(
        params: &TestParams,
        local: &LocalOpts,
        streams: &[(DataStream, StreamExtras)],
        waker: Arc<mio::Waker>,
        now: Instant,
    ) -> Result<Plan, Error> {
        let control = TestControl::new(Some(waker));
        control.eof_expected.store(local.peer_half_closes, Relaxed);
        let omitting = !params.omit.is_zero();
        control.omitting.store(omitting, Relaxed);
        let block_len = params.block_len_or_default() as usize;
        let sends = streams.iter().any(|(s, _)| s.role == StreamRole::Send);
        let recvs = streams.iter().any(|(s, _)| s.role == StreamRole::Recv);
        let (budget, target) = match params.end {
            EndCondition::Bytes(n) => (
                sends.then(|| Budget::bytes(n)),
                (recvs && local.decides_end).then(|| Target::new(n, false)),
            ),
            // A receiver cannot see block boundaries in a TCP byte stream, so
            // it waits for the bytes the sender's blocks add up to.
            EndCondition::Blocks(n) => (
                sends.then(|| Budget::blocks(n)),
                (recvs && local.decides_end).then(|| Target::new(n.saturating_mul(block_len as u64), false)),
            ),
            EndCondition::Time(_) => (None, None),
        };
        let pace = match (params.pps, params.rate) {
            // Periodic bursts: a burst's blocks back to back, once a period.
            _ if params.periodic_burst.is_some() && sends => params.periodic_burst.map(|(size, period)| {
                let bps = (f64::from(size) * 8.0 / period.as_secs_f64()).max(1.0) as u64;
                let until = match params.end {
                    EndCondition::Time(d) if !d.is_zero() => Some(now + d),
                    _ => None,
                };
                (PaceRate::Bursts { bps, until }, (size / block_len.max(1) as u32).max(1))
            }),
            (Some(pps), _) if pps > 0 => Some((PaceRate::Packets(pps), params.burst)),
            (_, r) if r > 0 => Some((
                match params.rate_stdev {
                    Some(stdev) => PaceRate::Varying { mean: r, stdev },
                    None => PaceRate::Bits(r),
                },
                params.burst,
            )),
            _ => None,
        };
        let sink_file = match (&local.file, recvs) {
            (Some(p), true) => Some(Arc::new(std::sync::Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .truncate(true)
                    .open(p)
                    .map_err(|e| Error::io(Code::FILE, &e))?,
            ))),
            _ => None,
        };
        let end_at = match (local.decides_end, params.end) {
            (true, EndCondition::Time(d)) if !d.is_zero() => Some(now + params.omit + d),
            _ => None,
        };
        let udp = UdpOptions {
            batch_bytes: UdpOptions::batch_for(streams.len()),
            nominal_end: params.duration().map(|d| now + params.omit + d),
            until: end_at,
            // --pacing-timer bounds the catch-up after a stall (µs).
            catch_up: Duration::from_micros(params.pacing_timer as u64),
            origin: Some(now),
            ..UdpOptions::default()
        };
        // A frame clock needs a thread of its own.
        let multiplex = multiplexed(streams, local.file.is_some())? && params.frames.is_none();
        crate::debug!(
            3,
            "{} streams: {}",
            streams.len(),
            if multiplex {
                format!("multiplexed, {} worker(s) per direction", super::mux::workers())
            } else {
                "a thread each".to_string()
            }
        );
        Ok(Plan {
            control,
            omitting,
            block_len,
            budget,
            target,
            pace,
            sink_file,
            bidir: params.direction == Direction::Bidir,
            omit_end: omitting.then(|| now + params.omit),
            end_at,
            udp,
            multiplex,
        })
    }

    /// One stream's job.
    fn task(&self, params: &TestParams, local: &LocalOpts, ds: &DataStream, extras: &StreamExtras) -> StreamTask {
        let payload = match (&local.file, ds.role) {
            (Some(p), StreamRole::Send) => Payload::File(p.clone()),
            _ if params.repeating_payload => Payload::Repeating,
            _ => Payload::Random,
        };
        let sinkhole = match (&self.sink_file, params.skip_rx_copy) {
            (Some(f), _) => Sinkhole::File(f.clone()),
            (None, true) => Sinkhole::Truncate,
            (None, false) => Sinkhole::Discard,
        };
        let counters = Arc::new(StreamCounters::default());
        counters.bytes.store(extras.initial_bytes, Relaxed);
        StreamTask {
            id: ds.id,
            role: ds.role,
            block_len: self.block_len,
            pace: self.pace,
            budget: match (ds.role, extras.budget) {
                (StreamRole::Send, Some(n)) => Some(Budget::bytes(n)),
                (StreamRole::Send, None) => self.budget.clone(),
                _ => None,
            },
            target: (ds.role == StreamRole::Recv).then(|| self.target.clone()).flatten(),
            payload,
            sinkhole,
            zerocopy: params.zerocopy,
            counters,
            control: self.control.clone(),
            affinity: local.affinity,
            until: self.end_at,
            frames: params
                .frames
                .filter(|_| ds.role == StreamRole::Send)
                .map(|spec| (spec, Arc::new(crate::stats::FrameCounters::default()))),
        }
    }
}

/// The streams of a test as they start: their threads (or the sockets
/// for the workers), statistics and addresses.
#[derive(Default)]
struct Launch {
    handles: Vec<(StreamRole, Option<StreamHandle>)>,
    stats: Vec<StreamStats>,
    connected: Vec<ConnInfo>,
    socks: Vec<DataSock>,
    /// Of `socks`, the UDP senders a refusal ends (`DatagramFormat::refusal_ends`).
    refusal_ends: Vec<usize>,
    mux_send: Vec<(Arc<TcpStream>, StreamTask)>,
    mux_recv: Vec<(Arc<TcpStream>, StreamTask)>,
    mux_socks: Vec<Arc<TcpStream>>,
    threads: ThreadCount,
}

impl Launch {
    /// Starts one stream (or sets it aside for the workers).
    fn add(
        &mut self,
        plan: &Plan,
        params: &TestParams,
        side: Side,
        local: &LocalOpts,
        ds: DataStream,
        extras: StreamExtras,
    ) -> Result<(), Error> {
        let task = plan.task(params, local, &ds, &extras);
        let tag = plan.bidir.then_some(match (side, ds.role) {
            (Side::Client, StreamRole::Send) => RoleTag::TxC,
            (Side::Client, StreamRole::Recv) => RoleTag::RxC,
            (Side::Server, StreamRole::Send) => RoleTag::TxS,
            (Side::Server, StreamRole::Recv) => RoleTag::RxS,
        });
        let fd = ds.sock.sock_num();
        let mut meta = extras.meta;
        meta.addrs = Some((ds.info.local(), ds.info.remote()));
        if let DataSock::Udp(sock) = &ds.sock {
            // What the ECN field of this stream's datagrams was set to: a
            // sender's socket says; a receiver is told.
            meta.ecn_sent = match ds.role {
                StreamRole::Send => {
                    let ipv6 = sock.local_addr().is_ok_and(|a| a.is_ipv6());
                    wirespeed_sys::udp::sending_tos(sock, ipv6).map(crate::events::Ecn::of_tos)
                }
                StreamRole::Recv => meta.ecn_sent.or(local.peer_ecn),
            };
        }
        if matches!(ds.sock, DataSock::Tcp(_)) && side == Side::Client {
            // A client opens its streams: with `net.ipv4.tcp_ecn=1` its
            // SYN asks for ECN, and a peer that refuses is worth a line.
            meta.tcp_ecn_asked = wirespeed_sys::socket::tcp_ecn_requested() == Some(true);
        }
        if let Some((_, c)) = &task.frames {
            meta.frames = Some(c.clone());
        }
        let counters = task.counters.clone();
        self.connected.push(ds.info);
        if plan.multiplex
            && let DataSock::Tcp(sock) = ds.sock
        {
            // One descriptor per stream: the workers and TCP_INFO share it.
            let sock = Arc::new(sock);
            let st = StreamStats::new(ds.id, fd, ds.role, tag, counters, Some(sock.raw_sock())).with_meta(meta);
            self.stats.push(st);
            self.handles.push((ds.role, None));
            self.mux_socks.push(sock.clone());
            match ds.role {
                StreamRole::Send => self.mux_send.push((sock, task)),
                StreamRole::Recv => self.mux_recv.push((sock, task)),
            }
            return Ok(());
        }
        // TCP_INFO reads go through our own duplicate: the thread's
        // descriptor closes when the thread ends, and its number may be reused.
        let keep = ds.sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e))?;
        let tcp_fd = matches!(keep, DataSock::Tcp(_)).then_some(keep.raw_sock());
        self.stats
            .push(StreamStats::new(ds.id, fd, ds.role, tag, counters, tcp_fd).with_meta(meta));
        let handle = match ds.sock {
            DataSock::Tcp(sock) => super::spawn_tcp_with(sock, task, extras.hook, extras.kind)?,
            DataSock::Udp(sock) => {
                let mut opts = plan.udp.clone();
                opts.prefeed = extras.udp_prefeed;
                // The dialect's header: the engine writes no datagram of its own.
                let format = extras.udp_format.ok_or_else(|| {
                    Error::msg(Code::INITSTREAM, "a UDP stream was started without its datagram format")
                })?;
                if ds.role == StreamRole::Send && format.refusal_ends() {
                    self.refusal_ends.push(self.socks.len());
                }
                format.start(sock, task, opts, extras.hook)?
            }
            DataSock::Pipe(pipe) => super::pipe::spawn(pipe, task)?,
        };
        self.handles.push((ds.role, Some(handle)));
        self.socks.push(keep);
        self.threads.add(1);
        Ok(())
    }

    /// Starts the workers of the multiplexed streams.
    fn start_muxes(&mut self, control: &TestControl) -> Result<Muxes, Error> {
        let workers = super::mux::workers();
        let start = |streams: Vec<_>| -> Result<Option<super::mux::Mux>, Error> {
            if streams.is_empty() {
                return Ok(None);
            }
            super::mux::Mux::start(streams, workers).map(Some)
        };
        let send = start(std::mem::take(&mut self.mux_send));
        let recv = if send.is_ok() {
            start(std::mem::take(&mut self.mux_recv))
        } else {
            Ok(None)
        };
        match (send, recv) {
            (Ok(send), Ok(recv)) => Ok(Muxes { send, recv }),
            (send, recv) => {
                // Stop first: a started set of workers is joined when dropped.
                control.raise_stop();
                control.abort.store(true, Relaxed);
                Err(match (send, recv) {
                    (Err(e), _) | (_, Err(e)) => e,
                    _ => Error::new(Code::INITSTREAM),
                })
            }
        }
    }
}

/// A running test.
pub struct Session {
    /// Negotiated parameters.
    pub params: TestParams,
    /// Which end this is.
    pub side: Side,
    /// Steering shared with the stream threads.
    pub control: Arc<TestControl>,
    /// Each stream's role and thread (`None` when multiplexed), in
    /// creation order, as `stats.streams`.
    handles: Vec<(StreamRole, Option<StreamHandle>)>,
    /// Workers serving the multiplexed streams.
    muxes: Muxes,
    /// Sockets of the multiplexed streams (kept open for TCP_INFO).
    mux_socks: Vec<Arc<TcpStream>>,
    /// This session's share of [`STREAM_THREADS`].
    _threads: ThreadCount,
    /// Statistics.
    pub stats: TestStats,
    /// Stream addresses, in creation order.
    pub connected: Vec<ConnInfo>,
    interval: Option<Duration>,
    next_tick: Option<Instant>,
    omit_end: Option<Instant>,
    end_at: Option<Instant>,
    target: Option<Arc<Target>>,
    budget: Option<Arc<Budget>>,
    /// When the test started (TEST_START).
    pub started: Instant,
    /// Streams kept open for TCP_INFO and shutdown.
    socks: Vec<DataSock>,
    /// Of `socks`, the UDP senders a refusal ends.
    refusal_ends: Vec<usize>,
    /// UDP: how long every receiving stream must be quiet before a receive
    /// goal (-n/-k) counts as reached though datagrams were lost.
    udp_quiet: Duration,
    /// Samples for a chart only (no periodic reports).
    samples: Option<ChartSamples>,
}

impl Session {
    /// Starts a thread per stream (or multiplexed workers), each stream
    /// with its dialect extras.
    pub fn start_with(
        params: &TestParams,
        side: Side,
        streams: Vec<(DataStream, StreamExtras)>,
        waker: Arc<mio::Waker>,
        local: &LocalOpts,
    ) -> Result<Session, Error> {
        let now = Instant::now();
        let plan = Plan::new(params, local, &streams, waker, now)?;
        let mut launch = Launch::default();
        for (ds, extras) in streams {
            launch.add(&plan, params, side, local, ds, extras)?;
        }
        let muxes = launch.start_muxes(&plan.control)?;
        let interval = local.interval;
        let udp_quiet = plan
            .pace
            .map(|(r, _)| Pacer::cost(r, plan.block_len) * 3)
            .unwrap_or_default()
            .max(Duration::from_secs(2));
        let control = plan.control;
        let stats = TestStats::new(
            launch.stats,
            params.protocol,
            params.streams,
            plan.omitting,
            now,
            control.epoch,
        )
        .presented(local.presentation);
        let samples = local
            .samples
            .filter(|every| interval.is_none() && !every.is_zero())
            .map(|every| ChartSamples {
                every,
                next: now + every,
                aside: stats.aside(),
            });
        Ok(Session {
            params: params.clone(),
            side,
            stats,
            control,
            handles: launch.handles,
            muxes,
            mux_socks: launch.mux_socks,
            _threads: launch.threads,
            connected: launch.connected,
            interval,
            next_tick: interval.map(|i| now + i),
            omit_end: plan.omit_end,
            end_at: plan.end_at,
            target: plan.target,
            budget: plan.budget,
            started: now,
            socks: launch.socks,
            refusal_ends: launch.refusal_ends,
            udp_quiet,
            samples,
        })
    }

    /// A UDP sender a refusal ends whose peer refused a datagram (ICMP
    /// port unreachable, pending on its socket): the sender itself learns
    /// it only at its next send, which a slow one (a frame a minute) makes
    /// late.
    pub(crate) fn peer_gone(&self) -> Option<Error> {
        self.refusal_ends.iter().find_map(|&i| match self.socks.get(i) {
            Some(DataSock::Udp(s)) => match s.take_error() {
                Ok(Some(e)) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Some(super::udp::peer_gone()),
                _ => None,
            },
            _ => None,
        })
    }

    /// The earliest timer.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let sample = self.samples.as_ref().map(|s| s.next);
        [self.next_tick, self.omit_end, self.end_at, sample]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether the test's end condition is met (time, bytes, blocks), or
    /// every stream has ended on its own.
    pub fn finished(&self, now: Instant) -> bool {
        if self.end_at.is_some_and(|e| now >= e) {
            return true;
        }
        if self.omit_end.is_some() {
            return false;
        }
        if let Some(t) = &self.target {
            if t.reached() {
                return true;
            }
            // UDP has no end marker: if the last datagrams before the goal
            // were lost, the goal is never reached. Quiet receivers that got
            // something end the test; the loss shows in the results.
            if self.params.protocol == Protocol::Udp
                && self.stats.total_bytes(StreamRole::Recv) > 0
                && self.stats.rx_idle(now).is_some_and(|idle| idle >= self.udp_quiet)
            {
                return true;
            }
        }
        let senders = self.handles.iter().filter(|(r, _)| *r == StreamRole::Send).count();
        if self.budget.as_ref().is_some_and(|b| b.spent()) && senders > 0 {
            return (0..self.handles.len())
                .filter(|&i| self.handles[i].0 == StreamRole::Send)
                .all(|i| self.stream_ended(i));
        }
        // All streams ended by themselves (file sent, peer closed everything).
        !self.handles.is_empty() && (0..self.handles.len()).all(|i| self.stream_ended(i))
    }

    /// Whether stream `i` is done. Its end stamp is written before the
    /// thread wakes the controller, while the thread itself may still be
    /// exiting: looking only at the thread would miss that wake-up.
    fn stream_ended(&self, i: usize) -> bool {
        let thread_done = match &self.handles[i].1 {
            Some(h) => h.is_finished(),
            None => false,
        };
        thread_done || self.stats.streams[i].counters.ended_ns.load(Relaxed) != 0
    }

    /// Whether every receiving stream has ended (threads and workers).
    fn receivers_done(&self) -> bool {
        self.handles
            .iter()
            .all(|(r, h)| *r != StreamRole::Recv || h.as_ref().is_none_or(|h| h.is_finished()))
            && self.muxes.recv.as_ref().is_none_or(|m| m.is_finished())
    }

    /// The `start` of this test as the reports show it (the end-specific
    /// parts, where the client connected or whom the server accepted, are
    /// the caller's to fill in).
    pub fn start_info(&self) -> crate::events::StartInfo {
        let p = &self.params;
        let (snd, rcv) = self.buffers();
        crate::events::StartInfo {
            connected: self.connected.clone(),
            version: crate::version::version_string(),
            system_info: wirespeed_sys::process::system_info(),
            timestamp: crate::clock::timestamp_now(),
            tcp_mss: p.mss,
            target_bitrate: wirespeed_proto::iperf3::params::effective_bitrate(p),
            fq_rate: p.fq_rate,
            sock_bufsize: p.window.unwrap_or(0) as u64,
            sndbuf_actual: snd,
            rcvbuf_actual: rcv,
            protocol: p.protocol,
            num_streams: p.streams,
            blksize: p.block_len_or_default(),
            omit: p.omit.as_secs(),
            duration: p.duration().map(|d| d.as_secs()).unwrap_or(0),
            bytes: match p.end {
                EndCondition::Bytes(b) => b,
                _ => 0,
            },
            blocks: match p.end {
                EndCondition::Blocks(b) => b,
                _ => 0,
            },
            direction: p.direction,
            tos: p.tos,
            interval: self.interval.map(|d| d.as_secs_f64()).unwrap_or(0.0),
            gso: p.gsro,
            target_pps: p.pps,
            title: p.title.clone(),
            extra_data: p.extra_data.clone(),
            ..crate::events::StartInfo::default()
        }
    }

    /// The reporting interval.
    pub fn interval(&self) -> Option<Duration> {
        self.interval
    }

    /// Whether the streams are multiplexed on worker threads.
    pub fn multiplexed(&self) -> bool {
        self.muxes.send.is_some() || self.muxes.recv.is_some()
    }

    /// Runs due timers: the omit end and interval ticks. Emits events.
    pub(crate) fn on_timers(&mut self, now: Instant, emit: &mut dyn FnMut(Event)) {
        if let Some(oe) = self.omit_end
            && now >= oe
        {
            // Report the last omitted interval, then restart the clocks.
            if let Some(i) = self.interval
                && let Some(r) = self.stats.sample(now, i.as_secs_f64() * 0.1, false)
            {
                emit(Event::Interval(Box::new(r)));
            }
            if let Some(sm) = self.samples.as_mut()
                && let Some(r) = self
                    .stats
                    .sample_aside(&mut sm.aside, now, sm.every.as_secs_f64() * 0.1, false)
            {
                emit(Event::Sample(Box::new(r)));
            }
            self.stats.end_omit(now);
            self.control.omitting.store(false, Relaxed);
            self.omit_end = None;
            self.next_tick = self.interval.map(|i| now + i);
            if let Some(sm) = self.samples.as_mut() {
                sm.aside = self.stats.aside();
                sm.next = now + sm.every;
            }
            emit(Event::OmitDone);
            return;
        }
        self.chart_sample(now, emit);
        if let (Some(t), Some(i)) = (self.next_tick, self.interval)
            && now >= t
        {
            if self.end_at.is_some_and(|e| now >= e) {
                // The final interval is taken when the streams stop.
                return;
            }
            if let Some(r) = self.stats.sample(now, 0.0, false) {
                emit(Event::Interval(Box::new(r)));
            }
            let mut next = t + i;
            while next <= now {
                next += i;
            }
            self.next_tick = Some(next);
        }
    }

    /// A chart-only sample, when one is due (not at the end: the last one
    /// is taken when the streams stop).
    fn chart_sample(&mut self, now: Instant, emit: &mut dyn FnMut(Event)) {
        let ending = self.end_at.is_some_and(|e| now >= e);
        let Some(sm) = self.samples.as_mut() else { return };
        if now < sm.next {
            return;
        }
        if !ending && let Some(r) = self.stats.sample_aside(&mut sm.aside, now, 0.0, false) {
            emit(Event::Sample(Box::new(r)));
        }
        while sm.next <= now {
            sm.next += sm.every;
        }
    }

    /// Stops the senders and waits for them (they half-close their sockets).
    pub(crate) fn stop_senders(&mut self) {
        self.control.raise_stop();
        for (role, h) in &mut self.handles {
            if *role == StreamRole::Send
                && let Some(h) = h
            {
                h.join();
            }
        }
        if let Some(m) = self.muxes.send.as_mut() {
            m.join();
        }
    }

    /// Waits for receivers to drain (to EOF, or until quiet where the peer
    /// gives no EOF), then aborts whatever is left. The waits follow the
    /// path's round trip and retransmission timeout (the streams' own, or
    /// `hint`'s, from the control connection, whichever is longer), never
    /// less than `min` while bytes are still expected, and give up early
    /// only when nothing arrives any more (see [`DrainTimes`]).
    pub(crate) fn drain_receivers(&mut self, min: Duration, hint: PathTiming) {
        let timing = self.path_timing().max(hint);
        let times = DrainTimes::new(min, timing, self.params.protocol != Protocol::Udp);
        let start = Instant::now();
        self.control.raise_stop();
        self.control.begin_drain(times.quiet);
        let mut seen = self.stats.total_bytes(StreamRole::Recv);
        let mut progress = start;
        let cut = loop {
            if self.receivers_done() {
                break false;
            }
            let now = Instant::now();
            let total = self.stats.total_bytes(StreamRole::Recv);
            if total != seen {
                (seen, progress) = (total, now);
            }
            let waited = now - start;
            if waited >= times.hard || (waited >= times.soft && now - progress >= times.stall) {
                break true;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        crate::debug!(
            2,
            "drain: {:.3} s{} (rtt {:?}, rto {:?}; quiet {:?}, soft {:?}, stall {:?}; EOF expected: {})",
            start.elapsed().as_secs_f64(),
            if cut { ", cut short" } else { "" },
            timing.rtt,
            timing.rto,
            times.quiet,
            times.soft,
            times.stall,
            self.control.eof_expected.load(Relaxed)
        );
        self.control.abort.store(true, Relaxed);
        self.join_all();
    }

    /// The longest round trip and retransmission timeout among the TCP
    /// streams (a sample of them when there are thousands).
    pub fn path_timing(&self) -> PathTiming {
        self.stats
            .streams
            .iter()
            .filter_map(|s| s.tcp_fd)
            .take(256)
            .map(PathTiming::of_socket)
            .fold(PathTiming::default(), PathTiming::max)
    }

    fn join_all(&mut self) {
        for (_, h) in &mut self.handles {
            if let Some(h) = h {
                h.join();
            }
        }
        if let Some(m) = self.muxes.send.as_mut() {
            m.join();
        }
        if let Some(m) = self.muxes.recv.as_mut() {
            m.join();
        }
    }

    /// Stops everything at once (errors, signals).
    pub fn abort(&mut self) {
        self.control.raise_stop();
        self.control.abort.store(true, Relaxed);
        for (_, h) in &self.handles {
            if let Some(h) = h {
                h.shutdown();
            }
        }
        // Workers see the abort within their tick.
        self.join_all();
    }

    /// The last interval (if it is long enough or carried data). Without
    /// periodic reports (`-i 0`) this is one interval covering the test, as
    /// iperf3 prints it.
    pub(crate) fn final_sample(&mut self, now: Instant, emit: &mut dyn FnMut(Event)) {
        let min = self.interval.map(|i| i.as_secs_f64() * 0.1).unwrap_or(0.0);
        let now = self.stats.all_ended().map_or(now, |e| e.min(now));
        // The chart's last sample first: a test that ended within its
        // first second has only this one.
        if let Some(sm) = self.samples.as_mut()
            && let Some(r) = self
                .stats
                .sample_aside(&mut sm.aside, now, sm.every.as_secs_f64() * 0.1, true)
        {
            emit(Event::Sample(Box::new(r)));
        }
        if let Some(r) = self.stats.sample(now, min, true) {
            emit(Event::Interval(Box::new(r)));
        }
    }

    /// The first stream failure, if any.
    pub(crate) fn stream_error(&self) -> Option<Error> {
        self.control.take_error()
    }

    /// Congestion algorithm of the first TCP data stream.
    pub fn congestion(&self) -> Option<String> {
        if let Some(s) = self.mux_socks.first() {
            return crate::net::congestion_of(s);
        }
        match self.socks.first() {
            Some(DataSock::Tcp(s)) if self.params.protocol == Protocol::Tcp => crate::net::congestion_of(s),
            _ => None,
        }
    }

    /// (SO_SNDBUF, SO_RCVBUF) of the first stream.
    pub fn buffers(&self) -> (u64, u64) {
        if let Some(s) = self.mux_socks.first() {
            return crate::net::buffers_of(&**s);
        }
        self.socks.first().map(crate::net::buffers_of).unwrap_or((0, 0))
    }
}
