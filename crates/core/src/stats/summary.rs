//! The end of a test: this host's results for the iperf3 exchange, the
//! summary (paired with the peer's results when there are any), and each
//! stream's whole-test line as this host saw it.

use std::time::Instant;

use super::counters::Snapshot;
use super::interval::{bounceback_sample, pairs, sum_samples, udp_sample};
use super::stream::{StreamRole, StreamStats};
use super::{TestStats, advice, pct, rate};
use crate::config::Protocol;
use crate::events::*;
use wirespeed_proto::iperf3::{Results, StreamResult, TcpEcnResult};

impl TestStats {
    /// This host's results for the exchange.
    pub fn local_results(&self, now: Instant, congestion: Option<String>) -> Results {
        let c = self.cpu(now);
        let any_sender = self.streams.iter().any(|s| s.role == StreamRole::Send);
        let sender_has_retransmits = if !any_sender {
            -1
        } else if self
            .streams
            .iter()
            .any(|s| s.role == StreamRole::Send && s.has_retransmits())
        {
            1
        } else {
            0
        };
        let udp = self.protocol == Protocol::Udp;
        let streams = self
            .streams
            .iter()
            .map(|s| {
                let snap = s.counters.snapshot();
                let recv = s.role == StreamRole::Recv;
                StreamResult {
                    id: s.id as i64,
                    bytes: snap.bytes.saturating_sub(s.base.bytes),
                    retransmits: if recv { -1 } else { s.retransmits_total().unwrap_or(-1) },
                    jitter: if recv { s.counters.jitter() } else { 0.0 },
                    errors: if recv { snap.lost } else { 0 },
                    omitted_errors: Some(if recv { s.base.lost } else { 0 }),
                    packets: snap.packets,
                    omitted_packets: Some(s.base.packets),
                    start_time: 0.0,
                    end_time: self.stream_secs(s),
                    out_of_order: (recv && udp).then(|| snap.ooo - s.base.ooo),
                    duplicates: (recv && udp).then(|| snap.dups - s.base.dups),
                    ports: stream_ports(s),
                    omitted_bytes: self.omitted.then_some(s.base.bytes),
                    ecn: udp
                        .then(|| s.ecn_sample(&snap, &s.base))
                        .flatten()
                        .map(|e| (e.sent, e.counts)),
                    tcp_ecn: (self.protocol == Protocol::Tcp)
                        .then(|| s.tcp_ecn_total())
                        .flatten()
                        .map(|e| TcpEcnResult {
                            negotiated: e.negotiated,
                            seen: e.seen,
                            acked_under_ece: e.acked_under_ece,
                        }),
                }
            })
            .collect();
        Results {
            cpu_util_total: c.total,
            cpu_util_user: c.user,
            cpu_util_system: c.system,
            sender_has_retransmits,
            congestion_used: congestion,
            streams,
            server_output_text: None,
            server_output_json: None,
            receiver_drained: true,
        }
    }

