//! Flag words of iperf 2.1.8's headers (`include/payloads.h`).

/// Legacy dual (-d) / tradeoff (-r) request: the server connects back.
pub const VERSION1: u32 = 0x8000_0000;
/// The 36-byte extended header follows the v1 header.
pub const EXTEND: u32 = 0x4000_0000;
/// UDP: the upper flags carry per-packet test settings.
pub const UDPTESTS: u32 = 0x2000_0000;
/// A permit key follows the header (TCP).
pub const KEYCHECK: u32 = 0x1000_0000;
/// UDP: 64-bit sequence numbers (also in the server report).
pub const SEQNO64B: u32 = 0x0800_0000;
/// "New style" test (-R, --full-duplex, -X): no v1 connect-back meaning.
pub const VERSION2: u32 = 0x0400_0000;
/// -X: the client waits for the server's version ack.
pub const V2PEERDETECT: u32 = 0x0200_0000;
/// First word of a bounceback message.
pub const BOUNCEBACK: u32 = 0x0080_0000;
/// UDP tiny trip-times header (the 16-bit 0x0002 read as 32 bits).
pub const SMALL_TRIPTIMES: u32 = 0x0002_0000;
/// The length field is valid.
pub const LEN_BIT: u32 = 0x0001_0000;
/// Header length bits (`len << 1`).
pub const LEN_MASK: u32 = 0x0000_01FE;
/// With VERSION1: start the connect-back at once (-d), else after (-r).
pub const RUN_NOW: u32 = 0x0000_0001;

/// Upper flags (16 bits at offset 8 of the extension).
pub mod upper {
    /// --isochronous.
    pub const ISOCH: u16 = 0x0001;
    /// L2 length check, IPv6.
    pub const L2ETHPIPV6: u16 = 0x0002;
    /// --l2checks.
    pub const L2LENCHECK: u16 = 0x0004;
    /// --no-udp-fin.
    pub const NOUDPFIN: u16 = 0x0008;
    /// --trip-times: a start timestamp is present.
    pub const TRIPTIME: u16 = 0x0010;
    /// Isochronous settings block present.
    pub const ISOCH_SETTINGS: u16 = 0x0040;
    /// The rate is in packets per second.
    pub const UNITS_PPS: u16 = 0x0080;
    /// Rate set (unused by 2.1.8 writers).
    pub const BWSET: u16 = 0x0100;
    /// --fq-rate present.
    pub const FQRATESET: u16 = 0x0200;
    /// -R.
    pub const REVERSE: u16 = 0x0400;
    /// --full-duplex.
    pub const FULLDUPLEX: u16 = 0x0800;
    /// --txstart-time present.
    pub const EPOCH_START: u16 = 0x1000;
    /// --burst-period/--burst-size (TCP headers).
    pub const PERIODICBURST: u16 = 0x2000;
    /// --udp-l4s (2.2.1): the same bit in a UDP datagram's settings, with
    /// `UDPTESTS` (`l4s.rs`).
    pub const UDPL4S: u16 = 0x2000;
    /// --tcp-write-prefetch present.
    pub const WRITEPREFETCH: u16 = 0x4000;
    /// --tcp-quickack.
    pub const TCPQUICKACK: u16 = 0x8000;
}

/// Server report flag: the latency extension is valid.
pub const SERVER_HEADER_EXTEND: u32 = 0x4000_0000;

/// `hdr_typelen.type` of the server's version ack.
pub const CLIENTHDRACK: u32 = 2;
