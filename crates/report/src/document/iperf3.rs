//! iperf3's `-J` document, as iperf3 3.x and wirespeed (both dialects)
//! write it: `start`, `intervals`, `end`, or `{"error": ...}` alone.
//!
//! Every field may be absent (`None`, or an empty list); keys the model
//! does not name are kept in each part's `extra`, so a document read and
//! written again keeps them. iperf 2's additions are under `iperf2`
//! (docs/json-iperf2.md), kept as they are.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::de;

/// One test's document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TestDoc {
    /// What the test was.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub start: Option<Start>,
    /// The intervals (`None` when the document has no `intervals` array).
    #[serde(deserialize_with = "de::list", skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Vec<Interval>>,
    /// The totals.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub end: Option<End>,
    /// Why the test failed.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `-T`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `--extra-data`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    /// Warnings (iperf3 3.14+).
    #[serde(deserialize_with = "de::list", skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// `--get-server-output` of a JSON server: its document.
    #[serde(deserialize_with = "de::boxed", skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<Box<TestDoc>>,
    /// `--get-server-output` of a text server.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TestDoc {
    /// The intervals (none when absent).
    pub fn intervals(&self) -> &[Interval] {
        self.intervals.as_deref().unwrap_or_default()
    }

    /// `start.test_start`, if there.
    pub fn test_start(&self) -> Option<&TestStart> {
        self.start.as_ref().and_then(|s| s.test_start.as_ref())
    }

    /// Whether it is an iperf 2 test's (its streams carry `iperf2`).
    pub fn is_iperf2(&self) -> bool {
        self.end
            .as_ref()
            .is_some_and(|e| e.streams.iter().any(|s| s.iperf2.is_some()))
            || self
                .intervals()
                .iter()
                .any(|iv| iv.streams.iter().any(|s| s.iperf2.is_some()))
    }
}

/// `start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Start {
    /// The streams' connections.
    #[serde(deserialize_with = "de::list", skip_serializing_if = "Option::is_none")]
    pub connected: Option<Vec<Connected>>,
    /// The program's version line.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `uname -a`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub system_info: Option<String>,
    /// A server's buffer sizes, which it writes here rather than after
    /// `fq_rate` (the writer's only: a document read has them below).
    #[serde(flatten, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub server_buffers: Option<Buffers>,
    /// When it started.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// A client's server.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub connecting_to: Option<HostPort>,
    /// A server's client.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub accepted_connection: Option<HostPort>,
    /// The test's cookie.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    /// `-M`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub tcp_mss: Option<i64>,
    /// The MSS without `-M`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub tcp_mss_default: Option<i64>,
    /// `-b`, bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub target_bitrate: Option<f64>,
    /// `--pacing-timer`'s packets per second (iperf3 3.1x).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub target_pps: Option<f64>,
    /// `--fq-rate`, bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub fq_rate: Option<f64>,
    /// `-w` asked (0: default).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub sock_bufsize: Option<i64>,
    /// The send buffer the system gave.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub sndbuf_actual: Option<i64>,
    /// The receive buffer the system gave.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub rcvbuf_actual: Option<i64>,
    /// The test's settings.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub test_start: Option<TestStart>,
    /// Keys not named above (iperf 2's `iperf2`, iperf3 3.1x's additions).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Start {
    /// The streams' connections (none when absent).
    pub fn connected(&self) -> &[Connected] {
        self.connected.as_deref().unwrap_or_default()
    }
}

/// `start`'s buffer sizes where a server writes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Buffers {
    /// `-w` asked (0: default).
    pub sock_bufsize: i64,
    /// The send buffer the system gave.
    pub sndbuf_actual: i64,
    /// The receive buffer the system gave.
    pub rcvbuf_actual: i64,
}

