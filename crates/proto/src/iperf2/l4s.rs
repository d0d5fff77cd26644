//! iperf 2.2.1's UDP L4S exchange (`--udp-l4s`, docs/protocols.md "iperf 2
//! UDP L4S"), sans-IO: the three fields a sender stamps into each datagram,
//! the 28-byte ack a receiver answers with, the receiver's cumulative
//! counts behind it, and a scalable rate controller for the sender.
//!
//! The datagram is an ordinary iperf 2 UDP datagram whose settings carry
//! `UDPTESTS | EXTEND` and the upper flag 0x2000. Its sender timestamp,
//! echoed timestamp and L4S sequence number sit at bytes 52, 56 and 60
//! (over the settings' version words and TOS, which an L4S datagram
//! therefore does not carry). Times are microseconds on each end's own
//! clock, 32 bits, wrapping; counts are 32 bits, wrapping.

use super::flags::{self, upper};
use super::{be16, be32, put16, put32};
use std::fmt;

/// Where the sender's timestamp sits.
pub const SENDER_TS_AT: usize = 52;
/// Where the timestamp echoed back to the sender sits.
pub const ECHOED_TS_AT: usize = 56;
/// Where the L4S sequence number (1, 2, ... per datagram sent) sits.
pub const SEQNO_AT: usize = 60;
/// The shortest datagram that carries the fields.
pub const FORWARD_LEN: usize = 64;
/// An ack's length.
pub const ACK_LEN: usize = 28;
/// The ack's flag: the receiver saw a datagram arrive neither ECT(1) nor
/// CE (the field was bleached or rewritten); the sender stops marking.
pub const ECN_ERR: u16 = 0x0001;
/// The smallest datagram 2.2.1's sender sends (its `PRAGUE_MINMTU`).
pub const MIN_DATAGRAM: usize = 150;

/// Why bytes are not what was expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4sError {
    /// Fewer bytes than the layout needs.
    Short {
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        got: usize,
    },
    /// A datagram whose settings do not announce L4S.
    NotL4s,
}

impl fmt::Display for L4sError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            L4sError::Short { need, got } => write!(f, "L4S field too short ({got} bytes, {need} needed)"),
            L4sError::NotL4s => f.write_str("datagram does not announce L4S"),
        }
    }
}

impl std::error::Error for L4sError {}

fn need(d: &[u8], n: usize) -> Result<(), L4sError> {
    if d.len() < n {
        return Err(L4sError::Short { need: n, got: d.len() });
    }
    Ok(())
}

/// Does a datagram's settings block announce L4S? (The flags word at 16
/// has `UDPTESTS` and `EXTEND`; the upper flags at 48 have 0x2000, a bit
/// TCP headers use for periodic bursts.)
pub fn announces(d: &[u8]) -> bool {
    d.len() >= FORWARD_LEN
        && be32(d, 16) & (flags::UDPTESTS | flags::EXTEND) == flags::UDPTESTS | flags::EXTEND
        && be16(d, 48) & upper::UDPL4S != 0
}

/// The L4S fields of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Forward {
    /// The sender's clock when it sent the datagram, µs.
    pub sender_ts: u32,
    /// The receiver's last timestamp, advanced by how long the sender
    /// held it (0 before any ack).
    pub echoed_ts: u32,
    /// 1 for the first datagram sent, then one more each.
    pub seqno: u32,
}

impl Forward {
    /// The fields of `d`.
    pub fn decode(d: &[u8]) -> Result<Forward, L4sError> {
        need(d, FORWARD_LEN)?;
        Ok(Forward {
            sender_ts: be32(d, SENDER_TS_AT),
            echoed_ts: be32(d, ECHOED_TS_AT),
            seqno: be32(d, SEQNO_AT),
        })
    }

    /// Writes the fields into `d`.
    pub fn stamp(&self, d: &mut [u8]) -> Result<(), L4sError> {
        need(d, FORWARD_LEN)?;
        put32(d, SENDER_TS_AT, self.sender_ts);
        put32(d, ECHOED_TS_AT, self.echoed_ts);
        put32(d, SEQNO_AT, self.seqno);
        Ok(())
    }
}

/// A receiver's ack: its counts since the flow began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ack {
    /// A datagram arrived neither ECT(1) nor CE.
    pub ecn_error: bool,
    /// The receiver's clock when it sent the ack, µs.
    pub rx_ts: u32,
    /// The sender's newest timestamp, advanced by how long the receiver
    /// held it: the sender's now minus this is the round trip.
    pub echoed_ts: u32,
    /// Datagrams received.
    pub received: u32,
    /// Of those, arrived CE.
    pub ce: u32,
    /// Datagrams missing from the sequence (goes down again when a late
    /// one arrives).
    pub lost: u32,
}

