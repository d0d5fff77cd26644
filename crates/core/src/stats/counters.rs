//! What data threads write: a stream's live counters, the finer counters a
//! stream hook feeds (read sizes, burst latency, histograms), and the
//! running mean/variance they use.
//!
//! Everything here is written from a data thread with relaxed atomics (or,
//! for completed bursts and round trips, a short lock taken thousands of
//! times a second at most, never per read) and read by the reporter.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::histogram::LatencyHistogram;
use crate::events::LatencyStats;

/// Live counters of one stream, written by its data thread.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct StreamCounters {
    /// Payload bytes sent or received.
    pub bytes: AtomicU64,
    /// Writes, reads or datagrams.
    pub blocks: AtomicU64,
    /// UDP: datagrams sent (sender) or highest sequence seen (receiver).
    pub packets: AtomicU64,
    /// UDP receiver: datagrams lost (gaps not filled later).
    pub lost: AtomicI64,
    /// UDP receiver: datagrams that arrived after a higher sequence.
    pub out_of_order: AtomicU64,
    /// UDP receiver: datagrams seen twice.
    pub duplicates: AtomicU64,
    /// UDP receiver: RFC 3550 jitter in seconds, as `f64` bits.
    pub jitter_bits: AtomicU64,
    /// Non-fatal send errors (ENOBUFS, ECONNREFUSED on UDP).
    pub errors: AtomicU64,
    /// When data last arrived, ns since the test's epoch (0 = never).
    pub last_rx_ns: AtomicU64,
    /// When the stream finished, ns since the test's epoch (0 = running):
    /// a sender's last write, a receiver's last byte.
    pub ended_ns: AtomicU64,
    /// UDP receiver: datagrams that arrived with each ECN codepoint,
    /// indexed by the field's value (Not-ECT, ECT(1), ECT(0), CE), when the
    /// socket reports the arriving TOS byte.
    pub ecn: [AtomicU64; 4],
}

impl StreamCounters {
    /// Current jitter in seconds.
    pub fn jitter(&self) -> f64 {
        f64::from_bits(self.jitter_bits.load(Relaxed))
    }

    /// Publishes the jitter.
    pub(crate) fn set_jitter(&self, j: f64) {
        self.jitter_bits.store(j.to_bits(), Relaxed);
    }

    /// When the stream finished, if it has.
    pub fn ended(&self, epoch: Instant) -> Option<Instant> {
        match self.ended_ns.load(Relaxed) {
            0 => None,
            ns => Some(epoch + std::time::Duration::from_nanos(ns)),
        }
    }

    /// When data last arrived, if ever.
    pub(crate) fn last_rx(&self, epoch: Instant) -> Option<Instant> {
        match self.last_rx_ns.load(Relaxed) {
            0 => None,
            ns => Some(epoch + std::time::Duration::from_nanos(ns)),
        }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            bytes: self.bytes.load(Relaxed),
            packets: self.packets.load(Relaxed) as i64,
            lost: self.lost.load(Relaxed),
            ooo: self.out_of_order.load(Relaxed) as i64,
            dups: self.duplicates.load(Relaxed) as i64,
            calls: self.blocks.load(Relaxed),
            errors: self.errors.load(Relaxed),
            ecn: std::array::from_fn(|i| self.ecn[i].load(Relaxed)),
        }
    }
}

/// A stream's counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Snapshot {
    pub bytes: u64,
    pub packets: i64,
    pub lost: i64,
    pub ooo: i64,
    pub dups: i64,
    pub calls: u64,
    pub errors: u64,
    /// Arrivals per ECN field value (see [`StreamCounters::ecn`]).
    pub ecn: [u64; 4],
}

/// Welford's running mean and M2 with extremes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Welford {
    /// Samples.
    pub count: u64,
    /// Running mean.
    pub mean: f64,
    /// Sum of squared deviations.
    pub m2: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Sum of the weights (bytes of the bursts).
    pub bytes: u64,
}

impl Welford {
    /// Adds one sample.
    pub fn add(&mut self, x: f64, bytes: u64) {
        if self.count == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.count += 1;
        self.bytes += bytes;
        let d = x - self.mean;
        self.mean += d / self.count as f64;
        self.m2 += d * (x - self.mean);
    }

