//! The one vocabulary every renderer reads.
//!
//! A test of either dialect is told as the same sequence of events: what
//! the process is set up for ([`Event::Listening`], [`Event::Connecting`]),
//! each data stream as it connects, the test's start, one
//! [`IntervalReport`] per reporting interval (every stream and the sums),
//! the [`Summary`] at the end, and warnings, notices and errors along the
//! way. Numbers are computed once, by `stats`; a renderer formats them and
//! never recomputes. The shapes follow iperf3's JSON document (`start`,
//! `intervals[]`, `end`), the richest of the formats; iperf 2's enhanced
//! numbers (read histograms, burst latency, bounceback round trips, ...)
//! ride along in [`Enhanced`] and in the optional fields, for whichever
//! renderer shows them.

mod mode;
mod sample;
mod summary;

pub use mode::*;
pub use sample::*;
pub use summary::*;

use crate::config::{Direction, Protocol};
use crate::error::Error;

/// Which end of the test this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client.
    Client,
    /// The server.
    Server,
}

/// A point in time as iperf3 prints it in `start.timestamp` and `Time:`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Timestamp {
    /// `"Sun, 22 Nov 2026 02:42:05 GMT"`.
    pub time: String,
    /// Epoch seconds.
    pub timesecs: i64,
    /// Epoch milliseconds.
    pub timemillisecs: i64,
}

/// Extra lines of iperf 2's settings banner.
#[derive(Debug, Clone, PartialEq)]
pub enum BannerNote {
    /// A UDP client's datagram size and gap between datagrams (µs).
    Datagrams {
        /// Datagram size.
        len: u32,
        /// Target gap, µs.
        ipg_us: f64,
    },
    /// A line printed right after the first one (a client's: after the
    /// `-e` write-size line, before its TOS line).
    Early(String),
    /// A line printed after the buffer-size lines of `-e`.
    Late(String),
    /// A line printed after the window-size line, the banner's last.
    AfterWindow(String),
    /// A line printed where the window-size line would be (a client that
    /// moves no data has no window to show).
    InsteadOfWindow(String),
}

/// What a listener or a client is set up with, before any test: iperf 2
/// prints it as its settings banner.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// Transport.
    pub protocol: Protocol,
    /// Our process id (iperf 2 prints it with `-e`).
    pub pid: u32,
    /// Parallel flows of a client.
    pub flows: u32,
    /// `-l` (read or write size, or datagram size).
    pub block_len: u32,
    /// IP TOS byte.
    pub tos: u8,
    /// TCP_NODELAY set.
    pub nodelay: bool,
    /// Socket buffer size the kernel reports (bytes).
    pub window: u64,
    /// `-w` as asked (bytes), when given.
    pub window_requested: Option<u64>,
    /// Lines iperf 2 prints after the first line of its banner.
    pub notes: Vec<BannerNote>,
}

/// A listener is (again) waiting for a test.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Listening {
    /// Port (the first of a range).
    pub port: u16,
    /// The last port of a range (`-p m-n`), when there is one.
    pub port_last: Option<u16>,
    /// Number of the test about to be served (iperf3's `test #N`).
    pub test_no: u64,
    /// How the listener is set up.
    pub settings: Settings,
}

/// A client is about to run a test against `host:port`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Connecting {
    /// Host as the user typed it.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// Data direction.
    pub direction: Direction,
    /// How the client is set up.
    pub settings: Settings,
    /// What an iperf3 control exchange adds (after the server asked for
    /// the parameters).
    pub control: Option<ControlInfo>,
}

/// What an iperf3 client knows once the server asked for its parameters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ControlInfo {
    /// Session cookie.
    pub cookie: String,
    /// MSS of the control connection.
    pub control_mss: u32,
    /// `-M`, if set.
    pub mss_set: Option<u32>,
    /// Target bit rate per stream (0 = unlimited).
    pub target_bitrate: u64,
    /// When the test started.
    pub timestamp: Timestamp,
    /// UDP block size chosen for the user, when it was derived from the MSS.
    pub udp_block_note: Option<u32>,
    /// Target packet rate per stream, when `-b` was given as `Npps`.
    pub target_pps: Option<u64>,
}

/// A clock check against the server (iperf 2's `-X --trip-times`), ms.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClockCheck {
    /// Round trip.
    pub rtt: f64,
    /// Client to server.
    pub send: f64,
    /// Server to client.
    pub back: f64,
}

