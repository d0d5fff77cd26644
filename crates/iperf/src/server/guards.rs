//! The limits a server holds every running test to, whichever dialect its
//! client speaks: the watchdog (a test that outlives its time, or
//! `--server-max-duration`, by 40 s), the idle checks (`--rcv-timeout`:
//! nothing received, or nothing moved either way; a client silent after
//! its test's time), and `--server-bitrate-limit` ([`RateWatch`]).
//!
//! A dialect's steering of the one test loop (`engine::run::Steering`)
//! consults a [`Guards`] at each turn ([`Guards::check`]) and at each
//! interval ([`Guards::interval`], iperf3, whose server judges the rate at
//! its reporting intervals) or each second ([`Guards::tick`], iperf 2,
//! whose server often reports no intervals). A limit passed is a
//! [`Breach`]: iperf3's error (code and words, which the iperf3 server
//! sends its client and prints), and the numbers behind it, which an iperf
//! 2 server, with no way to tell its client why, prints beside the error.

use std::time::{Duration, Instant};

use crate::server::rate::RateWatch;
use wirespeed_core::config::{TestConfig, TestParams};
use wirespeed_core::engine::Session;
use wirespeed_core::engine::drain::{DrainTimes, PathTiming};
use wirespeed_core::error::{Code, Error};

/// How long past the test's time a watchdog waits before it ends the test.
pub(crate) const WATCHDOG_GRACE: Duration = Duration::from_secs(40);
/// How long a client may be silent past its test's time before the test
/// is freed (at least; a long path stretches it).
pub(crate) const SILENT_AFTER_END: Duration = Duration::from_secs(10);
/// `--rcv-timeout`'s default for iperf3 tests (iperf3's).
pub(crate) const RCV_TIMEOUT: Duration = Duration::from_secs(120);

/// A limit a test went past: the error to end it with, and what was
/// measured against which setting.
#[derive(Debug, Clone)]
pub(crate) struct Breach {
    /// iperf3's error for it (code and words).
    pub error: Error,
    /// What was measured and the setting it broke, for a server that
    /// cannot send the error to its client (iperf 2).
    pub detail: String,
}

impl Breach {
    fn new(error: Error, detail: String) -> Breach {
        Breach { error, detail }
    }

    /// The line an iperf 2 server prints for a test it ended: the reason
    /// in iperf3's words (as the iperf3 path prints it), with the numbers.
    pub(crate) fn iperf2_error(&self, client: &str) -> Error {
        Error::msg(
            self.error.code,
            format!(
                "server ended the test from {client}: {} ({})",
                self.error.text(),
                self.detail
            ),
        )
    }
}

/// The guards of one running test.
#[derive(Clone)]
pub(crate) struct Guards {
    /// Nothing is judged before this (an iperf 2 client's `--txstart-time`
    /// starts its flows later than they connect).
    start: Instant,
    /// Ends the test: its time (or `--server-max-duration`) plus 40 s.
    watchdog: Option<Instant>,
    /// What bounds the watchdog, for the detail.
    bound: Option<(Duration, bool)>,
    rcv_timeout: Duration,
    /// `--rcv-timeout` given (else the dialect's default).
    rcv_given: bool,
    /// When a timed test should have ended, by the client's clock started
    /// with ours.
    nominal_end: Option<Instant>,
    /// When bytes (or a control byte) last moved, and how many had by
    /// then: a client that vanished without a word (no FIN or RST) while
    /// we send moves nothing any more.
    moved: (Instant, u64),
    rate: RateWatch,
    /// Where [`Guards::tick`] judges the rate next.
    next_judge: Instant,
}