/// One of `start.connected`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Connected {
    /// The stream's id.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub socket: Option<i64>,
    /// This end's address.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub local_host: Option<String>,
    /// This end's port.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub local_port: Option<i64>,
    /// The peer's address.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub remote_host: Option<String>,
    /// The peer's port.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub remote_port: Option<i64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `start.timestamp`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timestamp {
    /// As text.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Seconds since the epoch.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub timesecs: Option<f64>,
    /// Milliseconds since the epoch (iperf3 3.17+).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub timemillisecs: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `connecting_to`, `accepted_connection`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostPort {
    /// The address.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The port.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `start.test_start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TestStart {
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `-P`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub num_streams: Option<i64>,
    /// `-l`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub blksize: Option<i64>,
    /// `-O`, s.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub omit: Option<i64>,
    /// `-t`, s.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub duration: Option<i64>,
    /// `-n`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub bytes: Option<i64>,
    /// `-k`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub blocks: Option<i64>,
    /// `-R`.
    #[serde(
        deserialize_with = "de::flag",
        serialize_with = "de::flag_as_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub reverse: Option<bool>,
    /// `-S`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub tos: Option<i64>,
    /// `-b`, bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub target_bitrate: Option<f64>,
    /// `--pacing-timer`'s packets per second (iperf3 3.1x).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub target_pps: Option<f64>,
    /// `--bidir`.
    #[serde(
        deserialize_with = "de::flag",
        serialize_with = "de::flag_as_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub bidir: Option<bool>,
    /// `--fq-rate`.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub fqrate: Option<f64>,
    /// `-i`, s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub interval: Option<f64>,
    /// UDP segmentation offload (wirespeed).
    #[serde(
        deserialize_with = "de::flag",
        serialize_with = "de::flag_as_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub gso: Option<bool>,
    /// UDP receive offload (wirespeed).
    #[serde(
        deserialize_with = "de::flag",
        serialize_with = "de::flag_as_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub gro: Option<bool>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One of `intervals`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Interval {
    /// Each stream's numbers.
    #[serde(deserialize_with = "de::items")]
    pub streams: Vec<Sample>,
    /// Their sum (`--bidir`: the client's sending direction).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum: Option<Sample>,
    /// `--bidir`: the other direction's sum.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<Sample>,
    /// `--latency`: the interval's round trips.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub latency: Option<Rtt>,
    /// iperf 2 `--full-duplex`: each pair's numbers.
    #[serde(deserialize_with = "de::items", skip_serializing_if = "Vec::is_empty")]
    pub full_duplex: Vec<Sample>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One stream's, or a sum's, numbers over an interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    /// The stream's id (not in sums).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub socket: Option<i64>,
    /// From, s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub start: Option<f64>,
    /// To, s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub end: Option<f64>,
    /// How long, s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub seconds: Option<f64>,
    /// Bytes moved.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub bytes: Option<f64>,
    /// Bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub bits_per_second: Option<f64>,
    /// TCP: retransmits in the interval (the sender's).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// TCP: congestion window, bytes.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub snd_cwnd: Option<f64>,
    /// TCP: the peer's window, bytes (iperf3 3.1x).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub snd_wnd: Option<f64>,
    /// TCP: smoothed RTT, µs.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub rtt: Option<f64>,
    /// TCP: RTT variance, µs.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub rttvar: Option<f64>,
    /// TCP: path MTU.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub pmtu: Option<f64>,
    /// TCP: reordering seen (iperf3 3.1x).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub reorder: Option<f64>,
    /// TCP sender: ECN as its kernel saw the connection, when in play
    /// (wirespeed).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub tcp_ecn: Option<TcpEcn>,
    /// UDP receiver: jitter, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub jitter_ms: Option<f64>,
    /// UDP receiver: datagrams lost.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    /// UDP receiver: loss, percent.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub lost_percent: Option<f64>,
    /// UDP receiver: datagrams out of order.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<i64>,
    /// UDP: the ECN field, when in play (wirespeed).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub ecn: Option<Ecn>,
    /// UDP: iperf 2.2.1's L4S exchange (`--udp-l4s`), on a stream that
    /// runs it (wirespeed).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub l4s: Option<L4s>,
    /// In the `-O` warm-up.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub omitted: Option<bool>,
    /// Whether this host sent it.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// iperf 2's additions (`-e`).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub iperf2: Option<Iperf2>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct End {
    /// Each stream's totals.
    #[serde(deserialize_with = "de::items")]
    pub streams: Vec<EndStream>,
    /// UDP: the sum of the client's direction.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum: Option<Totals>,
    /// What the senders of the client's direction sent.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum_sent: Option<Totals>,
    /// What their receivers received.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum_received: Option<Totals>,
    /// UDP `--bidir`: the server's direction's sum.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<Totals>,
    /// `--bidir` (or iperf 2's `-d`/`-r`): what the server's direction sent.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum_sent_bidir_reverse: Option<Totals>,
    /// And what it received.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sum_received_bidir_reverse: Option<Totals>,
    /// CPU use of both hosts.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub cpu_utilization_percent: Option<Cpu>,
    /// The sender's congestion control.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub sender_tcp_congestion: Option<String>,
    /// The receiver's congestion control.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub receiver_tcp_congestion: Option<String>,
    /// Window advice (wirespeed).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub advice: Option<Advice>,
    /// `--latency`: idle and loaded round trips.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// iperf 2 `--full-duplex`: each pair's numbers.
    #[serde(deserialize_with = "de::items", skip_serializing_if = "Vec::is_empty")]
    pub full_duplex: Vec<Sample>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl End {
    /// Whether it tells both directions (`--bidir`, iperf 2's `-d`/`-r`).
    pub fn both_ways(&self) -> bool {
        self.sum_sent_bidir_reverse.is_some() || self.sum_received_bidir_reverse.is_some()
    }
}

