//! Counters, intervals and summaries.
//!
//! Data threads only bump [`StreamCounters`] (relaxed atomics on their own
//! cache line). The controller owns a [`TestStats`] and turns counter
//! snapshots into [`IntervalReport`]s and the final [`Summary`]; every number
//! a sink prints is computed here, once.

pub mod advice;
pub mod cpu;
pub mod flow;
pub mod histogram;
pub mod udp;

use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use crate::config::Protocol;
use crate::proto::iperf3::{Results, StreamResult};
use crate::report::event::*;
use crate::sys::socket::tcp_info_raw;

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
}

impl StreamCounters {
    /// Current jitter in seconds.
    pub fn jitter(&self) -> f64 {
        f64::from_bits(self.jitter_bits.load(Relaxed))
    }

    /// Publishes the jitter.
    pub fn set_jitter(&self, j: f64) {
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
    pub fn last_rx(&self, epoch: Instant) -> Option<Instant> {
        match self.last_rx_ns.load(Relaxed) {
            0 => None,
            ns => Some(epoch + std::time::Duration::from_nanos(ns)),
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            bytes: self.bytes.load(Relaxed),
            packets: self.packets.load(Relaxed) as i64,
            lost: self.lost.load(Relaxed),
            ooo: self.out_of_order.load(Relaxed) as i64,
            dups: self.duplicates.load(Relaxed) as i64,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Snapshot {
    bytes: u64,
    packets: i64,
    lost: i64,
    ooo: i64,
    dups: i64,
}

/// Does this host send or receive on a stream?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRole {
    /// This host writes.
    Send,
    /// This host reads.
    Recv,
}

/// A stream as the reporter sees it.
#[derive(Debug)]
pub struct StreamStats {
    /// Stream id (1, 3, 4, ...).
    pub id: u32,
    /// Printed `[  5]` number (the socket's fd).
    pub socket: i32,
    /// Send or receive.
    pub role: StreamRole,
    /// Bidir tag.
    pub tag: Option<RoleTag>,
    /// Counters shared with the data thread.
    pub counters: Arc<StreamCounters>,
    /// Descriptor for TCP_INFO (TCP only; kept open by the stream handle).
    pub tcp_fd: Option<RawFd>,
    last: Snapshot,
    base: Snapshot,
    last_retrans: u32,
    base_retrans: u32,
    tcp_totals: TcpTotals,
    rtt_sum: u64,
    rtt_n: u64,
    retrans_known: bool,
    /// TCP_INFO busy / rwnd-limited / sndbuf-limited µs at the last sample,
    /// and at the start (or the omit end), for the window advice.
    limits: [u64; 3],
    base_limits: [u64; 3],
    min_rtt: u32,
}

fn limit_times(i: &crate::sys::socket::TcpInfo) -> [u64; 3] {
    [i.busy_time_us, i.rwnd_limited_us, i.sndbuf_limited_us]
}

impl StreamStats {
    /// A new stream's statistics.
    pub fn new(
        id: u32,
        socket: i32,
        role: StreamRole,
        tag: Option<RoleTag>,
        counters: Arc<StreamCounters>,
        tcp_fd: Option<RawFd>,
    ) -> StreamStats {
        let (retrans, known, limits) = match (role, tcp_fd) {
            (StreamRole::Send, Some(fd)) => match tcp_info_raw(fd) {
                Ok(i) => (i.total_retrans, true, limit_times(&i)),
                Err(_) => (0, false, [0; 3]),
            },
            _ => (0, false, [0; 3]),
        };
        StreamStats {
            id,
            socket,
            role,
            tag,
            counters,
            tcp_fd,
            last: Snapshot::default(),
            base: Snapshot::default(),
            last_retrans: retrans,
            base_retrans: retrans,
            tcp_totals: TcpTotals {
                min_rtt: u64::MAX,
                ..TcpTotals::default()
            },
            rtt_sum: 0,
            rtt_n: 0,
            retrans_known: known,
            limits,
            base_limits: limits,
            min_rtt: 0,
        }
    }

    /// Whether this stream reports retransmits (a TCP sender with TCP_INFO).
    pub fn has_retransmits(&self) -> bool {
        self.retrans_known
    }

    /// Reads TCP_INFO. Every TCP stream feeds the end-of-test extremes (as
    /// iperf3 does, even for receivers); only senders report an interval sample.
    fn tcp_sample(&mut self) -> Option<TcpSample> {
        let info = tcp_info_raw(self.tcp_fd?).ok()?;
        let sending = self.role == StreamRole::Send && self.retrans_known;
        let retr = info.total_retrans.wrapping_sub(self.last_retrans) as i64;
        if sending {
            self.last_retrans = info.total_retrans;
            self.limits = limit_times(&info);
            if info.min_rtt > 0 && (self.min_rtt == 0 || info.min_rtt < self.min_rtt) {
                self.min_rtt = info.min_rtt;
            }
        }
        let s = TcpSample {
            retransmits: retr,
            snd_cwnd: info.cwnd_bytes(),
            snd_wnd: info.snd_wnd as u64,
            rtt: info.rtt as u64,
            rttvar: info.rttvar as u64,
            pmtu: info.pmtu as u64,
            reorder: info.reord_seen as i64,
        };
        let t = &mut self.tcp_totals;
        t.max_snd_cwnd = t.max_snd_cwnd.max(s.snd_cwnd);
        t.max_snd_wnd = t.max_snd_wnd.max(s.snd_wnd);
        t.max_rtt = t.max_rtt.max(s.rtt);
        t.min_rtt = t.min_rtt.min(s.rtt);
        t.reorder = s.reorder;
        self.rtt_sum += s.rtt;
        self.rtt_n += 1;
        sending.then_some(s)
    }

    /// Retransmits since the omit period ended.
    fn retransmits_total(&self) -> Option<i64> {
        self.retrans_known
            .then(|| self.last_retrans.wrapping_sub(self.base_retrans) as i64)
    }

    fn tcp_totals(&self) -> Option<TcpTotals> {
        if self.rtt_n == 0 {
            return None;
        }
        let mut t = self.tcp_totals;
        t.mean_rtt = self.rtt_sum / self.rtt_n;
        Some(t)
    }
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
    /// Stream start (reset when the omit period ends).
    start: Instant,
    last_sample: Instant,
    /// When the last sample was taken, seconds since `start`.
    end_secs: f64,
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
            start: now,
            last_sample: now,
            end_secs: 0.0,
            cpu: cpu::CpuMeter::start(now),
            epoch,
        }
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
    pub fn all_ended(&self) -> Option<Instant> {
        let mut last: Option<Instant> = None;
        for s in &self.streams {
            let e = s.counters.ended(self.epoch)?;
            last = Some(last.map_or(e, |l| l.max(e)));
        }
        last.map(|l| l.max(self.last_sample))
    }

    /// How long since any receiving stream last got data (for the receive
    /// idle timeout); `None` if this host receives nothing.
    pub fn rx_idle(&self, now: Instant) -> Option<std::time::Duration> {
        let recv: Vec<&StreamStats> = self.streams.iter().filter(|s| s.role == StreamRole::Recv).collect();
        if recv.is_empty() {
            return None;
        }
        let last = recv
            .iter()
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
            .map(|s| s.counters.bytes.load(Relaxed))
            .sum()
    }

    /// Takes an interval sample ending at `now`. `None` when the interval is
    /// too short to print (under 10 % of `interval` and carrying nothing).
    pub fn sample(&mut self, now: Instant, min_len: f64) -> Option<IntervalReport> {
        let start = self.last_sample.saturating_duration_since(self.start).as_secs_f64();
        let end = self.elapsed(now);
        let seconds = end - start;
        let omitted = self.omitting;
        let protocol = self.protocol;
        let mut streams = Vec::with_capacity(self.streams.len());
        let mut moved = 0u64;
        for s in &mut self.streams {
            let snap = s.counters.snapshot();
            let bytes = snap.bytes.saturating_sub(s.last.bytes);
            moved += bytes;
            let tcp = if protocol == Protocol::Tcp {
                s.tcp_sample()
            } else {
                None
            };
            let udp = (protocol == Protocol::Udp).then(|| {
                if s.role == StreamRole::Send {
                    UdpSample {
                        packets: snap.packets - s.last.packets,
                        ..UdpSample::default()
                    }
                } else {
                    let packets = snap.packets - s.last.packets;
                    let lost = snap.lost - s.last.lost;
                    UdpSample {
                        packets,
                        lost,
                        jitter_ms: s.counters.jitter() * 1000.0,
                        lost_percent: if packets > 0 {
                            100.0 * lost as f64 / packets as f64
                        } else {
                            0.0
                        },
                        out_of_order: snap.ooo - s.last.ooo,
                        duplicates: snap.dups - s.last.dups,
                    }
                }
            });
            s.last = snap;
            streams.push(StreamInterval {
                socket: s.socket,
                id: s.id,
                role: s.tag,
                sender: s.role == StreamRole::Send,
                start,
                end,
                seconds,
                bytes,
                bits_per_second: rate(bytes, seconds),
                omitted,
                tcp,
                udp,
            });
        }
        self.last_sample = now;
        self.end_secs = end;
        if seconds < min_len && moved == 0 {
            return None;
        }
        let (fwd, rev) = self.split_directions(&streams);
        let sum = sum_streams(&fwd, start, end, omitted);
        let sum_bidir_reverse = (!rev.is_empty()).then(|| sum_streams(&rev, start, end, omitted));
        Some(IntervalReport {
            streams,
            sum,
            sum_bidir_reverse,
        })
    }

    fn split_directions<'a>(
        &self,
        streams: &'a [StreamInterval],
    ) -> (Vec<&'a StreamInterval>, Vec<&'a StreamInterval>) {
        streams
            .iter()
            .partition(|s| !matches!(s.role, Some(RoleTag::RxC) | Some(RoleTag::TxS)))
    }

    /// Ends the omit period: counters so far become the baseline and the
    /// stream clock restarts.
    pub fn end_omit(&mut self, now: Instant) {
        self.omitting = false;
        for s in &mut self.streams {
            let snap = s.counters.snapshot();
            s.base = snap;
            s.last = snap;
            s.base_retrans = s.last_retrans;
            if let (StreamRole::Send, Some(fd)) = (s.role, s.tcp_fd)
                && let Ok(i) = tcp_info_raw(fd)
            {
                s.base_retrans = i.total_retrans;
                s.last_retrans = i.total_retrans;
                s.limits = limit_times(&i);
                s.base_limits = s.limits;
            }
            s.tcp_totals = TcpTotals {
                min_rtt: u64::MAX,
                ..TcpTotals::default()
            };
            s.rtt_sum = 0;
            s.rtt_n = 0;
        }
        self.start = now;
        self.last_sample = now;
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
        let streams = self
            .streams
            .iter()
            .map(|s| {
                let snap = s.counters.snapshot();
                StreamResult {
                    id: s.id as i64,
                    bytes: snap.bytes.saturating_sub(s.base.bytes),
                    retransmits: if s.role == StreamRole::Send {
                        s.retransmits_total().unwrap_or(-1)
                    } else {
                        -1
                    },
                    jitter: if s.role == StreamRole::Recv {
                        s.counters.jitter()
                    } else {
                        0.0
                    },
                    errors: if s.role == StreamRole::Recv { snap.lost } else { 0 },
                    omitted_errors: Some(if s.role == StreamRole::Recv { s.base.lost } else { 0 }),
                    packets: snap.packets,
                    omitted_packets: Some(s.base.packets),
                    start_time: 0.0,
                    end_time: self.stream_secs(s),
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
    /// server, which prints before the exchange).
    pub fn summary(&self, now: Instant, peer: Option<&Results>, local_congestion: Option<String>) -> Summary {
        let peer_has_retr = peer.is_some_and(|p| p.sender_has_retransmits == 1);
        let mut streams = Vec::new();
        for s in &self.streams {
            let snap = s.counters.snapshot();
            let dur = self.stream_secs(s);
            let local_bytes = snap.bytes.saturating_sub(s.base.bytes);
            let pr = peer.and_then(|p| p.streams.iter().find(|r| r.id == s.id as i64));
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
            };
            let (sender, receiver) = if local_sender { (local, remote) } else { (remote, local) };
            let udp = (self.protocol == Protocol::Udp).then(|| {
                if local_sender {
                    let sent = snap.packets - s.base.packets;
                    // A pre-3.14 peer does not say what it lost during the
                    // omit period; without one its totals are exact.
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
                    // A receiver that drained never saw the datagrams after
                    // its highest one: they were lost too.
                    if peer.is_some_and(|p| p.receiver_drained) && sent > packets {
                        lost = lost.map(|l| l + (sent - packets));
                        packets = sent;
                    }
                    UdpTotals {
                        jitter_ms: jitter * 1000.0,
                        lost,
                        packets,
                        sent_packets: sent,
                        lost_percent: pct(lost.unwrap_or(0), packets),
                        out_of_order: 0,
                        duplicates: 0,
                    }
                } else {
                    let mut packets = snap.packets - s.base.packets;
                    let mut lost = snap.lost - s.base.lost;
                    // A pre-3.14 sender does not say how many it sent during
                    // the omit period; the highest sequence seen by then is
                    // the nearest count there is.
                    let sent = pr
                        .map(|r| r.packets - r.omitted_packets.unwrap_or(s.base.packets))
                        .unwrap_or(packets);
                    let sent_exact = pr.is_some_and(|r| r.omitted_packets.is_some() || s.base.packets == 0);
                    // This receiver drained: what the peer sent past the
                    // highest datagram seen here was lost on the way.
                    if sent_exact && sent > packets {
                        lost += sent - packets;
                        packets = sent;
                    }
                    UdpTotals {
                        jitter_ms: s.counters.jitter() * 1000.0,
                        lost: Some(lost),
                        packets,
                        sent_packets: sent,
                        lost_percent: pct(lost, packets),
                        out_of_order: snap.ooo - s.base.ooo,
                        duplicates: snap.dups - s.base.dups,
                    }
                }
            });
            streams.push(StreamSummary {
                socket: s.socket,
                id: s.id,
                role: s.tag,
                local_sender,
                sender,
                receiver,
                tcp: s.tcp_totals(),
                udp,
                peer_known: peer.is_some(),
            });
        }
        let forward_tag = |st: &StreamSummary| !matches!(st.role, Some(RoleTag::RxC) | Some(RoleTag::TxS));
        let fwd: Vec<&StreamSummary> = streams.iter().filter(|s| forward_tag(s)).collect();
        let rev: Vec<&StreamSummary> = streams.iter().filter(|s| !forward_tag(s)).collect();
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
        }
    }
}

impl TestStats {
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
                .and_then(|fd| crate::sys::socket::get_int_option(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF).ok())
                .map(|b| b.max(0) as u64)
                .unwrap_or(0),
            target_bits_per_second: 0.0,
            cpu_percent,
        };
        advice::advise(&input)
    }
}

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

fn sum_streams(streams: &[&StreamInterval], start: f64, end: f64, omitted: bool) -> SumInterval {
    let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
    let seconds = end - start;
    let retransmits = if streams.iter().all(|s| s.tcp.is_some()) && !streams.is_empty() {
        Some(streams.iter().filter_map(|s| s.tcp.map(|t| t.retransmits)).sum())
    } else {
        None
    };
    let udp = if streams.iter().all(|s| s.udp.is_some()) && !streams.is_empty() {
        let n = streams.len() as f64;
        let packets: i64 = streams.iter().filter_map(|s| s.udp.map(|u| u.packets)).sum();
        let lost: i64 = streams.iter().filter_map(|s| s.udp.map(|u| u.lost)).sum();
        Some(UdpSample {
            packets,
            lost,
            jitter_ms: streams.iter().filter_map(|s| s.udp.map(|u| u.jitter_ms)).sum::<f64>() / n,
            lost_percent: pct(lost, packets),
            out_of_order: streams.iter().filter_map(|s| s.udp.map(|u| u.out_of_order)).sum(),
            duplicates: streams.iter().filter_map(|s| s.udp.map(|u| u.duplicates)).sum(),
        })
    } else {
        None
    };
    SumInterval {
        role: streams.first().and_then(|s| s.role),
        sender: streams.first().map(|s| s.sender).unwrap_or(true),
        start,
        end,
        seconds,
        bytes,
        bits_per_second: rate(bytes, seconds),
        retransmits,
        udp,
        omitted,
    }
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
        Totals {
            start: 0.0,
            end,
            seconds: end,
            bytes,
            bits_per_second: rate(bytes, end),
            retransmits: retr,
            sender: streams.first().map(|s| s.local_sender).unwrap_or(true),
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
        }
    });
    DirectionSums {
        role: streams.first().and_then(|s| s.role),
        sent,
        received,
        udp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stream(id: u32, role: StreamRole) -> (StreamStats, Arc<StreamCounters>) {
        let c = Arc::new(StreamCounters::default());
        (StreamStats::new(id, id as i32 + 4, role, None, c.clone(), None), c)
    }

    #[test]
    fn intervals_report_deltas_and_sums() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Send);
        let (b, cb) = stream(3, StreamRole::Send);
        let mut st = TestStats::new(vec![a, b], Protocol::Tcp, 2, false, t0, t0);
        ca.bytes.store(1000, Relaxed);
        cb.bytes.store(3000, Relaxed);
        let r = st.sample(t0 + Duration::from_secs(1), 0.1).unwrap();
        assert_eq!(r.streams[0].bytes, 1000);
        assert_eq!(r.sum.bytes, 4000);
        assert!((r.sum.bits_per_second - 32000.0).abs() < 1e-6);
        ca.bytes.store(1500, Relaxed);
        let r = st.sample(t0 + Duration::from_secs(2), 0.1).unwrap();
        assert_eq!(r.streams[0].bytes, 500);
        assert_eq!(r.streams[1].bytes, 0);
        assert_eq!(r.sum.start, 1.0);
        assert_eq!(r.sum.end, 2.0);
        // An empty sliver is not reported.
        assert!(st.sample(t0 + Duration::from_millis(2010), 0.1).is_none());
    }

    #[test]
    fn omit_resets_the_baseline() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Send);
        let mut st = TestStats::new(vec![a], Protocol::Tcp, 1, true, t0, t0);
        ca.bytes.store(5000, Relaxed);
        let r = st.sample(t0 + Duration::from_secs(1), 0.1).unwrap();
        assert!(r.streams[0].omitted);
        st.end_omit(t0 + Duration::from_secs(1));
        ca.bytes.store(7000, Relaxed);
        let r = st.sample(t0 + Duration::from_secs(2), 0.1).unwrap();
        assert!(!r.streams[0].omitted);
        assert_eq!(r.streams[0].start, 0.0);
        assert_eq!(r.streams[0].bytes, 2000);
        let res = st.local_results(t0 + Duration::from_secs(2), None);
        assert_eq!(res.streams[0].bytes, 2000);
    }

    #[test]
    fn summary_pairs_local_and_peer_numbers() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Send);
        let mut st = TestStats::new(vec![a], Protocol::Tcp, 1, false, t0, t0);
        ca.bytes.store(8_000_000, Relaxed);
        st.sample(t0 + Duration::from_secs(2), 0.1);
        let peer = Results {
            sender_has_retransmits: -1,
            streams: vec![StreamResult {
                id: 1,
                bytes: 8_000_000,
                retransmits: -1,
                jitter: 0.0,
                errors: 0,
                omitted_errors: Some(0),
                packets: 0,
                omitted_packets: Some(0),
                start_time: 0.0,
                end_time: 2.5,
            }],
            ..Results::default()
        };
        let s = st.summary(t0 + Duration::from_secs(2), Some(&peer), None);
        assert_eq!(s.streams[0].sender.bytes, 8_000_000);
        assert_eq!(s.streams[0].receiver.bytes, 8_000_000);
        assert_eq!(s.streams[0].receiver.end, 2.5);
        assert!((s.streams[0].receiver.bits_per_second - 8_000_000.0 * 8.0 / 2.5).abs() < 1e-6);
        assert_eq!(s.forward.sent.bytes, 8_000_000);
        assert!(s.local_sends && !s.local_receives);
    }

    #[test]
    fn udp_receiver_summary_counts_loss_after_omit() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Recv);
        let mut st = TestStats::new(vec![a], Protocol::Udp, 1, true, t0, t0);
        ca.packets.store(10, Relaxed);
        ca.lost.store(1, Relaxed);
        st.end_omit(t0 + Duration::from_secs(1));
        ca.packets.store(110, Relaxed);
        ca.lost.store(6, Relaxed);
        ca.out_of_order.store(2, Relaxed);
        st.sample(t0 + Duration::from_secs(2), 0.1);
        let s = st.summary(t0 + Duration::from_secs(2), None, None);
        let u = s.streams[0].udp.unwrap();
        assert_eq!(u.packets, 100);
        assert_eq!(u.lost, Some(5));
        assert_eq!(u.lost_percent, 5.0);
        assert_eq!(u.out_of_order, 2);
    }

    fn peer_result(packets: i64, errors: i64, drained: bool) -> Results {
        Results {
            streams: vec![StreamResult {
                id: 1,
                bytes: 0,
                retransmits: -1,
                jitter: 0.0,
                errors,
                omitted_errors: Some(0),
                packets,
                omitted_packets: Some(0),
                start_time: 0.0,
                end_time: 1.0,
            }],
            receiver_drained: drained,
            ..Results::default()
        }
    }

    /// 100 sent, the receiver saw up to 97 with 5 gaps: the last 3 were
    /// dropped too, which only the sender's count can reveal.
    #[test]
    fn datagrams_lost_after_the_last_one_seen_are_counted_when_the_receiver_drained() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Send);
        let st = TestStats::new(vec![a], Protocol::Udp, 1, false, t0, t0);
        ca.packets.store(100, Relaxed);
        let u = |drained| {
            st.summary(t0, Some(&peer_result(97, 5, drained)), None).streams[0]
                .udp
                .unwrap()
        };
        let d = u(true);
        assert_eq!((d.lost, d.packets, d.sent_packets), (Some(8), 100, 100));
        // A C receiver stops counting at TEST_END: its tail may have been in
        // flight, not lost, so its own numbers stand.
        let c = u(false);
        assert_eq!((c.lost, c.packets), (Some(5), 97));
        // A local receiver always drains.
        let (b, cb) = stream(1, StreamRole::Recv);
        let st = TestStats::new(vec![b], Protocol::Udp, 1, false, t0, t0);
        cb.packets.store(97, Relaxed);
        cb.lost.store(5, Relaxed);
        let r = st.summary(t0, Some(&peer_result(100, 0, false)), None).streams[0]
            .udp
            .unwrap();
        assert_eq!((r.lost, r.packets), (Some(8), 100));
        assert_eq!(r.lost_percent, 8.0);
        // Before the exchange (a server) only the local view exists.
        let r = st.summary(t0, None, None).streams[0].udp.unwrap();
        assert_eq!((r.lost, r.packets), (Some(5), 97));
    }

    /// A 3.12 sender's count includes its omit period and does not say how
    /// much of it that was: no tail is guessed from it.
    #[test]
    fn no_tail_loss_is_guessed_from_a_312_sender_after_an_omit_period() {
        let t0 = Instant::now();
        let (b, cb) = stream(1, StreamRole::Recv);
        let mut st = TestStats::new(vec![b], Protocol::Udp, 1, true, t0, t0);
        cb.packets.store(100, Relaxed);
        st.end_omit(t0 + Duration::from_secs(1));
        cb.packets.store(300, Relaxed);
        let mut peer = peer_result(300, 0, false);
        peer.streams[0].omitted_packets = None;
        peer.streams[0].omitted_errors = None;
        let r = st.summary(t0, Some(&peer), None).streams[0].udp.unwrap();
        assert_eq!((r.lost, r.packets, r.sent_packets), (Some(0), 200, 200));
    }

    #[test]
    fn udp_sender_trusts_a_312_peer_without_omit_keys_when_nothing_was_omitted() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Send);
        let mut st = TestStats::new(vec![a], Protocol::Udp, 1, false, t0, t0);
        ca.packets.store(100, Relaxed);
        st.sample(t0 + Duration::from_secs(1), 0.1);
        let peer = |errors| {
            let mut r = peer_result(100, errors, false);
            r.streams[0].omitted_errors = None;
            r.streams[0].omitted_packets = None;
            r
        };
        let s = st.summary(t0 + Duration::from_secs(1), Some(&peer(3)), None);
        let u = s.streams[0].udp.unwrap();
        assert_eq!((u.lost, u.packets), (Some(3), 100));
        // With an omit period the omitted losses are unknown, as iperf3 says.
        let (b, cb) = stream(1, StreamRole::Send);
        let mut st = TestStats::new(vec![b], Protocol::Udp, 1, true, t0, t0);
        cb.packets.store(10, Relaxed);
        st.end_omit(t0 + Duration::from_secs(1));
        cb.packets.store(100, Relaxed);
        let s = st.summary(t0 + Duration::from_secs(2), Some(&peer(3)), None);
        let u = s.streams[0].udp.unwrap();
        assert_eq!((u.lost, u.packets), (None, 90));
        let s = st.summary(t0 + Duration::from_secs(2), Some(&peer(0)), None);
        assert_eq!(s.streams[0].udp.unwrap().lost, Some(0));
    }
}
