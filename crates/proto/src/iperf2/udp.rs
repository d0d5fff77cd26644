//! UDP: the 16-byte prefix of every datagram (sequence number and send
//! time), the negative-sequence FIN, and the 128-byte server report
//! (16 zero bytes + `server_hdr`) a server returns for the FIN.

use super::flags::{self, SERVER_HEADER_EXTEND};
use super::{be32, join_secs, put32, split_secs};

/// How much of a datagram 2.1.8 reserves for headers (zeroed, then the
/// settings written in): the pattern starts after it.
pub const HEADER_AREA: usize = 160;
/// Bytes the settings of a plain test need (sequence prefix, v1 header,
/// extension): the smallest datagram a client sends.
pub const MIN_DATAGRAM: usize = 76;
/// With `--trip-times` the start-time block at 108..128 must fit too.
pub const MIN_DATAGRAM_TRIP_TIMES: usize = 128;

/// Length of `UDP_datagram`.
pub const DATAGRAM_HEADER_LEN: usize = 16;
/// Length of `server_hdr`.
pub const SERVER_HDR_LEN: usize = 112;
/// Length of a server report datagram.
pub const SERVER_REPORT_LEN: usize = DATAGRAM_HEADER_LEN + SERVER_HDR_LEN;

/// Where an isochronous datagram's frame fields start: after the 2.1
/// extension (36 bytes, 2.1.x senders) or 2.2's (40 bytes).
pub const ISOCH_AT_21: usize = 76;
/// The 2.2 offset of the frame fields.
pub const ISOCH_AT_22: usize = 80;
/// Length of the frame fields (`isoch_payload`).
pub const ISOCH_PAYLOAD_LEN: usize = 32;

/// The frame fields of an isochronous datagram (`isoch_payload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IsochPayload {
    /// Frame period, µs.
    pub period_us: u32,
    /// Wall clock (seconds, µs) of frame 1's slot.
    pub start: (u32, u32),
    /// The frame sent before this one.
    pub prev_id: u32,
    /// This frame (0: no frame, e.g. a first datagram).
    pub id: u32,
    /// Bytes in the frame.
    pub size: u32,
    /// Bytes of the frame left, this datagram included.
    pub remaining: u32,
}

impl IsochPayload {
    /// Writes the fields at `at` of datagram `d` (which must hold them).
    pub fn write(&self, d: &mut [u8], at: usize) {
        let b = &mut d[at..at + ISOCH_PAYLOAD_LEN];
        put32(b, 0, self.period_us);
        put32(b, 4, self.start.0);
        put32(b, 8, self.start.1);
        put32(b, 12, self.prev_id);
        put32(b, 16, self.id);
        put32(b, 20, self.size);
        put32(b, 24, self.remaining);
        put32(b, 28, 0);
    }

    /// Reads the fields at `at`; `None` if the datagram is too short.
    pub fn read(d: &[u8], at: usize) -> Option<IsochPayload> {
        let b = d.get(at..at + ISOCH_PAYLOAD_LEN)?;
        Some(IsochPayload {
            period_us: be32(b, 0),
            start: (be32(b, 4), be32(b, 8)),
            prev_id: be32(b, 12),
            id: be32(b, 16),
            size: be32(b, 20),
            remaining: be32(b, 24),
        })
    }

    /// Where a sender of this version (`version_u`, `(major << 16) | minor`)
    /// puts the fields.
    pub fn offset_for(version_u: u32) -> usize {
        if version_u >= 0x0002_0002 {
            ISOCH_AT_22
        } else {
            ISOCH_AT_21
        }
    }
}

/// The start of every datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DatagramHeader {
    /// Sequence number from 1; negative in a FIN.
    pub seq: i64,
    /// Send time, wall clock seconds.
    pub sec: u32,
    /// Microseconds.
    pub usec: u32,
}

impl DatagramHeader {
    /// Writes the 16 bytes (`buf` at least that long).
    pub fn write(&self, buf: &mut [u8]) {
        put32(buf, 0, self.seq as u32);
        put32(buf, 4, self.sec);
        put32(buf, 8, self.usec);
        put32(buf, 12, (self.seq >> 32) as u32);
    }