/// One of `end.streams`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EndStream {
    /// TCP: the sender's totals.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub sender: Option<Totals>,
    /// TCP: the receiver's totals.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub receiver: Option<Totals>,
    /// UDP: the stream's totals.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub udp: Option<Totals>,
    /// QUIC (`--quic`): the connection's numbers, as this end saw them
    /// (wirespeed).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub quic: Option<Quic>,
    /// iperf 2's additions.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub iperf2: Option<Iperf2>,
    /// iperf 2 UDP sender: what its receiver reported back.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub peer_report: Option<Totals>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A stream's or a sum's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    /// The stream's id (not in sums).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub socket: Option<i64>,
    /// From, s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub start: Option<f64>,
    /// To, s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub end: Option<f64>,
    /// How long, s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub seconds: Option<f64>,
    /// Bytes moved.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub bytes: Option<f64>,
    /// Bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub bits_per_second: Option<f64>,
    /// Bytes moved in the `-O` warm-up (iperf3 3.1x).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub omitted_bytes: Option<f64>,
    /// TCP sender: retransmits.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// TCP sender: reordering seen (iperf3 3.1x).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub reorder: Option<f64>,
    /// TCP sender: the largest congestion window, bytes.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub max_snd_cwnd: Option<f64>,
    /// TCP sender: the largest peer window, bytes.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub max_snd_wnd: Option<f64>,
    /// TCP sender: the largest RTT, µs.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub max_rtt: Option<f64>,
    /// TCP sender: the smallest RTT, µs.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub min_rtt: Option<f64>,
    /// TCP sender: the mean RTT, µs.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub mean_rtt: Option<f64>,
    /// TCP: ECN as this host's kernel saw the connection over the test,
    /// when in play (wirespeed; on the side this host was).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub tcp_ecn: Option<TcpEcn>,
    /// UDP receiver: jitter, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub jitter_ms: Option<f64>,
    /// UDP receiver: datagrams lost.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    /// UDP receiver: loss, percent.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub lost_percent: Option<f64>,
    /// UDP receiver: datagrams out of order.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<i64>,
    /// UDP receiver: duplicates (wirespeed).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<i64>,
    /// Whether this host sent it.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub sender: Option<bool>,
    /// UDP: the ECN field, when in play (wirespeed).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub ecn: Option<Ecn>,
    /// UDP: iperf 2.2.1's L4S exchange (`--udp-l4s`), on a stream that
    /// runs it (wirespeed).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub l4s: Option<L4s>,
    /// iperf 2 sender: these are its receiver's report.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub from_peer_report: Option<bool>,
    /// iperf 2 sender: no report came back from its receiver.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub missing: Option<bool>,
    /// How many times it asked for one.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub tries: Option<i64>,
    /// Whether the receiver refused.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub refused: Option<bool>,
    /// iperf 2's additions.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub iperf2: Option<Iperf2>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `end.cpu_utilization_percent`: process CPU time over wall time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    /// This host, total.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub host_total: Option<f64>,
    /// This host, user.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub host_user: Option<f64>,
    /// This host, system.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub host_system: Option<f64>,
    /// The peer, total.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub remote_total: Option<f64>,
    /// The peer, user.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub remote_user: Option<f64>,
    /// The peer, system.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub remote_system: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Cpu {
    /// `(total, user, system)` of `host` (`false`: the peer's).
    pub fn of(&self, host: bool) -> (Option<f64>, Option<f64>, Option<f64>) {
        if host {
            (self.host_total, self.host_user, self.host_system)
        } else {
            (self.remote_total, self.remote_user, self.remote_system)
        }
    }
}

