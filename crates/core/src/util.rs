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

/// The seed sequence of `--set-rand-seed` (iperf 2 master), when given.
static SEEDS: std::sync::Mutex<Option<u64>> = std::sync::Mutex::new(None);

/// Seeds the generators a test draws its varying rates and frame sizes
/// from (iperf 2 master's `--set-rand-seed`, its `srand`): from now on the
/// n-th generator made in this process starts from the n-th number of a
/// sequence this seed fixes, so a run repeats its draws.
pub fn seed_generators(seed: u32) {
    if let Ok(mut s) = SEEDS.lock() {
        *s = Some(u64::from(seed));
    }
}

/// The next number of a splitmix64 sequence (its state advanced).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed for a new generator: the next of [`seed_generators`]' sequence,
/// or a random one when no seed was set.
pub(crate) fn generator_seed() -> u64 {
    match SEEDS.lock().ok().as_deref_mut().and_then(Option::as_mut) {
        Some(state) => splitmix64(state),
        None => random_u64(),
    }
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
    fn a_seed_fixes_its_sequence() {
        let (mut a, mut b, mut c) = (7u64, 7u64, 8u64);
        let xa: Vec<u64> = (0..4).map(|_| splitmix64(&mut a)).collect();
        let xb: Vec<u64> = (0..4).map(|_| splitmix64(&mut b)).collect();
        let xc: Vec<u64> = (0..4).map(|_| splitmix64(&mut c)).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
        assert_ne!(xa[0], xa[1]);
    }

    #[test]
    fn random_fill_is_not_constant() {
        let mut a = [0u8; 64];
        fill_random(&mut a);
        assert!(a.iter().any(|b| *b != a[0]));
    }
}