    /// Reads the prefix. `seq64` says whether the high word is valid (the
    /// sender set SEQNO64B); otherwise the id is a signed 32-bit number.
    pub fn read(d: &[u8], seq64: bool) -> Option<DatagramHeader> {
        if d.len() < DATAGRAM_HEADER_LEN {
            return None;
        }
        let lo = be32(d, 0);
        let seq = if seq64 {
            ((be32(d, 12) as u64) << 32 | lo as u64) as i64
        } else {
            lo as i32 as i64
        };
        Some(DatagramHeader {
            seq,
            sec: be32(d, 4),
            usec: be32(d, 8),
        })
    }

    /// Is this the client's FIN (negative sequence)?
    pub fn is_fin(&self) -> bool {
        self.seq < 0
    }
}

/// The latency extension of a server report: one-way transit statistics as
/// `(seconds, microseconds)` pairs, kept as sent so reports round-trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReportLatency {
    /// Minimum transit.
    pub min: (u32, u32),
    /// Maximum transit.
    pub max: (u32, u32),
    /// Sum of transits.
    pub sum: (u32, u32),
    /// Mean transit.
    pub mean: (u32, u32),
    /// Welford M2, scaled by 1e12 before splitting (µs²).
    pub m2: (u32, u32),
    /// Variance-delta word pair.
    pub vd: (u32, u32),
    /// Transit samples.
    pub cnt_transit: u32,
    /// Datagrams per second (2.1.8 puts a pps value here).
    pub cnt_ipg: u32,
    /// Divisor of `cnt_ipg` (2.1.8 writes 1).
    pub ipg_sum: u32,
}

impl ReportLatency {
    /// Builds the extension from seconds.
    #[allow(clippy::too_many_arguments)]
    pub fn from_secs(min: f64, max: f64, sum: f64, mean: f64, m2: f64, cnt: u32, pps: u32) -> ReportLatency {
        ReportLatency {
            min: split_secs(min),
            max: split_secs(max),
            sum: split_secs(sum),
            mean: split_secs(mean),
            m2: split_secs(m2 * 1e12),
            vd: (0, 0),
            cnt_transit: cnt,
            cnt_ipg: pps,
            ipg_sum: 1,
        }
    }

    /// Mean transit in seconds (sum / count, as the client computes it).
    pub fn mean_secs(&self) -> f64 {
        if self.cnt_transit == 0 {
            return 0.0;
        }
        join_secs(self.sum.0, self.sum.1) / self.cnt_transit as f64
    }

    /// Standard deviation in seconds from M2.
    pub fn stdev_secs(&self) -> f64 {
        if self.cnt_transit < 2 {
            return 0.0;
        }
        let m2 = join_secs(self.m2.0, self.m2.1) / 1e12;
        (m2 / (self.cnt_transit - 1) as f64).sqrt()
    }
}

/// A UDP server report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerReport {
    /// Flags as sent (VERSION1 | SEQNO64B | maybe SERVER_HEADER_EXTEND).
    pub flags: u32,
    /// Bytes received.
    pub total_bytes: u64,
    /// Flow duration on the server (sec, usec).
    pub duration: (u32, u32),
    /// Lost datagrams.
    pub lost: u64,
    /// Out-of-order datagrams.
    pub out_of_order: u64,
    /// Total datagrams (the FIN's absolute id).
    pub datagrams: u64,
    /// Jitter (sec, usec).
    pub jitter: (u32, u32),
    /// Latency extension, when SERVER_HEADER_EXTEND is set.
    pub latency: Option<ReportLatency>,
}

impl ServerReport {
    /// The 128 bytes a server sends (16 zero bytes, then `server_hdr`).
    pub fn encode(&self) -> [u8; SERVER_REPORT_LEN] {
        let mut out = [0u8; SERVER_REPORT_LEN];
        let b = &mut out[DATAGRAM_HEADER_LEN..];
        let mut f = self.flags | flags::VERSION1 | flags::SEQNO64B;
        if self.latency.is_some() {
            f |= SERVER_HEADER_EXTEND;
        }
        put32(b, 0, f);
        put32(b, 4, (self.total_bytes >> 32) as u32);
        put32(b, 8, self.total_bytes as u32);
        put32(b, 12, self.duration.0);
        put32(b, 16, self.duration.1);
        put32(b, 20, self.lost as u32);
        put32(b, 24, self.out_of_order as u32);
        put32(b, 28, self.datagrams as u32);
        put32(b, 32, self.jitter.0);
        put32(b, 36, self.jitter.1);
        if let Some(l) = &self.latency {
            for (i, p) in [l.min, l.max, l.sum, l.mean, l.m2, l.vd].iter().enumerate() {
                put32(b, 40 + i * 8, p.0);
                put32(b, 44 + i * 8, p.1);
            }
            put32(b, 88, l.cnt_transit);
            put32(b, 92, l.cnt_ipg);
            put32(b, 96, l.ipg_sum);
        }
        put32(b, 100, (self.lost >> 32) as u32);
        put32(b, 104, (self.out_of_order >> 32) as u32);
        put32(b, 108, (self.datagrams >> 32) as u32);
        out
    }

