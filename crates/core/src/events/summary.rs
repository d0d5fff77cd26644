//! What a test did in all: totals per stream and direction, CPU, the
//! window advice, and this host's own whole-test lines.

use super::{Ecn, EcnCounts, RoleTag, StreamSample};
use crate::config::Protocol;

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
    /// What the side that counted these bytes counted in its own omit
    /// period (`-O`), when known: this host's, or a wirespeed peer's from
    /// the results exchange.
    pub omitted_bytes: Option<u64>,
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
    /// The ECN field, when in play.
    pub ecn: Option<EcnTotals>,
    /// iperf 2.2.1's L4S exchange as this side knew it at the end, on a
    /// stream that runs it.
    pub l4s: Option<super::L4sSample>,
}

/// What the path did to a UDP stream's ECN field over the whole test.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EcnTotals {
    /// The codepoint the sender set, when known.
    pub sent: Option<Ecn>,
    /// Datagrams the sender sent, when known.
    pub sent_packets: Option<u64>,
    /// What arrived at the receiver, per codepoint (this end's count, or
    /// the peer's when this end sent and a wirespeed peer said).
    pub arrived: Option<EcnCounts>,
    /// The verdict on the field, when what was sent and what arrived are
    /// both known.
    pub verdict: Option<EcnVerdict>,
    /// The peer claimed counts that cannot be (more arrived than were
    /// sent): they are not used, and said so.
    pub impossible: Option<EcnCounts>,
    /// The stream ran iperf 2.2.1's L4S exchange, whose sender stops
    /// setting ECT(1) once an ack says the field arrived bleached: what
    /// arrives Not-ECT after that is the sender's, not the path's doing.
    pub l4s: bool,
}

/// What the path did to the ECN field of the datagrams that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EcnVerdict {
    /// Datagrams that arrived.
    pub arrived: u64,
    /// Arrived with the codepoint sent.
    pub kept: u64,
    /// Sent ECT, arrived Not-ECT.
    pub bleached: u64,
    /// Arrived with another ECT codepoint than sent (ECT(0)↔ECT(1), or
    /// ECT from a Not-ECT sender), and which.
    pub remarked: u64,
    /// The codepoint the remarked ones arrived with (the most common).
    pub remarked_to: Option<Ecn>,
    /// Arrived CE.
    pub ce: u64,
    /// 100 × CE / arrived.
    pub ce_percent: f64,
}

impl EcnVerdict {
    /// The verdict on `arrived` when `sent` was set.
    pub fn judge(sent: Ecn, arrived: &EcnCounts) -> EcnVerdict {
        let total = arrived.total();
        let kept = if sent == Ecn::Ce { 0 } else { arrived.get(sent) };
        let bleached = if sent.is_ect() { arrived.not_ect } else { 0 };
        let others: Vec<Ecn> = [Ecn::Ect0, Ecn::Ect1].into_iter().filter(|e| *e != sent).collect();
        let remarked = others.iter().map(|e| arrived.get(*e)).sum();
        let remarked_to = others
            .iter()
            .copied()
            .filter(|e| arrived.get(*e) > 0)
            .max_by_key(|e| arrived.get(*e));
        EcnVerdict {
            arrived: total,
            kept,
            bleached,
            remarked,
            remarked_to,
            ce: arrived.ce,
            ce_percent: if total > 0 {
                100.0 * arrived.ce as f64 / total as f64
            } else {
                0.0
            },
        }
    }

    /// The path left every datagram's field as sent.
    pub fn kept_all(&self) -> bool {
        self.bleached == 0 && self.remarked == 0 && self.ce == 0
    }
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
    /// TCP: ECN as this host's kernel saw the connection over the test,
    /// when in play (wirespeed's).
    pub tcp_ecn: Option<super::TcpEcn>,
    /// TCP: ECN as the peer's kernel saw the connection, when a wirespeed
    /// peer said so in its results (wirespeed's; never from iperf3).
    pub peer_tcp_ecn: Option<super::TcpEcn>,
    /// The local side has numbers for the peer (false on a server before
    /// the exchange, and in iperf 2, which exchanges none).
    pub peer_known: bool,
    /// A flow the server opened back to the client (iperf 2's `-d`/`-r`):
    /// summed as the reverse direction, as iperf3's `--bidir` sums its
    /// server-to-client streams.
    pub connect_back: bool,
}