    /// The final report. `peer` is the other side's results (absent on a
    /// server, which prints before the exchange, and in iperf 2).
    pub fn summary(&self, now: Instant, peer: Option<&Results>, local_congestion: Option<String>) -> Summary {
        let peer_has_retr = peer.is_some_and(|p| p.sender_has_retransmits == 1);
        let streams: Vec<StreamSummary> = self
            .streams
            .iter()
            .map(|s| self.stream_summary(s, peer, peer_has_retr))
            .collect();
        let reverse_dir = |s: &&StreamSummary| RoleTag::is_reverse(s.role) || s.connect_back;
        let (rev, fwd): (Vec<&StreamSummary>, Vec<&StreamSummary>) = streams.iter().partition(reverse_dir);
        let forward = direction_sums(&fwd, self.protocol);
        let reverse = (!rev.is_empty()).then(|| direction_sums(&rev, self.protocol));
        let local_sends = self.streams.iter().any(|s| s.role == StreamRole::Send);
        let local_receives = self.streams.iter().any(|s| s.role == StreamRole::Recv);
        let local_has_retr = self.streams.iter().any(|s| s.has_retransmits());
        let c = self.cpu(now);
        let cpu = CpuUtil {
            host_total: c.total,
            host_user: c.user,
            host_system: c.system,
            remote_total: peer.map(|p| p.cpu_util_total).unwrap_or(0.0),
            remote_user: peer.map(|p| p.cpu_util_user).unwrap_or(0.0),
            remote_system: peer.map(|p| p.cpu_util_system).unwrap_or(0.0),
        };
        let peer_cong = peer.and_then(|p| p.congestion_used.clone());
        let (snd_cong, rcv_cong) = if self.protocol != Protocol::Tcp {
            (None, None)
        } else if local_sends && local_receives {
            (local_congestion.clone(), peer_cong.or(local_congestion))
        } else if local_sends {
            (local_congestion, peer_cong)
        } else {
            (peer_cong, local_congestion)
        };
        let advice = self.window_advice(&streams, c.total);
        Summary {
            protocol: self.protocol,
            advice,
            streams,
            forward,
            reverse,
            cpu,
            sender_tcp_congestion: snd_cong,
            receiver_tcp_congestion: rcv_cong,
            has_retransmits: self.protocol == Protocol::Tcp && (local_has_retr || peer_has_retr),
            local_sends,
            local_receives,
            local: self.local_totals(),
            latency: None,
            quic: None,
        }
    }

    fn stream_summary(&self, s: &StreamStats, peer: Option<&Results>, peer_has_retr: bool) -> StreamSummary {
        let snap = s.counters.snapshot();
        let dur = self.stream_secs(s);
        let local_bytes = snap.bytes.saturating_sub(s.base.bytes);
        // A QUIC test's streams share one connection's ports: they pair
        // by id, which both ends give in the order the client opened them.
        let ports = stream_ports(s).filter(|_| self.protocol != Protocol::Quic);
        let pr = peer.and_then(|p| p.stream_for(s.id, ports));
        let peer_dur = pr.map(|r| r.end_time - r.start_time).unwrap_or(dur);
        let peer_bytes = pr.map(|r| r.bytes).unwrap_or(0);
        let local_sender = s.role == StreamRole::Send;
        let local = Totals {
            start: 0.0,
            end: dur,
            seconds: dur,
            bytes: local_bytes,
            bits_per_second: rate(local_bytes, dur),
            retransmits: if local_sender { s.retransmits_total() } else { None },
            sender: local_sender,
            omitted_bytes: self.omitted.then_some(s.base.bytes),
        };
        let remote = Totals {
            start: 0.0,
            end: peer_dur,
            seconds: dur,
            bytes: peer_bytes,
            bits_per_second: rate(peer_bytes, peer_dur),
            retransmits: if !local_sender && peer_has_retr {
                pr.map(|r| r.retransmits)
            } else {
                None
            },
            sender: local_sender,
            omitted_bytes: pr.and_then(|r| r.omitted_bytes),
        };
        let (sender, receiver) = if local_sender { (local, remote) } else { (remote, local) };
        let udp = (self.protocol == Protocol::Udp).then(|| udp_totals(s, peer, pr));
        StreamSummary {
            socket: s.socket,
            id: s.id,
            role: s.tag,
            local_sender,
            sender,
            receiver,
            tcp: s.tcp_totals(),
            udp,
            tcp_ecn: s.tcp_ecn_total(),
            peer_tcp_ecn: (self.protocol == Protocol::Tcp)
                .then(|| pr.and_then(|r| peer_tcp_ecn(r, local_sender)))
                .flatten(),
            peer_known: peer.is_some(),
            connect_back: s.meta.connect_back,
        }
    }

    /// Every stream's whole-test line as this host saw it, their sum and
    /// full-duplex pairs.
    fn local_totals(&self) -> LocalTotals {
        let streams: Vec<StreamSample> = (0..self.streams.len())
            .filter_map(|i| self.stream_line(i, false))
            .collect();
        let end = streams.iter().map(|f| f.end).fold(0.0, f64::max);
        let refs: Vec<&StreamSample> = streams.iter().collect();
        let sum = sum_samples(&refs, 0, 0.0, end);
        let pairs = pairs(&streams);
        LocalTotals { streams, sum, pairs }
    }

