//! The data plane: one thread per stream moving bytes as fast as asked.
//!
//! A stream's hot loop does no allocation, takes no lock and formats
//! nothing: it writes or reads its preallocated buffer and bumps its own
//! [`StreamCounters`]. The controller steers every stream of a test through
//! one [`TestControl`] (stop, omit, drain) and is woken through its
//! [`mio::Waker`] when a stream ends or a byte/block target is reached.

pub mod drain;
pub mod frames;
pub mod mux;
pub mod pacer;
pub mod pipe;
pub mod placement;
pub mod run;
pub mod session;
pub mod streams;
pub mod tcp;
pub mod udp;

pub use placement::{MuxMode, fds_per_stream, reserve_fds};
pub use session::{LocalOpts, Session};
pub use streams::{DataSock, DataStream, StreamExtras, stream_id, stream_roles};

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wirespeed_sys::{AsSock, RawSock};

use crate::error::{Code, Error};
use crate::stats::{StreamCounters, StreamRole};

/// Shared steering for all streams of one test.
#[derive(Debug)]
pub struct TestControl {
    /// Senders stop at the next block; receivers begin draining.
    pub stop: AtomicBool,
    /// Receivers may end: the peer's senders have stopped. (`stop` alone
    /// is not enough: in a reverse or bidirectional test this host stops its
    /// senders before the peer stops its own.) Raised by
    /// [`TestControl::begin_drain`].
    pub drain: AtomicBool,
    /// The peer half-closes each stream after its last byte, so a draining
    /// TCP receiver reads to EOF, however long the path takes to deliver it.
    pub eof_expected: AtomicBool,
    /// During the drain, how long a receiver with no EOF to wait for must
    /// be quiet to be done (ns).
    quiet_ns: AtomicU64,
    /// Receivers give up draining at once (abort, or drain deadline).
    pub abort: AtomicBool,
    /// The omit period is running (senders do not spend `-n`/`-k` budgets).
    pub omitting: AtomicBool,
    /// Stream threads that have finished.
    pub finished: AtomicUsize,
    /// Base of the streams' timestamps.
    pub epoch: Instant,
    /// When `stop` was first raised through [`TestControl::raise_stop`], ns
    /// since the epoch (0 = not yet): the end of a stream that was waiting
    /// for its next paced datagram when the test stopped.
    pub stopped_ns: AtomicU64,
    waker: Option<Arc<mio::Waker>>,
    /// First fatal stream error, if any.
    pub error: Mutex<Option<Error>>,
}

impl TestControl {
    /// Whether the test is stopping or aborted: a socket error now is the
    /// end's doing (the peer closed, the stream was shut), not a failure.
    pub fn ending(&self) -> bool {
        self.stop.load(Relaxed) || self.abort.load(Relaxed)
    }

    /// Control for a test whose controller is woken through `waker`.
    pub fn new(waker: Option<Arc<mio::Waker>>) -> Arc<TestControl> {
        Arc::new(TestControl {
            stop: AtomicBool::new(false),
            drain: AtomicBool::new(false),
            eof_expected: AtomicBool::new(false),
            quiet_ns: AtomicU64::new(100_000_000),
            abort: AtomicBool::new(false),
            omitting: AtomicBool::new(false),
            finished: AtomicUsize::new(0),
            epoch: Instant::now(),
            stopped_ns: AtomicU64::new(0),
            waker,
            error: Mutex::new(None),
        })
    }

    /// Raises `stop`, remembering when it was first raised.
    pub(crate) fn raise_stop(&self) {
        let _ = self.stopped_ns.compare_exchange(0, self.now_ns(), Relaxed, Relaxed);
        self.stop.store(true, Relaxed);
    }

    /// When the test was stopped, if it has been.
    pub(crate) fn stopped_at_ns(&self) -> Option<u64> {
        match self.stopped_ns.load(Relaxed) {
            0 => None,
            ns => Some(ns),
        }
    }

