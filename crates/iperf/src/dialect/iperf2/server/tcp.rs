//! iperf 2 TCP clients on the server: each connection (its header already
//! read by the acceptor) gets a thread that checks it, answers with the
//! version ack, joins its client's `-P` group, and the group's first
//! thread runs the test. A connection that opens a bounceback test becomes
//! an echo stream instead.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use socket2::SockRef;

use super::groups::{GroupTransport, Member, Sending};
use crate::dialect::iperf2::hooks::{BurstStamp, RecvHook};
use crate::dialect::iperf2::runner::Flow;
use crate::server::{Mode, ServerCtx};
use wirespeed_core::clock::wall_clock;
use wirespeed_core::config::{Protocol, TestParams};
use wirespeed_core::engine::StreamHook;
use wirespeed_core::engine::{DataSock, DataStream, StreamExtras};
use wirespeed_core::events::{Event, Settings};
use wirespeed_core::net;
use wirespeed_core::stats::histogram::{HistogramSpec, LatencyHistogram};
use wirespeed_core::stats::{DetailCounters, StreamMeta, StreamRole};
use wirespeed_proto::iperf2::header::{Amount, ClientHeader, Need};
use wirespeed_proto::iperf2::{BurstTracker, ClientAck, VERSION_L, VERSION_U, flags, join_secs, version_string};
use wirespeed_report::Reporter;
use wirespeed_report::metrics::Refusal;

/// Trip-times start stamps further than this from our clock are refused.
const CLOCK_SKEW: f64 = 600.0;

/// Serves one connection on a thread of its own. `prefix` holds the bytes
/// the acceptor read (the whole header, if there is one).
pub(crate) fn serve(
    ctx: Arc<ServerCtx>,
    forming: &Arc<super::groups::Forming>,
    stream: TcpStream,
    peer: SocketAddr,
    prefix: Vec<u8>,
) {
    // Counted before the thread runs, so the acceptor's one-at-a-time
    // and end rules see it at once.
    ctx.flows.fetch_add(1, Relaxed);
    let ctx2 = ctx.clone();
    let forming = forming.clone();
    let spawned = std::thread::Builder::new()
        .name("ws-iperf2-conn".into())
        .spawn(move || {
            let _flow = FlowCount(&ctx2);
            connection(&ctx2, &forming, stream, peer, prefix);
        });
    if spawned.is_err() {
        ctx.flows.fetch_sub(1, Relaxed);
    }
}

struct FlowCount<'a>(&'a ServerCtx);

impl Drop for FlowCount<'_> {
    fn drop(&mut self) {
        self.0.flows.fetch_sub(1, Relaxed);
    }
}

/// Whether `bytes` (at least 4 of them) begin iperf 2's payload pattern
/// `0123456789 0123...`, which a `-C` client sends with no header.
fn is_payload_pattern(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && bytes.iter().enumerate().all(|(i, &b)| b == b'0' + (i % 10) as u8)
}

