//! The iperf 2 TCP server: a listener that never waits on a peer, and a
//! thread per connection that reads the client's header, answers with the
//! version ack, and runs the flows it asks for (forward, `-R`,
//! `--full-duplex`, `-d`/`-r` connect-back).
//!
//! Connections from one client address that announce the same `-P` are
//! grouped into one session so their report gets `[SUM]` lines, as
//! 2.1.8's per-source-address sums do. The iperf3 server hands connections
//! that do not start with a cookie to [`serve_connection`], so one port
//! serves both dialects.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use socket2::SockRef;

use super::hooks::{RecvHook, TripTimesStamp, wall_clock};
use super::runner::{Flow, RunOpts, run_flows};
use super::{Ctx, conn_line};
use crate::config::{EndCondition, TestConfig, TestParams};
use crate::error::{Code, Error};
use crate::net;
use crate::proto::iperf2::header::{Amount, ClientHeader, MAX_TCP_HEADER, Need};
use crate::proto::iperf2::{BurstTracker, ClientAck, VERSION_L, VERSION_U, flags, join_secs, version_string};
use crate::events::{BannerNote, ConnInfo, Connecting, Event, Listening, Refused, Settings, Side, StartInfo};
use crate::session::{DataStream, StreamExtras};
use crate::stats::StreamRole;
use crate::stats::{DetailCounters, StreamMeta};
use crate::stats::histogram::{HistogramSpec, LatencyHistogram};

/// How long a connection may take to deliver its header (2.1.8: 4 s).
const HEADER_WAIT: Duration = Duration::from_secs(4);
/// How long a group waits for more of its `-P` connections.
const GROUP_WAIT: Duration = Duration::from_millis(1500);
/// Trip-times start stamps further than this from our clock are refused.
const CLOCK_SKEW: f64 = 600.0;

/// What the server's connection threads share.
pub struct ServerCtx {
    pub(super) ctx: Arc<Ctx>,
    /// Raised to end every flow (listen time over, shutdown).
    pub stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
    active: AtomicUsize,
    /// Connections still waiting for their header (each on its thread).
    reading: AtomicUsize,
    groups: Mutex<HashMap<(IpAddr, u32), Sender<Member>>>,
    /// `--allow`/`--deny` and `-s -c host`.
    policy: crate::policy::AccessPolicy,
    /// On the iperf3 server's shared port: headerless data must start with
    /// iperf 2's `0123...` payload pattern (a `-C` client), anything else
    /// is refused as unrecognized. A dedicated iperf 2 server takes any
    /// bytes, as 2.1.8 does.
    strict: bool,
    /// Where refusals are counted (`--metrics` on the shared port).
    metrics: std::sync::OnceLock<Arc<crate::metrics::Metrics>>,
    /// iperf 2 UDP clients on the shared port, made at the first one.
    udp: std::sync::OnceLock<Arc<super::udp_server::UdpServer>>,
}

impl ServerCtx {
    /// A server context for `ctx`'s configuration.
    pub fn new(ctx: Arc<Ctx>, signal: Arc<AtomicUsize>) -> Result<Arc<ServerCtx>, Error> {
        let policy = crate::policy::AccessPolicy::from_config(&ctx.cfg)?;
        Ok(Arc::new(ServerCtx {
            ctx,
            stop: Arc::new(AtomicBool::new(false)),
            signal,
            active: AtomicUsize::new(0),
            reading: AtomicUsize::new(0),
            groups: Mutex::new(HashMap::new()),
            policy,
            strict: false,
            metrics: std::sync::OnceLock::new(),
            udp: std::sync::OnceLock::new(),
        }))
    }

    /// The context an iperf3 server uses for the iperf 2 clients it meets:
    /// its output, its interval and format, its access policy, iperf 2's
    /// defaults otherwise.
    pub fn for_iperf3_server(
        cfg3: &TestConfig,
        out: crate::report::Output,
        policy: crate::policy::AccessPolicy,
    ) -> Arc<ServerCtx> {
        let mut cfg = TestConfig {
            dialect: crate::config::Dialect::Iperf2,
            port: cfg3.port,
            ..TestConfig::default()
        };
        cfg.output.interval = cfg3.output.interval;
        cfg.output.format = cfg3.output.format;
        cfg.params.repeating_payload = true;
        cfg.params.block_len = Some(crate::config::DEFAULT_TCP_BLOCK);
        cfg.net = cfg3.net.clone();
        cfg.server.max_streams = cfg3.server.max_streams;
        cfg.server.max_duration = cfg3.server.max_duration;
        let out = if cfg3.output.json {
            crate::report::Output::discard()
        } else {
            out
        };
        let ctx = Arc::new(Ctx::new(cfg, out));
        Arc::new(ServerCtx {
            ctx,
            stop: Arc::new(AtomicBool::new(false)),
            signal: Arc::new(AtomicUsize::new(0)),
            active: AtomicUsize::new(0),
            reading: AtomicUsize::new(0),
            groups: Mutex::new(HashMap::new()),
            policy,
            strict: true,
            metrics: std::sync::OnceLock::new(),
            udp: std::sync::OnceLock::new(),
        })
    }

