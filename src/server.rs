//! The server: one port, many tests at once.
//!
//! An acceptor thread owns the listener and every connection that has not
//! yet said who it is and what it wants. It reads without blocking (each
//! stage has iperf3's 10 s first-byte / 30 s total deadline), so an idle,
//! slow or half-open peer costs a descriptor for a few seconds and never
//! keeps anyone else out. A complete cookie either belongs to a test
//! collecting its data streams, or starts a parameter exchange, which the
//! acceptor also reads (at most 8 KiB); only a client whose parameters have
//! arrived gets a test thread. An iperf 2 client's header is read the same
//! way before its thread starts. The access policy (`--allow`/`--deny`) is
//! applied to every connection once its dialect is known; over
//! `--max-tests`, the client gets iperf3's busy answer.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::TcpListener as MioListener;
use mio::{Events, Interest, Poll, Token};

use crate::config::{Protocol, TestConfig};
use crate::ctrl::{Ctrl, Polled, Woke};
use crate::error::{Code, Error};
use crate::metrics::{Metrics, MetricsSink, Refusal};
use crate::net;
use crate::proto::iperf2::header::{ClientHeader, MAX_TCP_HEADER, Need};
use crate::proto::iperf3::cookie::could_be_cookie;
use crate::proto::iperf3::framing::{FrameError, server_error_frame};
use crate::proto::iperf3::machine::{ServerAction, ServerMachine};
use crate::proto::iperf3::params::{Limits, decode_params, validate};
use crate::proto::iperf3::udp::{HELLO_REPLY, Hello, parse_hello};
use crate::proto::iperf3::{COOKIE_LEN, Cookie, MAX_PARAMS_LEN, Results, State, max_results_len};
use crate::engine::run::{Ended, RunSpec, Steering, Turn};
use crate::events::*;
use crate::report::iperf3_json::JsonSink;
use crate::report::{Output, Reporter, Sink};
use crate::session::{DataSock, DataStream, LocalOpts, Session, fds_per_stream, reserve_fds, stream_id, stream_roles};

const LISTENER: Token = Token(0);
const UDP_LISTENER: Token = Token(1);
/// Datagrams the acceptor reads from the UDP port per turn, so a flood of
/// junk there cannot starve new TCP connections.
const UDP_READS_PER_TURN: usize = 4096;
const FIRST_BYTE: Duration = Duration::from_secs(10);
const WHOLE_MSG: Duration = Duration::from_secs(30);
/// How long an iperf 2 client has for its header after its first bytes (2.1.8: 4 s).
const IPERF2_HEADER: Duration = Duration::from_secs(4);
/// Connections the acceptor holds before they have identified themselves
/// (and sent their parameters). Past this, the one that has waited longest
/// is closed, so a flood of idle connections cannot crowd out real clients.
pub const MAX_PENDING: usize = 1024;
/// Listen backlog: large, so bursts of connections (many streams, many
/// clients) are never reset.
pub const BACKLOG: i32 = 4096;

/// What the acceptor and the tests share.
struct Shared {
    cfg: TestConfig,
    out: Output,
    registry: Mutex<Registry>,
    active: AtomicUsize,
    tests_started: AtomicU64,
    terminate: AtomicBool,
    done_tx: Mutex<mpsc::Sender<TestOutcome>>,
    /// The server's port (TCP and UDP).
    port: u16,
    /// Why UDP tests cannot run, if the UDP port could not be opened.
    udp_error: Option<Error>,
    /// `--metrics`: the registry tests and refusals report into.
    metrics: Option<Arc<Metrics>>,
    /// `--allow`/`--deny`.
    policy: crate::policy::AccessPolicy,
    /// `--rsa-private-key-path`: clients must authenticate.
    auth: Option<crate::auth::ServerAuth>,
}

#[derive(Default)]
struct Registry {
    /// Tests collecting their data streams, by cookie.
    collecting: HashMap<Cookie, SyncSender<DataSock>>,
    /// The test collecting UDP streams from each client address. iperf3's
    /// hellos carry no cookie, only their address says whose they are, so
    /// one test per address at a time.
    udp: HashMap<IpAddr, UdpSlot>,
    /// Cookies of every running test.
    running: HashSet<Cookie>,
}

