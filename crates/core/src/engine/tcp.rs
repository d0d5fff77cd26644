//! TCP stream loops: write a block again and again, or read and count.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::frames::FrameClock;
use super::pacer::Pacer;
use super::{Payload, Sinkhole, StreamHook, StreamTask, is_timeout};
use crate::error::{Code, Error};
use wirespeed_sys::mem::AlignedBuf;

/// How long a blocked read or write waits before the loop looks at the
/// test's stop flag again.
const POLL: Duration = Duration::from_millis(100);

/// Sends until stopped, the budget is spent, or the file ends; then
/// half-closes so the receiver sees every byte followed by EOF.
pub(crate) fn send_loop(
    sock: &TcpStream,
    task: &StreamTask,
    mut hook: Option<&mut dyn StreamHook>,
) -> Result<(), Error> {
    let _ = sock.set_write_timeout(Some(POLL));
    let mut buf = AlignedBuf::new(task.block_len);
    task.payload.fill(&mut buf);
    let mut file = match &task.payload {
        Payload::File(p) => Some(File::open(p).map_err(|e| Error::io(Code::FILE, &e))?),
        _ => None,
    };
    // sendfile needs a file to send from: a private temp file holding the block.
    let zc_file = if task.zerocopy && file.is_none() {
        Some(block_file(&buf)?)
    } else {
        None
    };
    // Frames keep their own time: no rate besides.
    let mut pacer = task
        .pace
        .filter(|_| task.frames.is_none())
        .map(|(rate, burst)| Pacer::new(rate, burst, buf.len(), std::time::Instant::now()));
    let stop = &task.control.stop;
    let c = &task.counters;
    let mut unsent = UnsentLimit::new(sock, Duration::from_millis(100));
    // When the last byte went out: the stream's true end, however long the
    // final blocked write took to notice the stop.
    let mut last_write = 0u64;
    // Isochronous: each frame's bytes go as blocks once its slot comes.
    let mut frames = task.frames.as_ref().map(|(spec, c)| {
        let header = hook.as_deref().map_or(0, |h| h.frame_header_len());
        FrameClock::new(spec, header, c.clone())
    });
    let mut frame_left = 0usize;
    'blocks: loop {
        if stop.load(Relaxed) {
            break;
        }
        let mut want = buf.len();
        if let Some(fc) = frames.as_mut() {
            if frame_left == 0 {
                let Some(f) = fc.next(stop, task.until) else {
                    // Stopped while waiting for the next frame: the stream
                    // ran until the stop.
                    last_write = 0;
                    break;
                };
                frame_left = f.size as usize;
                if let Some(h) = hook.as_deref_mut() {
                    h.frame_start(&f);
                }
            }
            want = want.min(frame_left);
        }
        let mut n = match &task.budget {
            Some(b) if !task.control.omitting.load(Relaxed) => b.claim(want),
            _ => want,
        };
        if n == 0 {
            break;
        }
        frame_left = frame_left.saturating_sub(n);
        if let Some(f) = file.as_mut() {
            n = read_full(f, &mut buf[..n]).map_err(|e| Error::io(Code::FILE, &e))?;
            if n == 0 {
                break;
            }
        }
        if let Some(p) = pacer.as_mut()
            && !p.wait(n, stop)
        {
            // Stopped while waiting for its pace (a periodic burst's next
            // period): the stream ran until the stop, not its last write.
            last_write = 0;
            break;
        }
        if let Some(h) = hook.as_deref_mut() {
            h.before_write(&mut buf[..n]);
        }
        let mut off = 0;
        while off < n {
            let r = match &zc_file {
                Some(f) => wirespeed_sys::socket::sendfile(sock, f, off as u64, n - off),
                None => (&*sock).write(&buf[off..n]),
            };
            match r {
                Ok(0) => return Err(Error::new(Code::STREAMWRITE)),
                Ok(w) => {
                    // Counted as it goes: a block can take longer than an
                    // interval on a slow path.
                    c.bytes.fetch_add(w as u64, Relaxed);
                    off += w;
                    last_write = task.control.now_ns();
                    unsent.tune(sock, last_write);
                    // A stop ends a block cut short at what went.
                    if off < n && stop.load(Relaxed) {
                        break 'blocks;
                    }
                }
                Err(e) if is_timeout(&e) => {
                    if stop.load(Relaxed) {
                        break 'blocks;
                    }
                }
                Err(e) => {
                    if stop.load(Relaxed) || task.control.abort.load(Relaxed) {
                        break 'blocks;
                    }
                    return Err(Error::io(Code::STREAMWRITE, &e));
                }
            }
        }
        c.blocks.fetch_add(1, Relaxed);
    }
    // The stream ran until its last write, or until the stop if that came
    // later (a path that took nothing for a while).
    let end = last_write.max(task.control.stopped_at_ns().unwrap_or(0));
    c.ended_ns
        .store(if end > 0 { end } else { task.control.now_ns() }, Relaxed);
    let _ = sock.shutdown(Shutdown::Write);
    Ok(())
}

