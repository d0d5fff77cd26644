//! UDP stream loops: a sender that paces datagrams from a monotonic clock and
//! hands them to the kernel in batches (`sendmmsg`, and UDP GSO so one send
//! carries up to 64 datagrams), and a receiver that takes them in batches
//! (`recvmmsg`, UDP GRO) and accounts for every datagram exactly.
//!
//! Offloads change how datagrams travel between user space and the kernel,
//! never what is on the wire: every datagram is exactly `len` bytes with its
//! own header, as a peer without offloads would send it.
//!
//! The loops are generic over the [`DatagramFormat`], so the iperf 2 dialect
//! reuses the pacing, batching and accounting with its own header.

use std::net::UdpSocket;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use wirespeed_sys::AsSock;

use super::frames::{Frame, FrameClock, pieces};
use super::pacer::{Pacer, sleep_until};
use super::{StreamHandle, StreamHook, StreamTask, is_timeout};
use crate::error::{Code, Error};
use crate::stats::StreamRole;
use crate::stats::udp::UdpAccounting;
use wirespeed_sys::udp::{self as sysudp, GSO_MAX_SEGMENTS, MAX_BATCH, MAX_UDP_PAYLOAD, RecvBatch};

/// How long a blocked send or receive waits before the loop looks at the
/// test's flags again.
const POLL: Duration = Duration::from_millis(100);
/// A paced sender sends datagrams due within this much of now rather than
/// sleeping for them: shorter sleeps cost more than they smooth.
const LOOKAHEAD: Duration = Duration::from_micros(20);

/// How a dialect lays out the header of its datagrams.
pub trait DatagramFormat: Send + Sync + 'static {
    /// Bytes of header at the start of each datagram.
    fn header_len(&self) -> usize;
    /// Writes the header of datagram `seq`, sent at `sent_ns` (sender's
    /// monotonic clock), at the start of `buf`.
    fn stamp(&self, buf: &mut [u8], seq: u64, sent_ns: u64);
    /// Reads `(sequence, sent ns)` from a received datagram.
    fn parse(&self, buf: &[u8]) -> Option<(u64, u64)>;
    /// Reads only the send time (ns) of a datagram.
    fn parse_time(&self, buf: &[u8]) -> Option<u64> {
        self.parse(buf).map(|(_, t)| t)
    }
    /// Whether sequence numbers are 32 bits on the wire (and wrap).
    fn narrow(&self) -> bool;
    /// Whether a received datagram ends the stream (iperf 2's FIN, a
    /// negative sequence number), and the sequence number it counts as:
    /// the receiver counts it (0: not at all) and stops.
    fn fin(&self, _buf: &[u8]) -> Option<u64> {
        None
    }
    /// Whether the end marker's ECN field counts with the data's (false
    /// for a sender that sends it unmarked whatever its data carried:
    /// iperf 2.2.1's L4S sender).
    fn fin_ecn(&self) -> bool {
        true
    }
    /// Isochronous senders: the shortest datagram that carries a frame's
    /// fields.
    fn frame_min_len(&self) -> usize {
        self.header_len()
    }
    /// Isochronous senders: writes datagram `buf`'s frame fields (`frame`,
    /// with `remaining` bytes of it left including this datagram).
    fn stamp_frame(&self, _buf: &mut [u8], _frame: &Frame, _remaining: u32) {}
    /// Whether a received datagram is the peer's handshake, repeated
    /// because our answer was lost, and the answer to send back: a
    /// receiver answers it and does not count it.
    fn answer(&self, _buf: &[u8]) -> Option<&'static [u8]> {
        None
    }
    /// Whether a sender ends when the peer's host refuses its datagrams
    /// (ICMP port unreachable on the connected socket): the peer's socket
    /// is gone. For a server sending on the socket its client's first
    /// datagram came from, which existed before that datagram.
    fn refusal_ends(&self) -> bool {
        false
    }
}

/// The error of a sender whose peer's port refused its datagrams.
pub(crate) fn peer_gone() -> Error {
    Error::msg(
        Code::STREAMWRITE,
        "the client's port refused our datagrams (ICMP port unreachable): the client has gone",
    )
}

/// A format chosen at run time (the iperf 2 dialect's, through the session).
impl DatagramFormat for std::sync::Arc<dyn DatagramFormat> {
    fn header_len(&self) -> usize {
        (**self).header_len()
    }
    fn answer(&self, buf: &[u8]) -> Option<&'static [u8]> {
        (**self).answer(buf)
    }
    fn refusal_ends(&self) -> bool {
        (**self).refusal_ends()
    }

    #[inline]
    fn stamp(&self, buf: &mut [u8], seq: u64, sent_ns: u64) {
        (**self).stamp(buf, seq, sent_ns)
    }

    #[inline]
    fn parse(&self, buf: &[u8]) -> Option<(u64, u64)> {
        (**self).parse(buf)
    }

    fn narrow(&self) -> bool {
        (**self).narrow()
    }

    #[inline]
    fn parse_time(&self, buf: &[u8]) -> Option<u64> {
        (**self).parse_time(buf)
    }

    #[inline]
    fn fin(&self, buf: &[u8]) -> Option<u64> {
        (**self).fin(buf)
    }

    fn fin_ecn(&self) -> bool {
        (**self).fin_ecn()
    }

    fn frame_min_len(&self) -> usize {
        (**self).frame_min_len()
    }

    fn stamp_frame(&self, buf: &mut [u8], frame: &Frame, remaining: u32) {
        (**self).stamp_frame(buf, frame, remaining)
    }
}

