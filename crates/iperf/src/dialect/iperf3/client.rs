//! The iperf3 client: drives the control exchange over a socket, starts the
//! session, and feeds the reporter.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::dialect::iperf3::ctrl::{Ctrl, Polled};
use crate::dialect::iperf3::quic::QuicConn;
use wirespeed_core::config::{Protocol, TestConfig};
use wirespeed_core::engine::run::{Ended, RunSpec, Steering, Turn};
use wirespeed_core::engine::{
    DataSock, DataStream, LocalOpts, Session, StreamExtras, fds_per_stream, reserve_fds, stream_id, stream_roles,
};
use wirespeed_core::error::{Code, Error, Kind};
use wirespeed_core::events::*;
use wirespeed_core::net::{self, ConnectOpts};
use wirespeed_proto::iperf3::machine::{ClientAction, ClientMachine};
use wirespeed_proto::iperf3::params::{ParamsExtras, effective_bitrate, encode_params};
use wirespeed_proto::iperf3::udp::{cookie_hello, is_hello_reply};
use wirespeed_proto::iperf3::{Cookie, Results, State, max_results_len};
use wirespeed_report::Reporter;

const SETUP_WAIT: Duration = Duration::from_secs(30);
const WHOLE_MSG: Duration = Duration::from_secs(30);

/// Runs a client test against `host:port`. Every outcome, including
/// failures, reaches `reporter` (ending with `Event::Done`); the return value
/// decides the exit code.
pub fn run(
    cfg: &TestConfig,
    host: &str,
    port: u16,
    reporter: &mut Reporter,
    signal: &Arc<AtomicUsize>,
) -> Result<(), Error> {
    let mut c = Client {
        cfg,
        host,
        port,
        reporter,
        signal,
        session: None,
        quic: None,
        ctrl: None,
        pending: None,
    };
    let r = c.run();
    if let Err(e) = &r {
        if let Some(s) = c.session.as_mut() {
            s.abort();
        }
        c.reporter.emit(Event::Error(e.clone()));
    }
    c.reporter.emit(Event::Done);
    match r {
        // Interrupted clients exit 0, as iperf3 3.19+ does.
        Err(e) if e.kind == Kind::Interrupt => Ok(()),
        other => other,
    }
}

/// Streams connected at CREATE_STREAMS, started at TEST_RUNNING.
type Pending = (Vec<(DataStream, StreamExtras)>, Arc<mio::Waker>, LocalOpts);

struct Client<'a> {
    cfg: &'a TestConfig,
    host: &'a str,
    port: u16,
    reporter: &'a mut Reporter,
    signal: &'a Arc<AtomicUsize>,
    session: Option<Session>,
    /// A `--quic` test's connection (dropped after the session, whose
    /// streams it carries).
    quic: Option<Box<dyn QuicConn>>,
    ctrl: Option<Ctrl>,
    pending: Option<Pending>,
}

