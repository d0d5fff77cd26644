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
    pub fn is_reverse(tag: Option<RoleTag>) -> bool {
        matches!(tag, Some(RoleTag::RxC) | Some(RoleTag::TxS))
    }
}

/// TCP_INFO numbers of one sending stream.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TcpSample {
    /// Retransmits during the span.
    pub retransmits: i64,
    /// Congestion window, bytes.
    pub snd_cwnd: u64,
    /// Peer receive window, bytes.
    pub snd_wnd: u64,
    /// Smoothed RTT, µs.
    pub rtt: u64,
    /// RTT variance, µs.
    pub rttvar: u64,
    /// Path MTU.
    pub pmtu: u64,
    /// Reordering events.
    pub reorder: i64,
}

/// A distribution of delays over a span, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LatencyStats {
    /// Samples.
    pub count: u64,
    /// Bytes the samples carried (bursts).
    pub bytes: u64,
    /// Mean.
    pub mean: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Standard deviation (0 below two samples).
    pub stdev: f64,
}

/// UDP numbers of one stream (or a sum) over a span.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpSample {
    /// Datagrams sent (sender) or the advance of the highest sequence
    /// number (receiver: datagrams expected).
    pub packets: i64,
    /// Lost datagrams (receiver).
    pub lost: i64,
    /// Current jitter, ms (receiver; a sum's is the streams' mean).
    pub jitter_ms: f64,
    /// 100 × lost / packets (receiver).
    pub lost_percent: f64,
    /// Datagrams that arrived out of order (receiver).
    pub out_of_order: i64,
    /// Duplicated datagrams (receiver).
    pub duplicates: i64,
    /// Datagrams per second that moved.
    pub pps: f64,
    /// One-way latency from the senders' timestamps (receiver, when the
    /// clocks are meant to agree: iperf 2 `-e` or `--trip-times`).
    pub latency: Option<LatencyStats>,
    /// Receiver: (datagrams, datagrams in flight by Little's law, its
    /// variance), iperf 2's `Rx/inP`.
    pub in_flight: Option<(i64, f64, f64)>,
    /// A sender's whole-test count including the FIN datagram that ends
    /// an iperf 2 stream (`Sent N datagrams`).
    pub sent: Option<i64>,
}

/// One latency histogram (`T8-PDF:`, `F8(f)-PDF:`, `BB8(f)-PDF:`).
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSample {
    /// `T8` (UDP datagrams), `F8` (TCP bursts) or `BB8` (round trips).
    pub name: &'static str,
    /// Covers the whole test (printed `(f)`).
    pub final_report: bool,
    /// Bin width as printed (`100us`, `1ms`).
    pub width: String,
    /// Samples in the span.
    pub count: u64,
    /// Non-empty bins: (1-based bin, samples).
    pub bins: Vec<(u64, u64)>,
    /// Lower confidence level, percent.
    pub ci_lower: f64,
    /// Upper confidence level, percent.
    pub ci_upper: f64,
    /// First bin past the lower level.
    pub lower_bin: u64,
    /// First bin past the upper level.
    pub upper_bin: u64,
    /// First bin past 99.7 %.
    pub bin_997: u64,
    /// Samples beyond three 10-90 % spreads past the 90 % bin.
    pub outliers: u64,
    /// Samples below the first bin.
    pub below: u64,
    /// Samples past the last bin.
    pub above: u64,
    /// The worst sample, ms, and when it was taken (seconds, µs), when
    /// samples carry a time.
    pub worst: Option<(f64, u32, u32)>,
}

/// Round trips of a bounceback stream over a span.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BouncebackSample {
    /// Round-trip times, seconds.
    pub rtt: LatencyStats,
    /// Round trips per second.
    pub rps: f64,
    /// TCP retransmits during the span.
    pub retransmits: u32,
    /// (cwnd KBytes, RTT µs) of the connection at the end of the span.
    pub tcp: Option<(u64, u32)>,
    /// One-way delays, when the clocks are synchronised (`--trip-times`).
    pub owd: Option<OneWayDelays>,
}

/// One-way delays of round trips, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OneWayDelays {
    /// Client to server.
    pub to: LatencyStats,
    /// Server to client.
    pub from: LatencyStats,
    /// `to - from` of each round trip.
    pub asymmetry: LatencyStats,
}