/// A test waiting for the UDP streams of its client.
struct UdpSlot {
    cookie: Cookie,
    /// The client is wirespeed: its hellos carry the cookie, and plain
    /// ones from its address are someone else's.
    needs_cookie: bool,
    /// Where the client's hellos go (the control connection's local address).
    local: SocketAddr,
    tx: SyncSender<DataSock>,
    /// Streams handed over, so a repeated hello (the reply was lost) gets
    /// its reply again instead of a second socket.
    given: Vec<(SocketAddr, UdpSocket)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestOutcome {
    /// The test ran (successfully or not).
    Ran,
    /// Refused before it started (does not count for `-1`).
    Refused,
}

/// A server bound to its port.
pub struct Server {
    listener: TcpListener,
    udp: Option<UdpSocket>,
    port: u16,
    shared: Arc<Shared>,
    done_rx: Receiver<TestOutcome>,
    banner: Reporter,
    /// Serves the iperf 2 clients that connect to this port.
    iperf2: Arc<crate::iperf2::server::ServerCtx>,
}

/// A connection the acceptor is still reading.
struct Pending {
    stream: mio::net::TcpStream,
    peer: SocketAddr,
    /// The first bytes (a cookie, or an iperf 2 header).
    buf: Vec<u8>,
    /// When the current stage began.
    since: Instant,
    stage: Stage,
}

/// What the acceptor is waiting for on a connection.
enum Stage {
    /// The first bytes: an iperf3 cookie or iperf 2's header / payload.
    Prefix,
    /// The rest of an iperf 2 client's header.
    Iperf2Header,
    /// PARAM_EXCHANGE was sent; the parameter JSON is arriving.
    Params {
        cookie: Cookie,
        framer: crate::proto::iperf3::Framer,
    },
}

impl Pending {
    /// Whether this connection is past its stage's deadline at `now`.
    fn expired(&self, now: Instant) -> bool {
        let limit = match &self.stage {
            Stage::Prefix if self.buf.is_empty() => FIRST_BYTE,
            Stage::Prefix => WHOLE_MSG,
            Stage::Iperf2Header => IPERF2_HEADER,
            Stage::Params { framer, .. } if framer.buffered() == 0 => FIRST_BYTE,
            Stage::Params { .. } => WHOLE_MSG,
        };
        now.duration_since(self.since) >= limit
    }
}

/// Where a connection goes once its prefix is complete.
enum Next {
    /// It has another stage to go through in the acceptor.
    Stay,
    /// To the test collecting streams with its cookie.
    Stream(SyncSender<DataSock>),
    /// ACCESS_DENIED, counted as this refusal.
    Refuse(Refusal),
    /// Its stage is complete: to a test thread or the iperf 2 server.
    HandOn,
    /// Closed without a word.
    Close,
}

/// What reading a pending connection came to.
enum Progress {
    /// Nothing more to do until it is readable again.
    NotYet,
    /// The stage is complete.
    Complete,
    /// The bytes cannot be what the stage expects.
    Malformed(String),
    /// The peer closed or the socket failed.
    Gone,
}

impl Server {
    /// Binds the listening socket.
    pub fn bind(cfg: &TestConfig, out: Output) -> Result<Server, Error> {
        let listener = net::listen_tcp(
            cfg.net.bind.as_deref(),
            cfg.port,
            cfg.net.family,
            cfg.params.mptcp,
            BACKLOG,
        )?;
        if let Some(dev) = &cfg.net.bind_dev {
            socket2::SockRef::from(&listener)
                .bind_device(Some(dev.as_bytes()))
                .map_err(|e| Error::io(Code::BINDDEV, &e))?;
        }
        let port = listener.local_addr().map_err(|e| Error::io(Code::LISTEN, &e))?.port();
        // UDP streams say hello on the same port number. Without it TCP
        // tests still run; UDP tests are refused with the reason.
        let (udp, udp_error) = match net::listen_udp(cfg.net.bind.as_deref(), port, cfg.net.family) {
            Ok(u) => {
                if let Some(dev) = &cfg.net.bind_dev {
                    let _ = socket2::SockRef::from(&u).bind_device(Some(dev.as_bytes()));
                }
                (Some(u), None)
            }
            Err(e) => (None, Some(e)),
        };
        let auth = crate::auth::ServerAuth::from_config(&cfg.server)?;
        let (done_tx, done_rx) = mpsc::channel();
        let banner = if cfg.output.json {
            Reporter::new()
        } else {
            Reporter::for_config(cfg, out.clone(), Side::Server)
        };
        let policy = crate::policy::AccessPolicy::from_config(cfg)?;
        let iperf2 = crate::iperf2::server::ServerCtx::for_iperf3_server(cfg, out.clone(), policy.clone());
        Ok(Server {
            listener,
            udp,
            port,
            iperf2,
            shared: Arc::new(Shared {
                cfg: cfg.clone(),
                out,
                registry: Mutex::new(Registry::default()),
                active: AtomicUsize::new(0),
                tests_started: AtomicU64::new(0),
                terminate: AtomicBool::new(false),
                done_tx: Mutex::new(done_tx),
                port,
                udp_error,
                metrics: None,
                policy,
                auth,
            }),
            done_rx,
            banner,
        })
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Reports tests and refusals into `m` (`--metrics`). Call before `run`.
    pub fn with_metrics(mut self, m: Arc<Metrics>) -> Server {
        self.iperf2.set_metrics(m.clone());
        if let Some(s) = Arc::get_mut(&mut self.shared) {
            s.metrics = Some(m);
        }
        self
    }

    fn refused(&self, why: Refusal) {
        if let Some(m) = &self.shared.metrics {
            m.refused(why);
        }
    }

    /// Serves until a signal arrives (its number stored in `signal`), or
    /// after one test with `-1`.
    pub fn run(mut self, signal: Arc<AtomicUsize>) -> Result<(), Error> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| Error::io(Code::LISTEN, &e))?;
        let std_listener = self.listener.try_clone().map_err(|e| Error::io(Code::LISTEN, &e))?;
        let mut listener = MioListener::from_std(std_listener);
        let mut poll = Poll::new().map_err(|e| Error::io(Code::LISTEN, &e))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(|e| Error::io(Code::LISTEN, &e))?;
        let udp = match self.udp.take() {
            Some(u) => {
                let mut u = mio::net::UdpSocket::from_std(u);
                poll.registry()
                    .register(&mut u, UDP_LISTENER, Interest::READABLE)
                    .map_err(|e| Error::io(Code::STREAMLISTEN, &e))?;
                Some(u)
            }
            None => None,
        };
        let mut udp_more = false;
        let mut accept_again = false;
        let mut events = Events::with_capacity(256);
        let mut pending: HashMap<Token, Pending> = HashMap::new();
        let mut next_token = 2usize;
        let mut idle_since = Instant::now();
        self.announce();
        loop {
            if signal.load(Relaxed) != 0 {
                self.shutdown(pending);
                return Ok(());
            }
            // Hellos left unread last turn: look again at once.
            let timeout = if udp_more {
                Duration::ZERO
            } else if accept_again {
                // Out of descriptors: try the listener again shortly.
                Duration::from_millis(50)
            } else {
                Duration::from_millis(200)
            };
            match poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(Code::SELECT, &e)),
            }
            if udp_more && let Some(u) = &udp {
                udp_more = self.udp_hellos(u);
            }
            for ev in events.iter() {
                if ev.token() == UDP_LISTENER {
                    if let Some(u) = &udp {
                        udp_more = self.udp_hellos(u);
                    }
                } else if ev.token() == LISTENER {
                    accept_again = self.accept(&listener, &poll, &mut pending, &mut next_token);
                } else if let Some(p) = pending.get_mut(&ev.token()) {
                    let r = read_pending(p);
                    self.advance(ev.token(), r, &poll, &mut pending);
                }
            }
            // The listener failed (out of descriptors): try again each turn,
            // without waiting for a new connection to announce itself.
            if accept_again {
                accept_again = self.accept(&listener, &poll, &mut pending, &mut next_token);
            }
            // Deadlines on connections that have not said what they want.
            let now = Instant::now();
            let expired: Vec<Token> = pending
                .iter()
                .filter(|(_, p)| p.expired(now))
                .map(|(t, _)| *t)
                .collect();
            for t in expired {
                if let Some(p) = pending.remove(&t) {
                    self.give_up(p, None);
                }
            }
            // Finished tests.
            let mut one_off_done = false;
            while let Ok(outcome) = self.done_rx.try_recv() {
                if self.shared.cfg.server.one_off && outcome == TestOutcome::Ran {
                    one_off_done = true;
                }
                if self.shared.active.load(Relaxed) == 0 {
                    idle_since = Instant::now();
                    if !one_off_done {
                        self.announce();
                    }
                }
            }
            if one_off_done {
                self.shutdown(pending);
                return Ok(());
            }
            if let Some(idle) = self.shared.cfg.server.idle_timeout
                && self.shared.active.load(Relaxed) == 0
                && pending.is_empty()
                && idle_since.elapsed() >= idle
            {
                if self.shared.cfg.server.one_off {
                    return Ok(());
                }
                // iperf3 restarts its listener here; ours never wedges,
                // so the restart is just a fresh idle period.
                idle_since = Instant::now();
            }
        }
    }

    fn announce(&mut self) {
        let n = self.shared.tests_started.load(Relaxed) + 1;
        self.banner.emit(Event::Listening(Box::new(Listening {
            port: self.port,
            test_no: n,
            ..Listening::default()
        })));
    }

    fn shutdown(&self, pending: HashMap<Token, Pending>) {
        // Clients in the middle of the parameter exchange hear why we go.
        for (_, mut p) in pending {
            if matches!(p.stage, Stage::Params { .. }) {
                let _ = p.stream.write(&[State::ServerTerminate.to_byte()]);
            }
        }
        self.shared.terminate.store(true, Relaxed);
        self.iperf2.stop.store(true, Relaxed);
        let deadline = Instant::now() + Duration::from_secs(5);
        while (self.shared.active.load(Relaxed) > 0 || self.iperf2.active() > 0) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Reads datagrams on the UDP port: a hello from a client whose test is
    /// collecting UDP streams gets a socket of its own (bound to the port,
    /// connected to the client's stream socket), the reply from it, and is
    /// handed to the test. Anything else is dropped. Returns true if more
    /// may be waiting (the per-turn limit was hit).
    fn udp_hellos(&self, udp: &mio::net::UdpSocket) -> bool {
        // Room for a whole datagram: an iperf 2 client's first one is data.
        let mut buf = vec![0u8; 65536];
        for _ in 0..UDP_READS_PER_TURN {
            let (n, from) = match udp.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            };
            let Some(hello) = parse_hello(&buf[..n.min(buf.len())]) else {
                // Not iperf3's: an iperf 2 UDP client starting a test, or junk.
                if let Ok(local) = udp.local_addr() {
                    crate::iperf2::server::udp_datagram(&self.iperf2, local, from, &buf[..n.min(buf.len())]);
                }
                continue;
            };
            let from = net::canonical(from);
            let Ok(mut reg) = self.shared.registry.lock() else {
                return false;
            };
            let Some(slot) = reg.udp.get_mut(&from.ip()) else {
                continue;
            };
            let ours = match hello {
                Hello::WithCookie(c) => c == slot.cookie.to_wire(),
                Hello::Plain => !slot.needs_cookie,
            };
            if !ours {
                continue;
            }
            if let Some((_, s)) = slot.given.iter().find(|(a, _)| *a == from) {
                let _ = s.send(&HELLO_REPLY);
                continue;
            }
            let Ok(sock) = net::udp_stream_socket(slot.local, from) else {
                continue;
            };
            let Ok(keep) = sock.try_clone() else { continue };
            if slot.tx.try_send(DataSock::Udp(sock)).is_ok() {
                let _ = keep.send(&HELLO_REPLY);
                slot.given.push((from, keep));
            }
        }
        true
    }

    /// Accepts every waiting connection. Returns true if the listener
    /// failed (out of descriptors, ...) and should be tried again.
    fn accept(
        &self,
        listener: &MioListener,
        poll: &Poll,
        pending: &mut HashMap<Token, Pending>,
        next_token: &mut usize,
    ) -> bool {
        loop {
            match listener.accept() {
                Ok((mut stream, peer)) => {
                    if pending.len() >= MAX_PENDING {
                        evict_oldest(pending, |p| self.give_up(p, None));
                    }
                    let t = Token(*next_token);
                    *next_token = next_token.wrapping_add(1).max(2);
                    if poll.registry().register(&mut stream, t, Interest::READABLE).is_ok() {
                        pending.insert(
                            t,
                            Pending {
                                stream,
                                peer,
                                buf: Vec::with_capacity(COOKIE_LEN),
                                since: Instant::now(),
                                stage: Stage::Prefix,
                            },
                        );
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // Out of descriptors: the connection that has waited
                    // longest makes room; the client behind retries.
                    evict_oldest(pending, |p| self.give_up(p, None));
                    return true;
                }
            }
        }
    }

    /// Acts on what reading a pending connection came to.
    fn advance(&self, t: Token, r: Progress, poll: &Poll, pending: &mut HashMap<Token, Pending>) {
        match r {
            Progress::NotYet => {}
            Progress::Gone => {
                if let Some(p) = pending.remove(&t) {
                    self.give_up(p, Some(Error::new(Code::CTRLCLOSE)));
                }
            }
            Progress::Malformed(why) => {
                if let Some(p) = pending.remove(&t) {
                    let e = Error::msg(Code::RECVPARAMS, why);
                    self.give_up(p, Some(e));
                }
            }
            Progress::Complete => {
                let Some(p) = pending.get_mut(&t) else { return };
                let next = match p.stage {
                    Stage::Prefix => self.identified(p),
                    Stage::Iperf2Header | Stage::Params { .. } => Next::HandOn,
                };
                if let Next::Stay = next {
                    // The next stage's bytes may be here already.
                    let r = read_pending(p);
                    return self.advance(t, r, poll, pending);
                }
                let Some(mut p) = pending.remove(&t) else { return };
                let _ = poll.registry().deregister(&mut p.stream);
                self.leave(p, next);
            }
        }
    }

    /// A complete prefix: what to do with the connection.
    fn identified(&self, p: &mut Pending) -> Next {
        if !could_be_cookie(&p.buf) {
            // iperf 2 (header words or a -C client's digits) or junk. The
            // header of a client we serve is read here first; a refused one
            // goes to the iperf 2 server at once for 2.1.8's drop line.
            if !self.shared.policy.permits(p.peer.ip()) {
                return Next::HandOn;
            }
            p.stage = Stage::Iperf2Header;
            p.since = Instant::now();
            return Next::Stay;
        }
        let mut wire = [0u8; COOKIE_LEN];
        wire.copy_from_slice(&p.buf[..COOKIE_LEN]);
        let Some(cookie) = Cookie::from_wire(&wire) else {
            return Next::Close;
        };
        if !self.shared.policy.permits(p.peer.ip()) {
            return Next::Refuse(Refusal::Policy);
        }
        let Ok(mut reg) = self.shared.registry.lock() else {
            return Next::Close;
        };
        if let Some(tx) = reg.collecting.get(&cookie) {
            return Next::Stream(tx.clone());
        }
        if reg.running.contains(&cookie) {
            return Next::Refuse(Refusal::DuplicateCookie);
        }
        if self.shared.active.load(Relaxed) >= self.shared.cfg.server.max_tests as usize {
            return Next::Refuse(Refusal::Busy);
        }
        // A new test: ask for its parameters, and hold its cookie so a
        // second connection with it is refused meanwhile.
        if !matches!(p.stream.write(&[State::ParamExchange.to_byte()]), Ok(1)) {
            return Next::Close;
        }
        reg.running.insert(cookie);
        p.stage = Stage::Params {
            cookie,
            framer: crate::proto::iperf3::Framer::new(),
        };
        p.since = Instant::now();
        Next::Stay
    }

    /// A connection leaves the acceptor: to a collecting test, a new test
    /// thread, the iperf 2 server, a refusal, or closed.
    fn leave(&self, p: Pending, next: Next) {
        let Pending {
            stream,
            peer,
            buf,
            stage,
            ..
        } = p;
        let cookie = match &stage {
            Stage::Params { cookie, .. } => Some(*cookie),
            _ => None,
        };
        let Ok(stream) = mio_to_std(stream) else {
            if let Some(c) = cookie {
                self.release(c);
            }
            return;
        };
        match (next, stage) {
            (Next::Stream(tx), _) => {
                let _ = tx.try_send(DataSock::Tcp(stream));
            }
            (Next::Refuse(why), _) => {
                deny(stream);
                self.refused(why);
                if why == Refusal::Policy && !self.shared.cfg.output.json {
                    let (h, port) = crate::util::split_addr(&peer);
                    self.shared
                        .out
                        .write(&format!("Refused connection from {h}, port {port} (access policy)\n"));
                }
            }
            (Next::HandOn, Stage::Params { cookie, mut framer }) => {
                let Ok(Some(body)) = framer.take_json(MAX_PARAMS_LEN) else {
                    self.release(cookie);
                    return;
                };
                if self.shared.active.load(Relaxed) >= self.shared.cfg.server.max_tests as usize {
                    // Others finished their exchange first.
                    self.release(cookie);
                    deny(stream);
                    self.refused(Refusal::Busy);
                    return;
                }
                self.start_test(stream, cookie, peer, body);
            }
            (Next::HandOn, _) => {
                crate::iperf2::server::serve_connection(self.iperf2.clone(), stream, peer, buf);
            }
            (Next::Stay | Next::Close, _) => {
                if let Some(c) = cookie {
                    self.release(c);
                }
            }
        }
    }

    /// A pending connection is dropped: its deadline passed (`why` None),
    /// it was evicted, it closed, or it sent what cannot be parameters. A
    /// client in the parameter exchange is told why (SERVER_ERROR), as a
    /// test thread would.
    fn give_up(&self, p: Pending, why: Option<Error>) {
        let Pending { mut stream, stage, .. } = p;
        match stage {
            Stage::Params { cookie, .. } => {
                self.release(cookie);
                let e = why.unwrap_or_else(|| {
                    let words = Code::RECVPARAMS.message().unwrap_or("");
                    Error::msg(Code::RECVPARAMS, format!("{words}: Connection timed out"))
                });
                if e.code != Code::CTRLCLOSE {
                    let _ = stream.write(&server_error_frame(e.code.0, e.errno.unwrap_or(0)));
                }
                self.refused(Refusal::of_params_error(&e));
                Reporter::for_config(&self.shared.cfg, self.shared.out.clone(), Side::Server).emit(Event::Error(e));
                if let Ok(tx) = self.shared.done_tx.lock() {
                    let _ = tx.send(TestOutcome::Refused);
                }
            }
            Stage::Iperf2Header => self.refused(Refusal::Unrecognized),
            Stage::Prefix => {}
        }
    }

    /// Frees a cookie held for a parameter exchange that did not become a test.
    fn release(&self, cookie: Cookie) {
        if let Ok(mut r) = self.shared.registry.lock() {
            r.running.remove(&cookie);
        }
    }

    /// Starts a test thread for a client whose parameters arrived.
    fn start_test(&self, stream: TcpStream, cookie: Cookie, peer: SocketAddr, params: Vec<u8>) {
        self.shared.active.fetch_add(1, Relaxed);
        // The test's number, as the banner announced it (names its report).
        let test_no = self.shared.tests_started.fetch_add(1, Relaxed) + 1;
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new().name("ws-test".into()).spawn(move || {
            let outcome = serve_test(&shared, stream, cookie, peer, test_no, params);
            if let Ok(mut r) = shared.registry.lock() {
                r.running.remove(&cookie);
                r.collecting.remove(&cookie);
                r.udp.retain(|_, slot| slot.cookie != cookie);
            }
            shared.active.fetch_sub(1, Relaxed);
            if let Ok(tx) = shared.done_tx.lock() {
                let _ = tx.send(outcome);
            }
        });
        if spawned.is_err() {
            self.shared.active.fetch_sub(1, Relaxed);
            self.release(cookie);
        }
    }
}

