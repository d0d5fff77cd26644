//! `--bounceback` (`spec/iperf2.md` §1.10): the client writes a message,
//! the server writes it back, the client measures the round trip. Bursts
//! of `--bounceback=n` messages start every `--bounceback-period`.
//!
//! The server side echoes on its connection thread; the client runs one
//! thread per `-P` flow and prints 2.1.8's `BB cnt=avg/min/max/stdev` lines.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::client::{Connected, connect_one, connect_times_line, probe_window};
use super::hooks::wall_clock;
use super::server::ServerCtx;
use super::{Ctx, conn_line};
use crate::cli::units::format_iperf2;
use crate::config::{Bounceback, EndCondition, Protocol, TestConfig};
use crate::error::{Code, Error};
use crate::net;
use crate::proto::iperf2::bounceback::{BB_CLOCKSYNCED, BB_HEADER_LEN, BB_QUICKACK, BB_TOS, BbHeader, is_bounceback};
use crate::proto::iperf2::join_secs;
use crate::report::event::{Banner, BannerNote, BannerRole, Event, Side};
use crate::report::iperf2_event::{FlowExtras, FlowLine, FlowReport};
use crate::report::iperf2_text::histogram_line;
use crate::stats::flow::Welford;
use crate::stats::histogram::{HistogramSpec, HistogramView, LatencyHistogram};

/// How long the rest of a message may take once it has begun (2.1.8's
/// listener gives the first one 4 s).
const MESSAGE_WAIT: Duration = Duration::from_secs(4);
/// How long a server waits for a client's next message before it gives
/// the connection up (a client's burst period is at most a day here, but a
/// silent peer should not hold a thread for that long).
const IDLE_LIMIT: Duration = Duration::from_secs(120);
/// How far before a server interval boundary a client's message may be
/// stamped and still count after it, seconds.
const BOUNDARY_SLACK: f64 = 0.002;
/// The longest hold a server grants a message (the client's
/// `--bounceback-hold` takes at most 60 s); a header asking more gets this.
const MAX_HOLD: Duration = Duration::from_secs(60);
/// How long a client waits for a reply.
const REPLY_WAIT: Duration = Duration::from_secs(10);

/// The connection line's mode: `bb w/quickack len/hold=100/0`.
/// With --trip-times 2.1.8 adds `(trip-times)` after it.
fn mode(quickack: bool, size: u32, hold_us: u32, synced: bool) -> String {
    let q = if quickack { " w/quickack" } else { "" };
    let t = if synced { ") (trip-times" } else { "" };
    format!("bb{q} len/hold={size}/{hold_us}{t}")
}

fn set_quickack(s: &TcpStream) {
    let _ = SockRef::from(s).set_tcp_quickack(true);
}