/// iperf 2's enhanced-report numbers of one stream (or a sum) over a span.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Enhanced {
    /// write() or read() calls (datagrams for UDP).
    pub calls: u64,
    /// Non-fatal write errors.
    pub errors: u64,
    /// Read sizes in 8 bins of `-l`/8 (TCP receivers).
    pub read_bins: Option<[u64; 8]>,
    /// Burst latency (receivers of `--trip-times` TCP traffic).
    pub latency: Option<LatencyStats>,
    /// iperf 2's "network power": bytes/s over the delay (RTT for a TCP
    /// sender, mean latency for a trip-times receiver), × 1e-6.
    pub net_power: Option<f64>,
    /// Bytes in flight by Little's law (bytes/s × mean latency).
    pub in_flight: Option<f64>,
    /// Latency histogram of the span (`--histograms` receivers, bounceback).
    pub histogram: Option<HistogramSample>,
    /// Round trips (bounceback streams).
    pub bounceback: Option<BouncebackSample>,
}

/// One stream, or a sum of streams, over one span of the test.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamSample {
    /// Stream id (0 for a sum; iperf 2's full-duplex pairs: the pair's id).
    pub id: u32,
    /// The `[  5]` number iperf3 prints (the socket); -1 for sums.
    pub socket: i32,
    /// Bidir tag, if the test is bidirectional.
    pub role: Option<RoleTag>,
    /// This host sends on the stream.
    pub sender: bool,
    /// Traffic opposite to this process's main role (iperf 2's `[ *1]`).
    pub reversed: bool,
    /// The bytes went both ways: a bounceback stream's requests and
    /// replies.
    pub both_ways: bool,
    /// Seconds since the (post-omit) start.
    pub start: f64,
    /// End of the span.
    pub end: f64,
    /// Length of the span.
    pub seconds: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes × 8 / seconds.
    pub bits_per_second: f64,
    /// Part of the omitted warm-up.
    pub omitted: bool,
    /// TCP_INFO numbers (TCP senders).
    pub tcp: Option<TcpSample>,
    /// Retransmits during the span (TCP senders with TCP_INFO; sums).
    pub retransmits: Option<i64>,
    /// UDP numbers.
    pub udp: Option<UdpSample>,
    /// iperf 2's enhanced numbers.
    pub extras: Enhanced,
    /// (local, remote) addresses (CSV rows).
    pub addrs: Option<((String, u16), (String, u16))>,
}

/// One reporting interval: every stream plus the sums.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IntervalReport {
    /// Streams, in creation order.
    pub streams: Vec<StreamSample>,
    /// Sum of the client→server direction (or of every stream when the
    /// test has no direction tags).
    pub sum: StreamSample,
    /// Sum of the server→client direction in a bidir test.
    pub sum_bidir_reverse: Option<StreamSample>,
    /// Full duplex on one socket: both directions of each connection,
    /// summed (iperf 2's `[FDn]`).
    pub pairs: Vec<StreamSample>,
}

/// Totals of one direction of one stream (or a sum) over the whole test.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    /// Always 0.
    pub start: f64,
    /// Duration measured by the side that counted these bytes.
    pub end: f64,
    /// Duration used for the rate (iperf3 quirk: the local duration).
    pub seconds: f64,
    /// Bytes.
    pub bytes: u64,
    /// Rate.
    pub bits_per_second: f64,
    /// Retransmits (sender totals when known).
    pub retransmits: Option<i64>,
    /// Direction relative to this host.
    pub sender: bool,
}

/// End-of-test TCP_INFO extremes of a sending stream.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TcpTotals {
    /// Largest cwnd seen.
    pub max_snd_cwnd: u64,
    /// Largest peer window seen.
    pub max_snd_wnd: u64,
    /// Largest RTT.
    pub max_rtt: u64,
    /// Smallest RTT.
    pub min_rtt: u64,
    /// Mean RTT.
    pub mean_rtt: u64,
    /// Reordering events.
    pub reorder: i64,
}

/// End-of-test UDP numbers of a stream or sum.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpTotals {
    /// Receiver's jitter, ms.
    pub jitter_ms: f64,
    /// Lost datagrams (`None` = unknown: pre-3.14 peer with omit).
    pub lost: Option<i64>,
    /// Receiver's total: its highest sequence number.
    pub packets: i64,
    /// Datagrams the sender sent.
    pub sent_packets: i64,
    /// Loss percentage.
    pub lost_percent: f64,
    /// Out-of-order datagrams (local receiver only).
    pub out_of_order: i64,
    /// Duplicates (local receiver only).
    pub duplicates: i64,
}

/// One stream's end-of-test report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamSummary {
    /// `[  5]` number.
    pub socket: i32,
    /// Stream id.
    pub id: u32,
    /// Bidir tag.
    pub role: Option<RoleTag>,
    /// This host sends on the stream.
    pub local_sender: bool,
    /// The sending side's totals (local or from the peer's results).
    pub sender: Totals,
    /// The receiving side's totals.
    pub receiver: Totals,
    /// Sender's TCP_INFO extremes, when this host sent TCP.
    pub tcp: Option<TcpTotals>,
    /// UDP summary (`end.streams[].udp`), for UDP tests.
    pub udp: Option<UdpTotals>,
    /// The local side has numbers for the peer (false on a server before
    /// the exchange, and in iperf 2, which exchanges none).
    pub peer_known: bool,
}