    /// Starts the drain: receivers end at EOF or, where none is expected
    /// (and for UDP), once quiet for `quiet`.
    pub(crate) fn begin_drain(&self, quiet: Duration) {
        self.quiet_ns.store(quiet.as_nanos() as u64, Relaxed);
        self.drain.store(true, Relaxed);
    }

    /// Whether a receiver that last received at `last_rx_ns` (0: never) is
    /// done: the test aborted, or it drains and has nothing more to wait
    /// for. A TCP receiver whose peer half-closes waits for its EOF.
    pub fn drained(&self, last_rx_ns: u64, tcp: bool) -> bool {
        if self.abort.load(Relaxed) {
            return true;
        }
        if !self.drain.load(Relaxed) || (tcp && self.eof_expected.load(Relaxed)) {
            return false;
        }
        self.now_ns().saturating_sub(last_rx_ns) >= self.quiet_ns.load(Relaxed)
    }

    /// Wakes the controller.
    pub fn wake(&self) {
        if let Some(w) = &self.waker {
            let _ = w.wake();
        }
    }

    /// Nanoseconds since the epoch, for stream timestamps (never 0).
    pub fn now_ns(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() as u64).max(1)
    }

    /// Records a stream failure (the first one wins) and wakes the controller.
    pub fn fail(&self, e: Error) {
        if let Ok(mut g) = self.error.lock()
            && g.is_none()
        {
            *g = Some(e);
        }
        self.wake();
    }

    /// The first stream failure, if any.
    pub(crate) fn take_error(&self) -> Option<Error> {
        self.error.lock().ok().and_then(|mut g| g.take())
    }
}

/// An exact total shared by a test's senders (`-n` bytes or `-k` blocks).
#[derive(Debug)]
pub struct Budget {
    remaining: AtomicU64,
    blocks: bool,
}

impl Budget {
    /// A byte budget.
    pub fn bytes(n: u64) -> Arc<Budget> {
        Arc::new(Budget {
            remaining: AtomicU64::new(n),
            blocks: false,
        })
    }

    /// A block budget.
    pub fn blocks(n: u64) -> Arc<Budget> {
        Arc::new(Budget {
            remaining: AtomicU64::new(n),
            blocks: true,
        })
    }

    /// Claims the next write: returns how many bytes of a `len`-byte block
    /// may go (the last one may be short), or 0 when the budget is spent.
    pub(crate) fn claim(&self, len: usize) -> usize {
        let want = if self.blocks { 1 } else { len as u64 };
        let mut cur = self.remaining.load(Relaxed);
        loop {
            if cur == 0 {
                return 0;
            }
            let take = want.min(cur);
            match self.remaining.compare_exchange_weak(cur, cur - take, Relaxed, Relaxed) {
                Ok(_) => return if self.blocks { len } else { take as usize },
                Err(now) => cur = now,
            }
        }
    }

    /// Claims up to `n` whole datagrams of `len` bytes at once (UDP, where
    /// a datagram is never cut): returns how many may go, 0 when spent. A
    /// byte budget's last datagram is sent whole, so a UDP `-n` overshoots
    /// by less than one datagram, as iperf3's does.
    pub fn claim_datagrams(&self, len: usize, n: usize) -> usize {
        let len = len.max(1) as u64;
        let per = if self.blocks { 1 } else { len };
        let mut cur = self.remaining.load(Relaxed);
        loop {
            if cur == 0 || n == 0 {
                return 0;
            }
            let take = (per * n as u64).min(cur);
            match self.remaining.compare_exchange_weak(cur, cur - take, Relaxed, Relaxed) {
                Ok(_) => return take.div_ceil(per) as usize,
                Err(now) => cur = now,
            }
        }
    }

    /// Whether nothing is left.
    pub fn spent(&self) -> bool {
        self.remaining.load(Relaxed) == 0
    }
}