    /// Stream `i`'s whole-test line: what a UDP receiver reports to its
    /// sender as soon as the sender's end-of-stream datagram ended it
    /// (`early`: mid-test, the line runs to the stream's own end).
    pub fn stream_total(&self, i: usize) -> Option<StreamSample> {
        self.stream_line(i, true)
    }

    fn stream_line(&self, i: usize, early: bool) -> Option<StreamSample> {
        let s = self.streams.get(i)?;
        let snap = s.counters.snapshot();
        let mut bytes = snap.bytes.saturating_sub(s.base.bytes);
        let mut dur = self.stream_secs(s);
        if early && let Some(e) = s.counters.ended(self.epoch) {
            dur = self.elapsed(e);
        }
        let detail = s.meta.detail.as_ref();
        let tcp = s.tcp_now();
        let udp = self.protocol == Protocol::Udp;
        let histogram = match detail.and_then(|d| d.histogram.as_ref()) {
            Some(h) if s.trip_times() => Some(super::histogram::HistogramView::default().sample(h, true)),
            _ => None,
        };
        let mut extras = Enhanced {
            calls: snap.calls.saturating_sub(s.base.calls),
            errors: snap.errors.saturating_sub(s.base.errors),
            read_bins: (s.role == StreamRole::Recv && !udp)
                .then(|| detail.map(|d| d.bins()))
                .flatten(),
            latency: detail
                .filter(|d| d.trip_times())
                .map(|d| d.latency.total().stats().unwrap_or_default()),
            histogram,
            frames: s.frame_total(),
            ..Enhanced::default()
        };
        let udp = udp.then(|| {
            let lat = extras.latency.take();
            let mut u = udp_sample(s.role, &snap, &s.base, s.counters.jitter(), dur, lat);
            u.ecn = s.ecn_sample(&snap, &s.base);
            u.l4s = s.l4s_sample();
            if s.role == StreamRole::Send {
                let sent = snap.packets - s.base.packets;
                u.sent = Some(sent);
                if self.presentation.fin_datagram {
                    // The end-of-stream datagram: a full-size datagram the
                    // receiver counts as data, so both ends' totals agree.
                    bytes += bytes.checked_div(sent.max(0) as u64).unwrap_or(0);
                    u.sent = Some(sent + 1);
                }
            }
            u
        });
        if let Some(bb) = s.meta.bounceback.as_ref().filter(|b| !b.echo) {
            let (w, owd) = bb.total();
            let (retransmits, tcp) = s.tcp_fd.map_or((0, None), |fd| {
                wirespeed_sys::socket::tcp_info_raw(fd)
                    .map_or((0, None), |i| (i.total_retrans, Some((i.cwnd_bytes(), i.rtt))))
            });
            let mut b = bounceback_sample(&w, retransmits, tcp);
            b.owd = owd.map(|w| OneWayDelays {
                to: w[0].stats().unwrap_or_default(),
                from: w[1].stats().unwrap_or_default(),
                asymmetry: w[2].stats().unwrap_or_default(),
            });
            extras.bounceback = Some(b);
            extras.histogram = Some(super::histogram::HistogramView::default().sample(&bb.histogram, true));
        }
        Some(s.sample((0.0, dur), bytes, tcp, udp, extras))
    }