impl Client<'_> {
    fn interrupted(&self) -> Option<usize> {
        match self.signal.load(Relaxed) {
            0 => None,
            s => Some(s),
        }
    }

    fn run(&mut self) -> Result<(), Error> {
        let cfg = self.cfg;
        wirespeed_core::engine::MuxMode::from_env()?;
        // -A n: this thread, and so every thread started after it (stream
        // threads, multiplexing workers), runs on CPU n, as iperf3 pins itself.
        if let Some(cpu) = cfg.net.affinity {
            wirespeed_core::engine::pin(cpu)?;
        }
        let mut params = cfg.params.clone();
        // --latency with --quic: the probes ride the test's connection.
        params.quic_probes = cfg.latency.is_some() && params.protocol == Protocol::Quic;
        // The password is asked for (if it must be) before connecting.
        let signal = self.signal.clone();
        let credentials = crate::auth::ClientCredentials::from_config(&cfg.auth, &|| signal.load(Relaxed) != 0)?;
        let (server_addr, control_mss, cookie) = self.connect_control()?;
        let udp_note = self.udp_block(&mut params, control_mss);
        let mut machine = ClientMachine::new();
        let timestamp = wirespeed_core::clock::timestamp_now();
        loop {
            let deadline = Some(Instant::now() + SETUP_WAIT);
            let b = self.ctrl().recv_byte(deadline, Code::RECVMESSAGE)?;
            match machine.on_byte(b)? {
                ClientAction::SendParams => {
                    let token = match &credentials {
                        Some(c) => Some(c.token(crate::auth::unix_now())?),
                        None => None,
                    };
                    let extras = ParamsExtras {
                        authtoken: token.as_deref(),
                        client_version: wirespeed_core::version::CLIENT_VERSION,
                    };
                    self.ctrl()
                        .send_json(&encode_params(&params, &extras), Code::SENDPARAMS)?;
                    let control = ControlInfo {
                        cookie: cookie.as_str().to_string(),
                        control_mss,
                        mss_set: params.mss,
                        target_bitrate: effective_bitrate(&params),
                        timestamp: timestamp.clone(),
                        udp_block_note: udp_note,
                        target_pps: params.pps,
                    };
                    self.reporter
                        .emit(Event::Connecting(Box::new(self.connecting(&params, control))));
                }
                ClientAction::CreateStreams => self.create_streams(&params, server_addr, &cookie)?,
                ClientAction::StartClocks => {}
                ClientAction::StartData => {
                    let (streams, waker, local) = self.pending.take().ok_or_else(|| Error::new(Code::MESSAGE))?;
                    let session = Session::start_with(&params, Side::Client, streams, waker, &local)?;
                    let start = StartInfo {
                        timestamp: timestamp.clone(),
                        connecting_to: Some((self.host.to_string(), self.port)),
                        cookie: cookie.as_str().to_string(),
                        tcp_mss_default: Some(control_mss),
                        ..session.start_info()
                    };
                    self.reporter.emit(Event::Start(Box::new(start)));
                    self.session = Some(session);
                    return self.run_test(&mut machine);
                }
                ClientAction::AccessDenied => return Err(Error::new(Code::ACCESSDENIED)),
                ClientAction::ServerError => return Err(server_error(self.ctrl())),
                ClientAction::ServerTerminated => return Err(Error::new(Code::SERVERTERM)),
                ClientAction::ExchangeResults | ClientAction::DisplayResults | ClientAction::Ignore => {}
            }
        }
    }

    /// Connects the control connection and sends the cookie: the server's
    /// address, the connection's MSS, the cookie.
    fn connect_control(&mut self) -> Result<(std::net::SocketAddr, u32, Cookie), Error> {
        let cfg = self.cfg;
        let sock = net::connect_client(&cfg.net, self.host, self.port)?;
        let server_addr = sock.peer_addr().map_err(|e| Error::io(Code::CONNECT, &e))?;
        net::setup_control(&sock, cfg.net.cntl_ka, cfg.net.snd_timeout)?;
        let control_mss = net::mss_of(&sock);
        let mut ctrl = Ctrl::new(sock).map_err(|e| Error::io(Code::CONNECT, &e))?;
        let cookie: Cookie = wirespeed_core::util::new_cookie();
        ctrl.write_all(&cookie.to_wire(), Instant::now() + SETUP_WAIT)
            .map_err(|e| Error::io(Code::SENDCOOKIE, &e))?;
        self.ctrl = Some(ctrl);
        Ok((server_addr, control_mss, cookie))
    }

    /// UDP datagrams as large as the control connection's MSS unless `-l`
    /// said otherwise (the size chosen is returned for the verbose note);
    /// a larger `-l` is warned about.
    fn udp_block(&mut self, params: &mut wirespeed_core::config::TestParams, control_mss: u32) -> Option<u32> {
        if params.protocol != Protocol::Udp {
            return None;
        }
        match params.block_len {
            None => {
                let len = if control_mss > 0 {
                    control_mss
                } else {
                    wirespeed_core::config::DEFAULT_UDP_BLOCK
                };
                params.block_len = Some(len.min(wirespeed_core::config::MAX_UDP_BLOCK));
                Some(len)
            }
            Some(len) if control_mss > 0 && len > control_mss => {
                self.reporter.emit(Event::Warning(format!(
                    "UDP block size {len} exceeds TCP MSS {control_mss}, may result in fragmentation / drops"
                )));
                None
            }
            Some(_) => None,
        }
    }

    /// What the client is about to run, for the reports.
    fn connecting(&self, params: &wirespeed_core::config::TestParams, control: ControlInfo) -> Connecting {
        Connecting {
            host: self.host.to_string(),
            port: self.port,
            direction: params.direction,
            settings: Settings {
                protocol: params.protocol,
                pid: std::process::id(),
                flows: params.streams,
                block_len: params.block_len_or_default(),
                tos: params.tos,
                nodelay: params.nodelay,
                window_requested: params.window.map(u64::from),
                ..Settings::default()
            },
            control: Some(control),
        }
    }

    /// CREATE_STREAMS: the data streams connect; their threads start on
    /// TEST_RUNNING.
    fn create_streams(
        &mut self,
        params: &wirespeed_core::config::TestParams,
        server: std::net::SocketAddr,
        cookie: &Cookie,
    ) -> Result<(), Error> {
        let cfg = self.cfg;
        let n = stream_roles(params.direction, params.streams, Side::Client).len();
        let mut per = fds_per_stream(params.protocol, n, cfg.file.is_some());
        if matches!(cfg.role, wirespeed_core::config::Role::Loopback) {
            // The in-process server holds the other ends.
            per *= 2;
        }
        reserve_fds(n, per)?;
        let streams = if params.protocol == Protocol::Quic {
            self.connect_quic(params, server, cookie)?
        } else {
            self.connect_streams(params, server, cookie)?
        };
        let waker = self.ctrl().waker();
        let local = LocalOpts {
            interval: cfg.output.interval,
            affinity: cfg.net.affinity,
            file: cfg.file.clone(),
            decides_end: true,
            // A wirespeed server half-closes its streams when its senders
            // stop; an iperf3 server closes them at TEST_END.
            peer_half_closes: true,
            samples: cfg.output.chart_samples(),
            // What the server sent with is known from its results (a
            // wirespeed server's `ecn` key): iperf3 3.12's server does not
            // set the TOS it is given on its own UDP sockets.
            ..LocalOpts::default()
        };
        self.pending = Some((streams, waker, local));
        Ok(())
    }

    /// `--quic`: one QUIC connection to the server's port, a stream per
    /// iperf3 stream, each opened with the cookie.
    fn connect_quic(
        &mut self,
        params: &wirespeed_core::config::TestParams,
        server: std::net::SocketAddr,
        cookie: &Cookie,
    ) -> Result<Vec<(DataStream, StreamExtras)>, Error> {
        let roles = stream_roles(params.direction, params.streams, Side::Client);
        let sends: Vec<bool> = roles
            .iter()
            .map(|r| *r == wirespeed_core::stats::StreamRole::Send)
            .collect();
        let wait = self.cfg.net.connect_timeout.unwrap_or(SETUP_WAIT);
        let tuning = crate::dialect::iperf3::quic::Tuning::of(params)?;
        // --latency: the idle round trips on the probe stream, before the
        // test's streams exist (the stage then probes beside the load, as
        // for any test).
        let mut prober = None;
        let rate = self.cfg.latency;
        let mut idle = |stream| {
            if let Some(rate) = rate {
                prober = Some(crate::latency::Prober::over_stream(stream, rate)?);
            }
            Ok(())
        };
        let mut conn = crate::dialect::iperf3::quic::installed()?.connect(
            server,
            &cookie.to_wire(),
            &sends,
            tuning,
            Instant::now() + wait,
            &mut idle,
        )?;
        if let Some(p) = prober {
            self.reporter.set_stage(Box::new(p.stage()));
        }
        let pipes = conn.take_streams();
        self.quic = Some(conn);
        let mut out = Vec::with_capacity(roles.len());
        for (i, (role, pipe)) in roles.into_iter().zip(pipes).enumerate() {
            let local = pipe.sock.local_addr().map_err(|e| Error::io(Code::STREAMCONNECT, &e))?;
            let peer = pipe.peer;
            let ds = DataStream::new(stream_id(i), role, DataSock::Pipe(pipe), local, peer);
            self.reporter.emit(Event::StreamConnected(Box::new(ds.info.clone())));
            out.push((ds, StreamExtras::default()));
        }
        Ok(out)
    }

    /// The end's summary with a `--quic` test's own numbers.
    fn summary(&self, theirs: Option<&Results>) -> Summary {
        let s = self.session.as_ref().expect("session");
        let mut summary = s.stats.summary(Instant::now(), theirs, s.congestion());
        summary.quic = self.quic.as_ref().map(|q| q.totals());
        summary
    }

    fn ctrl(&mut self) -> &mut Ctrl {
        self.ctrl.as_mut().expect("control connection is set up before use")
    }

    fn connect_streams(
        &mut self,
        params: &wirespeed_core::config::TestParams,
        server: std::net::SocketAddr,
        cookie: &Cookie,
    ) -> Result<Vec<(DataStream, StreamExtras)>, Error> {
        let cfg = self.cfg;
        let roles = stream_roles(params.direction, params.streams, Side::Client);
        let opts = |i: usize| ConnectOpts {
            bind: cfg.net.bind.as_deref(),
            port: cfg.net.cport.map(|p| p.wrapping_add(i as u16)),
            device: cfg.net.bind_dev.as_deref(),
            timeout: Some(cfg.net.connect_timeout.unwrap_or(SETUP_WAIT)),
            mptcp: params.mptcp,
        };
        // TCP streams handshake a batch at a time; each then gets its
        // cookie in stream order, which is the order a server that reads
        // cookies as it accepts (iperf3) numbers them in. A batch, not all:
        // a server holds only so many connections that have not yet said
        // whose they are.
        let signal = self.signal.clone();
        let stop = move || signal.load(Relaxed) != 0;
        let apply = |s: &socket2::Socket| {
            let mut w = Vec::new();
            net::apply_data_options(s, params, true, Some(server), &mut w)?;
            if let Some(t) = cfg.net.snd_timeout {
                wirespeed_sys::socket::set_user_timeout(&socket2::SockRef::from(s), t)
                    .map_err(|e| Error::io(Code::SETUSERTIMEOUT, &e))?;
            }
            Ok(())
        };
        let mut tcp = std::collections::VecDeque::new();
        let roles_len = roles.len();
        let mut out = Vec::with_capacity(roles_len);
        let mut warnings = Vec::new();
        for (i, role) in roles.into_iter().enumerate() {
            if let Some(s) = self.interrupted() {
                return Err(interrupt_error(s));
            }
            let mut extras = super::udp::extras(params);
            let (sock, local) = if params.protocol == Protocol::Udp {
                let mut w = Vec::new();
                let u = net::connect_udp(server, &opts(i), |s| {
                    net::apply_data_options(s, params, false, Some(server), &mut w)
                })?;
                warnings.extend(w);
                // A reverse test's first data may overtake the reply: it is
                // the stream's, not the handshake's.
                extras.udp_prefeed = udp_hello(&u, &cookie_hello(&cookie.to_wire()), Instant::now() + SETUP_WAIT)?;
                let local = u.local_addr().map_err(|e| Error::io(Code::STREAMCONNECT, &e))?;
                (DataSock::Udp(u), local)
            } else {
                if tcp.is_empty() {
                    let n = (roles_len - i).min(net::CONNECTS_AT_ONCE);
                    let opts_at = |k: usize| opts(i + k);
                    tcp.extend(net::connect_tcp_many(
                        server,
                        n,
                        &opts_at,
                        &apply,
                        Code::STREAMCONNECT,
                        &stop,
                    ));
                }
                let sock = tcp
                    .pop_front()
                    .unwrap_or_else(|| Err(Error::new(Code::STREAMCONNECT)))?;
                if let Some(w) = params.window {
                    net::set_buffers(&socket2::SockRef::from(&sock), w as usize, &mut warnings)?;
                }
                let _ = sock.set_write_timeout(Some(Duration::from_secs(10)));
                (&sock)
                    .write_all(&cookie.to_wire())
                    .map_err(|e| Error::io(Code::SENDCOOKIE, &e))?;
                let _ = sock.set_write_timeout(None);
                let local = sock.local_addr().map_err(|e| Error::io(Code::STREAMCONNECT, &e))?;
                (DataSock::Tcp(sock), local)
            };
            let ds = DataStream::new(stream_id(i), role, sock, local, server);
            self.reporter.emit(Event::StreamConnected(Box::new(ds.info.clone())));
            out.push((ds, extras));
        }
        warnings.dedup();
        for w in warnings {
            self.reporter.emit(Event::Warning(w));
        }
        Ok(out)
    }

    fn run_test(&mut self, machine: &mut ClientMachine) -> Result<(), Error> {
        let mut session = self.session.take().expect("session");
        let reporter = &mut *self.reporter;
        let mut steer = ClientSteering {
            ctrl: self.ctrl.as_mut().expect("control connection"),
            machine,
            signal: self.signal,
            stopped: None,
            peer_ended: false,
        };
        let spec = RunSpec {
            drain: Duration::from_secs(5),
            ..RunSpec::default()
        };
        let ended = wirespeed_core::engine::run::run(&mut session, &spec, &mut steer, &mut |e| reporter.emit(e));
        let stopped = steer.stopped;
        self.session = Some(session);
        let ended = ended?;
        if let Ended::Unanswered(e) = ended {
            // Our side of the test still stands: its summary, then why
            // the server's is missing.
            let summary = self.summary(None);
            self.reporter.emit(Event::End(Box::new(summary)));
            return Err(e);
        }
        if matches!(ended, Ended::Aborted) || stopped.is_some() {
            let summary = self.summary(None);
            self.reporter.emit(Event::End(Box::new(summary)));
            return Err(match stopped {
                Some(Stopped::Interrupted(sig)) => interrupt_error(sig),
                _ => Error::new(Code::SERVERTERM),
            });
        }
        self.exchange_results(machine)
    }

    /// The results exchange after the test: ours, theirs, the summary.
    fn exchange_results(&mut self, machine: &mut ClientMachine) -> Result<(), Error> {
        let session = self.session.as_ref().expect("session");
        let now = Instant::now();
        let congestion = session.congestion();
        let ours = session.stats.local_results(now, congestion);
        self.ctrl().send_json(&ours.encode(), Code::SENDRESULTS)?;
        let streams = self.session.as_ref().map_or(0, |s| s.stats.streams.len());
        let max = max_results_len(streams, self.cfg.params.get_server_output);
        let theirs = self.ctrl().recv_json(max, WHOLE_MSG, WHOLE_MSG, Code::RECVRESULTS)?;
        let theirs = Results::decode(&theirs)?;
        let session = self.session.as_ref().expect("session");
        for r in &theirs.streams {
            if !session.stats.streams.iter().any(|s| s.id as i64 == r.id) {
                return Err(Error::new(Code::STREAMID));
            }
        }
        machine.results_exchanged();
        loop {
            let b = self
                .ctrl()
                .recv_byte(Some(Instant::now() + WHOLE_MSG), Code::RECVMESSAGE)?;
            match machine.on_byte(b)? {
                ClientAction::DisplayResults => break,
                ClientAction::ServerError => return Err(server_error(self.ctrl())),
                ClientAction::ServerTerminated => return self.terminated_late(),
                _ => {}
            }
        }
        let summary = self.summary(Some(&theirs));
        self.reporter.emit(Event::End(Box::new(summary)));
        if let Some(t) = theirs.server_output_text {
            self.reporter.emit(Event::ServerOutput(ServerOutput::Text(t)));
        }
        if let Some(j) = theirs.server_output_json {
            self.reporter.emit(Event::ServerOutput(ServerOutput::Json(j)));
        }
        self.ctrl().send_state(State::IperfDone)?;
        self.ctrl().drain_close(Instant::now() + Duration::from_secs(2));
        if let Some(q) = self.quic.as_mut() {
            q.close();
        }
        Ok(())
    }

    /// The server ended the test after ours had stopped: our summary, and
    /// SERVER_TERMINATE.
    fn terminated_late(&mut self) -> Result<(), Error> {
        if self.session.is_some() {
            let summary = self.summary(None);
            self.reporter.emit(Event::End(Box::new(summary)));
        }
        Err(Error::new(Code::SERVERTERM))
    }
}

