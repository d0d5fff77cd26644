//! The one acceptor: every listening port of a server, TCP and UDP, on one
//! poll.
//!
//! It owns the listeners, the UDP ports, and every connection that has
//! not yet said who it is and what it wants. It reads without blocking
//! (each stage has a deadline: iperf3's 10 s for the first byte and 30 s
//! in all, 4 s for an iperf 2 header), so an idle, slow or half-open peer
//! costs a descriptor for a few seconds and never keeps anyone else out.
//! The first bytes say the dialect (`proto::sniff`): a cookie joins the
//! iperf3 test collecting its streams, or starts a parameter exchange,
//! which the acceptor also reads (at most 8 KiB), so only a client whose
//! parameters have arrived gets a test thread; an iperf 2 header is read
//! the same way before its flow's thread starts. On a UDP port an iperf3
//! hello gets its stream socket; anything else goes to the iperf 2 side.
//! The access policy applies to every connection once its dialect is
//! known.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, UdpSocket};
use mio::{Events, Interest, Poll, Token};

use super::sockets::Sockets;
use super::{MAX_PENDING, Mode, Outcome, ServerCtx};
use wirespeed_core::engine::DataSock;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{Event, Refused};
use wirespeed_proto::iperf2::header::{ClientHeader, MAX_TCP_HEADER, Need};
use wirespeed_proto::iperf3::framing::{FrameError, server_error_frame};
use wirespeed_proto::iperf3::{Cookie, MAX_PARAMS_LEN, State};
use wirespeed_proto::sniff;
use wirespeed_report::metrics::Refusal;

/// Datagrams read from the UDP ports per turn, so a flood of junk there
/// cannot starve new TCP connections.
const UDP_READS_PER_TURN: usize = 4096;
const FIRST_BYTE: Duration = Duration::from_secs(10);
const WHOLE_MSG: Duration = Duration::from_secs(30);
/// How long an iperf 2 client has for its header after its first bytes (2.1.8: 4 s).
const IPERF2_HEADER: Duration = Duration::from_secs(4);
/// How long a stopping server waits for its tests to end.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

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
        framer: wirespeed_proto::iperf3::Framer,
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
    /// To the iperf3 test collecting streams with its cookie.
    Stream(SyncSender<DataSock>),
    /// Refused (ACCESS_DENIED, or SERVER_ERROR for the access policy),
    /// counted as this refusal.
    Refuse(Refusal),
    /// Its stage is complete: to a test thread.
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

/// The acceptor's state.
struct Acceptor {
    ctx: Arc<ServerCtx>,
    poll: Poll,
    tcp: Vec<TcpListener>,
    /// UDP ports (`None` while `-U` keeps its port closed).
    udp: Vec<Option<UdpSocket>>,
    pending: HashMap<Token, Pending>,
    next_token: usize,
    /// The banner the server prints when it (again) waits for tests.
    sockets_banner: Sockets,
    /// The listeners failed (out of descriptors): try again each turn.
    accept_again: bool,
    /// The pending set was full at the last accept: this turn's reads ran
    /// before any more were taken. Full again now, the oldest make room.
    waited_full: bool,
    /// Datagrams were left unread last turn.
    udp_more: bool,
}

/// Where the tokens of each kind of socket start.
const UDP_BASE: usize = 1 << 20;
const CONN_BASE: usize = 1 << 21;

