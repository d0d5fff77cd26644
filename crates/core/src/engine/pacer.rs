//! Rate pacing: a token bucket on a monotonic clock.
//!
//! Each send is scheduled on a virtual timeline advanced by `bytes × 8 / rate`
//! (or `1 / pps` per packet), so sleep overshoot never accumulates into
//! drift. When the sender falls behind (a stall), it may catch up by at most
//! the bucket depth, not by the whole backlog, so a stall never turns into a
//! long line-rate burst.
//!
//! A varying rate (iperf 2's `-b mean,stdev`) is drawn anew every
//! [`VARY_PERIOD`] from a log-normal distribution with that mean and
//! standard deviation; the schedule then runs at the drawn rate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What to pace to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaceRate {
    /// Bits per second of payload.
    Bits(u64),
    /// Packets (blocks) per second.
    Packets(u64),
    /// Bits per second, sent as periodic bursts: each group of `burst`
    /// blocks goes at once when its time comes (iperf 2's
    /// `--burst-period`), rather than spread over its slot; no group
    /// starts at or after `until` (the test's end).
    Bursts {
        /// Bits per second.
        bps: u64,
        /// When the test ends, if it ends by time.
        until: Option<Instant>,
    },
    /// Bits per second drawn every [`VARY_PERIOD`] from a log-normal
    /// distribution of this mean and standard deviation.
    Varying {
        /// Mean, bits/s.
        mean: u64,
        /// Standard deviation, bits/s.
        stdev: u64,
    },
}

/// How often a varying rate is drawn again (iperf 2's 0.1 s).
pub(crate) const VARY_PERIOD: Duration = Duration::from_millis(100);

/// A log-normal distribution of a given mean and standard deviation,
/// with its own generator (xorshift64*, seeded from the system's random
/// source, or from `--set-rand-seed`'s sequence: `util::generator_seed`).
/// iperf 2 draws its varying rates and frame sizes from one.
#[derive(Debug, Clone)]
pub(crate) struct LogNormal {
    /// ln-space mean and standard deviation.
    mu: f64,
    sigma: f64,
    state: u64,
}

impl LogNormal {
    /// The distribution whose draws have this mean and standard deviation.
    pub fn new(mean: f64, stdev: f64) -> LogNormal {
        let m = mean.max(1e-9);
        let sigma2 = (1.0 + (stdev * stdev) / (m * m)).ln();
        LogNormal {
            mu: m.ln() - sigma2 / 2.0,
            sigma: sigma2.sqrt(),
            state: crate::util::generator_seed() | 1,
        }
    }

