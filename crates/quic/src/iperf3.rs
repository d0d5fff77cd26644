//! The QUIC data connection of an iperf3 test run with `-q`/`--quic`
//! (docs/protocols.md § QUIC data), both ends, as the iperf3 dialect asks
//! for it (`wirespeed_iperf::dialect::iperf3::quic`, which [`install`]
//! fills in at start): one connection from the client to the server's
//! port, ALPN `wirespeed-iperf3`, the server's certificate self-signed
//! (made once per process), and on it one client-opened bidirectional
//! stream per iperf3 stream, each starting with the test's 37-byte
//! cookie. The engine's stream threads write and read the streams through
//! [`wirespeed_core::engine::pipe::ByteStream`]: each call runs on this
//! connection's tokio runtime (one worker thread) and waits at most what
//! the engine allows, so the engine stays plain threads.
//!
//! A stream's bytes count as sent when quinn takes them into its send
//! buffer; the sender then finishes the stream and the receiver reads to
//! its end, so both ends count the same bytes. That buffer is held near
//! the connection's congestion window (`net::send_window_for`), as the
//! kernel holds a TCP socket's unsent bytes near what the path takes: a
//! fixed large buffer let a sender on a slow path count megabytes as
//! sent in its first second and then spend many seconds past `-t`
//! draining them.

use std::io;
use std::io::IoSliceMut;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime as _, UdpPoller, VarInt};
use tokio::time::timeout;

use crate::tls;
use wirespeed_core::engine::pipe::{ByteStream, PipeSock};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::QuicTotals;
use wirespeed_iperf::dialect::iperf3::quic::{Controller, QuicConn, QuicData, Tuning};

/// The ALPN both ends offer.
pub const ALPN: &[u8] = b"wirespeed-iperf3";
/// How errors name the option.
const WHAT: &str = "--quic";
/// What each end lets the other send ahead of its reads, per stream and
/// in all.
const STREAM_WINDOW: u32 = 16 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;
/// QUIC's idle timeout, and the keep-alive that holds it off between the
/// handshake and the data (the control connection's exchange).
const IDLE: Duration = Duration::from_secs(30);
const KEEP_ALIVE: Duration = Duration::from_secs(2);
/// The application error code of our close.
const DONE: u32 = 0;

/// Installs QUIC for the iperf3 dialect's `--quic` tests.
pub fn install() {
    wirespeed_iperf::dialect::iperf3::quic::install(Arc::new(Quic));
}

/// QUIC for the iperf3 dialect.
struct Quic;

fn failed(e: impl std::fmt::Display) -> Error {
    Error::msg(Code::STREAMCONNECT, format!("unable to connect stream: QUIC: {e}"))
}

/// A runtime of one worker thread for one test's connection.
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("ws-quic-data")
        .enable_all()
        .build()
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))
}

/// Both ends' transport: `peer_opens` streams may be opened by the peer,
/// and the test has `streams` in all.
fn transport(peer_opens: usize, streams: usize, tuning: Tuning) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    let streams = streams.max(1) as u64;
    t.max_concurrent_bidi_streams(VarInt::from_u32(peer_opens.min(u32::MAX as usize) as u32));
    t.max_concurrent_uni_streams(VarInt::from_u32(0));
    t.max_idle_timeout(Some(IDLE.try_into().expect("idle timeout fits")));
    t.keep_alive_interval(Some(KEEP_ALIVE));
    match tuning.window {
        // -w: each stream's window, and the connection's for all of them.
        Some(w) => {
            t.stream_receive_window(VarInt::from_u32(w));
            t.receive_window(VarInt::from_u64(u64::from(w) * streams).unwrap_or(VarInt::MAX));
        }
        None => {
            t.stream_receive_window(VarInt::from_u32(STREAM_WINDOW));
            t.receive_window(VarInt::from_u32(CONNECTION_WINDOW));
        }
    }
    t.send_window(send_cap(tuning, streams));
    t.datagram_receive_buffer_size(None);
    t.congestion_controller_factory(crate::net::controller(tuning.controller));
    t
}