/// Closes the pending connection that has waited longest.
fn evict_oldest(pending: &mut HashMap<Token, Pending>, mut drop_it: impl FnMut(Pending)) {
    let oldest = pending.iter().min_by_key(|(_, p)| p.since).map(|(t, _)| *t);
    if let Some(p) = oldest.and_then(|t| pending.remove(&t)) {
        drop_it(p);
    }
}

fn mio_to_std(s: mio::net::TcpStream) -> io::Result<TcpStream> {
    let s = TcpStream::from(s);
    s.set_nonblocking(false)?;
    Ok(s)
}

/// Reads what the connection's stage expects, never more: the prefix up to
/// a cookie's length (less if it clearly is not one), an iperf 2 header to
/// the length its own fields give (capped), or one parameter frame of at
/// most [`MAX_PARAMS_LEN`] bytes (the length prefix is checked before the
/// body is read).
fn read_pending(p: &mut Pending) -> Progress {
    let mut tmp = [0u8; 1024];
    loop {
        let want = match &p.stage {
            Stage::Prefix => {
                if p.buf.len() == COOKIE_LEN || (!p.buf.is_empty() && !could_be_cookie(&p.buf)) {
                    return Progress::Complete;
                }
                COOKIE_LEN - p.buf.len()
            }
            Stage::Iperf2Header => match ClientHeader::need_tcp(&p.buf) {
                Ok(Need::Done(_)) => return Progress::Complete,
                Ok(Need::More(n)) if n <= MAX_TCP_HEADER => n - p.buf.len(),
                Ok(Need::More(n)) => return Progress::Malformed(format!("iperf 2 header of {n} bytes")),
                Err(e) => return Progress::Malformed(e.to_string()),
            },
            Stage::Params { framer, .. } => match framer.json_needs(MAX_PARAMS_LEN) {
                Ok(0) => return Progress::Complete,
                Ok(n) => n,
                Err(FrameError::EmptyJson) => {
                    return Progress::Malformed(format!("{}: empty message", Code::RECVPARAMS.message().unwrap_or("")));
                }
                Err(FrameError::TooLong(n)) => {
                    return Progress::Malformed(format!(
                        "{}: message of {n} bytes exceeds the {MAX_PARAMS_LEN}-byte limit",
                        Code::RECVPARAMS.message().unwrap_or("")
                    ));
                }
            },
        };
        let want = want.min(tmp.len());
        match p.stream.read(&mut tmp[..want]) {
            Ok(0) => return Progress::Gone,
            Ok(n) => match &mut p.stage {
                Stage::Params { framer, .. } => framer.push(&tmp[..n]),
                _ => p.buf.extend_from_slice(&tmp[..n]),
            },
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::NotYet,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Progress::Gone,
        }
    }
}

