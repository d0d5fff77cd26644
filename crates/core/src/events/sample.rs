//! What one stream (or a sum of streams) did over one span of a test.

use super::RoleTag;
pub use wirespeed_proto::ecn::{Ecn, EcnCounts};

/// The ECN field of a UDP stream's datagrams over a span, present only
/// when ECN is in play (the sender set an ECT codepoint, or anything but
/// Not-ECT arrived).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EcnSample {
    /// The codepoint the sender set, when known.
    pub sent: Option<Ecn>,
    /// Datagrams per codepoint: what a receiver saw arrive, what a sender
    /// sent.
    pub counts: EcnCounts,
    /// The stream runs iperf 2.2.1's L4S exchange: iperf 2's text shows
    /// the CE count of each interval.
    pub l4s: bool,
}

/// What a TCP connection's kernel says of ECN (TCP_INFO), present only
/// when ECN is in play on it: negotiated, or asked for by this host and
/// refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpEcn {
    /// The handshake negotiated ECN (`TCPI_OPT_ECN`).
    pub negotiated: bool,
    /// A segment from the peer arrived with ECT or CE (`TCPI_OPT_ECN_SEEN`):
    /// on a receiver, the sender's data kept its ECT codepoint on the way.
    pub seen: bool,
    /// A sender's segments acknowledged by ACKs echoing ECE over the span
    /// (`tcpi_delivered_ce`); `None` on a receiver, when not negotiated,
    /// and where the kernel's TCP_INFO lacks the counter (before 4.18).
    /// Without AccECN the receiver echoes ECE from a CE mark until the
    /// sender's CWR, so this is not a count of marks: the kernel counts
    /// no marks.
    pub acked_under_ece: Option<u64>,
}

/// The TCP ECN of several streams (a sum's): how many were in play, how
/// many negotiated and saw ECT, and their segments acked under ECE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpEcnSum {
    /// Streams whose kernel view is known and has ECN in play.
    pub streams: u32,
    /// Of those, the ones that negotiated ECN.
    pub negotiated: u32,
    /// Of those, the ones that saw ECT or CE arrive.
    pub seen: u32,
    /// The negotiated senders' segments acked under ECE, added up; `None`
    /// unless every negotiated stream's kernel gave a count (receivers
    /// count none), so a part is never shown as the whole.
    pub acked_under_ece: Option<u64>,
}

impl TcpEcnSum {
    /// The sum of the views given, `None` when there are none.
    pub fn of<'a>(views: impl IntoIterator<Item = &'a TcpEcn>) -> Option<TcpEcnSum> {
        let mut s = TcpEcnSum::default();
        let mut counts: Option<u64> = Some(0);
        for e in views {
            s.streams += 1;
            if e.negotiated {
                s.negotiated += 1;
                counts = counts.zip(e.acked_under_ece).map(|(a, b)| a.saturating_add(b));
            }
            s.seen += u32::from(e.seen);
        }
        s.acked_under_ece = counts.filter(|_| s.negotiated > 0);
        (s.streams > 0).then_some(s)
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
    /// ECN, when in play on the connection (wirespeed's).
    pub ecn: Option<TcpEcn>,
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

/// An L4S ack's counts, cumulative since the flow began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct L4sCounts {
    /// Datagrams the receiver counted.
    pub received: u64,
    /// Of those, arrived CE.
    pub ce: u64,
    /// Missing from the sequence.
    pub lost: u64,
}

/// One side of iperf 2.2.1's UDP L4S exchange (`--udp-l4s`) up to now.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct L4sSample {
    /// This side sent the data and took the acks (else it received and
    /// sent them).
    pub sender: bool,
    /// Acks taken or sent.
    pub acks: u64,
    /// The newest ack's counts; `None` before the first.
    pub last: Option<L4sCounts>,
    /// An ack said a datagram arrived neither ECT(1) nor CE (the field was
    /// bleached or remarked); the sender sends Not-ECT from then on.
    pub ecn_error: bool,
    /// A sender's rate controller now: its rate, bits/s; `None` before
    /// the first ack and on a receiver.
    pub rate_bps: Option<f64>,
    /// A sender's controller's alpha (the smoothed CE share), as
    /// `rate_bps`; a sum has none.
    pub alpha: Option<f64>,
}

impl L4sSample {
    /// Several streams' exchanges added up: acks, the counts (only when
    /// every stream has had an ack) and the rates; any stream's flag. A
    /// sum has no alpha. `None` when no stream runs the exchange.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a L4sSample>) -> Option<L4sSample> {
        let all: Vec<&L4sSample> = all.into_iter().collect();
        let first = all.first()?;
        let last = all
            .iter()
            .map(|s| s.last)
            .collect::<Option<Vec<_>>>()
            .map(|c| L4sCounts {
                received: c.iter().map(|c| c.received).sum(),
                ce: c.iter().map(|c| c.ce).sum(),
                lost: c.iter().map(|c| c.lost).sum(),
            });
        Some(L4sSample {
            sender: first.sender,
            acks: all.iter().map(|s| s.acks).sum(),
            last,
            ecn_error: all.iter().any(|s| s.ecn_error),
            rate_bps: all.iter().map(|s| s.rate_bps).sum(),
            alpha: None,
        })
    }
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
    /// The ECN field, when in play.
    pub ecn: Option<EcnSample>,
    /// iperf 2.2.1's L4S exchange as this side knows it at the span's end
    /// (the acks' counts are cumulative), on a stream that runs it.
    pub l4s: Option<L4sSample>,
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
    /// Isochronous frames (`--isochronous`).
    pub frames: Option<FrameSample>,
}

/// Isochronous frames over a span: a sender's frames sent, slots missed
/// and clock slips (iperf 2's `isoch:tx/miss/slip`); a receiver's frames
/// completed, lost, and their latency (`Frame:rx/lost`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameSample {
    /// Frames sent or completed.
    pub frames: u64,
    /// Slots missed (sender) or frames lost (receiver).
    pub missed: u64,
    /// Clock slips (sender).
    pub slips: u64,
    /// Frame latency (a receiver of a `--trip-times` sender).
    pub latency: Option<LatencyStats>,
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
    /// A flow the server opened back to the client (iperf 2's `-d`/`-r`).
    pub connect_back: bool,
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
    /// A sum's TCP ECN over the span, when in play on any of its streams
    /// (a stream's own is `tcp.ecn`).
    pub tcp_ecn_sum: Option<TcpEcnSum>,
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
    /// Latency probes that came back in the interval (`--latency`).
    pub latency: Option<super::RttStats>,
}