/// `end.advice`: what limited a TCP sender, and what would help.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Advice {
    /// What limited it.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
    /// The sender's rate, bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub bits_per_second: Option<f64>,
    /// The smoothed RTT, µs.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<i64>,
    /// The smallest RTT, µs.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<i64>,
    /// Rate times RTT, bytes.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub bdp_bytes: Option<i64>,
    /// Time limited by the peer's window, percent.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub rwnd_limited_percent: Option<f64>,
    /// Time limited by the send buffer, percent.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub sndbuf_limited_percent: Option<f64>,
    /// Time the connection was busy, percent.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub busy_percent: Option<f64>,
    /// The peer's window, bytes.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub peer_window_bytes: Option<i64>,
    /// The send buffer, bytes.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub send_buffer_bytes: Option<i64>,
    /// The rate asked (`-b`), bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub target_bits_per_second: Option<f64>,
    /// The window to ask for.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub suggested_window_bytes: Option<f64>,
    /// The option to give.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub suggested_option: Option<String>,
    /// The advice in words.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--latency`'s round trips: `intervals[].latency`, `end.latency.idle`
/// and `end.latency.loaded`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rtt {
    /// Probes that came back.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub probes: Option<i64>,
    /// Smallest, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub min_ms: Option<f64>,
    /// Mean, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub mean_ms: Option<f64>,
    /// Median, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub p50_ms: Option<f64>,
    /// 90th percentile, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub p99_ms: Option<f64>,
    /// Largest, ms.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub max_ms: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `end.latency`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    /// The probes asked per second.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub probes_per_second: Option<f64>,
    /// The probes that went per second.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub achieved_probes_per_second: Option<f64>,
    /// Before the test.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub idle: Option<Rtt>,
    /// Under the load.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub loaded: Option<Rtt>,
    /// Why the numbers may mislead.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `true` when the probes rode a stream of the test's own QUIC
    /// connection (absent: a TCP connection of their own).
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub in_test_connection: Option<bool>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// iperf 2's additions to a stream or sum (`-e`, docs/json-iperf2.md):
/// the two the readers need are named, the rest kept as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Iperf2 {
    /// The flow's transfer id (what `peer_report`s are matched by).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub transfer_id: Option<i64>,
    /// Whether the data went from the server to the client (not in a
    /// sum of both ways).
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub reversed: Option<bool>,
    /// A connect-back flow (`-d`, `-r`): the server's direction.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub connect_back: Option<bool>,
    /// A sender's write calls.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub writes: Option<i64>,
    /// A receiver's read calls.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub reads: Option<i64>,
    /// A sender's failed writes.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub write_errors: Option<i64>,
    /// A TCP receiver's reads by size, eight bins.
    #[serde(deserialize_with = "de::list", skip_serializing_if = "Option::is_none")]
    pub read_size_bins: Option<Vec<i64>>,
    /// Burst (TCP) or datagram (UDP) latency.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub latency: Option<Spread>,
    /// UDP: datagrams per second.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub packets_per_second: Option<f64>,
    /// A UDP sender: datagrams sent.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub datagrams_sent: Option<i64>,
    /// A UDP receiver: datagrams received.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub datagrams_received: Option<i64>,
    /// A UDP receiver: datagrams in flight (Little's law).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub datagrams_in_flight: Option<f64>,
    /// Bytes in flight.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub bytes_in_flight: Option<f64>,
    /// Network power (throughput over delay).
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub net_power: Option<f64>,
    /// The latency histogram.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Histogram>,
    /// `--bounceback`'s round trips.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub bounceback: Option<Bounceback>,
    /// `--isochronous`'s frames.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub isochronous: Option<Isochronous>,
    /// Bytes of both directions (a full-duplex pair).
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub bytes_both_ways: Option<bool>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Iperf2 {
    /// Whether `p` is a connect-back flow's.
    pub fn is_connect_back(p: &Option<Iperf2>) -> bool {
        p.as_ref().and_then(|x| x.connect_back).unwrap_or(false)
    }

    /// The transfer id in `p`.
    pub fn id(p: &Option<Iperf2>) -> Option<i64> {
        p.as_ref().and_then(|x| x.transfer_id)
    }
}

