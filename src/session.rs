//! One running test, as both ends see it: the data streams, their threads,
//! the interval and omit timers, and the orderly stop (senders stop and
//! half-close; receivers drain to EOF) that makes totals agree.

use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::config::{Direction, EndCondition, Protocol, TestParams};
use crate::engine::pacer::{PaceRate, Pacer};
use crate::engine::udp::{Iperf3Format, UdpOptions};
use crate::engine::{self, Budget, Payload, Sinkhole, StreamHandle, StreamTask, Target, TestControl};
use crate::error::{Code, Error};
use crate::events::{ConnInfo, Event, RoleTag, Side};
use crate::stats::{Presentation, StreamCounters, StreamMeta, StreamRole, StreamStats, TestStats};

/// A data stream's socket: a TCP connection or a connected UDP socket.
#[derive(Debug)]
pub enum DataSock {
    /// TCP (and MPTCP).
    Tcp(TcpStream),
    /// UDP, connected to the peer's stream socket.
    Udp(UdpSocket),
}

impl DataSock {
    /// A second handle on the same socket.
    pub fn try_clone(&self) -> std::io::Result<DataSock> {
        Ok(match self {
            DataSock::Tcp(s) => DataSock::Tcp(s.try_clone()?),
            DataSock::Udp(s) => DataSock::Udp(s.try_clone()?),
        })
    }

    /// The local address.
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSock::Tcp(s) => s.local_addr(),
            DataSock::Udp(s) => s.local_addr(),
        }
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSock::Tcp(s) => s.peer_addr(),
            DataSock::Udp(s) => s.peer_addr(),
        }
    }
}

impl AsFd for DataSock {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            DataSock::Tcp(s) => s.as_fd(),
            DataSock::Udp(s) => s.as_fd(),
        }
    }
}

