//! The control connection as the drivers use it: a non-blocking socket in a
//! small `mio` loop with a waker, so one thread can wait for "a control byte,
//! a stream event, or the next tick" with a deadline on every wait.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token, Waker};

use wirespeed_core::error::{Code, Error};
use wirespeed_proto::iperf3::Framer;
use wirespeed_proto::iperf3::framing::FrameError;

/// What [`Ctrl::poll_byte`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Polled {
    /// A state byte.
    Byte(u8),
    /// A wake-up or the deadline (look at timers and streams).
    Woken,
    /// The peer closed.
    Eof,
}

const CTRL: Token = Token(0);
const WAKE: Token = Token(1);

/// Why a wait returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// New control bytes arrived.
    Data,
    /// Someone called the waker.
    Waker,
    /// The deadline passed.
    Timeout,
    /// The peer closed the connection.
    Eof,
}

/// A control connection.
pub struct Ctrl {
    sock: mio::net::TcpStream,
    poll: Poll,
    events: Events,
    waker: Arc<Waker>,
    /// Bytes received and not yet consumed.
    pub framer: Framer,
    eof: bool,
    max_buffer: usize,
    /// The peer's address.
    pub peer: std::net::SocketAddr,
    /// The local address.
    pub local: std::net::SocketAddr,
}

impl Ctrl {
    /// Wraps a connected socket.
    pub fn new(stream: TcpStream) -> io::Result<Ctrl> {
        let peer = stream.peer_addr()?;
        let local = stream.local_addr()?;
        stream.set_nonblocking(true)?;
        let mut sock = mio::net::TcpStream::from_std(stream);
        let poll = Poll::new()?;
        poll.registry().register(&mut sock, CTRL, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        Ok(Ctrl {
            sock,
            poll,
            events: Events::with_capacity(8),
            waker,
            framer: Framer::new(),
            eof: false,
            max_buffer: wirespeed_proto::iperf3::MAX_RESULTS_LEN + 64,
            peer,
            local,
        })
    }

    /// A waker other threads can use to interrupt [`Ctrl::wait`].
    pub fn waker(&self) -> Arc<Waker> {
        self.waker.clone()
    }

    /// The socket (for options and fd numbers).
    pub fn socket(&self) -> &mio::net::TcpStream {
        &self.sock
    }

    /// The control connection's round trip and retransmission timeout: its
    /// messages cross the same path as the data, queue and all.
    pub fn timing(&self) -> wirespeed_core::engine::drain::PathTiming {
        use wirespeed_sys::AsSock;
        wirespeed_core::engine::drain::PathTiming::of_socket(self.sock.raw_sock())
    }

    fn pull(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            if self.framer.buffered() > self.max_buffer {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "control peer sent too much"));
            }
            match self.sock.read(&mut buf) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => self.framer.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits until new control data, a wake-up, EOF, or `until`. Bytes
    /// already buffered do not count: callers look at the framer first.
    pub fn wait(&mut self, until: Option<Instant>) -> io::Result<Woke> {
        if self.eof {
            return Ok(Woke::Eof);
        }
        let before = self.framer.buffered();
        loop {
            let timeout = until.map(|u| u.saturating_duration_since(Instant::now()));
            if let Err(e) = self.poll.poll(&mut self.events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let mut woke = false;
            let mut readable = false;
            for ev in self.events.iter() {
                match ev.token() {
                    WAKE => woke = true,
                    _ => readable = true,
                }
            }
            if readable {
                self.pull()?;
            }
            if self.framer.buffered() > before {
                return Ok(Woke::Data);
            }
            if self.eof {
                return Ok(Woke::Eof);
            }
            if woke {
                return Ok(Woke::Waker);
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                return Ok(Woke::Timeout);
            }
        }
    }

    /// The next state byte if one is buffered, else waits like [`Ctrl::wait`]
    /// and takes one if it arrived.
    pub(crate) fn poll_byte(&mut self, until: Option<Instant>) -> io::Result<Polled> {
        let polled = match self.framer.take_byte() {
            Some(b) => Polled::Byte(b),
            None => match self.wait(until)? {
                Woke::Data => match self.framer.take_byte() {
                    Some(b) => Polled::Byte(b),
                    None => Polled::Woken,
                },
                Woke::Waker | Woke::Timeout => Polled::Woken,
                Woke::Eof => match self.framer.take_byte() {
                    Some(b) => Polled::Byte(b),
                    None => Polled::Eof,
                },
            },
        };
        if let Polled::Byte(b) = polled {
            log_state(&self.peer, b);
        }
        Ok(polled)
    }

    /// Writes everything by `deadline`.
    pub fn write_all(&mut self, mut data: &[u8], deadline: Instant) -> io::Result<()> {
        let mut registered_write = false;
        while !data.is_empty() {
            match self.sock.write(data) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !registered_write {
                        self.poll.registry().reregister(
                            &mut self.sock,
                            CTRL,
                            Interest::READABLE | Interest::WRITABLE,
                        )?;
                        registered_write = true;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                    self.poll.poll(&mut self.events, Some(deadline - now))?;
                    // Keep reading so a peer that writes while we write cannot deadlock us.
                    self.pull()?;
                }
                Err(e) => return Err(e),
            }
        }
        if registered_write {
            self.poll
                .registry()
                .reregister(&mut self.sock, CTRL, Interest::READABLE)?;
        }
        Ok(())
    }

