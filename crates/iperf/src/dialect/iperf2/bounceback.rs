//! Bounceback streams (`docs/protocols.md`, iperf 2: bounceback): request/response round
//! trips instead of bulk data. The client writes a message and waits for
//! it to come back, in bursts of `count` messages every `period`; the
//! server stamps its receive and send times and writes each message back.
//!
//! Both are stream kinds of the engine, run by the one test loop like any
//! other stream: they count bytes (both directions) in the stream's
//! counters, and round trips in [`BouncebackCounters`], binned by when
//! each message was sent so a burst on an interval boundary counts in the
//! interval it starts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use socket2::SockRef;

use wirespeed_core::clock::wall_clock;
use wirespeed_core::engine::StreamTask;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::stats::BouncebackCounters;
use wirespeed_proto::iperf2::bounceback::{
    BB_CLOCKSYNCED, BB_HEADER_LEN, BB_QUICKACK, BB_TOS, BbHeader, FILLER, REPLY_SIZE_AT,
};
use wirespeed_proto::iperf2::join_secs;

/// How long the rest of a message may take once it has begun (2.1.8's
/// listener gives the first one 4 s).
const MESSAGE_WAIT: Duration = Duration::from_secs(4);
/// How long a server waits for a client's next message before it gives
/// the connection up.
pub(crate) const IDLE_LIMIT: Duration = Duration::from_secs(120);
/// How far before an interval boundary a client's message may be stamped
/// and still count after it, seconds (the client's clock started a little
/// before its first message).
const BOUNDARY_SLACK: f64 = 0.002;
/// The longest hold a server grants a message (the client's
/// `--bounceback-hold` takes at most 60 s); a header asking more gets this.
const MAX_HOLD: Duration = Duration::from_secs(60);
/// How long a client waits for a reply.
const REPLY_WAIT: Duration = Duration::from_secs(10);

/// A bounceback client stream's settings.
#[derive(Debug, Clone)]
pub struct BouncebackSpec {
    /// Message size (`-l`).
    pub size: u32,
    /// Messages per burst.
    pub count: u32,
    /// Time between burst starts (zero: back to back).
    pub period: Duration,
    /// The server holds each message this long, µs.
    pub hold_us: u32,
    /// TCP_QUICKACK on both ends.
    pub quickack: bool,
    /// `-S`, carried in the header for the server's replies.
    pub tos: u8,
    /// Clocks are synchronised (`--trip-times`): one-way delays too.
    pub synced: bool,
    /// iperf 2.2's `--bounceback-reply`: the reply's size, when it is not
    /// the request's.
    pub reply: Option<u32>,
    /// Where the round trips go.
    pub counters: Arc<BouncebackCounters>,
}

/// A bounceback server stream's settings.
#[derive(Clone)]
pub struct EchoSpec {
    /// The start of the first message, already read (at least its header).
    pub first: Vec<u8>,
    /// Messages binned by the client's send time.
    pub counters: Arc<BouncebackCounters>,
    /// Sees each whole message before it is echoed (a `--latency`
    /// client's probes tell the server's metrics their round trips).
    pub on_message: Option<MessageHook>,
}

impl std::fmt::Debug for EchoSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EchoSpec")
            .field("first", &self.first.len())
            .field("on_message", &self.on_message.is_some())
            .finish_non_exhaustive()
    }
}

/// What [`EchoSpec::on_message`] calls.
pub type MessageHook = Arc<dyn Fn(&[u8]) + Send + Sync>;

fn set_quickack(s: &TcpStream) {
    let _ = wirespeed_sys::socket::set_quickack(&SockRef::from(s));
}

/// How long a blocked read waits before it looks at the stop flag again.
const POLL_STOP: Duration = wirespeed_core::net::POLL_STOP;

/// Reads exactly `buf.len()` bytes by `deadline`; false on EOF, error,
/// timeout, or `stop`.
pub fn read_by(s: &TcpStream, buf: &mut [u8], deadline: Instant, stop: &AtomicBool) -> bool {
    wirespeed_core::net::read_exact_by(s, buf, deadline, stop, false)
}

/// Sets the read timeout [`read_by_armed`] expects.
fn arm(s: &TcpStream) {
    let _ = s.set_read_timeout(Some(POLL_STOP));
}

/// [`read_by`] on a socket [`arm`]ed once: the hot loops' reads cost no
/// timeout change each, except near the deadline.
fn read_by_armed(s: &TcpStream, buf: &mut [u8], deadline: Instant, stop: &AtomicBool) -> bool {
    wirespeed_core::net::read_exact_by(s, buf, deadline, stop, true)
}