impl StreamSummary {
    /// ECN as the sending end's kernel saw the connection, where known.
    pub fn sender_tcp_ecn(&self) -> Option<&super::TcpEcn> {
        if self.local_sender {
            self.tcp_ecn.as_ref()
        } else {
            self.peer_tcp_ecn.as_ref()
        }
    }

    /// ECN as the receiving end's kernel saw the connection, where known.
    pub fn receiver_tcp_ecn(&self) -> Option<&super::TcpEcn> {
        if self.local_sender {
            self.peer_tcp_ecn.as_ref()
        } else {
            self.tcp_ecn.as_ref()
        }
    }
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
    /// TCP: the sending ends' kernels' ECN over the streams, where known
    /// (this host's when it sent, the peer's from its results otherwise).
    pub tcp_ecn_sent: Option<super::TcpEcnSum>,
    /// TCP: the receiving ends' kernels' ECN over the streams, where known.
    pub tcp_ecn_received: Option<super::TcpEcnSum>,
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

/// Round trips of latency probes (`--latency`) over a span, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RttStats {
    /// Probes that came back.
    pub probes: u64,
    /// Smallest.
    pub min_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

impl RttStats {
    /// The statistics of round trips `v` (seconds; sorted in place).
    /// Percentiles are nearest-rank: the smallest value with at least
    /// that share of the probes at or below it.
    pub fn of(v: &mut [f64]) -> RttStats {
        if v.is_empty() {
            return RttStats::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1] * 1e3;
        RttStats {
            probes: n as u64,
            min_ms: v[0] * 1e3,
            mean_ms: v.iter().sum::<f64>() / n as f64 * 1e3,
            p50_ms: rank(0.5),
            p90_ms: rank(0.9),
            p99_ms: rank(0.99),
            max_ms: v[n - 1] * 1e3,
        }
    }
}

/// The latency probes of a whole test: before the load and under it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatencySummary {
    /// Probes per second asked for under load.
    pub rate: u32,
    /// Probes per second made under load: fewer than asked when a round
    /// trip is longer than the gap between probes (one is in flight at a
    /// time).
    pub achieved_rate: f64,
    /// Before the load started.
    pub idle: RttStats,
    /// While the test ran.
    pub loaded: RttStats,
    /// Why probing stopped early, if it did.
    pub note: Option<String>,
    /// The probes rode a stream of the test's own QUIC connection (a
    /// `--quic` test), not a TCP connection of their own.
    pub in_test_connection: bool,
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
    /// Server→client direction of a bidir test (iperf3's `--bidir`) or of
    /// iperf 2's connect-back flows (`-d`, `-r`).
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
    /// Latency probes (`--latency`).
    pub latency: Option<LatencySummary>,
    /// A QUIC test (`-q`): this end's view of the one connection every
    /// stream shares.
    pub quic: Option<QuicTotals>,
}

/// QUIC's own numbers for a test's connection, as this end's QUIC stack
/// counted them (quinn's connection statistics at the end of the test).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuicTotals {
    /// Smoothed round-trip time (µs).
    pub rtt_us: u64,
    /// Smallest round-trip time seen (µs).
    pub min_rtt_us: u64,
    /// Congestion window at the end (bytes).
    pub cwnd: u64,
    /// UDP packets this end sent.
    pub sent_packets: u64,
    /// Of those, packets declared lost (and their bytes).
    pub lost_packets: u64,
    /// Bytes of the lost packets.
    pub lost_bytes: u64,
    /// Congestion events (window reductions).
    pub congestion_events: u64,
    /// The congestion controller this end ran (`cubic`, `newreno`, `bbr`).
    pub congestion: String,
}