/// Keeps a bulk sender's unsent backlog small (TCP_NOTSENT_LOWAT). What a
/// sender counts as sent is what it wrote; without a bound the kernel takes
/// megabytes ahead of the path (the send buffer grows with the window), so
/// on a slow link "sent" would run seconds ahead of the wire and the test's
/// end would wait for all of it. The bound follows the rate the peer
/// acknowledges: about [`UNSENT_TIME`] of it, within [`UNSENT_MIN`] and
/// [`UNSENT_MAX`]. A test that set its own (iperf 2's
/// `--tcp-write-prefetch`) keeps it; where the platform has no such option
/// the sender works as before.
pub(crate) struct UnsentLimit {
    /// The bound set now (0: not ours to tune).
    current: u32,
    next_ns: u64,
    every_ns: u64,
}

/// The unsent backlog aimed at, in time at the acknowledged rate.
pub(crate) const UNSENT_TIME: Duration = Duration::from_millis(20);
/// The smallest unsent bound: a few blocks' worth of small writes.
pub(crate) const UNSENT_MIN: u32 = 16 * 1024;
/// The largest: past this, loopback gains nothing (`bench/ab.py`).
pub(crate) const UNSENT_MAX: u32 = 4 * 1024 * 1024;
/// Before the first rate is known.
const UNSENT_START: u32 = 256 * 1024;

impl UnsentLimit {
    /// Takes charge of `sock`'s unsent bound unless the test set one; the
    /// bound is looked at again every `every`.
    pub fn new(sock: &TcpStream, every: Duration) -> UnsentLimit {
        let s = socket2::SockRef::from(sock);
        let current = if wirespeed_sys::socket::notsent_lowat(&s) == Some(0)
            && wirespeed_sys::socket::set_notsent_lowat(&s, UNSENT_START).is_ok()
        {
            UNSENT_START
        } else {
            0
        };
        UnsentLimit {
            current,
            next_ns: 0,
            every_ns: every.as_nanos() as u64,
        }
    }

    /// Follows the acknowledged rate, at most once every period.
    pub(crate) fn tune(&mut self, sock: &TcpStream, now_ns: u64) {
        if self.current == 0 || now_ns < self.next_ns {
            return;
        }
        self.next_ns = now_ns + self.every_ns;
        let Ok(info) = wirespeed_sys::socket::tcp_info(sock) else {
            return;
        };
        if info.delivery_rate == 0 {
            return;
        }
        let want = unsent_bound(info.delivery_rate);
        // Only a real change is worth a system call.
        if want.abs_diff(self.current) > self.current / 4
            && wirespeed_sys::socket::set_notsent_lowat(&socket2::SockRef::from(sock), want).is_ok()
        {
            self.current = want;
        }
    }
}

/// The unsent bound for an acknowledged rate of `bytes_per_sec`.
pub(crate) fn unsent_bound(bytes_per_sec: u64) -> u32 {
    let b = bytes_per_sec as f64 * UNSENT_TIME.as_secs_f64();
    (b as u64).clamp(u64::from(UNSENT_MIN), u64::from(UNSENT_MAX)) as u32
}

pub(crate) fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

pub(crate) fn block_file(buf: &[u8]) -> Result<File, Error> {
    let path = std::env::temp_dir().join(format!(
        "wirespeed-zc-{}-{}",
        std::process::id(),
        crate::util::random_u64()
    ));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::io(Code::FILE, &e))?;
    let _ = std::fs::remove_file(&path);
    f.write_all(buf).map_err(|e| Error::io(Code::FILE, &e))?;
    f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(Code::FILE, &e))?;
    Ok(f)
}

/// Reads until EOF, or until the drain finds it done (see
/// [`super::TestControl::drained`]), or the controller aborts.
pub(crate) fn recv_loop(
    sock: &TcpStream,
    task: &StreamTask,
    mut hook: Option<&mut dyn StreamHook>,
) -> Result<(), Error> {
    let _ = sock.set_read_timeout(Some(POLL));
    let mut buf = AlignedBuf::new(task.block_len);
    let c = &task.counters;
    let control = &task.control;
    let finish = || {
        let last = c.last_rx_ns.load(Relaxed);
        c.ended_ns
            .store(if last > 0 { last } else { control.now_ns() }, Relaxed);
    };
    loop {
        let r = match &task.sinkhole {
            Sinkhole::Truncate => wirespeed_sys::socket::recv_discard(sock, &mut buf, task.block_len),
            _ => (&*sock).read(&mut buf),
        };
        match r {
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
                if let Some(h) = hook.as_deref_mut()
                    && !h.after_read(&buf[..n], &control.stop)
                {
                    finish();
                    return Ok(());
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

    #[test]
    fn the_unsent_bound_follows_the_acknowledged_rate_within_limits() {
        // 100 Mbit/s: 20 ms is 250 kB.
        assert_eq!(unsent_bound(12_500_000), 250_000);
        // A crawling path keeps a few blocks, a fast one no more than 4 MiB.
        assert_eq!(unsent_bound(1_000), UNSENT_MIN);
        assert_eq!(unsent_bound(10_000_000_000), UNSENT_MAX);
    }
}