/// Reads exactly `buf.len()` bytes by `deadline`; false on EOF, error or
/// timeout.
fn read_by(s: &TcpStream, buf: &mut [u8], deadline: Instant, stop: &AtomicBool) -> bool {
    let mut got = 0;
    while got < buf.len() {
        let now = Instant::now();
        if now >= deadline || stop.load(Relaxed) {
            return false;
        }
        // Wake at least every half second to see a server stop.
        let _ = s.set_read_timeout(Some((deadline - now).min(Duration::from_millis(500))));
        match (&*s).read(&mut buf[got..]) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// The server side of one bounceback connection; `prefix` holds the bytes
/// already read (at least the first word). Returns when the client closes,
/// goes silent, or sends what is not a bounceback message.
pub(super) fn serve(sc: &ServerCtx, sock: TcpStream, peer: SocketAddr, mut prefix: Vec<u8>) {
    let ctx = &sc.ctx;
    let Ok(local) = sock.local_addr() else { return };
    let stop = AtomicBool::new(false);
    if prefix.len() < BB_HEADER_LEN {
        let have = prefix.len();
        prefix.resize(BB_HEADER_LEN, 0);
        if !read_by(&sock, &mut prefix[have..], Instant::now() + MESSAGE_WAIT, &stop) {
            sc.unrecognized();
            return;
        }
    }
    let Ok(first) = BbHeader::decode(&prefix) else {
        sc.unrecognized();
        return;
    };
    let size = first.size as usize;
    if prefix.len() > size {
        // More than one message's worth before the first reply: not a
        // client that waits for its echoes.
        sc.unrecognized();
        return;
    }
    let quickack = first.bbflags & BB_QUICKACK != 0;
    let _ = sock.set_nodelay(true);
    if first.bbflags & BB_TOS != 0 {
        // The client's -S, for the replies too.
        let tos = (first.tos & 0xff) as u32;
        let r = SockRef::from(&sock);
        let _ = if peer.is_ipv4() {
            r.set_tos_v4(tos)
        } else {
            r.set_tclass_v6(tos)
        };
    }
    let _ = sock.set_write_timeout(Some(REPLY_WAIT));
    let id = ctx.next_id();
    let mut line = conn_line(id, &sock, local, peer);
    line.mode = Some(mode(
        quickack,
        first.size,
        first.hold_us,
        first.bbflags & BB_CLOCKSYNCED != 0,
    ));
    let cfg = ctx.cfg.clone();
    ctx.reporter_for(&cfg, Side::Server)
        .emit(Event::FlowConnected(Box::new(line)));
    // 2.1.8's server prints plain transfer lines (both directions' bytes).
    let mut plain = cfg.clone();
    plain.output.enhanced = false;
    // Not counted in --metrics: its byte counters are per direction, and
    // these lines carry both directions' bytes, as 2.1.8 prints them.
    let mut rep = ctx.reporter_for(&plain, Side::Server);
    let addrs = Some((crate::util::split_addr(&local), crate::util::split_addr(&peer)));
    let line_for = |start: f64, end: f64, bytes: u64| FlowLine {
        id,
        sender: false,
        reversed: false,
        start,
        end,
        bytes,
        bits_per_second: if end > start {
            bytes as f64 * 8.0 / (end - start)
        } else {
            0.0
        },
        extras: FlowExtras::default(),
        addrs: addrs.clone(),
    };
    let emit = |rep: &mut crate::report::Reporter, l: FlowLine, final_report: bool| {
        rep.emit(Event::Flows(Box::new(FlowReport {
            final_report,
            flows: vec![l.clone()],
            sum: l,
            pairs: Vec::new(),
            relay: false,
        })));
    };
    let t0 = Instant::now();
    let interval = cfg.output.interval.map(|i| i.as_secs_f64());
    let mut next_b = interval;
    let first_tx = join_secs(first.client_tx.0, first.client_tx.1);
    let (mut total, mut in_interval, mut last_end) = (0u64, 0u64, 0.0f64);
    // Closes the intervals that end by `at` (seconds since the start).
    let mut close = |rep: &mut crate::report::Reporter, at: f64, in_interval: &mut u64, last_end: &mut f64| {
        while let (Some(b), Some(step)) = (next_b, interval)
            && at >= b
        {
            emit(rep, line_for(*last_end, b, *in_interval), false);
            *last_end = b;
            *in_interval = 0;
            next_b = Some(b + step);
        }
    };
    let mut have = prefix.len();
    let mut msg = prefix;
    msg.resize(size, 0);
    let mut hold_us = first.hold_us;
    loop {
        // The rest of the current message.
        if have < size && !read_by(&sock, &mut msg[have..], Instant::now() + MESSAGE_WAIT, &stop) {
            break;
        }
        let rx = wall_clock();
        if quickack {
            set_quickack(&sock);
        }
        if hold_us > 0 {
            // Capped, and cut short by a server stop: the hold comes from
            // the network.
            let until = Instant::now() + Duration::from_micros(hold_us as u64).min(MAX_HOLD);
            while !sc.stop.load(Relaxed) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(100)));
            }
        }
        BbHeader::stamp_server(&mut msg, rx, wall_clock());
        if (&sock).write_all(&msg).is_err() {
            break;
        }
        total += 2 * size as u64;
        in_interval += 2 * size as u64;
        // The next message's header, waiting through the client's period
        // while reporting intervals.
        let mut hdr = [0u8; BB_HEADER_LEN];
        let idle_until = Instant::now() + IDLE_LIMIT;
        let mut got = 0;
        let ok = loop {
            // Idle: an interval closes a little after its end (messages
            // are binned by the client's send time, below).
            close(
                &mut rep,
                t0.elapsed().as_secs_f64() - 0.05,
                &mut in_interval,
                &mut last_end,
            );
            if sc.stop.load(Relaxed) || Instant::now() >= idle_until {
                break false;
            }
            let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
            match (&sock).read(&mut hdr[got..]) {
                Ok(0) => break false,
                Ok(n) => {
                    got += n;
                    if got == BB_HEADER_LEN {
                        break true;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => break false,
            }
        };
        if !ok {
            break;
        }
        let Ok(h) = BbHeader::decode(&hdr) else {
            sc.unrecognized();
            break;
        };
        // Binned by the client's send time; the client's clock started a
        // little before its first message, so bursts due on an interval
        // boundary may be stamped just short of it.
        let sent = join_secs(h.client_tx.0, h.client_tx.1) - first_tx + BOUNDARY_SLACK;
        close(&mut rep, sent, &mut in_interval, &mut last_end);
        let size_now = h.size as usize;
        msg.resize(size_now, 0);
        msg[..BB_HEADER_LEN].copy_from_slice(&hdr);
        have = BB_HEADER_LEN;
        hold_us = h.hold_us;
        if size_now != size {
            // 2.1.8's clients never change the size mid-test; echo what came.
            return echo_rest(&sock, msg, have, &stop);
        }
    }
    let end = t0.elapsed().as_secs_f64();
    if interval.is_some() && last_end > 0.0 && in_interval > 0 && end > last_end {
        emit(&mut rep, line_for(last_end, end, in_interval), false);
    }
    emit(&mut rep, line_for(0.0, end, total), true);
}

/// Finishes a message whose size changed mid-test, then ends the
/// connection (no report).
fn echo_rest(sock: &TcpStream, mut msg: Vec<u8>, have: usize, stop: &AtomicBool) {
    if read_by(sock, &mut msg[have..], Instant::now() + MESSAGE_WAIT, stop) {
        let rx = wall_clock();
        BbHeader::stamp_server(&mut msg, rx, rx);
        let _ = (&*sock).write_all(&msg);
    }
}

/// Whether a connection's first bytes open a bounceback test.
pub(super) fn opens(prefix: &[u8]) -> bool {
    is_bounceback(prefix)
}

/// Round trips measured by one flow.
#[derive(Default)]
struct Tally {
    /// Since the last interval boundary.
    interval: Welford,
    /// Since the start.
    total: Welford,
    interval_bytes: u64,
    total_bytes: u64,
    /// Intervals the flow has passed: (start, end, round trips, bytes).
    closed: std::collections::VecDeque<(f64, f64, Welford, u64)>,
    /// Start of the open interval and its end (None: no intervals).
    open: Option<(f64, f64)>,
    /// One-way delays with --trip-times: to the server, from it, and
    /// their difference (seconds).
    owd: Option<[Welford; 3]>,
    /// The whole test's round trips (`BB8(f)-PDF`).
    hist: Option<LatencyHistogram>,
    failed: Option<String>,
}

impl Tally {
    /// A round trip of a message sent at `sent` (seconds since the start).
    fn add(&mut self, sent: f64, rtt: f64, bytes: u64) {
        self.close_until(sent);
        if let Some(h) = &self.hist {
            h.add(rtt, None);
        }
        self.interval.add(rtt, 0);
        self.total.add(rtt, 0);
        self.interval_bytes += bytes;
        self.total_bytes += bytes;
    }

    /// Closes every interval that ends by `now`.
    fn close_until(&mut self, now: f64) {
        while let Some((start, end)) = self.open
            && now >= end
        {
            let w = std::mem::take(&mut self.interval);
            let b = std::mem::take(&mut self.interval_bytes);
            self.closed.push_back((start, end, w, b));
            self.open = Some((end, end + (end - start)));
        }
    }

    /// At the end: the open interval, if it saw any round trip.
    fn finish(&mut self, now: f64) {
        self.close_until(now);
        if let Some((start, end)) = self.open.take()
            && self.interval.count > 0
        {
            let w = std::mem::take(&mut self.interval);
            let b = std::mem::take(&mut self.interval_bytes);
            self.closed.push_back((start, now.min(end), w, b));
        }
    }
}

/// A client flow's thread: bursts until the end of the test.
fn flow(
    sock: TcpStream,
    (size, tos, synced): (u32, u8, bool),
    bb: Bounceback,
    t0: Instant,
    end: Instant,
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
) {
    let _ = sock.set_write_timeout(Some(REPLY_WAIT));
    let mut msg = BbHeader {
        size,
        id: 0,
        bbflags: if bb.quickack { BB_QUICKACK } else { 0 }
            | if tos != 0 { BB_TOS } else { 0 }
            | if synced { BB_CLOCKSYNCED } else { 0 },
        // 2.1.8 leaves the filler when no TOS is set.
        tos: if tos != 0 {
            tos as u16
        } else {
            u16::from_be_bytes([0x5a, 0x5a])
        },
        hold_us: bb.hold_us,
        ..BbHeader::default()
    }
    .client_message();
    let mut reply = vec![0u8; size as usize];
    let never = AtomicBool::new(false);
    let mut burst = 0u32;
    'test: loop {
        burst += 1;
        let burst_start = t0 + bb.period * (burst - 1);
        let writes = if bb.period.is_zero() { u32::MAX } else { bb.count };
        for _ in 0..writes {
            if Instant::now() >= end || stop.load(Relaxed) {
                break 'test;
            }
            let tx = wall_clock();
            let h = BbHeader {
                id: burst,
                client_tx: tx,
                server_rx: (u32::MAX, u32::MAX),
                server_tx: (u32::MAX, u32::MAX),
                ..BbHeader::decode(&msg).unwrap_or_default()
            };
            h.encode(&mut msg);
            let sent = Instant::now();
            if let Err(e) = (&sock).write_all(&msg) {
                if let Ok(mut t) = tally.lock() {
                    t.failed = Some(format!(
                        "tcp bounce-back write failed: {}",
                        crate::error::strerror(e.raw_os_error().unwrap_or(0))
                    ));
                }
                break 'test;
            }
            if !read_by(&sock, &mut reply, sent + REPLY_WAIT, &never) {
                if let Ok(mut t) = tally.lock() {
                    t.failed = Some("tcp bounce-back read failed: no reply".into());
                }
                break 'test;
            }
            let rtt = sent.elapsed().as_secs_f64();
            let rx = wall_clock();
            if bb.quickack {
                set_quickack(&sock);
            }
            if let Ok(mut t) = tally.lock() {
                t.add(sent.duration_since(t0).as_secs_f64(), rtt, 2 * size as u64);
                // One-way delays from the server's stamps (clocks in sync).
                if let (Some(o), Ok(r)) = (&mut t.owd, BbHeader::decode(&reply)) {
                    let secs = |(s, u): (u32, u32)| join_secs(s, u);
                    let to = secs(r.server_rx) - secs(tx);
                    let from = secs(rx) - secs(r.server_tx);
                    o[0].add(to, 0);
                    o[1].add(from, 0);
                    o[2].add(to - from, 0);
                }
            }
        }
        // Until the next burst (or the end).
        let next = (burst_start + bb.period).min(end);
        while Instant::now() < next && !stop.load(Relaxed) {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
            if let Ok(mut t) = tally.lock() {
                t.close_until(t0.elapsed().as_secs_f64());
            }
        }
    }
    if let Ok(mut t) = tally.lock() {
        t.finish(t0.elapsed().as_secs_f64());
    }
    let _ = sock.shutdown(std::net::Shutdown::Both);
}

