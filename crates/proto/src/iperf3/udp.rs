//! iperf3's UDP data path on the wire (`docs/protocols.md`, iperf3: UDP
//! streams): the
//! per-stream handshake and the header every datagram starts with.
//!
//! Sans-IO: byte arrays in and out. The engine stamps and parses headers in
//! place inside its batch buffers, so the codec works on slices and never
//! allocates.

/// What a client sends on a new UDP stream: ASCII `"9876"`.
pub const HELLO: [u8; 4] = *b"9876";
/// What the server answers from the stream's connected socket: ASCII `"6789"`.
pub const HELLO_REPLY: [u8; 4] = *b"6789";
/// Pre-3.x servers answered with the integer 987654321 in little-endian.
pub const LEGACY_REPLY: [u8; 4] = 987_654_321u32.to_le_bytes();
/// Pre-3.x clients sent the integer 123456789 in host order.
const LEGACY_HELLO: u32 = 123_456_789;

/// Length of a wirespeed hello: [`HELLO`] followed by the test's 37-byte
/// cookie. C servers read only the first 4 bytes of the datagram, so the
/// cookie costs them nothing; a wirespeed server uses it to tell its
/// client's streams from anyone else's at the same address.
pub const COOKIE_HELLO_LEN: usize = 4 + crate::iperf3::COOKIE_LEN;

/// A hello carrying the test's cookie.
pub fn cookie_hello(cookie: &[u8; crate::iperf3::COOKIE_LEN]) -> [u8; COOKIE_HELLO_LEN] {
    let mut d = [0u8; COOKIE_HELLO_LEN];
    d[..4].copy_from_slice(&HELLO);
    d[4..].copy_from_slice(cookie);
    d
}

/// What a datagram on the server's UDP port is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hello<'a> {
    /// iperf3's 4-byte request (nothing says whose it is but the address).
    Plain,
    /// wirespeed's request, with the cookie of the test it belongs to.
    WithCookie(&'a [u8]),
}

/// Classifies a datagram on the server's port; `None` is junk. Before 3.17
/// big-endian hosts sent the ASCII constants byte-reversed, and before 3.0
/// they were integers in host order; all of those are accepted.
pub fn parse_hello(d: &[u8]) -> Option<Hello<'_>> {
    if d.len() == COOKIE_HELLO_LEN && d[..4] == HELLO {
        return Some(Hello::WithCookie(&d[4..]));
    }
    let b = <[u8; 4]>::try_from(d).ok()?;
    let plain = b == HELLO
        || b == HELLO_REPLY
        || u32::from_le_bytes(b) == LEGACY_HELLO
        || u32::from_be_bytes(b) == LEGACY_HELLO;
    plain.then_some(Hello::Plain)
}

/// Whether a datagram is the server's answer to [`HELLO`].
pub fn is_hello_reply(d: &[u8]) -> bool {
    d == HELLO_REPLY || d == LEGACY_REPLY || d == HELLO || d == [0x3a, 0xde, 0x68, 0xb1]
}

/// Header of one data datagram: the sender's clock when it was sent and the
/// stream's sequence number (first datagram = 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DatagramHeader {
    /// Send time, seconds (the sender's monotonic clock; only differences matter).
    pub sec: u32,
    /// Send time, microseconds within the second (0..999 999).
    pub usec: u32,
    /// Sequence number.
    pub seq: u64,
}

impl DatagramHeader {
    /// Bytes the header occupies: 12 with 32-bit counters, 16 with 64-bit ones.
    pub const fn len(wide: bool) -> usize {
        if wide { 16 } else { 12 }
    }

    /// The send time in nanoseconds.
    pub fn sent_ns(&self) -> u64 {
        self.sec as u64 * 1_000_000_000 + self.usec.min(999_999) as u64 * 1_000
    }