    /// Sends one state byte.
    pub(crate) fn send_state(&mut self, s: wirespeed_proto::iperf3::State) -> Result<(), Error> {
        wirespeed_core::debug!(3, "{} send state {:?} ({})", self.peer, s, s.to_byte() as i8);
        self.write_all(&[s.to_byte()], Instant::now() + Duration::from_secs(30))
            .map_err(|e| Error::io(Code::SENDMESSAGE, &e))
    }

    /// Reads one byte by `deadline`.
    pub(crate) fn recv_byte(&mut self, deadline: Option<Instant>, code: Code) -> Result<u8, Error> {
        loop {
            if let Some(b) = self.framer.take_byte() {
                log_state(&self.peer, b);
                return Ok(b);
            }
            match self.wait(deadline).map_err(|e| Error::io(code, &e))? {
                Woke::Eof if self.framer.buffered() == 0 => return Err(Error::new(Code::CTRLCLOSE)),
                Woke::Timeout => return Err(timeout_err(code)),
                _ => {}
            }
        }
    }

    /// Reads a big-endian i32, or `None` if the peer closed first (3.12
    /// servers send only one int after an auth failure).
    pub(crate) fn recv_i32_or_eof(&mut self, deadline: Instant) -> Result<Option<i32>, Error> {
        loop {
            if let Some(v) = self.framer.take_i32() {
                return Ok(Some(v));
            }
            match self.wait(Some(deadline)).map_err(|e| Error::io(Code::CTRLREAD, &e))? {
                Woke::Eof => return Ok(None),
                Woke::Timeout => return Ok(None),
                _ => {}
            }
        }
    }

    /// Reads a length-prefixed JSON body: the first byte within `first`,
    /// the whole frame within `total` (iperf3's 10 s / 30 s), at most `max`.
    pub(crate) fn recv_json(
        &mut self,
        max: usize,
        first: Duration,
        total: Duration,
        code: Code,
    ) -> Result<Vec<u8>, Error> {
        let start = Instant::now();
        self.max_buffer = self.max_buffer.max(max.saturating_add(64));
        loop {
            match self.framer.take_json(max) {
                Ok(Some(v)) => {
                    wirespeed_core::debug!(4, "{} recv JSON: {}", self.peer, String::from_utf8_lossy(&v));
                    return Ok(v);
                }
                Ok(None) => {}
                Err(FrameError::EmptyJson) => {
                    return Err(Error::msg(
                        code,
                        format!("{}: empty message", code.message().unwrap_or("")),
                    ));
                }
                Err(FrameError::TooLong(n)) => {
                    return Err(Error::msg(
                        code,
                        format!(
                            "{}: message of {n} bytes exceeds the {max}-byte limit",
                            code.message().unwrap_or("")
                        ),
                    ));
                }
            }
            let limit = if self.framer.buffered() == 0 { first } else { total };
            match self.wait(Some(start + limit)).map_err(|e| Error::io(code, &e))? {
                Woke::Eof => {
                    if let Ok(Some(v)) = self.framer.take_json(max) {
                        return Ok(v);
                    }
                    return Err(Error::new(Code::CTRLCLOSE));
                }
                Woke::Timeout => return Err(timeout_err(code)),
                _ => {}
            }
        }
    }