/// ACCESS_DENIED and close: the busy answer.
fn deny(mut s: TcpStream) {
    let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = s.write_all(&[State::AccessDenied.to_byte()]);
}

/// Output of one test: its reporter, plus captures for `--get-server-output`.
struct TestOutput {
    reporter: Reporter,
    text: Option<Arc<Mutex<String>>>,
    json: Option<JsonSink>,
}

impl TestOutput {
    fn emit(&mut self, ev: Event) {
        if let Some(j) = self.json.as_mut() {
            j.event(&ev);
        }
        self.reporter.emit(ev);
    }
}

fn send_server_error(ctrl: &mut Ctrl, e: &Error) {
    let frame = server_error_frame(e.code.0, e.errno.unwrap_or(0));
    let _ = ctrl.write_all(&frame, Instant::now() + Duration::from_secs(2));
}

/// Runs one test on its control connection; `params_json` is the parameter
/// JSON the acceptor read.
fn serve_test(
    shared: &Arc<Shared>,
    stream: TcpStream,
    cookie: Cookie,
    peer: SocketAddr,
    test_no: u64,
    params_json: Vec<u8>,
) -> TestOutcome {
    let cfg = &shared.cfg;
    let _ = net::setup_control(&stream, cfg.net.cntl_ka, cfg.net.snd_timeout);
    let Ok(mut ctrl) = Ctrl::new(stream) else {
        return TestOutcome::Refused;
    };
    let base_out = shared.out.clone();
    // Before the parameters arrive, errors go to a plain reporter.
    let mut early = Reporter::for_config(cfg, base_out.clone(), Side::Server);
    let r = (|| -> Result<(crate::proto::iperf3::ParamsIn, TestConfig), Error> {
        let p = decode_params(&params_json)?;
        // Credentials first: a client that is not authorized learns nothing
        // of the server's limits.
        if let Some(auth) = &shared.auth {
            auth.authorize(p.authtoken.as_deref())?;
        }
        let limits = Limits {
            max_streams: cfg.server.max_streams,
            max_duration: cfg.server.max_duration,
            bitrate_limit: cfg.server.bitrate_limit,
        };
        validate(&p, &limits)?;
        let mut test_cfg = cfg.clone();
        test_cfg.params = p.params.clone();
        if let Some(path) = &cfg.output.html_report {
            test_cfg.output.html_report = Some(crate::report::html::numbered_path(path, test_no));
        }
        Ok((p, test_cfg))
    })();
    let (params_in, test_cfg) = match r {
        Ok(v) => v,
        Err(e) => {
            if let Some(m) = &shared.metrics {
                m.refused(Refusal::of_params_error(&e));
            }
            send_server_error(&mut ctrl, &e);
            early.emit(Event::Error(e));
            return TestOutcome::Refused;
        }
    };
    let params = params_in.params.clone();
    let text_capture = (params.get_server_output && !cfg.output.json).then(|| Arc::new(Mutex::new(String::new())));
    let out = match &text_capture {
        Some(c) => base_out.with_capture(c.clone()),
        None => base_out,
    };
    let mut output = TestOutput {
        reporter: Reporter::for_config(&test_cfg, out, Side::Server),
        text: text_capture,
        json: (params.get_server_output && cfg.output.json)
            .then(|| JsonSink::new(&test_cfg, Output::discard(), Side::Server)),
    };
    let (ph, pp) = crate::util::split_addr(&peer);
    if let Some(m) = &shared.metrics {
        let labels = crate::metrics::labels(test_cfg.dialect, params.protocol);
        output
            .reporter
            .add(Box::new(MetricsSink::new(m.clone(), labels, ph.clone())));
    }
    output.emit(Event::Accepted {
        host: ph.clone(),
        port: pp,
    });
    let mut test = ServerTest {
        shared,
        ctrl,
        cfg: test_cfg,
        params,
        cookie,
        output,
        session: None,
        peer: (ph, pp),
        wirespeed_client: params_in
            .client_version
            .as_deref()
            .is_some_and(|v| v.starts_with("wirespeed")),
    };
    match test.run() {
        Ok(()) => {}
        Err(e) => {
            if let Some(s) = test.session.as_mut() {
                s.abort();
            }
            if e.code != Code::CTRLCLOSE && e.code != Code::CLIENTTERM {
                send_server_error(&mut test.ctrl, &e);
            }
            test.output.emit(Event::Error(e));
        }
    }
    test.output.emit(Event::Done);
    TestOutcome::Ran
}