/// The client's data-line columns after the transfer.
fn bb_columns(w: &Welford, retrans: u32, info: Option<(u64, u32)>) -> String {
    let (avg, min, max, sd) = if w.count > 0 {
        (w.mean * 1e3, w.min * 1e3, w.max * 1e3, w.stdev() * 1e3)
    } else {
        (0.0, 0.0, 0.0, 0.0)
    };
    let sum = w.mean * w.count as f64;
    let rps = if sum > 0.0 { (w.count as f64 / sum) as u64 } else { 0 };
    let (cwnd, rtt) = info.unwrap_or((0, 0));
    format!(
        "    {}={avg:.3}/{min:.3}/{max:.3}/{sd:.3} ms    {retrans}  {}K/{rtt} us    {rps} rps",
        w.count,
        cwnd / 1024
    )
}

const BB_HEADER: &str =
    "[ ID] Interval            Transfer    Bandwidth         BB cnt=avg/min/max/stdev         Rtry  Cwnd/RTT    RPS";

/// Runs a `--bounceback` client.
pub fn run_client(ctx: &Arc<Ctx>, host: &str, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    let cfg = &ctx.cfg;
    let p = &cfg.params;
    let Some(bb) = cfg.iperf2.bounceback.clone() else {
        return Err(Error::msg(Code::CONNECT, "not a bounceback test"));
    };
    let size = p.block_len_or_default();
    let addrs = net::resolve(host, cfg.port, cfg.net.family).map_err(|e| {
        let text = e.text();
        let why = text.rsplit(": ").next().unwrap_or(&text).to_string();
        Error::msg(Code::CONNECT, format!("ERROR: failed to find host {host}: {why}"))
    })?;
    let mut reporter = ctx.reporter(Side::Client);
    let mut notes = Vec::new();
    if !bb.period.is_zero() {
        notes.push(BannerNote::Early(format!(
            "Bursting: {} writes {} times every {:.2} second(s)",
            format_iperf2(size as f64, 'B'),
            bb.count,
            bb.period.as_secs_f64()
        )));
    }
    notes.push(BannerNote::Early(format!(
        "Bounce-back test (size={}) (server hold req={} usecs{})",
        format_iperf2(size as f64, 'B'),
        bb.hold_us,
        if bb.quickack { " & tcp_quickack" } else { "" }
    )));
    reporter.emit(Event::Banner(Box::new(Banner {
        role: BannerRole::Connecting(host.to_string()),
        protocol: Protocol::Tcp,
        port: cfg.port,
        pid: std::process::id(),
        flows: p.streams,
        block_len: size,
        tos: p.tos,
        nodelay: true,
        window: probe_window(cfg, addrs[0]),
        window_requested: p.window.map(|w| w as u64),
        notes,
    })));
    let mut conns: Vec<(u32, Connected)> = Vec::new();
    let mut connect_times = Vec::new();
    for _ in 0..p.streams {
        let c = connect_one(cfg, &addrs)?;
        let id = ctx.next_id();
        let _ = c.sock.set_nodelay(true);
        if bb.quickack {
            set_quickack(&c.sock);
        }
        let mut line = conn_line(id, &c.sock, c.local, c.remote);
        line.connect_ms = Some(c.connect_ms);
        line.mode = Some(mode(bb.quickack, size, bb.hold_us, p.trip_times));
        reporter.emit(Event::FlowConnected(Box::new(line)));
        if cfg.output.print_mss {
            reporter.emit(Event::Notice(format!("MSS size {} bytes", net::mss_of(&c.sock))));
        }
        connect_times.push(c.connect_ms);
        conns.push((id, c));
    }
    let secs = match p.end {
        EndCondition::Time(d) => d,
        _ => Duration::from_secs(10),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let end = t0 + secs;
    let mut flows = Vec::new();
    let tos = p.tos;
    let trip = p.trip_times;
    for (id, c) in conns {
        let tally = Arc::new(Mutex::new(Tally {
            open: cfg.output.interval.map(|i| (0.0, i.as_secs_f64())),
            hist: Some(LatencyHistogram::new(HistogramSpec::default(), "BB8")),
            owd: trip.then(Default::default),
            ..Tally::default()
        }));
        let sock = c.sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e))?;
        let (t2, s2, b2) = (tally.clone(), stop.clone(), bb.clone());
        let h = std::thread::Builder::new()
            .name("ws-iperf2-bb".into())
            .spawn(move || flow(sock, (size, tos, trip), b2, t0, end, s2, t2))
            .map_err(|e| Error::io(Code::INITSTREAM, &e))?;
        flows.push((id, c, tally, h));
    }
    let csv = cfg.output.csv;
    let mut plain_cfg: TestConfig = cfg.clone();
    plain_cfg.output.enhanced = false;
    let mut csv_rep = ctx.reporter_for(&plain_cfg, Side::Client);
    let printed_header = Mutex::new(false);
    // Retransmits up to the last interval line, per flow.
    let retrans_base = Mutex::new(std::collections::HashMap::<u32, u32>::new());
    let report = |rep: &mut crate::report::Reporter,
                  id: u32,
                  c: &Connected,
                  start: f64,
                  endt: f64,
                  w: &Welford,
                  bytes: u64,
                  final_report: bool,
                  hist: Option<&LatencyHistogram>,
                  owd: Option<&[Welford; 3]>| {
        if cfg.output.exclude.contains('D') {
            return;
        }
        let info = crate::sys::socket::tcp_info(&c.sock).ok();
        let total_retrans = info.as_ref().map_or(0, |i| i.total_retrans);
        let retrans = match retrans_base.lock() {
            Ok(_) if final_report => total_retrans,
            Ok(mut b) => total_retrans.saturating_sub(b.insert(id, total_retrans).unwrap_or(0)),
            Err(_) => total_retrans,
        };
        let line = FlowLine {
            id,
            sender: true,
            reversed: false,
            start,
            end: endt,
            bytes,
            bits_per_second: if endt > start {
                bytes as f64 * 8.0 / (endt - start)
            } else {
                0.0
            },
            extras: FlowExtras::default(),
            addrs: Some((crate::util::split_addr(&c.local), crate::util::split_addr(&c.remote))),
        };
        if csv {
            rep.emit(Event::Flows(Box::new(FlowReport {
                final_report,
                flows: vec![line.clone()],
                sum: line,
                pairs: Vec::new(),
                relay: false,
            })));
            return;
        }
        let mut text = String::new();
        if let Ok(mut done) = printed_header.lock()
            && !*done
        {
            text.push_str(BB_HEADER);
            text.push('\n');
            *done = true;
        }
        let per_sec = if endt > start {
            bytes as f64 / (endt - start)
        } else {
            0.0
        };
        let tag = format!("[{id:>3}] ");
        text.push_str(&format!(
            "{tag}{start:.4}-{endt:.4} sec  {}s  {}s/sec{}",
            format_iperf2(bytes as f64, cfg.output.format.to_ascii_uppercase()),
            format_iperf2(per_sec, cfg.output.format),
            bb_columns(w, retrans, info.map(|i| (i.cwnd_bytes(), i.rtt)))
        ));
        text.push('\n');
        if let (true, Some(o)) = (final_report, owd) {
            let f = |w: &Welford| {
                format!(
                    "{:.3}/{:.3}/{:.3}/{:.3}",
                    w.mean * 1e3,
                    w.min * 1e3,
                    w.max * 1e3,
                    w.stdev() * 1e3
                )
            };
            let sum = w.mean * w.count as f64;
            let rps = if sum > 0.0 { (w.count as f64 / sum) as u64 } else { 0 };
            text.push_str(&format!(
                "{tag}{start:.4}-{endt:.4} sec  OWD Delays (ms) Cnt={} To={} From={} Asymmetry={}    {rps} rps\n",
                o[0].count,
                f(&o[0]),
                f(&o[1]),
                f(&o[2])
            ));
        }
        if let Some(h) = hist {
            let sample = HistogramView::default().sample(h, true);
            text.push_str(&histogram_line(&tag, &line, &sample));
        }
        ctx.out.write(&text);
    };
    loop {
        if signal.load(Relaxed) != 0 {
            stop.store(true, Relaxed);
        }
        let all_done = flows.iter().all(|f| f.3.is_finished());
        // An interval prints once every running flow has passed it.
        let ready = flows
            .iter()
            .all(|(_, _, t, h)| h.is_finished() || t.lock().map(|t| !t.closed.is_empty()).unwrap_or(true));
        if ready {
            for (id, c, tally, _) in &flows {
                let next = tally.lock().ok().and_then(|mut t| t.closed.pop_front());
                if let Some((start, endt, w, bytes)) = next {
                    report(&mut csv_rep, *id, c, start, endt, &w, bytes, false, None, None);
                }
            }
        }
        let pending = flows
            .iter()
            .any(|(_, _, t, _)| t.lock().map(|t| !t.closed.is_empty()).unwrap_or(false));
        if all_done && !pending {
            break;
        }
        if !ready || !pending {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let mut failure = None;
    for (id, c, tally, h) in flows {
        let _ = h.join();
        if let Ok(t) = tally.lock() {
            report(
                &mut csv_rep,
                id,
                &c,
                0.0,
                elapsed,
                &t.total,
                t.total_bytes,
                true,
                t.hist.as_ref(),
                t.owd.as_ref(),
            );
            if failure.is_none() {
                failure = t.failed.clone();
            }
        }
    }
    if connect_times.len() > 1 && !csv {
        ctx.out.write(&format!("{}\n", connect_times_line(&connect_times)));
    }
    match failure {
        Some(f) => Err(Error::msg(Code::STREAMREAD, f)),
        None => Ok(()),
    }
}
