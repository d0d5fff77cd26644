//! What iperf 2 TCP and UDP clients have in common on the server: a
//! client's connections (or UDP flows) arrive one by one and are grouped
//! by their `-P`; the group becomes one test whose flows the client's
//! header asks for — receive, `-R` send on the same socket,
//! `--full-duplex` both, `-d` receive and send on a connection back to
//! the client at once, `-r` send back afterwards — run through the one
//! test loop. The transports differ only in how each flow is made and
//! ended ([`GroupTransport`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use crate::dialect::iperf2::runner::{Flow, RunOpts, run_flows_guarded};
use crate::server::guards::Guards;
use crate::server::{Mode, Running, ServerCtx};
use wirespeed_core::config::{Protocol, TestConfig, TestParams};
use wirespeed_core::engine::DataSock;
use wirespeed_core::events::{Connecting, Event, Refused, Settings, Side, StartInfo};
use wirespeed_proto::iperf2::flags;
use wirespeed_proto::iperf2::header::{Amount, ClientHeader};
use wirespeed_report::Reporter;

/// One accepted connection (or UDP flow) whose header has been read.
pub(super) struct Member {
    /// Transfer id.
    pub id: u32,
    pub peer: SocketAddr,
    pub local: SocketAddr,
    pub header: ClientHeader,
    /// A header came (a `-C` client, or a connect-back, sends none).
    pub has_header: bool,
    /// `--trip-times`, with a start time within reach of our clock.
    pub trip: bool,
    /// Enhanced reports for this flow (`-e` here, or asked by the client).
    pub enhanced: bool,
    /// The socket.
    pub sock: DataSock,
    /// Bytes already read (the header: 2.1.8 counts it as received).
    pub initial: u64,
    /// TCP_INFO when the header arrived (before our ack changes it).
    pub tcp_init: Option<(u32, u32, u32)>,
    /// UDP: the sender numbers its datagrams in 64 bits.
    pub seq64: bool,
    /// UDP: datagrams the port read before the flow had a socket.
    pub prefeed: crate::server::registry::Prefeed,
}

impl Member {
    pub fn upper(&self) -> u16 {
        self.header.upper()
    }

    fn v2(&self) -> bool {
        self.has_header && self.header.flags & flags::VERSION2 != 0
    }

    /// `--txstart-time`: the client starts its flow at a scheduled time.
    /// `Some(false)` when the time it sent is more than an hour from now
    /// (iperf 2 then ignores it, with a warning).
    pub fn epoch_start(&self) -> Option<bool> {
        if self.upper() & flags::upper::EPOCH_START == 0 {
            return None;
        }
        let start = self.header.start.map_or(0.0, |s| f64::from(s.sec));
        Some((start - wirespeed_sys::time::epoch_now()).abs() <= 3601.0)
    }

    /// `-R`: the server sends on the client's socket.
    pub fn reverse(&self) -> bool {
        self.v2() && self.upper() & flags::upper::REVERSE != 0
    }

    /// `--full-duplex`: both ways on the client's socket.
    pub fn full_duplex(&self) -> bool {
        self.v2() && self.upper() & flags::upper::FULLDUPLEX != 0
    }

    /// `-d` (`Some(true)`) or `-r` (`Some(false)`). iperf 2.2's TCP
    /// `--sync-transfer-id` sets VERSION1 too, and is not one.
    pub fn connect_back(&self) -> Option<bool> {
        let f = self.header.flags;
        (self.has_header && f & flags::VERSION1 != 0 && f & flags::VERSION2 == 0 && self.header.transfer_id.is_none())
            .then_some(f & flags::RUN_NOW != 0)
    }

    /// The header's `-n`, which each of our senders for it sends.
    pub fn bytes(&self) -> Option<u64> {
        match self.header.amount {
            Some(Amount::Bytes(b)) => Some(b as u64),
            _ => None,
        }
    }
}

/// Why the server sends on a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sending {
    /// `-R`, on the client's socket.
    Reverse,
    /// `--full-duplex`, beside the receiving flow.
    FullDuplex,
    /// `-d`/`-r`, on a connection back to the client.
    ConnectBack,
}

