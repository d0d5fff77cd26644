//! The per-block work iperf 2 adds to the engine's TCP loops: stamping
//! `--trip-times` bursts on the sender; counting read sizes, timing bursts
//! and rate-limiting reads on the receiver.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use wirespeed_core::engine::StreamHook;
use wirespeed_core::engine::frames::Frame;
use wirespeed_core::engine::pacer::{PaceRate, Pacer};
use wirespeed_core::stats::{DetailCounters, FrameCounters, Welford};
use wirespeed_proto::iperf2::udp::{ISOCH_AT_21, ISOCH_AT_22};
use wirespeed_proto::iperf2::{BURST_HEADER_LEN, BurstHeader, BurstTracker, IsochPayload, join_secs};

pub use wirespeed_core::clock::wall_clock;

/// Writes 2.1.8's burst header at the start of each burst. With
/// `--trip-times` every block is a burst of its own (its own length); with
/// `--burst-size`/`--burst-period` the first of each `blocks` writes opens
/// a burst of the whole burst's size; with `--isochronous` each frame is a
/// burst (the frame clock says where one starts). A receiver frames bursts
/// by their size.
pub(crate) struct BurstStamp {
    start: (u32, u32),
    blocks: u32,
    /// The burst's size; `None`: each block's own length.
    size: Option<u32>,
    nth: u32,
    burst_id: u32,
    seq: u64,
    /// Isochronous: bursts are frames, and this one starts next.
    frames: bool,
    pending: Option<Frame>,
}

impl BurstStamp {
    /// Every block a burst (`--trip-times`), for a test that started at
    /// `start` (wall clock).
    pub fn per_block(start: (u32, u32)) -> BurstStamp {
        BurstStamp::periodic(start, 1, None)
    }

    /// Bursts of `blocks` writes, `size` bytes in all.
    pub fn periodic(start: (u32, u32), blocks: u32, size: Option<u32>) -> BurstStamp {
        BurstStamp {
            start,
            blocks: blocks.max(1),
            size,
            nth: 0,
            burst_id: 0,
            seq: 0,
            frames: false,
            pending: None,
        }
    }

    /// Each isochronous frame a burst.
    pub fn frames(start: (u32, u32)) -> BurstStamp {
        BurstStamp {
            frames: true,
            ..BurstStamp::per_block(start)
        }
    }
}

impl StreamHook for BurstStamp {
    fn before_write(&mut self, block: &mut [u8]) {
        self.seq += block.len() as u64;
        if self.frames {
            if let Some(f) = self.pending.take()
                && block.len() >= BURST_HEADER_LEN
            {
                BurstHeader {
                    start: self.start,
                    write: wall_clock(),
                    burst_id: f.id,
                    burst_size: f.size,
                    seq: self.seq,
                    period_us: f.period_us,
                }
                .write(block);
            }
            return;
        }
        let first = self.nth == 0;
        self.nth = (self.nth + 1) % self.blocks;
        if !first || block.len() < BURST_HEADER_LEN {
            return;
        }
        self.burst_id = self.burst_id.wrapping_add(1);
        BurstHeader {
            start: self.start,
            write: wall_clock(),
            burst_id: self.burst_id,
            burst_size: self.size.unwrap_or(block.len() as u32),
            seq: self.seq,
            period_us: 0,
        }
        .write(block);
    }

    fn frame_header_len(&self) -> usize {
        BURST_HEADER_LEN
    }

    fn frame_start(&mut self, frame: &Frame) {
        self.pending = Some(*frame);
    }
}

/// Receiver work: read-size histogram, burst latency, read pacing.
pub(crate) struct RecvHook {
    counters: Arc<DetailCounters>,
    bursts: Option<BurstTracker>,
    pacer: Option<Pacer>,
    /// `--tcp-quickack`: the socket to re-arm TCP_QUICKACK on after reads.
    quickack: Option<std::net::TcpStream>,
}

impl RecvHook {
    /// A hook feeding `counters`; `bursts` follows `--trip-times` burst
    /// framing; `rate` (bits/s) paces the reads (`-b` on a receiving client).
    pub fn new(counters: Arc<DetailCounters>, bursts: Option<BurstTracker>, rate: u64, block_len: usize) -> RecvHook {
        RecvHook {
            counters,
            bursts,
            pacer: (rate > 0).then(|| Pacer::new(PaceRate::Bits(rate), 0, block_len, Instant::now())),
            quickack: None,
        }
    }

    /// Sets TCP_QUICKACK on `sock` after every read (the kernel clears it
    /// again on its own, so 2.1.8 re-arms it each time too).
    pub(crate) fn with_quickack(mut self, sock: Option<std::net::TcpStream>) -> RecvHook {
        self.quickack = sock;
        self
    }
}

