//! The iperf 2 UDP server: a listening socket on the port that "accepts"
//! a client at its first datagram, and a session per client (or per `-P`
//! group of one client's flows) that receives its datagrams, answers its
//! FIN with the 128-byte report, and runs what its settings ask for
//! (`-R`, `--full-duplex`, `-d`/`-r` connect-back).
//!
//! Each flow gets a socket of its own, bound to the server's port and
//! connected to the client (the kernel then delivers that client's
//! datagrams to it); the listening socket stays open for the next client.
//! Datagrams of a flow that reached the listener before its socket existed
//! are handed to the flow, so none is counted lost. The same acceptor
//! serves the client side of a UDP `-d`/`-r` (the server's connect-back)
//! and iperf 2 clients on the iperf3 server's UDP port.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::hooks::UdpRecvHook;
use super::runner::{Flow, RunOpts, run_flows};
use super::udp::{FinOutcome, Iperf2Format, answer_fin, relayed_line, report_of, send_fin};
use super::{Ctx, udp_conn_line};
use crate::config::{EndCondition, Protocol, TestParams};
use crate::error::{Code, Error};
use crate::net;
use crate::proto::iperf2::header::Amount;
use crate::proto::iperf2::{ClientHeader, DatagramHeader, flags, version_string};
use crate::report::Reporter;
use crate::events::{BannerNote, ConnInfo, Connecting, Event, Listening, PeerReport, Refused, Side, StartInfo, StreamSample};
use crate::session::{DataSock, DataStream, StreamExtras};
use crate::stats::{DetailCounters, StreamMeta, StreamRole};
use crate::stats::histogram::{HistogramSpec, LatencyHistogram};

/// How long a group waits for the rest of a client's `-P` flows after the
/// last one arrived (their first datagrams come within milliseconds; a
/// UDP flow cannot be held back long without its datagrams piling up).
const GROUP_WAIT: Duration = Duration::from_millis(50);
/// How long a new flow waits for the listener to hand over what queued for
/// it before the flow's own socket existed.
const DRAIN_WAIT: Duration = Duration::from_millis(20);
/// Datagrams a pending flow keeps from the listener, at most.
const PREFEED_MAX: usize = 4096;
/// How long a finished client's stray datagrams are ignored rather than
/// taken for a new test.
const LINGER: Duration = Duration::from_secs(5);
/// Sessions at most at once: datagrams are easy to forge, and each new
/// source address would otherwise cost a socket and threads.
const MAX_SESSIONS: usize = 256;
/// How long a receiver that stopped without its sender's FIN waits for it.
const LATE_FIN: Duration = Duration::from_secs(3);

use crate::clock::wall_ns;

/// Datagrams kept for a flow whose session has not started, with their
/// arrival times (wall clock, ns).
type Prefeed = Arc<Mutex<Vec<(Vec<u8>, i64)>>>;

/// What the acceptor knows of a client address.
enum Peer {
    /// Accepted; its session has not started: datagrams go to its prefeed.
    Pending(Prefeed),
    /// Its session reads its own socket.
    Active,
    /// Finished at this time; strays are ignored for a while.
    Done(Instant),
    /// Not allowed (`-s -c host`).
    Denied,
}

/// Whose datagrams the acceptor takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A server: datagrams carry a client's settings. `strict`: only
    /// datagrams with a valid 2.1 header start a test (the iperf3
    /// server's shared port, where anything else is junk).
    Server {
        /// Refuse datagrams without a 2.1 header.
        strict: bool,
    },
    /// The client side of `-d`/`-r`: the server's connect-back, plain data
    /// grouped `expect` at a time.
    ConnectBack {
        /// Flows the server opens.
        expect: u32,
    },
}

/// One accepted flow.
struct Member {
    sock: UdpSocket,
    peer: SocketAddr,
    local: SocketAddr,
    header: ClientHeader,
    has_header: bool,
    seq64: bool,
    prefeed: Prefeed,
    id: u32,
    trip: bool,
    enhanced: bool,
}

impl Member {
    fn upper(&self) -> u16 {
        self.header.upper()
    }

    fn v2(&self) -> bool {
        self.has_header && self.header.flags & flags::VERSION2 != 0
    }

    fn reverse(&self) -> bool {
        self.v2() && self.upper() & flags::upper::REVERSE != 0
    }

    fn full_duplex(&self) -> bool {
        self.v2() && self.upper() & flags::upper::FULLDUPLEX != 0
    }

    /// `-d` (`Some(true)`) or `-r` (`Some(false)`).
    fn connect_back(&self) -> Option<bool> {
        let f = self.header.flags;
        (self.has_header && f & flags::VERSION1 != 0 && f & flags::VERSION2 == 0).then_some(f & flags::RUN_NOW != 0)
    }
}

