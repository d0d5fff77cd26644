//! What iperf 2's UDP tests share between client and server: the datagram
//! layout the engine stamps and parses, the end of a test (the sender's
//! negative-sequence FIN, retried until the receiver's report comes back),
//! and the conversions between a flow's line and the 128-byte report.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use wirespeed_core::engine::frames::Frame;
use wirespeed_core::engine::udp::DatagramFormat;
use wirespeed_core::events::{Enhanced, LatencyStats, StreamSample, UdpSample};
use wirespeed_core::stats::net_power;
use wirespeed_proto::iperf2::udp::{
    DATAGRAM_HEADER_LEN, ISOCH_AT_21, ISOCH_PAYLOAD_LEN, IsochPayload, ReportLatency, ServerReport,
};
use wirespeed_proto::iperf2::{ClientHeader, DatagramHeader, put32, split_secs};

pub use wirespeed_proto::iperf2::udp::{HEADER_AREA, MIN_DATAGRAM, MIN_DATAGRAM_TRIP_TIMES};
/// How long a client waits for the report after its first FIN; each
/// later wait is twice the last, up to [`FIN_WAIT_MAX`]. (2.1.8 retries
/// every 10 ms for 2 s: across a 600 ms round trip that is 60 FINs before
/// the first report can arrive, more than its receiver answers before it
/// warns "ack of last datagram failed".)
const FIN_WAIT: Duration = Duration::from_millis(10);
/// The longest wait between two FINs.
const FIN_WAIT_MAX: Duration = Duration::from_millis(250);
/// How long a client tries in all (2.1.8: 2 s); enough for a report across
/// a round trip of a second or two with some loss.
pub(crate) const FIN_SPAN: Duration = Duration::from_secs(4);
/// Refused reads after which a sender gives up: nothing listens on the
/// receiver's port. 2.1.8 gives up after 100, a FIN and a 10 ms wait each
/// (about 1 s after the test).
const REFUSED_TRIES: u32 = 100;
/// Reports a receiver sends at most (2.1.8: 9).
const REPORT_SENDS: u32 = 9;
/// The quiet after a report that tells the receiver its sender has it.
const REPORT_QUIET: Duration = Duration::from_millis(250);

use wirespeed_core::clock::{mono_ns, wall_ns};

/// Where a datagram's start time sits (the start block's seconds, then
/// microseconds).
const START_AT: usize = 112;

/// iperf 2's datagrams: a 16-byte prefix (64-bit sequence number in two
/// words around the sender's wall-clock time), then for a client the test
/// settings in every datagram, then the `0123...` pattern.
#[derive(Debug, Clone)]
pub(crate) struct Iperf2Format {
    /// Bytes 16.. of every datagram's header area (a client's settings;
    /// empty for a server's sender, whose datagrams carry none).
    template: Vec<u8>,
    /// Wall clock minus the engine's monotonic clock, ns.
    wall_offset_ns: i64,
    /// The peer sends 64-bit sequence numbers (2.1's SEQNO64B).
    seq64: bool,
    /// A server's sender to a `--trip-times` client: its start time, where
    /// a client's datagrams carry theirs (bytes 112..120), which the
    /// receiving 2.x client reads from the first datagram.
    start: Option<(u32, u32)>,
    /// A receiver of an L4S sender (`--udp-l4s`).
    l4s: bool,
    /// A server's sender on its client's own socket: a refusal (the
    /// client's port is closed) ends it.
    refusal_ends: bool,
}

impl Iperf2Format {
    /// A sender's format. `settings` (a client's header, already encoded
    /// into a datagram-sized buffer) is copied into every datagram.
    pub fn sender(settings: Option<&[u8]>) -> Iperf2Format {
        Iperf2Format {
            template: settings
                .map(|d| d[DATAGRAM_HEADER_LEN.min(d.len())..d.len().min(HEADER_AREA)].to_vec())
                .unwrap_or_default(),
            wall_offset_ns: wall_ns() - mono_ns(),
            seq64: true,
            start: None,
            l4s: false,
            refusal_ends: false,
        }
    }

    /// A server's sender that stamps its start time (`start`, wall clock)
    /// into every datagram, for a `--trip-times` client that receives.
    pub(crate) fn with_start(mut self, start: Option<(u32, u32)>) -> Iperf2Format {
        self.start = start;
        self
    }

