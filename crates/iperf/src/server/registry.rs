//! The registry of running tests: where each arriving stream, datagram or
//! grouped connection belongs.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Mutex;
use std::sync::mpsc::SyncSender;
use std::time::Instant;

use wirespeed_core::engine::DataSock;
use wirespeed_proto::iperf3::Cookie;

/// A test waiting for the UDP streams of its iperf3 client.
pub(crate) struct UdpSlot {
    pub cookie: Cookie,
    /// The client is wirespeed: its hellos carry the cookie, and plain
    /// ones from its address are someone else's.
    pub needs_cookie: bool,
    /// Where the client's hellos go (the control connection's local address).
    pub local: SocketAddr,
    pub tx: SyncSender<DataSock>,
    /// A `--quic` test: where the client's QUIC Initial goes (with a
    /// socket connected to its sender) instead of UDP streams.
    pub quic: Option<SyncSender<QuicInitial>>,
    /// Streams handed over, so a repeated hello (the reply was lost) gets
    /// its reply again instead of a second socket.
    pub given: Vec<(SocketAddr, UdpSocket)>,
}

/// A QUIC client's first datagram, as the acceptor hands it to its test:
/// a socket bound to the port and connected to the client, the datagram,
/// and the client's address.
pub(crate) type QuicInitial = (UdpSocket, Vec<u8>, SocketAddr);

/// Datagrams kept for an iperf 2 UDP flow whose session has not started,
/// with their arrival times (wall clock, ns).
pub(crate) type Prefeed = std::sync::Arc<Mutex<Vec<(Vec<u8>, i64, Option<u8>)>>>;

/// What the acceptor knows of an iperf 2 UDP client address.
pub(crate) enum UdpPeer {
    /// Accepted; its session has not started: datagrams go to its prefeed.
    Pending(Prefeed),
    /// Its session reads its own socket.
    Active,
    /// Finished at this time; strays are ignored for a while.
    Done(Instant),
    /// Not allowed.
    Denied,
}

/// Every running test, by what identifies its arrivals.
#[derive(Default)]
pub(crate) struct Registry {
    /// iperf3 tests collecting their data streams, by cookie.
    pub collecting: Mutex<HashMap<Cookie, SyncSender<DataSock>>>,
    /// The iperf3 test collecting UDP streams from each client address.
    /// iperf3's hellos carry no cookie, only their address says whose they
    /// are, so one test per address at a time.
    pub udp: Mutex<HashMap<IpAddr, UdpSlot>>,
    /// Cookies of every running iperf3 test.
    pub running: Mutex<HashSet<Cookie>>,
    /// iperf 2 UDP clients by address.
    pub udp_peers: Mutex<HashMap<SocketAddr, UdpPeer>>,
    /// How many times the UDP ports handed over what had queued (a new
    /// flow waits for the next time, so its early datagrams are its own).
    pub udp_drained: std::sync::atomic::AtomicU64,
}

impl Registry {
    /// Forgets everything an iperf3 test with `cookie` registered.
    pub fn release(&self, cookie: Cookie) {
        if let Ok(mut r) = self.running.lock() {
            r.remove(&cookie);
        }
        if let Ok(mut c) = self.collecting.lock() {
            c.remove(&cookie);
        }
        if let Ok(mut u) = self.udp.lock() {
            u.retain(|_, slot| slot.cookie != cookie);
        }
    }
}
