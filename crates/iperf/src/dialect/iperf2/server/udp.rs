//! iperf 2 UDP clients on the server: a client is "accepted" at its first
//! datagram on the port; each flow gets a socket of its own, bound to the
//! port and connected to the client (the kernel then delivers that
//! client's datagrams to it), and the client's `-P` flows are grouped into
//! one test. Datagrams that reached the port before a flow had its socket
//! are handed to the flow, so none is counted lost. A receiver answers
//! its sender's FIN with the 128-byte report; a sender (`-R`,
//! `--full-duplex`, `-d`/`-r`) ends with its own FIN. The same code serves
//! an iperf 2 client's `-L` port for the server's UDP connect-back.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::groups::{GroupTransport, Member, Sending};
use crate::dialect::iperf2::hooks::{FrameTracker, UdpRecvHook};
use crate::dialect::iperf2::runner::Flow;
use crate::dialect::iperf2::udp::{FinOutcome, Iperf2Format, answer_fin, relayed_line, report_of, send_fin};
use crate::server::registry::UdpPeer;
use crate::server::{Mode, ServerCtx};
use wirespeed_core::config::{EndCondition, Protocol, TestParams};
use wirespeed_core::engine::{DataSock, DataStream, StreamExtras};
use wirespeed_core::events::{BannerNote, Event, PeerReport, Settings, StreamSample};
use wirespeed_core::net;
use wirespeed_core::stats::histogram::{HistogramSpec, LatencyHistogram};
use wirespeed_core::stats::{DetailCounters, FrameCounters, StreamMeta, StreamRole};
use wirespeed_proto::iperf2::header::Amount;
use wirespeed_proto::iperf2::{ClientHeader, DatagramHeader, IsochPayload, flags, l4s, version_string};
use wirespeed_report::Reporter;

/// How long a group waits for the rest of a client's `-P` flows after the
/// last one arrived (their first datagrams come within milliseconds; a
/// UDP flow cannot be held back long without its datagrams piling up).
const GROUP_WAIT: Duration = Duration::from_millis(50);
/// How long a new flow waits for the port to hand over what queued for it
/// before the flow's own socket existed.
const DRAIN_WAIT: Duration = Duration::from_millis(20);
/// Datagrams a pending flow keeps from the port, at most.
const PREFEED_MAX: usize = 4096;
/// How long after a finished client's last stray datagram the next is
/// taken for a new test rather than ignored.
const LINGER: Duration = Duration::from_secs(5);
/// Sessions at most at once: datagrams are easy to forge, and each new
/// source address would otherwise cost a socket and threads.
const MAX_SESSIONS: usize = 256;
/// How long a receiver that stopped without its sender's FIN waits for it.
const LATE_FIN: Duration = Duration::from_secs(3);

/// Whether clients are served one at a time (no `-P` groups): `-U`, `-1`,
/// a multicast group.
fn one_at_a_time(ctx: &ServerCtx) -> bool {
    ctx.multicast || (ctx.mode == Mode::Iperf2 && (ctx.cfg.iperf2.single_client || ctx.cfg.iperf2.single_udp))
}

/// The port has handed over everything that was queued.
pub(crate) fn drained(ctx: &ServerCtx) {
    ctx.registry.udp_drained.fetch_add(1, Relaxed);
}

