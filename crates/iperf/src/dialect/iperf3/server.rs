//! One iperf3 test on the server: its control connection (the acceptor
//! has read its cookie and parameters), its data streams, the one test
//! loop, and the results exchange.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::dialect::iperf3::ctrl::{Ctrl, Polled, Woke};
use crate::dialect::iperf3::quic::QuicConn;
use crate::server::guards::{Guards, RCV_TIMEOUT};
use crate::server::registry::{QuicInitial, UdpSlot};
use crate::server::{Outcome, ServerCtx};
use wirespeed_core::config::{Protocol, TestConfig};
use wirespeed_core::engine::run::{Ended, RunSpec, Steering, Turn};
use wirespeed_core::engine::{
    DataSock, DataStream, LocalOpts, Session, fds_per_stream, reserve_fds, stream_id, stream_roles,
};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::*;
use wirespeed_core::net;
use wirespeed_proto::iperf3::framing::server_error_frame;
use wirespeed_proto::iperf3::machine::{ServerAction, ServerMachine};
use wirespeed_proto::iperf3::params::{Limits, decode_params, validate};
use wirespeed_proto::iperf3::udp::{HELLO_REPLY, Hello};
use wirespeed_proto::iperf3::{Cookie, Results, State, max_results_len};
use wirespeed_report::json::JsonSink;
use wirespeed_report::metrics::Refusal;
use wirespeed_report::{Output, Reporter, Sink};

const WHOLE_MSG: Duration = Duration::from_secs(30);

/// The iperf3 wing's entry points (`crate::server::Iperf3Wing`).
pub(crate) struct Wing;

impl crate::server::Iperf3Wing for Wing {
    fn test(&self, ctx: &Arc<ServerCtx>, ctl: TcpStream, cookie: Cookie, peer: SocketAddr, params: Vec<u8>) {
        start(ctx, ctl, cookie, peer, params)
    }

    fn udp_hello(&self, ctx: &ServerCtx, hello: Hello<'_>, from: SocketAddr) {
        udp_hello(ctx, hello, from)
    }

    fn quic_initial(&self, ctx: &ServerCtx, datagram: &[u8], from: SocketAddr) -> bool {
        quic_initial(ctx, datagram, from)
    }
}

/// Starts a test thread for a client whose parameters arrived.
pub(crate) fn start(ctx: &Arc<ServerCtx>, stream: TcpStream, cookie: Cookie, peer: SocketAddr, params: Vec<u8>) {
    let ctx2 = ctx.clone();
    // Counted now, so `--max-tests` sees it before the thread runs.
    ctx.active.fetch_add(1, Relaxed);
    // The test's number, as the banner announced it (names its report).
    let test_no = ctx.started.fetch_add(1, Relaxed) + 1;
    let spawned = std::thread::Builder::new().name("ws-test".into()).spawn(move || {
        let outcome = serve_test(&ctx2, stream, cookie, peer, test_no, params);
        ctx2.registry.release(cookie);
        ctx2.active.fetch_sub(1, Relaxed);
        ctx2.test_done(outcome);
    });
    if spawned.is_err() {
        ctx.active.fetch_sub(1, Relaxed);
        ctx.registry.release(cookie);
    }
}

/// A hello on the UDP port: a client whose test is collecting UDP streams
/// gets a socket of its own (bound to the port, connected to the client's
/// stream socket), the reply from it, and the socket goes to the test.
/// A repeated hello (the reply was lost) gets the reply again.
pub(crate) fn udp_hello(ctx: &ServerCtx, hello: Hello, from: SocketAddr) {
    let Ok(mut udp) = ctx.registry.udp.lock() else { return };
    let Some(slot) = udp.get_mut(&from.ip()) else { return };
    let ours = match hello {
        Hello::WithCookie(c) => c == slot.cookie.to_wire(),
        Hello::Plain => !slot.needs_cookie,
    };
    if !ours {
        return;
    }
    if let Some((_, s)) = slot.given.iter().find(|(a, _)| *a == from) {
        let _ = s.send(&HELLO_REPLY);
        return;
    }
    let Ok(sock) = net::udp_stream_socket(slot.local, from) else {
        return;
    };
    let Ok(keep) = sock.try_clone() else { return };
    if slot.tx.try_send(DataSock::Udp(sock)).is_ok() {
        let _ = keep.send(&HELLO_REPLY);
        slot.given.push((from, keep));
    }
}

