//! Streams whose transport is not a socket of the engine's own: a byte
//! stream that a layer above carries (the QUIC streams of an iperf3
//! `--quic` test, `wirespeed-quic`), written and read through blocking
//! calls that wait at most a given time. The engine stays plain threads
//! and knows nothing of the transport; the loops here are the TCP loops'
//! (budgets, pacing, targets, omit, the drain to EOF) over [`ByteStream`].

use std::fs::File;
use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::pacer::Pacer;
use super::{Payload, Sinkhole, StreamTask, is_timeout};
use crate::error::{Code, Error};

/// How long a blocked read or write waits before the loop looks at the
/// test's stop flag again.
const POLL: Duration = Duration::from_millis(100);

/// One direction-agnostic byte stream of a transport the engine does not
/// own. Each call may block, but for at most `wait`; a call that ran out of
/// time fails with [`std::io::ErrorKind::TimedOut`].
pub trait ByteStream: Send + Sync {
    /// Writes some of `buf`: how many bytes the transport took (what the
    /// sender counts as sent; they reach the peer before its end of
    /// stream).
    fn write(&self, buf: &[u8], wait: Duration) -> std::io::Result<usize>;
    /// Reads into `buf`: how many bytes came, 0 at the end of the stream.
    fn read(&self, buf: &mut [u8], wait: Duration) -> std::io::Result<usize>;
    /// After the last write: the peer reads every byte, then the end.
    fn finish(&self);
}

/// A stream of a transport above the engine: its byte stream, and a
/// handle of its own on the transport's socket (its descriptor names the
/// stream in the reports, as a TCP stream's does; its buffers are the
/// transport's).
pub struct PipeSock {
    /// The stream.
    pub io: Arc<dyn ByteStream>,
    /// A handle on the transport's UDP socket.
    pub sock: UdpSocket,
    /// The peer's address (the socket may not be connected).
    pub peer: SocketAddr,
}

impl std::fmt::Debug for PipeSock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeSock")
            .field("sock", &self.sock)
            .field("peer", &self.peer)
            .finish()
    }
}

impl PipeSock {
    /// A second handle on the same stream and socket.
    pub fn try_clone(&self) -> std::io::Result<PipeSock> {
        Ok(PipeSock {
            io: self.io.clone(),
            sock: self.sock.try_clone()?,
            peer: self.peer,
        })
    }
}

/// Starts a pipe stream's thread.
pub(crate) fn spawn(pipe: PipeSock, task: StreamTask) -> Result<super::StreamHandle, Error> {
    use wirespeed_sys::AsSock;
    let fd = pipe.sock.raw_sock();
    let name = format!("ws-pipe-{}", task.id);
    let join = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let control = task.control.clone();
            super::pin_stream_thread(&task);
            let res = match task.role {
                crate::stats::StreamRole::Send => send_loop(&*pipe.io, &task),
                crate::stats::StreamRole::Recv => recv_loop(&*pipe.io, &task),
            };
            if let Err(e) = res {
                control.fail(e);
            }
            control.finished.fetch_add(1, Relaxed);
            control.wake();
        })
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
    Ok(super::handle_from(join, fd, None))
}

/// Sends until stopped, the budget is spent, or the file ends; then
/// finishes the stream so the receiver reads every byte, then its end.
pub(crate) fn send_loop(io: &dyn ByteStream, task: &StreamTask) -> Result<(), Error> {
    let mut buf = vec![0u8; task.block_len.max(1)];
    task.payload.fill(&mut buf);
    let mut file = match &task.payload {
        Payload::File(p) => Some(File::open(p).map_err(|e| Error::io(Code::FILE, &e))?),
        _ => None,
    };
    let mut pacer = task
        .pace
        .map(|(rate, burst)| Pacer::new(rate, burst, buf.len(), Instant::now()));
    let stop = &task.control.stop;
    let abort = &task.control.abort;
    let c = &task.counters;
    let mut last_write = 0u64;
    'blocks: loop {
        if stop.load(Relaxed) {
            break;
        }
        let mut n = match &task.budget {
            Some(b) if !task.control.omitting.load(Relaxed) => b.claim(buf.len()),
            _ => buf.len(),
        };
        if n == 0 {
            break;
        }
        if let Some(f) = file.as_mut() {
            n = super::tcp::read_full(f, &mut buf[..n]).map_err(|e| Error::io(Code::FILE, &e))?;
            if n == 0 {
                break;
            }
        }
        if let Some(p) = pacer.as_mut()
            && !p.wait(n, stop)
        {
            last_write = 0;
            break;
        }
        let mut off = 0;
        while off < n {
            match io.write(&buf[off..n], POLL) {
                Ok(0) => return Err(Error::new(Code::STREAMWRITE)),
                Ok(w) => {
                    c.bytes.fetch_add(w as u64, Relaxed);
                    off += w;
                    last_write = task.control.now_ns();
                    if off < n && stop.load(Relaxed) {
                        break 'blocks;
                    }
                }
                Err(e) if is_timeout(&e) => {
                    if stop.load(Relaxed) || abort.load(Relaxed) {
                        break 'blocks;
                    }
                }
                Err(e) => {
                    if stop.load(Relaxed) || abort.load(Relaxed) {
                        break 'blocks;
                    }
                    return Err(Error::io(Code::STREAMWRITE, &e));
                }
            }
        }
        c.blocks.fetch_add(1, Relaxed);
    }
    let end = last_write.max(task.control.stopped_at_ns().unwrap_or(0));
    c.ended_ns
        .store(if end > 0 { end } else { task.control.now_ns() }, Relaxed);
    if !abort.load(Relaxed) {
        io.finish();
    }
    Ok(())
}