struct ServerTest<'a> {
    shared: &'a Arc<Shared>,
    ctrl: Ctrl,
    cfg: TestConfig,
    params: crate::config::TestParams,
    cookie: Cookie,
    output: TestOutput,
    session: Option<Session>,
    peer: (String, u16),
    /// The client said it is wirespeed (its UDP hellos carry the cookie).
    wirespeed_client: bool,
}

impl ServerTest<'_> {
    fn run(&mut self) -> Result<(), Error> {
        // The client's -A n,m: this test's threads run on CPU m.
        if let Some(cpu) = self.params.server_affinity {
            crate::sys::process::pin_current_thread(cpu).map_err(|e| Error::io(Code::AFFINITY, &e))?;
        }
        let streams = self.collect_streams()?;
        let waker = self.ctrl.waker();
        let local = LocalOpts {
            interval: self.cfg.output.interval,
            affinity: self.params.server_affinity.or(self.cfg.net.affinity),
            file: self.cfg.file.clone(),
            decides_end: false,
            ..LocalOpts::default()
        };
        let session = Session::start(&self.params, Side::Server, streams, waker, &local)?;
        self.ctrl.send_state(State::TestStart)?;
        self.ctrl.send_state(State::TestRunning)?;
        let start = StartInfo {
            accepted_connection: Some(self.peer.clone()),
            cookie: self.cookie.as_str().to_string(),
            tcp_mss_default: Some(0),
            ..session.start_info()
        };
        self.output.emit(Event::Start(Box::new(start)));
        self.session = Some(session);
        self.run_test()
    }

    fn collect_streams(&mut self) -> Result<Vec<DataStream>, Error> {
        let roles = stream_roles(self.params.direction, self.params.streams, Side::Server);
        let per = fds_per_stream(self.params.protocol, roles.len(), self.cfg.file.is_some());
        reserve_fds(roles.len(), per)?;
        let (tx, rx) = mpsc::sync_channel(roles.len().min(65536));
        let udp = self.params.protocol == Protocol::Udp;
        let deadline = Instant::now() + WHOLE_MSG;
        if udp {
            self.claim_udp_slot(tx, deadline)?;
        } else if let Ok(mut r) = self.shared.registry.lock() {
            r.collecting.insert(self.cookie, tx);
        }
        self.ctrl.send_state(State::CreateStreams)?;
        let mut out = Vec::with_capacity(roles.len());
        let mut warnings = Vec::new();
        for (i, role) in roles.into_iter().enumerate() {
            let sock = loop {
                if self.shared.terminate.load(Relaxed) {
                    return Err(Error::new(Code::SERVERTERM));
                }
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(s) => break s,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if Instant::now() >= deadline {
                            return Err(Error::msg(
                                Code::STREAMACCEPT,
                                "unable to accept stream connection: Connection timed out",
                            ));
                        }
                        // A client that gave up closes its control connection.
                        if self
                            .ctrl
                            .wait(Some(Instant::now()))
                            .map_err(|e| Error::io(Code::STREAMACCEPT, &e))?
                            == Woke::Eof
                        {
                            return Err(Error::new(Code::CTRLCLOSE));
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Error::new(Code::STREAMACCEPT)),
                }
            };
            let sr = socket2::SockRef::from(&sock);
            let remote = sock.peer_addr().ok();
            net::apply_data_options(&sr, &self.params, !udp, remote, &mut warnings)?;
            let local = sock.local_addr().map_err(|e| Error::io(Code::STREAMACCEPT, &e))?;
            let remote = remote.ok_or_else(|| Error::new(Code::STREAMACCEPT))?;
            let info = ConnInfo::new(stream_id(i), std::os::fd::AsRawFd::as_raw_fd(&sock), local, remote);
            self.output.emit(Event::StreamConnected(Box::new(info.clone())));
            out.push(DataStream {
                id: stream_id(i),
                role,
                sock,
                info,
            });
        }
        if let Ok(mut r) = self.shared.registry.lock() {
            r.collecting.remove(&self.cookie);
            let cookie = self.cookie;
            r.udp.retain(|_, slot| slot.cookie != cookie);
        }
        warnings.dedup();
        for w in warnings {
            self.output.emit(Event::Warning(w));
        }
        Ok(out)
    }

    /// Becomes the test that collects UDP streams from this client's
    /// address, waiting while another test from the same address does.
    fn claim_udp_slot(&mut self, tx: SyncSender<DataSock>, deadline: Instant) -> Result<(), Error> {
        if let Some(e) = &self.shared.udp_error {
            return Err(e.clone());
        }
        let local = net::canonical(SocketAddr::new(self.ctrl.local.ip(), self.shared.port));
        let key = net::canonical(self.ctrl.peer).ip();
        loop {
            if let Ok(mut r) = self.shared.registry.lock()
                && !r.udp.contains_key(&key)
            {
                r.udp.insert(
                    key,
                    UdpSlot {
                        cookie: self.cookie,
                        needs_cookie: self.wirespeed_client,
                        local,
                        tx: tx.clone(),
                        given: Vec::new(),
                    },
                );
                return Ok(());
            }
            if self.shared.terminate.load(Relaxed) {
                return Err(Error::new(Code::SERVERTERM));
            }
            if Instant::now() >= deadline {
                return Err(Error::msg(
                    Code::STREAMLISTEN,
                    "unable to start stream listener: another test from this address kept setting up UDP streams",
                ));
            }
            let wait = Instant::now() + Duration::from_millis(20);
            if self
                .ctrl
                .wait(Some(wait))
                .map_err(|e| Error::io(Code::STREAMLISTEN, &e))?
                == Woke::Eof
            {
                return Err(Error::new(Code::CTRLCLOSE));
            }
        }
    }

    fn run_test(&mut self) -> Result<(), Error> {
        let started = Instant::now();
        let mut session = self.session.take().expect("session");
        let mut machine = ServerMachine::new();
        machine.running();
        let output = &mut self.output;
        let mut steer = ServerSteering {
            ctrl: &mut self.ctrl,
            machine: &mut machine,
            shared: self.shared,
            cfg: &self.cfg,
            // A byte or block count has no duration of its own: then
            // `--server-max-duration`, if set, bounds the test.
            watchdog: self
                .params
                .duration()
                .or(self.cfg.server.max_duration)
                .map(|d| started + self.params.omit + d + Duration::from_secs(40)),
            rcv_timeout: self.cfg.net.rcv_timeout.unwrap_or(Duration::from_secs(120)),
            moved: (started, 0),
            rate_window: Vec::new(),
            stopped: None,
        };
        let spec = RunSpec {
            peer_ends: true,
            ..RunSpec::default()
        };
        let ended = crate::engine::run::run(&mut session, &spec, &mut steer, &mut |e| output.emit(e));
        let stopped = steer.stopped;
        self.session = Some(session);
        if ended? == Ended::Aborted {
            let (tell, why) = stopped.unwrap_or((State::IperfDone, None));
            return self.terminated(tell, why);
        }
        let session = self.session.as_mut().expect("session");
        let now = Instant::now();
        let congestion = session.congestion();
        let summary = session.stats.summary(now, None, congestion.clone());
        let mut ours = session.stats.local_results(now, congestion);
        let streams = session.stats.streams.len();
        self.output.emit(Event::End(Box::new(summary)));
        if let Some(t) = &self.output.text {
            ours.server_output_text = t.lock().ok().map(|s| s.clone());
        }
        if let Some(j) = &self.output.json {
            ours.server_output_json = Some(j.document());
        }
        self.ctrl.send_state(State::ExchangeResults)?;
        let max = max_results_len(streams, false);
        let theirs = self.ctrl.recv_json(max, WHOLE_MSG, WHOLE_MSG, Code::RECVRESULTS)?;
        let _client_results = Results::decode(&theirs)?;
        self.ctrl.send_json(&ours.encode(), Code::SENDRESULTS)?;
        self.ctrl.send_state(State::DisplayResults)?;
        machine.results_sent();
        // Wait for IPERF_DONE (or the client closing).
        let deadline = Instant::now() + WHOLE_MSG;
        while let Ok(b) = self.ctrl.recv_byte(Some(deadline), Code::RECVMESSAGE) {
            match machine.on_byte(b) {
                Ok(ServerAction::Done | ServerAction::ClientTerminated) | Err(_) => break,
                Ok(_) => {}
            }
        }
        Ok(())
    }

    /// After a test was cut short: a summary of what was measured, then `why`.
    fn terminated(&mut self, tell: State, why: Option<&str>) -> Result<(), Error> {
        if let Some(s) = self.session.as_ref() {
            let summary = s.stats.summary(Instant::now(), None, s.congestion());
            self.output.emit(Event::End(Box::new(summary)));
        }
        if tell == State::ServerTerminate {
            self.output
                .emit(Event::Notice("interrupt - the server has terminated".into()));
        }
        if let Some(w) = why {
            self.output.emit(Event::Notice(w.to_string()));
        }
        Ok(())
    }
}

