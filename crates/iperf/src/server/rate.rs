//! `--server-bitrate-limit rate[/secs]`: the rate a running iperf3 test
//! measures, averaged over the window (`secs`, default 5 s, as iperf3),
//! must stay at or under the limit; past it the test ends with iperf3's
//! error 27 ("total required bandwidth is larger than server limit"), an
//! iperf 2 client's as well (`server::guards`).
//!
//! iperf3 judges only once a whole window has passed, so a test shorter
//! than the window (a 3 s test under `--server-max-duration 3`, say) is
//! never judged at all. Here such a test is judged over all of it so far,
//! at each interval from its first: the window shrinks to the test.
//! "Shorter" is known from the parameters: `-O` plus `-t`, or for a byte
//! or block count the `--server-max-duration` that bounds it. A test at
//! least as long as the window is judged as iperf3 judges it, over the
//! last window, from the end of the first one.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use wirespeed_core::config::{TestConfig, TestParams};

/// The measured-rate check of one test.
#[derive(Clone)]
pub(crate) struct RateWatch {
    /// Bit/s (0: no limit).
    limit: u64,
    window: Duration,
    /// The test is shorter than the window: judged over what has elapsed.
    short: bool,
    /// (when, bytes moved by then), oldest first; the first is the base.
    samples: VecDeque<(Instant, u64)>,
}

/// Interval ticks land a little after the second they close: a window
/// this close to full counts as full.
const SLACK: f64 = 0.05;

impl RateWatch {
    /// The check for a test with `params` on a server configured as `cfg`,
    /// started at `start` (nothing moved yet).
    pub fn new(cfg: &TestConfig, params: &TestParams, start: Instant) -> RateWatch {
        let window = cfg.server.bitrate_limit_window;
        let length = params.duration().or(cfg.server.max_duration).map(|d| d + params.omit);
        RateWatch {
            limit: cfg.server.bitrate_limit,
            window,
            short: length.is_some_and(|l| l < window),
            samples: VecDeque::from([(start, 0)]),
        }
    }

    /// Whether there is a limit to judge.
    pub fn limited(&self) -> bool {
        self.limit > 0
    }

    /// An interval ended at `now` with `moved` bytes moved in all: what
    /// was measured, if the average over the window (or all of a short
    /// test so far) is over the limit.
    pub fn judge(&mut self, now: Instant, moved: u64) -> Option<Over> {
        if self.limit == 0 {
            return None;
        }
        self.samples.push_back((now, moved));
        // The base: the newest sample at least a window back.
        while self.samples.len() > 2 && now.duration_since(self.samples[1].0) >= self.window {
            self.samples.pop_front();
        }
        let (Some(first), Some(last)) = (self.samples.front(), self.samples.back()) else {
            return None;
        };
        let secs = last.0.duration_since(first.0).as_secs_f64();
        let full = secs + SLACK >= self.window.as_secs_f64();
        if secs > 0.0 && (full || self.short) {
            let bps = last.1.saturating_sub(first.1) as f64 * 8.0 / secs;
            if bps > self.limit as f64 {
                return Some(Over {
                    bps,
                    span: last.0.duration_since(first.0),
                    limit: self.limit,
                });
            }
        }
        None
    }
}

/// A measured rate over the limit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Over {
    /// What was measured, bit/s.
    pub bps: f64,
    /// Over how long.
    pub span: Duration,
    /// The limit, bit/s.
    pub limit: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_core::config::EndCondition;

    fn watch(limit: u64, window_s: u64, time_s: Option<u64>, max_s: Option<u64>) -> (RateWatch, Instant) {
        let mut cfg = TestConfig::default();
        cfg.server.bitrate_limit = limit;
        cfg.server.bitrate_limit_window = Duration::from_secs(window_s);
        cfg.server.max_duration = max_s.map(Duration::from_secs);
        let params = TestParams {
            end: match time_s {
                Some(t) => EndCondition::Time(Duration::from_secs(t)),
                None => EndCondition::Bytes(1 << 30),
            },
            ..TestParams::default()
        };
        let t0 = Instant::now();
        (RateWatch::new(&cfg, &params, t0), t0)
    }

    /// Feeds one-second intervals at `bps` until an error; the second it
    /// came in, or `None`.
    fn trips(w: &mut RateWatch, t0: Instant, bps: u64, seconds: u64) -> Option<u64> {
        (1..=seconds).find(|s| {
            let at = t0 + Duration::from_secs(*s) + Duration::from_millis(10);
            w.judge(at, bps / 8 * s).is_some()
        })
    }

    #[test]
    fn a_long_test_is_judged_over_full_windows_as_iperf3() {
        let (mut w, t0) = watch(100_000_000, 5, Some(10), None);
        assert_eq!(trips(&mut w, t0, 200_000_000, 10), Some(5));
        let (mut w, t0) = watch(100_000_000, 5, Some(10), None);
        assert_eq!(trips(&mut w, t0, 90_000_000, 10), None);
    }

    #[test]
    fn a_test_shorter_than_the_window_is_judged_over_its_length_so_far() {
        // The report that found this: --server-max-duration 3, the default
        // 5 s window: a 3 s test was never judged.
        let (mut w, t0) = watch(100_000_000, 5, Some(3), Some(3));
        assert_eq!(trips(&mut w, t0, 200_000_000, 3), Some(1));
        // A byte count under --server-max-duration 3 is as short.
        let (mut w, t0) = watch(100_000_000, 5, None, Some(3));
        assert_eq!(trips(&mut w, t0, 200_000_000, 3), Some(1));
        // Under the limit it runs to its end.
        let (mut w, t0) = watch(100_000_000, 5, Some(3), None);
        assert_eq!(trips(&mut w, t0, 90_000_000, 3), None);
        // An unbounded byte count is not known to be short.
        let (mut w, t0) = watch(100_000_000, 5, None, None);
        assert_eq!(trips(&mut w, t0, 200_000_000, 4), None);
    }

    #[test]
    fn no_limit_judges_nothing() {
        let (mut w, t0) = watch(0, 5, Some(2), None);
        assert_eq!(trips(&mut w, t0, u64::MAX / 16, 2), None);
    }
}
