//! Events only the iperf 2 dialect produces: its settings banner, its
//! connection lines, and its flow reports (per-flow lines with the
//! enhanced-report numbers, `[SUM]` and full-duplex `[FDn]` sums).
//!
//! The numbers are computed by `stats::flow`; sinks only format them.

use crate::config::Protocol;

use super::event::TcpSample;

/// Which settings banner (iperf2's `S` report).
#[derive(Debug, Clone, PartialEq)]
pub enum BannerRole {
    /// `Server listening on TCP port N`.
    Listening,
    /// `Server listening on TCP ports N-LAST with pid P` (`-p m-n`).
    ListeningRange(u16),
    /// `Client connecting to HOST, TCP port N`.
    Connecting(String),
}

/// The settings banner.
#[derive(Debug, Clone, PartialEq)]
pub struct Banner {
    /// Listening or connecting.
    pub role: BannerRole,
    /// Transport.
    pub protocol: Protocol,
    /// Port.
    pub port: u16,
    /// Our process id (printed with `-e`).
    pub pid: u32,
    /// Parallel flows of a client (printed with `-e`).
    pub flows: u32,
    /// `-l` (read or write size).
    pub block_len: u32,
    /// IP TOS byte.
    pub tos: u8,
    /// TCP_NODELAY set.
    pub nodelay: bool,
    /// Socket buffer size the kernel reports (bytes).
    pub window: u64,
    /// `-w` as asked (bytes), when given.
    pub window_requested: Option<u64>,
    /// Lines 2.1.8 prints after the first line of the banner (UDP
    /// `Sending N byte datagrams`, multicast joins, `-U`'s advice,
    /// histogram settings), in order.
    pub notes: Vec<BannerNote>,
}

/// Extra lines of a settings banner.
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

/// A connection line (iperf2's `C` report).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConn {
    /// Transfer id (`[  1]`).
    pub id: u32,
    /// Traffic opposite to this process's main role: printed `[ *1]`.
    pub reversed: bool,
    /// Local address.
    pub local: (String, u16),
    /// Peer address.
    pub remote: (String, u16),
    /// Local interface name (printed `%lo` with `-e`).
    pub local_dev: Option<String>,
    /// `(reverse)`, `(full-duplex)`, `(trip-times)`.
    pub mode: Option<String>,
    /// UDP without the FIN/report exchange: `(no-udp-fin)`.
    pub no_udp_fin: bool,
    /// The server's `--tcp-rx-window-clamp`: `(clamp=N)`.
    pub clamp: Option<u32>,
    /// `--tcp-write-prefetch`: `(prefetch=N)`.
    pub prefetch: Option<u32>,
    /// `--tcp-quickack` on this flow's reads: `(qack)`.
    pub qack: bool,
    /// The server paces its sending with the client's `--fq-rate`: `(fq)`.
    pub fq: bool,
    /// Socket descriptor (`(sock=N)`, with `-e`).
    pub sock: i32,
    /// Peer version from the header (`(peer 2.1.8)`, server with `-e`).
    pub peer_version: Option<String>,
    /// TCP_INFO after connect: (cwnd segments, MSS, RTT µs).
    pub tcp_init: Option<(u32, u32, u32)>,
    /// Connect time, ms (client with `-e`).
    pub connect_ms: Option<f64>,
    /// When it connected, epoch seconds (printed with `-e`).
    pub when: Option<i64>,
}

/// Burst latency of a `--trip-times` receiver over a span, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LatencyStats {
    /// Completed bursts.
    pub count: u64,
    /// Bytes in the completed bursts.
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

/// The enhanced-report numbers of one flow (or a sum) over a span.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowExtras {
    /// write() or read() calls.
    pub calls: u64,
    /// Non-fatal write errors.
    pub errors: u64,
    /// Read sizes in 8 bins of `-l`/8 (receivers).
    pub read_bins: Option<[u64; 8]>,
    /// Burst latency (receivers of `--trip-times` traffic).
    pub latency: Option<LatencyStats>,
    /// TCP_INFO at the end of the span (TCP senders).
    pub tcp: Option<TcpSample>,
    /// Retransmits during the span (TCP senders).
    pub retransmits: Option<i64>,
    /// iperf2's "network power": bytes/s over the delay (RTT for a TCP
    /// sender, mean burst latency for a trip-times receiver), × 1e-6.
    pub net_power: Option<f64>,
    /// Bytes in flight by Little's law (bytes/s × mean latency).
    pub in_flight: Option<f64>,
    /// UDP numbers (UDP flows only).
    pub udp: Option<UdpFlow>,
    /// Latency histogram of the span (`--histograms` receivers).
    pub histogram: Option<HistogramSample>,
}

/// One latency histogram line (`T8-PDF:`, `F8(f)-PDF:`).
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSample {
    /// `T8` (UDP datagrams) or `F8` (TCP bursts).
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

/// The UDP numbers of one flow line.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpFlow {
    /// Receiver: RFC 1889 jitter, ms.
    pub jitter_ms: f64,
    /// Receiver: lost datagrams.
    pub lost: i64,
    /// Receiver: datagrams expected (the highest sequence number seen).
    pub total: i64,
    /// Receiver: datagrams that arrived out of order.
    pub out_of_order: i64,
    /// Datagrams per second.
    pub pps: f64,
    /// Receiver (`-e` or `--trip-times`): one-way latency.
    pub latency: Option<LatencyStats>,
    /// Receiver `-e`: (packets, packets in flight by Little's law, its
    /// variance), printed `Rx/inP`.
    pub in_flight: Option<(i64, f64, f64)>,
    /// Sender's final: datagrams sent (`Sent N datagrams`).
    pub sent: Option<i64>,
}

/// One line of a flow report.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowLine {
    /// Transfer id (0 for sums).
    pub id: u32,
    /// This process sends on the flow.
    pub sender: bool,
    /// Traffic opposite to the process's main role: printed `[ *1]`.
    pub reversed: bool,
    /// Span start, seconds since the flow started.
    pub start: f64,
    /// Span end.
    pub end: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes × 8 / (end − start).
    pub bits_per_second: f64,
    /// Enhanced-report numbers.
    pub extras: FlowExtras,
    /// The flow's local address pair, for CSV: (local, remote).
    pub addrs: Option<((String, u16), (String, u16))>,
}

/// A report over one span: an interval (`final_report` false) or the whole
/// test.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowReport {
    /// The whole test rather than one interval.
    pub final_report: bool,
    /// One line per flow direction, in start order.
    pub flows: Vec<FlowLine>,
    /// The sum over every flow line (printed when there is more than one).
    pub sum: FlowLine,
    /// Full-duplex: per-connection sums of both directions (`[FDn]`).
    pub pairs: Vec<FlowLine>,
    /// A UDP server's report relayed to its client (`Server Report:`).
    pub relay: bool,
}