/// Starts a UDP stream's loops with a dialect's datagram format: each
/// format is compiled into its own copy of the loops, so a datagram's
/// stamp and parse are direct calls, while the engine that starts a stream
/// holds the format only as `dyn UdpStart` and names no dialect.
pub trait UdpStart: Send + Sync {
    /// Spawns the stream's thread.
    fn start(
        &self,
        sock: UdpSocket,
        task: StreamTask,
        opts: UdpOptions,
        hook: Option<Box<dyn StreamHook>>,
    ) -> Result<StreamHandle, Error>;

    /// A sender of this layout ends when its peer refuses its datagrams
    /// (`DatagramFormat::refusal_ends`).
    fn refusal_ends(&self) -> bool {
        false
    }
}

impl<F: DatagramFormat + Clone> UdpStart for F {
    fn start(
        &self,
        sock: UdpSocket,
        task: StreamTask,
        opts: UdpOptions,
        hook: Option<Box<dyn StreamHook>>,
    ) -> Result<StreamHandle, Error> {
        spawn_udp_with(sock, task, self.clone(), opts, hook)
    }

    fn refusal_ends(&self) -> bool {
        DatagramFormat::refusal_ends(self)
    }
}

/// UDP-specific settings of a stream.
#[derive(Debug, Clone)]
pub struct UdpOptions {
    /// Try UDP GSO when sending.
    pub gso: bool,
    /// Try UDP GRO when receiving.
    pub gro: bool,
    /// Send nothing due at or after this instant (the test's end, when this
    /// host decides it), so a timed test sends exactly its duration's worth.
    pub until: Option<Instant>,
    /// How much backlog a paced sender may catch up at once after a stall.
    pub catch_up: Duration,
    /// Start of the pacing timeline (the test's start, shared by its
    /// streams); `None` = when the thread starts.
    pub origin: Option<Instant>,
    /// When a timed test ends by the clock (start + omit + duration), on
    /// either side. A stream's time runs to then, or to its last datagram
    /// if that came later; not to when the stop message happened to be
    /// read, which a busy machine delays.
    pub nominal_end: Option<Instant>,
    /// Size of the stream's batch buffer (send or receive): large for a few
    /// fast streams, small when there are many.
    pub batch_bytes: usize,
    /// Datagrams of this stream that arrived before its socket existed
    /// (read by a listener), with their arrival times (wall clock, ns) and
    /// the TOS byte they arrived with (when the listener read it): a
    /// receiver counts them first.
    pub prefeed: Vec<(Vec<u8>, i64, Option<u8>)>,
}

impl UdpOptions {
    /// Batch buffer size for one of `streams` streams in a process: 1 MiB
    /// each for up to 16, shrinking to 64 KiB (one GRO buffer) for many.
    pub(crate) fn batch_for(streams: usize) -> usize {
        ((16 << 20) / streams.max(1)).clamp(64 << 10, 1 << 20)
    }
}

impl Default for UdpOptions {
    fn default() -> Self {
        UdpOptions {
            gso: true,
            gro: true,
            until: None,
            catch_up: Duration::from_millis(1),
            origin: None,
            nominal_end: None,
            batch_bytes: 1 << 20,
            prefeed: Vec::new(),
        }
    }
}

/// Starts a UDP stream thread on a connected socket.
pub fn spawn_udp<F: DatagramFormat>(
    sock: UdpSocket,
    task: StreamTask,
    format: F,
    opts: UdpOptions,
) -> Result<StreamHandle, Error> {
    spawn_udp_with(sock, task, format, opts, None)
}

/// Starts a UDP stream thread on a connected socket, with a per-datagram
/// hook on the receive side (iperf 2's latency statistics).
pub(crate) fn spawn_udp_with<F: DatagramFormat>(
    sock: UdpSocket,
    task: StreamTask,
    format: F,
    opts: UdpOptions,
    mut hook: Option<Box<dyn StreamHook>>,
) -> Result<StreamHandle, Error> {
    let fd = sock.raw_sock();
    let keep = socket2::Socket::from(sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e))?);
    let join = std::thread::Builder::new()
        .name(format!("ws-udp-{}", task.id))
        .spawn(move || {
            let control = task.control.clone();
            super::pin_stream_thread(&task);
            let hook = hook.as_mut().map(|h| &mut **h as &mut dyn StreamHook);
            let res = match task.role {
                StreamRole::Send => send_loop(&sock, &task, &format, &opts),
                StreamRole::Recv => recv_loop(&sock, &task, &format, &opts, hook),
            };
            if let Err(e) = res {
                control.fail(e);
            }
            control.finished.fetch_add(1, Relaxed);
            control.wake();
        })
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
    Ok(super::handle_from(join, fd, Some(keep)))
}