/// The most a sender lets quinn hold: `-w` per stream when given (so a
/// small window holds a sender to it, as a small socket buffer holds a TCP
/// sender), else the default ceiling.
fn send_cap(tuning: Tuning, streams: u64) -> u64 {
    tuning
        .window
        .map_or(crate::net::SEND_WINDOW, |w| u64::from(w).saturating_mul(streams))
}

/// The server's TLS, made once (a self-signed certificate for
/// `localhost`: the client checks the handshake's signature, not the
/// name, as the perf client does).
fn server_crypto() -> Result<Arc<quinn::crypto::rustls::QuicServerConfig>, Error> {
    static MADE: OnceLock<Arc<quinn::crypto::rustls::QuicServerConfig>> = OnceLock::new();
    if let Some(c) = MADE.get() {
        return Ok(c.clone());
    }
    let id = tls::make_self_signed_for(&[], WHAT)?;
    let c = Arc::new(tls::server_crypto_for(id, ALPN, WHAT)?);
    Ok(MADE.get_or_init(|| c).clone())
}

/// The address this host sends to `remote` from.
fn local_ip_for(remote: SocketAddr) -> IpAddr {
    let any = match remote {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    UdpSocket::bind(SocketAddr::new(any, 0))
        .and_then(|s| s.connect(remote).and_then(|_| s.local_addr()))
        .map(|a| a.ip())
        .unwrap_or(any)
}

/// Waits for `work` until `deadline` (then fails saying `late`), giving
/// up early when `stop` says why.
async fn bounded<T>(
    work: impl std::future::Future<Output = Result<T, Error>>,
    deadline: Instant,
    late: &str,
    stop: &dyn Fn() -> Option<Error>,
) -> Result<T, Error> {
    tokio::pin!(work);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(failed(late));
        }
        if let Some(e) = stop() {
            return Err(e);
        }
        if let Ok(r) = timeout(left.min(Duration::from_millis(100)), &mut work).await {
            return r;
        }
    }
}

impl QuicData for Quic {
    fn connect(
        &self,
        server: SocketAddr,
        cookie: &[u8],
        client_sends: &[bool],
        tuning: Tuning,
        deadline: Instant,
        idle: &mut dyn FnMut(Arc<dyn ByteStream>) -> Result<(), Error>,
    ) -> Result<Box<dyn QuicConn>, Error> {
        let rt = runtime()?;
        let socket = crate::net::bind_udp(SocketAddr::new(local_ip_for(server), 0), false)
            .map_err(|e| Error::io(Code::STREAMCONNECT, &e))?;
        // Connected, so that an ICMP "port unreachable" comes back as a
        // refusal (a server with no UDP socket on its port: not ours).
        socket.connect(server).map_err(|e| Error::io(Code::STREAMCONNECT, &e))?;
        let keep = socket.try_clone().map_err(|e| Error::io(Code::STREAMCONNECT, &e))?;
        let socket = Watched::new(&rt, socket, None).map_err(|e| Error::io(Code::STREAMCONNECT, &e))?;
        let mut endpoint = {
            let _in = rt.enter();
            quinn::Endpoint::new_with_abstract_socket(
                quinn::EndpointConfig::default(),
                None,
                socket.clone(),
                Arc::new(quinn::TokioRuntime),
            )
            .map_err(|e| Error::io(Code::STREAMCONNECT, &e))?
        };
        let mut client = quinn::ClientConfig::new(Arc::new(tls::client_crypto_for(ALPN, WHAT)?));
        client.transport_config(Arc::new(transport(0, client_sends.len(), tuning)));
        endpoint.set_default_client_config(client);
        let name = server.ip().to_string();
        let late =
            "no connection and streams within the setup time (the path may drop UDP, or the server not take --quic)";
        let refused = || socket.refused().then(|| not_quic(server));
        // First the connection and, with --latency, the probe stream
        // (opened first: the server knows it by its place), whose idle
        // round trips go before any data stream exists, so before the
        // server (which starts sending in -R once it has them all) sends.
        let opened = rt.block_on(bounded(
            async {
                let conn = endpoint.connect(server, &name).map_err(failed)?.await.map_err(failed)?;
                let probe = match tuning.probes {
                    true => {
                        let (mut s, r) = conn.open_bi().await.map_err(failed)?;
                        let _ = s.set_priority(PROBE_PRIORITY);
                        s.write_all(cookie).await.map_err(failed)?;
                        Some((s, r))
                    }
                    false => None,
                };
                Ok((conn, probe))
            },
            deadline,
            late,
            &refused,
        ));
        let (conn, probe) = match opened {
            Ok(v) => v,
            Err(e) => {
                socket.unwatch();
                endpoint.close(VarInt::from_u32(DONE), b"setup failed");
                return Err(e);
            }
        };
        if let Some((s, r)) = probe {
            let stream: Arc<dyn ByteStream> = Arc::new(Stream {
                rt: rt.handle().clone(),
                conn: conn.clone(),
                cap: send_cap(tuning, client_sends.len().max(1) as u64),
                ordered: true,
                send: Mutex::new(Some(s)),
                recv: Mutex::new(Some(r)),
            });
            if let Err(e) = idle(stream) {
                socket.unwatch();
                endpoint.close(VarInt::from_u32(DONE), b"setup failed");
                return Err(e);
            }
        }
        let opened = rt.block_on(bounded(
            async {
                let mut streams = Vec::with_capacity(client_sends.len());
                for &sends in client_sends {
                    let (mut s, r) = conn.open_bi().await.map_err(failed)?;
                    s.write_all(cookie).await.map_err(failed)?;
                    if !sends {
                        // The server sends on this one: our half ends
                        // with the cookie.
                        s.finish().map_err(failed)?;
                    }
                    streams.push((s, r));
                }
                Ok(streams)
            },
            deadline,
            late,
            &refused,
        ));
        socket.unwatch();
        let streams = match opened {
            Ok(v) => v,
            Err(e) => {
                endpoint.close(VarInt::from_u32(DONE), b"setup failed");
                return Err(e);
            }
        };
        Conn::new(
            rt,
            endpoint,
            conn,
            streams.into_iter().zip(client_sends.iter().copied()),
            &keep,
            server,
            tuning,
        )
        .map(|c| Box::new(c) as Box<dyn QuicConn>)
    }

