//! The measurement events every output format is a sink of.
//!
//! Numbers are computed once, by `stats`, and carried here ready to print;
//! a sink formats, it never recomputes. The shapes mirror iperf3's JSON
//! document (`start`, `intervals[]`, `end`) because that is the richest of
//! the formats; text, CSV and the rest print subsets.

use crate::config::{Direction, Protocol};
use crate::error::Error;

pub use super::iperf2_event::{
    Banner, BannerNote, BannerRole, FlowConn, FlowExtras, FlowLine, FlowReport, HistogramSample, LatencyStats, UdpFlow,
};

/// Which end of the test this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client.
    Client,
    /// The server.
    Server,
}

/// A data stream's address pair, as printed when it connects.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnInfo {
    /// The number printed in `[  5]` (the socket's file descriptor).
    pub socket: i32,
    /// Stream id (1, 3, 4, ...).
    pub id: u32,
    /// Local address.
    pub local_host: String,
    /// Local port.
    pub local_port: u16,
    /// Remote address.
    pub remote_host: String,
    /// Remote port.
    pub remote_port: u16,
}

/// A point in time as iperf3 prints it in `start.timestamp` and `Time:`.
#[derive(Debug, Clone, PartialEq)]
pub struct Timestamp {
    /// `"Sun, 22 Nov 2026 02:42:05 GMT"`.
    pub time: String,
    /// Epoch seconds.
    pub timesecs: i64,
    /// Epoch milliseconds.
    pub timemillisecs: i64,
}

/// What the client prints once the server asked for parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectingInfo {
    /// Host as the user typed it.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// Data direction.
    pub direction: Direction,
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

/// The `start.test_start` object and the rest of `start`.
#[derive(Debug, Clone, PartialEq)]
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
    /// Server: control-connection peer.
    pub accepted_connection: Option<(String, u16)>,
    /// Session cookie.
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
}

/// TCP_INFO numbers of one sending stream over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TcpSample {
    /// Retransmits during the interval.
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

/// UDP numbers of one stream over one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpSample {
    /// Datagrams sent (sender) or Δ highest sequence (receiver).
    pub packets: i64,
    /// Lost datagrams (receiver).
    pub lost: i64,
    /// Current jitter, ms (receiver).
    pub jitter_ms: f64,
    /// 100 × lost / packets (receiver).
    pub lost_percent: f64,
    /// Datagrams that arrived out of order (receiver).
    pub out_of_order: i64,
    /// Duplicated datagrams (receiver).
    pub duplicates: i64,
}

/// One stream over one reporting interval.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamInterval {
    /// `[  5]` number.
    pub socket: i32,
    /// Stream id.
    pub id: u32,
    /// Bidir tag, if the test is bidirectional.
    pub role: Option<RoleTag>,
    /// This host sends on the stream.
    pub sender: bool,
    /// Seconds since the (post-omit) stream start.
    pub start: f64,
    /// End of the interval.
    pub end: f64,
    /// Length of the interval.
    pub seconds: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes × 8 / seconds.
    pub bits_per_second: f64,
    /// Part of the omitted warm-up.
    pub omitted: bool,
    /// TCP_INFO numbers (TCP senders only).
    pub tcp: Option<TcpSample>,
    /// UDP numbers.
    pub udp: Option<UdpSample>,
}

/// A sum over streams for one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct SumInterval {
    /// Bidir tag for the direction summed.
    pub role: Option<RoleTag>,
    /// Direction relative to this host.
    pub sender: bool,
    /// Start.
    pub start: f64,
    /// End.
    pub end: f64,
    /// Length.
    pub seconds: f64,
    /// Bytes.
    pub bytes: u64,
    /// Rate.
    pub bits_per_second: f64,
    /// Retransmits summed (TCP sender with TCP_INFO).
    pub retransmits: Option<i64>,
    /// UDP sums (jitter is the mean of the streams').
    pub udp: Option<UdpSample>,
    /// Omitted.
    pub omitted: bool,
}

/// One reporting interval: every stream plus the sums.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalReport {
    /// Streams, in creation order.
    pub streams: Vec<StreamInterval>,
    /// Sum of the client→server direction (or the only direction).
    pub sum: SumInterval,
    /// Sum of the server→client direction in a bidir test.
    pub sum_bidir_reverse: Option<SumInterval>,
}

/// Totals of one direction of one stream (or a sum) over the whole test.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
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
    /// The local side has numbers for the peer (false on a server before the exchange).
    pub peer_known: bool,
}

/// Sums of one direction.
#[derive(Debug, Clone, PartialEq)]
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

/// The end-of-test report.
#[derive(Debug, Clone, PartialEq)]
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
}

/// Output the server returned with `--get-server-output`.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerOutput {
    /// The server's text.
    Text(String),
    /// The server's JSON document.
    Json(serde_json::Value),
}

/// One measurement event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A server is (again) waiting for a test.
    Listening {
        /// Port.
        port: u16,
        /// Test number about to be served.
        test_no: u64,
    },
    /// The client sent its parameters.
    Connecting(Box<ConnectingInfo>),
    /// The server took a control connection.
    Accepted {
        /// Peer address.
        host: String,
        /// Peer port.
        port: u16,
    },
    /// A data stream is up.
    StreamConnected(ConnInfo),
    /// Streams are up; clocks start.
    Start(Box<StartInfo>),
    /// The omit period ended.
    OmitDone,
    /// A reporting interval.
    Interval(Box<IntervalReport>),
    /// The test's final numbers.
    End(Box<Summary>),
    /// Output returned by the server.
    ServerOutput(ServerOutput),
    /// A warning line.
    Warning(String),
    /// A message iperf3 prints without `error -` (e.g. "the client has
    /// unexpectedly closed the connection").
    Notice(String),
    /// The test failed.
    Error(Error),
    /// The test is over (a JSON document is printed now).
    Done,
    /// iperf2: a settings banner.
    Banner(Box<Banner>),
    /// iperf2: a connection line.
    FlowConnected(Box<FlowConn>),
    /// iperf2: an interval or final flow report.
    Flows(Box<FlowReport>),
}
