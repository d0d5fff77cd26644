//! UDP receiver accounting: loss, reordering, duplicates and jitter, each
//! counted separately and exactly.
//!
//! iperf3 counts a late datagram as "out of order" and takes one off the
//! loss count, so a duplicate hides a real loss and a flood of duplicates
//! drives loss negative. Here a bitmap of the last [`WINDOW`] sequence
//! numbers says whether a late datagram fills a gap (out of order: it was
//! counted lost, now it is not) or was seen before (duplicate: loss
//! unchanged). Within the window, at every moment
//! `distinct datagrams received + lost == highest sequence seen`.
//!
//! Jitter is RFC 3550's estimator (iperf3's formula): for consecutive
//! arrivals, `D = |transit_i - transit_{i-1}|`, `J += (D - J) / 16`, where
//! transit = arrival time - the sender's timestamp. The two clocks need not
//! agree; only differences matter.
//!
//! Sans-IO: the engine feeds sequence numbers and transit times and
//! publishes the totals into [`StreamCounters`] once per batch.

use std::sync::atomic::Ordering::Relaxed;

use super::StreamCounters;

/// How many of the most recent sequence numbers the duplicate detector
/// remembers (64 Ki datagrams, 8 KiB of bitmap per receiving stream).
pub(crate) const WINDOW: u64 = 1 << 16;
const WORDS: usize = (WINDOW / 64) as usize;

/// What one arriving datagram was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The next sequence number, or a jump ahead over `gap` missing ones.
    Ahead {
        /// Datagrams skipped (now counted lost until they turn up).
        gap: u64,
    },
    /// An earlier datagram that was missing: it filled its gap.
    Late,
    /// A datagram already received.
    Duplicate,
    /// Older than the window: counted as late, as iperf3 would (it cannot
    /// be told apart from a duplicate any more).
    Ancient,
    /// Sequence number 0, which no sender uses.
    Invalid,
}

/// RFC 3550 interarrival jitter.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JitterEstimator {
    prev_transit_ns: Option<i64>,
    jitter: f64,
}

impl JitterEstimator {
    /// Feeds one arrival's transit time (arrival clock - sender clock, ns).
    #[inline]
    pub fn update(&mut self, transit_ns: i64) {
        if let Some(prev) = self.prev_transit_ns {
            let d = transit_ns.abs_diff(prev) as f64 * 1e-9;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.prev_transit_ns = Some(transit_ns);
    }

    /// Current jitter in seconds.
    pub fn seconds(&self) -> f64 {
        self.jitter
    }

    /// Starts over (iperf3 does this when the omit period ends): jitter 0,
    /// and the next arrival re-seeds the transit time.
    pub fn reset(&mut self) {
        *self = JitterEstimator::default();
    }
}

/// One receiving stream's sequence accounting.
#[derive(Debug, Clone)]
pub struct UdpAccounting {
    max_seq: u64,
    lost: i64,
    out_of_order: u64,
    duplicates: u64,
    /// Ring bitmap: bit `s % WINDOW` is set when `s` was received. Bits
    /// above `max_seq` in its word are always clear.
    seen: Box<[u64; WORDS]>,
    /// Jitter over every distinct arrival.
    pub jitter: JitterEstimator,
}

impl Default for UdpAccounting {
    fn default() -> Self {
        UdpAccounting {
            max_seq: 0,
            lost: 0,
            out_of_order: 0,
            duplicates: 0,
            seen: Box::new([0; WORDS]),
            jitter: JitterEstimator::default(),
        }
    }
}

impl UdpAccounting {
    /// A fresh stream.
    pub fn new() -> UdpAccounting {
        UdpAccounting::default()
    }

    /// Highest sequence number seen (iperf3's receiver "packets").
    pub fn max_seq(&self) -> u64 {
        self.max_seq
    }

    /// Datagrams missing below the highest sequence number.
    pub fn lost(&self) -> i64 {
        self.lost
    }