/// Why the client's loop was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// A signal (its number).
    Interrupted(usize),
    /// SERVER_TERMINATE.
    ServerTerminated,
}

/// The iperf3 client's part of the test loop: the control connection.
struct ClientSteering<'a> {
    ctrl: &'a mut Ctrl,
    machine: &'a mut ClientMachine,
    signal: &'a Arc<AtomicUsize>,
    stopped: Option<Stopped>,
    /// The server asked for the results before we ended the test.
    peer_ended: bool,
}

impl ClientSteering<'_> {
    /// Acts on one state byte from the server.
    fn on_byte(&mut self, b: u8) -> Result<Turn, Error> {
        match self.machine.on_byte(b)? {
            ClientAction::ServerError => Err(server_error(self.ctrl)),
            ClientAction::ServerTerminated => {
                self.stopped = Some(Stopped::ServerTerminated);
                Ok(Turn::Abort)
            }
            ClientAction::AccessDenied => Err(Error::new(Code::ACCESSDENIED)),
            ClientAction::ExchangeResults => {
                self.peer_ended = true;
                Ok(Turn::Finish)
            }
            _ => Ok(Turn::Go),
        }
    }
}

impl Steering for ClientSteering<'_> {
    fn check(&mut self, _session: &Session, _now: Instant) -> Result<Turn, Error> {
        match self.signal.load(Relaxed) {
            0 => Ok(Turn::Go),
            sig => {
                let _ = self.ctrl.send_state(State::ClientTerminate);
                self.stopped = Some(Stopped::Interrupted(sig));
                Ok(Turn::Abort)
            }
        }
    }

    fn wait(&mut self, _session: &Session, until: Instant) -> Result<Turn, Error> {
        match self
            .ctrl
            .poll_byte(Some(until))
            .map_err(|e| Error::io(Code::RECVMESSAGE, &e))?
        {
            Polled::Eof => Err(Error::new(Code::CTRLCLOSE)),
            Polled::Byte(b) => self.on_byte(b),
            Polled::Woken => Ok(Turn::Go),
        }
    }

    /// A stream failing is often the echo of the server ending the test
    /// (terminated, or an error it is about to report): give the control
    /// connection a moment to say so, and report that instead.
    fn stream_failed(&mut self, e: Error) -> Result<Turn, Error> {
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            match self.ctrl.poll_byte(Some(deadline)) {
                Ok(Polled::Byte(b)) => match self.machine.on_byte(b) {
                    Ok(ClientAction::ServerTerminated) => {
                        self.stopped = Some(Stopped::ServerTerminated);
                        return Ok(Turn::Abort);
                    }
                    Ok(ClientAction::ServerError) => return Err(server_error(self.ctrl)),
                    _ => {}
                },
                Ok(Polled::Eof) => return Err(Error::new(Code::CTRLCLOSE)),
                _ => break,
            }
        }
        Err(e)
    }

    fn path_hint(&self) -> wirespeed_core::engine::drain::PathTiming {
        self.ctrl.timing()
    }

    /// TEST_END, then the server's EXCHANGE_RESULTS (unless it asked first).
    fn senders_stopped(&mut self, _session: &mut Session) -> Result<(), Error> {
        if self.peer_ended {
            return Ok(());
        }
        self.ctrl.send_state(State::TestEnd)?;
        self.machine.test_end_sent();
        let deadline = Instant::now() + WHOLE_MSG;
        loop {
            let b = self.ctrl.recv_byte(Some(deadline), Code::RECVMESSAGE).map_err(|e| {
                if Instant::now() >= deadline {
                    Error::msg(
                        Code::RECVMESSAGE,
                        format!(
                            "unable to receive control message: the server did not answer for {} s after the \
                             test's end (the path or the server may be down)",
                            WHOLE_MSG.as_secs()
                        ),
                    )
                } else {
                    e
                }
            })?;
            match self.on_byte(b)? {
                Turn::Finish => return Ok(()),
                // The server ended it meanwhile: what was measured is
                // still drained and reported.
                Turn::Abort => return Ok(()),
                Turn::Go => {}
            }
        }
    }
}

