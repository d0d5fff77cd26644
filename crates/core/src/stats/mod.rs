//! Counters, intervals and summaries.
//!
//! Data threads only bump [`StreamCounters`] (relaxed atomics on their own
//! cache line) and, through their hooks, [`DetailCounters`] and
//! [`BouncebackCounters`]. The controller owns a [`TestStats`] and turns
//! them into [`IntervalReport`]s and the final [`Summary`]; every number a
//! renderer prints is computed here, once, for both dialects.

pub mod advice;
pub mod counters;
pub mod cpu;
pub mod histogram;
mod interval;
pub mod l4s;
mod stream;
mod summary;
#[cfg(test)]
mod tests;
pub mod udp;

use std::time::{Duration, Instant};

pub use counters::{BouncebackCounters, DetailCounters, FrameCounters, LatencyCounter, StreamCounters, Welford};
pub use interval::ChartSampler;
pub use l4s::L4sLog;
pub use stream::{StreamMeta, StreamRole, StreamStats};

use crate::config::Protocol;
#[cfg(doc)]
use crate::events::{IntervalReport, Summary};

/// How a test's numbers are presented (the dialect decides).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Presentation {
    /// Interval spans sit on the reporting grid (`0-1`, `1-2`, as iperf 2
    /// bins them) rather than at the instants the samples were taken.
    pub grid: Option<f64>,
    /// A UDP sender ends each stream with an end-of-stream datagram the
    /// receiver counts as data (iperf 2's FIN): its whole-test line counts
    /// it too, so both ends' totals agree.
    pub fin_datagram: bool,
}

/// Everything the reporter tracks for one test.
#[derive(Debug)]
pub struct TestStats {
    /// Streams in creation order.
    pub streams: Vec<StreamStats>,
    /// Protocol.
    pub protocol: Protocol,
    /// Streams per direction (for sums).
    pub parallel: u32,
    /// Whether the omit period is running.
    pub omitting: bool,
    /// An omit period ran and ended: each stream's `base` holds what it
    /// counted in it (reported as `omitted_bytes`).
    omitted: bool,
    /// How the numbers are presented.
    pub presentation: Presentation,
    /// Stream start (reset when the omit period ends).
    start: Instant,
    last_sample: Instant,
    /// When the last sample was taken, seconds since `start`.
    end_secs: f64,
    /// Where the interval grid has reached, seconds since `start`.
    grid_end: f64,
    cpu: cpu::CpuMeter,
    /// Base of the streams' `ended_ns`/`last_rx_ns`.
    epoch: Instant,
}

impl TestStats {
    /// Statistics for streams that start now. `epoch` is the base of the
    /// streams' timestamps (the test's `TestControl::epoch`).
    pub fn new(
        streams: Vec<StreamStats>,
        protocol: Protocol,
        parallel: u32,
        omitting: bool,
        now: Instant,
        epoch: Instant,
    ) -> TestStats {
        TestStats {
            streams,
            protocol,
            parallel,
            omitting,
            omitted: false,
            presentation: Presentation::default(),
            start: now,
            last_sample: now,
            end_secs: 0.0,
            grid_end: 0.0,
            cpu: cpu::CpuMeter::start(now),
            epoch,
        }
    }

    /// The same statistics, presented as `p` says.
    pub(crate) fn presented(mut self, p: Presentation) -> TestStats {
        self.presentation = p;
        self
    }

    /// Seconds from start to when stream `s` finished (or the last sample).
    fn stream_secs(&self, s: &StreamStats) -> f64 {
        match s.counters.ended(self.epoch) {
            Some(t) => self.elapsed(t).min(self.end_secs),
            None => self.end_secs,
        }
    }

    /// When the last stream finished, if all have: the true end of the test,
    /// which the final interval should close at (not when we noticed).
    pub(crate) fn all_ended(&self) -> Option<Instant> {
        let mut last: Option<Instant> = None;
        for s in &self.streams {
            let e = s.counters.ended(self.epoch)?;
            last = Some(last.map_or(e, |l| l.max(e)));
        }
        last.map(|l| l.max(self.last_sample))
    }

    /// When stream `i` ended, if it has.
    pub fn ended_at(&self, i: usize) -> Option<Instant> {
        self.streams.get(i).and_then(|s| s.counters.ended(self.epoch))
    }

    /// How long since any receiving stream last got data (for the receive
    /// idle timeout); `None` if this host receives nothing.
    pub fn rx_idle(&self, now: Instant) -> Option<Duration> {
        let mut recv = self.streams.iter().filter(|s| s.role == StreamRole::Recv).peekable();
        recv.peek()?;
        let last = recv
            .filter_map(|s| s.counters.last_rx(self.epoch))
            .max()
            .unwrap_or(self.start);
        Some(now.saturating_duration_since(last.max(self.start)))
    }

    /// Seconds since the (post-omit) start.
    pub fn elapsed(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.start).as_secs_f64()
    }

    /// Total bytes moved by this host's streams of `role` (for -n/-k checks).
    pub fn total_bytes(&self, role: StreamRole) -> u64 {
        self.streams
            .iter()
            .filter(|s| s.role == role)
            .map(|s| s.counters.bytes.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }

    /// Bytes moved by every stream so far, both ways.
    pub fn moved(&self) -> u64 {
        self.total_bytes(StreamRole::Send) + self.total_bytes(StreamRole::Recv)
    }

    /// Ends the omit period: counters so far become the baseline and the
    /// stream clock restarts.
    pub(crate) fn end_omit(&mut self, now: Instant) {
        self.omitting = false;
        self.omitted = true;
        for s in &mut self.streams {
            s.rebase();
        }
        self.start = now;
        self.last_sample = now;
        self.grid_end = 0.0;
        self.cpu = cpu::CpuMeter::start(now);
    }

    /// Seconds from start to the last sample.
    pub fn end_secs(&self) -> f64 {
        self.end_secs
    }

    /// CPU use since the start.
    pub fn cpu(&self, now: Instant) -> cpu::CpuUse {
        self.cpu.read(now)
    }
}

/// 100 × lost / packets (0 without packets).
fn pct(lost: i64, packets: i64) -> f64 {
    if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    }
}

/// Bytes × 8 / seconds (0 for an empty interval).
pub fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// iperf 2's NetPwr: bytes per second over a delay, × 1e-6 (`None` when
/// the delay is unknown).
pub fn net_power(bits_per_second: f64, delay_secs: f64) -> Option<f64> {
    (delay_secs > 0.0).then(|| bits_per_second / 8.0 / delay_secs * 1e-6)
}