/// How one transport makes and ends a group's flows.
pub(super) trait GroupTransport {
    /// The transport.
    fn protocol(&self) -> Protocol;
    /// The flow receiving what `m` sends.
    fn receiver(&mut self, ctx: &ServerCtx, m: &Member) -> Option<Flow>;
    /// A flow sending on `sock` (stream `id`, between `addrs`).
    fn sender(&mut self, ctx: &ServerCtx, m: &Member, id: u32, sock: DataSock, why: Sending) -> Option<Flow>;
    /// A connection back to `m`'s client (`-d`/`-r`): the socket and its id.
    fn connect_back(&mut self, ctx: &ServerCtx, m: &Member, rep: &mut Reporter) -> Option<(DataSock, u32)>;
    /// The test parameters the group runs with.
    fn params(&self, ctx: &ServerCtx, h: &ClientHeader, streams: usize, trip: bool) -> TestParams;
    /// How long a receiving flow may get nothing before it is over in
    /// order: its end when no FIN comes (UDP). `None`: only the server's
    /// guards end a silent flow.
    fn end_idle(&self, _p: &TestParams) -> Option<Duration> {
        None
    }
    /// After a set of flows ran: the senders' end (UDP's FINs).
    fn after_run(&mut self, _ctx: &ServerCtx, _rep: &mut Reporter) {}
    /// After everything: what the receivers still owe their senders.
    fn finish(&mut self, _ctx: &ServerCtx, _rep: &mut Reporter) {}
}

/// How long an iperf 2 test may receive nothing (`--rcv-timeout` when
/// the server has it).
pub(super) const IDLE: Duration = Duration::from_secs(60);

/// How long a TCP group waits for more of its `-P` connections.
pub(super) const TCP_GROUP_WAIT: Duration = Duration::from_millis(1500);

/// Groups forming: (client, flows) → where their members go.
pub(super) type Groups = Mutex<HashMap<(IpAddr, u32), Sender<Member>>>;

/// The iperf 2 groups forming on a server, TCP and UDP apart.
#[derive(Default)]
pub(crate) struct Forming {
    /// (client, `-P`) → where a TCP group's members go.
    pub(super) tcp: Groups,
    /// (client, `-P`) → where a UDP group's members go.
    pub(super) udp: Groups,
}

/// Joins `m` to the group forming under `key`: `None` if a group took it,
/// else the new group's receiver (its first member already in it) for the
/// caller to [`collect`].
pub(super) fn join(groups: &Groups, key: (IpAddr, u32), m: Member) -> Option<Receiver<Member>> {
    let Ok(mut g) = groups.lock() else { return None };
    let m = match g.get(&key) {
        Some(tx) => match tx.send(m) {
            Ok(()) => return None,
            Err(mpsc::SendError(m)) => m,
        },
        None => m,
    };
    let (tx, rx) = mpsc::channel();
    let _ = tx.send(m);
    g.insert(key, tx);
    Some(rx)
}