/// A data stream is up: its addresses and how it is set up.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConnInfo {
    /// The number iperf3 prints in `[  5]` (the socket's file descriptor).
    pub socket: i32,
    /// Stream id (iperf3: 1, 3, 4, ...; iperf 2: the transfer id).
    pub id: u32,
    /// Local address.
    pub local_host: String,
    /// Local port.
    pub local_port: u16,
    /// Remote address.
    pub remote_host: String,
    /// Remote port.
    pub remote_port: u16,
    /// Traffic opposite to this process's main role (iperf 2: `[ *1]`).
    pub reversed: bool,
    /// Local interface name (iperf 2 prints `%lo` with `-e`).
    pub local_dev: Option<String>,
    /// `(reverse)`, `(full-duplex)`, `(trip-times)`, a bounceback's mode.
    pub mode: Option<String>,
    /// UDP without the FIN/report exchange: `(no-udp-fin)`.
    pub no_udp_fin: bool,
    /// iperf 2.2.1's UDP L4S exchange (`--udp-l4s`): `(l4s)`.
    pub l4s: bool,
    /// A server's `--tcp-rx-window-clamp`: `(clamp=N)`.
    pub clamp: Option<u32>,
    /// `--tcp-write-prefetch`: `(prefetch=N)`.
    pub prefetch: Option<u32>,
    /// `--tcp-quickack` on this stream's reads: `(qack)`.
    pub qack: bool,
    /// The server paces its sending with the client's `--fq-rate`: `(fq)`.
    pub fq: bool,
    /// Peer version from an iperf 2 header (`(peer 2.1.8)`).
    pub peer_version: Option<String>,
    /// TCP_INFO after connect: (cwnd KBytes, MSS, RTT µs).
    pub tcp_init: Option<(u32, u32, u32)>,
    /// Connect time, ms.
    pub connect_ms: Option<f64>,
    /// When it connected, epoch seconds.
    pub when: Option<i64>,
    /// Show the connect time and date even without `-e` (iperf 2's
    /// `--connect-only` lines do).
    pub times_always: bool,
    /// The flow starts at a scheduled time (`--txstart-time`).
    pub epoch_start: bool,
    /// iperf 2's `(isoch)`: an isochronous flow.
    pub isoch: bool,
    /// The connection's MSS (iperf 2's `-m` prints it).
    pub mss: Option<u32>,
    /// A clock check made on this connection.
    pub clock: Option<ClockCheck>,
}

impl ConnInfo {
    /// A stream `id` on socket `socket`, between `local` and `remote`.
    pub fn new(id: u32, socket: i32, local: std::net::SocketAddr, remote: std::net::SocketAddr) -> ConnInfo {
        let (local_host, local_port) = crate::net::split_addr(&local);
        let (remote_host, remote_port) = crate::net::split_addr(&remote);
        ConnInfo {
            socket,
            id,
            local_host,
            local_port,
            remote_host,
            remote_port,
            ..ConnInfo::default()
        }
    }

    /// `(host, port)` of the local end.
    pub fn local(&self) -> (String, u16) {
        (self.local_host.clone(), self.local_port)
    }

    /// `(host, port)` of the remote end.
    pub fn remote(&self) -> (String, u16) {
        (self.remote_host.clone(), self.remote_port)
    }
}

/// The `start` of a test: its parameters and streams.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StartInfo {
    /// Data streams, in creation order.
    pub connected: Vec<ConnInfo>,
    /// `"wirespeed x.y.z"`.
    pub version: String,
    /// `uname` line.
    pub system_info: String,
    /// When the test started.
    pub timestamp: Timestamp,
    /// Client: `(host, port)` as typed.
    pub connecting_to: Option<(String, u16)>,
    /// Server: control-connection (or first flow's) peer.
    pub accepted_connection: Option<(String, u16)>,
    /// Session cookie (iperf3).
    pub cookie: String,
    /// `-M` value (TCP) when set.
    pub tcp_mss: Option<u32>,
    /// Control MSS (client) or 0 (server), TCP only, when `-M` not set.
    pub tcp_mss_default: Option<u32>,
    /// Target bit rate per stream.
    pub target_bitrate: u64,
    /// `--fq-rate`.
    pub fq_rate: u64,
    /// `-w` requested (0 = default).
    pub sock_bufsize: u64,
    /// SO_SNDBUF read back from the first data socket.
    pub sndbuf_actual: u64,
    /// SO_RCVBUF read back from the first data socket.
    pub rcvbuf_actual: u64,
    /// Protocol.
    pub protocol: Protocol,
    /// Streams per direction.
    pub num_streams: u32,
    /// Block size.
    pub blksize: u32,
    /// Omit seconds.
    pub omit: u64,
    /// Duration seconds (0 for -n/-k or unbounded).
    pub duration: u64,
    /// `-n` bytes (0 if unused).
    pub bytes: u64,
    /// `-k` blocks (0 if unused).
    pub blocks: u64,
    /// Data direction.
    pub direction: Direction,
    /// TOS byte.
    pub tos: u8,
    /// Reporting interval in seconds (0 = off).
    pub interval: f64,
    /// UDP GSO/GRO.
    pub gso: bool,
    /// Packets per second asked with `-b Npps`.
    pub target_pps: Option<u64>,
    /// `-T` title (server JSON echoes the client's).
    pub title: Option<String>,
    /// `--extra-data`.
    pub extra_data: Option<String>,
}