/// A receive-side target (`-n`/`-k` when this host receives): wakes the
/// controller once the streams have together received it.
#[derive(Debug)]
pub struct Target {
    total: AtomicU64,
    goal: u64,
    blocks: bool,
}

impl Target {
    /// A target of `goal` bytes (or blocks).
    pub fn new(goal: u64, blocks: bool) -> Arc<Target> {
        Arc::new(Target {
            total: AtomicU64::new(0),
            goal,
            blocks,
        })
    }

    /// Adds a read; true when this read reached the goal.
    pub fn add(&self, bytes: u64) -> bool {
        let add = if self.blocks { 1 } else { bytes };
        let before = self.total.fetch_add(add, Relaxed);
        before < self.goal && before + add >= self.goal
    }

    /// Whether the goal is reached.
    pub fn reached(&self) -> bool {
        self.total.load(Relaxed) >= self.goal
    }
}

/// Bytes a sender writes: the same block over and over.
#[derive(Debug, Clone)]
pub enum Payload {
    /// Random bytes (iperf3's default).
    Random,
    /// `0123456789...` repeated (iperf2 style, `--repeating-payload`).
    Repeating,
    /// Read from a file (`-F`); each sending stream reads it from the start.
    File(std::path::PathBuf),
}

impl Payload {
    /// Fills a block.
    pub fn fill(&self, buf: &mut [u8]) {
        match self {
            Payload::Random | Payload::File(_) => crate::util::fill_random(buf),
            Payload::Repeating => {
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = b'0' + (i % 10) as u8;
                }
            }
        }
    }
}

/// Where received bytes go.
#[derive(Debug, Clone, Default)]
pub enum Sinkhole {
    /// Discarded.
    #[default]
    Discard,
    /// Discarded without copying to user space (MSG_TRUNC).
    Truncate,
    /// Written to a file (`-F` on the receiver).
    File(Arc<Mutex<File>>),
}

/// One stream's job.
pub struct StreamTask {
    /// Stream id.
    pub id: u32,
    /// Send or receive.
    pub role: StreamRole,
    /// Block size.
    pub block_len: usize,
    /// Pacing, if rate-limited.
    pub pace: Option<(pacer::PaceRate, u32)>,
    /// Exact total for senders.
    pub budget: Option<Arc<Budget>>,
    /// Receive goal.
    pub target: Option<Arc<Target>>,
    /// Payload for senders.
    pub payload: Payload,
    /// Destination for receivers.
    pub sinkhole: Sinkhole,
    /// Zero-copy send (sendfile).
    pub zerocopy: bool,
    /// Counters the reporter reads.
    pub counters: Arc<StreamCounters>,
    /// Test steering.
    pub control: Arc<TestControl>,
    /// CPU to pin to.
    pub affinity: Option<usize>,
    /// When a timed test ends (a stream that schedules its own work, such
    /// as bounceback bursts, starts none at or after it).
    pub until: Option<Instant>,
    /// An isochronous sender's frames, and the counters its clock feeds.
    pub frames: Option<(crate::config::FrameSpec, Arc<crate::stats::FrameCounters>)>,
}

/// A running stream.
pub struct StreamHandle {
    join: Option<JoinHandle<()>>,
    /// The socket's descriptor (printed as `[  5]`, used for TCP_INFO).
    pub fd: RawSock,
    /// A second handle on the socket, to unblock the thread and keep the
    /// descriptor valid for TCP_INFO after the thread is done.
    keep: Option<socket2::Socket>,
}

impl StreamHandle {
    /// Waits for the thread to end.
    pub fn join(&mut self) {
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }

