//! iperf 2.2's `--fq-rate-step`: the sending sockets' pacing rate
//! (SO_MAX_PACING_RATE, `--fq-rate`) grows by a step every interval while
//! the flows send. 2.2 raises it from its write loop; here a thread of its
//! own does, on the flows' sockets, so the engine's loops stay as they are.

use std::net::TcpStream;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::runner::Flow;
use wirespeed_core::config::TestConfig;
use wirespeed_core::engine::streams::DataSock;
use wirespeed_core::stats::StreamRole;

/// When the rate steps and to what: pure arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Schedule {
    /// The rate the flows start at, bits/s.
    pub start: u64,
    /// What each step adds, bits/s.
    pub step: u64,
    /// The time between steps (not zero).
    pub every: Duration,
}

impl Schedule {
    /// Steps taken by `elapsed` after the start.
    fn steps(&self, elapsed: Duration) -> u64 {
        (elapsed.as_nanos() / self.every.as_nanos().max(1)) as u64
    }

    /// The rate in force `elapsed` after the start, bits/s.
    pub fn rate_at(&self, elapsed: Duration) -> u64 {
        self.start.saturating_add(self.step.saturating_mul(self.steps(elapsed)))
    }

    /// When, counted from the start, the first step after `elapsed` comes.
    pub fn next_step(&self, elapsed: Duration) -> Duration {
        let k = u32::try_from(self.steps(elapsed).saturating_add(1)).unwrap_or(u32::MAX);
        self.every.saturating_mul(k)
    }
}

/// The thread that steps the rate; dropping it stops the thread.
pub(super) struct Stepper {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Stepper {
    /// Starts stepping the sending flows' pacing (none without
    /// `--fq-rate-step`, or with no TCP flow that sends).
    pub fn start(cfg: &TestConfig, flows: &[Flow]) -> Option<Stepper> {
        let (step, every) = cfg.iperf2.fq_rate_step?;
        let socks: Vec<TcpStream> = flows
            .iter()
            .filter(|f| f.ds.role == StreamRole::Send)
            .filter_map(|f| match &f.ds.sock {
                DataSock::Tcp(s) => s.try_clone().ok(),
                _ => None,
            })
            .collect();
        if socks.is_empty() {
            return None;
        }
        let sched = Schedule {
            start: cfg.params.fq_rate,
            step,
            every,
        };
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let t0 = Instant::now();
            loop {
                let wait = sched.next_step(t0.elapsed()).saturating_sub(t0.elapsed());
                match rx.recv_timeout(wait) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        let bits = sched.rate_at(t0.elapsed());
                        for s in &socks {
                            // A flow that has ended refuses; the others go on.
                            let _ = wirespeed_sys::socket::set_max_pacing_rate(s, bits / 8);
                        }
                    }
                    _ => return,
                }
            }
        });
        Some(Stepper {
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for Stepper {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_rate_steps_once_per_interval() {
        let s = Schedule {
            start: 10_000_000,
            step: 5_000_000,
            every: Duration::from_millis(500),
        };
        assert_eq!(s.rate_at(Duration::ZERO), 10_000_000);
        assert_eq!(s.rate_at(499 * MS), 10_000_000);
        assert_eq!(s.rate_at(500 * MS), 15_000_000);
        assert_eq!(s.rate_at(1999 * MS), 25_000_000);
        assert_eq!(s.rate_at(2000 * MS), 30_000_000);
        assert_eq!(s.next_step(Duration::ZERO), 500 * MS);
        assert_eq!(s.next_step(500 * MS), 1000 * MS);
        assert_eq!(s.next_step(1234 * MS), 1500 * MS);
    }

    #[test]
    fn huge_rates_and_times_saturate() {
        let s = Schedule {
            start: u64::MAX - 1,
            step: u64::MAX / 2,
            every: Duration::from_nanos(1),
        };
        assert_eq!(s.rate_at(Duration::from_secs(1_000_000)), u64::MAX);
        assert!(s.next_step(Duration::from_secs(10)) > Duration::ZERO);
    }
}