/// A client whose hello reply was lost sends the hello again, and the
/// kernel now gives it to the stream's connected socket, which no one
/// reads until the test starts: it waits for the reply and the server for
/// its next stream. Until the test starts nothing else arrives there (a
/// client sends data only once the test runs), so each datagram waiting
/// on a collected UDP stream is a repeat, answered from that socket.
fn answer_repeated_hellos(streams: &[DataStream]) {
    let mut buf = [0u8; 64];
    for ds in streams {
        let DataSock::Udp(s) = &ds.sock else { continue };
        if s.set_nonblocking(true).is_err() {
            continue;
        }
        while let Ok(n) = s.recv(&mut buf) {
            if wirespeed_proto::iperf3::udp::parse_hello(&buf[..n]).is_some() {
                let _ = s.send(&HELLO_REPLY);
            }
        }
        let _ = s.set_nonblocking(false);
    }
}

/// A QUIC Initial on the UDP port: when a `--quic` test from the
/// sender's address waits for its connection, the test gets a socket of
/// its own (bound to the port, connected to the sender, so the kernel
/// gives it the connection's later datagrams) and the datagram. Whether
/// the datagram was the test's (a repeat of one already handed over is,
/// and is dropped: QUIC repeats it to the new socket).
pub(crate) fn quic_initial(ctx: &ServerCtx, datagram: &[u8], from: SocketAddr) -> bool {
    let Ok(mut udp) = ctx.registry.udp.lock() else {
        return false;
    };
    let Some(slot) = udp.get_mut(&from.ip()) else {
        return false;
    };
    let Some(tx) = slot.quic.as_ref() else {
        return false;
    };
    if slot.given.iter().any(|(a, _)| *a == from) {
        return true;
    }
    let Ok(sock) = net::udp_stream_socket(slot.local, from) else {
        return true;
    };
    let Ok(keep) = sock.try_clone() else { return true };
    if tx.try_send((sock, datagram.to_vec(), from)).is_ok() {
        slot.given.push((from, keep));
    }
    true
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
    ctx: &Arc<ServerCtx>,
    stream: TcpStream,
    cookie: Cookie,
    peer: SocketAddr,
    test_no: u64,
    params_json: Vec<u8>,
) -> Outcome {
    let cfg = &ctx.cfg;
    let _ = net::setup_control(&stream, cfg.net.cntl_ka, cfg.net.snd_timeout);
    let Ok(mut ctrl) = Ctrl::new(stream) else {
        return Outcome::Refused;
    };
    let base_out = ctx.out.clone();
    // Before the parameters arrive, errors go to a plain reporter.
    let mut early = ctx.reporter(cfg, Side::Server);
    let r = (|| -> Result<(wirespeed_proto::iperf3::ParamsIn, TestConfig), Error> {
        let p = decode_params(&params_json)?;
        // Credentials first: a client that is not authorized learns nothing
        // of the server's limits.
        if let Some(auth) = &ctx.auth {
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
            test_cfg.output.html_report = Some(wirespeed_report::html::numbered_path(path, test_no));
        }
        Ok((p, test_cfg))
    })();
    let (params_in, test_cfg) = match r {
        Ok(v) => v,
        Err(e) => {
            ctx.refused(Refusal::of_params_error(&e));
            send_server_error(&mut ctrl, &e);
            // As iperf3: a login that failed does not end a `-1` server
            // (the right client may come next); other refusals do.
            let outcome = if e.code == Code::AUTHTEST {
                Outcome::Refused
            } else {
                Outcome::Ran
            };
            early.emit(Event::Error(e));
            early.emit(Event::Done);
            return outcome;
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
    let (ph, pp) = wirespeed_core::net::split_addr(&peer);
    ctx.watch(&mut output.reporter, &test_cfg, params.protocol, ph.clone());
    output.emit(Event::Accepted {
        host: ph.clone(),
        port: pp,
    });
    let mut test = ServerTest {
        ctx,
        ctrl,
        cfg: test_cfg,
        params,
        cookie,
        output,
        session: None,
        quic: None,
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
    Outcome::Ran
}

struct ServerTest<'a> {
    ctx: &'a Arc<ServerCtx>,
    ctrl: Ctrl,
    cfg: TestConfig,
    params: wirespeed_core::config::TestParams,
    cookie: Cookie,
    output: TestOutput,
    session: Option<Session>,
    /// A `--quic` test's connection (dropped after the session, whose
    /// streams it carries).
    quic: Option<Box<dyn QuicConn>>,
    peer: (String, u16),
    /// The client said it is wirespeed (its UDP hellos carry the cookie).
    wirespeed_client: bool,
}

impl ServerTest<'_> {
    fn run(&mut self) -> Result<(), Error> {
        // The client's -A n,m: this test's threads run on CPU m.
        if let Some(cpu) = self.params.server_affinity {
            wirespeed_core::engine::pin(cpu)?;
        }
        let streams = if self.params.protocol == Protocol::Quic {
            self.collect_quic()?
        } else {
            self.collect_streams()?
        };
        let waker = self.ctrl.waker();
        let local = LocalOpts {
            interval: self.cfg.output.interval,
            affinity: self.params.server_affinity.or(self.cfg.net.affinity),
            file: self.cfg.file.clone(),
            decides_end: false,
            // An iperf3 client keeps its streams open until the results are
            // exchanged; a wirespeed client half-closes after its last byte.
            peer_half_closes: self.wirespeed_client,
            samples: self.cfg.output.chart_samples(),
            // The client sends with the TOS byte it told us.
            peer_ecn: Some(wirespeed_core::events::Ecn::of_tos(self.params.tos)),
            ..LocalOpts::default()
        };
        let streams = streams
            .into_iter()
            .map(|d| (d, super::udp::extras(&self.params)))
            .collect();
        let session = Session::start_with(&self.params, Side::Server, streams, waker, &local)?;
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
        // A client sets its UDP streams up one after another, a round trip
        // each: thousands across a long path take longer than one message.
        let per = self.ctrl.timing().rtt * 2;
        let setup = WHOLE_MSG + per.saturating_mul(roles.len() as u32).min(Duration::from_secs(600));
        let deadline = Instant::now() + setup;
        if udp {
            self.claim_udp_slot(tx, None, deadline)?;
        } else if let Ok(mut c) = self.ctx.registry.collecting.lock() {
            c.insert(self.cookie, tx);
        }
        // A small -w is offered in the streams' handshakes (server/window.rs).
        let place = self.ctx.windows.collecting(&self.params);
        self.ctrl.send_state(State::CreateStreams)?;
        let mut out = Vec::with_capacity(roles.len());
        let mut warnings = Vec::new();
        for (i, role) in roles.into_iter().enumerate() {
            let sock = self.await_stream(&rx, deadline, "Connection timed out", &|| answer_repeated_hellos(&out))?;
            let sr = socket2::SockRef::from(&sock);
            let remote = sock.peer_addr().ok();
            net::apply_data_options(&sr, &self.params, !udp, remote, &mut warnings)?;
            let local = sock.local_addr().map_err(|e| Error::io(Code::STREAMACCEPT, &e))?;
            let remote = remote.ok_or_else(|| Error::new(Code::STREAMACCEPT))?;
            let ds = DataStream::new(stream_id(i), role, sock, local, remote);
            self.output.emit(Event::StreamConnected(Box::new(ds.info.clone())));
            out.push(ds);
        }
        drop(place);
        if let Ok(mut c) = self.ctx.registry.collecting.lock() {
            c.remove(&self.cookie);
        }
        if let Ok(mut u) = self.ctx.registry.udp.lock() {
            let cookie = self.cookie;
            u.retain(|_, slot| slot.cookie != cookie);
        }
        warnings.dedup();
        for w in warnings {
            self.output.emit(Event::Warning(w));
        }
        Ok(out)
    }

    /// What the acceptor hands this test next (a stream's socket, or the
    /// QUIC connection's first datagram), until `deadline`; the server's
    /// stop and a client that gave up (its control connection closed) end
    /// the wait. `why` says what did not come in the timeout's error.
    fn await_stream<T>(
        &mut self,
        rx: &mpsc::Receiver<T>,
        deadline: Instant,
        why: &str,
        tick: &dyn Fn(),
    ) -> Result<T, Error> {
        loop {
            if self.ctx.stop.load(Relaxed) {
                return Err(Error::new(Code::SERVERTERM));
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(got) => return Ok(got),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    tick();
                    if Instant::now() >= deadline {
                        return Err(Error::msg(
                            Code::STREAMACCEPT,
                            format!("unable to accept stream connection: {why}"),
                        ));
                    }
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
        }
    }

    /// `--quic`: the client's QUIC connection to this port (its first
    /// datagram comes through the acceptor, `quic_initial`), and on it a
    /// stream per iperf3 stream, each opened with the test's cookie.
    fn collect_quic(&mut self) -> Result<Vec<DataStream>, Error> {
        let quic = super::quic::installed()?;
        let tuning = super::quic::Tuning::of(&self.params)?;
        let roles = stream_roles(self.params.direction, self.params.streams, Side::Server);
        let (tx, rx) = mpsc::sync_channel(1);
        // No UDP stream of iperf3's is taken for this test: its hellos
        // would need the cookie, and nothing reads what they would bring.
        let (none, _) = mpsc::sync_channel(0);
        let deadline = Instant::now() + WHOLE_MSG;
        self.claim_udp_slot(none, Some(tx), deadline)?;
        self.ctrl.send_state(State::CreateStreams)?;
        let (sock, first, from) = self.await_stream(&rx, deadline, "no QUIC connection from the client", &|| {})?;
        let sends: Vec<bool> = roles
            .iter()
            .map(|r| *r == wirespeed_core::stats::StreamRole::Send)
            .collect();
        let stop = &self.ctx.stop;
        let accepted = quic.accept(
            sock,
            first,
            from,
            &self.cookie.to_wire(),
            &sends,
            tuning,
            deadline,
            &|| stop.load(Relaxed),
        );
        // The slot stays while the handshake runs: a repeated Initial that
        // reached the port meanwhile is dropped, not taken for iperf 2's.
        if let Ok(mut u) = self.ctx.registry.udp.lock() {
            let cookie = self.cookie;
            u.retain(|_, slot| slot.cookie != cookie);
        }
        let mut conn = accepted?;
        let pipes = conn.take_streams();
        self.quic = Some(conn);
        let mut out = Vec::with_capacity(roles.len());
        for (i, (role, pipe)) in roles.into_iter().zip(pipes).enumerate() {
            let local = pipe.sock.local_addr().map_err(|e| Error::io(Code::STREAMACCEPT, &e))?;
            let ds = DataStream::new(stream_id(i), role, DataSock::Pipe(pipe), local, from);
            self.output.emit(Event::StreamConnected(Box::new(ds.info.clone())));
            out.push(ds);
        }
        Ok(out)
    }

    /// The end's summary with a `--quic` test's own numbers.
    fn summary(&self, session: &Session) -> Summary {
        let mut summary = session.stats.summary(Instant::now(), None, session.congestion());
        summary.quic = self.quic.as_ref().map(|q| q.totals());
        summary
    }

    /// Becomes the test that collects UDP streams (or, `quic`, its QUIC
    /// connection) from this client's address, waiting while another test
    /// from the same address does.
    fn claim_udp_slot(
        &mut self,
        tx: SyncSender<DataSock>,
        quic: Option<SyncSender<QuicInitial>>,
        deadline: Instant,
    ) -> Result<(), Error> {
        if let Some(e) = &self.ctx.udp_error {
            return Err(e.clone());
        }
        let local = net::canonical(SocketAddr::new(self.ctrl.local.ip(), self.ctx.port));
        let key = net::canonical(self.ctrl.peer).ip();
        loop {
            if let Ok(mut u) = self.ctx.registry.udp.lock()
                && !u.contains_key(&key)
            {
                u.insert(
                    key,
                    UdpSlot {
                        cookie: self.cookie,
                        needs_cookie: self.wirespeed_client || quic.is_some(),
                        local,
                        tx: tx.clone(),
                        quic: quic.clone(),
                        given: Vec::new(),
                    },
                );
                return Ok(());
            }
            if self.ctx.stop.load(Relaxed) {
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
            ctx: self.ctx,
            guards: Guards::new(&self.cfg, &self.params, started, RCV_TIMEOUT),
            stopped: None,
        };
        let spec = RunSpec {
            peer_ends: true,
            ..RunSpec::default()
        };
        let ended = wirespeed_core::engine::run::run(&mut session, &spec, &mut steer, &mut |e| output.emit(e));
        let stopped = steer.stopped;
        self.session = Some(session);
        if matches!(ended?, Ended::Aborted | Ended::Unanswered(_)) {
            let (tell, why) = stopped.unwrap_or((State::IperfDone, None));
            return self.terminated(tell, why);
        }
        let session = self.session.as_ref().expect("session");
        let now = Instant::now();
        let congestion = session.congestion();
        let summary = self.summary(session);
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
        if let Some(q) = self.quic.as_mut() {
            q.close();
        }
        Ok(())
    }

    /// After a test was cut short: a summary of what was measured, then `why`.
    fn terminated(&mut self, tell: State, why: Option<&str>) -> Result<(), Error> {
        if let Some(s) = self.session.as_ref() {
            let summary = self.summary(s);
            self.output.emit(Event::End(Box::new(summary)));
        }
        if tell == State::ServerTerminate {
            self.output.emit(Event::Error(self.ctx.interrupted()));
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
/// the server's stop; its watchdogs and limits are the server's guards
/// (`server::guards`), which iperf 2 tests share.
struct ServerSteering<'a> {
    ctrl: &'a mut Ctrl,
    machine: &'a mut ServerMachine,
    ctx: &'a Arc<ServerCtx>,
    guards: Guards,
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
        if self.ctx.stop.load(Relaxed) {
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
        let ctrl = &*self.ctrl;
        self.guards
            .check(session, now, &|| ctrl.timing())
            .map_err(|b| b.error)?;
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
                self.guards.heard(Instant::now());
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

    fn path_hint(&self) -> wirespeed_core::engine::drain::PathTiming {
        self.ctrl.timing()
    }

    /// `--server-bitrate-limit`: the average over the window must stay
    /// under the limit (server/rate.rs), judged at each interval.
    fn after_timers(&mut self, session: &Session, interval: bool) -> Result<(), Error> {
        if !interval {
            return Ok(());
        }
        let r = self
            .guards
            .interval(Instant::now(), session.stats.moved())
            .map_err(|b| b.error);
        if let Err(e) = &r {
            // Why, before the streams break (the loop aborts them on an
            // error): a client that is writing would otherwise meet the
            // broken stream first and report that. It gets a second to
            // hang up, as for a server stop.
            send_server_error(self.ctrl, e);
            let until = Instant::now() + Duration::from_secs(1);
            while let Ok(Woke::Data | Woke::Waker) = self.ctrl.wait(Some(until)) {}
        }
        r
    }
}