    /// A receiver's format; `seq64` from the first datagram's flags.
    pub fn receiver(seq64: bool) -> Iperf2Format {
        Iperf2Format {
            template: Vec::new(),
            wall_offset_ns: 0,
            seq64,
            start: None,
            l4s: false,
            refusal_ends: false,
        }
    }

    /// A server's sender on the socket its client's first datagram came
    /// from (`-R`, `--full-duplex`): that socket existed before, so a
    /// refusal means it is gone (a junk or spoofed first datagram, a
    /// client killed), and the flow ends instead of sending on.
    pub(crate) fn ending_on_refusal(mut self) -> Iperf2Format {
        self.refusal_ends = true;
        self
    }

    /// A receiver of an L4S sender, whose FIN is not marked as its data.
    pub(crate) fn l4s(mut self) -> Iperf2Format {
        self.l4s = true;
        self
    }

    /// Writes datagram `seq` sent now (wall clock) into `buf`.
    pub(crate) fn stamp_now(&self, buf: &mut [u8], seq: i64) {
        let now = wall_ns();
        self.write(buf, seq, now);
    }

    fn write(&self, buf: &mut [u8], seq: i64, wall: i64) {
        if buf.len() < DATAGRAM_HEADER_LEN {
            return;
        }
        let (sec, usec) = (wall.div_euclid(1_000_000_000), wall.rem_euclid(1_000_000_000) / 1000);
        DatagramHeader {
            seq,
            sec: sec as u32,
            usec: usec as u32,
        }
        .write(buf);
        let room = buf.len() - DATAGRAM_HEADER_LEN;
        let n = self.template.len().min(room);
        buf[DATAGRAM_HEADER_LEN..DATAGRAM_HEADER_LEN + n].copy_from_slice(&self.template[..n]);
        if let Some((sec, usec)) = self.start
            && buf.len() >= START_AT + 8
        {
            put32(buf, START_AT, sec);
            put32(buf, START_AT + 4, usec);
        }
    }
}

impl DatagramFormat for Iperf2Format {
    fn header_len(&self) -> usize {
        DATAGRAM_HEADER_LEN
    }

    #[inline]
    fn stamp(&self, buf: &mut [u8], seq: u64, sent_ns: u64) {
        self.write(buf, seq as i64, sent_ns as i64 + self.wall_offset_ns);
    }

    #[inline]
    fn parse(&self, buf: &[u8]) -> Option<(u64, u64)> {
        let h = DatagramHeader::read(buf, self.seq64)?;
        (h.seq > 0).then(|| (h.seq as u64, h.sec as u64 * 1_000_000_000 + h.usec as u64 * 1000))
    }

    fn narrow(&self) -> bool {
        false
    }

    #[inline]
    fn parse_time(&self, buf: &[u8]) -> Option<u64> {
        let h = DatagramHeader::read(buf, self.seq64)?;
        Some(h.sec as u64 * 1_000_000_000 + h.usec as u64 * 1000)
    }

    /// The frame fields sit at 2.1.8's offset (76), where our settings
    /// (2.1.8's layout) put them.
    fn frame_min_len(&self) -> usize {
        ISOCH_AT_21 + ISOCH_PAYLOAD_LEN
    }

    fn stamp_frame(&self, buf: &mut [u8], frame: &Frame, remaining: u32) {
        // A server's sender has no settings to carry, but the frame fields
        // sit at the same place.
        if buf.len() < ISOCH_AT_21 + ISOCH_PAYLOAD_LEN {
            return;
        }
        IsochPayload {
            period_us: frame.period_us,
            start: frame.origin,
            prev_id: frame.prev,
            id: frame.id,
            size: frame.size,
            remaining,
        }
        .write(buf, ISOCH_AT_21);
    }

    /// A FIN counts as the datagram its (absolute) id says, bytes and all,
    /// as 2.1.8 counts it.
    #[inline]
    fn fin(&self, buf: &[u8]) -> Option<u64> {
        DatagramHeader::read(buf, self.seq64)
            .filter(|h| h.is_fin())
            .map(|h| h.seq.unsigned_abs())
    }

    /// 2.2.1's L4S sender writes its FIN without the ECT(1) of its data.
    fn fin_ecn(&self) -> bool {
        !self.l4s
    }