    /// Counts this context's refusals into `m`.
    pub fn set_metrics(&self, m: Arc<crate::metrics::Metrics>) {
        self.ctx.set_metrics(m.clone());
        let _ = self.metrics.set(m);
    }

    pub(super) fn unrecognized(&self) {
        if let Some(m) = self.metrics.get() {
            m.refused(crate::metrics::Refusal::Unrecognized);
        }
    }

    /// Whether the access policy lets this peer in; a refusal is counted.
    fn allowed(&self, peer: SocketAddr) -> bool {
        let ok = self.policy.permits(peer.ip());
        if !ok && let Some(m) = self.metrics.get() {
            m.refused(crate::metrics::Refusal::Policy);
        }
        ok
    }

    /// Connections (and UDP sessions) being served.
    pub fn active(&self) -> usize {
        self.active.load(Relaxed) + self.udp.get().map_or(0, |u| u.active())
    }
}

/// A datagram on the iperf3 server's UDP port that is not an iperf3
/// hello: the first datagram of an iperf 2 UDP client starts its test
/// (`local` is the port's address); anything else is dropped.
pub fn udp_datagram(sc: &Arc<ServerCtx>, local: SocketAddr, from: SocketAddr, d: &[u8]) {
    let udp = sc.udp.get_or_init(|| {
        super::udp_server::UdpServer::new(
            sc.ctx.clone(),
            sc.signal.clone(),
            sc.policy.clone(),
            super::udp_server::Mode::Server { strict: sc.strict },
            false,
        )
        .with_stop(sc.stop.clone())
    });
    let (s, n) = crate::sys::time::realtime();
    udp.offer(local, from, d, (s * 1_000_000_000 + n as u64) as i64);
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Whether `bytes` (at least 4 of them) begin iperf 2's payload pattern
/// `0123456789 0123...`, which a `-C` client sends with no header.
fn is_payload_pattern(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && bytes.iter().enumerate().all(|(i, &b)| b == b'0' + (i % 10) as u8)
}

/// A refused connection: `[drop] local A port P connected with B port Q (why)`.
fn drop_line(ctx: &Ctx, sock: &TcpStream, peer: SocketAddr, why: &str) {
    let local = sock
        .local_addr()
        .map(|a| crate::util::split_addr(&a))
        .unwrap_or_default();
    ctx.reporter(Side::Server).emit(Event::Refused(Box::new(Refused {
        local,
        remote: crate::util::split_addr(&peer),
        why: why.to_string(),
        policy: why == "client not allowed",
    })));
}

/// One accepted connection whose header has been read.
struct Member {
    sock: TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
    header: ClientHeader,
    has_header: bool,
    initial: u64,
    id: u32,
    trip_times: bool,
    enhanced: bool,
    /// TCP_INFO when the header arrived (before our ack changes it).
    tcp_init: Option<(u32, u32, u32)>,
}

struct ActiveGuard<'a>(&'a AtomicUsize);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Serves one accepted connection on a thread of its own. `prefix` holds
/// bytes already read from it (by a dialect-sniffing acceptor).
pub fn serve_connection(sc: Arc<ServerCtx>, stream: TcpStream, peer: SocketAddr, prefix: Vec<u8>) {
    sc.active.fetch_add(1, Relaxed);
    let sc2 = sc.clone();
    let spawned = std::thread::Builder::new()
        .name("ws-iperf2-conn".into())
        .spawn(move || {
            let _guard = ActiveGuard(&sc2.active);
            connection(&sc2, stream, peer, prefix);
        });
    if spawned.is_err() {
        sc.active.fetch_sub(1, Relaxed);
    }
}

