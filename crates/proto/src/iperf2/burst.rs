//! TCP `--trip-times` framing: every burst (one `-l` write by default)
//! starts with a 92-byte `TCP_burst_payload` carrying the write timestamp;
//! the receiver reads the header, then the rest of the burst, and takes
//! latency = when the burst's last byte was read − the write timestamp.

use super::{be32, put32};

/// Length of `TCP_burst_payload`.
pub const BURST_HEADER_LEN: usize = 92;
/// Largest burst a tracker believes (larger means the stream is not framed).
pub const MAX_BURST: u32 = 256 << 20;

/// The fields of a burst header wirespeed writes and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BurstHeader {
    /// Test start, wall clock (sec, usec).
    pub start: (u32, u32),
    /// When the burst was written, wall clock (sec, usec).
    pub write: (u32, u32),
    /// Running burst number from 1.
    pub burst_id: u32,
    /// Bytes in the burst, header included.
    pub burst_size: u32,
    /// Bytes sent before this burst plus its size (2.1.8's running id).
    pub seq: u64,
    /// An isochronous sender's frame period, µs (0 otherwise).
    pub period_us: u32,
}

impl BurstHeader {
    /// Writes the header over the first 92 bytes of `buf` (which must be at
    /// least that long); the flags and type words are zero.
    pub fn write(&self, buf: &mut [u8]) {
        let b = &mut buf[..BURST_HEADER_LEN];
        b.fill(0);
        put32(b, 12, self.start.0);
        put32(b, 16, self.start.1);
        put32(b, 20, self.write.0);
        put32(b, 24, self.write.1);
        put32(b, 40, self.period_us);
        put32(b, 44, self.burst_id);
        put32(b, 48, self.burst_size);
        put32(b, 52, self.seq as u32);
        put32(b, 56, (self.seq >> 32) as u32);
    }

    /// Reads a header (`b` at least 92 bytes).
    pub fn read(b: &[u8]) -> BurstHeader {
        BurstHeader {
            start: (be32(b, 12), be32(b, 16)),
            write: (be32(b, 20), be32(b, 24)),
            burst_id: be32(b, 44),
            burst_size: be32(b, 48),
            seq: be32(b, 52) as u64 | ((be32(b, 56) as u64) << 32),
            period_us: be32(b, 40),
        }
    }
}

/// Follows the burst framing of a received byte stream, one read at a time.
///
/// A stream a 2.1.8 server sends with `--trip-times` (reverse, full
/// duplex) first carries that server's own client header (with its start
/// time); [`BurstTracker::after_header`] skips it. A burst header that
/// cannot be one (size below the header or above [`MAX_BURST`]) means the
/// stream is not framed: the tracker gives up ([`BurstTracker::lost`]).
#[derive(Debug, Clone)]
pub struct BurstTracker {
    hdr: [u8; super::header::MAX_TCP_HEADER],
    have: usize,
    remaining: u64,
    current: Option<BurstHeader>,
    leading_header: bool,
    lost: bool,
}

impl Default for BurstTracker {
    fn default() -> Self {
        BurstTracker::new()
    }
}

impl BurstTracker {
    /// A tracker at a burst boundary.
    pub fn new() -> BurstTracker {
        BurstTracker {
            hdr: [0; super::header::MAX_TCP_HEADER],
            have: 0,
            remaining: 0,
            current: None,
            leading_header: false,
            lost: false,
        }
    }

    /// A tracker for a stream that starts with an iperf 2 client header.
    pub fn after_header() -> BurstTracker {
        BurstTracker {
            leading_header: true,
            ..BurstTracker::new()
        }
    }

    /// The stream did not follow burst framing; nothing more is reported.
    pub fn lost(&self) -> bool {
        self.lost
    }

    /// Skips the leading header. Returns the bytes of `data` it used, or
    /// `None` when more are needed.
    fn skip_header(&mut self, data: &[u8]) -> Option<usize> {
        use super::header::{ClientHeader, Need};
        let mut used = 0;
        loop {
            // Only ever read up to what is needed, so nothing overshoots.
            let need = match ClientHeader::need_tcp(&self.hdr[..self.have]) {
                Ok(Need::Done(n)) if self.have >= n => {
                    self.have = 0;
                    self.leading_header = false;
                    return Some(used);
                }
                Ok(Need::Done(n)) | Ok(Need::More(n)) if n <= self.hdr.len() => n,
                _ => {
                    self.lost = true;
                    return Some(data.len());
                }
            };
            if used == data.len() {
                return None;
            }
            let take = (need - self.have).min(data.len() - used);
            self.hdr[self.have..self.have + take].copy_from_slice(&data[used..used + take]);
            self.have += take;
            used += take;
        }
    }

