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
    #[serde(deserialize_with = "de::part")]
    pub start: Option<Start>,
    /// The intervals (`None` when the document has no `intervals` array).
    #[serde(deserialize_with = "de::list")]
    pub intervals: Option<Vec<Interval>>,
    /// The totals.
    #[serde(deserialize_with = "de::part")]
    pub end: Option<End>,
    /// Why the test failed.
    #[serde(deserialize_with = "de::string")]
    pub error: Option<String>,
    /// `-T`.
    #[serde(deserialize_with = "de::string")]
    pub title: Option<String>,
    /// `--extra-data`.
    #[serde(deserialize_with = "de::string")]
    pub extra_data: Option<String>,
    /// Warnings (iperf3 3.14+).
    #[serde(deserialize_with = "de::list")]
    pub warnings: Option<Vec<String>>,
    /// `--get-server-output` of a JSON server: its document.
    #[serde(deserialize_with = "de::boxed")]
    pub server_output_json: Option<Box<TestDoc>>,
    /// `--get-server-output` of a text server.
    #[serde(deserialize_with = "de::string")]
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
    #[serde(deserialize_with = "de::items")]
    pub connected: Vec<Connected>,
    /// The program's version line.
    #[serde(deserialize_with = "de::string")]
    pub version: Option<String>,
    /// `uname -a`.
    #[serde(deserialize_with = "de::string")]
    pub system_info: Option<String>,
    /// `-w` asked (0: default).
    #[serde(deserialize_with = "de::i64")]
    pub sock_bufsize: Option<i64>,
    /// The send buffer the system gave.
    #[serde(deserialize_with = "de::i64")]
    pub sndbuf_actual: Option<i64>,
    /// The receive buffer the system gave.
    #[serde(deserialize_with = "de::i64")]
    pub rcvbuf_actual: Option<i64>,
    /// When it started.
    #[serde(deserialize_with = "de::part")]
    pub timestamp: Option<Timestamp>,
    /// A client's server.
    #[serde(deserialize_with = "de::part")]
    pub connecting_to: Option<HostPort>,
    /// A server's client.
    #[serde(deserialize_with = "de::part")]
    pub accepted_connection: Option<HostPort>,
    /// The test's cookie.
    #[serde(deserialize_with = "de::string")]
    pub cookie: Option<String>,
    /// `-M`.
    #[serde(deserialize_with = "de::i64")]
    pub tcp_mss: Option<i64>,
    /// The MSS without `-M`.
    #[serde(deserialize_with = "de::i64")]
    pub tcp_mss_default: Option<i64>,
    /// `-b`, bit/s.
    #[serde(deserialize_with = "de::f64")]
    pub target_bitrate: Option<f64>,
    /// `--pacing-timer`'s packets per second (iperf3 3.1x).
    #[serde(deserialize_with = "de::f64")]
    pub target_pps: Option<f64>,
    /// `--fq-rate`, bit/s.
    #[serde(deserialize_with = "de::f64")]
    pub fq_rate: Option<f64>,
    /// The test's settings.
    #[serde(deserialize_with = "de::part")]
    pub test_start: Option<TestStart>,
    /// Keys not named above (iperf 2's `iperf2`, iperf3 3.1x's additions).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One of `start.connected`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Connected {
    /// The stream's id.
    #[serde(deserialize_with = "de::i64")]
    pub socket: Option<i64>,
    /// This end's address.
    #[serde(deserialize_with = "de::string")]
    pub local_host: Option<String>,
    /// This end's port.
    #[serde(deserialize_with = "de::i64")]
    pub local_port: Option<i64>,
    /// The peer's address.
    #[serde(deserialize_with = "de::string")]
    pub remote_host: Option<String>,
    /// The peer's port.
    #[serde(deserialize_with = "de::i64")]
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
    #[serde(deserialize_with = "de::string")]
    pub time: Option<String>,
    /// Seconds since the epoch.
    #[serde(deserialize_with = "de::f64")]
    pub timesecs: Option<f64>,
    /// Milliseconds since the epoch (iperf3 3.17+).
    #[serde(deserialize_with = "de::f64")]
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
    #[serde(deserialize_with = "de::string")]
    pub host: Option<String>,
    /// The port.
    #[serde(deserialize_with = "de::i64")]
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
    #[serde(deserialize_with = "de::string")]
    pub protocol: Option<String>,
    /// `-P`.
    #[serde(deserialize_with = "de::i64")]
    pub num_streams: Option<i64>,
    /// `-l`.
    #[serde(deserialize_with = "de::i64")]
    pub blksize: Option<i64>,
    /// `-O`, s.
    #[serde(deserialize_with = "de::i64")]
    pub omit: Option<i64>,
    /// `-t`, s.
    #[serde(deserialize_with = "de::i64")]
    pub duration: Option<i64>,
    /// `-n`.
    #[serde(deserialize_with = "de::i64")]
    pub bytes: Option<i64>,
    /// `-k`.
    #[serde(deserialize_with = "de::i64")]
    pub blocks: Option<i64>,
    /// `-R`.
    #[serde(deserialize_with = "de::flag", serialize_with = "de::flag_as_int")]
    pub reverse: Option<bool>,
    /// `-S`.
    #[serde(deserialize_with = "de::i64")]
    pub tos: Option<i64>,
    /// `-b`, bit/s.
    #[serde(deserialize_with = "de::f64")]
    pub target_bitrate: Option<f64>,
    /// `--bidir`.
    #[serde(deserialize_with = "de::flag", serialize_with = "de::flag_as_int")]
    pub bidir: Option<bool>,
    /// `--fq-rate`.
    #[serde(deserialize_with = "de::f64")]
    pub fqrate: Option<f64>,
    /// `-i`, s.
    #[serde(deserialize_with = "de::f64")]
    pub interval: Option<f64>,
    /// `--pacing-timer`'s packets per second (iperf3 3.1x).
    #[serde(deserialize_with = "de::f64")]
    pub target_pps: Option<f64>,
    /// UDP segmentation offload (wirespeed).
    #[serde(deserialize_with = "de::flag", serialize_with = "de::flag_as_int")]
    pub gso: Option<bool>,
    /// UDP receive offload (wirespeed).
    #[serde(deserialize_with = "de::flag", serialize_with = "de::flag_as_int")]
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
    #[serde(deserialize_with = "de::part")]
    pub sum: Option<Sample>,
    /// `--bidir`: the other direction's sum.
    #[serde(deserialize_with = "de::part")]
    pub sum_bidir_reverse: Option<Sample>,
    /// `--latency`: the interval's round trips.
    #[serde(deserialize_with = "de::part")]
    pub latency: Option<Rtt>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One stream's, or a sum's, numbers over an interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    /// The stream's id (not in sums).
    #[serde(deserialize_with = "de::i64")]
    pub socket: Option<i64>,
    /// From, s.
    #[serde(deserialize_with = "de::f64")]
    pub start: Option<f64>,
    /// To, s.
    #[serde(deserialize_with = "de::f64")]
    pub end: Option<f64>,
    /// How long, s.
    #[serde(deserialize_with = "de::f64")]
    pub seconds: Option<f64>,
    /// Bytes moved.
    #[serde(deserialize_with = "de::f64")]
    pub bytes: Option<f64>,
    /// Bit/s.
    #[serde(deserialize_with = "de::f64")]
    pub bits_per_second: Option<f64>,
    /// TCP: retransmits in the interval (the sender's).
    #[serde(deserialize_with = "de::i64")]
    pub retransmits: Option<i64>,
    /// TCP: congestion window, bytes.
    #[serde(deserialize_with = "de::f64")]
    pub snd_cwnd: Option<f64>,
    /// TCP: the peer's window, bytes (iperf3 3.1x).
    #[serde(deserialize_with = "de::f64")]
    pub snd_wnd: Option<f64>,
    /// TCP: smoothed RTT, µs.
    #[serde(deserialize_with = "de::f64")]
    pub rtt: Option<f64>,
    /// TCP: RTT variance, µs.
    #[serde(deserialize_with = "de::f64")]
    pub rttvar: Option<f64>,
    /// TCP: path MTU.
    #[serde(deserialize_with = "de::f64")]
    pub pmtu: Option<f64>,
    /// TCP: reordering seen (iperf3 3.1x).
    #[serde(deserialize_with = "de::f64")]
    pub reorder: Option<f64>,
    /// In the `-O` warm-up.
    #[serde(deserialize_with = "de::flag")]
    pub omitted: Option<bool>,
    /// Whether this host sent it.
    #[serde(deserialize_with = "de::flag")]
    pub sender: Option<bool>,
    /// UDP receiver: jitter, ms.
    #[serde(deserialize_with = "de::f64")]
    pub jitter_ms: Option<f64>,
    /// UDP receiver: datagrams lost.
    #[serde(deserialize_with = "de::i64")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams.
    #[serde(deserialize_with = "de::i64")]
    pub packets: Option<i64>,
    /// UDP receiver: loss, percent.
    #[serde(deserialize_with = "de::f64")]
    pub lost_percent: Option<f64>,
    /// UDP receiver: datagrams out of order.
    #[serde(deserialize_with = "de::i64")]
    pub out_of_order: Option<i64>,
    /// UDP: the ECN field, when in play (wirespeed).
    #[serde(deserialize_with = "de::part")]
    pub ecn: Option<Ecn>,
    /// iperf 2's additions (`-e`).
    #[serde(deserialize_with = "de::part")]
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
    /// What the senders of the client's direction sent.
    #[serde(deserialize_with = "de::part")]
    pub sum_sent: Option<Totals>,
    /// What their receivers received.
    #[serde(deserialize_with = "de::part")]
    pub sum_received: Option<Totals>,
    /// UDP: the sum of the client's direction.
    #[serde(deserialize_with = "de::part")]
    pub sum: Option<Totals>,
    /// `--bidir` (or iperf 2's `-d`/`-r`): what the server's direction sent.
    #[serde(deserialize_with = "de::part")]
    pub sum_sent_bidir_reverse: Option<Totals>,
    /// And what it received.
    #[serde(deserialize_with = "de::part")]
    pub sum_received_bidir_reverse: Option<Totals>,
    /// UDP `--bidir`: the server's direction's sum.
    #[serde(deserialize_with = "de::part")]
    pub sum_bidir_reverse: Option<Totals>,
    /// CPU use of both hosts.
    #[serde(deserialize_with = "de::part")]
    pub cpu_utilization_percent: Option<Cpu>,
    /// The sender's congestion control.
    #[serde(deserialize_with = "de::string")]
    pub sender_tcp_congestion: Option<String>,
    /// The receiver's congestion control.
    #[serde(deserialize_with = "de::string")]
    pub receiver_tcp_congestion: Option<String>,
    /// Window advice (wirespeed).
    #[serde(deserialize_with = "de::part")]
    pub advice: Option<Advice>,
    /// `--latency`: idle and loaded round trips.
    #[serde(deserialize_with = "de::part")]
    pub latency: Option<Latency>,
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
    #[serde(deserialize_with = "de::part")]
    pub sender: Option<Totals>,
    /// TCP: the receiver's totals.
    #[serde(deserialize_with = "de::part")]
    pub receiver: Option<Totals>,
    /// UDP: the stream's totals.
    #[serde(deserialize_with = "de::part")]
    pub udp: Option<Totals>,
    /// iperf 2 UDP sender: what its receiver reported back.
    #[serde(deserialize_with = "de::part")]
    pub peer_report: Option<Totals>,
    /// iperf 2's additions.
    #[serde(deserialize_with = "de::part")]
    pub iperf2: Option<Iperf2>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A stream's or a sum's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    /// The stream's id (not in sums).
    #[serde(deserialize_with = "de::i64")]
    pub socket: Option<i64>,
    /// From, s.
    #[serde(deserialize_with = "de::f64")]
    pub start: Option<f64>,
    /// To, s.
    #[serde(deserialize_with = "de::f64")]
    pub end: Option<f64>,
    /// How long, s.
    #[serde(deserialize_with = "de::f64")]
    pub seconds: Option<f64>,
    /// Bytes moved.
    #[serde(deserialize_with = "de::f64")]
    pub bytes: Option<f64>,
    /// Bit/s.
    #[serde(deserialize_with = "de::f64")]
    pub bits_per_second: Option<f64>,
    /// Bytes moved in the `-O` warm-up (iperf3 3.1x).
    #[serde(deserialize_with = "de::f64")]
    pub omitted_bytes: Option<f64>,
    /// TCP sender: retransmits.
    #[serde(deserialize_with = "de::i64")]
    pub retransmits: Option<i64>,
    /// TCP sender: reordering seen (iperf3 3.1x).
    #[serde(deserialize_with = "de::f64")]
    pub reorder: Option<f64>,
    /// TCP sender: the largest congestion window, bytes.
    #[serde(deserialize_with = "de::f64")]
    pub max_snd_cwnd: Option<f64>,
    /// TCP sender: the largest peer window, bytes.
    #[serde(deserialize_with = "de::f64")]
    pub max_snd_wnd: Option<f64>,
    /// TCP sender: the largest RTT, µs.
    #[serde(deserialize_with = "de::f64")]
    pub max_rtt: Option<f64>,
    /// TCP sender: the smallest RTT, µs.
    #[serde(deserialize_with = "de::f64")]
    pub min_rtt: Option<f64>,
    /// TCP sender: the mean RTT, µs.
    #[serde(deserialize_with = "de::f64")]
    pub mean_rtt: Option<f64>,
    /// Whether this host sent it.
    #[serde(deserialize_with = "de::flag")]
    pub sender: Option<bool>,
    /// UDP receiver: jitter, ms.
    #[serde(deserialize_with = "de::f64")]
    pub jitter_ms: Option<f64>,
    /// UDP receiver: datagrams lost.
    #[serde(deserialize_with = "de::i64")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams.
    #[serde(deserialize_with = "de::i64")]
    pub packets: Option<i64>,
    /// UDP receiver: loss, percent.
    #[serde(deserialize_with = "de::f64")]
    pub lost_percent: Option<f64>,
    /// UDP receiver: datagrams out of order.
    #[serde(deserialize_with = "de::i64")]
    pub out_of_order: Option<i64>,
    /// UDP receiver: duplicates (wirespeed).
    #[serde(deserialize_with = "de::i64")]
    pub duplicates: Option<i64>,
    /// UDP: the ECN field, when in play (wirespeed).
    #[serde(deserialize_with = "de::part")]
    pub ecn: Option<Ecn>,
    /// iperf 2 sender: these are its receiver's report.
    #[serde(deserialize_with = "de::flag")]
    pub from_peer_report: Option<bool>,
    /// iperf 2's additions.
    #[serde(deserialize_with = "de::part")]
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
    #[serde(deserialize_with = "de::f64")]
    pub host_total: Option<f64>,
    /// This host, user.
    #[serde(deserialize_with = "de::f64")]
    pub host_user: Option<f64>,
    /// This host, system.
    #[serde(deserialize_with = "de::f64")]
    pub host_system: Option<f64>,
    /// The peer, total.
    #[serde(deserialize_with = "de::f64")]
    pub remote_total: Option<f64>,
    /// The peer, user.
    #[serde(deserialize_with = "de::f64")]
    pub remote_user: Option<f64>,
    /// The peer, system.
    #[serde(deserialize_with = "de::f64")]
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
    #[serde(deserialize_with = "de::string")]
    pub limited_by: Option<String>,
    /// The sender's rate, bit/s.
    #[serde(deserialize_with = "de::f64")]
    pub bits_per_second: Option<f64>,
    /// The window to ask for.
    #[serde(deserialize_with = "de::f64")]
    pub suggested_window_bytes: Option<f64>,
    /// The option to give.
    #[serde(deserialize_with = "de::string")]
    pub suggested_option: Option<String>,
    /// The advice in words.
    #[serde(deserialize_with = "de::string")]
    pub text: Option<String>,
    /// Keys not named above (the measured numbers).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--latency`'s round trips: `intervals[].latency`, `end.latency.idle`