    fn refusal_ends(&self) -> bool {
        self.refusal_ends
    }
}

/// A client's datagram template: zeroed header area, the settings, the
/// `0123...` pattern after 160 bytes, `len` bytes in all.
pub(crate) fn client_datagram(header: &ClientHeader, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    wirespeed_core::engine::Payload::Repeating.fill(&mut d);
    d[..len.min(HEADER_AREA)].fill(0);
    header.encode_udp(&mut d);
    d
}

/// How a sender's FIN exchange ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FinOutcome {
    /// The receiver's report.
    Report(ServerReport),
    /// No report expected (`--no-udp-fin`, multicast, full duplex).
    Sent,
    /// No report came after every try; `refused` counts the tries the
    /// peer's port bounced.
    NoReport {
        /// Reads the peer's ICMP port unreachable refused.
        refused: u32,
        /// FINs sent.
        tries: u32,
    },
}

/// Ends a sender's stream: sends FIN datagrams (sequence −`next`, −`next`−1,
/// ...) built on `datagram`, and unless `expect_report` is false waits for
/// the receiver's report after each, longer after each (see [`FIN_WAIT`]),
/// for [`FIN_SPAN`] in all; while the receiver's port refuses them, every
/// [`FIN_WAIT`], [`REFUSED_TRIES`] times at most.
pub(crate) fn send_fin(
    sock: &UdpSocket,
    fmt: &Iperf2Format,
    datagram: &[u8],
    next: u64,
    expect_report: bool,
    stop: &dyn Fn() -> bool,
) -> FinOutcome {
    let mut d = datagram.to_vec();
    let mut buf = vec![0u8; 2048];
    let mut refused = 0;
    let give_up = Instant::now() + FIN_SPAN;
    let mut wait = FIN_WAIT;
    let mut k = 0u64;
    while Instant::now() < give_up {
        fmt.stamp_now(&mut d, -((next + k) as i64));
        k += 1;
        let _ = sock.send(&d);
        if !expect_report {
            return FinOutcome::Sent;
        }
        let until = Instant::now() + wait;
        wait = (wait * 2).min(FIN_WAIT_MAX);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let _ = sock.set_read_timeout(Some(left.max(Duration::from_millis(1))));
            match sock.recv(&mut buf) {
                Ok(n) => {
                    if let Some(r) = ServerReport::decode(&buf[..n]) {
                        return FinOutcome::Report(r);
                    }
                    // A stale ack or data: keep waiting out this try.
                }
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    refused += 1;
                    wait = FIN_WAIT;
                    std::thread::sleep(until.saturating_duration_since(Instant::now()));
                    break;
                }
                Err(_) => break,
            }
            if Instant::now() >= until {
                break;
            }
        }
        if stop() || refused >= REFUSED_TRIES {
            break;
        }
    }
    FinOutcome::NoReport {
        refused,
        tries: k as u32,
    }
}

/// A receiver's answer to its sender's FIN: sends `report`, and again for
/// every retry that arrives, until the sender has been quiet for 250 ms
/// (it got the report) or [`REPORT_SENDS`] reports went. Returns false if
/// the sender was still retrying at the end.
pub(crate) fn answer_fin(sock: &UdpSocket, report: &[u8]) -> bool {
    let mut buf = vec![0u8; 65536];
    let _ = sock.set_read_timeout(Some(REPORT_QUIET));
    for _ in 0..REPORT_SENDS {
        if sock.send(report).is_err() {
            return true;
        }
        match sock.recv(&mut buf) {
            Ok(_) => {
                // A retry (or a late datagram): drain what queued with it,
                // then answer again.
                let _ = sock.set_nonblocking(true);
                while sock.recv(&mut buf).is_ok() {}
                let _ = sock.set_nonblocking(false);
            }
            // Quiet, or the sender closed its socket: it has the report.
            Err(_) => return true,
        }
    }
    false
}