/// The server's SERVER_ERROR: its code and errno.
fn server_error(ctrl: &mut Ctrl) -> Error {
    let deadline = Instant::now() + Duration::from_secs(5);
    let code = ctrl.recv_i32_or_eof(deadline).ok().flatten().unwrap_or(0);
    let errno = ctrl.recv_i32_or_eof(deadline).ok().flatten().unwrap_or(0);
    if wirespeed_proto::iperf3::framing::is_policy_refusal(code, errno) {
        // A wirespeed server's --allow/--deny (an iperf3 client prints
        // "test authorization failed").
        return Error {
            kind: Kind::Server,
            ..Error::msg(
                Code::AUTHTEST,
                "access denied: the server's --allow/--deny does not admit this client's address",
            )
        };
    }
    let mut e = Error::new(Code(code));
    e.errno = (errno != 0).then_some(errno);
    e.kind = Kind::Server;
    let text = e.text();
    Error {
        detail: Some(format!("SERVER ERROR - {text}")),
        ..e
    }
}

/// Opens a UDP stream: "9876" to the server (followed by the cookie,
/// which C servers do not read), "6789" back from the stream's own server
/// socket. The hello is repeated every second in case the network lost it
/// (a wirespeed server answers a repeat on the stream's socket too). A
/// datagram other than the reply is a reverse test's first data (the reply
/// was lost, or a reordering path delivered the data first): it ends the
/// wait, and is returned (with its arrival time) for the stream to count.
type Early = Vec<(Vec<u8>, i64, Option<u8>)>;