/// Collects a group's members: up to `want`, while each next one comes
/// within `wait` of the last.
pub(super) fn collect(
    groups: &Groups,
    key: (IpAddr, u32),
    rx: Receiver<Member>,
    want: u32,
    wait: Duration,
    stop: &AtomicBool,
) -> Vec<Member> {
    let mut members = Vec::new();
    let mut last = Instant::now();
    let tick = wait.min(Duration::from_millis(50)).max(Duration::from_millis(1));
    while (members.len() as u32) < want {
        match rx.recv_timeout(tick) {
            Ok(m) => {
                members.push(m);
                last = Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if last.elapsed() >= wait || stop.load(Relaxed) {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if let Ok(mut g) = groups.lock() {
        g.remove(&key);
    }
    // Late joiners that raced the removal.
    while let Ok(m) = rx.try_recv() {
        members.push(m);
    }
    members
}

/// The side a group's reports take: a server's, or (a connect-back) the
/// client's.
pub(super) fn side(ctx: &ServerCtx) -> Side {
    match ctx.mode {
        Mode::ConnectBack { .. } => Side::Client,
        _ => Side::Server,
    }
}

/// The configuration a flow's reports use: the server's flow settings,
/// enhanced if the client asked.
pub(super) fn flow_cfg(ctx: &ServerCtx, enhanced: bool) -> TestConfig {
    let mut c = ctx.flow_cfg.clone();
    c.output.enhanced = enhanced;
    c
}

/// `[drop] local A port P connected with B port Q (why)`, in iperf 2's
/// words (on a shared port too).
pub(super) fn refuse(ctx: &ServerCtx, local: SocketAddr, peer: SocketAddr, why: &str) {
    let mut rep = ctx.reporter(&ctx.flow_cfg, side(ctx));
    rep.emit(Event::Refused(Box::new(Refused {
        local: wirespeed_core::net::split_addr(&local),
        remote: wirespeed_core::net::split_addr(&peer),
        why: why.to_string(),
        policy: why == "client not allowed",
    })));
}

/// The banner of a connection back to the client.
pub(super) fn connect_back_banner(ctx: &ServerCtx, m: &Member, port: u16, settings: Settings, rep: &mut Reporter) {
    let _ = ctx;
    rep.emit(Event::Connecting(Box::new(Connecting {
        host: wirespeed_core::net::host_string(m.peer.ip()),
        port,
        settings,
        ..Connecting::default()
    })));
}

/// Runs one client's group of flows to the end: the flows its header asks
/// for, then `-r`'s sending back.
pub(super) fn run_group(ctx: &ServerCtx, members: Vec<Member>, t: &mut dyn GroupTransport) {
    let Some(first) = members.first() else { return };
    if !ctx.has_room() {
        // `--max-tests`: the group is turned away.
        for m in &members {
            refuse(ctx, m.local, m.peer, "server is busy");
        }
        ctx.refused(wirespeed_report::metrics::Refusal::Busy);
        return;
    }
    let _running = Running::new(&ctx.active);
    let header = first.header.clone();
    let client = first.peer.ip();
    let enhanced = members.iter().any(|m| m.enhanced);
    let trip = members.iter().any(|m| m.trip);
    let cfg = flow_cfg(ctx, enhanced);
    let mut rep = match ctx.mode {
        Mode::ConnectBack { .. } => ctx.reporter(&cfg, Side::Client),
        _ => ctx.test_reporter(&cfg, t.protocol(), client),
    };
    let mut flows = Vec::new();
    let mut tradeoff = Vec::new();
    let mut has_sender = false;
    for m in &members {
        if m.reverse() {
            let sock = m.sock.try_clone().ok();
            if let Some(f) = sock.and_then(|s| t.sender(ctx, m, m.id, s, Sending::Reverse)) {
                flows.push(f);
                has_sender = true;
            }
            continue;
        }
        flows.extend(t.receiver(ctx, m));
        if m.full_duplex() {
            let sock = m.sock.try_clone().ok();
            if let Some(f) = sock.and_then(|s| t.sender(ctx, m, m.id, s, Sending::FullDuplex)) {
                flows.push(f);
                has_sender = true;
            }
        }
        match m.connect_back() {
            Some(true) => {
                if let Some((s, id)) = t.connect_back(ctx, m, &mut rep)
                    && let Some(f) = t.sender(ctx, m, id, s, Sending::ConnectBack)
                {
                    flows.push(f);
                    has_sender = true;
                }
            }
            Some(false) => tradeoff.push(m),
            None => {}
        }
    }
    let set = Set {
        client: wirespeed_core::net::host_string(client),
        has_sender,
        trip,
        delay: start_delay(&header),
    };
    run_set(ctx, t, &header, flows, &set, &mut rep);
    // -r: now the server's turn to send. The client's connection is done
    // with: closed now, as 2.1.8 does, so the client (which waits for the
    // close) reports its end at once.
    let mut back = Vec::new();
    for m in &tradeoff {
        if let DataSock::Tcp(s) = &m.sock {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
    for m in tradeoff {
        if ctx.stop.load(Relaxed) {
            break;
        }
        if let Some((s, id)) = t.connect_back(ctx, m, &mut rep)
            && let Some(f) = t.sender(ctx, m, id, s, Sending::ConnectBack)
        {
            back.push(f);
        }
    }
    if !back.is_empty() {
        let set = Set {
            has_sender: true,
            trip: false,
            delay: Duration::ZERO,
            ..set
        };
        run_set(ctx, t, &header, back, &set, &mut rep);
    }
    t.finish(ctx, &mut rep);
    // A connect-back is part of its client's test, which ends it.
    if !matches!(ctx.mode, Mode::ConnectBack { .. }) {
        rep.emit(Event::Done);
    }
}

/// What a set of a group's flows is run with.
struct Set {
    /// The client's address, as the server's lines name it.
    client: String,
    /// The server sends in this set (and so decides its end).
    has_sender: bool,
    trip: bool,
    /// How much later than now the client starts (`--txstart-time`).
    delay: Duration,
}

/// How much later than now a client's `--txstart-time` starts its flows
/// (2.1.8 honours a time within an hour of now).
fn start_delay(h: &ClientHeader) -> Duration {
    let Some(st) = h.start.filter(|_| h.upper() & flags::upper::EPOCH_START != 0) else {
        return Duration::ZERO;
    };
    let ahead = wirespeed_proto::iperf2::join_secs(st.sec, st.usec) - wirespeed_sys::time::epoch_now();
    if ahead > 0.0 && ahead <= 3601.0 {
        Duration::from_secs_f64(ahead)
    } else {
        Duration::ZERO
    }
}

/// Runs one set of a group's flows. A server's own clients are held to
/// its guards (`server::guards`: the watchdog, `--rcv-timeout` and the
/// silent client, `--server-bitrate-limit`); a limit passed ends the set,
/// its reports print, and the server says why (iperf 2 cannot tell its
/// client: a TCP client's next write meets a reset, a UDP client's FIN
/// goes unanswered). A connect-back (the server side of an iperf 2
/// client's `-d`/`-r`) keeps a client's limits.
fn run_set(
    ctx: &ServerCtx,
    t: &mut dyn GroupTransport,
    header: &ClientHeader,
    flows: Vec<Flow>,
    set: &Set,
    rep: &mut Reporter,
) {
    let params = t.params(ctx, header, flows.len(), set.trip);
    let connect_back = matches!(ctx.mode, Mode::ConnectBack { .. });
    let now = Instant::now();
    let guards = (!connect_back).then(|| Guards::new(&ctx.cfg, &params, now + set.delay, IDLE));
    let opts = RunOpts {
        interval: ctx.flow_cfg.output.interval,
        decides_end: set.has_sender,
        // A connect-back's own watchdog and idle limit (a server's are
        // its guards'). A byte count has no duration of its own:
        // `--server-max-duration` bounds it.
        watchdog: params
            .duration()
            .or(ctx.cfg.server.max_duration)
            .filter(|_| connect_back)
            .map(|d| now + d + Duration::from_secs(30)),
        drain: Duration::from_secs(3),
        idle_limit: match t.end_idle(&params) {
            None if connect_back => Some(IDLE),
            end => end,
        },
        stop: ctx.stop.clone(),
        file: None,
        signal: std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        samples: ctx.flow_cfg.output.chart_samples(),
        start: StartInfo::default(),
    };
    match run_flows_guarded(&params, side(ctx), flows, &opts, guards, rep) {
        Ok(None) => {}
        Ok(Some(b)) => {
            rep.emit(Event::Error(b.iperf2_error(&set.client)));
        }
        Err(e) => rep.emit(Event::Warning(format!("WARNING: {}", e.text()))),
    }
    t.after_run(ctx, rep);
}

/// The test parameters of a group: the server's flow settings with the
/// client's duration.
pub(super) fn base_params(ctx: &ServerCtx, h: &ClientHeader, streams: usize, trip: bool) -> TestParams {
    let mut p = ctx.flow_cfg.params.clone();
    p.streams = streams.max(1) as u32;
    p.trip_times = trip;
    p.end = match h.amount {
        Some(Amount::Time(cs)) => wirespeed_core::config::EndCondition::Time(Duration::from_millis(cs as u64 * 10)),
        // Byte counts are per stream (StreamExtras::budget).
        Some(Amount::Bytes(_)) | None => wirespeed_core::config::EndCondition::Time(Duration::ZERO),
    };
    // An isochronous client that has us send (-R, --full-duplex): its frames.
    p.frames = h
        .isoch_frames()
        .map(|(fps, mean, stdev, ipg_ms)| wirespeed_core::config::FrameSpec {
            fps: fps.min(1e6),
            mean,
            stdev,
            ipg: Duration::from_secs_f64((ipg_ms / 1e3).min(60.0)),
        });
    p
}

/// What in a header (TCP or UDP) breaks the server's limits: more threads
/// than `--max-streams`, a time over `--server-max-duration`.
pub(super) fn over_limits(limits: &wirespeed_core::config::ServerOptions, h: &ClientHeader) -> Option<&'static str> {
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

/// Prints a flow's connection line, tagged `(epoch-start)` for a client's
/// `--txstart-time` (or, for a time more than an hour off, 2.1.8's
/// warning instead).
pub(super) fn announce(ctx: &ServerCtx, m: &Member, mut line: wirespeed_core::events::ConnInfo) {
    let cfg = flow_cfg(ctx, m.enhanced);
    let mut rep = ctx.reporter(&cfg, side(ctx));
    match m.epoch_start() {
        Some(true) => line.epoch_start = true,
        Some(false) => rep.emit(Event::Warning(
            "WARN: ignore --txstart-time because client didn't provide valid start timestamp within 3600 seconds of now"
                .into(),
        )),
        None => {}
    }
    line.isoch = m.upper() & flags::upper::ISOCH != 0;
    rep.emit(Event::StreamConnected(Box::new(line)));
}