impl Ack {
    /// The 28 bytes on the wire.
    pub fn encode(&self) -> [u8; ACK_LEN] {
        let mut b = [0u8; ACK_LEN];
        put16(&mut b, 0, if self.ecn_error { ECN_ERR } else { 0 });
        put32(&mut b, 4, self.rx_ts);
        put32(&mut b, 8, self.echoed_ts);
        put32(&mut b, 12, self.received);
        put32(&mut b, 16, self.ce);
        put32(&mut b, 20, self.lost);
        b
    }

    /// An ack from its bytes (exactly [`ACK_LEN`]: a longer datagram is
    /// something else, such as the server's end-of-test report).
    pub fn decode(b: &[u8]) -> Result<Ack, L4sError> {
        need(b, ACK_LEN)?;
        if b.len() != ACK_LEN {
            return Err(L4sError::NotL4s);
        }
        Ok(Ack {
            ecn_error: be16(b, 0) & ECN_ERR != 0,
            rx_ts: be32(b, 4),
            echoed_ts: be32(b, 8),
            received: be32(b, 12),
            ce: be32(b, 16),
            lost: be32(b, 20),
        })
    }
}

/// What a receiver counts to ack: datagrams, CE marks, the gaps in the
/// L4S sequence, whether any arrived neither ECT(1) nor CE, and the
/// sender's newest timestamp to echo.
#[derive(Debug, Clone, Copy, Default)]
pub struct Receiver {
    received: u32,
    ce: u32,
    lost: u32,
    ecn_error: bool,
    /// The sender's newest timestamp and our clock when it arrived.
    newest: Option<(u32, u32)>,
}

impl Receiver {
    /// Counts a datagram with fields `f` that arrived at `now_us` (our
    /// clock) with ECN field `ecn` (`None`: the platform does not say).
    pub fn on_datagram(&mut self, f: &Forward, ecn: Option<u8>, now_us: u32) {
        self.received = self.received.wrapping_add(1);
        // Datagrams before this one that are neither here nor counted lost.
        let skipped = f.seqno.wrapping_sub(self.received).wrapping_sub(self.lost) as i32;
        if skipped >= 0 {
            self.lost = self.lost.wrapping_add(skipped as u32);
        } else if self.lost > 0 {
            // A late one, counted lost before.
            self.lost -= 1;
        }
        match ecn.map(|e| e & 3) {
            Some(3) => self.ce = self.ce.wrapping_add(1),
            Some(1) | None => {}
            Some(_) => self.ecn_error = true,
        }
        // Older timestamps (reordered datagrams) are not echoed.
        if self
            .newest
            .is_none_or(|(ts, _)| f.sender_ts.wrapping_sub(ts) as i32 >= 0)
        {
            self.newest = Some((f.sender_ts, now_us));
        }
    }

    /// The ack to send at `now_us`.
    pub fn ack(&self, now_us: u32) -> Ack {
        Ack {
            ecn_error: self.ecn_error,
            rx_ts: now_us,
            echoed_ts: self
                .newest
                .map_or(0, |(ts, at)| ts.wrapping_add(now_us.wrapping_sub(at))),
            received: self.received,
            ce: self.ce,
            lost: self.lost,
        }
    }

    /// Datagrams received.
    pub fn received(&self) -> u32 {
        self.received
    }

    /// Datagrams that arrived CE.
    pub fn ce(&self) -> u32 {
        self.ce
    }
}

/// The sender's rate control: a scalable congestion control in the manner
/// of Prague (RFC 9330's L4S sender). Each virtual round trip (the
/// smoothed RTT, at least [`REF_RTT_US`]) it takes the share of CE marks
/// among what was acked in it, smooths that share into `alpha` (gain 1/16)
/// and, if any mark came in the round, cuts the window by `alpha / 2`;
/// a loss halves it, at most once a round. Every unmarked datagram acked
/// adds `packet / window` packets to the window (one packet a round trip),
/// scaled down by (srtt / vrtt)² below the reference RTT so short paths
/// do not grow faster than a 25 ms one. The rate is window / srtt, between
/// the floor and the ceiling. A datagram arriving without ECT(1) or CE
/// (the ack's error flag) makes the sender stop marking ECT(1).
#[derive(Debug, Clone)]
pub struct Prague {
    /// Congestion window, bytes.
    window: f64,
    /// Smoothed CE share.
    alpha: f64,
    /// Smoothed RTT, µs (0 before the first sample).
    srtt: f64,
    min_rate: f64,
    max_rate: f64,
    packet: f64,
    /// The counts of the newest ack taken.
    acked: Ack,
    /// Start of the current round: (our clock, received, CE at its start).
    round: (u32, u32, u32),
    /// A mark or loss already cut the window this round.
    cut_this_round: bool,
    ecn_error: bool,
}