/// How a sending loop that a dialect supplies stopped: at its own
/// deadline (`Some`, the stream's time runs to it) or from outside, and
/// the control clock's ns of its last datagram.
pub type SendEnd = (Option<Instant>, u64);

/// Starts a UDP sending stream whose loop a dialect supplies (iperf 2's
/// L4S sender, paced by its receiver's acks): `run` sends until the test
/// stops, `opts.until` or the budget, and counts what it sends in the
/// task's counters (bytes, blocks, packets); the stream's end time is set
/// from what it returns, as the engine's own senders set theirs.
pub fn spawn_udp_sender<R>(sock: UdpSocket, task: StreamTask, opts: UdpOptions, run: R) -> Result<StreamHandle, Error>
where
    R: FnOnce(&UdpSocket, &StreamTask, &UdpOptions) -> Result<SendEnd, Error> + Send + 'static,
{
    let fd = sock.raw_sock();
    let keep = socket2::Socket::from(sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e))?);
    let join = std::thread::Builder::new()
        .name(format!("ws-udp-{}", task.id))
        .spawn(move || {
            let control = task.control.clone();
            super::pin_stream_thread(&task);
            match run(&sock, &task, &opts) {
                Ok((ended, last_send)) => {
                    let end_ns = match ended {
                        Some(t) => ns_since(&control, t),
                        None => stream_end(&control, last_send, opts.nominal_end),
                    };
                    task.counters.ended_ns.store(end_ns.max(1), Relaxed);
                }
                Err(e) => control.fail(e),
            }
            control.finished.fetch_add(1, Relaxed);
            control.wake();
        })
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
    Ok(super::handle_from(join, fd, Some(keep)))
}

fn monotonic_ns() -> u64 {
    let (s, n) = wirespeed_sys::time::monotonic();
    s * 1_000_000_000 + n as u64
}

fn realtime_ns() -> i64 {
    let (s, n) = wirespeed_sys::time::realtime();
    (s * 1_000_000_000 + n as u64) as i64
}

