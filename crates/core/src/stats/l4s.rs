//! What one side of iperf 2.2.1's UDP L4S exchange (`--udp-l4s`) knows,
//! kept in atomics its data thread writes and the reporter reads: the
//! acks a sender took (with its rate controller's rate and alpha) or a
//! receiver sent, and the newest ack's cumulative counts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crate::events::{L4sCounts, L4sSample};

/// One stream's L4S exchange, as its side saw it.
#[derive(Debug, Default)]
pub struct L4sLog {
    acks: AtomicU64,
    received: AtomicU64,
    ce: AtomicU64,
    lost: AtomicU64,
    ecn_error: AtomicBool,
    /// A sender's controller, as f64 bits: its rate (bytes/s) and alpha.
    rate: AtomicU64,
    alpha: AtomicU64,
    controller: AtomicBool,
}

impl L4sLog {
    /// An ack taken (a sender) or sent (a receiver), with its counts since
    /// the flow began and its flag that a datagram arrived neither ECT(1)
    /// nor CE (sticky, as the receiver keeps it).
    pub fn on_ack(&self, received: u32, ce: u32, lost: u32, ecn_error: bool) {
        self.received.store(u64::from(received), Relaxed);
        self.ce.store(u64::from(ce), Relaxed);
        self.lost.store(u64::from(lost), Relaxed);
        if ecn_error {
            self.ecn_error.store(true, Relaxed);
        }
        self.acks.fetch_add(1, Relaxed);
    }

    /// A sender's controller after an ack: its rate (bytes/s) and alpha.
    pub fn on_controller(&self, rate_bytes: f64, alpha: f64) {
        self.rate.store(rate_bytes.to_bits(), Relaxed);
        self.alpha.store(alpha.to_bits(), Relaxed);
        self.controller.store(true, Relaxed);
    }

    /// Acks so far.
    pub fn acks(&self) -> u64 {
        self.acks.load(Relaxed)
    }

    /// What is known now (`sender`: this side took the acks).
    pub fn sample(&self, sender: bool) -> L4sSample {
        let acks = self.acks();
        let controller = sender && self.controller.load(Relaxed);
        L4sSample {
            sender,
            acks,
            last: (acks > 0).then(|| L4sCounts {
                received: self.received.load(Relaxed),
                ce: self.ce.load(Relaxed),
                lost: self.lost.load(Relaxed),
            }),
            ecn_error: self.ecn_error.load(Relaxed),
            rate_bps: controller.then(|| f64::from_bits(self.rate.load(Relaxed)) * 8.0),
            alpha: controller.then(|| f64::from_bits(self.alpha.load(Relaxed))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_claimed_before_the_first_ack() {
        let l = L4sLog::default();
        let s = l.sample(true);
        assert_eq!((s.acks, s.last, s.rate_bps, s.alpha), (0, None, None, None));
        l.on_ack(10, 2, 1, false);
        l.on_controller(125_000.0, 0.25);
        l.on_ack(20, 3, 0, true);
        l.on_ack(30, 3, 0, false);
        let s = l.sample(true);
        assert_eq!(s.acks, 3);
        assert_eq!(
            s.last,
            Some(L4sCounts {
                received: 30,
                ce: 3,
                lost: 0
            })
        );
        assert!(s.ecn_error, "the flag is sticky");
        assert_eq!((s.rate_bps, s.alpha), (Some(1e6), Some(0.25)));
        // A receiver has no controller.
        assert_eq!(l.sample(false).rate_bps, None);
    }
}