/// Takes a datagram from `from` that arrived on a port bound to `local`
/// at `rx_ns` (wall clock), with TOS byte `tos` if read: the first datagram of a new client starts a
/// flow; one of a flow not yet running is kept for it; anything else is
/// dropped.
pub(crate) fn offer(
    ctx: &Arc<ServerCtx>,
    forming: &Arc<super::groups::Forming>,
    local: SocketAddr,
    from: SocketAddr,
    d: &[u8],
    rx_ns: i64,
    tos: Option<u8>,
) {
    let from = net::canonical(from);
    let Ok(mut peers) = ctx.registry.udp_peers.lock() else {
        return;
    };
    match peers.get(&from) {
        Some(UdpPeer::Pending(p)) => {
            if let Ok(mut v) = p.lock()
                && v.len() < PREFEED_MAX
            {
                v.push((d.to_vec(), rx_ns, tos));
            }
            return;
        }
        Some(UdpPeer::Done(t)) if t.elapsed() >= LINGER => {}
        Some(UdpPeer::Done(_)) => {
            // A client still sending after its test ended (the server's
            // guards ended it, or it missed its end) stays ignored while
            // it sends: its datagrams carry its settings, and would start
            // the test again.
            peers.insert(from, UdpPeer::Done(Instant::now()));
            return;
        }
        Some(_) => return,
        None => {}
    }
    if peers.len() > 256 {
        // Refused sources are forgotten too, so one sending from many
        // ports cannot grow the table (it is refused again, and said so).
        peers.retain(|_, p| !matches!(p, UdpPeer::Denied) && !matches!(p, UdpPeer::Done(t) if t.elapsed() >= LINGER));
    }
    if ctx.flows.load(Relaxed) >= MAX_SESSIONS || (one_at_a_time(ctx) && ctx.flows.load(Relaxed) > 0) {
        return;
    }
    // A late FIN of a finished test, or too short to be iperf 2's.
    if DatagramHeader::read(d, true).filter(|h| h.seq > 0).is_none() {
        return;
    }
    let Some(header) = header_of(ctx, d) else { return };
    let refusal = if !ctx.policy.permits(from.ip()) {
        Some("client not allowed")
    } else {
        header
            .as_ref()
            .and_then(|h| super::groups::over_limits(&ctx.cfg.server, h))
    };
    if let Some(why) = refusal {
        peers.insert(from, UdpPeer::Denied);
        super::groups::refuse(ctx, local, from, why);
        return;
    }
    let Some(m) = member(ctx, local, from, header, d, (rx_ns, tos)) else {
        return;
    };
    peers.insert(from, UdpPeer::Pending(m.prefeed.clone()));
    drop(peers);
    ctx.served.fetch_add(1, Relaxed);
    print_connection(ctx, &m);
    let want = match ctx.mode {
        Mode::ConnectBack { expect } => expect,
        _ if m.has_header && !one_at_a_time(ctx) => m.header.num_threads.clamp(1, 1024),
        _ => 1,
    };
    let key = (from.ip(), want);
    // Counted at once, so the next datagram sees this session.
    ctx.flows.fetch_add(1, Relaxed);
    let Some(rx) = super::groups::join(&forming.udp, key, m) else {
        // A member of a forming group, counted with it.
        ctx.flows.fetch_sub(1, Relaxed);
        return;
    };
    let epoch = ctx.registry.udp_drained.load(Relaxed);
    let ctx2 = ctx.clone();
    let forming = forming.clone();
    let spawned = std::thread::Builder::new().name("ws-iperf2-udp".into()).spawn(move || {
        let members = super::groups::collect(&forming.udp, key, rx, want, GROUP_WAIT, &ctx2.stop);
        // What queued at the port for the members is theirs.
        let t0 = Instant::now();
        while ctx2.registry.udp_drained.load(Relaxed) == epoch && t0.elapsed() < DRAIN_WAIT {
            std::thread::sleep(Duration::from_millis(1));
        }
        set_peers(&ctx2, &members, UdpPeer::Active);
        let mut t = Udp::default();
        super::groups::run_group(&ctx2, members_sorted(members), &mut t);
        set_peers(&ctx2, &t.served, UdpPeer::Done(Instant::now()));
        ctx2.flows.fetch_sub(1, Relaxed);
    });
    if spawned.is_err() {
        ctx.flows.fetch_sub(1, Relaxed);
    }
}

fn members_sorted(mut m: Vec<Member>) -> Vec<Member> {
    m.sort_by_key(|m| m.id);
    m
}

