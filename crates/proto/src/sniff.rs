//! Which dialect is this? A server port that answers both tells them apart
//! from the first bytes of a connection or the first datagram of a flow.
//!
//! An iperf3 connection opens with a 37-byte cookie: 36 characters of
//! `[a-z2-7]` and a NUL. An iperf 2 connection opens with header words
//! whose first byte has flag bits set (`0x80`, `0x40`, ...), a bounceback
//! message (`0x00800000`), or — a `-C` client — its `0123...` payload:
//! none of those can start a cookie, so one byte usually decides. On UDP
//! an iperf3 stream starts with a 4-byte hello (or wirespeed's hello with
//! the cookie); anything else may be iperf 2's first datagram.

use super::iperf3::cookie::could_be_cookie;
use super::iperf3::udp::{Hello, parse_hello};
use super::iperf3::{COOKIE_LEN, Cookie};

/// What the first bytes of a TCP connection say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tcp {
    /// Not enough bytes to tell: read up to this many more.
    More(usize),
    /// An iperf3 cookie (a control connection or a data stream).
    Iperf3(Cookie),
    /// Not a cookie: iperf 2 (its header, a bounceback message, a `-C`
    /// client's payload), or junk for the iperf 2 side to refuse.
    Iperf2,
    /// Cookie-shaped but not a cookie (control characters in it).
    Junk,
}

/// Classifies the first bytes read from a connection.
pub fn tcp(prefix: &[u8]) -> Tcp {
    if prefix.is_empty() {
        return Tcp::More(COOKIE_LEN);
    }
    // Only the cookie's bytes count: an iperf3 data stream's payload may
    // follow it in the same read.
    if !could_be_cookie(&prefix[..prefix.len().min(COOKIE_LEN)]) {
        return Tcp::Iperf2;
    }
    if prefix.len() < COOKIE_LEN {
        return Tcp::More(COOKIE_LEN - prefix.len());
    }
    let mut wire = [0u8; COOKIE_LEN];
    wire.copy_from_slice(&prefix[..COOKIE_LEN]);
    match Cookie::from_wire(&wire) {
        Some(c) => Tcp::Iperf3(c),
        None => Tcp::Junk,
    }
}

/// What a datagram on a shared UDP port is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Udp<'a> {
    /// An iperf3 stream's hello.
    Iperf3(Hello<'a>),
    /// Anything else: perhaps an iperf 2 client's first datagram.
    Iperf2,
}

/// Classifies a datagram.
pub fn udp(d: &[u8]) -> Udp<'_> {
    match parse_hello(d) {
        Some(h) => Udp::Iperf3(h),
        None => Udp::Iperf2,
    }
}

/// Whether a datagram is a QUIC version 1 Initial (RFC 9000 § 17.2.2): a
/// long header (the form and fixed bits set, packet type 0), version 1,
/// padded to at least 1200 bytes as every client's first datagram is. An
/// iperf3 hello ("9876") is none; an iperf 2 first datagram starts with
/// its sequence number (0 or 1), so neither. The acceptor offers one only
/// to a `--quic` test waiting at the sender's address.
pub fn quic_initial(d: &[u8]) -> bool {
    d.len() >= 1200 && d[0] & 0xF0 == 0xC0 && d[1..5] == [0, 0, 0, 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quic_initial_is_told_apart() {
        let mut d = vec![0u8; 1200];
        d[0] = 0xC3;
        d[4] = 1;
        assert!(quic_initial(&d));
        assert!(!quic_initial(&d[..1199]), "short");
        d[0] = 0xE3;
        assert!(!quic_initial(&d), "a Handshake packet");
        d[0] = 0xC3;
        d[4] = 2;
        assert!(!quic_initial(&d), "another version");
        let mut hello = b"9876".to_vec();
        hello.resize(1200, 0);
        assert!(!quic_initial(&hello));
    }

    #[test]
    fn one_byte_tells_iperf2_from_a_cookie() {
        assert_eq!(tcp(&[]), Tcp::More(COOKIE_LEN));
        assert_eq!(tcp(&[0x80]), Tcp::Iperf2);
        assert_eq!(tcp(&[0x00, 0x80, 0, 0]), Tcp::Iperf2, "bounceback");
        assert_eq!(tcp(b"0123"), Tcp::Iperf2, "a -C client's payload");
        assert_eq!(tcp(b"abc"), Tcp::More(COOKIE_LEN - 3));
    }

    #[test]
    fn a_whole_cookie_is_iperf3() {
        let c = Cookie::from_random(&[7u8; 36]);
        assert_eq!(tcp(&c.to_wire()), Tcp::Iperf3(c));
        // With a data stream's first payload bytes behind it (found by
        // the sniff fuzz target).
        let mut more = c.to_wire().to_vec();
        more.extend_from_slice(&[0xff, 0x00, 0x80]);
        assert_eq!(tcp(&more), Tcp::Iperf3(c));
    }

    #[test]
    fn hellos_are_iperf3_and_the_rest_is_left_to_iperf2() {
        assert!(matches!(udp(b"9876"), Udp::Iperf3(Hello::Plain)));
        assert_eq!(udp(&[0u8; 100]), Udp::Iperf2);
        assert_eq!(udp(&[]), Udp::Iperf2);
    }
}