/// The UDP acceptor and the sessions it starts.
pub struct UdpServer {
    ctx: Arc<Ctx>,
    /// Raised to end every flow.
    pub stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
    active: AtomicUsize,
    served: AtomicU32,
    /// `--allow`/`--deny` and `-s -c host`.
    policy: crate::policy::AccessPolicy,
    peers: Mutex<HashMap<SocketAddr, Peer>>,
    groups: Mutex<HashMap<(IpAddr, u32), Sender<Member>>>,
    drained: AtomicU64,
    mode: Mode,
    multicast: bool,
    histograms: Option<HistogramSpec>,
    /// Clients are served one at a time (no `-P` groups).
    one_at_a_time: bool,
}

struct ActiveGuard<'a>(&'a AtomicUsize);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Receivers answering their senders' FINs: (stream id, whether the
/// report got through).
type Answers = Arc<Mutex<Vec<(u32, JoinHandle<bool>)>>>;

/// A sender whose FIN goes out once its session is over.
struct FinJob {
    sock: UdpSocket,
    len: usize,
    line: Arc<Mutex<Option<StreamSample>>>,
    id: u32,
    reversed: bool,
    expect_report: bool,
}

impl UdpServer {
    /// An acceptor for `ctx`'s configuration.
    pub fn new(
        ctx: Arc<Ctx>,
        signal: Arc<AtomicUsize>,
        policy: crate::policy::AccessPolicy,
        mode: Mode,
        multicast: bool,
    ) -> Arc<UdpServer> {
        let ctx_single = matches!(mode, Mode::Server { strict: false })
            && (ctx.cfg.iperf2.single_client || ctx.cfg.iperf2.single_udp);
        let histograms = ctx
            .cfg
            .output
            .histograms
            .as_deref()
            .map(|h| HistogramSpec::parse(Some(h)).unwrap_or_default());
        Arc::new(UdpServer {
            ctx,
            stop: Arc::new(AtomicBool::new(false)),
            signal,
            active: AtomicUsize::new(0),
            served: AtomicU32::new(0),
            policy,
            peers: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            drained: AtomicU64::new(0),
            mode,
            multicast,
            histograms,
            one_at_a_time: multicast || ctx_single,
        })
    }

    /// The same acceptor ending when `stop` is raised.
    pub fn with_stop(mut self: Arc<Self>, stop: Arc<AtomicBool>) -> Arc<Self> {
        if let Some(me) = Arc::get_mut(&mut self) {
            me.stop = stop;
        }
        self
    }

    /// Sessions running (or answering FINs).
    pub fn active(&self) -> usize {
        self.active.load(Relaxed)
    }

    /// Flows accepted so far.
    pub fn served(&self) -> u32 {
        self.served.load(Relaxed)
    }

    /// The listener has handed over everything that was queued.
    pub fn drained(&self) {
        self.drained.fetch_add(1, Relaxed);
    }

    fn allowed(&self, peer: SocketAddr) -> bool {
        self.policy.permits(peer.ip())
    }