/// Reads the header, with a deadline. `None` for anything malformed.
fn read_header(s: &TcpStream, mut buf: Vec<u8>) -> Option<(usize, Vec<u8>)> {
    let deadline = Instant::now() + HEADER_WAIT;
    let mut tmp = [0u8; MAX_TCP_HEADER];
    loop {
        match ClientHeader::need_tcp(&buf) {
            Ok(Need::Done(n)) => return Some((n, buf)),
            Ok(Need::More(n)) => {
                let now = Instant::now();
                if now >= deadline || n > MAX_TCP_HEADER {
                    return None;
                }
                let _ = s.set_read_timeout(Some(deadline - now));
                let want = (n - buf.len()).min(tmp.len());
                match (&*s).read(&mut tmp[..want]) {
                    Ok(0) | Err(_) => return None,
                    Ok(k) => buf.extend_from_slice(&tmp[..k]),
                }
            }
            Err(_) => return None,
        }
    }
}

fn connection(sc: &Arc<ServerCtx>, sock: TcpStream, peer: SocketAddr, prefix: Vec<u8>) {
    let ctx = &sc.ctx;
    let cfg = &ctx.cfg;
    let Ok(local) = sock.local_addr() else { return };
    let accepted = wall_clock();
    if !sc.allowed(peer) {
        drop_line(ctx, &sock, peer, "client not allowed");
        return;
    }
    sc.reading.fetch_add(1, Relaxed);
    let header = read_header(&sock, prefix);
    sc.reading.fetch_sub(1, Relaxed);
    let Some((len, buf)) = header else {
        sc.unrecognized();
        return;
    };
    if len == 0 && super::bounceback::opens(&buf) {
        super::bounceback::serve(sc, sock, peer, buf);
        return;
    }
    if sc.strict && len == 0 && !is_payload_pattern(&buf) {
        sc.unrecognized();
        return;
    }
    let _ = sock.set_read_timeout(None);
    let tcp_init = super::tcp_init(&sock);
    let has_header = len > 0;
    let header = if has_header {
        match ClientHeader::decode_tcp(&buf[..len]) {
            Ok(h) => h,
            Err(_) => {
                sc.unrecognized();
                return;
            }
        }
    } else {
        ClientHeader::default()
    };
    if let Err((why, words)) = check_header(sc, &header) {
        if let Some(m) = sc.metrics.get() {
            m.refused(why);
        }
        if why != crate::metrics::Refusal::Unrecognized {
            drop_line(ctx, &sock, peer, words);
        }
        return;
    }
    let key_ok = match (&cfg.iperf2.permit_key, &header.key) {
        (Some(k), Some(got)) => k.as_bytes() == got.as_slice(),
        (None, None) => true,
        _ => false,
    };
    if !key_ok {
        drop_line(ctx, &sock, peer, "permit key fail");
        return;
    }
    let mut trip_times = header.upper() & flags::upper::TRIPTIME != 0;
    if trip_times {
        let st = header.start.unwrap_or_default();
        let skew = (join_secs(st.sec, st.usec) - join_secs(accepted.0, accepted.1)).abs();
        if skew > CLOCK_SKEW {
            ctx.reporter(Side::Server).emit(Event::Notice(
                "WARN: ignore --trip-times because client didn't provide valid start timestamp within 600 seconds of now"
                    .into(),
            ));
            trip_times = false;
        }
    }
    if has_header && ClientAck::wanted(header.flags) {
        let times = trip_times.then(|| {
            let st = header.start.unwrap_or_default();
            [(st.sec, st.usec), accepted, wall_clock()]
        });
        let ack = ClientAck {
            version_u: VERSION_U,
            version_l: VERSION_L,
            times,
        };
        let _ = sock.set_nodelay(true);
        let _ = sock.set_write_timeout(Some(Duration::from_secs(2)));
        let _ = (&sock).write_all(&ack.encode());
        let _ = sock.set_write_timeout(None);
        let _ = sock.set_nodelay(cfg.params.nodelay);
    }
    let mut w = Vec::new();
    let _ = net::apply_data_options(&SockRef::from(&sock), &cfg.params, true, Some(peer), &mut w);
    if let Some(rate) = sends_paced(&header) {
        // As 2.1.8: the client's --fq-rate paces what this server sends.
        let _ = crate::sys::socket::set_max_pacing_rate(&sock, rate);
    }
    if let Some(n) = write_prefetch(&header) {
        let _ = net::set_notsent_lowat(&SockRef::from(&sock), n);
    }
    let enhanced = cfg.output.enhanced || trip_times;
    let member = Member {
        id: ctx.next_id(),
        // Like 2.1.8, the header counts as received bytes.
        initial: buf.len() as u64,
        sock,
        peer,
        local,
        header,
        has_header,
        trip_times,
        enhanced,
        tcp_init,
    };
    print_connection(sc, &member);
    let threads = member.header.num_threads;
    if !member.has_header || threads <= 1 {
        run_group(sc, vec![member]);
        return;
    }
    let key = (canonical(peer.ip()), threads);
    // Join a group that is forming, or start one.
    let rx: Receiver<Member> = {
        let Ok(mut groups) = sc.groups.lock() else { return };
        let member = match groups.get(&key) {
            Some(tx) => match tx.send(member) {
                Ok(()) => return,
                Err(mpsc::SendError(m)) => m,
            },
            None => member,
        };
        let (tx, rx) = mpsc::channel();
        let _ = tx.send(member);
        groups.insert(key, tx);
        rx
    };
    let mut members = Vec::new();
    let mut last = Instant::now();
    while (members.len() as u32) < threads {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => {
                members.push(m);
                last = Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if last.elapsed() >= GROUP_WAIT || sc.stop.load(Relaxed) {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if let Ok(mut groups) = sc.groups.lock() {
        groups.remove(&key);
    }
    // Late joiners that raced the removal.
    while let Ok(m) = rx.try_recv() {
        members.push(m);
    }
    run_group(sc, members);
}

/// Refuses headers a server should not act on: on the shared port an
/// extension must be iperf 2's own (major version 2), so text that happens
/// to set the extension bit is not taken for a test; and the server's limits.
fn check_header(sc: &ServerCtx, h: &ClientHeader) -> Result<(), (crate::metrics::Refusal, &'static str)> {
    use crate::metrics::Refusal;
    if sc.strict
        && let Some(ext) = &h.ext
        && ext.version_u >> 16 != 2
    {
        return Err((Refusal::Unrecognized, "not an iperf 2 header"));
    }
    match over_limits(&sc.ctx.cfg.server, h) {
        Some(why) => Err((Refusal::Limit, why)),
        None => Ok(()),
    }
}

/// What in a header (TCP or UDP) breaks the server's limits: more threads
/// than `--max-streams`, a time over `--server-max-duration`.
pub(super) fn over_limits(limits: &crate::config::ServerOptions, h: &ClientHeader) -> Option<&'static str> {
    if h.num_threads > limits.max_streams {
        return Some("more parallel streams than the server allows");
    }
    if let (Some(Amount::Time(cs)), Some(max)) = (h.amount, limits.max_duration)
        && u64::from(cs) > max.as_millis() as u64 / 10
    {
        return Some("longer than the server allows");
    }
    None
}

/// The pacing rate (bytes/s) a client's `--fq-rate` asks this server to
/// send with: only when the server sends on the client's connection
/// (-R, --full-duplex), as 2.1.8 applies it.
fn sends_paced(h: &ClientHeader) -> Option<u64> {
    let u = h.upper();
    let sends = h.flags & flags::VERSION2 != 0 && u & (flags::upper::REVERSE | flags::upper::FULLDUPLEX) != 0;
    let rate = h.start.map_or(0, |s| s.fq_rate);
    (sends && u & flags::upper::FQRATESET != 0 && rate > 0).then_some(rate)
}

/// Whether the client asked for `--tcp-quickack` on the server's reads.
fn quickack(h: &ClientHeader) -> bool {
    h.ext.is_some() && h.upper() & flags::upper::TCPQUICKACK != 0
}

/// The client's `--tcp-write-prefetch` for the server's sending side
/// (the header carries it with -R / --full-duplex).
fn write_prefetch(h: &ClientHeader) -> Option<u32> {
    let n = h.ext.map_or(0, |e| e.write_prefetch);
    (h.upper() & flags::upper::WRITEPREFETCH != 0 && n > 0).then_some(n)
}

fn flow_cfg(sc: &ServerCtx, enhanced: bool) -> TestConfig {
    let mut c = sc.ctx.cfg.clone();
    c.output.enhanced = enhanced;
    c
}

fn print_connection(sc: &ServerCtx, m: &Member) {
    let h = &m.header;
    let mut line = conn_line(m.id, &m.sock, m.local, m.peer);
    line.when = None;
    line.tcp_init = m.tcp_init;
    let u = h.upper();
    let v2 = h.flags & flags::VERSION2 != 0;
    let reverse = v2 && u & flags::upper::REVERSE != 0;
    line.mode = if reverse {
        Some("reverse".into())
    } else if v2 && u & flags::upper::FULLDUPLEX != 0 {
        Some("full-duplex".into())
    } else if m.trip_times {
        Some("trip-times".into())
    } else {
        None
    };
    if line.mode.is_none() || m.trip_times {
        line.when = Some(crate::sys::time::epoch_now() as i64);
    }
    // 2.1.8 tags a paced reverse flow; a paced full-duplex one is not tagged.
    line.fq = reverse && sends_paced(h).is_some();
    line.clamp = sc.ctx.cfg.iperf2.rx_window_clamp;
    line.prefetch = write_prefetch(h);
    // The server re-arms quick acks where it reads (not on a -R flow).
    line.qack = quickack(h) && !reverse;
    line.peer_version = h.version().and_then(|(u, l)| version_string(u, l));
    let cfg = flow_cfg(sc, m.enhanced);
    sc.ctx
        .reporter_for(&cfg, Side::Server)
        .emit(Event::StreamConnected(Box::new(line)));
}

fn stream(id: u32, role: StreamRole, sock: TcpStream, local: SocketAddr, peer: SocketAddr) -> DataStream {
    DataStream {
        id,
        role,
        info: ConnInfo::new(id, std::os::fd::AsRawFd::as_raw_fd(&sock), local, peer),
        sock: crate::session::DataSock::Tcp(sock),
    }
}

#[allow(clippy::too_many_arguments)]
fn reader_flow(
    id: u32,
    sock: TcpStream,
    local: SocketAddr,
    peer: SocketAddr,
    block: usize,
    trip: bool,
    initial: u64,
    histograms: Option<&str>,
    quickack: bool,
    read_rate: u64,
) -> Flow {
    let qack = quickack.then(|| sock.try_clone().ok()).flatten();
    // Burst-latency histograms (`F8`) need --trip-times bursts to time.
    let histogram = histograms
        .filter(|_| trip)
        .map(|h| LatencyHistogram::new(HistogramSpec::parse(Some(h)).unwrap_or_default(), "F8"));
    let counters = DetailCounters::with_histogram(block, trip, histogram);
    Flow::new(
        stream(id, StreamRole::Recv, sock, local, peer),
        StreamExtras {
            hook: Some(Box::new(
                RecvHook::new(counters.clone(), trip.then(BurstTracker::new), read_rate, block).with_quickack(qack),
            )),
            initial_bytes: initial,
            meta: StreamMeta {
                detail: Some(counters),
                ..StreamMeta::default()
            },
            ..StreamExtras::default()
        },
    )
}

fn sender_flow(
    id: u32,
    sock: TcpStream,
    (local, peer): (SocketAddr, SocketAddr),
    trip: bool,
    starred: bool,
    await_close: bool,
    budget: Option<u64>,
) -> Option<Flow> {
    let closer = if await_close {
        Some(sock.try_clone().ok()?)
    } else {
        None
    };
    // Like 2.1.8, a server sending --trip-times bursts opens with a client
    // header of its own carrying its start time.
    let mut sent = 0;
    let start = wall_clock();
    if trip {
        let hdr = ClientHeader {
            num_threads: 1,
            port: local.port() as u32,
            amount: budget.map(|b| Amount::Bytes(b.min(0x7FFF_FFFF) as u32)),
            ext: Some(crate::proto::iperf2::HeaderExt {
                upper: flags::upper::TRIPTIME,
                version_u: VERSION_U,
                version_l: VERSION_L,
                ..Default::default()
            }),
            start: Some(crate::proto::iperf2::StartTime {
                sec: start.0,
                usec: start.1,
                fq_rate: 0,
            }),
            ..ClientHeader::default()
        }
        .encode_tcp();
        let _ = sock.set_write_timeout(Some(Duration::from_secs(5)));
        (&sock).write_all(&hdr).ok()?;
        let _ = sock.set_write_timeout(None);
        sent = hdr.len() as u64;
    }
    let mut f = Flow::new(
        stream(id, StreamRole::Send, sock, local, peer),
        StreamExtras {
            hook: trip.then(|| Box::new(TripTimesStamp::new(start)) as Box<dyn crate::engine::StreamHook>),
            initial_bytes: sent,
            budget: budget.map(|b| b.saturating_sub(sent)),
            meta: StreamMeta {
                reversed: starred,
                ..StreamMeta::default()
            },
            ..StreamExtras::default()
        },
    );
    f.await_close = closer;
    Some(f)
}

/// The server's connect-back for `-d`/`-r`: banner, connect, connection line.
fn connect_back(sc: &ServerCtx, m: &Member) -> Option<(TcpStream, SocketAddr, SocketAddr, u32)> {
    let ctx = &sc.ctx;
    let cfg = &ctx.cfg;
    let port = (m.header.port as u16).max(1);
    let addr = SocketAddr::new(m.peer.ip(), port);
    let mut rep = ctx.reporter_for(&flow_cfg(sc, m.enhanced), Side::Server);
    let apply = |s: &socket2::Socket| {
        let mut w = Vec::new();
        net::apply_data_options(s, &cfg.params, true, Some(addr), &mut w)
    };
    let window = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)
        .ok()
        .map(|s| {
            let _ = apply(&s);
            s.send_buffer_size().unwrap_or(0) as u64
        })
        .unwrap_or(0);
    rep.emit(Event::Connecting(Box::new(Connecting {
        host: crate::util::host_string(m.peer.ip()),
        port,
        settings: Settings {
            protocol: crate::config::Protocol::Tcp,
            pid: std::process::id(),
            flows: 1,
            block_len: cfg.params.block_len_or_default(),
            tos: cfg.params.tos,
            nodelay: cfg.params.nodelay,
            window,
            window_requested: cfg.params.window.map(u64::from),
            notes: Vec::new(),
        },
        ..Connecting::default()
    })));
    let opts = net::ConnectOpts {
        timeout: Some(Duration::from_secs(10)),
        ..net::ConnectOpts::default()
    };
    match net::connect_tcp(addr, &opts, apply, Code::CONNECT) {
        Ok(s) => {
            let local = s.local_addr().ok()?;
            let id = ctx.next_id();
            let mut line = conn_line(id, &s, local, addr);
            line.reversed = true;
            line.mode = Some("reverse".into());
            line.when = None;
            rep.emit(Event::StreamConnected(Box::new(line)));
            Some((s, local, addr, id))
        }
        Err(e) => {
            rep.emit(Event::Warning(format!("tcp connect failed: {}", e.why())));
            None
        }
    }
}

/// The header's `-n`, which each of our senders for it sends.
fn bytes(h: &ClientHeader) -> Option<u64> {
    match h.amount {
        Some(Amount::Bytes(b)) => Some(b as u64),
        _ => None,
    }
}

fn params_for(sc: &ServerCtx, h: &ClientHeader, streams: usize, trip: bool) -> TestParams {
    let mut p = sc.ctx.cfg.params.clone();
    p.streams = streams.max(1) as u32;
    p.rate = 0;
    p.trip_times = trip;
    p.end = match h.amount {
        Some(Amount::Time(cs)) => EndCondition::Time(Duration::from_millis(cs as u64 * 10)),
        // Byte counts are per stream (StreamExtras::budget).
        Some(Amount::Bytes(_)) | None => EndCondition::Time(Duration::ZERO),
    };
    p
}

fn run_opts(sc: &ServerCtx, p: &TestParams, decides_end: bool) -> RunOpts {
    RunOpts {
        interval: sc.ctx.cfg.output.interval,
        decides_end,
        // A byte count has no duration of its own: `--server-max-duration` bounds it.
        watchdog: p
            .duration()
            .or(sc.ctx.cfg.server.max_duration)
            .map(|d| Instant::now() + d + Duration::from_secs(30)),
        drain: Duration::from_secs(3),
        idle_limit: Some(Duration::from_secs(60)),
        stop: sc.stop.clone(),
        file: None,
        signal: sc.signal.clone(),
        start: StartInfo::default(),
    }
}

fn run_group(sc: &ServerCtx, members: Vec<Member>) {
    let Some(first) = members.first() else { return };
    let ctx = &sc.ctx;
    let block = ctx.cfg.params.block_len_or_default() as usize;
    let enhanced = members.iter().any(|m| m.enhanced);
    let trip = members.iter().any(|m| m.trip_times);
    let header = first.header.clone();
    let client = first.peer.ip();
    let mut flows = Vec::new();
    let mut tradeoff = Vec::new();
    let mut has_sender = false;
    for m in &members {
        let h = &m.header;
        let v1 = h.flags & flags::VERSION1 != 0;
        let v2 = h.flags & flags::VERSION2 != 0;
        let u = h.upper();
        let Ok(sock) = m.sock.try_clone() else { continue };
        if v2 && u & flags::upper::REVERSE != 0 {
            // 2.1.8 does not star a server's sender in a plain reverse test.
            if let Some(f) = sender_flow(m.id, sock, (m.local, m.peer), m.trip_times, false, true, bytes(h)) {
                flows.push(f);
                has_sender = true;
            }
            continue;
        }
        let hist = ctx.cfg.output.histograms.as_deref();
        flows.push(reader_flow(
            m.id,
            sock,
            m.local,
            m.peer,
            block,
            m.trip_times,
            m.initial,
            hist,
            quickack(h),
            // `-s -b`: the server's read-rate limit.
            ctx.cfg.params.rate,
        ));
        if v2 && u & flags::upper::FULLDUPLEX != 0 {
            if let Ok(s2) = m.sock.try_clone()
                && let Some(f) = sender_flow(m.id, s2, (m.local, m.peer), m.trip_times, true, false, bytes(h))
            {
                flows.push(f);
                has_sender = true;
            }
        } else if v1 && !v2 {
            if h.flags & flags::RUN_NOW != 0 {
                if let Some((s, local, addr, id)) = connect_back(sc, m)
                    && let Some(f) = sender_flow(id, s, (local, addr), false, true, true, bytes(h))
                {
                    flows.push(f);
                    has_sender = true;
                }
            } else {
                tradeoff.push(m);
            }
        }
    }
    let params = params_for(sc, &header, flows.len(), trip);
    let cfg = flow_cfg(sc, enhanced);
    let mut rep = ctx.test_reporter(&cfg, crate::config::Protocol::Tcp, client, members.len());
    let opts = run_opts(sc, &params, has_sender);
    if let Err(e) = run_flows(&params, Side::Server, flows, &opts, &mut rep) {
        rep.emit(Event::Warning(format!("WARNING: {}", e.text())));
    }
    // -r: now the server's turn to send.
    let mut back = Vec::new();
    for m in tradeoff {
        if sc.stop.load(Relaxed) {
            break;
        }
        if let Some((s, local, addr, id)) = connect_back(sc, m)
            && let Some(f) = sender_flow(id, s, (local, addr), false, true, true, bytes(&m.header))
        {
            back.push(f);
        }
    }
    if !back.is_empty() {
        let params = params_for(sc, &header, back.len(), false);
        let opts = run_opts(sc, &params, true);
        if let Err(e) = run_flows(&params, Side::Server, back, &opts, &mut rep) {
            rep.emit(Event::Warning(format!("WARNING: {}", e.text())));
        }
    }
    rep.emit(Event::Done);
}

const LISTENER: Token = Token(0);

/// One TCP listener of the server, with the options that must be set
/// before connections arrive (accepted sockets inherit them).
fn open_listener(cfg: &TestConfig, port: u16) -> Result<std::net::TcpListener, Error> {
    let listener = net::listen_tcp(
        cfg.net.bind.as_deref(),
        port,
        cfg.net.family,
        false,
        crate::server::BACKLOG,
    )
    .map_err(|e| {
        let why = e.errno.map(crate::error::strerror).unwrap_or_else(|| e.text());
        Error::msg(Code::LISTEN, format!("listener bind failed: {why}"))
    })?;
    let sref = SockRef::from(&listener);
    if let Some(dev) = &cfg.net.bind_dev {
        sref.bind_device(Some(dev.as_bytes()))
            .map_err(|e| Error::io(Code::BINDDEV, &e))?;
    }
    if let Some(w) = cfg.params.window {
        let mut warn = Vec::new();
        net::set_buffers(&sref, w as usize, &mut warn)?;
    }
    if let Some(c) = cfg.iperf2.rx_window_clamp {
        // On the listener, as 2.1.8 does: accepted sockets inherit it, and
        // the SYN-ACK already advertises no more.
        crate::sys::socket::set_int_option(&listener, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, c as i32)
            .map_err(|e| Error::msg(Code::LISTEN, format!("unable to set TCP_WINDOW_CLAMP: {e}")))?;
    }
    if let Some(tos) = cfg.iperf2.tos_override {
        // On the listener, so every accepted socket carries it, as 2.1.8's.
        let v6 = listener.local_addr().is_ok_and(|a| a.is_ipv6());
        let r = if v6 {
            // A dual-stack socket carrying IPv4 needs IP_TOS too.
            let _ = sref.set_tos_v4(u32::from(tos));
            sref.set_tclass_v6(u32::from(tos))
        } else {
            sref.set_tos_v4(u32::from(tos))
        };
        r.map_err(|e| Error::msg(Code::LISTEN, format!("unable to set the TOS override: {e}")))?;
    }
    Ok(listener)
}

/// Runs `wirespeed --iperf2 -s`: listens, serves every client on a thread
/// of its own, until a signal, the listen time (`-t`), or `-P n`
/// connections have been served.
pub fn run(ctx: Arc<Ctx>, signal: Arc<AtomicUsize>) -> Result<(), Error> {
    let cfg = ctx.cfg.clone();
    // `-p m-n`: a listener on every port of the range.
    let last = cfg.iperf2.port_last.unwrap_or(cfg.port);
    let listeners = (cfg.port..=last)
        .map(|port| open_listener(&cfg, port))
        .collect::<Result<Vec<_>, _>>()?;
    let window = listeners
        .first()
        .and_then(|l| SockRef::from(l).recv_buffer_size().ok())
        .unwrap_or(0) as u64;
    let sc = ServerCtx::new(ctx.clone(), signal.clone())?;
    if cfg.server.daemon {
        crate::sys::process::detach()
            .map_err(|e| Error::io(Code::DAEMON, &e))?
            .ready();
    }
    let notes = cfg
        .output
        .histograms
        .as_deref()
        .map(|h| {
            vec![BannerNote::Late(
                HistogramSpec::parse(Some(h)).unwrap_or_default().banner(),
            )]
        })
        .unwrap_or_default();
    let mut notes = notes;
    if let Some(tos) = cfg.iperf2.tos_override {
        notes.insert(
            0,
            BannerNote::Early(format!("Reflected TOS will be set to 0x{tos:x}")),
        );
    }
    ctx.reporter(Side::Server).emit(Event::Listening(Box::new(Listening {
        port: cfg.port,
        port_last: cfg.iperf2.port_last,
        test_no: 0,
        settings: Settings {
            protocol: cfg.params.protocol,
            pid: std::process::id(),
            flows: 1,
            block_len: cfg.params.block_len_or_default(),
            tos: cfg.params.tos,
            nodelay: cfg.params.nodelay,
            window,
            window_requested: cfg.params.window.map(u64::from),
            notes,
        },
    })));
    let mut poll = Poll::new().map_err(|e| Error::io(Code::LISTEN, &e))?;
    let mut mlisteners = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        l.set_nonblocking(true).map_err(|e| Error::io(Code::LISTEN, &e))?;
        let mut ml = mio::net::TcpListener::from_std(l);
        poll.registry()
            .register(&mut ml, Token(LISTENER.0 + i), Interest::READABLE)
            .map_err(|e| Error::io(Code::LISTEN, &e))?;
        mlisteners.push(ml);
    }
    let mut events = Events::with_capacity(16);
    let until = cfg.server.listen_time.map(|t| Instant::now() + t);
    let mut served = 0u32;
    loop {
        if signal.load(Relaxed) != 0 || until.is_some_and(|u| Instant::now() >= u) {
            sc.stop.store(true, Relaxed);
            break;
        }
        if cfg.server.max_connections.is_some_and(|n| served >= n) {
            break;
        }
        if cfg.iperf2.single_client && sc.active() > 0 {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let _ = poll.poll(&mut events, Some(Duration::from_millis(100)));
        'listeners: for mlistener in &mlisteners {
            loop {
                match mlistener.accept() {
                    Ok((s, peer)) => {
                        let s = TcpStream::from(s);
                        if s.set_nonblocking(false).is_err() {
                            continue;
                        }
                        if !sc.allowed(peer) {
                            drop_line(&sc.ctx, &s, peer, "client not allowed");
                            continue;
                        }
                        // Idle connections cost a thread each for the header's
                        // 4 s: past this many at once, new ones are closed.
                        if sc.reading.load(Relaxed) >= crate::server::MAX_PENDING {
                            sc.unrecognized();
                            continue;
                        }
                        served += 1;
                        serve_connection(sc.clone(), s, peer, Vec::new());
                        if cfg.iperf2.single_client || cfg.server.max_connections.is_some_and(|n| served >= n) {
                            break 'listeners;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
    }
    // Let running flows finish (they end promptly once `stop` is raised).
    let limit = Instant::now() + Duration::from_secs(if sc.stop.load(Relaxed) { 10 } else { 3600 });
    while sc.active() > 0 && Instant::now() < limit {
        if signal.load(Relaxed) != 0 {
            sc.stop.store(true, Relaxed);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_payload_pattern;

    #[test]
    fn a_compat_clients_pattern_is_recognised_and_junk_is_not() {
        assert!(is_payload_pattern(b"0123"));
        assert!(is_payload_pattern(b"012345678901234"));
        assert!(!is_payload_pattern(b"012"), "too short to tell");
        assert!(!is_payload_pattern(b"GET / HTTP/1.0\r\n"));
        assert!(!is_payload_pattern(b"0124"));
    }
}