/// Sends until stopped, past `until`, or the budget is spent.
fn send_loop<F: DatagramFormat>(sock: &UdpSocket, task: &StreamTask, fmt: &F, opts: &UdpOptions) -> Result<(), Error> {
    if let Some((spec, counters)) = &task.frames {
        let clock = FrameClock::new(spec, fmt.frame_min_len(), counters.clone());
        return send_frames(sock, task, fmt, opts, clock, spec.ipg);
    }
    let len = task.block_len.clamp(fmt.header_len(), MAX_UDP_PAYLOAD);
    let _ = sock.set_write_timeout(Some(POLL));
    let mut per_send = 1;
    if opts.gso && len <= MAX_UDP_PAYLOAD / 2 && sysudp::set_gso(sock, len as u16).is_ok() {
        per_send = (MAX_UDP_PAYLOAD / len).min(GSO_MAX_SEGMENTS);
    }
    let cap = (opts.batch_bytes / len).clamp(per_send, MAX_BATCH * per_send);
    let mut buf = vec![0u8; cap * len];
    // Every datagram carries the same filler, as iperf3's do. Slots are
    // filled when first used, so a slow stream's buffer stays untouched.
    task.payload.fill(&mut buf[..len]);
    let mut filled = 1;
    let mut pacer = task.pace.map(|(rate, burst)| {
        // Sleeps must end when asked, not 50 µs later.
        let _ = sysudp::set_thread_timer_slack(1_000);
        // Each datagram goes in the middle of its time slot (a burst at its
        // first datagram's), so a test of length T carries round(T / slot)
        // of them: the closest count to the asked rate (first-at-zero would
        // always round up).
        let half_slot = Pacer::cost(rate, len) / 2;
        let origin = opts.origin.unwrap_or_else(Instant::now) + half_slot;
        Pacer::new(rate, burst, len, origin).with_catch_up(opts.catch_up)
    });
    let control = &task.control;
    let c = &task.counters;
    let mut seq: u64 = 1;
    // When this stream stopped sending, if it reached its own deadline.
    let mut ended: Option<Instant> = None;
    let mut last_send = 0u64;
    loop {
        if control.stop.load(Relaxed) {
            break;
        }
        let now = Instant::now();
        if let Some(u) = opts.until
            && now >= u
        {
            ended = Some(u);
            break;
        }
        let mut n = cap;
        if let Some(p) = pacer.as_mut() {
            if let Some(u) = opts.until
                && p.next_due() >= u
            {
                // Nothing more is due before the end: sleep to it, so the
                // stream's time is the test's time.
                sleep_until(u, &control.stop);
                ended = Some(u.min(Instant::now()));
                break;
            }
            // Never more than is due before the deadline, even mid-burst.
            let mut most = cap as u32;
            if let (Some(u), Some((rate, _))) = (opts.until, task.pace) {
                let cost = Pacer::cost(rate, len).as_nanos().max(1);
                let due = u.saturating_duration_since(p.next_due()).as_nanos().div_ceil(cost);
                most = most.min(due.min(u32::MAX as u128) as u32);
            }
            match p.take(len, now, most, LOOKAHEAD) {
                Ok(k) => n = k as usize,
                Err(due) => {
                    let due = opts.until.map_or(due, |u| due.min(u));
                    if !sleep_until(due, &control.stop) {
                        break;
                    }
                    continue;
                }
            }
        }
        if let Some(b) = &task.budget
            && !control.omitting.load(Relaxed)
        {
            n = b.claim_datagrams(len, n);
            if n == 0 {
                break;
            }
        }
        if n > filled {
            let (first, rest) = buf.split_at_mut(len);
            for slot in rest[(filled - 1) * len..(n - 1) * len].chunks_mut(len) {
                slot.copy_from_slice(first);
            }
            filled = n;
        }
        let stamp = monotonic_ns();
        for (k, d) in buf[..n * len].chunks_mut(len).enumerate() {
            fmt.stamp(d, seq + k as u64, stamp);
        }
        let sent = send_datagrams(sock, &buf[..n * len], len, &mut per_send, task, fmt.refusal_ends())?;
        if sent > 0 {
            last_send = control.now_ns();
            seq += sent as u64;
            c.bytes.fetch_add((sent * len) as u64, Relaxed);
            c.blocks.fetch_add(sent as u64, Relaxed);
            c.packets.fetch_add(sent as u64, Relaxed);
        }
        if sent < n {
            break; // stopped mid-batch
        }
    }
    let end_ns = match ended {
        Some(t) => ns_since(control, t),
        // Stopped from outside (or the budget ran out).
        None => stream_end(control, last_send, opts.nominal_end),
    };
    c.ended_ns.store(end_ns.max(1), Relaxed);
    Ok(())
}

/// An isochronous sender: at each frame's slot, the frame's datagrams
/// (`-l` bytes, the last one shorter) back to back, or `ipg` apart.
fn send_frames<F: DatagramFormat>(
    sock: &UdpSocket,
    task: &StreamTask,
    fmt: &F,
    opts: &UdpOptions,
    mut clock: FrameClock,
    ipg: Duration,
) -> Result<(), Error> {
    let min = fmt.frame_min_len().max(fmt.header_len());
    let len = task.block_len.clamp(min, MAX_UDP_PAYLOAD);
    let _ = sock.set_write_timeout(Some(POLL));
    if !ipg.is_zero() {
        let _ = sysudp::set_thread_timer_slack(1_000);
    }
    let mut template = vec![0u8; len];
    task.payload.fill(&mut template);
    let control = &task.control;
    let c = &task.counters;
    let mut frame_buf: Vec<u8> = Vec::new();
    let mut seq: u64 = 1;
    let mut last_send = 0u64;
    let mut ended: Option<Instant> = None;
    'frames: loop {
        let Some(frame) = clock.next(&control.stop, opts.until) else {
            ended = opts.until.filter(|u| Instant::now() >= *u);
            break;
        };
        // Lay the frame's datagrams out end to end, stamped.
        let mut bounds: Vec<(usize, usize, u32)> = Vec::new();
        frame_buf.clear();
        for (n, remaining) in pieces(frame.size, len, min) {
            if let Some(b) = &task.budget
                && !control.omitting.load(Relaxed)
                && b.claim_datagrams(n, 1) == 0
            {
                break;
            }
            let at = frame_buf.len();
            frame_buf.extend_from_slice(&template[..n]);
            bounds.push((at, at + n, remaining));
        }
        if bounds.is_empty() {
            break; // the budget is spent
        }
        let mut k = 0;
        while k < bounds.len() {
            if control.stop.load(Relaxed) {
                break 'frames;
            }
            // Back to back: as many as a batch holds; with a gap: one.
            let m = if ipg.is_zero() {
                (bounds.len() - k).min(MAX_BATCH)
            } else {
                1
            };
            // Each is stamped as it goes.
            let now = monotonic_ns();
            for (j, &(a, b, remaining)) in bounds[k..k + m].iter().enumerate() {
                let d = &mut frame_buf[a..b];
                fmt.stamp(d, seq + j as u64, now);
                fmt.stamp_frame(d, &frame, remaining);
            }
            let msgs: Vec<&[u8]> = bounds[k..k + m].iter().map(|&(a, b, _)| &frame_buf[a..b]).collect();
            match sysudp::send_batch(sock, &msgs) {
                Ok(sent) => {
                    for m in &msgs[..sent] {
                        c.bytes.fetch_add(m.len() as u64, Relaxed);
                    }
                    c.blocks.fetch_add(sent as u64, Relaxed);
                    c.packets.fetch_add(sent as u64, Relaxed);
                    seq += sent as u64;
                    k += sent;
                    last_send = control.now_ns();
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => match e.raw_os_error() {
                    Some(libc::ECONNREFUSED) if fmt.refusal_ends() => return Err(peer_gone()),
                    Some(libc::ENOBUFS) | Some(libc::ECONNREFUSED) => {
                        c.errors.fetch_add(1, Relaxed);
                        std::thread::sleep(Duration::from_micros(100));
                    }
                    _ if control.ending() => break 'frames,
                    _ => return Err(Error::io(Code::STREAMWRITE, &e)),
                },
            }
            if !ipg.is_zero() && k < bounds.len() && !sleep_until(Instant::now() + ipg, &control.stop) {
                break 'frames;
            }
        }
    }
    let end_ns = match ended {
        Some(t) => ns_since(control, t),
        None => stream_end(control, last_send, opts.nominal_end),
    };
    c.ended_ns.store(end_ns.max(1), Relaxed);
    Ok(())
}