/// The report a receiver sends for its whole-test `line` (`latency`: with
/// the latency extension, when the receiver runs `-e` or the sender asked
/// for `--trip-times`).
pub fn report_of(line: &StreamSample, latency: bool) -> ServerReport {
    let u = line.udp.unwrap_or_default();
    let lat = u.latency.filter(|_| latency).map(|l| {
        let mut count = l.count as f64;
        let mut m2 = if l.count > 1 {
            l.stdev * l.stdev * (count - 1.0)
        } else {
            0.0
        };
        // M2 travels in µs² in a 32-bit word, which a long test overflows.
        // The sender derives the mean (sum / count) and the stdev (M2 /
        // (count - 1)) from these words only, so count, sum and M2 are
        // scaled down together: both stay right.
        let room = 4.0e9 / 1e12;
        if m2 > room {
            let k = m2 / room;
            m2 /= k;
            count = (count / k).max(2.0);
        }
        ReportLatency::from_secs(
            l.min,
            l.max,
            l.mean * count,
            l.mean,
            m2,
            count.round().min(u32::MAX as f64) as u32,
            u.pps.round().min(u32::MAX as f64) as u32,
        )
    });
    ServerReport {
        flags: 0,
        total_bytes: line.bytes,
        duration: split_secs(line.end),
        lost: u.lost.max(0) as u64,
        out_of_order: u.out_of_order.max(0) as u64,
        datagrams: u.packets.max(0) as u64,
        jitter: split_secs(u.jitter_ms / 1e3),
        latency: lat,
    }
}