impl Guards {
    /// The guards of a test with `params` on a server configured as `cfg`,
    /// started at `start`. `rcv_default`: the dialect's idle limit when
    /// `--rcv-timeout` is not given.
    pub fn new(cfg: &TestConfig, params: &TestParams, start: Instant, rcv_default: Duration) -> Guards {
        // A byte or block count has no duration of its own: then
        // `--server-max-duration`, if set, bounds the test.
        let bound = match (params.duration(), cfg.server.max_duration) {
            (Some(d), _) => Some((d, false)),
            (None, Some(m)) => Some((m, true)),
            (None, None) => None,
        };
        Guards {
            start,
            watchdog: bound.map(|(d, _)| start + params.omit + d + WATCHDOG_GRACE),
            bound,
            rcv_timeout: cfg.net.rcv_timeout.unwrap_or(rcv_default),
            rcv_given: cfg.net.rcv_timeout.is_some(),
            nominal_end: params.duration().map(|d| start + params.omit + d),
            moved: (start, 0),
            rate: RateWatch::new(cfg, params, start),
            next_judge: start + Duration::from_secs(1),
        }
    }

    /// Something came from the client besides data (a control byte): it
    /// is there.
    pub fn heard(&mut self, now: Instant) {
        self.moved.0 = now;
    }

    /// The watchdog and the idle checks, before each turn of the loop.
    /// `path`: the timing a client's last word may take to arrive (the
    /// control connection's, or the streams'), asked only when needed.
    pub fn check(&mut self, session: &Session, now: Instant, path: &dyn Fn() -> PathTiming) -> Result<(), Breach> {
        if now < self.start {
            return Ok(());
        }
        if self.watchdog.is_some_and(|w| now >= w) {
            let detail = match self.bound {
                Some((d, true)) => format!("--server-max-duration {} s and 40 s more have passed", d.as_secs()),
                Some((d, false)) => format!("its {} s and 40 s more have passed", d.as_secs_f64()),
                None => String::new(),
            };
            return Err(Breach::new(Error::new(Code::SERVERTESTDURATIONEXPIRED), detail));
        }
        let since_start = now.duration_since(self.start);
        if let Some(idle) = session.stats.rx_idle(now).map(|i| i.min(since_start))
            && idle >= self.rcv_timeout
        {
            let detail = format!("nothing received for {} s, {}", secs(idle), self.rcv_words());
            return Err(Breach::new(Error::new(Code::NOMSG), detail));
        }
        let total = session.stats.moved();
        let quiet = now.duration_since(self.moved.0);
        // Past the test's time, a client that sends nothing at all (no
        // data, no last word) is gone or cut off: free its place well
        // before the watchdog. The grace covers a long path's last word.
        if total == self.moved.1 && self.nominal_end.is_some_and(|e| now >= e) {
            let grace = DrainTimes::new(SILENT_AFTER_END, path(), true).soft;
            if self.nominal_end.is_some_and(|e| now >= e + grace) && quiet >= grace {
                return Err(Breach::new(
                    Error::msg(
                        Code::NOMSG,
                        format!(
                            "the client has sent nothing for {} s and the test's time is past: the path or the client may be down",
                            quiet.as_secs()
                        ),
                    ),
                    format!("{} s of silence allowed past the test's time", secs(grace)),
                ));
            }
        }
        if total != self.moved.1 {
            self.moved = (now, total);
        } else if quiet >= self.rcv_timeout {
            return Err(Breach::new(
                Error::msg(
                    Code::NOMSG,
                    format!(
                        "no data moved for {} s: the client stopped responding",
                        self.rcv_timeout.as_secs()
                    ),
                ),
                self.rcv_words(),
            ));
        }
        Ok(())
    }

    /// `--server-bitrate-limit` at a reporting interval that ended at
    /// `now` with `moved` bytes moved both ways (iperf3's rule).
    pub fn interval(&mut self, now: Instant, moved: u64) -> Result<(), Breach> {
        match self.rate.judge(now, moved) {
            Some(over) => Err(self.rate_breach(over)),
            None => Ok(()),
        }
    }