/// Reads at least `min` bytes into `buf` (as many as arrive, up to its
/// length) by `deadline`, on an [`arm`]ed socket; how many, or `None` on
/// EOF, error, timeout or `stop`.
fn read_at_least(s: &TcpStream, buf: &mut [u8], min: usize, deadline: Instant, stop: &AtomicBool) -> Option<usize> {
    let mut got = 0;
    while got < min {
        let now = Instant::now();
        if now >= deadline || stop.load(Relaxed) {
            return None;
        }
        match (&*s).read(&mut buf[got..]) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(e) if wirespeed_core::engine::is_timeout(&e) => {}
            Err(_) => return None,
        }
    }
    Some(got)
}

impl wirespeed_core::engine::ExchangeLoop for BouncebackSpec {
    fn run(&self, sock: &TcpStream, task: &StreamTask) -> Result<(), Error> {
        client_loop(sock, task, self)
    }
}

impl wirespeed_core::engine::ExchangeLoop for EchoSpec {
    fn run(&self, sock: &TcpStream, task: &StreamTask) -> Result<(), Error> {
        echo_loop(sock, task, self)
    }
}

/// The client: bursts of round trips until the test stops.
pub(crate) fn client_loop(sock: &TcpStream, task: &StreamTask, bb: &BouncebackSpec) -> Result<(), Error> {
    let _ = sock.set_nodelay(true);
    if bb.quickack {
        set_quickack(sock);
    }
    let _ = sock.set_write_timeout(Some(REPLY_WAIT));
    arm(sock);
    let mut msg = BbHeader {
        size: bb.size,
        bbflags: if bb.quickack { BB_QUICKACK } else { 0 }
            | if bb.tos != 0 { BB_TOS } else { 0 }
            | if bb.synced { BB_CLOCKSYNCED } else { 0 },
        // 2.1.8 leaves the filler when no TOS is set.
        tos: if bb.tos != 0 {
            bb.tos as u16
        } else {
            u16::from_be_bytes([0x5a, 0x5a])
        },
        hold_us: bb.hold_us,
        ..BbHeader::default()
    }
    .client_message();
    let reply_len = match bb.reply.filter(|r| *r != bb.size) {
        Some(r) => {
            BbHeader::set_reply_size(&mut msg, r);
            r
        }
        None => bb.size,
    };
    let mut reply = vec![0u8; reply_len as usize];
    let stop = &task.control.stop;
    let t0 = task.control.epoch;
    let never = AtomicBool::new(false);
    let mut burst = 0u32;
    let result = 'test: loop {
        burst += 1;
        let burst_start = t0 + bb.period * (burst - 1);
        let writes = if bb.period.is_zero() { u32::MAX } else { bb.count };
        for k in 0..writes {
            if stop.load(Relaxed) || task.until.is_some_and(|u| Instant::now() >= u) {
                break 'test Ok(());
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
            if let Err(e) = (&*sock).write_all(&msg) {
                break 'test Err(Error::msg(
                    Code::STREAMWRITE,
                    format!(
                        "tcp bounce-back write failed: {}",
                        wirespeed_core::error::errno_text(&e)
                    ),
                ));
            }
            if !read_by_armed(sock, &mut reply, sent + REPLY_WAIT, &never) {
                break 'test Err(Error::msg(Code::STREAMREAD, "tcp bounce-back read failed: no reply"));
            }
            let rtt = sent.elapsed().as_secs_f64();
            let rx = wall_clock();
            // The next request acknowledges this reply when it follows at
            // once; the last of a burst needs the quick ack.
            if bb.quickack && k + 1 == writes {
                set_quickack(sock);
            }
            // One-way delays from the server's stamps (clocks in sync).
            let owd = BbHeader::decode(&reply).ok().filter(|_| bb.synced).map(|r| {
                let secs = |(s, u): (u32, u32)| join_secs(s, u);
                (secs(r.server_rx) - secs(tx), secs(rx) - secs(r.server_tx))
            });
            let bytes = u64::from(bb.size) + u64::from(reply_len);
            bb.counters
                .record(sent.duration_since(t0).as_secs_f64(), rtt, bytes, owd);
            let c = &task.counters;
            c.bytes.fetch_add(bytes, Relaxed);
            c.blocks.fetch_add(1, Relaxed);
            c.last_rx_ns.store(task.control.now_ns(), Relaxed);
        }
        // Until the next burst (or the stop).
        let next = burst_start + bb.period;
        while Instant::now() < next {
            if stop.load(Relaxed) || task.until.is_some_and(|u| Instant::now() >= u) {
                break 'test Ok(());
            }
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
        }
    };
    task.counters.ended_ns.store(task.control.now_ns(), Relaxed);
    let _ = sock.shutdown(std::net::Shutdown::Both);
    result
}