/// A latency distribution in iperf 2's additions, ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spread {
    /// Samples.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Mean.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub mean_ms: Option<f64>,
    /// Smallest.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub min_ms: Option<f64>,
    /// Largest.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub max_ms: Option<f64>,
    /// Standard deviation.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub stdev_ms: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// iperf 2's latency histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Histogram {
    /// Its name (`T8`, ...).
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A bin's width.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub bin_width: Option<String>,
    /// Samples.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// `[bin, count]` of the bins that have any.
    #[serde(deserialize_with = "de::list", skip_serializing_if = "Option::is_none")]
    pub bins: Option<Vec<(i64, i64)>>,
    /// Below the first bin.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub below: Option<i64>,
    /// Above the last bin.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub above: Option<i64>,
    /// Outliers.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub outliers: Option<i64>,
    /// The lower confidence bound, percent.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub ci_lower_percent: Option<f64>,
    /// The upper one.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub ci_upper_percent: Option<f64>,
    /// The bin of the lower bound.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub ci_lower_bin: Option<i64>,
    /// The bin of the upper bound.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub ci_upper_bin: Option<i64>,
    /// The bin of 99.7 %.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub bin_99_7: Option<i64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// iperf 2 `--bounceback`'s round trips.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Bounceback {
    /// The round trips.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub rtt: Option<Spread>,
    /// Round trips per second.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub round_trips_per_second: Option<f64>,
    /// TCP retransmits.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// TCP congestion window, bytes.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<i64>,
    /// TCP_INFO's RTT, µs.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub tcp_rtt_us: Option<i64>,
    /// The one-way delays (`--trip-times`).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub one_way: Option<OneWay>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--bounceback --trip-times`' one-way delays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OneWay {
    /// Client to server.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub to_server: Option<Spread>,
    /// Server to client.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub from_server: Option<Spread>,
    /// Their difference.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub asymmetry: Option<Spread>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// iperf 2 `--isochronous`'s frames (a sender's or a receiver's keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Isochronous {
    /// A sender's frames.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub frames_sent: Option<i64>,
    /// A receiver's frames.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub frames_received: Option<i64>,
    /// A sender's missed slots.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub slots_missed: Option<i64>,
    /// A receiver's lost frames.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub frames_lost: Option<i64>,
    /// A sender's slips.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub slips: Option<i64>,
    /// A receiver's frame latency.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub latency: Option<Spread>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// UDP's ECN field (wirespeed): the codepoint sent, datagrams per codepoint