/// Sums of one direction.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DirectionSums {
    /// Bidir tag.
    pub role: Option<RoleTag>,
    /// Sender totals.
    pub sent: Totals,
    /// Receiver totals.
    pub received: Totals,
    /// UDP sums: receiver's mean jitter, lost and total; sender's count.
    pub udp: Option<UdpTotals>,
}

/// CPU utilisation of both ends.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuUtil {
    /// Local total %.
    pub host_total: f64,
    /// Local user %.
    pub host_user: f64,
    /// Local system %.
    pub host_system: f64,
    /// Peer total %.
    pub remote_total: f64,
    /// Peer user %.
    pub remote_user: f64,
    /// Peer system %.
    pub remote_system: f64,
}

/// What held a TCP sender back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowLimit {
    /// The receiver's advertised window.
    ReceiveWindow,
    /// The sender's socket buffer.
    SendBuffer,
    /// The congestion window: the path.
    Path,
    /// The sender itself (a `-b` rate, the application, the CPU).
    Sender,
    /// The kernel did not say.
    Unknown,
}

impl WindowLimit {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            WindowLimit::ReceiveWindow => "receive_window",
            WindowLimit::SendBuffer => "send_buffer",
            WindowLimit::Path => "path",
            WindowLimit::Sender => "sender",
            WindowLimit::Unknown => "unknown",
        }
    }
}

/// Window advice for this host's TCP sending (`-V` text, JSON `end.advice`).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowAdvice {
    /// The verdict.
    pub limited_by: WindowLimit,
    /// Delivered rate, bit/s.
    pub bits_per_second: f64,
    /// Mean smoothed RTT, µs.
    pub rtt_us: u64,
    /// Minimum RTT, µs (0 = unknown).
    pub min_rtt_us: u64,
    /// Rate × RTT, bytes (all streams).
    pub bdp_bytes: u64,
    /// Share of busy time limited by the receive window, %.
    pub rwnd_limited_percent: f64,
    /// Share of busy time limited by the send buffer, %.
    pub sndbuf_limited_percent: f64,
    /// Share of the test the connections had data to send, %.
    pub busy_percent: f64,
    /// Largest window the peer advertised, bytes.
    pub peer_window_bytes: u64,
    /// Send buffer, bytes.
    pub send_buffer_bytes: u64,
    /// Rate the suggestion is sized for.
    pub target_bits_per_second: Option<f64>,
    /// Suggested `-w`, bytes.
    pub suggested_window_bytes: Option<u64>,
    /// Suggested option text (`-w 128K`).
    pub suggested_option: Option<String>,
    /// The explanation, with the arithmetic, one line per item.
    pub text: Vec<String>,
}

/// This host's own view of the whole test, stream by stream, each over
/// its own duration: what iperf 2 prints as its final lines.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LocalTotals {
    /// One line per stream, in creation order.
    pub streams: Vec<StreamSample>,
    /// Their sum.
    pub sum: StreamSample,
    /// Full-duplex pairs.
    pub pairs: Vec<StreamSample>,
}

/// The end-of-test report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Protocol.
    pub protocol: Protocol,
    /// Per stream, in creation order.
    pub streams: Vec<StreamSummary>,
    /// Client→server direction (or the only one).
    pub forward: DirectionSums,
    /// Server→client direction of a bidir test.
    pub reverse: Option<DirectionSums>,
    /// CPU.
    pub cpu: CpuUtil,
    /// Congestion algorithm of the sender.
    pub sender_tcp_congestion: Option<String>,
    /// Congestion algorithm of the receiver.
    pub receiver_tcp_congestion: Option<String>,
    /// Some side reported retransmits (the summary header has `Retr`).
    pub has_retransmits: bool,
    /// This host sent data (controls the CPU line in verbose text).
    pub local_sends: bool,
    /// This host received data.
    pub local_receives: bool,
    /// Window advice, when this host sent TCP.
    pub advice: Option<WindowAdvice>,
    /// This host's own whole-test lines.
    pub local: LocalTotals,
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
        /// The peer's port answered "connection refused".
        refused: bool,
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
    /// name, e.g. "the client has unexpectedly closed the connection";
    /// iperf 2: a line of its report).
    Notice(String),
    /// The test failed.
    Error(Error),
    /// The test is over (a JSON document is printed now).
    Done,
}