    /// Adds another accumulator's samples (Chan et al.'s parallel update).
    pub fn merge(&mut self, o: &Welford) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        let n = self.count + o.count;
        let d = o.mean - self.mean;
        self.mean += d * o.count as f64 / n as f64;
        self.m2 += o.m2 + d * d * (self.count as f64 * o.count as f64) / n as f64;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.bytes += o.bytes;
        self.count = n;
    }

    /// Standard deviation (n − 1), 0 below two samples.
    pub fn stdev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / (self.count - 1) as f64).sqrt()
        }
    }

    /// As reported (`None` without samples).
    pub fn stats(&self) -> Option<LatencyStats> {
        (self.count > 0).then(|| LatencyStats {
            count: self.count,
            bytes: self.bytes,
            mean: self.mean,
            min: self.min,
            max: self.max,
            stdev: self.stdev(),
        })
    }
}

/// A latency accumulator for the current interval and the whole test.
#[derive(Debug, Default)]
pub struct LatencyCounter {
    spans: Mutex<(Welford, Welford)>,
}

impl LatencyCounter {
    /// Records one sample (seconds) of `bytes`.
    pub fn record(&self, secs: f64, bytes: u64) {
        if let Ok(mut g) = self.spans.lock() {
            g.0.add(secs, bytes);
            g.1.add(secs, bytes);
        }
    }

    /// Adds samples gathered elsewhere (a batch of datagrams).
    pub fn merge(&self, w: &Welford) {
        if w.count == 0 {
            return;
        }
        if let Ok(mut g) = self.spans.lock() {
            g.0.merge(w);
            g.1.merge(w);
        }
    }

    /// The current interval's samples; the next interval starts empty.
    pub(crate) fn take_interval(&self) -> Welford {
        self.spans
            .lock()
            .map(|mut g| std::mem::take(&mut g.0))
            .unwrap_or_default()
    }

    /// The whole test's samples so far.
    pub fn total(&self) -> Welford {
        self.spans.lock().map(|g| g.1).unwrap_or_default()
    }
}

/// Isochronous frames (iperf 2's `--isochronous`): on a sender, frames
/// sent, frame slots missed and the times the frame clock slipped; on a
/// receiver, frames completed, frames lost and each frame's latency.
#[derive(Debug, Default)]
pub struct FrameCounters {
    /// Frames sent (sender) or completed (receiver).
    pub frames: AtomicU64,
    /// Frame slots skipped (sender) or frames that never completed (receiver).
    pub missed: AtomicU64,
    /// Times the sender's frame clock fell behind by a slot or more.
    pub slips: AtomicU64,
    /// Receiver: from each frame's scheduled start to its last byte.
    pub latency: LatencyCounter,
}

impl FrameCounters {
    /// `[frames, missed, slips]` so far.
    pub fn counts(&self) -> [u64; 3] {
        [
            self.frames.load(Relaxed),
            self.missed.load(Relaxed),
            self.slips.load(Relaxed),
        ]
    }
}

/// The finer counters a stream hook feeds from its data thread: read
/// sizes, burst (or datagram) latency, a latency histogram, and whether
/// the sender's end-of-stream marker arrived.
#[derive(Debug)]
pub struct DetailCounters {
    /// Read sizes in 8 bins of `bin_width` bytes (the last one open-ended).
    pub read_bins: [AtomicU64; 8],
    /// Width of a read-size bin (`-l` / 8).
    pub bin_width: u64,
    /// Burst (TCP) or datagram (UDP) latency.
    pub latency: LatencyCounter,
    /// Latency is being measured (cleared by the hook when the stream
    /// turns out not to be burst-framed).
    trip_times: AtomicBool,
    /// `--histograms`: the latency distribution.
    pub histogram: Option<Arc<LatencyHistogram>>,
    /// UDP: the sender's end-of-stream datagram arrived.
    fin: AtomicBool,
}