    /// Window advice from this host's TCP senders (what TCP_INFO says held
    /// them back, with the delivered rate).
    fn window_advice(&self, summaries: &[StreamSummary], cpu_percent: f64) -> Option<WindowAdvice> {
        if self.protocol != Protocol::Tcp {
            return None;
        }
        let senders: Vec<(&StreamStats, &StreamSummary)> = self
            .streams
            .iter()
            .zip(summaries)
            .filter(|(s, _)| s.role == StreamRole::Send && s.retrans_known && s.rtt_n > 0)
            .collect();
        if senders.is_empty() {
            return None;
        }
        // The delivered rate: the receiver's count when the peer told it.
        fn delivered(ss: &StreamSummary) -> &Totals {
            if ss.peer_known && ss.receiver.bytes > 0 {
                &ss.receiver
            } else {
                &ss.sender
            }
        }
        let bytes: u64 = senders.iter().map(|(_, ss)| delivered(ss).bytes).sum();
        let secs = senders.iter().map(|(_, ss)| delivered(ss).end).fold(0.0, f64::max);
        let elapsed = senders.iter().map(|(s, _)| self.stream_secs(s)).fold(0.0, f64::max);
        let sum = |k: usize| -> u64 {
            senders
                .iter()
                .map(|(s, _)| s.limits[k].saturating_sub(s.base_limits[k]))
                .sum()
        };
        let totals: Vec<TcpTotals> = senders.iter().filter_map(|(s, _)| s.tcp_totals()).collect();
        let input = advice::AdviceInput {
            streams: senders.len() as u32,
            bits_per_second: rate(bytes, secs),
            elapsed_us: (elapsed * 1e6) as u64,
            rtt_us: totals.iter().map(|t| t.mean_rtt).sum::<u64>() / totals.len().max(1) as u64,
            min_rtt_us: senders
                .iter()
                .map(|(s, _)| s.min_rtt as u64)
                .filter(|r| *r > 0)
                .min()
                .unwrap_or(0),
            busy_us: sum(0),
            rwnd_limited_us: sum(1),
            sndbuf_limited_us: sum(2),
            peer_window: totals.iter().map(|t| t.max_snd_wnd).max().unwrap_or(0),
            send_buffer: senders
                .first()
                .and_then(|(s, _)| s.tcp_fd)
                .and_then(|fd| wirespeed_sys::socket::send_buffer_raw(fd).ok())
                .unwrap_or(0),
            target_bits_per_second: 0.0,
            cpu_percent,
            // The CPUs this process may run on (its affinity, -A).
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        };
        advice::advise(&input)
    }
}

/// The peer's kernel's view of a TCP stream, from its results. A count of
/// segments acked under ECE is the sender's alone, and no more than the
/// bytes it sent (a segment carries at least one): otherwise it is not
/// believed, and left out as unknown.
fn peer_tcp_ecn(r: &StreamResult, local_sender: bool) -> Option<TcpEcn> {
    let e = r.tcp_ecn?;
    Some(TcpEcn {
        negotiated: e.negotiated,
        seen: e.seen,
        acked_under_ece: e.acked_under_ece.filter(|n| !local_sender && *n <= r.bytes),
    })
}

/// A stream's (local, remote) ports, when its addresses are known.
fn stream_ports(s: &StreamStats) -> Option<(u16, u16)> {
    s.meta.addrs.as_ref().map(|((_, l), (_, r))| (*l, *r))
}