impl StreamHook for RecvHook {
    fn after_read(&mut self, data: &[u8], stop: &AtomicBool) -> bool {
        self.counters.count_read(data.len());
        if let Some(s) = &self.quickack {
            let _ = wirespeed_sys::socket::set_quickack(&socket2::SockRef::from(s));
        }
        if let Some(t) = self.bursts.as_mut() {
            let (s, us) = wall_clock();
            let now = join_secs(s, us);
            let c = &self.counters;
            t.feed(data, |h| {
                let sent = join_secs(h.write.0, h.write.1);
                c.record_latency(now - sent, h.burst_size as u64);
                if let Some(hist) = &c.histogram {
                    hist.add(now - sent, Some((s, us)));
                }
            });
            if t.lost() {
                // Not burst-framed after all: report plain reads.
                c.no_trip_times();
                self.bursts = None;
            }
        }
        match self.pacer.as_mut() {
            Some(p) => p.wait(data.len(), stop),
            None => true,
        }
    }
}

/// A UDP receiver's work: one-way latency of every datagram (its arrival
/// time minus the sender's timestamp), gathered per batch and published
/// once per batch, the latency histogram, and an isochronous sender's
/// frames.
pub(crate) struct UdpRecvHook {
    counters: Arc<DetailCounters>,
    batch: Welford,
    frames: Option<FrameTracker>,
    l4s: Option<super::l4s::L4sAcker>,
}

impl UdpRecvHook {
    /// A hook feeding `counters`.
    pub fn new(counters: Arc<DetailCounters>) -> UdpRecvHook {
        UdpRecvHook {
            counters,
            batch: Welford::default(),
            frames: None,
            l4s: None,
        }
    }

    /// Also acks an L4S sender (`--udp-l4s`) after each batch.
    pub(crate) fn with_l4s(mut self, acker: super::l4s::L4sAcker) -> UdpRecvHook {
        self.l4s = Some(acker);
        self
    }

    /// Also follows the frames of an isochronous sender.
    pub(crate) fn with_frames(mut self, frames: FrameTracker) -> UdpRecvHook {
        self.frames = Some(frames);
        self
    }
}

/// Follows an isochronous sender's frames from the fields its datagrams
/// carry: a frame completes when the datagram that ends it arrives (the
/// bytes it says remain are its own length). Frames the sender sent
/// between two completed ones (it says which one it sent before) and that
/// never completed are lost. A frame's latency runs from its slot (the
/// frames' origin + (id − 1) periods) to that last datagram; it needs
/// clocks in step (the sender's `--trip-times`).
pub struct FrameTracker {
    /// Where the frame fields are (by the sender's version); `None` until
    /// found by the frame period ([`FrameTracker::finding`]).
    at: Option<usize>,
    /// The period the sender was asked for, µs (to find the fields by).
    period_us: u32,
    /// The last frame completed.
    last: u32,
    latency: bool,
    counters: Arc<FrameCounters>,
    batch: Welford,
}

impl FrameTracker {
    /// A tracker reading the fields at `at`, feeding `counters`; `latency`
    /// when the clocks are in step.
    pub fn new(at: usize, latency: bool, counters: Arc<FrameCounters>) -> FrameTracker {
        FrameTracker {
            at: Some(at),
            period_us: 0,
            last: 0,
            latency,
            counters,
            batch: Welford::default(),
        }
    }

    /// A tracker for frames of `period_us` from a sender of unknown
    /// version (a client's `-R`): the fields are where that period is
    /// found, at 2.1's offset or 2.2's.
    pub(crate) fn finding(period_us: u32, latency: bool, counters: Arc<FrameCounters>) -> FrameTracker {
        FrameTracker {
            at: None,
            period_us,
            ..FrameTracker::new(0, latency, counters)
        }
    }

    /// Takes one datagram that arrived at `rx_ns` (wall clock).
    pub fn feed(&mut self, d: &[u8], rx_ns: i64) {
        let period = self.period_us;
        let Some(at) = self.at.or_else(|| {
            [ISOCH_AT_21, ISOCH_AT_22]
                .into_iter()
                .find(|at| IsochPayload::read(d, *at).is_some_and(|p| p.id > 0 && p.period_us.abs_diff(period) <= 1))
        }) else {
            return;
        };
        self.at = Some(at);
        let Some(p) = IsochPayload::read(d, at) else {
            return;
        };
        if p.id == 0 || p.id <= self.last || p.remaining as usize != d.len() {
            return;
        }
        self.counters.frames.fetch_add(1, Relaxed);
        if p.prev_id > self.last && p.prev_id < p.id {
            self.counters
                .missed
                .fetch_add(u64::from(p.prev_id - self.last), Relaxed);
        }
        self.last = p.id;
        if self.latency && p.period_us > 0 {
            let slot = join_secs(p.start.0, p.start.1) + f64::from(p.id - 1) * f64::from(p.period_us) * 1e-6;
            self.batch.add(rx_ns as f64 * 1e-9 - slot, p.size as u64);
        }
    }