impl DetailCounters {
    /// Counters for a stream reading `block_len`-byte buffers.
    pub fn new(block_len: usize, trip_times: bool) -> Arc<DetailCounters> {
        DetailCounters::with_histogram(block_len, trip_times, None)
    }

    /// Counters that also keep a latency histogram.
    pub fn with_histogram(
        block_len: usize,
        trip_times: bool,
        histogram: Option<LatencyHistogram>,
    ) -> Arc<DetailCounters> {
        Arc::new(DetailCounters {
            read_bins: Default::default(),
            bin_width: (block_len as u64 / 8).max(1),
            latency: LatencyCounter::default(),
            trip_times: AtomicBool::new(trip_times),
            histogram: histogram.map(Arc::new),
            fin: AtomicBool::new(false),
        })
    }

    /// Marks the stream as ended by its sender's end-of-stream datagram.
    pub fn set_fin(&self) {
        self.fin.store(true, Relaxed);
    }

    /// Whether the sender's end-of-stream datagram ended the stream.
    pub fn fin(&self) -> bool {
        self.fin.load(Relaxed)
    }

    /// Whether latency is being measured.
    pub fn trip_times(&self) -> bool {
        self.trip_times.load(Relaxed)
    }

    /// Stops reporting latency (the stream is not burst-framed).
    pub fn no_trip_times(&self) {
        self.trip_times.store(false, Relaxed);
    }

    /// Counts one read of `n` bytes.
    pub fn count_read(&self, n: usize) {
        let bin = ((n as u64) / self.bin_width).min(7) as usize;
        self.read_bins[bin].fetch_add(1, Relaxed);
    }

    /// Records a completed burst's latency (seconds) and size.
    pub fn record_latency(&self, secs: f64, bytes: u64) {
        self.latency.record(secs, bytes);
    }

    /// The read-size bins so far.
    pub fn bins(&self) -> [u64; 8] {
        std::array::from_fn(|i| self.read_bins[i].load(Relaxed))
    }
}

/// Round trips of a bounceback stream, written by its data thread.
///
/// Round trips (and their bytes) are binned by when their request was
/// sent, on the test's reporting grid, so a burst that starts on an
/// interval boundary counts in the interval it starts, however late the
/// reporter looks.
#[derive(Debug)]
pub struct BouncebackCounters {
    /// Reporting interval, seconds (`None`: no intervals).
    interval: Option<f64>,
    /// The server's side: messages echoed, no round trips of its own.
    pub echo: bool,
    state: Mutex<BbState>,
    /// The whole test's round trips (`BB8(f)-PDF`).
    pub histogram: LatencyHistogram,
}

#[derive(Debug, Default)]
struct BbState {
    /// Round trips by interval index (of their send time), not yet reported.
    pending: std::collections::BTreeMap<u64, Welford>,
    total: Welford,
    /// One-way delays to the server, from it, and their difference
    /// (clock-synced tests).
    owd: Option<[Welford; 3]>,
}

impl BouncebackCounters {
    /// A client's counters, reporting every `interval`; `owd`: the clocks
    /// are synchronised, one-way delays are kept too.
    pub fn new(interval: Option<std::time::Duration>, owd: bool) -> Arc<BouncebackCounters> {
        Arc::new(BouncebackCounters {
            interval: interval.map(|i| i.as_secs_f64()).filter(|i| *i > 0.0),
            echo: false,
            state: Mutex::new(BbState {
                owd: owd.then(Default::default),
                ..BbState::default()
            }),
            histogram: LatencyHistogram::new(super::histogram::HistogramSpec::default(), "BB8"),
        })
    }

    /// A server's counters: messages echoed, binned by the client's send
    /// time.
    pub fn echo(interval: Option<std::time::Duration>) -> Arc<BouncebackCounters> {
        let mut c = BouncebackCounters::new(interval, false);
        if let Some(c) = Arc::get_mut(&mut c) {
            c.echo = true;
        }
        c
    }