    fn uniform(&mut self) -> f64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let x = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // (0, 1]: never 0, so its logarithm is finite.
        ((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// One draw (Box–Muller for the normal).
    pub fn draw(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        (self.mu + self.sigma * z).exp()
    }
}

/// A varying rate's state: the distribution and when to draw next.
#[derive(Debug, Clone)]
struct Vary {
    dist: LogNormal,
    next_draw: Instant,
}

impl Vary {
    fn new(mean: u64, stdev: u64, start: Instant) -> Vary {
        Vary {
            dist: LogNormal::new((mean as f64).max(1.0), stdev as f64),
            next_draw: start,
        }
    }
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
    /// A catching-up batch sender waits until then ([`Pacer::take`]).
    hold: Instant,
    /// A varying rate's generator (`rate` holds the current draw).
    vary: Option<Vary>,
    /// Groups wait at their first block and then go whole ([`PaceRate::Bursts`]).
    leading: bool,
    /// No group starts from then on.
    until: Option<Instant>,
}

/// Debt a batch sender may build up and pay back ([`Pacer::take`]); a longer
/// stall is forgiven beyond this.
pub(crate) const MAX_DEBT: Duration = Duration::from_millis(250);

impl Pacer {
    /// A pacer starting at `start`. `burst` blocks go back-to-back (0 or 1 =
    /// no bursting); `block_len` sizes the catch-up allowance.
    pub fn new(rate: PaceRate, burst: u32, block_len: usize, start: Instant) -> Pacer {
        let (leading, until) = match rate {
            PaceRate::Bursts { until, .. } => (true, until),
            _ => (false, None),
        };
        let (rate, vary) = match rate {
            PaceRate::Varying { mean, stdev } => (PaceRate::Bits(mean.max(1)), Some(Vary::new(mean, stdev, start))),
            PaceRate::Bursts { bps, .. } => (PaceRate::Bits(bps), None),
            r => (r, None),
        };
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
            hold: start,
            vary,
            leading,
            until,
        }
    }

    /// A varying rate: draws the next rate when its period has come. The
    /// schedule is kept within one period of now, so a slow draw cannot
    /// hold the next one back.
    fn redraw(&mut self, now: Instant) {
        let Some(v) = self.vary.as_mut() else { return };
        if now < v.next_draw {
            return;
        }
        while v.next_draw <= now {
            v.next_draw += VARY_PERIOD;
        }
        let bps = v.dist.draw().clamp(1.0, u64::MAX as f64 / 2.0);
        self.rate = PaceRate::Bits(bps as u64);
        self.next = self.next.min(now + VARY_PERIOD);
        self.hold = self.hold.min(now + VARY_PERIOD);
    }

    /// Time one block of `bytes` occupies at this rate.
    pub fn cost(rate: PaceRate, bytes: usize) -> Duration {
        match rate {
            PaceRate::Bits(0)
            | PaceRate::Bursts { bps: 0, .. }
            | PaceRate::Packets(0)
            | PaceRate::Varying { mean: 0, .. } => Duration::ZERO,
            PaceRate::Bits(bps) | PaceRate::Bursts { bps, .. } | PaceRate::Varying { mean: bps, .. } => {
                Duration::from_nanos(((bytes as u128 * 8 * 1_000_000_000) / bps as u128) as u64)
            }
            PaceRate::Packets(pps) => Duration::from_nanos(1_000_000_000 / pps),
        }
    }

    /// When a send of `bytes` may go, given the time is `now`; advances the
    /// schedule. Returns `None` if it may go at once.
    pub fn schedule(&mut self, bytes: usize, now: Instant) -> Option<Instant> {
        self.redraw(now);
        if self.leading {
            // A group's first block waits for the group's time; the rest
            // follow at once.
            let first = self.in_burst == 0;
            self.in_burst = (self.in_burst + 1) % self.burst;
            if !first {
                return None;
            }
            if self.next + self.depth < now {
                self.next = now - self.depth;
            }
            let due = self.next;
            self.next += Self::cost(self.rate, bytes) * self.burst;
            if let Some(u) = self.until.filter(|u| due >= *u) {
                // The test ends first: wait for its stop instead.
                return Some(u + Duration::from_secs(86_400));
            }
            return (due > now).then_some(due);
        }
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
    pub(crate) fn with_catch_up(mut self, depth: Duration) -> Pacer {
        self.depth = depth;
        self
    }

    /// When the next block is due.
    pub(crate) fn next_due(&self) -> Instant {
        self.next
    }

    /// Batch form of [`Pacer::schedule`] for senders that can send several
    /// blocks per call: how many `bytes`-sized blocks (at most `max`) may go
    /// at `now`, counting those due within `lookahead` (sleeping for less
    /// than that costs more than it smooths). The schedule advances by the
    /// blocks granted. `Err(when)` when none may go yet.
    ///
    /// A sender that fell behind (a stall) pays the debt back instead of
    /// losing it, so the average rate holds, but smoothly: at most the
    /// catch-up allowance (or one burst group) at once, then a pause of
    /// half that long, i.e. at twice the rate until caught up. Debt beyond
    /// [`MAX_DEBT`] is forgiven. With a burst size N blocks go in groups of
    /// exactly N, so no burst is ever larger than N.
    pub fn take(&mut self, bytes: usize, now: Instant, max: u32, lookahead: Duration) -> Result<u32, Instant> {
        self.redraw(now);
        if now < self.hold {
            return Err(self.hold);
        }
        let cost = Self::cost(self.rate, bytes);
        if self.next + MAX_DEBT < now {
            self.next = now - MAX_DEBT;
        }
        let group = self.burst;
        let horizon = now + if group > 1 { Duration::ZERO } else { lookahead };
        if self.next > horizon {
            return Err(self.next);
        }
        let max = max.max(1);
        let n = if group > 1 {
            group.min(max)
        } else if cost.is_zero() {
            max
        } else {
            let due = (horizon - self.next).as_nanos() / cost.as_nanos() + 1;
            let chunk = (self.depth.as_nanos() / cost.as_nanos()).max(1);
            due.min(chunk).min(max as u128) as u32
        };
        self.next += cost * n;
        if self.next < now {
            // Still behind: the next chunk waits, so catching up runs at
            // twice the rate rather than at line rate.
            self.hold = now + cost * n / 2;
        }
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
pub(crate) fn sleep_until(due: Instant, stop: &AtomicBool) -> bool {
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

    /// Bits sent in each [`VARY_PERIOD`] of a simulated 30 s run, as rates.
    fn period_rates(rate: PaceRate) -> Vec<f64> {
        let t0 = Instant::now();
        let mut p = Pacer::new(rate, 0, 1000, t0);
        let mut now = t0;
        let periods = 300;
        let mut bits = vec![0f64; periods];
        loop {
            if let Some(due) = p.schedule(1000, now) {
                now = due;
            }
            let k = ((now - t0).as_nanos() / VARY_PERIOD.as_nanos()) as usize;
            if k >= periods {
                break;
            }
            bits[k] += 8000.0;
        }
        bits.iter().map(|b| b / VARY_PERIOD.as_secs_f64()).collect()
    }

    fn mean_stdev(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
        (m, var.sqrt())
    }

    #[test]
    fn a_varying_rate_has_the_asked_mean_and_spread() {
        let (m, s) = mean_stdev(&period_rates(PaceRate::Varying {
            mean: 8_000_000,
            stdev: 4_000_000,
        }));
        assert!((m / 8e6 - 1.0).abs() < 0.15, "mean {m}");
        assert!((s / 4e6 - 1.0).abs() < 0.3, "stdev {s}");
        // Without spread it is the steady rate.
        let (m, s) = mean_stdev(&period_rates(PaceRate::Varying {
            mean: 8_000_000,
            stdev: 0,
        }));
        assert!((m / 8e6 - 1.0).abs() < 0.01 && s / 8e6 < 0.02, "{m} {s}");
        let (m, s) = mean_stdev(&period_rates(PaceRate::Bits(8_000_000)));
        assert!((m / 8e6 - 1.0).abs() < 0.01 && s / 8e6 < 0.02, "{m} {s}");
    }

    #[test]
    fn periodic_bursts_go_whole_at_the_start_of_each_period() {
        // 10 blocks of 1000 bytes every 0.5 s = 160 kbit/s.
        let t0 = Instant::now();
        let mut p = Pacer::new(
            PaceRate::Bursts {
                bps: 160_000,
                until: Some(t0 + Duration::from_millis(1000)),
            },
            10,
            1000,
            t0,
        );
        let mut now = t0;
        let mut sent = Vec::new();
        for _ in 0..21 {
            if let Some(due) = p.schedule(1000, now) {
                now = due;
            }
            sent.push((now - t0).as_millis());
        }
        assert!(sent[..10].iter().all(|t| *t == 0), "{sent:?}");
        assert!(sent[10..20].iter().all(|t| *t == 500), "{sent:?}");
        // The group due at the end waits for the stop instead.
        assert!(sent[20] > 86_400_000, "{sent:?}");
    }

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
    fn a_stall_is_paid_back_in_bounded_chunks_at_twice_the_rate() {
        let t0 = Instant::now();
        // 100 000 pps (10 µs each), catch-up chunks of 100 µs worth.
        let mut p = Pacer::new(PaceRate::Packets(100_000), 0, 64, t0).with_catch_up(Duration::from_micros(100));
        let stall = t0 + Duration::from_millis(5);
        // 5 ms behind (501 datagrams owed): 10 now, then a 50 µs pause.
        assert_eq!(p.take(64, stall, 1000, Duration::ZERO), Ok(10));
        assert_eq!(
            p.take(64, stall, 1000, Duration::ZERO),
            Err(stall + Duration::from_micros(50))
        );
        // Keep taking whenever allowed: the debt is repaid, none is lost,
        // and nothing ever goes more than 10 at a time.
        let mut now = stall;
        let mut sent = 10u64;
        while now < t0 + Duration::from_millis(20) {
            match p.take(64, now, 1000, Duration::ZERO) {
                Ok(n) => {
                    assert!(n <= 10);
                    sent += n as u64;
                }
                Err(t) => now = t,
            }
        }
        // Datagrams due before 20 ms (0, 10, ..., 19 990 µs): all 2000, whatever the stall.
        assert_eq!(sent, 2000);
    }

    #[test]
    fn a_very_long_stall_is_forgiven_beyond_the_debt_limit() {
        let t0 = Instant::now();
        let mut p = Pacer::new(PaceRate::Packets(1000), 0, 64, t0).with_catch_up(Duration::from_secs(1));
        let late = t0 + Duration::from_secs(10);
        // Only MAX_DEBT (250 ms = 250 datagrams, plus the one due now) is owed.
        assert_eq!(p.take(64, late, 10_000, Duration::ZERO), Ok(251));
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
        // After a stall groups still go one at a time, 2 ms apart (twice the rate).
        let late = t0 + Duration::from_millis(100);
        assert_eq!(p.take(1000, late, 64, Duration::ZERO), Ok(4));
        assert_eq!(
            p.take(1000, late, 64, Duration::ZERO),
            Err(late + Duration::from_millis(2))
        );
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