/// that arrived, and at the end what the path did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ecn {
    /// The codepoint the sender set: `not_ect`, `ect0`, `ect1` or `ce`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub sent: Option<String>,
    /// Datagrams that were (or arrived) Not-ECT.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub not_ect: Option<i64>,
    /// Datagrams with ECT(0).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub ect0: Option<i64>,
    /// Datagrams with ECT(1).
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub ect1: Option<i64>,
    /// Datagrams marked CE.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub ce: Option<i64>,
    /// End: datagrams the sender sent.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub sent_packets: Option<i64>,
    /// End: what the path did (`kept`, or any of `ce_marked`, `bleached`,
    /// `remarked`).
    #[serde(deserialize_with = "de::list", skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<String>>,
    /// End: 100 × CE / arrived.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::num"
    )]
    pub ce_percent: Option<f64>,
    /// End: counts a peer claimed that cannot be, not used.
    #[serde(deserialize_with = "de::boxed", skip_serializing_if = "Option::is_none")]
    pub impossible_peer_counts: Option<Box<Ecn>>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `l4s` (wirespeed's, the iperf 2 dialect's `--udp-l4s`): one side of the
/// L4S exchange up to the sample's end, beside `ecn`. The counts are the
/// newest ack's, cumulative since the flow began; absent before the first
/// ack, never a zero for an ack that did not come.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct L4s {
    /// `"sender"` (it took the acks) or `"receiver"` (it sent them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Acks taken or sent.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub acks: Option<i64>,
    /// The newest ack: datagrams the receiver counted.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub received: Option<i64>,
    /// The newest ack: of those, arrived CE.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub ce: Option<i64>,
    /// The newest ack: missing from the sequence.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub lost: Option<i64>,
    /// An ack said a datagram arrived neither ECT(1) nor CE (bleached or
    /// remarked): the sender sent Not-ECT from then on.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub ecn_error: Option<bool>,
    /// A sender's rate controller: its rate, bits/s (a sum: the flows'
    /// rates added up).
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
    /// A sender's controller's alpha, the smoothed CE share (not in sums).
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tcp_ecn` (wirespeed's): what a TCP connection's kernel says of ECN
/// (TCP_INFO), in a sender's intervals and on `end.streams[]`'s sides
/// (this host's, and the peer's when a wirespeed peer said it in the
/// results exchange), only when ECN is in play (negotiated, or asked for by
/// the connecting host and refused). In the sums (`intervals[].sum`,
/// `end.sum_sent`, `end.sum_received`) it adds up the streams: `streams`,
/// `negotiated_streams`, `seen_streams` and `acked_under_ece`. What the
/// kernel does not count is absent, never a zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpEcn {
    /// The handshake negotiated ECN.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub negotiated: Option<bool>,
    /// A segment from the peer arrived with ECT or CE.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub seen: Option<bool>,
    /// A sender's segments acknowledged by ACKs echoing ECE
    /// (`tcpi_delivered_ce`): not CE marks, which a kernel without AccECN
    /// does not count.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub acked_under_ece: Option<i64>,
    /// A sum: the streams whose kernel's view is known, with ECN in play.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub streams: Option<i64>,
    /// A sum: of those, the streams that negotiated ECN.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub negotiated_streams: Option<i64>,
    /// A sum: of those, the streams on which ECT or CE arrived.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub seen_streams: Option<i64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A QUIC test's connection as one end saw it (`end.streams[].quic`,
/// wirespeed's): quinn's path and congestion numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Quic {
    /// Smoothed round trip, µs.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<i64>,
    /// Smallest round trip, µs.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<i64>,
    /// Congestion window, bytes.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub cwnd: Option<i64>,
    /// Packets sent.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub sent_packets: Option<i64>,
    /// Packets declared lost.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// Bytes declared lost.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub lost_bytes: Option<i64>,
    /// Congestion events.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub congestion_events: Option<i64>,
    /// The congestion controller (`-C`: cubic, newreno, bbr).
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