impl AsRawFd for DataSock {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

/// A connected data stream before its thread starts.
pub struct DataStream {
    /// Stream id (1, 3, 4, ...).
    pub id: u32,
    /// Send or receive, from this host's view.
    pub role: StreamRole,
    /// The socket.
    pub sock: DataSock,
    /// Addresses, as printed.
    pub info: ConnInfo,
}

/// What a dialect adds to a stream beyond the common engine: a per-block
/// hook and the counters the hook feeds (iperf 2's enhanced reports).
#[derive(Default)]
pub struct StreamExtras {
    /// Runs in the stream's hot loop.
    pub hook: Option<Box<dyn crate::engine::StreamHook>>,
    /// Bytes of the stream already read before the session (counted as
    /// received: an iperf 2 header, a prefix read to tell dialects apart).
    pub initial_bytes: u64,
    /// A byte budget of this stream alone (iperf 2's `-n` is per flow),
    /// instead of the test's shared one.
    pub budget: Option<u64>,
    /// UDP: the dialect's datagram layout (iperf3's when `None`).
    pub udp_format: Option<Arc<dyn crate::engine::udp::DatagramFormat>>,
    /// UDP: datagrams of the stream a listener read before the stream had
    /// a socket, with their arrival times (wall clock, ns).
    pub udp_prefeed: Vec<(Vec<u8>, i64)>,
    /// What the reporter knows of the stream besides its counters (its
    /// addresses are filled in from the stream's).
    pub meta: StreamMeta,
    /// What the stream does instead of moving bulk data.
    pub kind: crate::engine::StreamKind,
}

/// Stream ids in creation order: 1, then 3, 4, 5, ... (2 is skipped, as iperf3 does).
pub fn stream_id(index: usize) -> u32 {
    if index == 0 { 1 } else { index as u32 + 2 }
}

/// Roles of the streams in creation order, for one side.
pub fn stream_roles(direction: Direction, parallel: u32, side: Side) -> Vec<StreamRole> {
    let p = parallel as usize;
    let (client_send, client_recv) = match direction {
        Direction::Reverse => (0, p),
        Direction::Bidir | Direction::FullDuplex | Direction::Dual => (p, p),
        _ => (p, 0),
    };
    let mut roles = Vec::with_capacity(client_send + client_recv);
    // The client opens its senders first; the server classifies arrivals in
    // the same order, so the client's senders are the server's receivers.
    for _ in 0..client_send {
        roles.push(if side == Side::Client {
            StreamRole::Send
        } else {
            StreamRole::Recv
        });
    }
    for _ in 0..client_recv {
        roles.push(if side == Side::Client {
            StreamRole::Recv
        } else {
            StreamRole::Send
        });
    }
    roles
}

/// Stream threads per CPU this process runs before further TCP streams are
/// multiplexed on per-CPU workers (see [`multiplexed`]).
///
/// Measured on loopback (BENCHMARKS.md, "threads vs workers"): up to a
/// few hundred streams a thread each moves more bytes per CPU second than
/// workers serving several sockets each (about 0.25 against 0.35 CPU s per
/// GB at 4, 64 and 256 streams on 2 CPUs), but at 256 threads per CPU the
/// control thread starves and a 3 s test ends after 8 s (at 1000 streams,
/// after 15 to 36 s, with 250 MB of buffers and stacks). 32 per CPU keeps
/// the faster threads for ordinary `-P` and stays far from that cliff.
pub const THREADS_PER_CPU: usize = 32;

/// Stream threads running in this process now (all tests): a server
/// running many tests at once multiplexes new ones rather than let their
/// threads crowd out every test's control thread.
static STREAM_THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `WIRESPEED_MUX`: when streams are multiplexed on workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MuxMode {
    /// When the process would run more than [`THREADS_PER_CPU`] stream
    /// threads per CPU (the default).
    Auto,
    /// Every TCP test whose streams allow it (for comparisons).
    Always,
    /// Never: a thread per stream (for comparisons).
    Never,
}

impl MuxMode {
    /// The mode `WIRESPEED_MUX` asks for (`auto`, `always` or `never`;
    /// unset is `auto`).
    pub fn from_env() -> Result<MuxMode, Error> {
        match std::env::var("WIRESPEED_MUX").as_deref() {
            Err(_) | Ok("") | Ok("auto") => Ok(MuxMode::Auto),
            Ok("always") => Ok(MuxMode::Always),
            Ok("never") => Ok(MuxMode::Never),
            Ok(other) => Err(Error::msg(
                Code::INITTEST,
                format!("WIRESPEED_MUX must be auto, always or never, not '{other}'"),
            )),
        }
    }