/// The reference round trip of a scalable sender, µs.
pub const REF_RTT_US: f64 = 25_000.0;

impl Prague {
    /// A controller for datagrams of `packet` bytes, starting at
    /// `start_rate` bytes/s and held between `min_rate` and `max_rate`.
    pub fn new(packet: usize, start_rate: f64, min_rate: f64, max_rate: f64, now_us: u32) -> Prague {
        let packet = packet.max(MIN_DATAGRAM) as f64;
        Prague {
            window: (start_rate * REF_RTT_US / 1e6).max(2.0 * packet),
            alpha: 0.0,
            srtt: 0.0,
            min_rate,
            max_rate: max_rate.max(min_rate),
            packet,
            acked: Ack::default(),
            round: (now_us, 0, 0),
            cut_this_round: false,
            ecn_error: false,
        }
    }

    fn vrtt(&self) -> f64 {
        self.srtt.max(REF_RTT_US)
    }

    /// Takes an ack that arrived at `now_us` (our clock, as stamped in
    /// [`Forward::sender_ts`]). Returns false for an ack older than one
    /// already taken (its counts went down).
    pub fn on_ack(&mut self, a: &Ack, now_us: u32) -> bool {
        let newer = |n: u32, o: u32| n.wrapping_sub(o) as i32 >= 0;
        if !newer(a.received, self.acked.received) || !newer(a.ce, self.acked.ce) {
            return false;
        }
        if a.echoed_ts != 0 {
            let rtt = now_us.wrapping_sub(a.echoed_ts) as i32;
            if rtt >= 0 {
                let rtt = f64::from(rtt).max(1.0);
                if self.srtt == 0.0 {
                    // The first round trip: the window that keeps the
                    // rate so far over it.
                    self.window = self.rate() * rtt / 1e6;
                    self.srtt = rtt;
                } else {
                    self.srtt += (rtt - self.srtt) / 8.0;
                }
            }
        }
        let new_ce = a.ce.wrapping_sub(self.acked.ce);
        let new_rx = a.received.wrapping_sub(self.acked.received);
        let new_lost = a.lost.wrapping_sub(self.acked.lost) as i32;
        // Additive increase for every unmarked datagram acked.
        let unmarked = f64::from(new_rx.saturating_sub(new_ce));
        let scale = if self.srtt > 0.0 {
            (self.srtt / self.vrtt()).powi(2)
        } else {
            1.0
        };
        self.window += unmarked * self.packet * self.packet / self.window * scale;
        // A round ends after a virtual RTT: fold its CE share into alpha.
        if f64::from(now_us.wrapping_sub(self.round.0) as i32) >= self.vrtt() {
            let rx = a.received.wrapping_sub(self.round.1);
            if rx > 0 {
                let share = f64::from(a.ce.wrapping_sub(self.round.2)) / f64::from(rx);
                self.alpha += (share.min(1.0) - self.alpha) / 16.0;
            }
            self.round = (now_us, a.received, a.ce);
            self.cut_this_round = false;
        }
        if !self.cut_this_round {
            if new_lost > 0 {
                self.window /= 2.0;
                self.cut_this_round = true;
            } else if new_ce > 0 {
                // At least the newest round's share, so the first marks
                // of a flow (alpha still 0) are heard.
                let share = f64::from(new_ce) / f64::from(new_rx.max(1));
                let a2 = self.alpha.max(share.min(1.0) / 16.0);
                self.window *= 1.0 - a2 / 2.0;
                self.cut_this_round = true;
            }
        }
        let floor = self.min_rate * self.rtt_s();
        self.window = self.window.max(floor).max(2.0 * self.packet);
        self.window = self
            .window
            .min(self.max_rate * self.rtt_s().max(REF_RTT_US / 1e6) * 2.0);
        self.ecn_error |= a.ecn_error;
        self.acked = *a;
        true
    }

    fn rtt_s(&self) -> f64 {
        if self.srtt > 0.0 {
            self.srtt / 1e6
        } else {
            REF_RTT_US / 1e6
        }
    }

