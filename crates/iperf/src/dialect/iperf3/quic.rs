//! The QUIC data connection of an iperf3 test run with `-q`/`--quic`
//! (docs/protocols.md § QUIC data): what the dialect needs of it. The
//! control connection stays iperf3's TCP one; the data is one QUIC
//! connection from the client to the server's port (UDP), each of its
//! streams opened with the test's cookie, one QUIC stream per iperf3
//! stream (`-P N`: N streams on the one connection). QUIC itself (quinn,
//! rustls) is `wirespeed-quic`'s, which the binary installs here at start
//! ([`install`]): this crate links no async runtime and no TLS.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use wirespeed_core::config::TestParams;
use wirespeed_core::engine::pipe::{ByteStream, PipeSock};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::QuicTotals;

/// The congestion controllers a `--quic` test can run (`-C`), as quinn
/// has them. Only the sender's matters; both ends take the test's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Controller {
    /// CUBIC (RFC 9438), quinn's default.
    #[default]
    Cubic,
    /// NewReno (RFC 9002's own).
    NewReno,
    /// BBR (version 1; quinn calls its BBR experimental).
    Bbr,
}

impl Controller {
    /// The names `-C` takes with `--quic`.
    pub const NAMES: &'static str = "cubic, reno (newreno) or bbr";

    /// `-C`'s name (any case), if QUIC has it.
    pub fn parse(name: &str) -> Option<Controller> {
        match name.to_ascii_lowercase().as_str() {
            "cubic" => Some(Controller::Cubic),
            "reno" | "newreno" | "new_reno" => Some(Controller::NewReno),
            "bbr" => Some(Controller::Bbr),
            _ => None,
        }
    }

    /// How reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Controller::Cubic => "cubic",
            Controller::NewReno => "newreno",
            Controller::Bbr => "bbr",
        }
    }
}

/// What a test asks of its QUIC connection beyond the streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tuning {
    /// `-C`.
    pub controller: Controller,
    /// `-w`: what a receiver lets the sender have in flight on each stream
    /// (the connection's window is this times the streams), and what a
    /// sender holds unsent; `None`: the defaults.
    pub window: Option<u32>,
    /// `--latency`: one more client-opened stream, before the test's,
    /// whose bytes the server echoes (the round-trip probes ride the
    /// loaded connection).
    pub probes: bool,
}

impl Tuning {
    /// The test's: an unknown `-C` (a client checks it when parsing; a
    /// server may meet one from another build) is refused in one line.
    pub fn of(params: &TestParams) -> Result<Tuning, Error> {
        let controller = match params.congestion.as_deref() {
            None => Controller::default(),
            Some(name) => Controller::parse(name).ok_or_else(|| unknown_controller("--quic", name))?,
        };
        Ok(Tuning {
            controller,
            window: params.window.filter(|w| *w > 0),
            probes: params.quic_probes,
        })
    }
}

/// The refusal of a `-C` QUIC has no controller for (`option`: `--quic`
/// or `--quic-perf`).
pub fn unknown_controller(option: &str, name: &str) -> Error {
    Error::param_msg(
        Code::NONE,
        format!(
            "{option} has no congestion control '{name}': -C takes {}",
            Controller::NAMES
        ),
    )
}

/// Both ends of the data connection.
pub trait QuicData: Send + Sync {
    /// Client: connects to `server` (UDP), from `bind`'s address when
    /// given, and opens one stream per entry of `client_sends` (true: the
    /// client sends on it), each starting with `cookie`; `tuning` from the
    /// test's parameters. With `tuning.probes` it first opens the probe
    /// stream (what it writes comes back in order) and hands it to `idle`
    /// before any other stream exists (the idle round trips).
    fn connect(
        &self,
        server: SocketAddr,
        cookie: &[u8],
        client_sends: &[bool],
        tuning: Tuning,
        deadline: Instant,
        idle: &mut dyn FnMut(Arc<dyn ByteStream>) -> Result<(), Error>,
    ) -> Result<Box<dyn QuicConn>, Error>;

    /// Server: takes the handshake on `sock` (bound to the test's port,
    /// connected to the client's address `from`), whose first datagram the
    /// acceptor read (`first`), then one stream per entry of
    /// `server_sends`, each of which must start with `cookie`. `stop` says
    /// when to give up besides the deadline.
    #[allow(clippy::too_many_arguments)]
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
    ) -> Result<Box<dyn QuicConn>, Error>;
}

/// One test's QUIC connection.
pub trait QuicConn: Send {
    /// The streams, in the test's stream order (each once).
    fn take_streams(&mut self) -> Vec<PipeSock>;
    /// QUIC's own numbers now (this end's view).
    fn totals(&self) -> QuicTotals;
    /// Closes the connection (after the results exchange).
    fn close(&mut self);
}

static INSTALLED: OnceLock<Arc<dyn QuicData>> = OnceLock::new();

/// Makes QUIC available to iperf3 tests (the binary calls this at start,
/// with `wirespeed-quic`'s implementation).
pub fn install(q: Arc<dyn QuicData>) {
    let _ = INSTALLED.set(q);
}

/// The installed QUIC, or the one-line refusal of a build without it.
pub(crate) fn installed() -> Result<Arc<dyn QuicData>, Error> {
    INSTALLED.get().cloned().ok_or_else(|| {
        Error::msg(
            Code::NONE,
            "--quic: this wirespeed was built without QUIC (feature quic-perf)",
        )
    })
}