/// A UDP stream's end-of-test numbers, with the peer's when known.
fn udp_totals(s: &StreamStats, peer: Option<&Results>, pr: Option<&StreamResult>) -> UdpTotals {
    let snap = s.counters.snapshot();
    if s.role == StreamRole::Send {
        let sent = snap.packets - s.base.packets;
        // A pre-3.14 peer does not say what it lost during the omit
        // period; without one its totals are exact.
        let omitted_here = s.base.packets;
        let (mut packets, mut lost, jitter) = match pr {
            Some(r) => (
                r.packets - r.omitted_packets.unwrap_or(omitted_here),
                match r.omitted_errors {
                    Some(oe) => Some(r.errors - oe),
                    None if omitted_here == 0 || r.errors == 0 => Some(r.errors),
                    None => None,
                },
                r.jitter,
            ),
            None => (0, Some(0), 0.0),
        };
        // A receiver that drained never saw the datagrams after its
        // highest one: they were lost too. Counted from the receiver's own
        // omit boundary when it says where that was (sequence numbers are
        // the same at both ends; the two clocks ending the omit period are
        // a control message apart).
        let base = pr
            .and_then(|r| r.omitted_packets)
            .filter(|b| *b <= snap.packets)
            .unwrap_or(s.base.packets);
        let sent_after_base = snap.packets - base;
        if peer.is_some_and(|p| p.receiver_drained) && sent_after_base > packets {
            lost = lost.map(|l| l + (sent_after_base - packets));
            packets = sent_after_base;
        }
        return UdpTotals {
            jitter_ms: jitter * 1000.0,
            lost,
            packets,
            sent_packets: sent,
            lost_percent: pct(lost.unwrap_or(0), packets),
            // What the receiver counted, when it is a wirespeed end.
            out_of_order: pr.and_then(|r| r.out_of_order).unwrap_or(0),
            duplicates: pr.and_then(|r| r.duplicates).unwrap_or(0),
            ecn: sender_ecn(s, &snap, pr),
            l4s: s.l4s_sample(),
        };
    }
    let mut packets = snap.packets - s.base.packets;
    let mut lost = snap.lost - s.base.lost;
    // A pre-3.14 sender does not say how many it sent during the omit
    // period; the highest sequence seen by then is the nearest count.
    let sent = pr
        .map(|r| r.packets - r.omitted_packets.unwrap_or(s.base.packets))
        .unwrap_or(packets);
    let sent_exact = pr.is_some_and(|r| r.omitted_packets.is_some() || s.base.packets == 0);
    // This receiver drained: what the peer sent past the highest
    // datagram seen here was lost on the way. Counted past this end's omit
    // boundary (the sender's may be a control message later or earlier).
    let sent_after_base = pr.map_or(packets, |r| r.packets.saturating_sub(s.base.packets));
    if sent_exact && sent_after_base > packets {
        lost += sent_after_base - packets;
        packets = sent_after_base;
    }
    UdpTotals {
        jitter_ms: s.counters.jitter() * 1000.0,
        lost: Some(lost),
        packets,
        sent_packets: sent,
        lost_percent: pct(lost, packets),
        out_of_order: snap.ooo - s.base.ooo,
        duplicates: snap.dups - s.base.dups,
        ecn: receiver_ecn(s, &snap, pr, sent),
        l4s: s.l4s_sample(),
    }
}

/// A sending stream's ECN totals: what it set and sent, and what arrived
/// at the peer when a wirespeed peer said. A peer claiming more arrivals
/// than datagrams sent (duplicates aside) is not believed.
fn sender_ecn(s: &StreamStats, snap: &Snapshot, pr: Option<&StreamResult>) -> Option<EcnTotals> {
    let mine = s.ecn_sample(snap, &s.base);
    let claimed = pr.and_then(|r| r.ecn).map(|(_, c)| c);
    if mine.is_none() && !claimed.is_some_and(|c| c.any_ecn()) {
        return None;
    }
    let sent = s.meta.ecn_sent;
    // Every datagram sent, the omit period's too: the two ends' omit
    // boundaries are a control message apart.
    let most = (snap.packets.max(0) as u64).saturating_add(pr.and_then(|r| r.duplicates).unwrap_or(0).max(0) as u64);
    let (arrived, impossible) = match claimed {
        Some(c) if c.total() > most || c.ce > most => (None, Some(c)),
        c => (c, None),
    };
    Some(EcnTotals {
        sent,
        sent_packets: Some((snap.packets - s.base.packets).max(0) as u64),
        arrived,
        verdict: sent.zip(arrived).map(|(e, a)| EcnVerdict::judge(e, &a)),
        impossible,
        l4s: s.meta.l4s,
    })
}

/// A receiving stream's ECN totals: what arrived here, and what the sender
/// set (its dialect's word, or a wirespeed peer's own).
fn receiver_ecn(s: &StreamStats, snap: &Snapshot, pr: Option<&StreamResult>, sent_packets: i64) -> Option<EcnTotals> {
    let peer_sent = pr.and_then(|r| r.ecn).and_then(|(e, _)| e);
    let mine = s.ecn_sample(snap, &s.base);
    if mine.is_none() && !peer_sent.is_some_and(|e| e != Ecn::NotEct) {
        return None;
    }
    let arrived = EcnCounts::from_field(snap.ecn).minus(&EcnCounts::from_field(s.base.ecn));
    let sent = peer_sent.or(s.meta.ecn_sent);
    Some(EcnTotals {
        sent,
        sent_packets: pr.map(|_| sent_packets.max(0) as u64),
        arrived: Some(arrived),
        verdict: sent.map(|e| EcnVerdict::judge(e, &arrived)),
        impossible: None,
        l4s: s.meta.l4s,
    })
}