    /// Late datagrams that filled a gap (plus ancient ones).
    pub fn out_of_order(&self) -> u64 {
        self.out_of_order
    }

    /// Datagrams received more than once.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Extends a 32-bit sequence number to the 64-bit value nearest the
    /// highest one seen, so a long test survives the wrap at 2^32 (iperf3's
    /// receiver does not; at 10 Mpps it wraps in 7 minutes).
    #[inline]
    pub fn unwrap32(&self, seq: u32) -> u64 {
        const SPAN: u64 = 1 << 32;
        let base = self.max_seq & !(SPAN - 1);
        let cand = base | seq as u64;
        if cand > self.max_seq && cand - self.max_seq > SPAN / 2 && cand >= SPAN {
            cand - SPAN
        } else if cand < self.max_seq && self.max_seq - cand > SPAN / 2 {
            cand.checked_add(SPAN).unwrap_or(cand)
        } else {
            cand
        }
    }

    #[inline]
    fn slot(seq: u64) -> (usize, u64) {
        (((seq / 64) as usize) % WORDS, 1u64 << (seq % 64))
    }

    /// Counts one datagram with sequence number `seq` that arrived with
    /// `transit_ns` (arrival clock - sender's timestamp).
    #[inline]
    pub fn on_datagram(&mut self, seq: u64, transit_ns: i64) -> Arrival {
        if seq == 0 {
            return Arrival::Invalid;
        }
        let arrival = if seq > self.max_seq {
            let gap = seq - self.max_seq - 1;
            let (old_w, new_w) = (self.max_seq / 64, seq / 64);
            if new_w != old_w {
                // Entering new words: forget what they held WINDOW ago.
                let n = (new_w - old_w).min(WORDS as u64);
                for k in 0..n {
                    self.seen[((new_w - k) as usize) % WORDS] = 0;
                }
            }
            let (w, b) = Self::slot(seq);
            self.seen[w] |= b;
            // A hostile sender's jump to near 2^64 must not overflow.
            self.lost = self.lost.saturating_add(gap.min(i64::MAX as u64) as i64);
            self.max_seq = seq;
            Arrival::Ahead { gap }
        } else if self.max_seq / 64 - seq / 64 >= WORDS as u64 {
            self.out_of_order += 1;
            if self.lost > 0 {
                self.lost -= 1;
            }
            Arrival::Ancient
        } else {
            let (w, b) = Self::slot(seq);
            if self.seen[w] & b != 0 {
                self.duplicates += 1;
                return Arrival::Duplicate;
            }
            self.seen[w] |= b;
            self.out_of_order += 1;
            self.lost -= 1;
            Arrival::Late
        };
        self.jitter.update(transit_ns);
        arrival
    }

