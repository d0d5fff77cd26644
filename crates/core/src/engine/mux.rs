//! Many flows on few threads: per-core workers multiplexing TCP streams with
//! `mio`, for tests with more streams than threads make sense for.
//!
//! A worker owns a share of the test's streams. Streams of one worker share
//! one send buffer and one receive buffer, so an idle flow costs a few
//! hundred bytes of state, not a thread and two blocks of memory. Streams
//! known to be ready are served round-robin a few blocks at a time (edge-
//! triggered readiness means a stream stays in the ready queue until it
//! reports `WouldBlock`), so one fast stream cannot starve the rest.
//! Semantics match the thread loops in `tcp.rs`: exact budgets, pacing,
//! half-close after the last block, drain-to-EOF-or-quiet after the stop.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Registry, Token};

use super::pacer::Pacer;
use super::{Sinkhole, StreamTask, TestControl};
use crate::error::{Code, Error};
use crate::stats::StreamRole;
use wirespeed_sys::mem::AlignedBuf;

/// Blocks a stream may move per turn before the next stream's turn.
const TURN: usize = 4;
/// How often a worker looks at the stop flags when nothing happens.
const TICK: Duration = Duration::from_millis(20);

/// A flow's socket as a worker polls it and moves its bytes. On Unix the
/// shared stream itself, registered by descriptor. On Windows mio can poll
/// only its own type, and must see the I/O to re-arm readiness, so the
/// worker holds a duplicate handle of the same socket as a mio stream.
struct FlowSock {
    #[cfg(unix)]
    io: Arc<TcpStream>,
    #[cfg(windows)]
    io: mio::net::TcpStream,
    #[cfg(windows)]
    _shared: Arc<TcpStream>,
}

impl FlowSock {
    fn new(shared: Arc<TcpStream>) -> io::Result<FlowSock> {
        #[cfg(unix)]
        return Ok(FlowSock { io: shared });
        #[cfg(windows)]
        {
            let dup = shared.try_clone()?;
            Ok(FlowSock {
                io: mio::net::TcpStream::from_std(dup),
                _shared: shared,
            })
        }
    }

    /// The stream itself, for its socket options.
    fn shared(&self) -> &TcpStream {
        #[cfg(unix)]
        return &self.io;
        #[cfg(windows)]
        return &self._shared;
    }

    /// What the bytes move through.
    #[cfg(unix)]
    fn io(&self) -> &TcpStream {
        &self.io
    }

    /// What the bytes move through.
    #[cfg(windows)]
    fn io(&self) -> &mio::net::TcpStream {
        &self.io
    }

    fn register(&mut self, registry: &Registry, token: Token, interest: Interest) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            registry.register(&mut mio::unix::SourceFd(&self.io.as_raw_fd()), token, interest)
        }
        #[cfg(windows)]
        registry.register(&mut self.io, token, interest)
    }

    fn deregister(&mut self, registry: &Registry) {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let _ = registry.deregister(&mut mio::unix::SourceFd(&self.io.as_raw_fd()));
        }
        #[cfg(windows)]
        let _ = registry.deregister(&mut self.io);
    }
}

/// Workers for one direction of a test: one per CPU the calling thread may
/// run on (its affinity mask, so `-A` gives one worker). One system call:
/// `available_parallelism` would also read cgroup files on every test.
pub fn workers() -> usize {
    wirespeed_sys::process::current_affinity().map_or(1, |c| c.len().max(1))
}

/// Worker threads serving a test's streams.
pub(crate) struct Mux {
    workers: Vec<JoinHandle<()>>,
}

impl Mux {
    /// Starts `workers` threads and deals the streams out round-robin.
    /// Sockets are switched to non-blocking; the caller keeps its `Arc`s
    /// for TCP_INFO. File payloads, file sinks and per-block hooks are not
    /// supported here (the caller uses threads for those). Workers are
    /// pinned to the streams' CPU when they name one.
    pub fn start(streams: Vec<(Arc<TcpStream>, StreamTask)>, workers: usize) -> Result<Mux, Error> {
        let workers = workers.clamp(1, streams.len().max(1));
        let mut shares: Vec<Vec<(Arc<TcpStream>, StreamTask)>> = (0..workers).map(|_| Vec::new()).collect();
        for (i, s) in streams.into_iter().enumerate() {
            s.0.set_nonblocking(true)
                .map_err(|e| Error::io(Code::NONBLOCKING, &e))?;
            shares[i % workers].push(s);
        }
        let mut handles = Vec::with_capacity(workers);
        for (w, share) in shares.into_iter().enumerate() {
            if share.is_empty() {
                continue;
            }
            let control = share[0].1.control.clone();
            let spawned = std::thread::Builder::new().name(format!("ws-mux-{w}")).spawn(move || {
                let control = share[0].1.control.clone();
                let n = share.len();
                if let Some(cpu) = share[0].1.affinity
                    && let Err(e) = super::pin(cpu)
                {
                    control.fail(e);
                }
                if let Err(e) = Worker::new(share).and_then(|mut wk| wk.run()) {
                    control.fail(e);
                }
                control.finished.fetch_add(n, Relaxed);
                control.wake();
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Workers already running stop at once and are joined.
                    control.abort.store(true, Relaxed);
                    control.raise_stop();
                    drop(Mux { workers: handles });
                    return Err(Error::io(Code::PTHREADCREATE, &e));
                }
            }
        }
        Ok(Mux { workers: handles })
    }

