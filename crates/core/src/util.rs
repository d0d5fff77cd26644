//! Randomness: for cookies, payloads, and where the kernel's source fails.

/// Fills `buf` from the system's random source (falls back to a
/// clock-seeded generator if it cannot be read).
pub fn os_random(buf: &mut [u8]) {
    if wirespeed_sys::os_random(buf).is_err() {
        fill_prng(buf, clock_seed());
    }
}

fn clock_seed() -> u64 {
    let (s, n) = wirespeed_sys::time::monotonic();
    s.wrapping_mul(1_000_000_007) ^ n as u64 ^ ((std::process::id() as u64) << 32)
}

/// A random 64-bit number.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    os_random(&mut b);
    u64::from_le_bytes(b)
}

/// Fills a payload buffer with pseudo-random bytes (fast; not for secrets).
pub(crate) fn fill_random(buf: &mut [u8]) {
    fill_prng(buf, random_u64() | 1);
}

fn fill_prng(buf: &mut [u8], mut x: u64) {
    if x == 0 {
        x = 0x9E37_79B9_7F4A_7C15;
    }
    for chunk in buf.chunks_mut(8) {
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// A fresh iperf3 cookie.
pub fn new_cookie() -> wirespeed_proto::iperf3::Cookie {
    let mut r = [0u8; 36];
    os_random(&mut r);
    wirespeed_proto::iperf3::Cookie::from_random(&r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_fill_is_not_constant() {
        let mut a = [0u8; 64];
        fill_random(&mut a);
        assert!(a.iter().any(|b| *b != a[0]));
    }
}