    fn accept(
        &self,
        sock: UdpSocket,
        first: Vec<u8>,
        from: SocketAddr,
        cookie: &[u8],
        server_sends: &[bool],
        tuning: Tuning,
        deadline: Instant,
        stop: &dyn Fn() -> bool,
    ) -> Result<Box<dyn QuicConn>, Error> {
        let rt = runtime()?;
        {
            // As the perf server's: a fast sender's bursts overflow the
            // default buffers.
            let s = socket2::SockRef::from(&sock);
            let _ = s.set_recv_buffer_size(4 << 20);
            let _ = s.set_send_buffer_size(4 << 20);
        }
        let keep = sock.try_clone().map_err(|e| Error::io(Code::STREAMACCEPT, &e))?;
        let mut config = quinn::ServerConfig::with_crypto(server_crypto()?);
        let n = server_sends.len();
        // The probe stream (`Tuning::probes`) is the client's first.
        let opens = n + usize::from(tuning.probes);
        config.transport_config(Arc::new(transport(opens, n, tuning)));
        let endpoint = {
            let _in = rt.enter();
            let socket = Watched::new(&rt, sock, Some((first, from))).map_err(|e| Error::io(Code::STREAMACCEPT, &e))?;
            quinn::Endpoint::new_with_abstract_socket(
                quinn::EndpointConfig::default(),
                Some(config),
                socket,
                Arc::new(quinn::TokioRuntime),
            )
            .map_err(|e| Error::io(Code::STREAMACCEPT, &e))?
        };
        let accepted = rt.block_on(bounded(
            async {
                let incoming = endpoint.accept().await.ok_or_else(|| failed("the endpoint closed"))?;
                let conn = incoming.await.map_err(failed)?;
                let mut slots: Vec<Option<(quinn::SendStream, quinn::RecvStream)>> = (0..opens).map(|_| None).collect();
                for _ in 0..opens {
                    let (s, mut r) = conn.accept_bi().await.map_err(failed)?;
                    // Streams are taken in the order the client opened
                    // them: the i-th is the test's i-th stream (after the
                    // probe stream, which comes first).
                    let i = s.id().index() as usize;
                    if i >= opens || slots[i].is_some() {
                        return Err(failed(format!("stream {i} is not one of the test's {opens}")));
                    }
                    let mut got = vec![0u8; cookie.len()];
                    r.read_exact(&mut got).await.map_err(failed)?;
                    if got != cookie {
                        return Err(failed("a stream did not start with the test's cookie"));
                    }
                    if tuning.probes && i == 0 {
                        // Echoed from now on: the client takes its idle
                        // round trips before it opens the others. Ends
                        // with the stream, or with the runtime when the
                        // test's connection is dropped.
                        tokio::spawn(echo(s, r));
                        continue;
                    }
                    slots[i] = Some((s, r));
                }
                let streams: Vec<_> = slots.into_iter().flatten().collect();
                Ok((conn, streams))
            },
            deadline,
            "no connection and streams within the setup time",
            &|| stop().then(|| Error::new(Code::SERVERTERM)),
        ));
        let (conn, mut streams) = match accepted {
            Ok(v) => v,
            Err(e) => {
                endpoint.close(VarInt::from_u32(DONE), b"setup failed");
                return Err(e);
            }
        };
        for ((s, _), &sends) in streams.iter_mut().zip(server_sends) {
            if !sends {
                // The client sends on this one: our half carries nothing.
                let _ = s.finish();
            }
        }
        Conn::new(
            rt,
            endpoint,
            conn,
            streams.into_iter().zip(server_sends.iter().copied()),
            &keep,
            from,
            tuning,
        )
        .map(|c| Box::new(c) as Box<dyn QuicConn>)
    }
}

