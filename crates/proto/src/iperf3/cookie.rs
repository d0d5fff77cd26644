//! The 37-byte session cookie: 36 characters of RFC 4648 base32 (lower case)
//! and a NUL. It opens the control connection and every TCP data stream.

use std::fmt;

/// Bytes on the wire, NUL included.
pub const COOKIE_LEN: usize = 37;

const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A test's cookie (the 36 visible characters).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie([u8; 36]);

impl Cookie {
    /// A fresh cookie from 36 random bytes, mapped as iperf3 does (`byte % 32`).
    pub fn from_random(random: &[u8; 36]) -> Cookie {
        let mut c = [0u8; 36];
        for (o, r) in c.iter_mut().zip(random) {
            *o = ALPHABET[(*r % 32) as usize];
        }
        Cookie(c)
    }

    /// Decodes the 37 wire bytes. iperf3 compares C-string style (up to the
    /// first NUL), so this accepts any 36 printable characters followed by NUL
    /// or not; it rejects embedded NULs and non-ASCII.
    pub fn from_wire(bytes: &[u8; COOKIE_LEN]) -> Option<Cookie> {
        let mut c = [0u8; 36];
        c.copy_from_slice(&bytes[..36]);
        if c.iter().any(|b| !b.is_ascii_graphic()) {
            return None;
        }
        Some(Cookie(c))
    }

    /// The 37 bytes to send.
    pub fn to_wire(&self) -> [u8; COOKIE_LEN] {
        let mut w = [0u8; COOKIE_LEN];
        w[..36].copy_from_slice(&self.0);
        w
    }

    /// The 36 characters.
    pub fn as_str(&self) -> &str {
        // Constructed from ASCII only.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl fmt::Debug for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cookie({})", self.as_str())
    }
}

/// Could `prefix` be the start of an iperf3 cookie? Used to tell an iperf3
/// client from an iperf2 one on a shared port: iperf2 starts with header
/// words (0x40.., 0x80.., 0xc0..) or the ASCII digits `0123...`.
pub fn could_be_cookie(prefix: &[u8]) -> bool {
    prefix
        .iter()
        .enumerate()
        .all(|(i, b)| if i < 36 { ALPHABET.contains(b) } else { *b == 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_cookies_use_the_base32_alphabet() {
        let c = Cookie::from_random(&[200; 36]);
        assert_eq!(c.as_str().len(), 36);
        assert!(c.as_str().bytes().all(|b| ALPHABET.contains(&b)));
        let w = c.to_wire();
        assert_eq!(w[36], 0);
        assert_eq!(Cookie::from_wire(&w), Some(c));
    }

    #[test]
    fn observed_cookie_round_trips() {
        let mut w = [0u8; 37];
        w[..36].copy_from_slice(b"fxo4n5djuz3cykdm3tczotcvrjtxqu5ks3ws");
        let c = Cookie::from_wire(&w).unwrap();
        assert_eq!(c.as_str(), "fxo4n5djuz3cykdm3tczotcvrjtxqu5ks3ws");
        assert!(could_be_cookie(&w));
    }

    #[test]
    fn iperf2_first_bytes_are_not_cookies() {
        assert!(!could_be_cookie(&[0x40, 0x01, 0x00, 0x78]));
        assert!(!could_be_cookie(b"0123456789"));
        assert!(!could_be_cookie(&[0x80, 0, 0, 0]));
        let mut bad = [b'a'; 37];
        bad[36] = b'x';
        assert!(!could_be_cookie(&bad));
        assert!(Cookie::from_wire(&[0u8; 37]).is_none());
    }
}
