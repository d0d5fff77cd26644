//! The clocks, in one place: the wall clock the iperf protocols stamp
//! (seconds and microseconds, or nanoseconds), the monotonic clock UDP
//! pacing and iperf3's datagrams use, and epoch seconds for reports.
//!
//! The system calls themselves live in `sys::time`.

use wirespeed_sys::time::{monotonic, realtime};

/// Wall clock as iperf 2 stamps it: (seconds, microseconds).
pub fn wall_clock() -> (u32, u32) {
    let (s, n) = realtime();
    (s as u32, n / 1000)
}

/// The wall clock `d` from now, as (seconds, µs).
pub fn wall_clock_after(d: std::time::Duration) -> (u32, u32) {
    let (s, n) = realtime();
    let us = u64::from(n / 1000) + d.as_micros() as u64;
    ((s + us / 1_000_000) as u32, (us % 1_000_000) as u32)
}

/// Wall clock in nanoseconds since the epoch.
pub fn wall_ns() -> i64 {
    let (s, n) = realtime();
    (s * 1_000_000_000 + n as u64) as i64
}

/// The monotonic clock in nanoseconds (its origin is arbitrary).
pub fn mono_ns() -> i64 {
    let (s, n) = monotonic();
    (s * 1_000_000_000 + n as u64) as i64
}

/// Seconds since the epoch, now.
pub fn epoch_now() -> f64 {
    wirespeed_sys::time::epoch_now()
}

/// A point in time as iperf3 prints it (`Sun, 22 Nov 2026 02:42:05 GMT`).
pub fn timestamp_now() -> crate::events::Timestamp {
    let now = epoch_now();
    let secs = now as i64;
    crate::events::Timestamp {
        time: wirespeed_sys::time::strftime("%a, %d %b %Y %H:%M:%S GMT", secs, true),
        timesecs: secs,
        timemillisecs: (now * 1000.0) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_agrees_with_epoch_seconds() {
        let (s, us) = wall_clock();
        assert!(us < 1_000_000);
        assert!((s as f64 + us as f64 * 1e-6 - epoch_now()).abs() < 1.0);
        assert!((wall_ns() as f64 * 1e-9 - epoch_now()).abs() < 1.0);
    }
}