fn connection(ctx: &Arc<ServerCtx>, forming: &super::groups::Forming, sock: TcpStream, peer: SocketAddr, buf: Vec<u8>) {
    let Ok(local) = sock.local_addr() else { return };
    let accepted = wall_clock();
    if !ctx.policy.permits(peer.ip()) {
        ctx.refused(Refusal::Policy);
        super::groups::refuse(ctx, local, peer, "client not allowed");
        return;
    }
    let connect_back = matches!(ctx.mode, Mode::ConnectBack { .. });
    let len = match ClientHeader::need_tcp(&buf) {
        Ok(Need::Done(n)) => n,
        _ if connect_back => 0,
        _ => {
            ctx.refused(Refusal::Unrecognized);
            return;
        }
    };
    if len == 0 && !connect_back && wirespeed_proto::iperf2::bounceback::is_bounceback(&buf) {
        crate::dialect::iperf2::server::bounceback::serve(ctx, sock, peer, buf);
        return;
    }
    if ctx.strict && len == 0 && !is_payload_pattern(&buf) {
        ctx.refused(Refusal::Unrecognized);
        return;
    }
    let header = if len > 0 {
        match ClientHeader::decode_tcp(&buf[..len]) {
            Ok(h) => h,
            Err(_) => {
                ctx.refused(Refusal::Unrecognized);
                return;
            }
        }
    } else {
        ClientHeader::default()
    };
    if let Err((why, words)) = check_header(ctx, &header) {
        ctx.refused(why);
        if why != Refusal::Unrecognized {
            super::groups::refuse(ctx, local, peer, words);
        }
        return;
    }
    let Some(trip) = admit(ctx, &sock, &header, len > 0, accepted) else {
        super::groups::refuse(ctx, local, peer, "permit key fail");
        return;
    };
    let cfg = &ctx.flow_cfg;
    let mut w = Vec::new();
    let _ = net::apply_data_options(&SockRef::from(&sock), &cfg.params, true, Some(peer), &mut w);
    if let Some(rate) = sends_paced(&header) {
        // As 2.1.8: the client's --fq-rate paces what this server sends.
        let _ = wirespeed_sys::socket::set_max_pacing_rate(&sock, rate);
    }
    if let Some(n) = write_prefetch(&header) {
        let _ = net::set_notsent_lowat(&SockRef::from(&sock), n);
    }
    let tcp_init = if connect_back {
        None
    } else {
        crate::dialect::iperf2::tcp_init(&sock)
    };
    let m = Member {
        // A 2.2 client's --sync-transfer-id: its number for the flow.
        id: header
            .transfer_id
            .filter(|t| *t > 0)
            .unwrap_or_else(crate::dialect::iperf2::next_id),
        peer,
        local,
        has_header: len > 0,
        trip,
        enhanced: cfg.output.enhanced || trip,
        // Like 2.1.8, the header counts as received bytes.
        initial: buf.len() as u64,
        tcp_init,
        header,
        sock: DataSock::Tcp(sock),
        seq64: false,
        prefeed: Default::default(),
    };
    print_connection(ctx, &m);
    let (key, want) = match ctx.mode {
        Mode::ConnectBack { expect } => ((net::canonical_ip(peer.ip()), expect), expect),
        _ if !m.has_header || m.header.num_threads <= 1 => {
            return super::groups::run_group(ctx, vec![m], &mut Tcp);
        }
        _ => {
            let n = m.header.num_threads;
            ((net::canonical_ip(peer.ip()), n), n)
        }
    };
    // Join a group that is forming, or start one.
    let Some(rx) = super::groups::join(&forming.tcp, key, m) else {
        return;
    };
    let members = super::groups::collect(&forming.tcp, key, rx, want, super::groups::TCP_GROUP_WAIT, &ctx.stop);
    super::groups::run_group(ctx, members, &mut Tcp);
}