/// What a probe stream's echo holds at a time.
const ECHO_BUF: usize = 4096;
/// The probe stream goes before the data streams (quinn's default is 0):
/// a probe waits behind the path's queue, not behind our own send buffer.
const PROBE_PRIORITY: i32 = 1;

/// The server's end of the probe stream: every byte back, in order, as it
/// comes (a probe is a bounceback message; the client reads its own
/// message back). One buffer of [`ECHO_BUF`]: a client that does not read
/// its echoes stops its own probes, through QUIC's flow control.
async fn echo(mut s: quinn::SendStream, mut r: quinn::RecvStream) {
    let _ = s.set_priority(PROBE_PRIORITY);
    let mut buf = vec![0u8; ECHO_BUF];
    while let Ok(Some(n)) = r.read(&mut buf).await {
        if s.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
    let _ = s.finish();
}

/// One test's connection.
struct Conn {
    /// Dropped last (see `Drop`).
    rt: Option<tokio::runtime::Runtime>,
    endpoint: quinn::Endpoint,
    conn: quinn::Connection,
    streams: Vec<PipeSock>,
    closed: bool,
    /// The controller it runs (`-C`).
    controller: Controller,
}

impl Conn {
    fn new(
        rt: tokio::runtime::Runtime,
        endpoint: quinn::Endpoint,
        conn: quinn::Connection,
        opened: impl ExactSizeIterator<Item = ((quinn::SendStream, quinn::RecvStream), bool)>,
        sock: &UdpSocket,
        peer: SocketAddr,
        tuning: Tuning,
    ) -> Result<Conn, Error> {
        let cap = send_cap(tuning, opened.len().max(1) as u64);
        let mut streams = Vec::with_capacity(opened.len());
        for ((s, r), sends) in opened {
            let io = Arc::new(Stream {
                rt: rt.handle().clone(),
                conn: conn.clone(),
                cap,
                ordered: false,
                send: Mutex::new(sends.then_some(s)),
                recv: Mutex::new((!sends).then_some(r)),
            });
            streams.push(PipeSock {
                io,
                sock: sock.try_clone().map_err(|e| Error::io(Code::STREAMCONNECT, &e))?,
                peer,
            });
        }
        Ok(Conn {
            rt: Some(rt),
            endpoint,
            conn,
            streams,
            closed: false,
            controller: tuning.controller,
        })
    }
}

impl QuicConn for Conn {
    fn take_streams(&mut self) -> Vec<PipeSock> {
        std::mem::take(&mut self.streams)
    }

    fn totals(&self) -> QuicTotals {
        let p = self.conn.stats().path;
        QuicTotals {
            rtt_us: p.rtt.as_micros() as u64,
            min_rtt_us: p.min_rtt.as_micros() as u64,
            cwnd: p.cwnd,
            sent_packets: p.sent_packets,
            lost_packets: p.lost_packets,
            lost_bytes: p.lost_bytes,
            congestion_events: p.congestion_events,
            congestion: self.controller.name().to_string(),
        }
    }

    fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.conn.close(VarInt::from_u32(DONE), b"done");
        if let Some(rt) = &self.rt {
            let endpoint = self.endpoint.clone();
            let _ = rt.block_on(async { timeout(crate::net::CLOSE_SENT, endpoint.wait_idle()).await });
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if !self.closed {
            self.conn.close(VarInt::from_u32(DONE), b"ended");
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// One QUIC stream as the engine sees it: this end's half that carries
/// the test's bytes.
struct Stream {
    rt: tokio::runtime::Handle,
    /// The connection, whose send buffer each write sizes, up to `cap`.
    conn: quinn::Connection,
    cap: u64,
    /// Reads in the stream's order (the probe stream) or in any order (a
    /// data stream, below).
    ordered: bool,
    send: Mutex<Option<quinn::SendStream>>,
    recv: Mutex<Option<quinn::RecvStream>>,
}

// The timers are made inside the runtime (an async block's first poll),
// not on the calling thread, which has no runtime of its own.
fn timed_out() -> io::Error {
    io::ErrorKind::TimedOut.into()
}

/// A stream's failure as the engine reports it. quinn's own words for a
/// lost connection are "connection lost", whatever lost it; the
/// connection's error says why (the peer's close and its reason, a
/// timeout, our own close), so it is added.
fn lost(e: quinn::ConnectionError) -> io::Error {
    io::Error::other(format!("connection lost: {e}"))
}

fn write_failed(e: quinn::WriteError) -> io::Error {
    match e {
        quinn::WriteError::ConnectionLost(c) => lost(c),
        e => io::Error::other(e),
    }
}

fn read_failed(e: quinn::ReadError) -> io::Error {
    match e {
        quinn::ReadError::ConnectionLost(c) => lost(c),
        e => io::Error::other(e),
    }
}

impl ByteStream for Stream {
    fn write(&self, buf: &[u8], wait: Duration) -> io::Result<usize> {
        let mut g = self.send.lock().unwrap_or_else(|p| p.into_inner());
        let s = g.as_mut().ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        crate::net::hold_send_window(&self.conn, self.cap);
        match self.rt.block_on(async { timeout(wait, s.write(buf)).await }) {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(write_failed(e)),
            Err(_) => Err(timed_out()),
        }
    }

    fn read(&self, buf: &mut [u8], wait: Duration) -> io::Result<usize> {
        let mut g = self.recv.lock().unwrap_or_else(|p| p.into_inner());
        let r = g.as_mut().ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        // In any order: a receiver of a `-q` test counts bytes (`-F` is
        // refused with `-q`), and reading in order left every piece
        // behind a loss waiting a round trip in quinn's reassembly
        // buffer, which closes the connection past 1,024 pieces ("too
        // many gaps in stream buffer"): a slow start that overshot a
        // deep queue on a 200 ms path ended the test.
        match self
            .rt
            .block_on(async { timeout(wait, r.read_chunk(buf.len(), self.ordered)).await })
        {
            Ok(Ok(Some(c))) => {
                let n = c.bytes.len().min(buf.len());
                buf[..n].copy_from_slice(&c.bytes[..n]);
                Ok(n)
            }
            Ok(Ok(None)) => Ok(0),
            Ok(Err(e)) => Err(read_failed(e)),
            Err(_) => Err(timed_out()),
        }
    }

    fn finish(&self) {
        let mut g = self.send.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = g.as_mut() {
            let _ = s.finish();
        }
    }
}

/// The refusal of a server whose port has no UDP socket: ICMP said so.
fn not_quic(server: SocketAddr) -> Error {
    failed(format!(
        "{server} refused UDP (port unreachable): that server takes no QUIC; only a wirespeed server answers --quic (iperf3 ignores it)"
    ))
}

/// Either end's UDP socket as quinn sees it. The server's first datagram
/// was read from the shared port by the iperf acceptor: it is given to
/// quinn first. The client's socket is connected to the server, and until
/// the connection is up each send and receive first takes the socket's
/// pending error: a refusal (ICMP port unreachable) is noted for the
/// setup's wait (quinn's own socket calls pass over errors, so the
/// refusal would otherwise be lost and the client wait its whole setup
/// time).
#[derive(Debug)]
struct Watched {
    inner: Arc<dyn AsyncUdpSocket>,
    first: Mutex<Option<(Vec<u8>, SocketAddr)>>,
    /// Whether `first` still holds it (every receive after looks at this
    /// alone).
    first_pending: std::sync::atomic::AtomicBool,
    /// A handle on the client's socket while its errors are watched.
    watch: Mutex<Option<UdpSocket>>,
    /// Whether they are: every send and receive looks at this alone once
    /// the connection is up (and on the server, always).
    watching: std::sync::atomic::AtomicBool,
    refused: std::sync::atomic::AtomicBool,
}

impl Watched {
    fn new(
        rt: &tokio::runtime::Runtime,
        sock: UdpSocket,
        first: Option<(Vec<u8>, SocketAddr)>,
    ) -> io::Result<Arc<Watched>> {
        let _in = rt.enter();
        let watch = if first.is_none() { Some(sock.try_clone()?) } else { None };
        Ok(Arc::new(Watched {
            inner: quinn::TokioRuntime.wrap_udp_socket(sock)?,
            first_pending: std::sync::atomic::AtomicBool::new(first.is_some()),
            first: Mutex::new(first),
            watching: std::sync::atomic::AtomicBool::new(watch.is_some()),
            watch: Mutex::new(watch),
            refused: Default::default(),
        }))
    }

    /// Whether the peer's host said nothing listens on its UDP port.
    fn refused(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The connection is up: errors are quinn's alone from now on.
    fn unwatch(&self) {
        self.watching.store(false, std::sync::atomic::Ordering::Relaxed);
        self.watch.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// Takes the socket's pending error while watched.
    fn look(&self) {
        if !self.watching.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let g = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = g.as_ref()
            && let Ok(Some(e)) = s.take_error()
            && e.kind() == io::ErrorKind::ConnectionRefused
        {
            self.refused.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

impl AsyncUdpSocket for Watched {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.look();
        self.inner.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let first = if self.first_pending.swap(false, std::sync::atomic::Ordering::Relaxed) {
            self.first.lock().unwrap_or_else(|p| p.into_inner()).take()
        } else {
            None
        };
        if let Some((d, from)) = first
            && let (Some(buf), Some(m)) = (bufs.first_mut(), meta.first_mut())
            && d.len() <= buf.len()
        {
            buf[..d.len()].copy_from_slice(&d);
            *m = RecvMeta {
                addr: from,
                len: d.len(),
                stride: d.len(),
                ecn: None,
                dst_ip: None,
            };
            return Poll::Ready(Ok(1));
        }
        self.look();
        self.inner.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lost connection says why: seen across a 200 ms path whose queue
    /// overflowed in slow start, the receiver closed the connection
    /// ("too many gaps in stream buffer") and both ends said only
    /// "connection lost".
    #[test]
    fn a_lost_connection_says_why() {
        let closed = || {
            quinn::ConnectionError::ConnectionClosed(quinn::ConnectionClose {
                error_code: quinn::TransportErrorCode::INTERNAL_ERROR,
                frame_type: None,
                reason: bytes::Bytes::from_static(b"too many gaps in stream buffer"),
            })
        };
        let w = write_failed(quinn::WriteError::ConnectionLost(closed())).to_string();
        assert!(w.starts_with("connection lost: aborted by peer: "), "{w}");
        assert!(w.ends_with(": too many gaps in stream buffer"), "{w}");
        let r = read_failed(quinn::ReadError::ConnectionLost(quinn::ConnectionError::TimedOut)).to_string();
        assert_eq!(r, "connection lost: timed out");
        // Other failures keep quinn's words.
        let reset = read_failed(quinn::ReadError::Reset(VarInt::from_u32(7))).to_string();
        assert_eq!(reset, quinn::ReadError::Reset(VarInt::from_u32(7)).to_string());
    }
}
