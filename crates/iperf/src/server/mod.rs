//! The server: one acceptor for every listening port, TCP and UDP, for
//! both dialects, many tests at once.
//!
//! A server listens as its configuration says (the iperf3 dialect's `-s`:
//! one port, TCP and UDP; iperf 2's `-s`: the ports of `-p m-n`, TCP, or
//! UDP with `-u`; an iperf 2 client's `-L` listener for the server's
//! connect-back) and runs one [`acceptor`] over all of it. The acceptor
//! tells each client's dialect from its first bytes or datagram
//! (`proto::sniff`) and hands it to the test that serves it: an iperf3
//! test (`dialect::iperf3::server`) or iperf 2 flows
//! (`dialect::iperf2::server`). Every test is counted in one registry, against one
//! `--max-tests`, under one access policy, into one `--metrics`.

pub(crate) mod acceptor;
pub mod access;
pub(crate) mod guards;
pub(crate) mod rate;
pub(crate) mod registry;
pub(crate) mod sockets;
pub(crate) mod window;

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use wirespeed_proto::iperf3::Cookie;
use wirespeed_proto::iperf3::udp::Hello;

pub use access::AccessPolicy;
pub use sockets::Join;

use registry::Registry;
use wirespeed_core::config::{Dialect, Protocol, TestConfig};
use wirespeed_core::error::Error;
use wirespeed_core::events::{Event, Side};
use wirespeed_report::metrics::{Metrics, MetricsSink, Refusal};
use wirespeed_report::{Output, Reporter};

/// Connections the acceptor holds before they have identified themselves
/// (and sent their parameters). Past this, the one that has waited longest
/// is closed, so a flood of idle connections cannot crowd out real clients.
pub(crate) const MAX_PENDING: usize = 1024;
/// Listen backlog: large, so bursts of connections (many streams, many
/// clients) are never reset.
pub(crate) const BACKLOG: i32 = 4096;

/// What a server is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Serve clients of either dialect on one port, TCP and UDP (the
    /// iperf3 dialect's `-s`).
    Shared,
    /// Serve as iperf 2's `-s` does: the ports of `-p m-n`, TCP (or UDP
    /// with `-u`), 2.1.8's rules for what a connection may send.
    Iperf2,
    /// An iperf 2 client's `-L` listener: the server's connect-back for
    /// `-d`/`-r`, `expect` headerless flows run as one test.
    ConnectBack {
        /// Flows the server opens.
        expect: u32,
    },
}

/// Whether a test ran or was turned away before it started (a refusal
/// does not count for `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ran,
    Refused,
}

/// Where the acceptor hands each client: the dialects' entry points. The
/// wings fill it in (`crate::dialect::wings`), each holding what it keeps
/// for the whole server; the shared server calls them without knowing
/// what is behind them.
#[derive(Clone)]
pub struct Wings {
    pub(crate) iperf3: Arc<dyn Iperf3Wing>,
    pub(crate) iperf2: Arc<dyn Iperf2Wing>,
}