/// The permit key and the trip-times clock check; answers the client's ack
/// request. `None`: refused (the key); else whether trip times are on.
fn admit(
    ctx: &ServerCtx,
    sock: &TcpStream,
    header: &ClientHeader,
    has_header: bool,
    accepted: (u32, u32),
) -> Option<bool> {
    let cfg = &ctx.flow_cfg;
    let key_ok = match (&ctx.cfg.iperf2.permit_key, &header.key) {
        _ if matches!(ctx.mode, Mode::ConnectBack { .. }) => true,
        (Some(k), Some(got)) => k.as_bytes() == got.as_slice(),
        (None, None) => true,
        _ => false,
    };
    if !key_ok {
        return None;
    }
    let mut trip = header.upper() & flags::upper::TRIPTIME != 0;
    if trip {
        let st = header.start.unwrap_or_default();
        let skew = (join_secs(st.sec, st.usec) - join_secs(accepted.0, accepted.1)).abs();
        if skew > CLOCK_SKEW {
            ctx.reporter(cfg, super::groups::side(ctx)).emit(Event::Notice(
                "WARN: ignore --trip-times because client didn't provide valid start timestamp within 600 seconds of now"
                    .into(),
            ));
            trip = false;
        }
    }
    if has_header && ClientAck::wanted(header.flags) {
        let times = trip.then(|| {
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
        let _ = (&*sock).write_all(&ack.encode());
        let _ = sock.set_write_timeout(None);
        let _ = sock.set_nodelay(cfg.params.nodelay);
    }
    Some(trip)
}

/// Refuses headers a server should not act on: on a shared port an
/// extension must be iperf 2's own (major version 2), so text that
/// happens to set the extension bit is not taken for a test; and the
/// server's limits.
fn check_header(ctx: &ServerCtx, h: &ClientHeader) -> Result<(), (Refusal, &'static str)> {
    if ctx.strict
        && let Some(ext) = &h.ext
        && ext.version_u >> 16 != 2
    {
        return Err((Refusal::Unrecognized, "not an iperf 2 header"));
    }
    match super::groups::over_limits(&ctx.cfg.server, h) {
        Some(why) => Err((Refusal::Limit, why)),
        None => Ok(()),
    }
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

fn print_connection(ctx: &ServerCtx, m: &Member) {
    let DataSock::Tcp(sock) = &m.sock else { return };
    let h = &m.header;
    let mut line = crate::dialect::iperf2::conn_line(m.id, sock, m.local, m.peer);
    line.when = None;
    line.tcp_init = m.tcp_init;
    let reverse = m.reverse();
    line.mode = if reverse {
        Some("reverse".into())
    } else if m.full_duplex() {
        Some("full-duplex".into())
    } else if m.trip {
        Some("trip-times".into())
    } else {
        h.burst_period().map(|p| format!("burst-period={p:.4}s"))
    };
    if line.mode.is_none() || m.trip || h.burst_period().is_some() {
        line.when = Some(wirespeed_core::clock::epoch_now() as i64);
    }
    // 2.1.8 tags a paced reverse flow; a paced full-duplex one is not tagged.
    line.fq = reverse && sends_paced(h).is_some();
    line.clamp = ctx.cfg.iperf2.rx_window_clamp;
    line.prefetch = write_prefetch(h);
    // The server re-arms quick acks where it reads (not on a -R flow).
    line.qack = quickack(h) && !reverse;
    line.peer_version = h.version().and_then(|(u, l)| version_string(u, l));
    super::groups::announce(ctx, m, line);
}

/// iperf 2's TCP flows.
pub(super) struct Tcp;

impl GroupTransport for Tcp {
    fn protocol(&self) -> Protocol {
        Protocol::Tcp
    }

    fn receiver(&mut self, ctx: &ServerCtx, m: &Member) -> Option<Flow> {
        let DataSock::Tcp(s) = &m.sock else { return None };
        let sock = s.try_clone().ok()?;
        let block = ctx.flow_cfg.params.block_len_or_default() as usize;
        let qack = quickack(&m.header).then(|| sock.try_clone().ok()).flatten();
        // Burst-latency histograms (`F8`) need --trip-times bursts to time.
        let histogram = ctx
            .cfg
            .output
            .histograms
            .as_deref()
            .filter(|_| m.trip)
            .map(|h| LatencyHistogram::new(HistogramSpec::parse(Some(h)).unwrap_or_default(), "F8"));
        let counters = DetailCounters::with_histogram(block, m.trip, histogram);
        // `-s -b`: the server's read-rate limit (a client's `-b` is for
        // what it sends, not what comes back to it).
        let rate = match ctx.mode {
            Mode::ConnectBack { .. } => 0,
            _ => ctx.flow_cfg.params.rate,
        };
        let hook = RecvHook::new(counters.clone(), m.trip.then(BurstTracker::new), rate, block).with_quickack(qack);
        Some(Flow::new(
            DataStream::new(m.id, StreamRole::Recv, DataSock::Tcp(sock), m.local, m.peer),
            StreamExtras {
                hook: Some(Box::new(hook)),
                initial_bytes: m.initial,
                meta: StreamMeta {
                    detail: Some(counters),
                    // A client's -d/-r listener: the server's flows back.
                    connect_back: matches!(ctx.mode, Mode::ConnectBack { .. }),
                    ..StreamMeta::default()
                },
                ..StreamExtras::default()
            },
        ))
    }

    fn sender(&mut self, _ctx: &ServerCtx, m: &Member, id: u32, sock: DataSock, why: Sending) -> Option<Flow> {
        let DataSock::Tcp(sock) = sock else { return None };
        let (local, peer) = (sock.local_addr().ok()?, sock.peer_addr().ok()?);
        let budget = m.bytes();
        let trip = m.trip && why != Sending::ConnectBack;
        // 2.1.8 does not star a server's sender in a plain reverse test.
        let starred = why != Sending::Reverse;
        let closer = if why == Sending::FullDuplex {
            None
        } else {
            Some(sock.try_clone().ok()?)
        };
        // Like 2.1.8, a server sending --trip-times bursts opens with a
        // client header of its own carrying its start time.
        let start = wall_clock();
        let sent = if trip {
            trip_header(&sock, local, budget, start)?
        } else {
            0
        };
        // An isochronous client's frames go as bursts, each with its header.
        let frames = m.header.isoch_frames().is_some() && why != Sending::ConnectBack;
        let hook = if frames {
            Some(Box::new(BurstStamp::frames(start)) as Box<dyn StreamHook>)
        } else {
            trip.then(|| Box::new(BurstStamp::per_block(start)) as Box<dyn StreamHook>)
        };
        let mut f = Flow::new(
            DataStream::new(id, StreamRole::Send, DataSock::Tcp(sock), local, peer),
            StreamExtras {
                hook,
                initial_bytes: sent,
                budget: budget.map(|b| b.saturating_sub(sent)),
                meta: StreamMeta {
                    reversed: starred,
                    connect_back: why == Sending::ConnectBack,
                    ..StreamMeta::default()
                },
                ..StreamExtras::default()
            },
        );
        f.await_close = closer;
        Some(f)
    }

    fn connect_back(&mut self, ctx: &ServerCtx, m: &Member, rep: &mut Reporter) -> Option<(DataSock, u32)> {
        let params = &ctx.flow_cfg.params;
        let port = (m.header.port as u16).max(1);
        let addr = SocketAddr::new(m.peer.ip(), port);
        let apply = |s: &socket2::Socket| {
            let mut w = Vec::new();
            net::apply_data_options(s, params, true, Some(addr), &mut w)
        };
        let window = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)
            .ok()
            .map(|s| {
                let _ = apply(&s);
                s.send_buffer_size().unwrap_or(0) as u64
            })
            .unwrap_or(0);
        let settings = Settings {
            protocol: Protocol::Tcp,
            pid: std::process::id(),
            flows: 1,
            block_len: params.block_len_or_default(),
            tos: params.tos,
            nodelay: params.nodelay,
            window,
            window_requested: params.window.map(u64::from),
            notes: Vec::new(),
        };
        super::groups::connect_back_banner(ctx, m, port, settings, rep);
        let opts = net::ConnectOpts {
            timeout: Some(Duration::from_secs(10)),
            ..net::ConnectOpts::default()
        };
        // The client's listener may come up just after its header: a
        // refused connect is tried again for up to a second.
        let mut tries = 10;
        let connected = loop {
            match net::connect_tcp(addr, &opts, apply, wirespeed_core::error::Code::CONNECT) {
                Err(e) if tries > 1 && e.errno == Some(libc::ECONNREFUSED) => {
                    tries -= 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                r => break r,
            }
        };
        match connected {
            Ok(s) => {
                let local = s.local_addr().ok()?;
                let id = crate::dialect::iperf2::next_id();
                let mut line = crate::dialect::iperf2::conn_line(id, &s, local, addr);
                line.reversed = true;
                line.mode = Some("reverse".into());
                line.when = None;
                rep.emit(Event::StreamConnected(Box::new(line)));
                Some((DataSock::Tcp(s), id))
            }
            Err(e) => {
                rep.emit(Event::Warning(format!("tcp connect failed: {}", e.why())));
                None
            }
        }
    }

    fn params(&self, ctx: &ServerCtx, h: &ClientHeader, streams: usize, trip: bool) -> TestParams {
        let mut p = super::groups::base_params(ctx, h, streams, trip);
        // The rate limits reads (in the hooks), not a sender.
        p.rate = 0;
        p
    }
}

/// The client header a server sending `--trip-times` bursts writes first;
/// its length.
fn trip_header(sock: &TcpStream, local: SocketAddr, budget: Option<u64>, start: (u32, u32)) -> Option<u64> {
    let hdr = ClientHeader {
        num_threads: 1,
        port: local.port() as u32,
        amount: budget.map(|b| Amount::Bytes(b.min(0x7FFF_FFFF) as u32)),
        ext: Some(wirespeed_proto::iperf2::HeaderExt {
            upper: flags::upper::TRIPTIME,
            version_u: VERSION_U,
            version_l: VERSION_L,
            ..Default::default()
        }),
        start: Some(wirespeed_proto::iperf2::StartTime {
            sec: start.0,
            usec: start.1,
            fq_rate: 0,
        }),
        ..ClientHeader::default()
    }
    .encode_tcp();
    let _ = sock.set_write_timeout(Some(Duration::from_secs(5)));
    (&*sock).write_all(&hdr).ok()?;
    let _ = sock.set_write_timeout(None);
    Some(hdr.len() as u64)
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