    /// Bytes per second to pace at now.
    pub fn rate(&self) -> f64 {
        (self.window / self.rtt_s()).clamp(self.min_rate, self.max_rate)
    }

    /// The congestion window, bytes.
    pub fn window(&self) -> f64 {
        self.window
    }

    /// The smoothed CE share (0..1).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The smoothed round trip, µs (0 before an ack carried one).
    pub fn srtt_us(&self) -> f64 {
        self.srtt
    }

    /// Datagrams that may be unacked: the window, at least two.
    pub fn window_packets(&self) -> u32 {
        ((self.window / self.packet).ceil() as u32).max(2)
    }

    /// The ECN field to send with: ECT(1), or Not-ECT once the receiver
    /// said the field does not arrive as sent.
    pub fn ecn(&self) -> u8 {
        if self.ecn_error { 0 } else { 1 }
    }

    /// The newest ack taken.
    pub fn acked(&self) -> Ack {
        self.acked
    }

    /// No ack came for a long time (a round trip of a second): start
    /// again from the floor, as after a timeout.
    pub fn on_timeout(&mut self) {
        self.window = (self.min_rate * REF_RTT_US / 1e6).max(2.0 * self.packet);
        self.alpha = 0.0;
        self.cut_this_round = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first datagram 2.2.1's `iperf -c 127.0.0.1 -p 15303 -u
    /// --udp-l4s -t 1` sent (its first 96 of 156 bytes, captured).
    const CAPTURED: &str = "000000026b0afefb00064e8d00000000680100a00000000100003bc70000000000000000ffffff9c0000000000000000200000000000000100000000000000010010000000000000000000000000000000000000000000000000000000000000";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn a_captured_datagram_announces_l4s_and_carries_its_fields() {
        let d = hex(CAPTURED);
        assert!(announces(&d));
        let f = Forward::decode(&d).unwrap();
        assert_eq!(
            f,
            Forward {
                sender_ts: 1,
                echoed_ts: 0,
                seqno: 1
            }
        );
        // A plain UDP client's settings (no 0x2000) do not.
        let mut plain = d.clone();
        plain[48] = 0;
        assert!(!announces(&plain));
        // Nor TCP-style flags without UDPTESTS.
        let mut tcp = d.clone();
        tcp[16] = 0x48;
        assert!(!announces(&tcp));
        assert!(!announces(&d[..63]));
    }

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        for n in 0..FORWARD_LEN {
            assert_eq!(
                Forward::decode(&vec![0u8; n]),
                Err(L4sError::Short {
                    need: FORWARD_LEN,
                    got: n
                })
            );
            assert!(Forward::default().stamp(&mut vec![0u8; n]).is_err());
        }
        for n in 0..ACK_LEN {
            assert!(Ack::decode(&vec![0xffu8; n]).is_err());
        }
        assert_eq!(Ack::decode(&[0u8; 128]), Err(L4sError::NotL4s));
    }