fn ns_since(control: &super::TestControl, t: Instant) -> u64 {
    t.saturating_duration_since(control.epoch).as_nanos() as u64
}

/// Where a stream's time ends, in ns since the epoch: at the test's stop
/// (when it was raised, not when a loop noticed), but for a timed test no
/// later than its nominal end unless the stream's `last` datagram (sent or
/// received) was later than that.
fn stream_end(control: &super::TestControl, last: u64, nominal: Option<Instant>) -> u64 {
    let stop = control.stopped_at_ns().unwrap_or_else(|| control.now_ns());
    let cap = nominal.map_or(stop, |n| stop.min(ns_since(control, n)));
    last.max(cap)
}

/// Sends `data` (whole datagrams of `len` bytes) in as few calls as it can:
/// `per_send` datagrams per message (GSO), up to [`MAX_BATCH`] messages per
/// `sendmmsg`. Returns how many datagrams went; fewer than asked only when
/// the test stopped meanwhile. A path that refuses GSO turns it off.
fn send_datagrams(
    sock: &UdpSocket,
    data: &[u8],
    len: usize,
    per_send: &mut usize,
    task: &StreamTask,
    refusal_ends: bool,
) -> Result<usize, Error> {
    let total = data.len() / len;
    let control = &task.control;
    let mut done = 0;
    while done < total {
        let mut msgs: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
        let mut count = 0;
        let mut off = done;
        while off < total && count < MAX_BATCH {
            let k = (*per_send).min(total - off);
            msgs[count] = &data[off * len..(off + k) * len];
            count += 1;
            off += k;
        }
        match sysudp::send_batch(sock, &msgs[..count]) {
            Ok(m) => {
                done += msgs[..m].iter().map(|s| s.len() / len).sum::<usize>();
            }
            Err(e) => {
                let stopping = control.ending();
                match e.raw_os_error() {
                    _ if is_timeout(&e) => {}
                    // The kernel is out of buffers or the peer's port
                    // bounced an earlier datagram: not fatal for a UDP test.
                    Some(libc::ENOBUFS) => {
                        task.counters.errors.fetch_add(1, Relaxed);
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    Some(libc::ECONNREFUSED) if refusal_ends => return Err(peer_gone()),
                    Some(libc::ECONNREFUSED) => {
                        task.counters.errors.fetch_add(1, Relaxed);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Some(libc::EINVAL | libc::EIO | libc::EMSGSIZE) if *per_send > 1 => {
                        let _ = sysudp::clear_gso(sock);
                        *per_send = 1;
                    }
                    _ if stopping => return Ok(done),
                    _ => return Err(Error::io(Code::STREAMWRITE, &e)),
                }
                if stopping {
                    return Ok(done);
                }
            }
        }
    }
    Ok(done)
}

/// What one receiving stream has counted so far, and the per-datagram
/// work on it.
struct RecvState<'a, 'h, F: DatagramFormat> {
    fmt: &'a F,
    acc: UdpAccounting,
    header: usize,
    narrow: bool,
    hook: Option<&'h mut dyn StreamHook>,
    /// The stream's end marker arrived.
    fin: bool,
    /// A repeated handshake arrived: the answer to send.
    answer: Option<&'static [u8]>,
}

impl<F: DatagramFormat> RecvState<'_, '_, F> {
    /// Counts one datagram that arrived at `rx` (wall clock, ns) with TOS
    /// byte `tos`; returns its bytes if it was data.
    #[inline]
    fn datagram(&mut self, d: &[u8], rx: i64, tos: Option<u8>) -> Option<u64> {
        if let Some(a) = self.fmt.answer(d) {
            self.answer = Some(a);
            return None;
        }
        // Shorter than a header: a stray handshake, not data.
        if d.len() < self.header || self.fin {
            return None;
        }
        let fin = self.fmt.fin(d);
        if fin == Some(0) {
            self.fin = true;
            return None;
        }
        let parsed = match fin {
            Some(seq) => {
                self.fin = true;
                self.fmt.parse_time(d).map(|t| (seq, t))
            }
            None => self.fmt.parse(d),
        };
        if let Some((seq, sent_ns)) = parsed {
            let seq = if self.narrow {
                self.acc.unwrap32(seq as u32)
            } else {
                seq
            };
            let transit = rx.wrapping_sub(sent_ns as i64);
            self.acc.on_datagram(seq, transit);
            if let Some(h) = self.hook.as_mut() {
                h.on_datagram(d, rx, transit, tos);
            }
        }
        Some(d.len() as u64)
    }
}

/// Receives until the test stops and the stream has been quiet for a poll
/// period (drained), the controller aborts, or the format's end marker
/// arrives.
fn recv_loop<F: DatagramFormat>(
    sock: &UdpSocket,
    task: &StreamTask,
    fmt: &F,
    opts: &UdpOptions,
    hook: Option<&mut dyn StreamHook>,
) -> Result<(), Error> {
    let len = task.block_len.max(1);
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let gro = opts.gro && sysudp::set_gro(sock).is_ok();
    let kernel_stamps = sysudp::set_rx_timestamps(sock).is_ok();
    // The ECN field each datagram arrived with (where the platform tells).
    let ipv6 = sock.local_addr().is_ok_and(|a| a.is_ipv6());
    let _ = sysudp::set_recv_tos(sock, ipv6);
    let (slot, slots) = if gro {
        (MAX_UDP_PAYLOAD.next_multiple_of(64), opts.batch_bytes / 65536)
    } else {
        let s = len.next_multiple_of(64);
        (s, opts.batch_bytes / s)
    };
    let mut batch = RecvBatch::new(slot, slots);
    let mut st = RecvState {
        fmt,
        acc: UdpAccounting::new(),
        header: fmt.header_len(),
        narrow: fmt.narrow(),
        hook,
        fin: false,
        answer: None,
    };
    let control = &task.control;
    let c = &task.counters;
    let mut omitting = control.omitting.load(Relaxed);
    let finish = || {
        let end = stream_end(control, c.last_rx_ns.load(Relaxed), opts.nominal_end);
        c.ended_ns.store(end.max(1), Relaxed);
    };
    // What a listener read for this stream before it had a socket.
    let mut pre = None;
    // Datagrams of the batch per ECN field value.
    let mut ecn = [0u64; 4];
    if !opts.prefeed.is_empty() {
        let (mut bytes, mut datagrams) = (0u64, 0u64);
        for (d, rx, tos) in &opts.prefeed {
            let was_fin = st.fin;
            if let Some(n) = st.datagram(d, *rx, *tos) {
                bytes += n;
                datagrams += 1;
                if let Some(t) = tos
                    && (was_fin || !st.fin || fmt.fin_ecn())
                {
                    ecn[usize::from(t & 3)] += 1;
                }
            }
        }
        pre = Some((bytes, datagrams, 0));
    }
    loop {
        if let Some(a) = st.answer.take() {
            // The peer still waits for its handshake's answer (ours was
            // lost): once more, from this stream's connected socket.
            let _ = sock.send(a);
        }
        if let Some((bytes, datagrams, before)) = pre.take() {
            if let Some(h) = st.hook.as_mut() {
                h.after_batch();
            }
            for (i, n) in ecn.iter_mut().enumerate() {
                if *n > 0 {
                    c.ecn[i].fetch_add(std::mem::take(n), Relaxed);
                }
            }
            if datagrams > 0 {
                st.acc.publish(c);
                c.bytes.fetch_add(bytes, Relaxed);
                c.blocks.fetch_add(datagrams, Relaxed);
                c.last_rx_ns.store(control.now_ns(), Relaxed);
                // Progress towards a -n/-k goal is the highest sequence
                // seen: a lost datagram must not keep the test running.
                if let Some(t) = &task.target
                    && t.add((st.acc.max_seq() - before) * len as u64)
                {
                    control.wake();
                }
            }
            if st.fin {
                if let Some(h) = st.hook.as_mut() {
                    h.on_end_of_stream();
                }
                c.last_rx_ns.store(control.now_ns(), Relaxed);
                finish();
                return Ok(());
            }
        }
        if control.abort.load(Relaxed) {
            finish();
            return Ok(());
        }
        match batch.recv(sock) {
            Ok(0) => {
                if control.drained(c.last_rx_ns.load(Relaxed), false) {
                    finish();
                    return Ok(());
                }
            }
            Ok(n) => {
                let om = control.omitting.load(Relaxed);
                if omitting && !om {
                    // iperf3 restarts jitter when the omit period ends.
                    st.acc.jitter.reset();
                }
                omitting = om;
                let before = st.acc.max_seq();
                let fallback = if kernel_stamps { 0 } else { realtime_ns() };
                let (mut bytes, mut datagrams) = (0u64, 0u64);
                for i in 0..n {
                    let m = batch.message(i);
                    let rx = m.rx_time_ns.unwrap_or(fallback);
                    let seg = m.segment.unwrap_or(m.data.len()).max(1);
                    let counted = datagrams;
                    let was_fin = st.fin;
                    for d in m.data.chunks(seg) {
                        if let Some(n) = st.datagram(d, rx, m.tos) {
                            bytes += n;
                            datagrams += 1;
                        }
                    }
                    // The end marker, where its field is not the data's.
                    let unmarked_fin = u64::from(!was_fin && st.fin && !fmt.fin_ecn());
                    // One control message speaks for every segment of a
                    // GRO buffer: each data datagram counts once.
                    if let Some(tos) = m.tos {
                        ecn[usize::from(tos & 3)] += (datagrams - counted).saturating_sub(unmarked_fin);
                    }
                }
                pre = Some((bytes, datagrams, before));
            }
            Err(e) if is_timeout(&e) => {
                if control.drained(c.last_rx_ns.load(Relaxed), false) {
                    finish();
                    return Ok(());
                }
            }
            // An ICMP error queued on the socket: nothing to do with data.
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
            Err(e) => {
                finish();
                return super::read_failed(control, &e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pacer::PaceRate;
    use crate::engine::{Budget, Payload, TestControl};
    use std::sync::Arc;

    /// A datagram header of the tests' own (no dialect's): the sequence
    /// number and the send time, 8 bytes each, big-endian. `wide: false`
    /// tells the receiver the sequence wraps at 32 bits, as iperf3's
    /// narrow header does.
    struct TestFormat {
        wide: bool,
    }

    impl DatagramFormat for TestFormat {
        fn header_len(&self) -> usize {
            16
        }

        fn stamp(&self, buf: &mut [u8], seq: u64, sent_ns: u64) {
            buf[..8].copy_from_slice(&seq.to_be_bytes());
            buf[8..16].copy_from_slice(&sent_ns.to_be_bytes());
        }

        fn parse(&self, buf: &[u8]) -> Option<(u64, u64)> {
            let word = |r: std::ops::Range<usize>| Some(u64::from_be_bytes(buf.get(r)?.try_into().ok()?));
            Some((word(0..8)?, word(8..16)?))
        }

        fn narrow(&self) -> bool {
            !self.wide
        }
    }

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        // Room for a long scheduling stall of the receiving thread on a busy machine.
        let mut w = Vec::new();
        crate::net::set_buffers(&socket2::SockRef::from(&b), 16 << 20, &mut w).unwrap();
        (a, b)
    }

    fn task(role: StreamRole, control: &Arc<TestControl>, len: usize) -> StreamTask {
        crate::engine::test_task(role, control, len, Payload::Repeating)
    }

    /// Sends exactly `-k`-style `blocks` datagrams with the given offloads
    /// and checks the receiver saw every one, in order, nothing lost.
    fn exact_transfer(gso: bool, gro: bool, wide: bool, len: usize, blocks: u64) {
        let (a, b) = pair();
        let control = TestControl::new(None);
        let mut st = task(StreamRole::Send, &control, len);
        st.budget = Some(Budget::blocks(blocks));
        st.pace = Some((PaceRate::Packets(50_000), 0));
        let rt = task(StreamRole::Recv, &control, len);
        let (sc, rc) = (st.counters.clone(), rt.counters.clone());
        let opts = UdpOptions {
            gso,
            gro,
            ..UdpOptions::default()
        };
        let mut r = spawn_udp(b, rt, TestFormat { wide }, opts.clone()).unwrap();
        let mut s = spawn_udp(a, st, TestFormat { wide }, opts).unwrap();
        s.join();
        control.stop.store(true, Relaxed);
        control.drain.store(true, Relaxed);
        r.join();
        assert!(control.take_error().is_none());
        assert_eq!(sc.packets.load(Relaxed), blocks);
        assert_eq!(sc.bytes.load(Relaxed), blocks * len as u64);
        assert_eq!(rc.bytes.load(Relaxed), blocks * len as u64);
        assert_eq!(rc.packets.load(Relaxed), blocks);
        assert_eq!(rc.lost.load(Relaxed), 0);
        assert_eq!(rc.out_of_order.load(Relaxed), 0);
        assert_eq!(rc.duplicates.load(Relaxed), 0);
    }

    #[test]
    fn plain_datagrams_arrive_exactly() {
        exact_transfer(false, false, false, 1200, 3000);
    }

    #[test]
    fn gso_and_gro_keep_every_datagram() {
        exact_transfer(true, true, true, 100, 5000);
    }

    /// Every datagram is counted under the ECN codepoint it arrived with,
    /// each segment of a GRO buffer once, with and without the offloads.
    #[cfg(target_os = "linux")]
    #[test]
    fn arrivals_are_counted_per_ecn_codepoint() {
        for (gso, gro, tos) in [(true, true, 0x01), (false, false, 0xba), (true, false, 0x03)] {
            let (a, b) = pair();
            wirespeed_sys::socket::set_int_option(&a, libc::IPPROTO_IP, libc::IP_TOS, tos).unwrap();
            let control = TestControl::new(None);
            let mut st = task(StreamRole::Send, &control, 200);
            st.budget = Some(Budget::blocks(3000));
            st.pace = Some((PaceRate::Packets(50_000), 0));
            let rt = task(StreamRole::Recv, &control, 200);
            let rc = rt.counters.clone();
            let opts = UdpOptions {
                gso,
                gro,
                ..UdpOptions::default()
            };
            let mut r = spawn_udp(b, rt, TestFormat { wide: true }, opts.clone()).unwrap();
            spawn_udp(a, st, TestFormat { wide: true }, opts).unwrap().join();
            control.stop.store(true, Relaxed);
            control.drain.store(true, Relaxed);
            r.join();
            let ecn: Vec<u64> = rc.ecn.iter().map(|c| c.load(Relaxed)).collect();
            let mut want = vec![0; 4];
            want[(tos & 3) as usize] = 3000;
            assert_eq!(ecn, want, "gso {gso} gro {gro} tos {tos:#x}");
            assert_eq!(rc.blocks.load(Relaxed), 3000);
        }
    }

    #[test]
    fn gso_sender_to_a_receiver_without_gro() {
        exact_transfer(true, false, false, 64, 4000);
    }

    /// Datagrams with gaps, reordering and a duplicate, crafted by hand and
    /// sent through the kernel: the receive path counts each kind apart.
    #[test]
    fn crafted_arrivals_are_counted_exactly() {
        let (a, b) = pair();
        let control = TestControl::new(None);
        let rt = task(StreamRole::Recv, &control, 100);
        let rc = rt.counters.clone();
        let mut r = spawn_udp(b, rt, TestFormat { wide: false }, UdpOptions::default()).unwrap();
        let fmt = TestFormat { wide: false };
        for seq in [1u64, 2, 4, 3, 3, 6, 5, 9] {
            let mut d = [0u8; 100];
            fmt.stamp(&mut d, seq, 1_000_000 * seq);
            a.send(&d).unwrap();
        }
        // A stray hello is not data.
        a.send(b"9876").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        control.raise_stop();
        control.drain.store(true, Relaxed);
        r.join();
        assert_eq!(rc.packets.load(Relaxed), 9);
        assert_eq!(rc.lost.load(Relaxed), 2, "7 and 8 never came");
        assert_eq!(rc.out_of_order.load(Relaxed), 2, "3 and 5 came late");
        assert_eq!(rc.duplicates.load(Relaxed), 1, "3 came twice");
        assert_eq!(rc.blocks.load(Relaxed), 8);
        assert_eq!(rc.bytes.load(Relaxed), 800);
    }

    /// Datagrams a sender of 1000-byte datagrams at 8 Mbit/s (one per ms),
    /// in bursts of `burst`, sends before its 300 ms deadline.
    fn sent_before_deadline(burst: u32) -> u64 {
        let (a, _b) = pair();
        let control = TestControl::new(None);
        let mut st = task(StreamRole::Send, &control, 1000);
        st.pace = Some((PaceRate::Bits(8_000_000), burst));
        let c = st.counters.clone();
        let t0 = Instant::now();
        let opts = UdpOptions {
            until: Some(t0 + Duration::from_millis(300)),
            origin: Some(t0),
            // However late the thread starts, it catches up rather than skips.
            catch_up: Duration::from_millis(300),
            ..UdpOptions::default()
        };
        spawn_udp(a, st, TestFormat { wide: false }, opts).unwrap().join();
        c.packets.load(Relaxed)
    }

    /// Due at 0.5, 1.5, ..., 299.5 ms: 300, however the sleeps fell, and
    /// never one more. Only a scheduling stall that spans the deadline can
    /// cost the last few (nothing is sent after the test's end).
    #[test]
    fn a_timed_sender_stops_at_its_deadline() {
        let sent = sent_before_deadline(0);
        assert!((285..=300).contains(&sent), "{sent}");
    }

    /// 300 is not a multiple of 7: the last burst is cut, not overshot.
    #[test]
    fn the_last_burst_is_cut_at_the_deadline() {
        let sent = sent_before_deadline(7);
        assert!((285..=300).contains(&sent), "{sent}");
    }
}