    /// Feeds the bytes of one read; calls `done(header)` for every burst
    /// whose last byte is in `data`. A burst size below the header size is
    /// taken as the header alone (hostile or garbled input cannot stall it).
    pub fn feed(&mut self, mut data: &[u8], mut done: impl FnMut(&BurstHeader)) {
        if self.leading_header {
            match self.skip_header(data) {
                Some(used) => data = &data[used..],
                None => return,
            }
        }
        while !data.is_empty() && !self.lost {
            if self.current.is_none() {
                let take = (BURST_HEADER_LEN - self.have).min(data.len());
                self.hdr[self.have..self.have + take].copy_from_slice(&data[..take]);
                self.have += take;
                data = &data[take..];
                if self.have < BURST_HEADER_LEN {
                    return;
                }
                let h = BurstHeader::read(&self.hdr[..BURST_HEADER_LEN]);
                self.have = 0;
                if h.burst_size < BURST_HEADER_LEN as u32 || h.burst_size > MAX_BURST {
                    self.lost = true;
                    return;
                }
                self.remaining = (h.burst_size as u64).saturating_sub(BURST_HEADER_LEN as u64);
                self.current = Some(h);
            }
            let take = (self.remaining.min(data.len() as u64)) as usize;
            self.remaining -= take as u64;
            data = &data[take..];
            if self.remaining == 0
                && let Some(h) = self.current.take()
            {
                done(&h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn burst(id: u32, size: usize) -> Vec<u8> {
        let mut b = vec![b'x'; size];
        BurstHeader {
            start: (1, 2),
            write: (100, id * 10),
            burst_id: id,
            burst_size: size as u32,
            seq: id as u64 * size as u64,
            period_us: 16_666,
        }
        .write(&mut b);
        b
    }

    #[test]
    fn header_round_trips() {
        let b = burst(7, 200);
        let h = BurstHeader::read(&b);
        assert_eq!(h.burst_id, 7);
        assert_eq!(h.burst_size, 200);
        assert_eq!(h.write, (100, 70));
        assert_eq!(h.seq, 1400);
        assert_eq!(h.period_us, 16_666);
    }

    #[test]
    fn bursts_complete_across_arbitrary_read_boundaries() {
        let mut stream = Vec::new();
        for id in 1..=5 {
            stream.extend(burst(id, 300));
        }
        for chunk in [1usize, 7, 91, 92, 93, 299, 300, 1000] {
            let mut t = BurstTracker::new();
            let mut seen = Vec::new();
            for c in stream.chunks(chunk) {
                t.feed(c, |h| seen.push(h.burst_id));
            }
            assert_eq!(seen, vec![1, 2, 3, 4, 5], "chunk {chunk}");
        }
    }

    #[test]
    fn unframed_streams_are_given_up_on() {
        let mut b = vec![0u8; 92];
        BurstHeader {
            burst_size: 3,
            burst_id: 1,
            ..BurstHeader::default()
        }
        .write(&mut b);
        let mut t = BurstTracker::new();
        let mut n = 0;
        t.feed(&b, |_| n += 1);
        t.feed(&burst(2, 300), |_| n += 1);
        assert_eq!(n, 0);
        assert!(t.lost());
        let mut t = BurstTracker::new();
        t.feed(
            b"0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789",
            |_| n += 1,
        );
        assert!(t.lost(), "the ASCII pattern is no burst header");
    }

    #[test]
    fn a_leading_client_header_is_skipped() {
        use crate::iperf2::header::{ClientHeader, HeaderExt};
        let hdr = ClientHeader {
            num_threads: 1,
            ext: Some(HeaderExt {
                upper: crate::iperf2::flags::upper::TRIPTIME,
                ..HeaderExt::default()
            }),
            start: Some(Default::default()),
            ..ClientHeader::default()
        }
        .encode_tcp();
        assert_eq!(hdr.len(), 80);
        let mut stream = hdr.clone();
        for id in 1..=3 {
            stream.extend(burst(id, 500));
        }
        for chunk in [1usize, 3, 60, 80, 81, 200, 5000] {
            let mut t = BurstTracker::after_header();
            let mut seen = Vec::new();
            for c in stream.chunks(chunk) {
                t.feed(c, |h| seen.push(h.burst_id));
            }
            assert_eq!(seen, vec![1, 2, 3], "chunk {chunk}");
            assert!(!t.lost());
        }
    }
}