    fn publish(&mut self) {
        self.counters.latency.merge(&self.batch);
        self.batch = Welford::default();
    }
}

impl StreamHook for UdpRecvHook {
    fn on_datagram(&mut self, d: &[u8], rx_ns: i64, transit_ns: i64, tos: Option<u8>) {
        if let Some(a) = self.l4s.as_mut() {
            a.on_datagram(d, tos);
        }
        let secs = transit_ns as f64 * 1e-9;
        self.batch.add(secs, 0);
        if let Some(h) = &self.counters.histogram {
            h.add(secs, None);
        }
        if let Some(f) = self.frames.as_mut() {
            f.feed(d, rx_ns);
        }
    }

    fn after_batch(&mut self) {
        if let Some(a) = self.l4s.as_mut() {
            a.ack();
        }
        self.counters.latency.merge(&self.batch);
        self.batch = Welford::default();
        if let Some(f) = self.frames.as_mut() {
            f.publish();
        }
    }

    fn on_end_of_stream(&mut self) {
        self.after_batch();
        self.counters.set_fin();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_blocks_parse_back_with_latency() {
        let start = wall_clock();
        let mut stamp = BurstStamp::per_block(start);
        let counters = DetailCounters::new(1000, true);
        let mut hook = RecvHook::new(counters.clone(), Some(BurstTracker::new()), 0, 1000);
        let stop = AtomicBool::new(false);
        for _ in 0..3 {
            let mut block = vec![b'0'; 1000];
            stamp.before_write(&mut block);
            assert_eq!(BurstHeader::read(&block).start, start);
            for chunk in block.chunks(300) {
                assert!(hook.after_read(chunk, &stop));
            }
        }
        let mut short = vec![0u8; 50];
        stamp.before_write(&mut short);
        assert_eq!(short, vec![0u8; 50], "too short to carry a header");
        // 3 bursts of 1000 bytes, each read in 4 pieces.
        let reads: u64 = (0..8)
            .map(|i| counters.read_bins[i].load(std::sync::atomic::Ordering::Relaxed))
            .sum();
        assert_eq!(reads, 12);
        let lat = counters.latency.total();
        assert_eq!((lat.count, lat.bytes), (3, 3000));
        assert!(lat.mean >= 0.0 && lat.mean < 1.0);
    }

    #[test]
    fn frames_complete_on_their_last_datagram_and_gaps_are_lost() {
        let counters = Arc::new(FrameCounters::default());
        let mut t = FrameTracker::new(76, true, counters.clone());
        let origin = (1_700_000_000u32, 0u32);
        let datagram = |id: u32, prev: u32, remaining: u32, len: usize| {
            let mut d = vec![0u8; len];
            IsochPayload {
                period_us: 10_000,
                start: origin,
                prev_id: prev,
                id,
                size: 2000,
                remaining,
            }
            .write(&mut d, 76);
            d
        };
        // Frame 1 arrives 5 ms after its slot, in two datagrams.
        let at = |id: u32, ms: i64| {
            (i64::from(origin.0) * 1_000_000_000) + (i64::from(id) - 1) * 10_000_000 + ms * 1_000_000
        };
        t.feed(&datagram(1, 0, 2000, 1000), at(1, 4));
        assert_eq!(counters.counts(), [0, 0, 0], "not complete yet");
        t.feed(&datagram(1, 0, 1000, 1000), at(1, 5));
        // Frame 2 never completes (its last datagram is lost); frame 3 does.
        t.feed(&datagram(2, 1, 2000, 1000), at(2, 1));
        t.feed(&datagram(3, 2, 1000, 1000), at(3, 7));
        // A late duplicate of frame 1's end and a frameless datagram change nothing.
        t.feed(&datagram(1, 0, 1000, 1000), at(3, 8));
        t.feed(&datagram(0, 0, 1000, 1000), at(3, 8));
        t.feed(&[0u8; 50], at(3, 9));
        t.publish();
        assert_eq!(counters.counts(), [2, 1, 0]);
        let l = counters.latency.total().stats().unwrap();
        assert_eq!(l.count, 2);
        assert!((l.min - 0.005).abs() < 1e-6 && (l.max - 0.007).abs() < 1e-6, "{l:?}");
    }
}