    #[test]
    fn stamp_then_decode() {
        let mut d = vec![0u8; 200];
        let f = Forward {
            sender_ts: 0xdead_beef,
            echoed_ts: 7,
            seqno: 42,
        };
        f.stamp(&mut d).unwrap();
        assert_eq!(&d[52..64], &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 7, 0, 0, 0, 42]);
        assert_eq!(Forward::decode(&d).unwrap(), f);
    }

    #[test]
    fn ack_layout_is_2_2_1s() {
        let a = Ack {
            ecn_error: true,
            rx_ts: 0x0102_0304,
            echoed_ts: 5,
            received: 100,
            ce: 7,
            lost: 3,
        };
        let b = a.encode();
        assert_eq!(
            b,
            [
                0, 1, 0, 0, 1, 2, 3, 4, 0, 0, 0, 5, 0, 0, 0, 100, 0, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0, 0
            ]
        );
        assert_eq!(Ack::decode(&b).unwrap(), a);
        assert!(!Ack::decode(&Ack::default().encode()).unwrap().ecn_error);
    }

    fn fwd(seqno: u32, ts: u32) -> Forward {
        Forward {
            sender_ts: ts,
            echoed_ts: 0,
            seqno,
        }
    }

    #[test]
    fn receiver_counts_marks_gaps_and_late_arrivals() {
        let mut r = Receiver::default();
        r.on_datagram(&fwd(1, 10), Some(1), 100);
        r.on_datagram(&fwd(2, 20), Some(3), 110);
        // 3 and 4 missing.
        r.on_datagram(&fwd(5, 50), Some(1), 140);
        let a = r.ack(150);
        assert_eq!((a.received, a.ce, a.lost, a.ecn_error), (3, 1, 2, false));
        // The sender's newest timestamp, advanced by the 10 µs held.
        assert_eq!(a.echoed_ts, 60);
        assert_eq!(a.rx_ts, 150);
        // 3 arrives late: one less lost; its older timestamp is not echoed.
        r.on_datagram(&fwd(3, 30), Some(3), 160);
        let a = r.ack(170);
        assert_eq!((a.received, a.ce, a.lost), (4, 2, 1));
        assert_eq!(a.echoed_ts, 80);
    }

    #[test]
    fn receiver_flags_a_bleached_or_classic_field() {
        for (ecn, err) in [
            (Some(0), true),
            (Some(2), true),
            (Some(1), false),
            (Some(3), false),
            (None, false),
        ] {
            let mut r = Receiver::default();
            r.on_datagram(&fwd(1, 1), ecn, 1);
            assert_eq!(r.ack(2).ecn_error, err, "{ecn:?}");
        }
    }

    #[test]
    fn receiver_counts_wrap_without_panic() {
        let mut r = Receiver::default();
        r.on_datagram(&fwd(u32::MAX, u32::MAX), Some(1), u32::MAX);
        r.on_datagram(&fwd(0, 5), Some(1), 3);
        let a = r.ack(4);
        assert_eq!(a.received, 2);
    }

    /// Acks for `n` datagrams of which `ce` were marked, `rtt` µs after.
    fn drive(p: &mut Prague, now: &mut u32, rx: &mut u32, ce_total: &mut u32, n: u32, ce: u32, rtt: u32) {
        for i in 0..n {
            *now += 1000;
            *rx += 1;
            if i < ce {
                *ce_total += 1;
            }
            let a = Ack {
                received: *rx,
                ce: *ce_total,
                echoed_ts: *now - rtt,
                rx_ts: 0,
                ..Ack::default()
            };
            assert!(p.on_ack(&a, *now));
        }
    }

    #[test]
    fn prague_grows_without_marks_and_cuts_in_proportion_to_them() {
        let (mut now, mut rx, mut ce) = (1u32, 0u32, 0u32);
        let mut p = Prague::new(1000, 1e6, 12_500.0, 1e9, now);
        let w0 = p.window();
        drive(&mut p, &mut now, &mut rx, &mut ce, 500, 0, 25_000);
        assert!(p.window() > w0, "additive increase: {} > {w0}", p.window());
        assert_eq!(p.alpha(), 0.0);
        let grown = p.window();
        // Every datagram marked for a while: alpha climbs towards 1, the
        // window comes down each round.
        drive(&mut p, &mut now, &mut rx, &mut ce, 2000, 2000, 25_000);
        assert!(p.alpha() > 0.5, "alpha {}", p.alpha());
        assert!(p.window() < grown / 4.0, "{} < {}", p.window(), grown / 4.0);
        // A light marking (1 in 10) settles alpha near 0.1.
        let mut q = p.clone();
        for _ in 0..200 {
            drive(&mut q, &mut now, &mut rx, &mut ce, 10, 1, 25_000);
        }
        assert!((q.alpha() - 0.1).abs() < 0.05, "alpha {}", q.alpha());
    }

    #[test]
    fn prague_halves_on_loss_once_a_round_and_stays_in_bounds() {
        let mut p = Prague::new(1000, 1e6, 12_500.0, 2e6, 1);
        let w = p.window();
        let a = Ack {
            received: 10,
            lost: 2,
            echoed_ts: 1,
            ..Ack::default()
        };
        assert!(p.on_ack(&a, 1001));
        assert!(p.window() < w * 0.6);
        let w1 = p.window();
        let a = Ack {
            received: 11,
            lost: 4,
            echoed_ts: 1001,
            ..Ack::default()
        };
        assert!(p.on_ack(&a, 1002));
        assert!(p.window() >= w1, "no second cut in the same round");
        // An older ack is refused.
        assert!(!p.on_ack(
            &Ack {
                received: 5,
                ..Ack::default()
            },
            1003
        ));
        assert!(p.rate() <= 2e6 && p.rate() >= 12_500.0);
        assert!(p.window_packets() >= 2);
    }

    #[test]
    fn prague_stops_marking_after_an_error_flag() {
        let mut p = Prague::new(1000, 1e6, 12_500.0, 1e9, 1);
        assert_eq!(p.ecn(), 1);
        p.on_ack(
            &Ack {
                received: 1,
                ecn_error: true,
                ..Ack::default()
            },
            2,
        );
        assert_eq!(p.ecn(), 0);
    }
}