/// The server: echoes every message back until the client closes, goes
/// silent, or sends what is not a bounceback message.
pub(crate) fn echo_loop(sock: &TcpStream, task: &StreamTask, echo: &EchoSpec) -> Result<(), Error> {
    let control = &task.control;
    let stop = &control.stop;
    let Ok(first) = BbHeader::decode(&echo.first) else {
        return Ok(());
    };
    let size = first.size as usize;
    let quickack = first.bbflags & BB_QUICKACK != 0;
    let _ = sock.set_nodelay(true);
    let _ = sock.set_write_timeout(Some(REPLY_WAIT));
    arm(sock);
    let first_tx = join_secs(first.client_tx.0, first.client_tx.1);
    let mut msg = echo.first.clone();
    let mut have = msg.len().min(size);
    msg.resize(size, 0);
    let mut hdr = first;
    let mut reply_buf = Vec::new();
    loop {
        // The rest of the current message.
        if have < size && !read_by_armed(sock, &mut msg[have..], Instant::now() + MESSAGE_WAIT, stop) {
            break;
        }
        let rx = wall_clock();
        // The reply acknowledges the request when it goes at once; a held
        // reply needs the quick ack.
        if quickack && hdr.hold_us > 0 {
            set_quickack(sock);
        }
        if let Some(f) = &echo.on_message {
            f(&msg);
        }
        hold(hdr.hold_us, stop);
        BbHeader::stamp_server(&mut msg, rx, wall_clock());
        // iperf 2.2's asymmetric reply: the request's first 64 bytes
        // (stamped) and the rest filler, to the size it asks for.
        let reply_len = BbHeader::reply_size(&msg).map_or(msg.len(), |n| n as usize);
        let sent = if reply_len == msg.len() {
            (&*sock).write_all(&msg)
        } else {
            let keep = msg.len().min(reply_len).min(REPLY_SIZE_AT + 4);
            reply_buf.clear();
            reply_buf.extend_from_slice(&msg[..keep]);
            reply_buf.resize(reply_len, FILLER);
            (&*sock).write_all(&reply_buf)
        };
        if sent.is_err() {
            break;
        }
        let bytes = (size + reply_len) as u64;
        // Binned by the client's send time.
        let sent = join_secs(hdr.client_tx.0, hdr.client_tx.1) - first_tx + BOUNDARY_SLACK;
        echo.counters.record(sent, 0.0, bytes, None);
        let c = &task.counters;
        c.bytes.fetch_add(bytes, Relaxed);
        c.blocks.fetch_add(1, Relaxed);
        c.last_rx_ns.store(control.now_ns(), Relaxed);
        // The next message: its header at least, and as much of the rest
        // as came with it (usually all: one read a message). A client waits
        // for each reply, so nothing of a later message is there yet.
        let Some(got) = read_at_least(sock, &mut msg, BB_HEADER_LEN, Instant::now() + IDLE_LIMIT, stop) else {
            break;
        };
        let Ok(h) = BbHeader::decode(&msg[..BB_HEADER_LEN]) else {
            break;
        };
        if h.size as usize != size {
            // 2.1.8's clients never change the size mid-test: finish the
            // message, echo it, and end the connection.
            let new = h.size as usize;
            msg.resize(new.max(got), 0);
            if got >= new || read_by(sock, &mut msg[got..new], Instant::now() + MESSAGE_WAIT, stop) {
                msg.truncate(new);
                let t = wall_clock();
                BbHeader::stamp_server(&mut msg, t, t);
                let _ = (&*sock).write_all(&msg);
            }
            break;
        }
        have = got;
        hdr = h;
    }
    task.counters.ended_ns.store(control.now_ns(), Relaxed);
    Ok(())
}

/// Holds a message as its header asks: capped, and cut short by `stop`
/// (the hold comes from the network).
fn hold(hold_us: u32, stop: &AtomicBool) {
    if hold_us == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_micros(hold_us as u64).min(MAX_HOLD);
    while !stop.load(Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}