/// The line a sender prints for its receiver's report (`Server Report:`).
pub(crate) fn relayed_line(id: u32, reversed: bool, r: &ServerReport) -> StreamSample {
    let dur = r.duration_secs();
    let bps = if dur > 0.0 {
        r.total_bytes as f64 * 8.0 / dur
    } else {
        0.0
    };
    let lat = r.latency.map(|l| LatencyStats {
        count: l.cnt_transit as u64,
        bytes: 0,
        mean: l.mean_secs(),
        min: wirespeed_proto::iperf2::join_secs(l.min.0, l.min.1),
        max: wirespeed_proto::iperf2::join_secs(l.max.0, l.max.1),
        stdev: l.stdev_secs(),
    });
    let pps = r
        .latency
        .map(|l| l.cnt_ipg as f64 / l.ipg_sum.max(1) as f64)
        .unwrap_or(0.0);
    let packets = r.datagrams as i64;
    let u = UdpSample {
        jitter_ms: r.jitter_secs() * 1e3,
        lost: r.lost as i64,
        packets,
        lost_percent: if packets > 0 {
            100.0 * r.lost as f64 / packets as f64
        } else {
            0.0
        },
        out_of_order: r.out_of_order as i64,
        pps,
        latency: lat,
        in_flight: lat.map(|l| (pps.round() as i64, (pps * l.mean).round(), 0.0)),
        ..UdpSample::default()
    };
    StreamSample {
        id,
        socket: -1,
        sender: false,
        reversed,
        start: 0.0,
        end: dur,
        seconds: dur,
        bytes: r.total_bytes,
        bits_per_second: bps,
        udp: Some(u),
        extras: Enhanced {
            net_power: lat.and_then(|l| net_power(bps, l.mean)),
            ..Enhanced::default()
        },
        ..StreamSample::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_proto::iperf2::{HeaderExt, VERSION_L, VERSION_U};

    #[test]
    fn datagrams_carry_sequence_time_and_settings() {
        let h = ClientHeader {
            num_threads: 1,
            port: 5001,
            amount: Some(wirespeed_proto::iperf2::Amount::from_secs(0.2)),
            ext: Some(HeaderExt {
                version_u: VERSION_U,
                version_l: VERSION_L,
                rate: 1_048_576,
                ..HeaderExt::default()
            }),
            ..ClientHeader::default()
        };
        let tmpl = client_datagram(&h, 1470);
        let fmt = Iperf2Format::sender(Some(&tmpl));
        let mut d = tmpl.clone();
        fmt.stamp(&mut d, 7, 0);
        let back = DatagramHeader::read(&d, true).unwrap();
        assert_eq!(back.seq, 7);
        // The settings of every datagram, as 2.1.8's default first datagram.
        assert_eq!(&d[16..20], &[0x48, 0x01, 0x00, 0x98]);
        assert_eq!(ClientHeader::decode_udp(&d).unwrap().ext.unwrap().rate, 1_048_576);
        assert_eq!(&d[160..170], b"0123456789");
        assert!(d[76..160].iter().all(|b| *b == 0));
        // The receiver reads it back, with the sender's clock in ns.
        let rx = Iperf2Format::receiver(true);
        let (seq, ns) = rx.parse(&d).unwrap();
        assert_eq!(seq, 7);
        assert_eq!(ns, back.sec as u64 * 1_000_000_000 + back.usec as u64 * 1000);
        assert_eq!(rx.fin(&d), None);
        fmt.stamp_now(&mut d, -8);
        assert_eq!(rx.fin(&d), Some(8));
        assert_eq!(rx.parse(&d), None);
    }

    #[test]
    fn a_server_senders_datagrams_have_only_the_prefix() {
        let fmt = Iperf2Format::sender(None);
        let mut d = vec![b'x'; 100];
        fmt.stamp(&mut d, 1, 5);
        assert_eq!(&d[16..], &[b'x'; 84][..]);
    }

    #[test]
    fn reports_round_trip_through_the_relayed_line() {
        let u = UdpSample {
            jitter_ms: 1.234,
            lost: 7,
            packets: 1000,
            out_of_order: 3,
            pps: 400.0,
            latency: Some(LatencyStats {
                count: 1000,
                bytes: 0,
                mean: 0.005,
                min: 0.001,
                max: 0.009,
                stdev: 0.002,
            }),
            ..UdpSample::default()
        };
        let line = StreamSample {
            id: 1,
            end: 2.5,
            bytes: 123_456_789,
            udp: Some(u),
            ..StreamSample::default()
        };
        let r = report_of(&line, true);
        let wire = r.encode();
        let back = ServerReport::decode(&wire).unwrap();
        let l = relayed_line(1, false, &back);
        assert_eq!(l.bytes, 123_456_789);
        assert_eq!(l.end, 2.5);
        let got = l.udp.unwrap();
        assert_eq!((got.lost, got.packets, got.out_of_order), (7, 1000, 3));
        assert!((got.jitter_ms - 1.234).abs() < 1e-9);
        let lat = got.latency.unwrap();
        assert!((lat.mean - 0.005).abs() < 1e-9);
        assert!((lat.stdev - 0.002).abs() < 1e-6);
        assert_eq!(got.pps, 400.0);
        // NetPwr as the spec's sample computes it: 1e-6 × bytes/s ÷ mean.
        assert_eq!(l.extras.net_power.unwrap().round(), 9877.0);
        // A long test's M2 does not fit its word: the stdev still arrives.
        let mut big = line.clone();
        if let Some(u) = big.udp.as_mut()
            && let Some(l) = u.latency.as_mut()
        {
            l.count = 2_373_594;
            l.stdev = 0.000420;
            l.mean = 0.000080;
        }
        let back = relayed_line(
            1,
            false,
            &ServerReport::decode(&report_of(&big, true).encode()).unwrap(),
        );
        let lat = back.udp.unwrap().latency.unwrap();
        assert!((lat.stdev - 0.000420).abs() < 2e-6, "{}", lat.stdev);
        assert!((lat.mean - 0.000080).abs() < 1e-6, "{}", lat.mean);
        // Without -e or --trip-times the report has no latency extension.
        assert_eq!(report_of(&line, false).latency, None);
    }

    #[test]
    fn fin_retries_until_the_report_and_the_report_until_quiet() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let fmt = Iperf2Format::sender(None);
        let report = ServerReport {
            total_bytes: 42,
            datagrams: 3,
            ..ServerReport::default()
        };
        let receiver = std::thread::spawn(move || {
            let mut buf = [0u8; 100];
            b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            // Ignore the first FIN: the sender must retry.
            let n = b.recv(&mut buf).unwrap();
            let first = DatagramHeader::read(&buf[..n], true).unwrap().seq;
            let n = b.recv(&mut buf).unwrap();
            let second = DatagramHeader::read(&buf[..n], true).unwrap().seq;
            let quiet = answer_fin(&b, &report.encode());
            (first, second, quiet)
        });
        let out = send_fin(&a, &fmt, &[0u8; 100], 4, true, &|| false);
        assert_eq!(out, FinOutcome::Report(ServerReport::decode(&report.encode()).unwrap()));
        let (first, second, quiet) = receiver.join().unwrap();
        assert_eq!((first, second), (-4, -5));
        assert!(quiet);
    }
}
