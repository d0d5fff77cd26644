//! The per-block work iperf 2 adds to the engine's TCP loops: stamping
//! `--trip-times` bursts on the sender; counting read sizes, timing bursts
//! and rate-limiting reads on the receiver.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::engine::StreamHook;
use crate::engine::pacer::{PaceRate, Pacer};
use crate::proto::iperf2::{BURST_HEADER_LEN, BurstHeader, BurstTracker, join_secs};
use crate::stats::{DetailCounters, Welford};

pub use crate::clock::wall_clock;

/// Writes 2.1.8's burst header at the start of each burst. With
/// `--trip-times` every block is a burst of its own (its own length); with
/// `--burst-size`/`--burst-period` the first of each `blocks` writes opens
/// a burst of the whole burst's size, so a receiver frames bursts by it.
pub struct BurstStamp {
    start: (u32, u32),
    blocks: u32,
    /// The burst's size; `None`: each block's own length.
    size: Option<u32>,
    nth: u32,
    burst_id: u32,
    seq: u64,
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
        }
    }
}

impl StreamHook for BurstStamp {
    fn before_write(&mut self, block: &mut [u8]) {
        self.seq += block.len() as u64;
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
        }
        .write(block);
    }
}

/// Receiver work: read-size histogram, burst latency, read pacing.
pub struct RecvHook {
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
    pub fn with_quickack(mut self, sock: Option<std::net::TcpStream>) -> RecvHook {
        self.quickack = sock;
        self
    }
}

impl StreamHook for RecvHook {
    fn after_read(&mut self, data: &[u8], stop: &AtomicBool) -> bool {
        self.counters.count_read(data.len());
        if let Some(s) = &self.quickack {
            let _ = crate::sys::socket::set_quickack(&socket2::SockRef::from(s));
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
/// once per batch, and the latency histogram.
pub struct UdpRecvHook {
    counters: Arc<DetailCounters>,
    batch: Welford,
}

impl UdpRecvHook {
    /// A hook feeding `counters`.
    pub fn new(counters: Arc<DetailCounters>) -> UdpRecvHook {
        UdpRecvHook {
            counters,
            batch: Welford::default(),
        }
    }
}

impl StreamHook for UdpRecvHook {
    fn on_datagram(&mut self, transit_ns: i64) {
        let secs = transit_ns as f64 * 1e-9;
        self.batch.add(secs, 0);
        if let Some(h) = &self.counters.histogram {
            h.add(secs, None);
        }
    }

    fn after_batch(&mut self) {
        self.counters.latency.merge(&self.batch);
        self.batch = Welford::default();
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
}
