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

    /// Replaces the catch-up allowance: after a stall, at most `depth` worth
    /// of blocks go back-to-back (`--pacing-timer` sets it for UDP).
    pub fn with_catch_up(mut self, depth: Duration) -> Pacer {
        self.depth = depth;
        self
    }

    /// When the next block is due.
    pub fn next_due(&self) -> Instant {
        self.next
    }

    /// Batch form of [`Pacer::schedule`] for senders that can send several
    /// blocks per call: how many `bytes`-sized blocks (at most `max`) may go
    /// at `now`, counting those due within `lookahead` (sleeping for less
    /// than that costs more than it smooths). The schedule advances by the
    /// blocks granted. `Err(due)` when none may go yet.
    ///
    /// With a burst size N, blocks go in groups of exactly N, one group per
    /// call, and the catch-up allowance is cut to less than one group, so no
    /// burst is ever larger than N.
    pub fn take(&mut self, bytes: usize, now: Instant, max: u32, lookahead: Duration) -> Result<u32, Instant> {
        let cost = Self::cost(self.rate, bytes);
        let group = self.burst;
        let depth = if group > 1 {
            (cost * group).saturating_sub(Duration::from_nanos(1)).min(self.depth)
        } else {
            self.depth
        };
        if self.next + depth < now {
            self.next = now - depth;
        }
        let horizon = now + if group > 1 { Duration::ZERO } else { lookahead };
        if self.next > horizon {
            return Err(self.next);
        }
        let n = if group > 1 {
            group.min(max.max(1))
        } else if cost.is_zero() {
            max
        } else {
            let due = (horizon - self.next).as_nanos() / cost.as_nanos() + 1;
            (due.min(max as u128) as u32).max(1)
        };
        self.next += cost * n;
        Ok(n)
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
    fn batches_take_what_is_due_and_nothing_more() {
        let t0 = Instant::now();
        // 1 Gbit/s of 1250-byte datagrams: one every 10 µs.
        let mut p = Pacer::new(PaceRate::Bits(1_000_000_000), 0, 1250, t0).with_catch_up(Duration::from_millis(1));
        assert_eq!(p.take(1250, t0, 64, Duration::ZERO), Ok(1));
        // 35 µs later, datagrams due at 10, 20, 30 µs may go.
        assert_eq!(p.take(1250, t0 + Duration::from_micros(35), 64, Duration::ZERO), Ok(3));
        // The next is due at 40 µs: nothing yet, and the answer says when.
        assert_eq!(
            p.take(1250, t0 + Duration::from_micros(36), 64, Duration::ZERO),
            Err(t0 + Duration::from_micros(40))
        );
        // With 25 µs of lookahead, 40, 50 and 60 go now (sent early, not extra).
        assert_eq!(
            p.take(1250, t0 + Duration::from_micros(36), 64, Duration::from_micros(25)),
            Ok(3)
        );
        assert_eq!(p.next_due(), t0 + Duration::from_micros(70));
        // The batch cap holds.
        assert_eq!(p.take(1250, t0 + Duration::from_micros(500), 4, Duration::ZERO), Ok(4));
    }

    #[test]
    fn batch_schedule_keeps_the_average_rate_exactly() {
        let t0 = Instant::now();
        let mut p = Pacer::new(PaceRate::Packets(10_000), 0, 64, t0).with_catch_up(Duration::from_millis(1));
        let mut now = t0;
        let mut sent = 0u64;
        // Wake up at irregular times (sleep overshoot) for one second.
        let mut k = 0u64;
        while now < t0 + Duration::from_secs(1) {
            match p.take(64, now, 64, Duration::from_micros(50)) {
                Ok(n) => sent += n as u64,
                Err(due) => now = due + Duration::from_micros(k % 37),
            }
            k += 1;
        }
        // 10 000 pps for one second, give or take the lookahead (one datagram).
        assert!((10_000..=10_001).contains(&sent), "{sent}");
    }

    #[test]
    fn catch_up_is_bounded_by_the_depth() {
        let t0 = Instant::now();
        let mut p = Pacer::new(PaceRate::Packets(100_000), 0, 64, t0).with_catch_up(Duration::from_micros(100));
        // A 1 s stall: only 100 µs worth (10 datagrams, plus the one due now) go.
        assert_eq!(p.take(64, t0 + Duration::from_secs(1), 1000, Duration::ZERO), Ok(11));
    }

    #[test]
    fn burst_groups_are_exact_and_never_merge() {
        let t0 = Instant::now();
        // 8 Mbit/s of 1000-byte blocks (1 ms each) in groups of 4.
        let mut p = Pacer::new(PaceRate::Bits(8_000_000), 4, 1000, t0).with_catch_up(Duration::from_millis(50));
        assert_eq!(p.take(1000, t0, 64, Duration::from_micros(50)), Ok(4));
        assert_eq!(
            p.take(1000, t0 + Duration::from_micros(100), 64, Duration::from_micros(50)),
            Err(t0 + Duration::from_millis(4))
        );
        // Even after a long stall only one group goes at a time.
        assert_eq!(p.take(1000, t0 + Duration::from_secs(1), 64, Duration::ZERO), Ok(4));
        assert!(p.take(1000, t0 + Duration::from_secs(1), 64, Duration::ZERO).is_err());
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