    /// Unblocks the thread by shutting the socket down.
    pub fn shutdown(&self) {
        if let Some(s) = &self.keep {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Whether the thread has ended.
    pub fn is_finished(&self) -> bool {
        self.join.as_ref().is_none_or(|j| j.is_finished())
    }
}

impl Drop for StreamHandle {
    fn drop(&mut self) {
        if self.join.as_ref().is_some_and(|j| !j.is_finished()) {
            self.shutdown();
        }
        self.join();
    }
}

/// Per-block work a dialect adds to a stream's hot loop (iperf 2 stamps
/// `--trip-times` bursts, histograms read sizes, rate-limits reads). A hook
/// runs on the stream's own thread, once per block: it must not block
/// except to pace, and must not allocate.
pub trait StreamHook: Send {
    /// Called before a block is written, with the block about to go out
    /// (the last one may be short); it may overwrite the block's bytes.
    fn before_write(&mut self, _block: &mut [u8]) {}
    /// Isochronous senders: the header each frame starts with is this long
    /// (frames are never shorter).
    fn frame_header_len(&self) -> usize {
        0
    }
    /// Isochronous senders: `frame` begins with the next block written.
    fn frame_start(&mut self, _frame: &frames::Frame) {}
    /// Called after each successful read with the bytes read. Returns false
    /// when the stream should stop reading (`stop` raised while pacing).
    fn after_read(&mut self, _data: &[u8], _stop: &AtomicBool) -> bool {
        true
    }
    /// UDP receivers: called for each data datagram `d` with its arrival
    /// time (wall clock, ns), its transit time (arrival − the sender's
    /// timestamp, ns) and the TOS byte or traffic class it arrived with
    /// (`None` where the platform does not say).
    fn on_datagram(&mut self, _d: &[u8], _rx_ns: i64, _transit_ns: i64, _tos: Option<u8>) {}
    /// UDP receivers: called after each batch of datagrams (a place to
    /// publish what `on_datagram` gathered, once per batch, not per datagram).
    fn after_batch(&mut self) {}
    /// UDP receivers: the format's end-of-stream marker arrived.
    fn on_end_of_stream(&mut self) {}
}

/// What a stream does: move bulk data (its role says which way), or
/// exchange messages in a loop a dialect supplies (iperf 2's bounceback
/// client and its echo), whose bytes the engine does not know.
#[derive(Debug, Clone, Default)]
pub enum StreamKind {
    /// Writes (or reads) blocks as fast as asked.
    #[default]
    Bulk,
    /// Request/response messages: the dialect's loop.
    Exchange(Arc<dyn ExchangeLoop>),
}

/// A request/response stream's loop (iperf 2's bounceback, both ends): it
/// runs on the stream's thread with the stream's task (its counters, its
/// control, its end) until the test ends or it fails.
pub trait ExchangeLoop: Send + Sync + std::fmt::Debug {
    /// Runs the exchange on `sock`.
    fn run(&self, sock: &std::net::TcpStream, task: &StreamTask) -> Result<(), Error>;
}

impl StreamKind {
    /// Whether the stream moves bulk data (and so may be multiplexed).
    pub(crate) fn is_bulk(&self) -> bool {
        matches!(self, StreamKind::Bulk)
    }
}

/// Starts a TCP stream thread on `sock`, with an optional per-block hook.
pub(crate) fn spawn_tcp_with(
    sock: std::net::TcpStream,
    task: StreamTask,
    mut hook: Option<Box<dyn StreamHook>>,
    kind: StreamKind,
) -> Result<StreamHandle, Error> {
    let fd = sock.raw_sock();
    let keep = socket2::Socket::from(sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e))?);
    let name = format!("ws-tcp-{}", task.id);
    let join = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let control = task.control.clone();
            pin_stream_thread(&task);
            let hook = hook.as_mut().map(|h| &mut **h as &mut dyn StreamHook);
            let res = match (&kind, task.role) {
                (StreamKind::Exchange(x), _) => x.run(&sock, &task),
                (StreamKind::Bulk, StreamRole::Send) => tcp::send_loop(&sock, &task, hook),
                (StreamKind::Bulk, StreamRole::Recv) => tcp::recv_loop(&sock, &task, hook),
            };
            if let Err(e) = res {
                control.fail(e);
            }
            control.finished.fetch_add(1, Relaxed);
            control.wake();
        })
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
    Ok(StreamHandle {
        join: Some(join),
        fd,
        keep: Some(keep),
    })
}