    /// Records a round trip of `rtt` seconds and `bytes` (both ways) whose
    /// request went out `sent` seconds after the test's start; `owd`: (to
    /// the server, from it).
    pub fn record(&self, sent: f64, rtt: f64, bytes: u64, owd: Option<(f64, f64)>) {
        if !self.echo {
            self.histogram.add(rtt, None);
        }
        let idx = match self.interval {
            Some(i) => (sent.max(0.0) / i) as u64,
            None => 0,
        };
        if let Ok(mut s) = self.state.lock() {
            s.pending.entry(idx).or_default().add(rtt, bytes);
            s.total.add(rtt, bytes);
            if let (Some((to, from)), Some(w)) = (owd, s.owd.as_mut()) {
                w[0].add(to, 0);
                w[1].add(from, 0);
                w[2].add(to - from, 0);
            }
        }
    }

    /// Round trips sent before `until` seconds (the end of the span being
    /// reported; `None`: all of them) not reported yet.
    pub(crate) fn take_until(&self, until: Option<f64>) -> Welford {
        let last = match (self.interval, until) {
            (Some(i), Some(u)) => ((u / i).round() as u64).saturating_sub(1),
            _ => u64::MAX,
        };
        let mut w = Welford::default();
        if let Ok(mut s) = self.state.lock() {
            let later = s.pending.split_off(&last.saturating_add(1));
            for (_, x) in std::mem::replace(&mut s.pending, later) {
                w.merge(&x);
            }
        }
        w
    }

    /// The whole test's round trips and one-way delays (to the server,
    /// from it, their difference).
    pub fn total(&self) -> (Welford, Option<[Welford; 3]>) {
        self.state.lock().map(|s| (s.total, s.owd)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_count_in_the_interval_they_were_sent() {
        let c = BouncebackCounters::new(Some(std::time::Duration::from_secs(1)), false);
        c.record(0.1, 0.001, 200, None);
        c.record(0.999, 0.002, 200, None);
        // A burst starting on the boundary belongs to the next interval,
        // even if the reporter looks a little after it.
        c.record(1.0, 0.001, 200, None);
        c.record(2.5, 0.001, 200, None);
        let first = c.take_until(Some(1.0));
        assert_eq!((first.count, first.bytes), (2, 400));
        assert_eq!(c.take_until(Some(2.0)).count, 1);
        assert_eq!(c.take_until(None).count, 1);
        assert_eq!(c.take_until(None).count, 0);
        assert_eq!(c.total().0.count, 4);
    }

    #[test]
    fn welford_matches_the_textbook() {
        let mut w = Welford::default();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            w.add(x, 10);
        }
        assert_eq!(w.count, 8);
        assert!((w.mean - 5.0).abs() < 1e-12);
        // Sample stdev of that set: sqrt(32/7).
        assert!((w.stdev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((w.min, w.max, w.bytes), (2.0, 9.0, 80));
    }

    #[test]
    fn merged_accumulators_equal_one_fed_everything() {
        let xs = [0.5, 1.5, 2.0, 9.0, 3.25, 0.1];
        let mut all = Welford::default();
        let (mut a, mut b) = (Welford::default(), Welford::default());
        for (i, x) in xs.iter().enumerate() {
            all.add(*x, 1);
            if i % 2 == 0 { a.add(*x, 1) } else { b.add(*x, 1) }
        }
        a.merge(&b);
        assert_eq!(a.count, all.count);
        assert!((a.mean - all.mean).abs() < 1e-12);
        assert!((a.stdev() - all.stdev()).abs() < 1e-12);
        assert_eq!((a.min, a.max), (all.min, all.max));
    }

    #[test]
    fn read_sizes_fall_into_eighths_of_the_buffer() {
        let c = DetailCounters::new(131072, false);
        assert_eq!(c.bin_width, 16384);
        for n in [1, 16383, 16384, 65536, 131072, 500_000] {
            c.count_read(n);
        }
        assert_eq!(c.bins(), [2, 1, 0, 0, 1, 0, 0, 2]);
    }

    #[test]
    fn interval_latency_restarts_but_the_total_keeps_everything() {
        let l = LatencyCounter::default();
        l.record(0.002, 10);
        l.record(0.004, 10);
        assert_eq!(l.take_interval().count, 2);
        l.record(0.006, 10);
        assert_eq!(l.take_interval().count, 1);
        assert_eq!(l.total().count, 3);
    }
}