    /// Publishes the totals for the reporter.
    pub fn publish(&self, c: &StreamCounters) {
        c.packets.store(self.max_seq, Relaxed);
        c.lost.store(self.lost, Relaxed);
        c.out_of_order.store(self.out_of_order, Relaxed);
        c.duplicates.store(self.duplicates, Relaxed);
        c.set_jitter(self.jitter.seconds());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed(seqs: &[u64]) -> UdpAccounting {
        let mut a = UdpAccounting::new();
        for &s in seqs {
            a.on_datagram(s, 0);
        }
        a
    }

    #[test]
    fn in_order_stream_has_no_loss() {
        let a = feed(&(1..=1000).collect::<Vec<_>>());
        assert_eq!(
            (a.max_seq(), a.lost(), a.out_of_order(), a.duplicates()),
            (1000, 0, 0, 0)
        );
    }

    #[test]
    fn a_gap_is_loss() {
        let a = feed(&[1, 2, 5, 6]);
        assert_eq!((a.max_seq(), a.lost(), a.out_of_order()), (6, 2, 0));
    }

    #[test]
    fn reordering_is_never_loss() {
        // 3 and 4 swap, 7 arrives after 9.
        let a = feed(&[1, 2, 4, 3, 5, 6, 8, 9, 7, 10]);
        assert_eq!((a.max_seq(), a.lost(), a.out_of_order(), a.duplicates()), (10, 0, 2, 0));
    }

    #[test]
    fn duplicates_do_not_hide_loss() {
        // 3 is lost; 2 arrives three times. iperf3 would report lost = 0
        // (and out-of-order 2); the truth is one loss and two duplicates.
        let a = feed(&[1, 2, 2, 4, 2]);
        assert_eq!((a.max_seq(), a.lost(), a.out_of_order(), a.duplicates()), (4, 1, 0, 2));
        // A duplicate of the newest datagram too.
        let a = feed(&[1, 1]);
        assert_eq!((a.lost(), a.duplicates()), (0, 1));
    }

    #[test]
    fn a_late_datagram_beyond_the_window_is_counted_like_iperf3() {
        let mut a = UdpAccounting::new();
        a.on_datagram(1, 0);
        a.on_datagram(3 * WINDOW, 0);
        assert_eq!(a.lost() as u64, 3 * WINDOW - 2);
        assert_eq!(a.on_datagram(2, 0), Arrival::Ancient);
        assert_eq!(a.lost() as u64, 3 * WINDOW - 3);
        assert_eq!(a.out_of_order(), 1);
    }

    #[test]
    fn window_forgets_old_bits_when_it_moves() {
        let mut a = UdpAccounting::new();
        a.on_datagram(5, 0);
        // Jump exactly one window ahead: seq 5 + WINDOW lands in 5's slot,
        // which must have been cleared, so it is new, not a duplicate.
        assert_eq!(a.on_datagram(5 + WINDOW, 0), Arrival::Ahead { gap: WINDOW - 1 });
        // And 6 + WINDOW - 64 (inside the window, never received) is late, not a dup.
        assert_eq!(a.on_datagram(WINDOW + 6 - 64, 0), Arrival::Late);
    }

    #[test]
    fn seq_zero_is_ignored() {
        let mut a = UdpAccounting::new();
        assert_eq!(a.on_datagram(0, 0), Arrival::Invalid);
        assert_eq!((a.max_seq(), a.lost(), a.out_of_order()), (0, 0, 0));
    }

    #[test]
    fn thirty_two_bit_counters_unwrap() {
        let mut a = UdpAccounting::new();
        let top = u32::MAX as u64;
        a.on_datagram(top - 1, 0);
        assert_eq!(a.unwrap32(u32::MAX), top);
        a.on_datagram(a.unwrap32(u32::MAX), 0);
        let next = a.unwrap32(0);
        assert_eq!(next, top + 1);
        a.on_datagram(next, 0);
        a.on_datagram(a.unwrap32(1), 0);
        assert_eq!(a.max_seq(), top + 2);
        // A late one from before the wrap maps back below it.
        assert_eq!(a.unwrap32(u32::MAX - 5), top - 5);
        // Early in a test nothing wraps downwards.
        assert_eq!(UdpAccounting::new().unwrap32(u32::MAX), top);
        assert_eq!(UdpAccounting::new().unwrap32(7), 7);
    }

    /// Hand-computed RFC 3550 values: transits 10, 12, 11, 15 ms.
    /// D = 2, 1, 4 ms; J = 0.125, 0.1796875, 0.41845703125 ms.
    #[test]
    fn jitter_follows_rfc3550() {
        let mut j = JitterEstimator::default();
        let ms = 1_000_000i64;
        j.update(10 * ms);
        assert_eq!(j.seconds(), 0.0);
        j.update(12 * ms);
        assert!((j.seconds() - 0.125e-3).abs() < 1e-12);
        j.update(11 * ms);
        assert!((j.seconds() - 0.1796875e-3).abs() < 1e-12);
        j.update(15 * ms);
        assert!((j.seconds() - 0.41845703125e-3).abs() < 1e-12, "{}", j.seconds());
        j.reset();
        j.update(99 * ms);
        assert_eq!(j.seconds(), 0.0);
    }

    /// A sender every 1 ms, arrivals with a constant offset: no jitter,
    /// whatever the clocks' offset (even negative transit).
    #[test]
    fn constant_delay_has_zero_jitter() {
        let mut a = UdpAccounting::new();
        for i in 1..=100i64 {
            let sent = i * 1_000_000;
            let arrived = sent - 5_000_000_000;
            a.on_datagram(i as u64, arrived - sent);
        }
        assert_eq!(a.jitter.seconds(), 0.0);
    }

    /// Alternating 1 ms / 3 ms spacing of arrivals for a 2 ms sender: every
    /// D is 1 ms, so J converges to 1 ms: J_n = 1 - (15/16)^n ms.
    #[test]
    fn jitter_converges_on_alternating_delay() {
        let mut a = UdpAccounting::new();
        let mut arrive = 0i64;
        for i in 0..200i64 {
            let sent = i * 2_000_000;
            arrive += if i == 0 {
                0
            } else if i % 2 == 1 {
                1_000_000
            } else {
                3_000_000
            };
            a.on_datagram(i as u64 + 1, arrive - sent);
        }
        let expect = 1e-3 * (1.0 - (15.0f64 / 16.0).powi(199));
        assert!((a.jitter.seconds() - expect).abs() < 1e-12);
    }

    #[test]
    fn duplicates_do_not_feed_jitter() {
        let mut a = UdpAccounting::new();
        a.on_datagram(1, 0);
        a.on_datagram(1, 50_000_000);
        assert_eq!(a.jitter.seconds(), 0.0);
    }

    #[test]
    fn publish_fills_the_counters() {
        let c = StreamCounters::default();
        let a = feed(&[1, 3, 3, 2, 6]);
        a.publish(&c);
        assert_eq!(c.packets.load(Relaxed), 6);
        assert_eq!(c.lost.load(Relaxed), 2);
        assert_eq!(c.out_of_order.load(Relaxed), 1);
        assert_eq!(c.duplicates.load(Relaxed), 1);
    }

    proptest! {
        /// Any arrival schedule made of a sent sequence with some datagrams
        /// dropped, some duplicated, and local reordering: the counts are
        /// exactly the truth.
        #[test]
        fn counts_are_exact(
            n in 1u64..3000,
            drops in proptest::collection::vec(any::<bool>(), 3000),
            dups in proptest::collection::vec(0u8..3, 3000),
            swaps in proptest::collection::vec((0usize..3000, 0usize..64), 0..200),
        ) {
            let mut arrivals: Vec<u64> = Vec::new();
            for s in 1..=n {
                if drops[s as usize % drops.len()] && s % 7 == 0 {
                    continue;
                }
                for _ in 0..=dups[s as usize % dups.len()] % 2 {
                    arrivals.push(s);
                }
            }
            for (i, d) in swaps {
                if arrivals.is_empty() { break; }
                let i = i % arrivals.len();
                let j = (i + d).min(arrivals.len() - 1);
                arrivals.swap(i, j);
            }
            let a = feed(&arrivals);
            let mut distinct = arrivals.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let max = *distinct.last().unwrap_or(&0);
            prop_assert_eq!(a.max_seq(), max);
            prop_assert_eq!(a.lost(), (max - distinct.len() as u64) as i64);
            prop_assert_eq!(a.duplicates(), (arrivals.len() - distinct.len()) as u64);
            // Out of order = distinct datagrams that arrived after a higher one.
            let mut hi = 0;
            let mut seen = std::collections::HashSet::new();
            let mut ooo = 0u64;
            for &s in &arrivals {
                if seen.insert(s) && s < hi { ooo += 1; }
                hi = hi.max(s);
            }
            prop_assert_eq!(a.out_of_order(), ooo);
        }
    }
}
