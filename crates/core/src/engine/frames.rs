//! Isochronous frames (iperf 2's `--isochronous`): a clock that ticks once
//! per frame period on the stream's own timeline and numbers the frames 1,
//! 2, 3, ... by their slot. A sender that wakes a slot or more late skips
//! the slots it missed (their ids are never sent) and counts one slip.
//! Each frame's size is drawn from a log-normal distribution; the stream
//! loops (`tcp.rs`, `udp.rs`) cut it into blocks or datagrams.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::pacer::{LogNormal, sleep_until};
use crate::config::FrameSpec;
use crate::stats::FrameCounters;

/// Largest frame a draw may produce (a wild draw of a wide distribution
/// must not become a gigabyte burst).
const MAX_FRAME: f64 = 64.0 * 1024.0 * 1024.0;

/// One frame as its sender stamps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// This frame's id (its slot number, from 1).
    pub id: u32,
    /// The id of the frame sent before it (0 before the first).
    pub prev: u32,
    /// Bytes in the frame.
    pub size: u32,
    /// The frame period, µs.
    pub period_us: u32,
    /// Wall clock (seconds, µs) of slot 1: frame `id` was due
    /// `(id - 1) × period` later.
    pub origin: (u32, u32),
}

/// A sender's frame schedule.
#[derive(Debug)]
pub(crate) struct FrameClock {
    period: Duration,
    start: Instant,
    origin: (u32, u32),
    sizes: LogNormal,
    min_size: u32,
    last: u32,
    counters: Arc<FrameCounters>,
}

impl FrameClock {
    /// A clock whose first slot is now. Frames are at least `min_size`
    /// bytes (room for the header each frame starts with).
    pub fn new(spec: &FrameSpec, min_size: usize, counters: Arc<FrameCounters>) -> FrameClock {
        FrameClock {
            period: spec.period().max(Duration::from_micros(1)),
            start: Instant::now(),
            origin: crate::clock::wall_clock(),
            sizes: LogNormal::new(spec.mean_bytes(), spec.stdev / (spec.fps * 8.0)),
            min_size: min_size.min(u32::MAX as usize) as u32,
            last: 0,
            counters,
        }
    }

    /// Waits for the next frame's slot and returns the frame. `None` when
    /// `stop` was raised meanwhile, or when the slot is at or after `until`
    /// (the test's end), after waiting until then.
    pub fn next(&mut self, stop: &AtomicBool, until: Option<Instant>) -> Option<Frame> {
        let due_id = self.last.saturating_add(1);
        let due = self.start + self.period * (due_id - 1);
        if let Some(u) = until.filter(|u| due >= *u) {
            sleep_until(u, stop);
            return None;
        }
        if !sleep_until(due, stop) {
            return None;
        }
        // The slot we are in now: later than due if we woke a slot late.
        let slots = (Instant::now() - self.start).as_nanos() / self.period.as_nanos();
        let id = (slots.min(u32::MAX as u128 - 1) as u32 + 1).max(due_id);
        if id > due_id {
            self.counters.missed.fetch_add(u64::from(id - due_id), Relaxed);
            self.counters.slips.fetch_add(1, Relaxed);
        }
        let size = self
            .sizes
            .draw()
            .round()
            .clamp(f64::from(self.min_size.max(1)), MAX_FRAME) as u32;
        let frame = Frame {
            id,
            prev: self.last,
            size,
            period_us: self.period.as_micros().min(u32::MAX as u128) as u32,
            origin: self.origin,
        };
        self.last = id;
        self.counters.frames.fetch_add(1, Relaxed);
        Some(frame)
    }
}

/// Cuts a frame of `size` bytes into pieces of at most `len`, none shorter
/// than `min` (a last piece that would be is raised to `min`, as iperf 2
/// does, so the frame grows a little). Yields `(piece length, bytes of the
/// frame remaining including this piece)`; the last piece's remaining
/// equals its length.
pub fn pieces(size: u32, len: usize, min: usize) -> impl Iterator<Item = (usize, u32)> {
    let len = len.max(min).max(1);
    let mut left = size as usize;
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let n = left.min(len).max(min);
        let remaining = left.max(n);
        left -= left.min(n);
        Some((n, remaining.min(u32::MAX as usize) as u32))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_without_runts() {
        let p: Vec<_> = pieces(3000, 1470, 108).collect();
        assert_eq!(p, vec![(1470, 3000), (1470, 1530), (108, 108)]);
        let p: Vec<_> = pieces(2940, 1470, 108).collect();
        assert_eq!(p, vec![(1470, 2940), (1470, 1470)]);
        let p: Vec<_> = pieces(50, 1470, 108).collect();
        assert_eq!(p, vec![(108, 108)]);
    }

    #[test]
    fn the_clock_numbers_slots_and_counts_slips() {
        let spec = FrameSpec {
            fps: 100.0,
            mean: 8e5,
            stdev: 0.0,
            ipg: Duration::ZERO,
        };
        let counters = Arc::new(FrameCounters::default());
        let mut clock = FrameClock::new(&spec, 92, counters.clone());
        let stop = AtomicBool::new(false);
        let f1 = clock.next(&stop, None).unwrap();
        assert_eq!((f1.id, f1.prev, f1.size, f1.period_us), (1, 0, 1000, 10_000));
        let f2 = clock.next(&stop, None).unwrap();
        assert_eq!((f2.id, f2.prev), (2, 1));
        // Late by three slots: ids 3..=5 are skipped, one slip.
        std::thread::sleep(Duration::from_millis(45));
        let f = clock.next(&stop, None).unwrap();
        assert!(f.id >= 5 && f.prev == 2, "{f:?}");
        assert_eq!(counters.counts(), [3, u64::from(f.id - 3), 1]);
        // A slot at or after the end is never sent.
        assert!(clock.next(&stop, Some(Instant::now())).is_none());
    }

    #[test]
    fn frame_sizes_follow_the_asked_mean_and_spread() {
        let spec = FrameSpec {
            fps: 1000.0,
            mean: 80e6,
            stdev: 40e6,
            ipg: Duration::ZERO,
        };
        let mut clock = FrameClock::new(&spec, 92, Arc::new(FrameCounters::default()));
        let v: Vec<f64> = (0..20_000).map(|_| clock.sizes.draw()).collect();
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let s = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt();
        assert!((m / 10_000.0 - 1.0).abs() < 0.05, "mean {m}");
        assert!((s / 5_000.0 - 1.0).abs() < 0.15, "stdev {s}");
    }
}
