//! iperf 2's defaults that both its client and its server apply: the
//! datagram sizes and rate a UDP test has when the command line or the
//! client's header says nothing.

/// iperf 2's default UDP datagram size (IPv4).
pub const DEFAULT_UDP_LEN: u32 = 1470;
/// iperf 2's default UDP datagram size from an IPv6 client.
pub const DEFAULT_UDP_LEN_V6: u32 = 1450;
/// The largest UDP payload over IPv4.
pub const MAX_UDP_LEN: u32 = 65507;
/// iperf 2's default UDP rate: 1 Mbit/s in binary units.
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// How far behind a paced sender may catch up at once, µs.
pub const IPERF2_CATCH_UP_US: u32 = 100_000;