/// The iperf3 wing as the acceptor sees it.
pub(crate) trait Iperf3Wing: Send + Sync {
    /// A control connection whose cookie and parameters were read.
    fn test(&self, ctx: &Arc<ServerCtx>, ctl: TcpStream, cookie: Cookie, peer: SocketAddr, params: Vec<u8>);
    /// A UDP stream's hello.
    fn udp_hello(&self, ctx: &ServerCtx, hello: Hello<'_>, from: SocketAddr);
    /// A QUIC Initial: true when a `--quic` test took it.
    fn quic_initial(&self, ctx: &ServerCtx, datagram: &[u8], from: SocketAddr) -> bool;
}

/// The iperf 2 wing as the acceptor sees it.
pub(crate) trait Iperf2Wing: Send + Sync {
    /// A TCP connection, with the bytes read from it so far.
    fn tcp(&self, ctx: Arc<ServerCtx>, s: TcpStream, peer: SocketAddr, prefix: Vec<u8>);
    /// A datagram that is not an iperf3 hello (an iperf 2 flow's), with
    /// the port it came to and its arrival time (wall clock, ns).
    fn udp(&self, ctx: &Arc<ServerCtx>, local: SocketAddr, from: SocketAddr, d: &[u8], rx_ns: i64, tos: Option<u8>);
    /// The acceptor read every datagram waiting: flows may take theirs.
    fn udp_drained(&self, ctx: &ServerCtx);
}

/// What the acceptor and every test of a server share: configuration,
/// limits, access policy, metrics, the registry of running tests, and the
/// stop.
pub(crate) struct ServerCtx {
    /// The server's configuration.
    pub cfg: TestConfig,
    /// What iperf 2 flows run with: the server's own configuration, or on
    /// a shared port iperf 2's defaults with the server's output settings.
    pub flow_cfg: TestConfig,
    pub mode: Mode,
    pub out: Output,
    pub registry: Registry,
    /// Where each client is handed.
    pub(crate) wings: Wings,
    /// Raised when the server stops: every test ends.
    pub stop: Arc<AtomicBool>,
    /// The signal that stopped it (0: none).
    pub stop_signal: AtomicUsize,
    /// Tests (of both dialects) running now.
    pub active: AtomicUsize,
    /// Bounceback (echo) connections now: counted apart from tests, so
    /// echo clients that go silent cannot hold every test's place.
    pub echoes: AtomicUsize,
    /// iperf 2 connections and UDP flows being set up or run.
    pub flows: AtomicUsize,
    /// Tests started so far (names an iperf3 test's report).
    pub started: std::sync::atomic::AtomicU64,
    /// iperf 2 connections and UDP flows accepted (`-s -P n`).
    pub served: AtomicU32,
    done_tx: Mutex<mpsc::Sender<Outcome>>,
    /// The server's port (the first of a range).
    pub port: u16,
    /// Why UDP tests cannot run, if the UDP port could not be opened.
    pub udp_error: Option<Error>,
    pub metrics: OnceLock<Arc<Metrics>>,
    /// What watches every test (`--ui`'s board).
    pub watcher: OnceLock<Box<dyn wirespeed_report::Watcher>>,
    pub policy: AccessPolicy,
    pub auth: Option<crate::auth::ServerAuth>,
    /// On a shared port, headerless iperf 2 data must start with 2.1.8's
    /// `0123...` pattern (a `-C` client); a dedicated iperf 2 server
    /// takes any bytes, as 2.1.8 does.
    pub strict: bool,
    /// The UDP port has joined a multicast group.
    pub multicast: bool,
    /// A connect-back's reports go to its client's reporter.
    forward: OnceLock<Arc<Mutex<Reporter>>>,
    /// Window leases on the shared listener (a client's small `-w`).
    pub windows: window::Windows,
}

impl ServerCtx {
    /// A reporter with the sinks `cfg` asks for (a connect-back's: its
    /// client's).
    pub fn reporter(&self, cfg: &TestConfig, side: Side) -> Reporter {
        match self.forward.get() {
            Some(f) => Reporter::forwarding(f.clone()),
            None => Reporter::for_config(cfg, self.out.clone(), side),
        }
    }

    /// A test's reporter: `reporter`, plus the watchers (`watch`).
    pub(crate) fn test_reporter(&self, cfg: &TestConfig, protocol: Protocol, client: std::net::IpAddr) -> Reporter {
        let mut r = self.reporter(cfg, Side::Server);
        self.watch(&mut r, cfg, protocol, wirespeed_core::net::host_string(client));
        r
    }