    /// Decodes a report datagram (the 16-byte prefix included). Shorter
    /// datagrams, or ones without the VERSION1 flag, are not reports.
    pub fn decode(d: &[u8]) -> Option<ServerReport> {
        if d.len() < DATAGRAM_HEADER_LEN + 40 {
            return None;
        }
        let b = &d[DATAGRAM_HEADER_LEN..];
        let f = be32(b, 0);
        if f & flags::VERSION1 == 0 {
            return None;
        }
        let full = b.len() >= SERVER_HDR_LEN;
        let hi = |off: usize| -> u64 {
            if full && f & flags::SEQNO64B != 0 {
                (be32(b, off) as u64) << 32
            } else {
                0
            }
        };
        let latency = (f & SERVER_HEADER_EXTEND != 0 && b.len() >= 100).then(|| {
            let p = |i: usize| (be32(b, 40 + i * 8), be32(b, 44 + i * 8));
            ReportLatency {
                min: p(0),
                max: p(1),
                sum: p(2),
                mean: p(3),
                m2: p(4),
                vd: p(5),
                cnt_transit: be32(b, 88),
                cnt_ipg: be32(b, 92),
                ipg_sum: be32(b, 96),
            }
        });
        Some(ServerReport {
            flags: f,
            total_bytes: ((be32(b, 4) as u64) << 32) | be32(b, 8) as u64,
            duration: (be32(b, 12), be32(b, 16)),
            lost: be32(b, 20) as u64 | hi(100),
            out_of_order: be32(b, 24) as u64 | hi(104),
            datagrams: be32(b, 28) as u64 | hi(108),
            jitter: (be32(b, 32), be32(b, 36)),
            latency,
        })
    }

    /// Duration in seconds.
    pub fn duration_secs(&self) -> f64 {
        join_secs(self.duration.0, self.duration.1)
    }

