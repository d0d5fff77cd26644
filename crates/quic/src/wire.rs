//! The perf protocol's bytes (draft-banks-quic-performance; docs/protocols.md
//! § QUIC perf): ALPN `perf`; on each client-initiated bidirectional stream
//! the client's first 8 bytes are a big-endian u64, the number of bytes it
//! asks the server to send back once the client's side of the stream has
//! ended (FIN). Everything after those 8 bytes is upload, counted and
//! thrown away. Sans-IO: values in, bytes out.

/// The ALPN both ends offer.
pub const ALPN: &[u8] = b"perf";

/// Length of the request that opens a stream.
pub const REQUEST_LEN: usize = 8;

/// What a client asks for when it means "as much as I will read": the
/// largest request there is (it stops reading, and says so, at its own end).
pub const ENDLESS: u64 = u64::MAX;

/// The request asking for `bytes` back.
pub fn request(bytes: u64) -> [u8; REQUEST_LEN] {
    bytes.to_be_bytes()
}

/// The bytes a request asks for.
pub fn parse_request(b: [u8; REQUEST_LEN]) -> u64 {
    u64::from_be_bytes(b)
}

/// Upload bytes a client sends on stream `i` of `n` for a total of `total`:
/// an even share, the first streams taking one more byte each until the
/// remainder is spent (the shares add up to `total`).
pub fn share(total: u64, i: u32, n: u32) -> u64 {
    let n = u64::from(n.max(1));
    let i = u64::from(i);
    total / n + u64::from(i < total % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_big_endian() {
        assert_eq!(request(1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(request(0x0102_0304_0506_0708), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(parse_request(request(ENDLESS)), u64::MAX);
        assert_eq!(parse_request([0; 8]), 0);
    }

    #[test]
    fn shares_add_up() {
        for (total, n) in [(0u64, 1u32), (10, 3), (1 << 30, 4), (7, 8), (u64::MAX, 3)] {
            let sum: u128 = (0..n).map(|i| u128::from(share(total, i, n))).sum();
            assert_eq!(sum, u128::from(total), "{total} over {n}");
        }
        assert_eq!(share(10, 0, 3), 4);
        assert_eq!(share(10, 2, 3), 3);
    }
}