    /// Writes the header at the start of `buf` (big-endian). With 32-bit
    /// counters the sequence number is truncated, as iperf3 does. Returns
    /// false (and writes nothing) if `buf` is shorter than the header.
    pub fn write(&self, buf: &mut [u8], wide: bool) -> bool {
        if buf.len() < Self::len(wide) {
            return false;
        }
        buf[0..4].copy_from_slice(&self.sec.to_be_bytes());
        buf[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if wide {
            buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        } else {
            buf[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes());
        }
        true
    }

    /// Reads a header from the start of a datagram; `None` if it is too short.
    pub fn read(buf: &[u8], wide: bool) -> Option<DatagramHeader> {
        let word = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        if buf.len() < Self::len(wide) {
            return None;
        }
        let seq = if wide {
            (word(8) as u64) << 32 | word(12) as u64
        } else {
            word(8) as u64
        };
        Some(DatagramHeader {
            sec: word(0),
            usec: word(4),
            seq,
        })
    }

    /// A header stamped with a time in nanoseconds.
    pub fn at(ns: u64, seq: u64) -> DatagramHeader {
        DatagramHeader {
            sec: (ns / 1_000_000_000) as u32,
            usec: ((ns % 1_000_000_000) / 1_000) as u32,
            seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_bytes_are_the_ascii_constants() {
        assert_eq!(HELLO, [0x39, 0x38, 0x37, 0x36]);
        assert_eq!(HELLO_REPLY, [0x36, 0x37, 0x38, 0x39]);
        assert_eq!(LEGACY_REPLY, [0xb1, 0x68, 0xde, 0x3a]);
        assert_eq!(parse_hello(b"9876"), Some(Hello::Plain));
        assert_eq!(parse_hello(&123_456_789u32.to_le_bytes()), Some(Hello::Plain));
        assert_eq!(parse_hello(b"98765"), None);
        assert_eq!(parse_hello(b"abcd"), None);
        assert_eq!(parse_hello(&[]), None);
        let cookie = *b"fxo4n5djuz3cykdm3tczotcvrjtxqu5ks3ws\0";
        let h = cookie_hello(&cookie);
        assert_eq!(&h[..4], b"9876");
        assert_eq!(parse_hello(&h), Some(Hello::WithCookie(&cookie[..])));
        // Same length but not a hello.
        let mut bad = h;
        bad[0] = b'x';
        assert_eq!(parse_hello(&bad), None);
        assert!(is_hello_reply(b"6789"));
        assert!(is_hello_reply(&LEGACY_REPLY));
        assert!(!is_hello_reply(b"678"));
    }

    /// First datagram of a `iperf3 -u -b 5M` stream as captured on the wire
    /// (`docs/protocols.md`, iperf3: UDP streams): (sec, usec, seq) =
    /// (615, 488830, 1).
    #[test]
    fn golden_32_bit_header() {
        let wire = [0, 0, 0x02, 0x67, 0x00, 0x07, 0x75, 0x7e, 0, 0, 0, 1];
        let h = DatagramHeader::read(&wire, false).unwrap();
        assert_eq!(
            h,
            DatagramHeader {
                sec: 615,
                usec: 488_830,
                seq: 1
            }
        );
        let mut out = [0u8; 12];
        assert!(h.write(&mut out, false));
        assert_eq!(out, wire);
    }

    #[test]
    fn golden_64_bit_header() {
        let h = DatagramHeader {
            sec: 0x0102_0304,
            usec: 999_999,
            seq: 0x0000_0001_0000_0002,
        };
        let mut out = [0xffu8; 20];
        assert!(h.write(&mut out, true));
        assert_eq!(out[..16], [1, 2, 3, 4, 0x00, 0x0f, 0x42, 0x3f, 0, 0, 0, 1, 0, 0, 0, 2]);
        // The filler after the header is untouched.
        assert_eq!(out[16..], [0xff; 4]);
        assert_eq!(DatagramHeader::read(&out, true), Some(h));
    }

    #[test]
    fn narrow_header_truncates_the_sequence() {
        let h = DatagramHeader::at(1_500_000_000, (1u64 << 32) + 7);
        let mut out = [0u8; 12];
        h.write(&mut out, false);
        let back = DatagramHeader::read(&out, false).unwrap();
        assert_eq!(back.seq, 7);
        assert_eq!((back.sec, back.usec), (1, 500_000));
        assert_eq!(back.sent_ns(), 1_500_000_000);
    }

    #[test]
    fn short_buffers_are_refused_not_panics() {
        for n in 0..12 {
            assert_eq!(DatagramHeader::read(&vec![0; n], false), None);
        }
        assert_eq!(DatagramHeader::read(&[0; 15], true), None);
        assert!(!DatagramHeader::default().write(&mut [0; 11], false));
    }
}