    /// `--server-bitrate-limit` judged once a second from the start, for a
    /// server that may report no intervals (iperf 2).
    pub fn tick(&mut self, now: Instant, moved: u64) -> Result<(), Breach> {
        if !self.rate.limited() || now < self.next_judge {
            return Ok(());
        }
        while self.next_judge <= now {
            self.next_judge += Duration::from_secs(1);
        }
        self.interval(now, moved)
    }

    fn rate_breach(&self, over: crate::server::rate::Over) -> Breach {
        let rate = |bps: f64| {
            format!(
                "{}s/sec",
                wirespeed_core::units::format_iperf2(bps / 8.0, 'a').trim_start()
            )
        };
        let detail = format!(
            "{} over the last {} s, --server-bitrate-limit {}",
            rate(over.bps),
            secs(over.span),
            rate(over.limit as f64),
        );
        Breach::new(Error::new(Code::TOTALRATE), detail)
    }

    fn rcv_words(&self) -> String {
        if self.rcv_given {
            format!("--rcv-timeout {} ms", self.rcv_timeout.as_millis())
        } else {
            format!("the idle limit of {} s", secs(self.rcv_timeout))
        }
    }
}

/// Seconds with a tenth, without a trailing `.0`.
fn secs(d: Duration) -> String {
    let s = format!("{:.1}", d.as_secs_f64());
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_core::config::EndCondition;

    fn params(time_s: u64) -> TestParams {
        TestParams {
            end: EndCondition::Time(Duration::from_secs(time_s)),
            ..TestParams::default()
        }
    }

    #[test]
    fn the_rate_is_judged_each_second_without_intervals() {
        let mut cfg = TestConfig::default();
        cfg.server.bitrate_limit = 100_000_000;
        cfg.server.bitrate_limit_window = Duration::from_secs(2);
        let t0 = Instant::now();
        let mut g = Guards::new(&cfg, &params(10), t0, Duration::from_secs(60));
        // Not yet a second in: nothing judged.
        assert!(g.tick(t0 + Duration::from_millis(500), 1 << 30).is_ok());
        // 200 Mbit/s for two seconds: over, once the window is full.
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(g.tick(at(1010), 25_000_000).is_ok());
        let b = g.tick(at(2010), 50_000_000).unwrap_err();
        assert_eq!(b.error.code, Code::TOTALRATE);
        assert!(
            b.detail.contains("--server-bitrate-limit 100 Mbits/sec"),
            "{}",
            b.detail
        );
        let line = b.iperf2_error("127.0.0.1").text();
        assert!(
            line.starts_with(
                "server ended the test from 127.0.0.1: total required bandwidth is larger than server limit ("
            ),
            "{line}"
        );
    }

    #[test]
    fn no_limit_is_never_judged() {
        let t0 = Instant::now();
        let mut g = Guards::new(&TestConfig::default(), &params(10), t0, Duration::from_secs(60));
        assert!(g.tick(t0 + Duration::from_secs(3), u64::MAX / 16).is_ok());
    }

    #[test]
    fn the_watchdog_and_the_rcv_timeout_come_from_the_config() {
        let mut cfg = TestConfig::default();
        cfg.server.max_duration = Some(Duration::from_secs(5));
        cfg.net.rcv_timeout = Some(Duration::from_millis(500));
        let t0 = Instant::now();
        let p = TestParams {
            end: EndCondition::Bytes(1 << 20),
            ..TestParams::default()
        };
        let g = Guards::new(&cfg, &p, t0, Duration::from_secs(60));
        assert_eq!(g.watchdog, Some(t0 + Duration::from_secs(45)));
        assert_eq!(g.rcv_timeout, Duration::from_millis(500));
        assert_eq!(g.rcv_words(), "--rcv-timeout 500 ms");
        let g = Guards::new(&TestConfig::default(), &params(3), t0, Duration::from_secs(60));
        assert_eq!(g.watchdog, Some(t0 + Duration::from_secs(43)));
        assert_eq!(g.nominal_end, Some(t0 + Duration::from_secs(3)));
        assert_eq!(g.rcv_words(), "the idle limit of 60 s");
    }
}
