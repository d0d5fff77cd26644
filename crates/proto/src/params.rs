//! The test both ends agree on: what travels in iperf3's parameter JSON
//! or in iperf 2's header ([`TestParams`]), and the sizes both dialects
//! default to. The tool's whole configuration builds on it.

use std::time::Duration;

/// Transport carrying the test data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// TCP (MPTCP when `mptcp` is set).
    #[default]
    Tcp,
    /// UDP datagrams.
    Udp,
    /// SCTP, where the kernel has it.
    Sctp,
    /// QUIC streams on one connection between two wirespeed ends (`-q`;
    /// docs/protocols.md § QUIC data): a byte stream as TCP's, counted
    /// the same way.
    Quic,
}

impl Protocol {
    /// The name iperf3 prints (`"TCP"`, `"UDP"`, `"SCTP"`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
            Protocol::Quic => "QUIC",
        }
    }
}

/// Which way data flows, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// Client sends, server receives.
    #[default]
    Forward,
    /// Server sends, client receives (`-R`).
    Reverse,
    /// Both send at once on separate connections (iperf3 `--bidir`).
    Bidir,
    /// Both send at once on the same socket (iperf2 `--full-duplex`).
    FullDuplex,
    /// iperf2 `-d`: the server connects back and sends while the client sends.
    Dual,
    /// iperf2 `-r`: the server connects back and sends after the client is done.
    Tradeoff,
}

impl Direction {
    /// Does the client send data?
    pub fn client_sends(self) -> bool {
        !matches!(self, Direction::Reverse)
    }
}

/// What ends a test (the client decides).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EndCondition {
    /// Run for this long; zero means until interrupted.
    Time(Duration),
    /// Stop after this many bytes in total over all streams.
    Bytes(u64),
    /// Stop after this many blocks (writes or datagrams) in total.
    Blocks(u64),
}

impl Default for EndCondition {
    fn default() -> Self {
        EndCondition::Time(Duration::from_secs(10))
    }
}

/// Test parameters both ends agree on.
#[derive(Debug, Clone, PartialEq)]
pub struct TestParams {
    /// Transport.
    pub protocol: Protocol,
    /// Direction of data flow.
    pub direction: Direction,
    /// Streams per direction (`-P`).
    pub streams: u32,
    /// End condition (`-t`, `-n`, `-k`).
    pub end: EndCondition,
    /// Omitted warm-up (`-O`).
    pub omit: Duration,
    /// Block (write/read) size or UDP datagram size; `None` = protocol default.
    pub block_len: Option<u32>,
    /// Target rate per stream in bit/s (0 = unlimited).
    pub rate: u64,
    /// iperf 2's `-b mean,stdev`: the rate varies around `rate` with this
    /// standard deviation (bit/s), drawn anew every 0.1 s.
    pub rate_stdev: Option<u64>,
    /// iperf 2's `--burst-size`/`--burst-period`: this many bytes back to
    /// back, once per period.
    pub periodic_burst: Option<(u32, Duration)>,
    /// iperf 2's `--isochronous`: frames at a steady rate, of log-normal
    /// sizes (senders only).
    pub frames: Option<FrameSpec>,
    /// Target rate per stream in packets/s, when given as `Npps`.
    pub pps: Option<u64>,
    /// Blocks per pacing burst (0 = no burst given).
    pub burst: u32,
    /// `--fq-rate` in bit/s (0 = off).
    pub fq_rate: u64,
    /// `--pacing-timer` in microseconds (sent for compatibility).
    pub pacing_timer: u32,
    /// SO_SNDBUF/SO_RCVBUF for data sockets (`-w`).
    pub window: Option<u32>,
    /// TCP_MAXSEG (`-M`).
    pub mss: Option<u32>,
    /// TCP_NODELAY on data sockets (`-N`).
    pub nodelay: bool,
    /// TCP congestion control algorithm (`-C` / iperf2 `-Z`).
    pub congestion: Option<String>,
    /// IP TOS byte (`-S`, `--dscp`).
    pub tos: u8,
    /// IPv6 flow label (`-L`).
    pub flowlabel: Option<u32>,
    /// Multipath TCP for data streams (`-m`).
    pub mptcp: bool,
    /// Zero-copy send (`-Z`).
    pub zerocopy: bool,
    /// Receive with MSG_TRUNC (`--skip-rx-copy`).
    pub skip_rx_copy: bool,
    /// 64-bit UDP sequence numbers.
    pub udp_counters_64bit: bool,
    /// Payload is the `0123456789...` pattern instead of random bytes.
    pub repeating_payload: bool,
    /// Set IPv4 DF on UDP sockets.
    pub dont_fragment: bool,
    /// UDP GSO on send / GRO on receive.
    pub gsro: bool,
    /// `-T` title (iperf3) echoed into the server's JSON.
    pub title: Option<String>,
    /// `--extra-data`, echoed into both JSON documents.
    pub extra_data: Option<String>,
    /// Ask the server to return its output (`--get-server-output`).
    pub get_server_output: bool,
    /// CPU the server should pin to (`-A n,m`).
    pub server_affinity: Option<usize>,
    /// iperf2 `--trip-times`: send timestamps for one-way latency.
    pub trip_times: bool,
    /// A `--quic` test with `--latency`: the client opens one more QUIC
    /// stream on the test's connection, after the data streams, and the
    /// server echoes on it the round-trip probes sent over it.
    pub quic_probes: bool,
}