fn set_peers<T: PeerOf>(ctx: &ServerCtx, members: &[T], state: UdpPeer) {
    if let Ok(mut peers) = ctx.registry.udp_peers.lock() {
        for m in members {
            let s = match &state {
                UdpPeer::Active => UdpPeer::Active,
                UdpPeer::Done(t) => UdpPeer::Done(*t),
                _ => continue,
            };
            peers.insert(m.peer(), s);
        }
    }
}

/// Something with a client address.
trait PeerOf {
    fn peer(&self) -> SocketAddr;
}

impl PeerOf for Member {
    fn peer(&self) -> SocketAddr {
        self.peer
    }
}

impl PeerOf for SocketAddr {
    fn peer(&self) -> SocketAddr {
        *self
    }
}

/// The client settings a first datagram carries: `Some(None)` for a
/// headerless datagram a server takes, `None` for one it refuses.
fn header_of(ctx: &ServerCtx, d: &[u8]) -> Option<Option<ClientHeader>> {
    if let Mode::ConnectBack { .. } = ctx.mode {
        return Some(None);
    }
    let h = ClientHeader::decode_udp(d);
    let valid = h.as_ref().is_some_and(|h| {
        // iperf 2's own major version, so junk that happens to set the
        // extension bit is not taken for a test. An L4S sender's
        // datagrams carry its timestamps where the version would be.
        h.flags & flags::EXTEND != 0 && h.version().is_some_and(|(u, l)| u >> 16 == 2 && l != 0)
    }) || l4s::announces(d);
    // On a shared port anything else is someone else's (or junk).
    if ctx.strict && !valid {
        return None;
    }
    Some(h)
}