/// Reads until the end of the stream, or until the drain finds it done
/// (see [`super::TestControl::drained`]), or the controller aborts.
pub(crate) fn recv_loop(io: &dyn ByteStream, task: &StreamTask) -> Result<(), Error> {
    let mut buf = vec![0u8; task.block_len.max(1)];
    let c = &task.counters;
    let control = &task.control;
    let finish = || {
        let last = c.last_rx_ns.load(Relaxed);
        c.ended_ns
            .store(if last > 0 { last } else { control.now_ns() }, Relaxed);
    };
    loop {
        match io.read(&mut buf, POLL) {
            Ok(0) => {
                finish();
                return Ok(());
            }
            Ok(n) => {
                c.bytes.fetch_add(n as u64, Relaxed);
                c.blocks.fetch_add(1, Relaxed);
                c.last_rx_ns.store(control.now_ns(), Relaxed);
                if let Sinkhole::File(f) = &task.sinkhole
                    && let Ok(mut f) = f.lock()
                {
                    f.write_all(&buf[..n]).map_err(|e| Error::io(Code::FILE, &e))?;
                }
                if let Some(t) = &task.target
                    && t.add(n as u64)
                {
                    control.wake();
                }
            }
            Err(e) if is_timeout(&e) => {
                if control.drained(c.last_rx_ns.load(Relaxed), true) {
                    finish();
                    return Ok(());
                }
            }
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
    use crate::stats::StreamRole;
    use std::sync::Mutex;
    use std::sync::mpsc;

    /// An in-memory stream: what is written is read, then the end.
    struct Channel {
        tx: Mutex<Option<mpsc::SyncSender<Vec<u8>>>>,
        rx: Mutex<(mpsc::Receiver<Vec<u8>>, Vec<u8>)>,
    }

    impl ByteStream for Channel {
        fn write(&self, buf: &[u8], _wait: Duration) -> std::io::Result<usize> {
            let n = buf.len().min(1000);
            let g = self.tx.lock().unwrap();
            g.as_ref().unwrap().send(buf[..n].to_vec()).unwrap();
            Ok(n)
        }
        fn read(&self, buf: &mut [u8], wait: Duration) -> std::io::Result<usize> {
            let mut g = self.rx.lock().unwrap();
            if g.1.is_empty() {
                match g.0.recv_timeout(wait) {
                    Ok(v) => g.1 = v,
                    Err(mpsc::RecvTimeoutError::Timeout) => return Err(std::io::ErrorKind::TimedOut.into()),
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(0),
                }
            }
            let n = buf.len().min(g.1.len());
            buf[..n].copy_from_slice(&g.1[..n]);
            g.1.drain(..n);
            Ok(n)
        }
        fn finish(&self) {
            self.tx.lock().unwrap().take();
        }
    }

    #[test]
    fn a_budget_arrives_whole_and_ends_the_stream() {
        let (tx, rx) = mpsc::sync_channel(1 << 16);
        let ch = Channel {
            tx: Mutex::new(Some(tx)),
            rx: Mutex::new((rx, Vec::new())),
        };
        let control = super::super::TestControl::new(None);
        let mut send = super::super::test_task(StreamRole::Send, &control, 4096, Payload::Random);
        send.budget = Some(super::super::Budget::bytes(1_000_003));
        send_loop(&ch, &send).unwrap();
        let recv = super::super::test_task(StreamRole::Recv, &control, 4096, Payload::Random);
        control.eof_expected.store(true, Relaxed);
        recv_loop(&ch, &recv).unwrap();
        assert_eq!(send.counters.bytes.load(Relaxed), 1_000_003);
        assert_eq!(recv.counters.bytes.load(Relaxed), 1_000_003);
    }
}
