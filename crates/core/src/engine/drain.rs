//! How a test's end waits for the bytes still on their way.
//!
//! When the senders stop, what they wrote last is still in flight: in the
//! path's queue, in retransmission after a loss, behind a stalled window.
//! A receiver whose peer half-closes after its last byte (a wirespeed end,
//! an iperf 2 end, an iperf3 server closing its streams at TEST_END) reads
//! to that EOF, so both ends count the same bytes. One whose peer gives no
//! such sign (an iperf3 client keeps its streams open until the results are
//! exchanged) stops once it has been quiet for long enough that a late byte
//! is unlikely. Every wait here is scaled to the path's round trip and
//! retransmission timeout, never a fixed few milliseconds that a long or
//! lossy path outlasts, and every wait has a deadline.

use std::time::Duration;

use wirespeed_sys::RawSock;

/// The round trip and retransmission timeout a test's end must allow for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathTiming {
    /// Smoothed round trip, with the path's queue in it.
    pub rtt: Duration,
    /// Retransmission timeout.
    pub rto: Duration,
}

impl PathTiming {
    /// The timing of one TCP socket (zero where it has no TCP_INFO). A
    /// socket that only receives has a smoothed RTT from its handshake
    /// alone, so the receiver's own estimate counts too.
    pub fn of_socket(fd: RawSock) -> PathTiming {
        match wirespeed_sys::socket::tcp_info_raw(fd) {
            Ok(i) => PathTiming {
                rtt: Duration::from_micros(u64::from(i.rtt.max(i.rcv_rtt))),
                rto: Duration::from_micros(u64::from(i.rto)),
            },
            Err(_) => PathTiming::default(),
        }
    }

    /// The longer of two timings, field by field.
    pub fn max(self, other: PathTiming) -> PathTiming {
        PathTiming {
            rtt: self.rtt.max(other.rtt),
            rto: self.rto.max(other.rto),
        }
    }
}

/// The waits of one drain, from the path's timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainTimes {
    /// A receiver with no EOF to wait for is done once quiet this long.
    pub quiet: Duration,
    /// Until this long after the stop, receivers are waited for whatever
    /// they do.
    pub soft: Duration,
    /// After `soft`, the drain gives up once no byte arrived for this long.
    pub stall: Duration,
    /// The drain never lasts longer than this.
    pub hard: Duration,
}

/// Shortest quiet: a receive queue an end reads as fast as it fills stays
/// empty for less than this on any path.
const MIN_QUIET: Duration = Duration::from_millis(100);
/// Longest quiet: past this, a stream is stalled, not slow.
const MAX_QUIET: Duration = Duration::from_secs(3);
/// However long the path, the drain ends within this after its soft deadline
/// while bytes still trickle in (a starved CPU, a very slow link).
const OVERTIME: Duration = Duration::from_secs(30);
/// The soft deadline never exceeds this (TCP's RTO can reach two minutes).
const MAX_SOFT: Duration = Duration::from_secs(60);

impl DrainTimes {
    /// The waits for a drain that lasts at least `min` (the driver's floor,
    /// a few seconds) across a path with timing `t`. `tcp`: the receivers
    /// are TCP streams, whose last bytes may wait a retransmission timeout;
    /// UDP datagrams only ever wait for the path's queue.
    pub fn new(min: Duration, t: PathTiming, tcp: bool) -> DrainTimes {
        let rtt = t.rtt;
        let rto = t.rto.max(rtt);
        let quiet = if tcp { rto.max(rtt * 2) } else { rtt * 2 };
        let quiet = quiet.clamp(MIN_QUIET, MAX_QUIET);
        let soft = min.max(rtt * 4 + rto * 2).min(MAX_SOFT.max(min));
        let stall = (rto * 2).max(Duration::from_secs(1)).min(MAX_SOFT);
        DrainTimes {
            quiet,
            soft,
            stall,
            hard: soft + OVERTIME,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn timing(rtt: u64, rto: u64) -> PathTiming {
        PathTiming {
            rtt: ms(rtt),
            rto: ms(rto),
        }
    }

    #[test]
    fn loopback_keeps_the_short_quiet_and_the_drivers_floor() {
        let d = DrainTimes::new(ms(3000), timing(0, 204), true);
        assert_eq!(d.quiet, ms(204));
        assert_eq!(d.soft, ms(3000));
        let u = DrainTimes::new(ms(3000), timing(0, 0), false);
        assert_eq!(u.quiet, MIN_QUIET);
    }

    #[test]
    fn a_long_lossy_path_stretches_every_wait() {
        // 600 ms of round trip and a queue of as much again.
        let d = DrainTimes::new(ms(3000), timing(1200, 1800), true);
        assert_eq!(d.quiet, ms(2400));
        assert_eq!(d.soft, ms(4 * 1200 + 2 * 1800));
        assert_eq!(d.stall, ms(3600));
        assert_eq!(d.hard, d.soft + OVERTIME);
        // UDP waits for the queue, not for a retransmission.
        let u = DrainTimes::new(ms(3000), timing(1200, 1800), false);
        assert_eq!(u.quiet, ms(2400));
    }

    #[test]
    fn absurd_timings_are_bounded() {
        let d = DrainTimes::new(ms(3000), timing(120_000, 120_000), true);
        assert_eq!(d.quiet, MAX_QUIET);
        assert_eq!(d.soft, MAX_SOFT);
        assert!(d.hard <= MAX_SOFT + OVERTIME);
    }

    #[test]
    fn the_longer_timing_wins_field_by_field() {
        assert_eq!(timing(10, 300).max(timing(50, 200)), timing(50, 300));
    }
}