/// and `end.latency.loaded`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rtt {
    /// Probes that came back.
    #[serde(deserialize_with = "de::i64")]
    pub probes: Option<i64>,
    /// Smallest, ms.
    #[serde(deserialize_with = "de::f64")]
    pub min_ms: Option<f64>,
    /// Mean, ms.
    #[serde(deserialize_with = "de::f64")]
    pub mean_ms: Option<f64>,
    /// Median, ms.
    #[serde(deserialize_with = "de::f64")]
    pub p50_ms: Option<f64>,
    /// 90th percentile, ms.
    #[serde(deserialize_with = "de::f64")]
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    #[serde(deserialize_with = "de::f64")]
    pub p99_ms: Option<f64>,
    /// Largest, ms.
    #[serde(deserialize_with = "de::f64")]
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
    #[serde(deserialize_with = "de::f64")]
    pub probes_per_second: Option<f64>,
    /// The probes that went per second.
    #[serde(deserialize_with = "de::f64")]
    pub achieved_probes_per_second: Option<f64>,
    /// Before the test.
    #[serde(deserialize_with = "de::part")]
    pub idle: Option<Rtt>,
    /// Under the load.
    #[serde(deserialize_with = "de::part")]
    pub loaded: Option<Rtt>,
    /// Why the numbers may mislead.
    #[serde(deserialize_with = "de::string")]
    pub note: Option<String>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The ECN field of a UDP stream or sum (wirespeed's, only when ECN is in
/// play; docs/features.md): the codepoint sent and the datagrams per
/// codepoint (an interval's, or what arrived over the whole test), and at
/// the end what the path did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ecn {
    /// The codepoint the sender set: `not_ect`, `ect0`, `ect1` or `ce`.
    #[serde(deserialize_with = "de::string")]
    pub sent: Option<String>,
    /// Datagrams that were (or arrived) Not-ECT.
    #[serde(deserialize_with = "de::i64")]
    pub not_ect: Option<i64>,
    /// Datagrams with ECT(0).
    #[serde(deserialize_with = "de::i64")]
    pub ect0: Option<i64>,
    /// Datagrams with ECT(1).
    #[serde(deserialize_with = "de::i64")]
    pub ect1: Option<i64>,
    /// Datagrams marked CE.
    #[serde(deserialize_with = "de::i64")]
    pub ce: Option<i64>,
    /// End: datagrams the sender sent.
    #[serde(deserialize_with = "de::i64")]
    pub sent_packets: Option<i64>,
    /// End: what the path did (`kept`, or any of `ce_marked`, `bleached`,
    /// `remarked`).
    #[serde(deserialize_with = "de::list")]
    pub path: Option<Vec<String>>,
    /// End: 100 × CE / arrived.
    #[serde(deserialize_with = "de::f64")]
    pub ce_percent: Option<f64>,
    /// End: counts a peer claimed that cannot be, not used.
    #[serde(deserialize_with = "de::boxed")]
    pub impossible_peer_counts: Option<Box<Ecn>>,
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
    #[serde(deserialize_with = "de::i64")]
    pub transfer_id: Option<i64>,
    /// A connect-back flow (`-d`, `-r`): the server's direction.
    #[serde(deserialize_with = "de::flag")]
    pub connect_back: Option<bool>,
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