/// Wraps an already-running thread (used by other transports).
pub(crate) fn handle_from(join: JoinHandle<()>, fd: RawSock, keep: Option<socket2::Socket>) -> StreamHandle {
    StreamHandle {
        join: Some(join),
        fd,
        keep,
    }
}

pub use crate::net::is_timeout;

/// `-A`: a stream's thread runs on the CPU asked for; one that cannot be
/// pinned fails the test.
fn pin_stream_thread(task: &StreamTask) {
    if let Some(cpu) = task.affinity
        && let Err(e) = pin(cpu)
    {
        task.control.fail(e);
    }
}

/// A plain stream's task for the engine's own tests: stream 1 of `role`,
/// blocks of `block_len`, nothing paced, budgeted or pinned.
#[cfg(test)]
pub(crate) fn test_task(
    role: StreamRole,
    control: &Arc<TestControl>,
    block_len: usize,
    payload: Payload,
) -> StreamTask {
    StreamTask {
        id: 1,
        role,
        block_len,
        pace: None,
        budget: None,
        target: None,
        payload,
        sinkhole: Sinkhole::Discard,
        zerocopy: false,
        counters: Arc::new(StreamCounters::default()),
        control: control.clone(),
        affinity: None,
        until: None,
        frames: None,
    }
}

/// A receiving stream's read failed: the end of the test when it is
/// ending (the peer closed, the stream was shut), else the stream's error.
fn read_failed(control: &TestControl, e: &std::io::Error) -> Result<(), Error> {
    if control.ending() {
        Ok(())
    } else {
        Err(Error::io(Code::STREAMREAD, e))
    }
}

/// `-A`: pins the calling thread (and so the threads it starts) to `cpu`,
/// with an error that names the host's CPUs when `cpu` is not one of them.
pub fn pin(cpu: usize) -> Result<(), Error> {
    wirespeed_sys::process::pin_current_thread(cpu)
        .map_err(|e| Error::affinity(cpu, &e, wirespeed_sys::process::cpus_online().as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_exact_across_threads() {
        let b = Budget::bytes(10_000_000 + 7);
        let total = Arc::new(AtomicU64::new(0));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                let total = total.clone();
                std::thread::spawn(move || {
                    loop {
                        let n = b.claim(131072);
                        if n == 0 {
                            break;
                        }
                        total.fetch_add(n as u64, Relaxed);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(total.load(Relaxed), 10_000_007);
        assert!(b.spent());
    }

    #[test]
    fn block_budget_counts_blocks() {
        let b = Budget::blocks(3);
        assert_eq!(b.claim(100), 100);
        assert_eq!(b.claim(100), 100);
        assert_eq!(b.claim(100), 100);
        assert_eq!(b.claim(100), 0);
    }

    #[test]
    fn datagram_claims_never_cut_a_datagram() {
        let b = Budget::bytes(1000);
        assert_eq!(b.claim_datagrams(300, 2), 2);
        // 400 bytes left: one more whole datagram and a last one for the rest.
        assert_eq!(b.claim_datagrams(300, 5), 2);
        assert_eq!(b.claim_datagrams(300, 5), 0);
        let k = Budget::blocks(10);
        assert_eq!(k.claim_datagrams(1470, 64), 10);
        assert!(k.spent());
    }

    #[test]
    fn target_fires_once() {
        let t = Target::new(100, false);
        assert!(!t.add(60));
        assert!(t.add(60));
        assert!(!t.add(60));
        assert!(t.reached());
    }

    #[test]
    fn repeating_payload_pattern() {
        let mut b = [0u8; 12];
        Payload::Repeating.fill(&mut b);
        assert_eq!(&b, b"012345678901");
    }
}