/// Isochronous traffic (iperf 2's `--isochronous fps:mean,stdev` and
/// `--ipg`): a frame every `1/fps` seconds, its size drawn from a
/// log-normal distribution of `mean`/`stdev` bits per second (divided by
/// `fps × 8`), sent as `-l`-sized pieces `ipg` apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameSpec {
    /// Frames per second.
    pub fps: f64,
    /// Mean rate, bit/s.
    pub mean: f64,
    /// Standard deviation of the rate, bit/s.
    pub stdev: f64,
    /// Gap between the pieces of a frame (UDP datagrams).
    pub ipg: Duration,
}

impl FrameSpec {
    /// iperf 2's defaults: 60 frames/s, 20 Mbit/s, no spread, no gap.
    pub const DEFAULT: FrameSpec = FrameSpec {
        fps: 60.0,
        mean: 20e6,
        stdev: 0.0,
        ipg: Duration::ZERO,
    };

    /// The frame period, in whole microseconds (as iperf 2 keeps it).
    pub fn period(&self) -> Duration {
        Duration::from_micros((1e6 / self.fps.max(1e-6)) as u64)
    }

    /// Mean bytes per frame.
    pub fn mean_bytes(&self) -> f64 {
        self.mean / (self.fps * 8.0)
    }
}

impl Default for TestParams {
    fn default() -> Self {
        TestParams {
            protocol: Protocol::Tcp,
            direction: Direction::Forward,
            streams: 1,
            end: EndCondition::default(),
            omit: Duration::ZERO,
            block_len: None,
            rate: 0,
            rate_stdev: None,
            periodic_burst: None,
            frames: None,
            pps: None,
            burst: 0,
            fq_rate: 0,
            pacing_timer: 1000,
            window: None,
            mss: None,
            nodelay: false,
            congestion: None,
            tos: 0,
            flowlabel: None,
            mptcp: false,
            zerocopy: false,
            skip_rx_copy: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            dont_fragment: false,
            gsro: false,
            title: None,
            extra_data: None,
            get_server_output: false,
            server_affinity: None,
            trip_times: false,
            quic_probes: false,
        }
    }
}

/// Default TCP block size (both iperfs): 128 KiB.
pub const DEFAULT_TCP_BLOCK: u32 = 128 * 1024;
/// iperf3's UDP datagram size when the control MSS is unknown.
pub const DEFAULT_UDP_BLOCK: u32 = 1460;
/// iperf3's default UDP rate: 1 Mbit/s (2^20).
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// Largest TCP block iperf3 accepts (1 MiB).
pub const MAX_TCP_BLOCK: u32 = 1024 * 1024;
/// Largest UDP payload.
pub const MAX_UDP_BLOCK: u32 = 65507;
/// Smallest UDP datagram that holds iperf3's header.
pub const MIN_UDP_BLOCK: u32 = 16;

impl TestParams {
    /// The block size in effect for this protocol.
    pub fn block_len_or_default(&self) -> u32 {
        match (self.block_len, self.protocol) {
            (Some(l), _) => l,
            (None, Protocol::Udp) => DEFAULT_UDP_BLOCK,
            (None, Protocol::Sctp) => 64 * 1024,
            (None, Protocol::Tcp | Protocol::Quic) => DEFAULT_TCP_BLOCK,
        }
    }

    /// Test duration, when the test is timed (`None` for `-n`/`-k` or `-t 0`).
    pub fn duration(&self) -> Option<Duration> {
        match self.end {
            EndCondition::Time(d) if !d.is_zero() => Some(d),
            _ => None,
        }
    }
}