    /// Adds to a test's reporter the sinks that watch the server: the
    /// metrics (`--metrics`) and the web page (`--ui`).
    pub fn watch(&self, r: &mut Reporter, cfg: &TestConfig, protocol: Protocol, client: String) {
        if let Some(m) = self.metrics.get() {
            let labels = wirespeed_report::metrics::labels(cfg.dialect, protocol);
            r.add(Box::new(MetricsSink::new(m.clone(), labels, client.clone())));
        }
        if let Some(w) = self.watcher.get() {
            let who = match cfg.dialect {
                wirespeed_core::config::Dialect::Iperf3 => "iperf3",
                wirespeed_core::config::Dialect::Iperf2 => "iperf 2",
            };
            let title = format!("{} {who} test from {client}", protocol.name());
            r.add(w.sink(title, &client, cfg.dialect));
        }
    }

    /// Counts a refusal (`--metrics`).
    pub fn refused(&self, why: Refusal) {
        if let Some(m) = self.metrics.get() {
            m.refused(why);
        }
    }

    /// Whether another test may start now (`--max-tests`).
    pub(crate) fn has_room(&self) -> bool {
        self.active.load(Relaxed) < self.cfg.server.max_tests as usize
    }

    /// Whether another bounceback connection may be echoed now: four per
    /// test place (`--max-tests`), at least 64, apart from the tests.
    pub(crate) fn has_echo_room(&self) -> bool {
        let cap = (self.cfg.server.max_tests as usize).saturating_mul(4).max(64);
        self.echoes.load(Relaxed) < cap
    }

    /// A test ended (or was refused before it started).
    pub(crate) fn test_done(&self, outcome: Outcome) {
        if let Ok(tx) = self.done_tx.lock() {
            let _ = tx.send(outcome);
        }
    }

    /// Emits `ev` on a plain reporter of the server (banners, refusals).
    pub fn say(&self, ev: Event) {
        self.reporter(&self.cfg, Side::Server).emit(ev);
    }

    /// Reports a failure outside a running test (a refusal, a client that
    /// never sent its parameters, the server's own end): one line, or with
    /// `--json` a whole document with its `"error"`, as iperf3's server
    /// prints one per failed test.
    pub(crate) fn say_failure(&self, e: Error) {
        let mut r = self.reporter(&self.cfg, Side::Server);
        r.emit(Event::Error(e));
        r.emit(Event::Done);
    }

    /// Why tests end when the server is stopped: iperf3 3.21's words.
    pub fn interrupted(&self) -> Error {
        Error::interrupted(
            wirespeed_core::error::Code::SERVERTERM,
            "server",
            self.stop_signal.load(Relaxed),
        )
    }
}

/// Counts a running test while alive.
pub(crate) struct Running<'a>(&'a AtomicUsize);