/// Serves until a signal, or the configuration's end.
pub(super) fn run(
    ctx: Arc<ServerCtx>,
    sockets: Sockets,
    done_rx: Receiver<Outcome>,
    signal: Arc<AtomicUsize>,
) -> Result<(), Error> {
    let mut a = Acceptor::new(ctx.clone(), sockets)?;
    let mut events = Events::with_capacity(256);
    let mut idle_since = Instant::now();
    let mut waiting = None;
    // A test ran or a client was turned away (and told so in the output).
    let mut heard = false;
    let until = match ctx.mode {
        Mode::Iperf2 => ctx.cfg.server.listen_time.map(|t| Instant::now() + t),
        Mode::ConnectBack { .. } => ctx.cfg.server.listen_time.map(|t| Instant::now() + t),
        Mode::Shared => None,
    };
    // A connect-back's banner is the client's to print, before its own.
    if !matches!(ctx.mode, Mode::ConnectBack { .. }) {
        a.announce();
    }
    loop {
        let sig = signal.load(Relaxed);
        if sig != 0 {
            ctx.stop_signal.store(sig, Relaxed);
            let idle = a.idle();
            a.shutdown();
            // A test in progress reports the signal in its own output;
            // an idle iperf3 server says it alone (a document with --json).
            if idle && ctx.mode == Mode::Shared {
                ctx.say_failure(ctx.interrupted());
            }
            return Ok(());
        }
        if waiting.is_none() && until.is_some_and(|u| Instant::now() >= u) {
            // iperf 2's listen time (or a connect-back's wait) is over.
            match a.finish_listen() {
                Some(done) => waiting = Some(done),
                None => return Ok(()),
            }
        }
        if let Some(done) = waiting.take() {
            // Served what was asked: no more clients, and out once the
            // tests in progress end.
            if a.idle() || signal.load(Relaxed) != 0 {
                return done;
            }
            waiting = Some(done);
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        a.turn(&mut events)?;
        let mut one_off_done = false;
        let mut ended = false;
        while let Ok(outcome) = done_rx.try_recv() {
            heard = true;
            ended = true;
            if ctx.cfg.server.one_off && ctx.mode == Mode::Shared && outcome == Outcome::Ran {
                one_off_done = true;
            }
            if a.idle() {
                idle_since = Instant::now();
                // iperf3 prints its banner before every test; iperf 2 once.
                if !one_off_done && ctx.mode == Mode::Shared {
                    a.announce();
                }
            }
        }
        if one_off_done {
            a.shutdown();
            return Ok(());
        }
        if ended && a.idle() {
            // The last test ended: what its threads' arenas grew to goes
            // back to the system (docs/reliability.md: without it the RSS
            // climbed for 2,000 tests before it levelled).
            wirespeed_sys::mem::release_free_memory();
        }
        if let Some(idle) = ctx.cfg.server.idle_timeout
            && a.idle()
            && a.pending.is_empty()
            && idle_since.elapsed() >= idle
        {
            if ctx.cfg.server.one_off {
                // iperf3 exits silently; a reader of our output (pScheduler
                // parses the one-off server's JSON) learns why there is no
                // test, unless a client's failure was already reported.
                if !heard && ctx.mode == Mode::Shared {
                    ctx.say_failure(Error::msg(
                        Code::ACCEPT,
                        format!(
                            "no connection request was received for {} s in one-off mode",
                            idle.as_secs_f64()
                        ),
                    ));
                }
                return Ok(());
            }
            // iperf3 restarts its listener here; ours never wedges,
            // so the restart is just a fresh idle period.
            idle_since = Instant::now();
        }
        waiting = a.served_all();
    }
}

impl Acceptor {
    fn new(ctx: Arc<ServerCtx>, mut sockets: Sockets) -> Result<Acceptor, Error> {
        let poll = Poll::new().map_err(|e| Error::io(Code::LISTEN, &e))?;
        let mut tcp = Vec::new();
        for (i, l) in sockets.tcp.drain(..).enumerate() {
            l.set_nonblocking(true).map_err(|e| Error::io(Code::LISTEN, &e))?;
            let mut ml = TcpListener::from_std(l);
            poll.registry()
                .register(&mut ml, Token(i), Interest::READABLE)
                .map_err(|e| Error::io(Code::LISTEN, &e))?;
            tcp.push(ml);
        }
        let mut udp = Vec::new();
        for (i, u) in sockets.udp.drain(..).enumerate() {
            udp.push(Some(register_udp(&poll, u, i)?));
        }
        Ok(Acceptor {
            ctx,
            poll,
            tcp,
            udp,
            pending: HashMap::new(),
            next_token: CONN_BASE,
            sockets_banner: sockets,
            accept_again: false,
            waited_full: false,
            udp_more: false,
        })
    }

    /// The server (again) waits for a test: its banner.
    fn announce(&mut self) {
        let n = self.ctx.started.load(Relaxed) + 1;
        let l = self.sockets_banner.listening(&self.ctx.cfg, n);
        self.ctx.say(Event::Listening(Box::new(l)));
    }

    /// No test runs and no iperf 2 flow is being set up.
    fn idle(&self) -> bool {
        self.ctx.active.load(Relaxed) == 0 && self.ctx.flows.load(Relaxed) == 0 && self.ctx.echoes.load(Relaxed) == 0
    }

    /// iperf 2's `-1` (and `-U`): one client at a time; the next waits.
    fn gated(&self) -> bool {
        let one = self.ctx.cfg.iperf2.single_client || self.ctx.cfg.iperf2.single_udp;
        self.ctx.mode == Mode::Iperf2 && one && !self.idle()
    }

    /// One turn: wait for readiness, accept, read, demux, expire.
    fn turn(&mut self, events: &mut Events) -> Result<(), Error> {
        self.udp_gate()?;
        self.ctx.windows.tick();
        let timeout = if self.udp_more {
            Duration::ZERO
        } else if self.accept_again {
            // Out of descriptors: try the listeners again shortly.
            Duration::from_millis(50)
        } else {
            Duration::from_millis(100)
        };
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(Error::io(Code::SELECT, &e)),
        }
        let mut conns = Vec::new();
        for ev in events.iter() {
            match ev.token().0 {
                t if t >= CONN_BASE => conns.push(ev.token()),
                t if t >= UDP_BASE => self.udp_more = true,
                _ => self.accept_again = true,
            }
        }
        // What the pending connections sent first: it may make room for
        // more of a burst.
        for t in conns {
            if let Some(p) = self.pending.get_mut(&t) {
                let r = read_pending(p);
                self.advance(t, r);
            }
        }
        if self.pending.len() < MAX_PENDING {
            self.waited_full = false;
        }
        if self.accept_again && !self.gated() {
            self.accept_again = self.accept();
        }
        if self.udp_more {
            self.udp_more = self.datagrams();
        }
        // Deadlines on connections that have not said what they want.
        let now = Instant::now();
        let expired: Vec<Token> = self
            .pending
            .iter()
            .filter(|(_, p)| p.expired(now))
            .map(|(t, _)| *t)
            .collect();
        for t in expired {
            if let Some(p) = self.pending.remove(&t) {
                self.give_up(p, None);
            }
        }
        Ok(())
    }

    /// Accepts every waiting connection. Returns true if a listener
    /// failed (out of descriptors, ...) and should be tried again.
    fn accept(&mut self) -> bool {
        for i in 0..self.tcp.len() {
            loop {
                if self.gated() {
                    // One client at a time: the rest stay in the backlog.
                    return true;
                }
                if self.pending.len() >= MAX_PENDING && !self.waited_full {
                    // Full (a burst of many streams): read what these
                    // sent first; the rest wait in the backlog a turn.
                    self.waited_full = true;
                    return true;
                }
                match self.tcp[i].accept() {
                    Ok((stream, peer)) => self.accepted(stream, peer),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        // Out of descriptors: the connection that has waited
                        // longest makes room; the client behind retries.
                        if let Some(p) = self.evict_oldest() {
                            self.give_up(p, None);
                        }
                        return true;
                    }
                }
            }
        }
        false
    }

    /// A new connection: straight to its flow (a connect-back has no
    /// header), or into the pending set to say what it is.
    fn accepted(&mut self, mut stream: mio::net::TcpStream, peer: SocketAddr) {
        self.ctx.windows.admit(&stream);
        if let Mode::ConnectBack { .. } = self.ctx.mode {
            self.ctx.served.fetch_add(1, Relaxed);
            if let Ok(s) = mio_to_std(stream) {
                self.ctx.wings.iperf2.tcp(self.ctx.clone(), s, peer, Vec::new());
            }
            return;
        }
        if self.pending.len() >= MAX_PENDING
            && let Some(p) = self.evict_oldest()
        {
            self.give_up(p, None);
        }
        let t = Token(self.next_token);
        self.next_token = self.next_token.wrapping_add(1).max(CONN_BASE);
        if self
            .poll
            .registry()
            .register(&mut stream, t, Interest::READABLE)
            .is_ok()
        {
            self.pending.insert(
                t,
                Pending {
                    stream,
                    peer,
                    buf: Vec::with_capacity(wirespeed_proto::iperf3::COOKIE_LEN),
                    since: Instant::now(),
                    stage: Stage::Prefix,
                },
            );
        }
    }

    fn evict_oldest(&mut self) -> Option<Pending> {
        let oldest = self.pending.iter().min_by_key(|(_, p)| p.since).map(|(t, _)| *t)?;
        self.pending.remove(&oldest)
    }

    /// Acts on what reading a pending connection came to.
    fn advance(&mut self, t: Token, r: Progress) {
        match r {
            Progress::NotYet => {}
            Progress::Gone => {
                if let Some(p) = self.pending.remove(&t) {
                    self.give_up(p, Some(Error::new(Code::CTRLCLOSE)));
                }
            }
            Progress::Malformed(why) => {
                if let Some(p) = self.pending.remove(&t) {
                    self.give_up(p, Some(Error::msg(Code::RECVPARAMS, why)));
                }
            }
            Progress::Complete => {
                let Some(p) = self.pending.get_mut(&t) else { return };
                let next = match p.stage {
                    Stage::Prefix => identified(&self.ctx, p),
                    Stage::Iperf2Header | Stage::Params { .. } => Next::HandOn,
                };
                if let Next::Stay = next {
                    // The next stage's bytes may be here already.
                    let r = read_pending(p);
                    return self.advance(t, r);
                }
                let Some(mut p) = self.pending.remove(&t) else { return };
                let _ = self.poll.registry().deregister(&mut p.stream);
                self.leave(p, next);
            }
        }
    }

    /// A connection leaves the acceptor: to a collecting test, a new test
    /// thread, the iperf 2 side, a refusal, or closed.
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
                self.ctx.registry.release(c);
            }
            return;
        };
        match (next, stage) {
            (Next::Stream(tx), _) => {
                let _ = tx.try_send(DataSock::Tcp(stream));
            }
            (Next::Refuse(why), _) => {
                deny(stream, why);
                self.ctx.refused(why);
                if why == Refusal::Policy {
                    self.ctx.say(Event::Refused(Box::new(Refused {
                        local: (String::new(), self.ctx.port),
                        remote: wirespeed_core::net::split_addr(&peer),
                        why: "access policy".into(),
                        policy: true,
                    })));
                }
            }
            (Next::HandOn, Stage::Params { cookie, mut framer }) => {
                let Ok(Some(body)) = framer.take_json(MAX_PARAMS_LEN) else {
                    self.ctx.registry.release(cookie);
                    return;
                };
                if !self.ctx.has_room() {
                    // Others finished their exchange first.
                    self.ctx.registry.release(cookie);
                    deny(stream, Refusal::Busy);
                    self.ctx.refused(Refusal::Busy);
                    return;
                }
                self.ctx.wings.iperf3.test(&self.ctx, stream, cookie, peer, body);
            }
            (Next::HandOn, _) => {
                if self.ctx.policy.permits(peer.ip()) {
                    self.ctx.served.fetch_add(1, Relaxed);
                }
                self.ctx.wings.iperf2.tcp(self.ctx.clone(), stream, peer, buf);
            }
            (Next::Stay | Next::Close, _) => {
                if let Some(c) = cookie {
                    self.ctx.registry.release(c);
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
                self.ctx.registry.release(cookie);
                let e = why.unwrap_or_else(|| {
                    let words = Code::RECVPARAMS.message().unwrap_or("");
                    Error::msg(Code::RECVPARAMS, format!("{words}: Connection timed out"))
                });
                if e.code != Code::CTRLCLOSE {
                    let _ = stream.write(&server_error_frame(e.code.0, e.errno.unwrap_or(0)));
                }
                self.ctx.refused(Refusal::of_params_error(&e));
                self.ctx.say_failure(e);
                self.ctx.test_done(Outcome::Refused);
            }
            Stage::Iperf2Header => self.ctx.refused(Refusal::Unrecognized),
            Stage::Prefix => {}
        }
    }

    /// Reads datagrams on the UDP ports: an iperf3 hello from a client
    /// whose test is collecting UDP streams gets a socket of its own
    /// (bound to the port, connected to the client's stream socket), the
    /// reply from it, and is handed to the test; anything else goes to
    /// the iperf 2 side; a QUIC Initial goes to the `--quic` test waiting
    /// for its client's connection, if one is. Returns true if more may be
    /// waiting.
    fn datagrams(&mut self) -> bool {
        // Room for a whole datagram: an iperf 2 client's first one is data.
        let mut buf = vec![0u8; 65536];
        let mut more = false;
        for u in self.udp.iter().flatten() {
            let Ok(local) = u.local_addr() else { continue };
            let mut reads = 0;
            loop {
                if reads == UDP_READS_PER_TURN {
                    more = true;
                    break;
                }
                // Through mio's try_io: on Windows a read that would block must
                // pass through mio to re-arm the socket's readiness (a raw
                // read there leaves the next datagrams unannounced).
                let (n, from, tos) = match u.try_io(|| wirespeed_sys::udp::recv_from_tos(u, &mut buf)) {
                    Ok(r) => r,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                reads += 1;
                let d = &buf[..n.min(buf.len())];
                // A `--quic` test's first datagram, when the test waits
                // for it (else it is sniffed as any other).
                if self.ctx.mode == Mode::Shared
                    && sniff::quic_initial(d)
                    && self.ctx.wings.iperf3.quic_initial(&self.ctx, d, net_canonical(from))
                {
                    continue;
                }
                match sniff::udp(d) {
                    sniff::Udp::Iperf3(h) if self.ctx.mode == Mode::Shared => {
                        self.ctx.wings.iperf3.udp_hello(&self.ctx, h, net_canonical(from));
                    }
                    _ => {
                        self.ctx
                            .wings
                            .iperf2
                            .udp(&self.ctx, local, from, d, wirespeed_core::clock::wall_ns(), tos);
                    }
                }
            }
            // The flows started this turn have what queued for them.
            self.ctx.wings.iperf2.udp_drained(&self.ctx);
        }
        more
    }

    /// `-U`: the UDP port is closed while a client is served (others are
    /// refused by the kernel) and opened again when it is done.
    fn udp_gate(&mut self) -> Result<(), Error> {
        if !(self.ctx.mode == Mode::Iperf2 && self.ctx.cfg.iperf2.single_udp && !self.ctx.multicast) {
            return Ok(());
        }
        let busy = !self.idle();
        for i in 0..self.udp.len() {
            match (&mut self.udp[i], busy) {
                (Some(u), true) => {
                    let _ = self.poll.registry().deregister(u);
                    self.udp[i] = None;
                }
                (None, false) => {
                    let port = self.ctx.port.saturating_add(i as u16);
                    let u = super::sockets::open_udp(&self.ctx.cfg, port, None)?;
                    self.udp[i] = Some(register_udp(&self.poll, u, i)?);
                    self.udp_more = true;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// iperf 2's `-P n` (and a connect-back's flows): once served, no
    /// more clients; the server ends when their tests do.
    fn served_all(&mut self) -> Option<Result<(), Error>> {
        let n = match self.ctx.mode {
            Mode::Shared => return None,
            Mode::Iperf2 => self.ctx.cfg.server.max_connections?,
            Mode::ConnectBack { expect } => expect,
        };
        if self.ctx.served.load(Relaxed) < n {
            return None;
        }
        self.tcp.clear();
        self.udp.clear();
        Some(Ok(()))
    }

    /// The listen time is over. An iperf 2 server stops its flows and
    /// ends (`None`); a connect-back stops waiting for connections and
    /// ends once the flows that came have (or fails if none did).
    fn finish_listen(&mut self) -> Option<Result<(), Error>> {
        if let Mode::ConnectBack { .. } = self.ctx.mode {
            self.tcp.clear();
            self.udp.clear();
            if self.ctx.served.load(Relaxed) == 0 {
                return Some(Err(Error::msg(
                    Code::ACCEPT,
                    "ERROR: expected reverse connect did not occur",
                )));
            }
            return Some(Ok(()));
        }
        self.shutdown();
        None
    }

    /// Stops: clients in the parameter exchange hear why, every test ends.
    fn shutdown(&mut self) {
        for (_, mut p) in self.pending.drain() {
            if matches!(p.stage, Stage::Params { .. }) {
                let _ = p.stream.write(&[State::ServerTerminate.to_byte()]);
            }
        }
        self.ctx.stop.store(true, Relaxed);
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        while !self.idle() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn register_udp(poll: &Poll, u: std::net::UdpSocket, i: usize) -> Result<UdpSocket, Error> {
    u.set_nonblocking(true).map_err(|e| Error::io(Code::STREAMLISTEN, &e))?;
    // An iperf 2 flow's first datagrams are read here: with their ECN field.
    let ipv6 = u.local_addr().is_ok_and(|a| a.is_ipv6());
    let _ = wirespeed_sys::udp::set_recv_tos(&u, ipv6);
    let mut m = UdpSocket::from_std(u);
    poll.registry()
        .register(&mut m, Token(UDP_BASE + i), Interest::READABLE)
        .map_err(|e| Error::io(Code::STREAMLISTEN, &e))?;
    Ok(m)
}

fn net_canonical(a: SocketAddr) -> SocketAddr {
    wirespeed_core::net::canonical(a)
}

/// A complete prefix: what to do with the connection.
fn identified(ctx: &ServerCtx, p: &mut Pending) -> Next {
    let cookie = match sniff::tcp(&p.buf) {
        sniff::Tcp::Iperf3(c) => c,
        sniff::Tcp::Junk => return Next::Close,
        sniff::Tcp::More(_) | sniff::Tcp::Iperf2 => {
            // iperf 2 (header words or a -C client's digits) or junk. The
            // header of a client we serve is read here first; a refused one
            // goes to the iperf 2 side at once for 2.1.8's drop line.
            if !ctx.policy.permits(p.peer.ip()) {
                return Next::HandOn;
            }
            p.stage = Stage::Iperf2Header;
            p.since = Instant::now();
            return Next::Stay;
        }
    };
    if ctx.mode != Mode::Shared {
        return Next::Close;
    }
    if !ctx.policy.permits(p.peer.ip()) {
        return Next::Refuse(Refusal::Policy);
    }
    if let Ok(c) = ctx.registry.collecting.lock()
        && let Some(tx) = c.get(&cookie)
    {
        return Next::Stream(tx.clone());
    }
    let Ok(mut running) = ctx.registry.running.lock() else {
        return Next::Close;
    };
    if running.contains(&cookie) {
        return Next::Refuse(Refusal::DuplicateCookie);
    }
    if !ctx.has_room() {
        return Next::Refuse(Refusal::Busy);
    }
    // A new test: ask for its parameters, and hold its cookie so a second
    // connection with it is refused meanwhile.
    if !matches!(p.stream.write(&[State::ParamExchange.to_byte()]), Ok(1)) {
        return Next::Close;
    }
    running.insert(cookie);
    p.stage = Stage::Params {
        cookie,
        framer: wirespeed_proto::iperf3::Framer::new(),
    };
    p.since = Instant::now();
    Next::Stay
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
            Stage::Prefix => match sniff::tcp(&p.buf) {
                sniff::Tcp::More(n) => n,
                _ => return Progress::Complete,
            },
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

/// The refusal, then close: ACCESS_DENIED (iperf3's busy answer), or for
/// a client the access policy does not admit, SERVER_ERROR saying so.
fn deny(mut s: TcpStream, why: Refusal) {
    let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = match why {
        Refusal::Policy => s.write_all(&wirespeed_proto::iperf3::framing::policy_refusal_frame()),
        _ => s.write_all(&[State::AccessDenied.to_byte()]),
    };
}
