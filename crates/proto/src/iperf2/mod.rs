//! The iperf 2.x wire protocol (`docs/protocols.md`, the iperf 2 sections),
//! sans-IO.
//!
//! iperf2 has no control connection: a TCP client opens each data
//! connection with a header carrying the test settings, a UDP client puts
//! them in every datagram, and a UDP test ends with a negative-sequence FIN
//! answered by a 128-byte server report. Every multi-byte field is
//! big-endian. Decoders take untrusted bytes and return errors, never panic;
//! lengths come from the header's own fields and are capped before use.

pub mod ack;
pub mod bounceback;
pub mod burst;
pub mod defaults;
pub mod flags;
pub mod header;
pub mod l4s;
pub mod udp;

pub use ack::ClientAck;
pub use burst::{BURST_HEADER_LEN, BurstHeader, BurstTracker};
pub use header::{Amount, ClientHeader, HeaderError, HeaderExt, Need, StartTime};
pub use udp::{DatagramHeader, IsochPayload, ServerReport};

/// `version_u` word of iperf 2.1.x: major 2, minor 1.
pub const VERSION_U: u32 = 0x0002_0001;
/// `version_l` word of 2.1.8 final: patch 8, kind 3 (final).
pub const VERSION_L: u32 = 0x0008_0003;

/// A peer's version as iperf2 prints it (`2.1.8`, `2.2.0-dev`), or `None`
/// when either word is zero (nothing is printed then).
pub fn version_string(version_u: u32, version_l: u32) -> Option<String> {
    if version_u == 0 || version_l == 0 {
        return None;
    }
    let kind = match version_l & 0xF {
        0 => "-dev",
        1 => "-rc",
        2 => "-rc2",
        3 => "",
        4 => "-private",
        5 => "-master",
        _ => "-unk",
    };
    Some(format!(
        "{}.{}.{}{kind}",
        version_u >> 16,
        version_u & 0xFFFF,
        version_l >> 16
    ))
}

/// The big-endian word at `off` (the caller has checked the length).
pub fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// The big-endian half-word at `off` (the caller has checked the length).
pub fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Writes `v` big-endian at `off` (the caller has checked the length).
pub fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// Writes `v` big-endian at `off` (the caller has checked the length).
pub fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Seconds as iperf2's `(integer seconds, microseconds)` word pair.
pub fn split_secs(secs: f64) -> (u32, u32) {
    if !secs.is_finite() || secs <= 0.0 {
        return (0, 0);
    }
    let whole = secs.trunc();
    let usec = ((secs - whole) * 1e6).round().min(999_999.0);
    (whole.min(u32::MAX as f64) as u32, usec as u32)
}

/// The inverse of [`split_secs`].
pub fn join_secs(sec: u32, usec: u32) -> f64 {
    sec as f64 + usec as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_versions_print_as_iperf2_does() {
        assert_eq!(version_string(VERSION_U, VERSION_L).as_deref(), Some("2.1.8"));
        assert_eq!(
            version_string(0x0002_0002, 0x0000_0005).as_deref(),
            Some("2.2.0-master")
        );
        assert_eq!(version_string(0x0002_0001, 0x0009_0000).as_deref(), Some("2.1.9-dev"));
        assert_eq!(version_string(0x0002_0001, 0x0009_0009).as_deref(), Some("2.1.9-unk"));
        assert_eq!(version_string(0, VERSION_L), None);
    }

    #[test]
    fn seconds_split_into_words() {
        assert_eq!(split_secs(2.5), (2, 500_000));
        assert_eq!(split_secs(0.001234), (0, 1234));
        assert_eq!(split_secs(-1.0), (0, 0));
        assert_eq!(join_secs(2, 500_000), 2.5);
    }
}