impl<'a> Running<'a> {
    /// Counts one more.
    pub fn new(n: &'a AtomicUsize) -> Running<'a> {
        n.fetch_add(1, Relaxed);
        Running(n)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// A server bound to its ports.
pub struct Server {
    ctx: Arc<ServerCtx>,
    sockets: sockets::Sockets,
    done_rx: mpsc::Receiver<Outcome>,
}

impl Server {
    /// Binds the server `cfg` describes (its dialect decides the mode).
    pub fn bind(cfg: &TestConfig, out: Output, wings: Wings) -> Result<Server, Error> {
        let mode = match cfg.dialect {
            Dialect::Iperf3 => Mode::Shared,
            Dialect::Iperf2 => Mode::Iperf2,
        };
        Server::bind_mode(cfg, out, mode, wings)
    }

    /// Binds a server of `mode` for `cfg`.
    pub(crate) fn bind_mode(cfg: &TestConfig, out: Output, mode: Mode, wings: Wings) -> Result<Server, Error> {
        let sockets = sockets::Sockets::open(cfg, mode)?;
        let (done_tx, done_rx) = mpsc::channel();
        let policy = match mode {
            Mode::ConnectBack { .. } => AccessPolicy::open(),
            _ => AccessPolicy::from_config(cfg)?,
        };
        let auth = match mode {
            Mode::Shared => crate::auth::ServerAuth::from_config(&cfg.server)?,
            _ => None,
        };
        let flow_cfg = match mode {
            Mode::Shared => iperf2_defaults(cfg),
            _ => cfg.clone(),
        };
        // Only the shared port's iperf3 tests bring a window of their own.
        let leased = match mode {
            Mode::Shared => sockets
                .tcp
                .iter()
                .filter_map(|l| l.try_clone().ok().map(socket2::Socket::from))
                .collect(),
            _ => Vec::new(),
        };
        let ctx = ServerCtx {
            cfg: cfg.clone(),
            flow_cfg,
            mode,
            out,
            registry: Registry::default(),
            wings,
            stop: Arc::new(AtomicBool::new(false)),
            stop_signal: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            echoes: AtomicUsize::new(0),
            flows: AtomicUsize::new(0),
            started: std::sync::atomic::AtomicU64::new(0),
            served: AtomicU32::new(0),
            done_tx: Mutex::new(done_tx),
            port: sockets.port,
            udp_error: sockets.udp_error.clone(),
            metrics: OnceLock::new(),
            watcher: OnceLock::new(),
            policy,
            auth,
            strict: mode == Mode::Shared,
            multicast: sockets.multicast,
            forward: OnceLock::new(),
            windows: window::Windows::new(leased),
        };
        Ok(Server {
            ctx: Arc::new(ctx),
            sockets,
            done_rx,
        })
    }

    /// The port the server listens on (the first of a range).
    pub fn port(&self) -> u16 {
        self.ctx.port
    }

    /// The banner of this server's listener.
    pub fn listening(&self) -> wirespeed_core::events::Listening {
        self.sockets.listening(&self.ctx.cfg, 1)
    }

    /// Sends the reports of its tests to `shared` (an iperf 2 client's
    /// reporter, for its connect-back). Call before `run`.
    pub(crate) fn forwarding_to(self, shared: Arc<Mutex<Reporter>>) -> Server {
        let _ = self.ctx.forward.set(shared);
        self
    }

    /// Shows each test to `watcher` (`--ui`'s board). Call before `run`.
    pub fn watched_by(self, watcher: Box<dyn wirespeed_report::Watcher>) -> Server {
        let _ = self.ctx.watcher.set(watcher);
        self
    }

    /// Reports tests and refusals into `m` (`--metrics`). Call before `run`.
    pub fn with_metrics(self, m: Arc<Metrics>) -> Server {
        let _ = self.ctx.metrics.set(m);
        self
    }

    /// Serves until a signal arrives (its number stored in `signal`), or
    /// the configuration's end: `-1` after one test, iperf 2's listen time
    /// (`-t`) or connection count (`-P`), a connect-back's flows.
    pub fn run(self, signal: Arc<AtomicUsize>) -> Result<(), Error> {
        acceptor::run(self.ctx, self.sockets, self.done_rx, signal)
    }
}

/// The configuration iperf 2 clients on a shared port get: iperf 2's
/// defaults, with the server's output, interval, format, addresses and
/// limits.
fn iperf2_defaults(cfg3: &TestConfig) -> TestConfig {
    let mut cfg = TestConfig {
        dialect: Dialect::Iperf2,
        port: cfg3.port,
        ..TestConfig::default()
    };
    cfg.output.interval = cfg3.output.interval;
    cfg.output.format = cfg3.output.format;
    cfg.output.json = cfg3.output.json;
    cfg.output.json_stream = cfg3.output.json_stream;
    cfg.output.logfile = cfg3.output.logfile.clone();
    cfg.params.repeating_payload = true;
    cfg.params.block_len = Some(wirespeed_core::config::DEFAULT_TCP_BLOCK);
    cfg.net = cfg3.net.clone();
    cfg.server.max_streams = cfg3.server.max_streams;
    cfg.server.max_duration = cfg3.server.max_duration;
    cfg.server.max_tests = cfg3.server.max_tests;
    cfg
}