/// The ECN totals of several streams: in play if in any stream.
fn sum_ecn_totals<'a>(each: impl Iterator<Item = Option<&'a EcnTotals>>) -> Option<EcnTotals> {
    let all: Vec<&EcnTotals> = each.flatten().collect();
    let first = all.first()?;
    let sent = first.sent.filter(|s| all.iter().all(|e| e.sent == Some(*s)));
    let sum = |f: &dyn Fn(&EcnTotals) -> Option<EcnCounts>| -> Option<EcnCounts> {
        all.iter()
            .map(|e| f(e))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.iter().fold(EcnCounts::default(), |a, c| a.plus(c)))
    };
    let arrived = sum(&|e| e.arrived);
    let impossible = all.iter().filter_map(|e| e.impossible).reduce(|a, c| a.plus(&c));
    Some(EcnTotals {
        sent,
        sent_packets: all.iter().map(|e| e.sent_packets).sum(),
        arrived,
        verdict: sent.zip(arrived).map(|(e, a)| EcnVerdict::judge(e, &a)),
        impossible,
        l4s: all.iter().any(|e| e.l4s),
    })
}

fn direction_sums(streams: &[&StreamSummary], protocol: Protocol) -> DirectionSums {
    let sum_totals = |pick: &dyn Fn(&StreamSummary) -> &Totals| {
        let bytes: u64 = streams.iter().map(|s| pick(s).bytes).sum();
        let end = streams.iter().map(|s| pick(s).end).fold(0.0, f64::max);
        let retr: Option<i64> = if streams.iter().all(|s| pick(s).retransmits.is_some()) && !streams.is_empty() {
            Some(streams.iter().filter_map(|s| pick(s).retransmits).sum())
        } else {
            None
        };
        let omitted = streams
            .iter()
            .map(|s| pick(s).omitted_bytes)
            .collect::<Option<Vec<u64>>>();
        Totals {
            start: 0.0,
            end,
            seconds: end,
            bytes,
            bits_per_second: rate(bytes, end),
            retransmits: retr,
            sender: streams.first().map(|s| s.local_sender).unwrap_or(true),
            omitted_bytes: omitted.filter(|o| !o.is_empty()).map(|o| o.iter().sum()),
        }
    };
    let sent = sum_totals(&|s: &StreamSummary| &s.sender);
    let received = sum_totals(&|s: &StreamSummary| &s.receiver);
    let udp = (protocol == Protocol::Udp).then(|| {
        let us: Vec<&UdpTotals> = streams.iter().filter_map(|s| s.udp.as_ref()).collect();
        let n = us.len().max(1) as f64;
        let packets: i64 = us.iter().map(|u| u.packets).sum();
        let lost = if us.iter().all(|u| u.lost.is_some()) {
            Some(us.iter().filter_map(|u| u.lost).sum())
        } else {
            None
        };
        UdpTotals {
            jitter_ms: us.iter().map(|u| u.jitter_ms).sum::<f64>() / n,
            lost,
            packets,
            sent_packets: us.iter().map(|u| u.sent_packets).sum(),
            lost_percent: pct(lost.unwrap_or(0), packets),
            out_of_order: us.iter().map(|u| u.out_of_order).sum(),
            duplicates: us.iter().map(|u| u.duplicates).sum(),
            ecn: sum_ecn_totals(us.iter().map(|u| u.ecn.as_ref())),
            l4s: L4sSample::sum(us.iter().filter_map(|u| u.l4s.as_ref())),
        }
    });
    let tcp = protocol == Protocol::Tcp;
    DirectionSums {
        role: streams.first().and_then(|s| s.role),
        sent,
        received,
        udp,
        tcp_ecn_sent: tcp
            .then(|| TcpEcnSum::of(streams.iter().filter_map(|s| s.sender_tcp_ecn())))
            .flatten(),
        tcp_ecn_received: tcp
            .then(|| TcpEcnSum::of(streams.iter().filter_map(|s| s.receiver_tcp_ecn())))
            .flatten(),
    }
}