    /// Jitter in seconds.
    pub fn jitter_secs(&self) -> f64 {
        join_secs(self.jitter.0, self.jitter.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isoch_payload_matches_a_2_1_8_capture() {
        // Datagram 2 of `iperf -u --isochronous=60:10m,1m` (2.1.8), words 19-26.
        let words = [0x0000_411a_u32, 0x6b04_a184, 0x000e_e6d5, 0, 1, 0x5a7a, 0x5a7a, 0];
        let mut d = vec![0u8; 108];
        for (i, w) in words.iter().enumerate() {
            d[76 + 4 * i..80 + 4 * i].copy_from_slice(&w.to_be_bytes());
        }
        let p = IsochPayload::read(&d, IsochPayload::offset_for(0x0002_0001)).unwrap();
        assert_eq!(
            p,
            IsochPayload {
                period_us: 16_666,
                start: (0x6b04_a184, 0x000e_e6d5),
                prev_id: 0,
                id: 1,
                size: 23_162,
                remaining: 23_162,
            }
        );
        let mut again = vec![0u8; 108];
        p.write(&mut again, ISOCH_AT_21);
        assert_eq!(again[76..], d[76..]);
        assert_eq!(IsochPayload::offset_for(0x0002_0002), 80);
        assert!(IsochPayload::read(&d[..100], 76).is_none());
    }

    #[test]
    fn sequence_numbers_use_both_words() {
        let h = DatagramHeader {
            seq: 0x1_0000_0002,
            sec: 5,
            usec: 6,
        };
        let mut b = [0u8; 16];
        h.write(&mut b);
        assert_eq!(DatagramHeader::read(&b, true), Some(h));
        // A legacy reader sees only the low word, signed.
        assert_eq!(DatagramHeader::read(&b, false).unwrap().seq, 2);
    }

    #[test]
    fn fin_ids_are_negative_with_all_ones_high_word() {
        // Captured: data ids 1..7, FIN -8 => id=0xFFFFFFF8, id2=0xFFFFFFFF.
        let h = DatagramHeader {
            seq: -8,
            sec: 0,
            usec: 0,
        };
        let mut b = [0u8; 16];
        h.write(&mut b);
        assert_eq!(&b[..4], &[0xFF, 0xFF, 0xFF, 0xF8]);
        assert_eq!(&b[12..], &[0xFF; 4]);
        let back = DatagramHeader::read(&b, true).unwrap();
        assert!(back.is_fin());
        assert_eq!(back.seq.unsigned_abs(), 8);
        assert!(DatagramHeader::read(&b, false).unwrap().is_fin());
        assert_eq!(DatagramHeader::read(&b[..10], true), None);
    }

    // A hand-made report fed to a real 2.1.8 client (docs/protocols.md,
    // iperf 2: server report).
    fn spec_report() -> ServerReport {
        ServerReport {
            flags: 0,
            total_bytes: 123_456_789,
            duration: (2, 500_000),
            lost: 7,
            out_of_order: 3,
            datagrams: 1000,
            jitter: (0, 1234),
            latency: Some(ReportLatency {
                min: (0, 1000),
                max: (0, 9000),
                sum: (5, 0),
                mean: (0, 5000),
                m2: (0, 0),
                vd: (0, 0),
                cnt_transit: 1000,
                cnt_ipg: 400,
                ipg_sum: 1,
            }),
        }
    }

    #[test]
    fn server_report_layout() {
        let w = spec_report().encode();
        assert_eq!(w.len(), 128);
        assert_eq!(&w[..16], &[0u8; 16]);
        let word = |i: usize| be32(&w, 16 + i * 4);
        assert_eq!(word(0), 0xC800_0000);
        assert_eq!(word(1), 0);
        assert_eq!(word(2), 123_456_789);
        assert_eq!((word(3), word(4)), (2, 500_000));
        assert_eq!((word(5), word(6), word(7)), (7, 3, 1000));
        assert_eq!((word(8), word(9)), (0, 1234));
        assert_eq!((word(10), word(11)), (0, 1000)); // min
        assert_eq!((word(12), word(13)), (0, 9000)); // max
        assert_eq!((word(22), word(23), word(24)), (1000, 400, 1));
        let back = ServerReport::decode(&w).unwrap();
        assert_eq!(back.flags, 0xC800_0000);
        assert_eq!(ServerReport { flags: 0, ..back }, spec_report());
        assert_eq!(back.encode(), w);
        assert!((back.latency.unwrap().mean_secs() - 0.005).abs() < 1e-12);
        assert_eq!(back.duration_secs(), 2.5);
        assert!((back.jitter_secs() - 0.001234).abs() < 1e-12);
    }

    #[test]
    fn large_counts_use_the_high_words() {
        let r = ServerReport {
            total_bytes: 5 << 32 | 7,
            lost: 1 << 33,
            datagrams: (1 << 32) + 5,
            ..ServerReport::default()
        };
        let back = ServerReport::decode(&r.encode()).unwrap();
        assert_eq!(back.total_bytes, 5 << 32 | 7);
        assert_eq!(back.lost, 1 << 33);
        assert_eq!(back.datagrams, (1 << 32) + 5);
        assert_eq!(back.latency, None);
    }

    #[test]
    fn non_reports_are_rejected() {
        assert_eq!(ServerReport::decode(&[0u8; 128]), None);
        assert_eq!(ServerReport::decode(&[0xFFu8; 20]), None);
        // A stale 28-byte CLIENTHDRACK is not a report.
        let ack = super::super::ClientAck::default().encode();
        assert_eq!(ServerReport::decode(&ack), None);
    }

    #[test]
    fn latency_stdev_from_m2() {
        let l = ReportLatency::from_secs(0.001, 0.003, 0.006, 0.002, 2e-6, 3, 10);
        assert!((l.stdev_secs() - 0.001).abs() < 1e-9, "{}", l.stdev_secs());
    }
}