fn udp_hello(sock: &std::net::UdpSocket, hello: &[u8], deadline: Instant) -> Result<Early, Error> {
    let err = |e: &std::io::Error| Error::io(Code::STREAMCONNECT, e);
    let mut buf = vec![0u8; wirespeed_core::config::MAX_UDP_BLOCK as usize + 1];
    let resend = Duration::from_secs(1);
    let mut next_hello = Instant::now();
    let mut early = Vec::new();
    // A reverse stream's first datagrams may come before the reply: with
    // their ECN field.
    let ipv6 = sock.local_addr().is_ok_and(|a| a.is_ipv6());
    let _ = wirespeed_sys::udp::set_recv_tos(sock, ipv6);
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::msg(
                Code::STREAMREAD,
                "unable to read from stream socket: no reply to the UDP stream request",
            ));
        }
        if now >= next_hello {
            sock.send(hello).map_err(|e| err(&e))?;
            next_hello = now + resend;
        }
        let wait = next_hello.min(deadline).saturating_duration_since(now);
        sock.set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .map_err(|e| err(&e))?;
        match wirespeed_sys::udp::recv_from_tos(sock, &mut buf) {
            Ok((n, _, _)) if is_hello_reply(&buf[..n]) => {
                sock.set_read_timeout(None).map_err(|e| err(&e))?;
                return Ok(early);
            }
            Ok((n, _, tos)) => {
                early.push((buf[..n].to_vec(), wirespeed_core::clock::wall_ns(), tos));
                // Data from the server's stream socket (the socket is
                // connected to it): the server has the stream and its test
                // has started, so the reply was lost (or is still behind
                // the data on a reordering path, and nothing needs it).
                // Waiting for it would wait out the setup time.
                sock.set_read_timeout(None).map_err(|e| err(&e))?;
                return Ok(early);
            }
            Err(e) if wirespeed_core::engine::is_timeout(&e) => {}
            Err(e) => return Err(err(&e)),
        }
    }
}

fn interrupt_error(sig: usize) -> Error {
    Error::interrupted(Code::CLIENTTERM, "client", sig)
}