/// Why a server test was cut short: what to tell the client, and the
/// notice to print.
type ServerStop = (State, Option<&'static str>);

/// The iperf3 server's part of the test loop: the control connection,
/// the server's stop, its watchdogs and limits.
struct ServerSteering<'a> {
    ctrl: &'a mut Ctrl,
    machine: &'a mut ServerMachine,
    shared: &'a Arc<Shared>,
    cfg: &'a TestConfig,
    watchdog: Option<Instant>,
    rcv_timeout: Duration,
    /// When bytes last moved, and how many had by then: a client that
    /// vanished without a word (half-open control connection, no FIN or
    /// RST) while we send moves nothing any more.
    moved: (Instant, u64),
    rate_window: Vec<(Instant, u64)>,
    stopped: Option<ServerStop>,
}

impl ServerSteering<'_> {
    fn stop(&mut self, why: ServerStop) -> Result<Turn, Error> {
        self.stopped = Some(why);
        Ok(Turn::Abort)
    }
}

impl Steering for ServerSteering<'_> {
    fn check(&mut self, session: &Session, now: Instant) -> Result<Turn, Error> {
        if self.shared.terminate.load(Relaxed) {
            // Tell the client before the streams break, so it hears why,
            // and give it a moment to hang up: a single-threaded client
            // (iperf3) that is writing would otherwise meet the broken
            // stream first and report that instead.
            if self.ctrl.send_state(State::ServerTerminate).is_ok() {
                let until = Instant::now() + Duration::from_secs(1);
                while let Ok(Woke::Data | Woke::Waker) = self.ctrl.wait(Some(until)) {}
            }
            return self.stop((State::ServerTerminate, None));
        }
        if self.watchdog.is_some_and(|w| now >= w) {
            return Err(Error::new(Code::SERVERTESTDURATIONEXPIRED));
        }
        if session.stats.rx_idle(now).is_some_and(|idle| idle >= self.rcv_timeout) {
            return Err(Error::new(Code::NOMSG));
        }
        let total = session.stats.moved();
        if total != self.moved.1 {
            self.moved = (now, total);
        } else if now.duration_since(self.moved.0) >= self.rcv_timeout {
            return Err(Error::msg(
                Code::NOMSG,
                format!(
                    "no data moved for {} s: the client stopped responding",
                    self.rcv_timeout.as_secs()
                ),
            ));
        }
        Ok(Turn::Go)
    }

    fn wait(&mut self, _session: &Session, until: Instant) -> Result<Turn, Error> {
        match self
            .ctrl
            .poll_byte(Some(until))
            .map_err(|e| Error::io(Code::RECVMESSAGE, &e))?
        {
            Polled::Eof => self.stop((
                State::IperfDone,
                Some("the client has unexpectedly closed the connection"),
            )),
            Polled::Byte(b) => {
                self.moved.0 = Instant::now();
                match self.machine.on_byte(b)? {
                    ServerAction::EndTest => Ok(Turn::Finish),
                    ServerAction::ClientTerminated => {
                        self.stop((State::ClientTerminate, Some("the client has terminated")))
                    }
                    _ => Ok(Turn::Go),
                }
            }
            Polled::Woken => Ok(Turn::Go),
        }
    }

    /// `--server-bitrate-limit`: the average over the window must stay
    /// under the limit.
    fn after_timers(&mut self, session: &Session, interval: bool) -> Result<(), Error> {
        if !interval || self.cfg.server.bitrate_limit == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let window = &mut self.rate_window;
        window.push((now, session.stats.moved()));
        let span = self.cfg.server.bitrate_limit_window;
        while window.len() > 2 && now.duration_since(window[1].0) >= span {
            window.remove(0);
        }
        if let (Some(first), Some(last)) = (window.first(), window.last()) {
            let secs = last.0.duration_since(first.0).as_secs_f64();
            if secs > 0.0 && secs + 0.05 >= span.as_secs_f64() {
                let bps = (last.1 - first.1) as f64 * 8.0 / secs;
                if bps > self.cfg.server.bitrate_limit as f64 {
                    return Err(Error::new(Code::TOTALRATE));
                }
            }
        }
        Ok(())
    }
}