    /// Takes a datagram from `from` that arrived on a listening socket
    /// bound to `local` at `rx_ns` (wall clock): the first datagram of a
    /// new client starts a flow; one of a flow not yet running is kept for
    /// it; anything else is dropped. Returns whether a flow started.
    pub fn offer(self: &Arc<Self>, local: SocketAddr, from: SocketAddr, d: &[u8], rx_ns: i64) -> bool {
        let from = net::canonical(from);
        let Ok(mut peers) = self.peers.lock() else {
            return false;
        };
        match peers.get(&from) {
            Some(Peer::Pending(p)) => {
                if let Ok(mut v) = p.lock()
                    && v.len() < PREFEED_MAX
                {
                    v.push((d.to_vec(), rx_ns));
                }
                return false;
            }
            Some(Peer::Done(t)) if t.elapsed() >= LINGER => {}
            Some(_) => return false,
            None => {}
        }
        if peers.len() > 256 {
            // Refused sources are forgotten too, so one sending from many
            // ports cannot grow the table (it is refused again, and said so).
            peers.retain(|_, p| !matches!(p, Peer::Denied) && !matches!(p, Peer::Done(t) if t.elapsed() >= LINGER));
        }
        if self.active() >= MAX_SESSIONS {
            return false;
        }
        // A late FIN of a finished test, or too short to be iperf 2's.
        let Some(first) = DatagramHeader::read(d, true).filter(|h| h.seq > 0) else {
            return false;
        };
        let header = match self.mode {
            Mode::ConnectBack { .. } => None,
            Mode::Server { strict } => {
                let h = ClientHeader::decode_udp(d);
                let valid = h.as_ref().is_some_and(|h| {
                    // iperf 2's own major version, so junk that happens to
                    // set the extension bit is not taken for a test.
                    h.flags & flags::EXTEND != 0 && h.version().is_some_and(|(u, l)| u >> 16 == 2 && l != 0)
                });
                // On a shared port anything else is someone else's (or junk).
                if strict && !valid {
                    return false;
                }
                h
            }
        };
        let _ = first;
        let refusal = if !self.allowed(from) {
            Some("client not allowed")
        } else {
            header
                .as_ref()
                .and_then(|h| super::server::over_limits(&self.ctx.cfg.server, h))
        };
        if let Some(why) = refusal {
            peers.insert(from, Peer::Denied);
            self.ctx.reporter(Side::Server).emit(Event::Refused(Box::new(Refused {
                local: crate::util::split_addr(&local),
                remote: crate::util::split_addr(&from),
                why: why.to_string(),
                policy: why == "client not allowed",
            })));
            return false;
        }
        let bind_ip = match (local.ip(), from) {
            (ip, _) if !ip.is_unspecified() => net::canonical(local).ip(),
            (_, SocketAddr::V4(_)) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            (_, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        let Ok(sock) = net::udp_stream_socket(SocketAddr::new(bind_ip, local.port()), from) else {
            return false;
        };
        let mut w = Vec::new();
        let _ = net::apply_data_options(&SockRef::from(&sock), &self.ctx.cfg.params, false, Some(from), &mut w);
        let Ok(sock_local) = sock.local_addr() else {
            return false;
        };
        let has_header = header.is_some();
        let header = header.unwrap_or_default();
        let trip = header.upper() & flags::upper::TRIPTIME != 0;
        let prefeed = Arc::new(Mutex::new(vec![(d.to_vec(), rx_ns)]));
        peers.insert(from, Peer::Pending(prefeed.clone()));
        drop(peers);
        self.served.fetch_add(1, Relaxed);
        let m = Member {
            sock,
            peer: from,
            local: sock_local,
            seq64: !has_header || header.flags & flags::SEQNO64B != 0,
            has_header,
            header,
            prefeed,
            id: self.ctx.next_id(),
            trip,
            enhanced: self.ctx.cfg.output.enhanced || trip,
        };
        self.print_connection(&m);
        let want = match self.mode {
            Mode::ConnectBack { expect } => expect,
            // One client at a time (-U, -1, multicast) has no groups.
            Mode::Server { .. } if has_header && !self.one_at_a_time => m.header.num_threads.clamp(1, 1024),
            Mode::Server { .. } => 1,
        };
        let key = (from.ip(), want);
        self.active.fetch_add(1, Relaxed);
        if want > 1 {
            let Ok(mut groups) = self.groups.lock() else {
                self.active.fetch_sub(1, Relaxed);
                return false;
            };
            let m = match groups.get(&key) {
                Some(tx) => match tx.send(m) {
                    Ok(()) => {
                        // Counted once per group, not per member.
                        self.active.fetch_sub(1, Relaxed);
                        return true;
                    }
                    Err(mpsc::SendError(m)) => m,
                },
                None => m,
            };
            let (tx, rx) = mpsc::channel();
            let _ = tx.send(m);
            groups.insert(key, tx);
            drop(groups);
            self.spawn_group(rx, Some(key), want);
        } else {
            let (tx, rx) = mpsc::channel();
            let _ = tx.send(m);
            self.spawn_group(rx, None, 1);
        }
        true
    }

    fn spawn_group(self: &Arc<Self>, rx: Receiver<Member>, key: Option<(IpAddr, u32)>, want: u32) {
        let me = self.clone();
        let epoch = self.drained.load(Relaxed);
        let spawned = std::thread::Builder::new().name("ws-iperf2-udp".into()).spawn(move || {
            let _guard = ActiveGuard(&me.active);
            let members = me.collect(rx, key, want, epoch);
            me.run_group(members);
        });
        if spawned.is_err() {
            self.active.fetch_sub(1, Relaxed);
        }
    }

    /// Gathers a group's members, waits for the listener's hand-over, and
    /// marks them running.
    fn collect(&self, rx: Receiver<Member>, key: Option<(IpAddr, u32)>, want: u32, epoch: u64) -> Vec<Member> {
        let mut members = Vec::new();
        let mut last = Instant::now();
        while (members.len() as u32) < want {
            match rx.recv_timeout(Duration::from_millis(5)) {
                Ok(m) => {
                    members.push(m);
                    last = Instant::now();
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if last.elapsed() >= GROUP_WAIT || self.stop.load(Relaxed) {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if let Some(k) = key
            && let Ok(mut g) = self.groups.lock()
        {
            g.remove(&k);
        }
        while let Ok(m) = rx.try_recv() {
            members.push(m);
        }
        let t0 = Instant::now();
        while self.drained.load(Relaxed) == epoch && t0.elapsed() < DRAIN_WAIT {
            std::thread::sleep(Duration::from_millis(1));
        }
        if let Ok(mut peers) = self.peers.lock() {
            for m in &members {
                peers.insert(m.peer, Peer::Active);
            }
        }
        members
    }

    fn print_connection(&self, m: &Member) {
        let mut line = udp_conn_line(m.id, &m.sock, m.local, m.peer);
        line.when = None;
        if m.reverse() {
            line.mode = Some("reverse".into());
            line.no_udp_fin = true;
        } else if m.full_duplex() {
            line.mode = Some("full-duplex".into());
            line.no_udp_fin = true;
        } else if m.trip {
            line.mode = Some("trip-times".into());
        }
        if !line.no_udp_fin && m.upper() & flags::upper::NOUDPFIN != 0 {
            line.no_udp_fin = true;
        }
        line.when = Some(crate::sys::time::epoch_now() as i64);
        line.peer_version = m.header.version().and_then(|(u, l)| version_string(u, l));
        self.reporter(m.enhanced).emit(Event::StreamConnected(Box::new(line)));
    }

    fn reporter(&self, enhanced: bool) -> Reporter {
        let mut c = self.ctx.cfg.clone();
        c.output.enhanced = enhanced;
        self.ctx.reporter_for(&c, Side::Server)
    }

    /// Datagram size a sender of this group uses, and what a receiver reads.
    fn block_len(&self, h: &ClientHeader) -> u32 {
        match h.buf_len {
            n @ 16..=65507 => n,
            _ => self
                .ctx
                .cfg
                .params
                .block_len
                .filter(|b| (16..=crate::cli::iperf2::MAX_UDP_LEN).contains(b))
                .unwrap_or(crate::cli::iperf2::DEFAULT_UDP_LEN),
        }
    }

    fn receiver(&self, m: &Member, block: usize, answers: &Answers) -> Option<Flow> {
        let sock = m.sock.try_clone().ok()?;
        let histogram = match (&self.histograms, m.trip) {
            (Some(spec), true) => Some(LatencyHistogram::new(*spec, "T8")),
            _ => None,
        };
        let counters = DetailCounters::with_histogram(block, m.enhanced, histogram);
        let prefeed = m
            .prefeed
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        let no_report = self.multicast || m.full_duplex() || m.upper() & flags::upper::NOUDPFIN != 0;
        let mut flow = Flow::new(
            stream(m.id, StreamRole::Recv, sock, m.local, m.peer),
            StreamExtras {
                hook: Some(Box::new(UdpRecvHook::new(counters.clone()))),
                udp_format: Some(Arc::new(Iperf2Format::receiver(m.seq64))),
                udp_prefeed: prefeed,
                meta: StreamMeta {
                    detail: Some(counters.clone()),
                    ..StreamMeta::default()
                },
                ..StreamExtras::default()
            },
        );
        if !no_report {
            let sock = m.sock.try_clone().ok()?;
            let answers = answers.clone();
            let id = m.id;
            let latency = m.enhanced;
            let stop = self.stop.clone();
            flow.on_end = Some(Box::new(move |line: &StreamSample| {
                let report = report_of(line, latency).encode();
                let got_fin = counters.fin();
                // A server being stopped does not wait for late FINs.
                if !got_fin && stop.load(Relaxed) {
                    return;
                }
                let h = std::thread::Builder::new().name("ws-iperf2-fin".into()).spawn(move || {
                    if !got_fin && !wait_for_fin(&sock, LATE_FIN) {
                        return true;
                    }
                    answer_fin(&sock, &report)
                });
                if let (Ok(h), Ok(mut a)) = (h, answers.lock()) {
                    a.push((id, h));
                }
            }));
        }
        Some(flow)
    }

    /// Runs one client's flows to the end.
    fn run_group(&self, members: Vec<Member>) {
        let Some(first) = members.first() else { return };
        let header = first.header.clone();
        let first_peer = first.peer.ip();
        let block = self.block_len(&header);
        let enhanced = members.iter().any(|m| m.enhanced);
        let trip = members.iter().any(|m| m.trip);
        let answers = Arc::new(Mutex::new(Vec::new()));
        let mut flows = Vec::new();
        let mut fins = Vec::new();
        let mut tradeoff = Vec::new();
        for m in &members {
            let budget = bytes(&m.header);
            if m.reverse() {
                if let Ok(s) = m.sock.try_clone() {
                    flows.push(self.sender(m.id, s, (m.local, m.peer), false, budget, false, &mut fins));
                }
                continue;
            }
            if let Some(f) = self.receiver(m, block as usize, &answers) {
                flows.push(f);
            }
            if m.full_duplex()
                && let Ok(s) = m.sock.try_clone()
            {
                flows.push(self.sender(m.id, s, (m.local, m.peer), true, budget, false, &mut fins));
            }
            match m.connect_back() {
                Some(true) => {
                    if let Some((s, local, addr, id)) = self.connect_back(m, block, enhanced) {
                        flows.push(self.sender(id, s, (local, addr), true, budget, true, &mut fins));
                    }
                }
                Some(false) => tradeoff.push(m),
                None => {}
            }
        }
        let mut rep = {
            let mut c = self.ctx.cfg.clone();
            c.output.enhanced = enhanced;
            self.ctx
                .test_reporter(&c, crate::config::Protocol::Udp, first_peer, members.len())
        };
        let params = self.params(&header, block, flows.len(), trip);
        let has_sender = !fins.is_empty();
        if let Err(e) = run_flows(
            &params,
            Side::Server,
            flows,
            &self.run_opts(&params, has_sender),
            &mut rep,
        ) {
            rep.emit(Event::Warning(format!("WARNING: {}", e.text())));
        }
        self.finish_senders(fins, &mut rep);
        // -r: now the server's turn to send.
        let mut back = Vec::new();
        let mut fins = Vec::new();
        for m in tradeoff {
            if self.stop.load(Relaxed) {
                break;
            }
            if let Some((s, local, addr, id)) = self.connect_back(m, block, enhanced) {
                back.push(self.sender(id, s, (local, addr), true, bytes(&m.header), true, &mut fins));
            }
        }
        if !back.is_empty() {
            let params = self.params(&header, block, back.len(), false);
            if let Err(e) = run_flows(&params, Side::Server, back, &self.run_opts(&params, true), &mut rep) {
                rep.emit(Event::Warning(format!("WARNING: {}", e.text())));
            }
            self.finish_senders(fins, &mut rep);
        }
        let handles = answers.lock().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default();
        for (id, h) in handles {
            if !h.join().unwrap_or(true) {
                rep.emit(Event::PeerReport(PeerReport::Undelivered { id }));
            }
        }
        rep.emit(Event::Done);
        if let Ok(mut peers) = self.peers.lock() {
            for m in &members {
                peers.insert(m.peer, Peer::Done(Instant::now()));
            }
        }
    }

    /// The session's parameters: the client's rate, duration and datagram
    /// size for our senders.
    fn params(&self, h: &ClientHeader, block: u32, streams: usize, trip: bool) -> TestParams {
        let mut p = self.ctx.cfg.params.clone();
        p.protocol = Protocol::Udp;
        p.streams = streams.max(1) as u32;
        p.block_len = Some(block);
        let rate = h.ext.map(|e| e.rate).unwrap_or(0);
        let rate = if rate == 0 {
            crate::cli::iperf2::DEFAULT_UDP_RATE
        } else {
            rate
        };
        if h.upper() & flags::upper::UNITS_PPS != 0 {
            p.pps = Some(rate);
            p.rate = 0;
        } else {
            p.pps = None;
            p.rate = rate;
        }
        p.trip_times = trip;
        p.pacing_timer = crate::cli::iperf2::IPERF2_CATCH_UP_US;
        p.end = match h.amount {
            Some(Amount::Time(cs)) => EndCondition::Time(Duration::from_millis(cs as u64 * 10)),
            // Byte counts are per stream (StreamExtras::budget).
            Some(Amount::Bytes(_)) | None => EndCondition::Time(Duration::ZERO),
        };
        p
    }

    fn run_opts(&self, p: &TestParams, decides_end: bool) -> RunOpts {
        let block = p.block_len_or_default() as f64;
        let gap = match (p.pps, p.rate) {
            (Some(pps), _) if pps > 0 => 1.0 / pps as f64,
            (_, r) if r > 0 => block * 8.0 / r as f64,
            _ => 0.0,
        };
        let idle = Duration::from_secs_f64((gap * 10.0).clamp(3.0, 60.0));
        RunOpts {
            interval: self.ctx.cfg.output.interval,
            decides_end,
            watchdog: p.duration().map(|d| Instant::now() + d + Duration::from_secs(30)),
            drain: Duration::from_secs(3),
            idle_limit: Some(idle),
            stop: self.stop.clone(),
            file: None,
            signal: self.signal.clone(),
            start: StartInfo::default(),
        }
    }

    /// A sending flow on `sock`; its FIN is queued in `fins`.
    #[allow(clippy::too_many_arguments)]
    fn sender(
        &self,
        id: u32,
        sock: UdpSocket,
        (local, peer): (SocketAddr, SocketAddr),
        starred: bool,
        budget: Option<u64>,
        expect_report: bool,
        fins: &mut Vec<FinJob>,
    ) -> Flow {
        let line = Arc::new(Mutex::new(None));
        if let Ok(s) = sock.try_clone() {
            fins.push(FinJob {
                sock: s,
                len: self.ctx.cfg.params.block_len_or_default() as usize,
                line: line.clone(),
                id,
                reversed: starred,
                expect_report,
            });
        }
        let mut f = Flow::new(
            stream(id, StreamRole::Send, sock, local, peer),
            StreamExtras {
                budget,
                udp_format: Some(Arc::new(Iperf2Format::sender(None))),
                meta: StreamMeta {
                    reversed: starred,
                    ..StreamMeta::default()
                },
                ..StreamExtras::default()
            },
        );
        f.on_end = Some(Box::new(move |l: &StreamSample| {
            if let Ok(mut g) = line.lock() {
                *g = Some(l.clone());
            }
        }));
        f
    }

    /// Sends our senders' FINs; prints the reports that come back.
    fn finish_senders(&self, fins: Vec<FinJob>, rep: &mut Reporter) {
        let stop = self.stop.clone();
        let jobs: Vec<_> = fins
            .into_iter()
            .filter_map(|j| {
                let next = j.line.lock().ok()?.as_ref()?.udp?.sent? as u64;
                let stop = stop.clone();
                let h = std::thread::spawn(move || {
                    let fmt = Iperf2Format::sender(None);
                    let mut d = vec![0u8; j.len.max(16)];
                    crate::engine::Payload::Repeating.fill(&mut d);
                    send_fin(&j.sock, &fmt, &d, next, j.expect_report, &|| stop.load(Relaxed))
                });
                Some((j.id, j.reversed, h))
            })
            .collect();
        for (id, reversed, h) in jobs {
            match h.join() {
                Ok(FinOutcome::Report(r)) => {
                    let l = relayed_line(id, reversed, &r);
                    rep.emit(Event::PeerReport(PeerReport::Report(Box::new(l))));
                }
                Ok(FinOutcome::NoReport { .. }) => {
                    rep.emit(Event::PeerReport(PeerReport::Missing {
                        id,
                        tries: super::udp::FIN_TRIES,
                        refused: false,
                    }));
                }
                _ => {}
            }
        }
    }

    /// The server's connect-back for `-d`/`-r`: banner, socket, line.
    fn connect_back(&self, m: &Member, block: u32, enhanced: bool) -> Option<(UdpSocket, SocketAddr, SocketAddr, u32)> {
        let cfg = &self.ctx.cfg;
        let port = (m.header.port as u16).max(1);
        let addr = SocketAddr::new(m.peer.ip(), port);
        let mut rep = self.reporter(enhanced);
        let p = self.params(&m.header, block, 1, false);
        let ipg_us = match (p.pps, p.rate) {
            (Some(pps), _) if pps > 0 => 1e6 / pps as f64,
            (_, r) if r > 0 => block as f64 * 8.0 / r as f64 * 1e6,
            _ => 0.0,
        };
        let opts = net::ConnectOpts::default();
        let apply = |s: &socket2::Socket| {
            let mut w = Vec::new();
            net::apply_data_options(s, &cfg.params, false, Some(addr), &mut w)
        };
        let sock = match net::connect_udp(addr, &opts, apply) {
            Ok(s) => s,
            Err(e) => {
                rep.emit(Event::Warning(format!("udp connect failed: {}", e.why())));
                return None;
            }
        };
        rep.emit(Event::Connecting(Box::new(Connecting {
            host: crate::util::host_string(m.peer.ip()),
            port,
            settings: crate::events::Settings {
                protocol: Protocol::Udp,
                pid: std::process::id(),
                flows: 1,
                block_len: block,
                tos: cfg.params.tos,
                nodelay: false,
                window: SockRef::from(&sock).send_buffer_size().unwrap_or(0) as u64,
                window_requested: cfg.params.window.map(u64::from),
                notes: vec![BannerNote::Datagrams { len: block, ipg_us }],
            },
            ..Connecting::default()
        })));
        let local = sock.local_addr().ok()?;
        let id = self.ctx.next_id();
        let mut line = udp_conn_line(id, &sock, local, addr);
        line.reversed = true;
        line.mode = Some("reverse".into());
        line.when = None;
        rep.emit(Event::StreamConnected(Box::new(line)));
        Some((sock, local, addr, id))
    }

    /// Serves the listening socket `make()` opens until a signal, `until`,
    /// or `max_flows` flows have been served and have finished.
    /// `single`: one client at a time, the listener closed meanwhile (so
    /// others are refused, as 2.1.8's `-U`); `hold`: one at a time with the
    /// listener kept (multicast, whose membership lives on it).
    pub fn serve(
        self: &Arc<Self>,
        make: &dyn Fn() -> Result<UdpSocket, Error>,
        first: Option<UdpSocket>,
        until: Option<Instant>,
        max_flows: Option<u32>,
        single: bool,
        hold: bool,
    ) -> Result<(), Error> {
        let mut listener = first;
        let mut buf = vec![0u8; 65536];
        loop {
            if self.signal.load(Relaxed) != 0 || until.is_some_and(|u| Instant::now() >= u) {
                self.stop.store(true, Relaxed);
                break;
            }
            if max_flows.is_some_and(|n| self.served() >= n) {
                break;
            }
            if (single || hold) && self.active() > 0 {
                if single {
                    listener = None;
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            let l = match listener.take() {
                Some(l) => l,
                None => make()?,
            };
            let local = l.local_addr().map_err(|e| Error::io(Code::LISTEN, &e))?;
            let _ = l.set_nonblocking(false);
            let _ = l.set_read_timeout(Some(Duration::from_millis(100)));
            if let Ok((n, from)) = l.recv_from(&mut buf) {
                {
                    let mut started = self.offer(local, from, &buf[..n], wall_ns());
                    // Hand over whatever queued behind it.
                    let _ = l.set_nonblocking(true);
                    while let Ok((n, from)) = l.recv_from(&mut buf) {
                        if (single || hold) && started {
                            // One client at a time: others wait (or are refused).
                            if net::canonical(from) != self.last_peer() {
                                continue;
                            }
                        }
                        started |= self.offer(local, from, &buf[..n], wall_ns());
                    }
                    self.drained();
                }
            }
            listener = Some(l);
        }
        // Let running flows finish (they end promptly once `stop` is raised).
        let limit = Instant::now() + Duration::from_secs(if self.stop.load(Relaxed) { 10 } else { 3600 });
        while self.active() > 0 && Instant::now() < limit {
            if self.signal.load(Relaxed) != 0 {
                self.stop.store(true, Relaxed);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    fn last_peer(&self) -> SocketAddr {
        self.peers
            .lock()
            .ok()
            .and_then(|p| p.iter().find(|(_, v)| matches!(v, Peer::Pending(_))).map(|(k, _)| *k))
            .unwrap_or_else(|| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0))
    }
}

/// Waits for a FIN on `sock` (a receiver that stopped before it came).
fn wait_for_fin(sock: &UdpSocket, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    let mut buf = vec![0u8; 65536];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let _ = sock.set_read_timeout(Some(left));
        match sock.recv(&mut buf) {
            Ok(n) => {
                if DatagramHeader::read(&buf[..n], true).is_some_and(|h| h.is_fin()) {
                    return true;
                }
            }
            Err(e) if crate::engine::is_timeout(&e) => return false,
            Err(_) => return false,
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

fn stream(id: u32, role: StreamRole, sock: UdpSocket, local: SocketAddr, peer: SocketAddr) -> DataStream {
    DataStream {
        id,
        role,
        info: ConnInfo::new(id, std::os::fd::AsRawFd::as_raw_fd(&sock), local, peer),
        sock: DataSock::Udp(sock),
    }
}

/// A multicast group to join on the listening socket: `-B group[%dev]`,
/// with `-H source` for source-specific multicast.
#[derive(Debug, Clone)]
pub struct Join {
    /// The group.
    pub group: IpAddr,
    /// Interface name (`%dev`).
    pub dev: Option<String>,
    /// SSM source (`-H`).
    pub source: Option<IpAddr>,
}

impl Join {
    /// Joins on `sock`; a group that cannot be joined is one line.
    pub fn apply(&self, sock: &UdpSocket) -> Result<(), Error> {
        let s = SockRef::from(sock);
        let fail = |e: std::io::Error| Error::msg(Code::LISTEN, format!("mcast join failed: {}", e_text(&e)));
        let index = match &self.dev {
            Some(d) => Some(crate::sys::netif::index_of(d).map_err(fail)?),
            None => None,
        };
        match (self.group, self.source) {
            (IpAddr::V4(g), Some(IpAddr::V4(src))) => {
                let ifa = Ipv4Addr::UNSPECIFIED;
                s.join_ssm_v4(&src, &g, &ifa).map_err(fail)?;
            }
            (IpAddr::V4(g), None) => {
                match index {
                    Some(i) => s.join_multicast_v4_n(&g, &socket2::InterfaceIndexOrAddress::Index(i)),
                    None => s.join_multicast_v4(&g, &Ipv4Addr::UNSPECIFIED),
                }
                .map_err(fail)?;
                let _ = s.set_multicast_all_v4(false);
            }
            (IpAddr::V6(g), None) => {
                s.join_multicast_v6(&g, index.unwrap_or(0)).map_err(fail)?;
                let _ = s.set_multicast_all_v6(false);
            }
            _ => {
                return Err(Error::msg(
                    Code::LISTEN,
                    "mcast join failed: source-specific joins (-H) need an IPv4 group and source",
                ));
            }
        }
        Ok(())
    }

    /// The banner's line for the join.
    pub fn banner_line(&self) -> String {
        match (&self.source, &self.dev) {
            (Some(src), Some(d)) => format!("Joining multicast (S,G)={src},{} w/iface {d}", self.group),
            (Some(src), None) => format!("Joining multicast (S,G)={src},{}", self.group),
            (None, Some(d)) => format!("Joining multicast (*,G)=*,{} w/iface {d}", self.group),
            (None, None) => format!("Joining multicast group  {}", self.group),
        }
    }
}

fn e_text(e: &std::io::Error) -> String {
    e.raw_os_error()
        .map(crate::error::strerror)
        .unwrap_or_else(|| e.to_string())
}

/// Runs `wirespeed --iperf2 -s -u`: the listening socket (joined to a
/// multicast group with `-B group`), a session per client, until a signal,
/// the listen time (`-t`), or `-P n` flows have been served.
pub fn run(ctx: Arc<Ctx>, signal: Arc<AtomicUsize>, policy: crate::policy::AccessPolicy) -> Result<(), Error> {
    let cfg = ctx.cfg.clone();
    let join = multicast_join(&cfg)?;
    let make = || -> Result<UdpSocket, Error> {
        let bind = cfg.net.bind.as_deref();
        let l = net::listen_udp(bind, cfg.port, cfg.net.family).map_err(|e| {
            let why = e.errno.map(crate::error::strerror).unwrap_or_else(|| e.text());
            Error::msg(Code::LISTEN, format!("listener bind failed: {why}"))
        })?;
        let s = SockRef::from(&l);
        if let (Some(dev), None) = (&cfg.net.bind_dev, &join) {
            s.bind_device(Some(dev.as_bytes()))
                .map_err(|e| Error::io(Code::BINDDEV, &e))?;
        }
        let mut w = Vec::new();
        net::apply_data_options(&s, &cfg.params, false, None, &mut w)?;
        if let Some(j) = &join {
            j.apply(&l)?;
        }
        Ok(l)
    };
    let first = make()?;
    let window = SockRef::from(&first).recv_buffer_size().unwrap_or(0) as u64;
    if cfg.server.daemon {
        crate::sys::process::detach()
            .map_err(|e| Error::io(Code::DAEMON, &e))?
            .ready();
    }
    let mut notes = Vec::new();
    if let Some(j) = &join {
        notes.push(BannerNote::Early(j.banner_line()));
        notes.push(BannerNote::Late(
            "Server set to single client traffic mode (per multicast receive)".into(),
        ));
    }
    if cfg.iperf2.single_udp {
        notes.push(BannerNote::Early(
            "WARN: Suggested to use lower case -u instead of -U (to avoid serialize & bypass of reporter thread)"
                .into(),
        ));
    }
    if let Some(h) = &cfg.output.histograms {
        notes.push(BannerNote::Late(
            HistogramSpec::parse(Some(h)).unwrap_or_default().banner(),
        ));
    }
    ctx.reporter(Side::Server).emit(Event::Listening(Box::new(Listening {
        port: cfg.port,
        settings: crate::events::Settings {
            protocol: Protocol::Udp,
            pid: std::process::id(),
            flows: 1,
            block_len: cfg.params.block_len_or_default(),
            tos: cfg.params.tos,
            nodelay: false,
            window,
            window_requested: cfg.params.window.map(u64::from),
            notes,
        },
        ..Listening::default()
    })));
    let srv = UdpServer::new(
        ctx.clone(),
        signal,
        policy,
        Mode::Server { strict: false },
        join.is_some(),
    );
    let until = cfg.server.listen_time.map(|t| Instant::now() + t);
    let single = cfg.iperf2.single_client || cfg.iperf2.single_udp;
    srv.serve(
        &make,
        Some(first),
        until,
        cfg.server.max_connections,
        single && join.is_none(),
        join.is_some(),
    )
}

/// The multicast group a server's `-B` names, if it is one.
fn multicast_join(cfg: &crate::config::TestConfig) -> Result<Option<Join>, Error> {
    let Some(b) = &cfg.net.bind else { return Ok(None) };
    let Ok(ip) = b.parse::<IpAddr>() else {
        return Ok(None);
    };
    if !ip.is_multicast() {
        return Ok(None);
    }
    let source = match &cfg.iperf2.ssm_host {
        Some(h) => Some(
            net::resolve(h, 0, cfg.net.family)
                .map_err(|e| Error::msg(Code::LISTEN, format!("mcast join failed: {}", e.text())))?[0]
                .ip(),
        ),
        None => None,
    };
    Ok(Some(Join {
        group: ip,
        dev: cfg.net.bind_dev.clone(),
        source,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Dialect, TestConfig};
    use crate::proto::iperf2::{HeaderExt, VERSION_L, VERSION_U};
    use crate::report::Output;

    fn server(strict: bool) -> Arc<UdpServer> {
        let cfg = TestConfig {
            dialect: Dialect::Iperf2,
            ..TestConfig::default()
        };
        let ctx = Arc::new(Ctx::new(cfg, Output::discard()));
        UdpServer::new(
            ctx,
            Arc::new(AtomicUsize::new(0)),
            crate::policy::AccessPolicy::open(),
            Mode::Server { strict },
            false,
        )
    }

    fn datagram(seq: i64, header: bool) -> Vec<u8> {
        let h = ClientHeader {
            num_threads: 1,
            amount: Some(Amount::from_secs(0.1)),
            ext: Some(HeaderExt {
                version_u: VERSION_U,
                version_l: VERSION_L,
                ..HeaderExt::default()
            }),
            ..ClientHeader::default()
        };
        let mut d = if header {
            super::super::udp::client_datagram(&h, 200)
        } else {
            vec![b'7'; 200]
        };
        Iperf2Format::sender(None).stamp_now(&mut d, seq);
        d
    }

    #[test]
    fn junk_stale_fins_and_short_datagrams_start_nothing() {
        let s = server(true);
        let local: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let from: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        assert!(!s.offer(local, from, &datagram(-5, true), 0), "a late FIN");
        assert!(!s.offer(local, from, &[1, 2, 3], 0), "too short");
        assert!(
            !s.offer(local, from, &datagram(1, false), 0),
            "no header on a shared port"
        );
        assert_eq!((s.served(), s.active()), (0, 0));
    }

    #[test]
    fn a_first_datagram_starts_a_flow_and_the_next_ones_wait_for_it() {
        let s = server(false);
        // A real socket as the client, so the flow's connect succeeds.
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let from = client.local_addr().unwrap();
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        s.stop.store(true, Relaxed);
        assert!(s.offer(local, from, &datagram(1, true), 1));
        assert!(
            !s.offer(local, from, &datagram(2, true), 2),
            "kept for the flow, not a new one"
        );
        assert_eq!(s.served(), 1);
        let t0 = Instant::now();
        while s.active() > 0 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(s.active(), 0, "a stopped server's session ends");
        // Strays from a finished client are ignored for a while.
        assert!(!s.offer(local, from, &datagram(3, true), 3));
    }
}