    /// Whether a TCP test of `streams` streams (without files or hooks)
    /// is multiplexed.
    fn applies(self, streams: usize) -> bool {
        match self {
            MuxMode::Auto => STREAM_THREADS.load(Relaxed) + streams > THREADS_PER_CPU * engine::mux::workers(),
            MuxMode::Always => true,
            MuxMode::Never => false,
        }
    }
}

/// Whether a test's streams run on multiplexing workers: TCP tests that
/// would take this process past [`THREADS_PER_CPU`] stream threads per CPU
/// it may use (unless `WIRESPEED_MUX` says otherwise). Streams with
/// per-block hooks (iperf 2) or files (`-F`) always get threads.
pub fn multiplexed(streams: &[(DataStream, StreamExtras)], file: bool) -> Result<bool, Error> {
    Ok(!file
        && MuxMode::from_env()?.applies(streams.len())
        && streams
            .iter()
            .all(|(d, e)| matches!(d.sock, DataSock::Tcp(_)) && e.hook.is_none() && e.kind.is_bulk()))
}

/// Descriptors a stream costs this process: one when multiplexed; three
/// with a thread (the socket, the session's duplicate for TCP_INFO, the
/// thread's for shutdown).
pub fn fds_per_stream(protocol: Protocol, streams: usize, file: bool) -> u64 {
    let mode = MuxMode::from_env().unwrap_or(MuxMode::Auto);
    if protocol == Protocol::Tcp && !file && mode.applies(streams) {
        1
    } else {
        3
    }
}

/// Descriptors kept free besides the streams (control connections,
/// listeners, pollers, files, other tests starting meanwhile).
const FD_SLACK: u64 = 64;

/// Makes room for `streams` new streams of `per_stream` descriptors each:
/// raises the soft open-file limit up to the hard one when needed, and
/// says clearly, in one line, when even that is not enough.
pub fn reserve_fds(streams: usize, per_stream: u64) -> Result<(), Error> {
    use crate::sys::process::{nofile_limits, open_fds, raise_nofile_limit};
    let open = open_fds().unwrap_or(0);
    let need = open + streams as u64 * per_stream + FD_SLACK;
    let Ok((soft, hard)) = nofile_limits() else {
        return Ok(());
    };
    if need <= soft {
        return Ok(());
    }
    let limit = raise_nofile_limit().unwrap_or(soft);
    if need <= limit {
        crate::debug!(3, "open-file limit raised from {soft} to {limit} for {streams} streams");
        return Ok(());
    }
    Err(Error {
        errno: Some(libc::EMFILE),
        ..Error::msg(
            Code::CREATESTREAM,
            format!(
                "unable to create {streams} streams: they need about {need} open files, \
                 but the open-file limit is {limit} (hard limit {hard}); raise it with ulimit -n"
            ),
        )
    })
}

/// Stream threads a session counts in [`STREAM_THREADS`], given back when
/// the session (or a failed start) is dropped.
struct ThreadCount(usize);

impl ThreadCount {
    fn add(&mut self, n: usize) {
        self.0 += n;
        STREAM_THREADS.fetch_add(n, Relaxed);
    }
}

impl Drop for ThreadCount {
    fn drop(&mut self) {
        STREAM_THREADS.fetch_sub(self.0, Relaxed);
    }
}

/// Multiplexing workers of a test, one set per direction so the senders
/// can be stopped and joined before the receivers drain.
#[derive(Default)]
struct Muxes {
    send: Option<engine::mux::Mux>,
    recv: Option<engine::mux::Mux>,
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
    /// UDP: how long every receiving stream must be quiet before a receive
    /// goal (-n/-k) counts as reached though datagrams were lost.
    udp_quiet: Duration,
}

impl Session {
    /// Starts a thread per stream.
    pub fn start(
        params: &TestParams,
        side: Side,
        streams: Vec<DataStream>,
        waker: Arc<mio::Waker>,
        local: &LocalOpts,
    ) -> Result<Session, Error> {
        let streams = streams.into_iter().map(|d| (d, StreamExtras::default())).collect();
        Session::start_with(params, side, streams, waker, local)
    }

