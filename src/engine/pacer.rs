//! Rate pacing: a token bucket on a monotonic clock.
//!
//! Each send is scheduled on a virtual timeline advanced by `bytes × 8 / rate`
//! (or `1 / pps` per packet), so sleep overshoot never accumulates into
//! drift. When the sender falls behind (a stall), it may catch up by at most
//! the bucket depth, not by the whole backlog, so a stall never turns into a
//! long line-rate burst.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What to pace to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaceRate {
    /// Bits per second of payload.
    Bits(u64),
    /// Packets (blocks) per second.
    Packets(u64),
}

/// Paces one stream's sends.
#[derive(Debug, Clone)]
pub struct Pacer {
    rate: PaceRate,
    /// Virtual time at which the next send is due.
    next: Instant,
    /// How far behind `now` the schedule may lag (catch-up allowance).
    depth: Duration,
    /// Sends allowed back-to-back before the schedule is consulted.
    burst: u32,
    in_burst: u32,
}

impl Pacer {
    /// A pacer starting at `start`. `burst` blocks go back-to-back (0 or 1 =
    /// no bursting); `block_len` sizes the catch-up allowance.
    pub fn new(rate: PaceRate, burst: u32, block_len: usize, start: Instant) -> Pacer {
        let per_block = Self::cost(rate, block_len);
        // Allow catching up a little (a few blocks, at least 2 ms), never more.
        let depth = (per_block * burst.max(1))
            .max(Duration::from_millis(2))
            .min(Duration::from_millis(50));
        Pacer {
            rate,
            next: start,
            depth,
            burst: burst.max(1),
            in_burst: 0,
        }
    }

    /// Time one block of `bytes` occupies at this rate.
    pub fn cost(rate: PaceRate, bytes: usize) -> Duration {
        match rate {
            PaceRate::Bits(0) | PaceRate::Packets(0) => Duration::ZERO,
            PaceRate::Bits(bps) => Duration::from_nanos(((bytes as u128 * 8 * 1_000_000_000) / bps as u128) as u64),
            PaceRate::Packets(pps) => Duration::from_nanos(1_000_000_000 / pps),
        }
    }

    /// When a send of `bytes` may go, given the time is `now`; advances the
    /// schedule. Returns `None` if it may go at once.
    pub fn schedule(&mut self, bytes: usize, now: Instant) -> Option<Instant> {
        if self.next + self.depth < now {
            // Fell behind more than the allowance: forgive the rest.
            self.next = now - self.depth;
        }
        let due = self.next;
        self.next += Self::cost(self.rate, bytes);
        self.in_burst += 1;
        if self.in_burst < self.burst {
            return None;
        }
        self.in_burst = 0;
        (due > now).then_some(due)
    }

    /// Blocks until a send of `bytes` may go. Returns false if `stop` was
    /// raised while waiting.
    pub fn wait(&mut self, bytes: usize, stop: &AtomicBool) -> bool {
        let now = Instant::now();
        if let Some(due) = self.schedule(bytes, now) {
            return sleep_until(due, stop);
        }
        !stop.load(Ordering::Relaxed)
    }
}

/// Sleeps until `due` in slices of at most 50 ms, watching `stop`.
pub fn sleep_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_arithmetic() {
        assert_eq!(Pacer::cost(PaceRate::Bits(8_000_000), 1000), Duration::from_millis(1));
        assert_eq!(Pacer::cost(PaceRate::Packets(1000), 1470), Duration::from_millis(1));
        assert_eq!(Pacer::cost(PaceRate::Bits(1_000_000), 125), Duration::from_millis(1));
    }

    #[test]
    fn schedule_is_evenly_spaced_without_drift() {
        let t0 = Instant::now();
        let mut p = Pacer::new(PaceRate::Bits(8_000_000), 0, 1000, t0);
        // Sending on time: each send is due 1 ms after the previous one.
        let mut now = t0;
        for i in 0..1000u64 {
            let due = p.schedule(1000, now);
            let expect = t0 + Duration::from_millis(i);
            match due {
                Some(d) => {
                    assert_eq!(d, expect);
                    now = d + Duration::from_micros(80); // oversleep
                }
                None => assert!(expect <= now),
            }
        }
        // 1000 blocks of 1000 bytes at 8 Mbit/s take 1 s: the schedule ends
        // at exactly 1 s whatever the oversleep was.
        assert_eq!(p.next, t0 + Duration::from_secs(1));
    }

    #[test]
    fn catch_up_after_a_stall_is_bounded() {
        let t0 = Instant::now();
        let mut p = Pacer::new(PaceRate::Bits(8_000_000), 0, 1000, t0);
        let later = t0 + Duration::from_secs(1);
        // After a 1 s stall, only the depth (2 ms = 2 blocks) goes at once.
        let mut immediate = 0;
        while p.schedule(1000, later).is_none() {
            immediate += 1;
            assert!(immediate < 10);
        }
        assert!(immediate <= 3, "{immediate}");
    }

    #[test]
    fn bursts_send_n_then_wait() {
        let t0 = Instant::now();
        let mut p = Pacer::new(PaceRate::Bits(8_000_000), 4, 1000, t0);
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..12 {
            if let Some(d) = p.schedule(1000, now) {
                waits.push(d - t0);
                now = d;
            }
        }
        // A wait every 4 blocks, 4 ms apart.
        assert_eq!(
            waits,
            vec![
                Duration::from_millis(3),
                Duration::from_millis(7),
                Duration::from_millis(11)
            ]
        );
    }
}