    /// Whether every worker has finished.
    pub fn is_finished(&self) -> bool {
        self.workers.iter().all(|h| h.is_finished())
    }

    /// Waits for every worker to finish.
    pub fn join(&mut self) {
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for Mux {
    fn drop(&mut self) {
        self.join();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// Still ready: back of the queue.
    Again,
    /// Waits for readiness.
    Blocked,
    /// Waits for the pacer until the stream's `due`.
    Paced,
    /// Finished.
    Done,
}

struct Flow {
    sock: FlowSock,
    task: StreamTask,
    pacer: Option<Pacer>,
    /// Bytes of the current block claimed and not yet written.
    pending: usize,
    /// Whether the pending block already went through the pacer.
    scheduled: bool,
    due: Option<Instant>,
    queued: bool,
    done: bool,
    last_io_ns: u64,
    /// A sender's unsent bound (looked at once a second: there may be
    /// thousands).
    unsent: Option<super::tcp::UnsentLimit>,
}

struct Worker {
    poll: Poll,
    flows: Vec<Flow>,
    send_buf: AlignedBuf,
    recv_buf: AlignedBuf,
    control: Arc<TestControl>,
    ready: VecDeque<usize>,
    live: usize,
    zc_file: Option<std::fs::File>,
    /// Whether any stream is paced (has `due` times to watch).
    paced: bool,
}

impl Worker {
    fn new(share: Vec<(Arc<TcpStream>, StreamTask)>) -> Result<Worker, Error> {
        let poll = Poll::new().map_err(|e| Error::io(Code::INITSTREAM, &e))?;
        let control = share[0].1.control.clone();
        let block = share.iter().map(|(_, t)| t.block_len).max().unwrap_or(1).max(1);
        let mut send_buf = AlignedBuf::new(block);
        share[0].1.payload.fill(&mut send_buf);
        let zerocopy = share.iter().any(|(_, t)| t.zerocopy && t.role == StreamRole::Send);
        let zc_file = if zerocopy {
            Some(super::tcp::block_file(&send_buf)?)
        } else {
            None
        };
        let now = Instant::now();
        let mut flows = Vec::with_capacity(share.len());
        let mut ready = VecDeque::new();
        for (i, (sock, task)) in share.into_iter().enumerate() {
            let interest = match task.role {
                StreamRole::Send => Interest::WRITABLE,
                StreamRole::Recv => Interest::READABLE,
            };
            let unsent =
                (task.role == StreamRole::Send).then(|| super::tcp::UnsentLimit::new(&sock, Duration::from_secs(1)));
            let mut sock = FlowSock::new(sock).map_err(|e| Error::io(Code::INITSTREAM, &e))?;
            sock.register(poll.registry(), Token(i), interest)
                .map_err(|e| Error::io(Code::INITSTREAM, &e))?;
            let pacer = task
                .pace
                .map(|(rate, burst)| Pacer::new(rate, burst, task.block_len, now));
            if task.role == StreamRole::Send {
                ready.push_back(i);
            }
            flows.push(Flow {
                unsent,
                sock,
                queued: task.role == StreamRole::Send,
                task,
                pacer,
                pending: 0,
                scheduled: false,
                due: None,
                done: false,
                last_io_ns: 0,
            });
        }
        let live = flows.len();
        let paced = flows.iter().any(|f| f.pacer.is_some());
        Ok(Worker {
            paced,
            poll,
            flows,
            send_buf,
            recv_buf: AlignedBuf::new(block),
            control,
            ready,
            live,
            zc_file,
        })
    }

    fn run(&mut self) -> Result<(), Error> {
        let mut events = Events::with_capacity(1024);
        while self.live > 0 {
            let now = Instant::now();
            let timeout = if !self.ready.is_empty() {
                Duration::ZERO
            } else if self.paced {
                let next_due = self.flows.iter().filter(|f| !f.done).filter_map(|f| f.due).min();
                next_due.map_or(TICK, |d| d.saturating_duration_since(now).min(TICK))
            } else {
                TICK
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout))
                && e.kind() != io::ErrorKind::Interrupted
            {
                return Err(Error::io(Code::SELECT, &e));
            }
            for ev in events.iter() {
                self.enqueue(ev.token().0);
            }
            if self.paced {
                let now = Instant::now();
                for i in 0..self.flows.len() {
                    if self.flows[i].due.is_some_and(|d| d <= now) {
                        self.flows[i].due = None;
                        self.enqueue(i);
                    }
                }
            }
            self.check_stop()?;
            // One turn for every stream that was ready when this pass began.
            for _ in 0..self.ready.len() {
                let Some(i) = self.ready.pop_front() else { break };
                self.flows[i].queued = false;
                if self.flows[i].done {
                    continue;
                }
                let turn = match self.flows[i].task.role {
                    StreamRole::Send => self.send_turn(i)?,
                    StreamRole::Recv => self.recv_turn(i)?,
                };
                match turn {
                    Turn::Again => self.enqueue(i),
                    Turn::Done => self.finish(i),
                    Turn::Blocked | Turn::Paced => {}
                }
            }
        }
        Ok(())
    }

    fn enqueue(&mut self, i: usize) {
        if let Some(f) = self.flows.get_mut(i)
            && !f.queued
            && !f.done
            && f.due.is_none()
        {
            f.queued = true;
            self.ready.push_back(i);
        }
    }

    /// Applies the test's stop (senders), drain (quiet receivers) and
    /// abort (everyone) to streams that are not busy.
    fn check_stop(&mut self) -> Result<(), Error> {
        let stop = self.control.stop.load(Relaxed);
        let drain = self.control.drain.load(Relaxed);
        let abort = self.control.abort.load(Relaxed);
        if !stop && !drain && !abort {
            return Ok(());
        }
        for i in 0..self.flows.len() {
            let f = &self.flows[i];
            if f.done {
                continue;
            }
            if abort || (f.task.role == StreamRole::Send && stop) {
                self.finish(i);
            } else if f.task.role == StreamRole::Recv && drain && !f.queued && self.control.drained(f.last_io_ns, true)
            {
                // Quiet by the clock, but its readiness may not have been
                // polled yet (more sockets ready than one poll returns):
                // the socket itself says whether the stream is done.
                let last = f.last_io_ns;
                match self.recv_turn(i)? {
                    Turn::Again => self.enqueue(i),
                    Turn::Blocked if self.flows[i].last_io_ns != last => {}
                    _ => self.finish(i),
                }
            }
        }
        Ok(())
    }

    fn send_turn(&mut self, i: usize) -> Result<Turn, Error> {
        let control = self.control.clone();
        for _ in 0..TURN {
            if control.stop.load(Relaxed) {
                return Ok(Turn::Done);
            }
            let f = &mut self.flows[i];
            if f.pending == 0 {
                let len = f.task.block_len.min(self.send_buf.len());
                let n = match &f.task.budget {
                    Some(b) if !control.omitting.load(Relaxed) => b.claim(len),
                    _ => len,
                };
                if n == 0 {
                    return Ok(Turn::Done);
                }
                f.pending = n;
                f.scheduled = false;
            }
            if !f.scheduled {
                f.scheduled = true;
                if let Some(p) = f.pacer.as_mut() {
                    let now = Instant::now();
                    if let Some(due) = p.schedule(f.pending, now) {
                        f.due = Some(due);
                        return Ok(Turn::Paced);
                    }
                }
            }
            let off = self.send_buf.len().min(f.task.block_len) - f.pending;
            let end = off + f.pending;
            let r = match &self.zc_file {
                Some(file) if f.task.zerocopy => {
                    wirespeed_sys::socket::sendfile(f.sock.io(), file, off as u64, f.pending)
                }
                _ => f.sock.io().write(&self.send_buf[off.min(end)..end]),
            };
            match r {
                Ok(0) => return Err(Error::new(Code::STREAMWRITE)),
                Ok(w) => {
                    f.pending -= w;
                    f.task.counters.bytes.fetch_add(w as u64, Relaxed);
                    f.last_io_ns = control.now_ns();
                    if let Some(u) = f.unsent.as_mut() {
                        u.tune(f.sock.shared(), f.last_io_ns);
                    }
                    if f.pending == 0 {
                        f.task.counters.blocks.fetch_add(1, Relaxed);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Turn::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if control.ending() {
                        return Ok(Turn::Done);
                    }
                    return Err(Error::io(Code::STREAMWRITE, &e));
                }
            }
        }
        Ok(Turn::Again)
    }

    fn recv_turn(&mut self, i: usize) -> Result<Turn, Error> {
        let control = self.control.clone();
        for _ in 0..TURN {
            let f = &mut self.flows[i];
            let r = match f.task.sinkhole {
                Sinkhole::Truncate => {
                    wirespeed_sys::socket::recv_discard(f.sock.io(), &mut self.recv_buf, f.task.block_len)
                }
                _ => f.sock.io().read(&mut self.recv_buf),
            };
            match r {
                Ok(0) => return Ok(Turn::Done),
                Ok(n) => {
                    let c = &f.task.counters;
                    c.bytes.fetch_add(n as u64, Relaxed);
                    c.blocks.fetch_add(1, Relaxed);
                    f.last_io_ns = control.now_ns();
                    c.last_rx_ns.store(f.last_io_ns, Relaxed);
                    if let Some(t) = &f.task.target
                        && t.add(n as u64)
                    {
                        control.wake();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Turn::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if control.ending() {
                        return Ok(Turn::Done);
                    }
                    return Err(Error::io(Code::STREAMREAD, &e));
                }
            }
        }
        Ok(Turn::Again)
    }

    fn finish(&mut self, i: usize) {
        let f = &mut self.flows[i];
        if f.done {
            return;
        }
        f.done = true;
        self.live -= 1;
        f.sock.deregister(self.poll.registry());
        let end = if f.last_io_ns > 0 {
            f.last_io_ns
        } else {
            self.control.now_ns()
        };
        f.task.counters.ended_ns.store(end, Relaxed);
        if f.task.role == StreamRole::Send {
            let _ = f.sock.io().shutdown(Shutdown::Write);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Budget, Payload, TestControl};
    use std::net::TcpListener;

    fn task(role: StreamRole, control: &Arc<TestControl>, budget: Option<Arc<Budget>>) -> StreamTask {
        StreamTask {
            budget,
            ..crate::engine::test_task(role, control, 16 * 1024, Payload::Random)
        }
    }

    /// Many connected pairs over loopback.
    fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        (0..n)
            .map(|_| {
                let c = TcpStream::connect(a).unwrap();
                let (s, _) = l.accept().unwrap();
                (c, s)
            })
            .collect()
    }

    #[test]
    fn every_flow_moves_exact_budgeted_bytes() {
        let n = 200;
        let ps = pairs(n);
        let send_ctl = TestControl::new(None);
        let recv_ctl = TestControl::new(None);
        let budget = Budget::bytes(50_000_003);
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        let mut rx_counters = Vec::new();
        for (c, s) in ps {
            senders.push((Arc::new(c), task(StreamRole::Send, &send_ctl, Some(budget.clone()))));
            let t = task(StreamRole::Recv, &recv_ctl, None);
            rx_counters.push(t.counters.clone());
            receivers.push((Arc::new(s), t));
        }
        let tx_counters: Vec<_> = senders.iter().map(|(_, t)| t.counters.clone()).collect();
        let mut rx = Mux::start(receivers, 2).unwrap();
        // One sending worker: the budget is shared, and of two workers the
        // one that starts first may spend it all before the other runs.
        let mut tx = Mux::start(senders, 1).unwrap();
        tx.join();
        rx.join();
        let sent: u64 = tx_counters.iter().map(|c| c.bytes.load(Relaxed)).sum();
        let got: u64 = rx_counters.iter().map(|c| c.bytes.load(Relaxed)).sum();
        assert_eq!(sent, 50_000_003);
        assert_eq!(got, 50_000_003);
        // Round-robin turns within a worker (200 turns of 64 KiB are a
        // quarter of the budget): every flow carried data.
        assert!(rx_counters.iter().all(|c| c.bytes.load(Relaxed) > 0));
        assert!(rx_counters.iter().all(|c| c.ended_ns.load(Relaxed) > 0));
    }

    #[test]
    fn stop_ends_senders_and_receivers_drain() {
        let ps = pairs(20);
        let send_ctl = TestControl::new(None);
        let recv_ctl = TestControl::new(None);
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        let mut rxc = Vec::new();
        let mut txc = Vec::new();
        for (c, s) in ps {
            let t = task(StreamRole::Send, &send_ctl, None);
            txc.push(t.counters.clone());
            senders.push((Arc::new(c), t));
            let t = task(StreamRole::Recv, &recv_ctl, None);
            rxc.push(t.counters.clone());
            receivers.push((Arc::new(s), t));
        }
        let mut rx = Mux::start(receivers, 1).unwrap();
        let mut tx = Mux::start(senders, 1).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        send_ctl.stop.store(true, Relaxed);
        tx.join();
        // Senders half-closed: receivers see EOF after the last byte.
        rx.join();
        for (t, r) in txc.iter().zip(&rxc) {
            assert_eq!(t.bytes.load(Relaxed), r.bytes.load(Relaxed));
        }
        assert!(txc.iter().map(|c| c.bytes.load(Relaxed)).sum::<u64>() > 0);
    }
}
