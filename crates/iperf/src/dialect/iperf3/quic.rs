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

use wirespeed_core::engine::pipe::PipeSock;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::QuicTotals;

/// Both ends of the data connection.
pub trait QuicData: Send + Sync {
    /// Client: connects to `server` (UDP), from `bind`'s address when
    /// given, and opens one stream per entry of `client_sends` (true: the
    /// client sends on it), each starting with `cookie`.
    fn connect(
        &self,
        server: SocketAddr,
        cookie: &[u8],
        client_sends: &[bool],
        deadline: Instant,
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