/// Bidirectional role tags (`[TX-C]` ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleTag {
    /// Client sending.
    TxC,
    /// Client receiving.
    RxC,
    /// Server sending.
    TxS,
    /// Server receiving.
    RxS,
}

impl RoleTag {
    /// The printed tag.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleTag::TxC => "[TX-C]",
            RoleTag::RxC => "[RX-C]",
            RoleTag::TxS => "[TX-S]",
            RoleTag::RxS => "[RX-S]",
        }
    }

    /// Whether the tag belongs to the server→client direction.
    pub(crate) fn is_reverse(tag: Option<RoleTag>) -> bool {
        matches!(tag, Some(RoleTag::RxC) | Some(RoleTag::TxS))
    }
}

/// Output the server returned with `--get-server-output`.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerOutput {
    /// The server's text.
    Text(String),
    /// The server's JSON document.
    Json(serde_json::Value),
}

/// What the peer reported of one stream it received (iperf 2's UDP
/// server report), or why it did not.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerReport {
    /// The receiver's whole-test numbers.
    Report(Box<StreamSample>),
    /// No report came back after every try.
    Missing {
        /// Stream id.
        id: u32,
        /// How many end-of-stream datagrams were sent.
        tries: u32,
        /// How many of the tries the peer's port answered "connection
        /// refused".
        refused: u32,
    },
    /// A receiver could not deliver its report (the sender kept asking).
    Undelivered {
        /// Stream id.
        id: u32,
    },
}

/// A connection or datagram a server turned away.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// Our address.
    pub local: (String, u16),
    /// The peer's address.
    pub remote: (String, u16),
    /// Why, in iperf 2's words (`client not allowed`, `permit key fail`).
    pub why: String,
    /// Refused by the access policy (`--allow`/`--deny`).
    pub policy: bool,
}

/// Connect times of a client's streams, ms (iperf 2's `[ CT]` line).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ConnectTimes {
    /// The distribution.
    pub ms: LatencyStats,
    /// Connects that failed.
    pub errors: u64,
}

/// One measurement event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A listener is (again) waiting for a test.
    Listening(Box<Listening>),
    /// A client is about to run a test.
    Connecting(Box<Connecting>),
    /// The server took a control connection (iperf3).
    Accepted {
        /// Peer address.
        host: String,
        /// Peer port.
        port: u16,
    },
    /// A data stream is up.
    StreamConnected(Box<ConnInfo>),
    /// Every stream of a client connected: how long that took.
    ConnectTimes(Box<ConnectTimes>),
    /// Streams are up; clocks start.
    Start(Box<StartInfo>),
    /// The omit period ended.
    OmitDone,
    /// A reporting interval.
    Interval(Box<IntervalReport>),
    /// An interval measured for a chart only: a test with `--report` but
    /// without periodic reports (iperf3's `-i 0`, iperf 2 without `-i`)
    /// is sampled every second for its HTML report. No other output
    /// prints it; the reported intervals and the end are as without it.
    Sample(Box<IntervalReport>),
    /// The test's final numbers.
    End(Box<Summary>),
    /// What the peer reported of a stream after the end (iperf 2 UDP).
    PeerReport(PeerReport),
    /// Output returned by the server.
    ServerOutput(ServerOutput),
    /// A connection turned away.
    Refused(Box<Refused>),
    /// A warning line.
    Warning(String),
    /// A message printed as it is (iperf3: to stderr after the program
    /// name, e.g. "the client has unexpectedly closed the connection", and
    /// in a JSON document its `"error"`, as iperf3's `iperf_err` does;
    /// iperf 2: a line of its report).
    Notice(String),
    /// The test failed.
    Error(Error),
    /// The test is over (a JSON document is printed now).
    Done,
    /// A mode that runs many tests to answer one question (`--rpm`,
    /// `--udp-search`) tells its progress and answer.
    Mode(ModeEvent),
}