    /// Writes a JSON frame.
    pub(crate) fn send_json(&mut self, body: &str, code: Code) -> Result<(), Error> {
        wirespeed_core::debug!(4, "{} send JSON: {body}", self.peer);
        let frame = wirespeed_proto::iperf3::framing::json_frame(body);
        self.write_all(&frame, Instant::now() + Duration::from_secs(30))
            .map_err(|e| Error::io(code, &e))
    }

    /// Half-closes and reads until EOF or `deadline`, discarding (a client's
    /// goodbye: servers may send a stale SERVER_ERROR after IPERF_DONE).
    pub(crate) fn drain_close(&mut self, deadline: Instant) {
        let _ = self.sock.shutdown(std::net::Shutdown::Write);
        while !self.eof {
            self.framer = Framer::new();
            match self.wait(Some(deadline)) {
                Ok(Woke::Timeout) | Err(_) => break,
                _ => {}
            }
        }
    }
}

fn log_state(peer: &std::net::SocketAddr, b: u8) {
    match wirespeed_proto::iperf3::State::from_byte(b) {
        Some(s) => wirespeed_core::debug!(3, "{peer} recv state {s:?} ({})", b as i8),
        None => wirespeed_core::debug!(1, "{peer} recv unknown control byte {b}"),
    }
}

fn timeout_err(code: Code) -> Error {
    Error::msg(code, format!("{}: Connection timed out", code.message().unwrap_or("")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (Ctrl, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (Ctrl::new(c).unwrap(), s)
    }

    #[test]
    fn json_and_bytes_in_one_segment() {
        let (mut c, mut s) = pair();
        let mut msg = wirespeed_proto::iperf3::framing::json_frame("{\"a\":1}");
        msg.push(14);
        s.write_all(&msg).unwrap();
        let j = c
            .recv_json(100, Duration::from_secs(1), Duration::from_secs(1), Code::RECVRESULTS)
            .unwrap();
        assert_eq!(j, b"{\"a\":1}");
        assert_eq!(
            c.recv_byte(Some(Instant::now() + Duration::from_secs(1)), Code::RECVMESSAGE)
                .unwrap(),
            14
        );
    }

    #[test]
    fn silent_peer_times_out() {
        let (mut c, _s) = pair();
        let t = Instant::now();
        let e = c
            .recv_json(
                100,
                Duration::from_millis(200),
                Duration::from_secs(5),
                Code::RECVPARAMS,
            )
            .unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(e.text().contains("timed out"), "{}", e.text());
    }

    #[test]
    fn oversize_length_is_refused() {
        let (mut c, mut s) = pair();
        s.write_all(&[0x7f, 0xff, 0xff, 0xff]).unwrap();
        let e = c
            .recv_json(8192, Duration::from_secs(1), Duration::from_secs(1), Code::RECVPARAMS)
            .unwrap_err();
        assert!(e.text().contains("exceeds"), "{}", e.text());
    }

    #[test]
    fn eof_is_reported() {
        let (mut c, s) = pair();
        drop(s);
        let e = c
            .recv_byte(Some(Instant::now() + Duration::from_secs(2)), Code::RECVMESSAGE)
            .unwrap_err();
        assert_eq!(e.code, Code::CTRLCLOSE);
    }

    #[test]
    fn json_split_across_segments() {
        let (mut c, mut s) = pair();
        let frame = wirespeed_proto::iperf3::framing::json_frame("{\"tcp\":true}");
        s.write_all(&frame[..4]).unwrap();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            s.write_all(&frame[4..]).unwrap();
            s
        });
        let j = c
            .recv_json(100, Duration::from_secs(2), Duration::from_secs(2), Code::RECVPARAMS)
            .unwrap();
        assert_eq!(j, b"{\"tcp\":true}");
        drop(h.join());
    }

    #[test]
    fn waker_interrupts_wait() {
        let (mut c, _s) = pair();
        let w = c.waker();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            w.wake().unwrap();
        });
        assert_eq!(
            c.wait(Some(Instant::now() + Duration::from_secs(5))).unwrap(),
            Woke::Waker
        );
    }
}