/// A new flow: its own socket, bound to the port and connected to the
/// client, holding the first datagram.
fn member(
    ctx: &ServerCtx,
    local: SocketAddr,
    from: SocketAddr,
    header: Option<ClientHeader>,
    d: &[u8],
    (rx_ns, tos): (i64, Option<u8>),
) -> Option<Member> {
    let bind_ip = match (local.ip(), from) {
        (ip, _) if !ip.is_unspecified() => net::canonical(local).ip(),
        (_, SocketAddr::V4(_)) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (_, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let sock = net::udp_stream_socket(SocketAddr::new(bind_ip, local.port()), from).ok()?;
    let mut w = Vec::new();
    let _ = net::apply_data_options(&SockRef::from(&sock), &ctx.flow_cfg.params, false, Some(from), &mut w);
    let sock_local = sock.local_addr().ok()?;
    let has_header = header.is_some();
    let header = header.unwrap_or_default();
    let trip = header.upper() & flags::upper::TRIPTIME != 0;
    Some(Member {
        // A 2.2 client's --sync-transfer-id: its number for the flow.
        id: header
            .transfer_id
            .filter(|t| *t > 0)
            .unwrap_or_else(crate::dialect::iperf2::next_id),
        peer: from,
        local: sock_local,
        seq64: !has_header || header.flags & flags::SEQNO64B != 0,
        has_header,
        trip,
        enhanced: ctx.flow_cfg.output.enhanced || trip,
        header,
        sock: DataSock::Udp(sock),
        initial: 0,
        tcp_init: None,
        prefeed: Arc::new(Mutex::new(vec![(d.to_vec(), rx_ns, tos)])),
    })
}

fn print_connection(ctx: &ServerCtx, m: &Member) {
    let DataSock::Udp(sock) = &m.sock else { return };
    let mut line = crate::dialect::iperf2::udp_conn_line(m.id, sock, m.local, m.peer);
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
    if is_l4s(m) {
        line.l4s = true;
    } else {
        line.peer_version = m.header.version().and_then(|(u, l)| version_string(u, l));
    }
    super::groups::announce(ctx, m, line);
}

/// An iperf 2.2.1 `--udp-l4s` sender: the settings of its datagrams say
/// so (docs/protocols.md, "iperf 2 UDP L4S").
fn is_l4s(m: &Member) -> bool {
    m.has_header && m.header.flags & flags::UDPTESTS != 0 && m.upper() & flags::upper::UDPL4S != 0
}

/// Receivers answering their senders' FINs: (stream id, whether the
/// report got through).
type Answers = Arc<Mutex<Vec<(u32, JoinHandle<bool>)>>>;

/// A sender whose FIN goes out once its flows have run.
struct FinJob {
    sock: UdpSocket,
    len: usize,
    line: Arc<Mutex<Option<StreamSample>>>,
    id: u32,
    reversed: bool,
    expect_report: bool,
}

/// iperf 2's UDP flows of one group.
#[derive(Default)]
struct Udp {
    fins: Vec<FinJob>,
    answers: Answers,
    /// Client addresses of the group (marked done at the end).
    served: Vec<SocketAddr>,
}

impl Udp {
    /// Datagram size a sender of this group uses, and what a receiver reads.
    fn block_len(ctx: &ServerCtx, h: &ClientHeader) -> u32 {
        match h.buf_len {
            n @ 16..=65507 => n,
            _ => ctx
                .flow_cfg
                .params
                .block_len
                .filter(|b| (16..=wirespeed_proto::iperf2::defaults::MAX_UDP_LEN).contains(b))
                .unwrap_or(wirespeed_proto::iperf2::defaults::DEFAULT_UDP_LEN),
        }
    }
}

impl GroupTransport for Udp {
    fn protocol(&self) -> Protocol {
        Protocol::Udp
    }

    fn receiver(&mut self, ctx: &ServerCtx, m: &Member) -> Option<Flow> {
        self.served.push(m.peer);
        let DataSock::Udp(s) = &m.sock else { return None };
        let sock = s.try_clone().ok()?;
        let l4s = is_l4s(m);
        // An L4S sender's datagrams grow to its length plus the IP and
        // UDP headers (2.2.1 sizes them as whole packets).
        let block = Udp::block_len(ctx, &m.header) as usize + if l4s { 48 } else { 0 };
        let histogram = match (&ctx.cfg.output.histograms, m.trip) {
            (Some(h), true) => Some(LatencyHistogram::new(
                HistogramSpec::parse(Some(h)).unwrap_or_default(),
                "T8",
            )),
            _ => None,
        };
        let counters = DetailCounters::with_histogram(block, m.enhanced, histogram);
        let prefeed = m
            .prefeed
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        let no_report = ctx.multicast || m.full_duplex() || m.upper() & flags::upper::NOUDPFIN != 0;
        let mut hook = UdpRecvHook::new(counters.clone());
        // An isochronous client's frames (their fields sit where the
        // client's version puts them).
        let frames = (m.upper() & flags::upper::ISOCH != 0).then(|| Arc::new(FrameCounters::default()));
        if let Some(f) = &frames {
            let at = IsochPayload::offset_for(m.header.version().map_or(0, |v| v.0));
            hook = hook.with_frames(FrameTracker::new(at, m.trip, f.clone()));
        }
        let l4s_log = l4s.then(|| Arc::new(wirespeed_core::stats::L4sLog::default()));
        if let Some(log) = &l4s_log {
            // The acks go out ECT(1), as 2.2.1's do.
            let tos = u32::from((ctx.flow_cfg.params.tos & !3) | 1);
            let r = SockRef::from(s);
            if m.local.is_ipv6() {
                let _ = wirespeed_sys::socket::set_tclass(&r, tos);
            }
            let _ = r.set_tos_v4(tos);
            hook = hook.with_l4s(crate::dialect::iperf2::l4s::L4sAcker::new(
                s.try_clone().ok()?,
                log.clone(),
            ));
        }
        let mut flow = Flow::new(
            DataStream::new(m.id, StreamRole::Recv, DataSock::Udp(sock), m.local, m.peer),
            StreamExtras {
                hook: Some(Box::new(hook)),
                udp_format: Some(Arc::new(if l4s {
                    Iperf2Format::receiver(m.seq64).l4s()
                } else {
                    Iperf2Format::receiver(m.seq64)
                })),
                udp_prefeed: prefeed,
                meta: StreamMeta {
                    detail: Some(counters.clone()),
                    frames,
                    // A client's -d/-r listener: the server's flows back.
                    connect_back: matches!(ctx.mode, Mode::ConnectBack { .. }),
                    // The client's header says the TOS byte it sends with;
                    // an L4S sender's carries its sequence number there and
                    // sends ECT(1).
                    ecn_sent: if l4s {
                        Some(wirespeed_core::events::Ecn::Ect1)
                    } else {
                        m.header
                            .ext
                            .filter(|_| m.has_header)
                            .map(|e| wirespeed_core::events::Ecn::of_tos(e.tos as u8))
                    },
                    l4s,
                    l4s_log,
                    ..StreamMeta::default()
                },
                ..StreamExtras::default()
            },
        );
        if !no_report {
            let sock = s.try_clone().ok()?;
            let answers = self.answers.clone();
            let id = m.id;
            let latency = m.enhanced;
            let stop = ctx.stop.clone();
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

    fn sender(&mut self, ctx: &ServerCtx, m: &Member, id: u32, sock: DataSock, why: Sending) -> Option<Flow> {
        self.served.push(m.peer);
        let DataSock::Udp(sock) = sock else { return None };
        let (local, peer) = (sock.local_addr().ok()?, sock.peer_addr().ok()?);
        // The client's ECN codepoint (`--ecn`) rides on the flow back too.
        if let Some(e) = m
            .header
            .ext
            .filter(|_| m.has_header)
            .map(|e| e.tos as u8 & 3)
            .filter(|e| *e != 0)
        {
            let tos = u32::from((ctx.flow_cfg.params.tos & !3) | e);
            let s = SockRef::from(&sock);
            if local.is_ipv6() {
                let _ = wirespeed_sys::socket::set_tclass(&s, tos);
            }
            let _ = s.set_tos_v4(tos);
        }
        let starred = why != Sending::Reverse;
        let line = Arc::new(Mutex::new(None));
        if let Ok(s) = sock.try_clone() {
            self.fins.push(FinJob {
                sock: s,
                len: Udp::block_len(ctx, &m.header) as usize,
                line: line.clone(),
                id,
                reversed: starred,
                expect_report: why == Sending::ConnectBack,
            });
        }
        let mut f = Flow::new(
            DataStream::new(id, StreamRole::Send, DataSock::Udp(sock), local, peer),
            StreamExtras {
                budget: m.bytes(),
                // A receiving --trip-times client takes our start time
                // from the first datagram.
                udp_format: Some(Arc::new({
                    let f = Iperf2Format::sender(None).with_start(m.trip.then(wirespeed_core::clock::wall_clock));
                    // On the client's own socket (not a connection back to
                    // a port it listens on, which may not be up yet).
                    if why == Sending::ConnectBack {
                        f
                    } else {
                        f.ending_on_refusal()
                    }
                })),
                meta: StreamMeta {
                    reversed: starred,
                    connect_back: why == Sending::ConnectBack,
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
        Some(f)
    }

    fn connect_back(&mut self, ctx: &ServerCtx, m: &Member, rep: &mut Reporter) -> Option<(DataSock, u32)> {
        let params = &ctx.flow_cfg.params;
        let block = Udp::block_len(ctx, &m.header);
        let port = (m.header.port as u16).max(1);
        let addr = SocketAddr::new(m.peer.ip(), port);
        let p = self.params(ctx, &m.header, 1, false);
        let ipg_us = match (p.pps, p.rate) {
            (Some(pps), _) if pps > 0 => 1e6 / pps as f64,
            (_, r) if r > 0 => block as f64 * 8.0 / r as f64 * 1e6,
            _ => 0.0,
        };
        let apply = |s: &socket2::Socket| {
            let mut w = Vec::new();
            net::apply_data_options(s, params, false, Some(addr), &mut w)
        };
        let sock = match net::connect_udp(addr, &net::ConnectOpts::default(), apply) {
            Ok(s) => s,
            Err(e) => {
                rep.emit(Event::Warning(format!("udp connect failed: {}", e.why())));
                return None;
            }
        };
        let settings = Settings {
            protocol: Protocol::Udp,
            pid: std::process::id(),
            flows: 1,
            block_len: block,
            tos: params.tos,
            nodelay: false,
            window: SockRef::from(&sock).send_buffer_size().unwrap_or(0) as u64,
            window_requested: params.window.map(u64::from),
            notes: vec![BannerNote::Datagrams { len: block, ipg_us }],
        };
        super::groups::connect_back_banner(ctx, m, port, settings, rep);
        let local = sock.local_addr().ok()?;
        let id = crate::dialect::iperf2::next_id();
        let mut line = crate::dialect::iperf2::udp_conn_line(id, &sock, local, addr);
        line.reversed = true;
        line.mode = Some("reverse".into());
        line.when = None;
        rep.emit(Event::StreamConnected(Box::new(line)));
        Some((DataSock::Udp(sock), id))
    }

    /// The client's rate, duration and datagram size for our senders.
    fn params(&self, ctx: &ServerCtx, h: &ClientHeader, streams: usize, trip: bool) -> TestParams {
        let mut p = super::groups::base_params(ctx, h, streams, trip);
        p.protocol = Protocol::Udp;
        p.block_len = Some(Udp::block_len(ctx, h));
        let rate = match h.ext.map(|e| e.rate).unwrap_or(0) {
            0 => wirespeed_proto::iperf2::defaults::DEFAULT_UDP_RATE,
            r => r,
        };
        if h.upper() & flags::upper::UNITS_PPS != 0 {
            p.pps = Some(rate);
            p.rate = 0;
        } else {
            p.pps = None;
            p.rate = rate;
        }
        p.pacing_timer = wirespeed_proto::iperf2::defaults::IPERF2_CATCH_UP_US;
        if !matches!(h.amount, Some(Amount::Time(_))) {
            p.end = EndCondition::Time(Duration::ZERO);
        }
        p
    }

    /// A receiver whose sender's FIN does not come (none is sent, or it
    /// was lost) ends once quiet for ten datagram gaps, between 3 and 60 s.
    fn end_idle(&self, p: &TestParams) -> Option<Duration> {
        let block = p.block_len_or_default() as f64;
        let gap = match (p.pps, p.rate) {
            (Some(pps), _) if pps > 0 => 1.0 / pps as f64,
            (_, r) if r > 0 => block * 8.0 / r as f64,
            _ => 0.0,
        };
        Some(Duration::from_secs_f64((gap * 10.0).clamp(3.0, 60.0)))
    }

    /// Sends our senders' FINs; reports what comes back.
    fn after_run(&mut self, ctx: &ServerCtx, rep: &mut Reporter) {
        let stop = ctx.stop.clone();
        let jobs: Vec<_> = self
            .fins
            .drain(..)
            .filter_map(|j| {
                let next = j.line.lock().ok()?.as_ref()?.udp?.sent? as u64;
                let stop = stop.clone();
                let h = std::thread::spawn(move || {
                    let fmt = Iperf2Format::sender(None);
                    let mut d = vec![0u8; j.len.max(16)];
                    wirespeed_core::engine::Payload::Repeating.fill(&mut d);
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
                Ok(FinOutcome::NoReport { tries, .. }) => {
                    rep.emit(Event::PeerReport(PeerReport::Missing { id, tries, refused: 0 }));
                }
                _ => {}
            }
        }
    }

    /// Waits for the receivers' answers to their senders' FINs.
    fn finish(&mut self, _ctx: &ServerCtx, rep: &mut Reporter) {
        let handles = self
            .answers
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default();
        for (id, h) in handles {
            if !h.join().unwrap_or(true) {
                rep.emit(Event::PeerReport(PeerReport::Undelivered { id }));
            }
        }
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
            Err(_) => return false,
        }
    }
}