    /// Starts a thread per stream, each with its dialect extras.
    pub fn start_with(
        params: &TestParams,
        side: Side,
        streams: Vec<(DataStream, StreamExtras)>,
        waker: Arc<mio::Waker>,
        local: &LocalOpts,
    ) -> Result<Session, Error> {
        let now = Instant::now();
        let control = TestControl::new(Some(waker));
        let omitting = !params.omit.is_zero();
        control.omitting.store(omitting, Relaxed);
        let block_len = params.block_len_or_default() as usize;
        let sends = streams.iter().any(|(s, _)| s.role == StreamRole::Send);
        let recvs = streams.iter().any(|(s, _)| s.role == StreamRole::Recv);
        // Exact totals: every sender draws from one budget. The client also
        // watches what it receives (reverse/bidir) to end the test.
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
            (Some(pps), _) if pps > 0 => Some((PaceRate::Packets(pps), params.burst)),
            (_, r) if r > 0 => Some((PaceRate::Bits(r), params.burst)),
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
        let bidir = params.direction == Direction::Bidir;
        let omit_end = omitting.then(|| now + params.omit);
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
        let multiplex = multiplexed(&streams, local.file.is_some())?;
        crate::debug!(
            3,
            "{} streams: {}",
            streams.len(),
            if multiplex {
                format!("multiplexed, {} worker(s) per direction", engine::mux::workers())
            } else {
                "a thread each".to_string()
            }
        );
        let mut handles = Vec::new();
        let mut stats = Vec::new();
        let mut connected = Vec::new();
        let mut socks = Vec::new();
        let mut mux_send = Vec::new();
        let mut mux_recv = Vec::new();
        let mut mux_socks = Vec::new();
        let mut threads = ThreadCount(0);
        for (ds, extras) in streams {
            let counters = Arc::new(StreamCounters::default());
            counters.bytes.store(extras.initial_bytes, Relaxed);
            let tag = bidir.then_some(match (side, ds.role) {
                (Side::Client, StreamRole::Send) => RoleTag::TxC,
                (Side::Client, StreamRole::Recv) => RoleTag::RxC,
                (Side::Server, StreamRole::Send) => RoleTag::TxS,
                (Side::Server, StreamRole::Recv) => RoleTag::RxS,
            });
            let fd = ds.sock.as_raw_fd();
            let mut meta = extras.meta;
            meta.addrs = Some((ds.info.local(), ds.info.remote()));
            let payload = match (&local.file, ds.role) {
                (Some(p), StreamRole::Send) => Payload::File(p.clone()),
                _ if params.repeating_payload => Payload::Repeating,
                _ => Payload::Random,
            };
            let sinkhole = match (&sink_file, params.skip_rx_copy) {
                (Some(f), _) => Sinkhole::File(f.clone()),
                (None, true) => Sinkhole::Truncate,
                (None, false) => Sinkhole::Discard,
            };
            let task = StreamTask {
                id: ds.id,
                role: ds.role,
                block_len,
                pace,
                budget: match (ds.role, extras.budget) {
                    (StreamRole::Send, Some(n)) => Some(Budget::bytes(n)),
                    (StreamRole::Send, None) => budget.clone(),
                    _ => None,
                },
                target: if ds.role == StreamRole::Recv {
                    target.clone()
                } else {
                    None
                },
                payload,
                sinkhole,
                zerocopy: params.zerocopy,
                counters: counters.clone(),
                control: control.clone(),
                affinity: local.affinity,
                drain_idle: Duration::from_millis(100),
                until: end_at,
            };
            connected.push(ds.info);
            if multiplex && let DataSock::Tcp(sock) = ds.sock {
                // One descriptor per stream: the workers and TCP_INFO share it.
                let sock = Arc::new(sock);
                stats.push(StreamStats::new(ds.id, fd, ds.role, tag, counters, Some(fd)).with_meta(meta));
                handles.push((ds.role, None));
                mux_socks.push(sock.clone());
                match ds.role {
                    StreamRole::Send => mux_send.push((sock, task)),
                    StreamRole::Recv => mux_recv.push((sock, task)),
                }
                continue;
            }
            // TCP_INFO reads go through our own duplicate: the thread's
            // descriptor closes when the thread ends, and its number may be reused.
            let keep = ds.sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e))?;
            let tcp_fd = matches!(keep, DataSock::Tcp(_)).then_some(keep.as_raw_fd());
            stats.push(StreamStats::new(ds.id, fd, ds.role, tag, counters, tcp_fd).with_meta(meta));
            let handle = match ds.sock {
                DataSock::Tcp(sock) => engine::spawn_tcp_with(sock, task, extras.hook, extras.kind)?,
                DataSock::Udp(sock) => {
                    let mut opts = udp.clone();
                    opts.prefeed = extras.udp_prefeed;
                    match extras.udp_format {
                        Some(f) => engine::udp::spawn_udp_with(sock, task, f, opts, extras.hook)?,
                        None => {
                            let format = Iperf3Format {
                                wide: params.udp_counters_64bit,
                            };
                            engine::udp::spawn_udp_with(sock, task, format, opts, extras.hook)?
                        }
                    }
                }
            };
            handles.push((ds.role, Some(handle)));
            socks.push(keep);
            threads.add(1);
        }
        let workers = engine::mux::workers();
        let start_mux = |streams: Vec<_>| -> Result<Option<engine::mux::Mux>, Error> {
            if streams.is_empty() {
                return Ok(None);
            }
            engine::mux::Mux::start(streams, workers).map(Some)
        };
        let send = start_mux(mux_send);
        let recv = if send.is_ok() { start_mux(mux_recv) } else { Ok(None) };
        let muxes = match (send, recv) {
            (Ok(send), Ok(recv)) => Muxes { send, recv },
            (send, recv) => {
                // Stop first: a started set of workers is joined when dropped.
                control.raise_stop();
                control.abort.store(true, Relaxed);
                return Err(match (send, recv) {
                    (Err(e), _) | (_, Err(e)) => e,
                    _ => Error::new(Code::INITSTREAM),
                });
            }
        };
        let interval = local.interval;
        let udp_quiet = pace
            .map(|(r, _)| Pacer::cost(r, block_len) * 3)
            .unwrap_or_default()
            .max(Duration::from_secs(2));
        Ok(Session {
            params: params.clone(),
            side,
            stats: TestStats::new(stats, params.protocol, params.streams, omitting, now, control.epoch)
                .presented(local.presentation),
            control,
            handles,
            muxes,
            mux_socks,
            _threads: threads,
            connected,
            interval,
            next_tick: interval.map(|i| now + i),
            omit_end,
            end_at,
            target,
            budget,
            started: now,
            socks,
            udp_quiet,
        })
    }

    /// The earliest timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        [self.next_tick, self.omit_end, self.end_at].into_iter().flatten().min()
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
            version: crate::version_string(),
            system_info: crate::sys::process::system_info(),
            timestamp: crate::clock::timestamp_now(),
            tcp_mss: p.mss,
            target_bitrate: crate::proto::iperf3::params::effective_bitrate(p),
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
    pub fn on_timers(&mut self, now: Instant, emit: &mut dyn FnMut(Event)) {
        if let Some(oe) = self.omit_end
            && now >= oe
        {
            // Report the last omitted interval, then restart the clocks.
            if let Some(i) = self.interval
                && let Some(r) = self.stats.sample(now, i.as_secs_f64() * 0.1, false)
            {
                emit(Event::Interval(Box::new(r)));
            }
            self.stats.end_omit(now);
            self.control.omitting.store(false, Relaxed);
            self.omit_end = None;
            self.next_tick = self.interval.map(|i| now + i);
            emit(Event::OmitDone);
            return;
        }
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

    /// Stops the senders and waits for them (they half-close their sockets).
    pub fn stop_senders(&mut self) {
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

    /// Waits for receivers to drain to EOF or quiet, up to `deadline`, then
    /// aborts whatever is left.
    pub fn drain_receivers(&mut self, deadline: Instant) {
        self.control.raise_stop();
        self.control.drain.store(true, Relaxed);
        while !self.receivers_done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.control.abort.store(true, Relaxed);
        self.join_all();
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
    pub fn final_sample(&mut self, now: Instant, emit: &mut dyn FnMut(Event)) {
        let min = self.interval.map(|i| i.as_secs_f64() * 0.1).unwrap_or(0.0);
        let now = self.stats.all_ended().map_or(now, |e| e.min(now));
        if let Some(r) = self.stats.sample(now, min, true) {
            emit(Event::Interval(Box::new(r)));
        }
    }

    /// The first stream failure, if any.
    pub fn stream_error(&self) -> Option<Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_skip_two() {
        let ids: Vec<u32> = (0..5).map(stream_id).collect();
        assert_eq!(ids, vec![1, 3, 4, 5, 6]);
    }

    #[test]
    fn bidir_roles_mirror_each_other() {
        let c = stream_roles(Direction::Bidir, 2, Side::Client);
        let s = stream_roles(Direction::Bidir, 2, Side::Server);
        assert_eq!(
            c,
            vec![StreamRole::Send, StreamRole::Send, StreamRole::Recv, StreamRole::Recv]
        );
        assert_eq!(
            s,
            vec![StreamRole::Recv, StreamRole::Recv, StreamRole::Send, StreamRole::Send]
        );
        assert_eq!(
            stream_roles(Direction::Reverse, 3, Side::Client),
            vec![StreamRole::Recv; 3]
        );
    }
}
