//! One stream as the reporter tracks it: where its counters stood at the
//! last sample and at the start (or the omit end), and what TCP_INFO said.

use std::sync::Arc;
use wirespeed_sys::RawSock;

use super::counters::{BouncebackCounters, DetailCounters, FrameCounters, Snapshot, StreamCounters};
use super::histogram::HistogramView;
use crate::events::{
    Ecn, EcnCounts, EcnSample, Enhanced, FrameSample, RoleTag, StreamSample, TcpEcn, TcpSample, TcpTotals, UdpSample,
};
use wirespeed_sys::socket::{TcpInfo, tcp_info_raw};

/// Does this host send or receive on a stream?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRole {
    /// This host writes.
    Send,
    /// This host reads.
    Recv,
}

/// What the reporter knows of a stream besides its counters.
#[derive(Debug, Clone, Default)]
pub struct StreamMeta {
    /// Traffic opposite to the process's main role (iperf 2's `[ *1]`).
    pub reversed: bool,
    /// A flow the server opened back to the client (iperf 2's `-d`/`-r`):
    /// the reverse direction of the test's sums.
    pub connect_back: bool,
    /// (local, remote) addresses, for CSV rows.
    pub addrs: Option<((String, u16), (String, u16))>,
    /// The counters the stream's hook feeds, if it has one.
    pub detail: Option<Arc<DetailCounters>>,
    /// Round trips, for a bounceback stream.
    pub bounceback: Option<Arc<BouncebackCounters>>,
    /// Isochronous frames, sent or received.
    pub frames: Option<Arc<FrameCounters>>,
    /// UDP: the ECN codepoint the stream's sender set, when known (a
    /// sender's own socket says; a receiver is told by its dialect).
    pub ecn_sent: Option<crate::events::Ecn>,
    /// TCP: this host opened the connection asking for ECN (its
    /// `net.ipv4.tcp_ecn` is 1), so a refusal is worth saying.
    pub tcp_ecn_asked: bool,
    /// UDP: the stream runs iperf 2.2.1's L4S exchange (`--udp-l4s`).
    pub l4s: bool,
    /// UDP L4S: the acks this side took (a sender) or sent (a receiver),
    /// which its dialect's data thread writes.
    pub l4s_log: Option<Arc<super::L4sLog>>,
}

/// A stream as the reporter sees it.
#[derive(Debug)]
pub struct StreamStats {
    /// Stream id (1, 3, 4, ...; iperf 2: the transfer id).
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
    pub tcp_fd: Option<RawSock>,
    /// Addresses, hook counters, round trips.
    pub meta: StreamMeta,
    pub(super) last: Snapshot,
    pub(super) base: Snapshot,
    pub(super) last_bins: [u64; 8],
    /// Frame counts at the last sample.
    pub(super) last_frames: [u64; 3],
    pub(super) histogram: HistogramView,
    pub(super) last_retrans: u32,
    pub(super) base_retrans: u32,
    pub(super) tcp_totals: TcpTotals,
    pub(super) rtt_sum: u64,
    pub(super) rtt_n: u64,
    pub(super) retrans_known: bool,
    /// TCP_INFO busy / rwnd-limited / sndbuf-limited µs at the last sample,
    /// and at the start (or the omit end), for the window advice.
    pub(super) limits: [u64; 3],
    pub(super) base_limits: [u64; 3],
    pub(super) min_rtt: u32,
    /// Retransmits up to the last bounceback report.
    pub(super) bb_retrans: u32,
    /// `tcpi_delivered_ce` at the last sample, and at the start (or the
    /// omit end).
    pub(super) last_ce: u32,
    pub(super) base_ce: u32,
}

fn limit_times(i: &TcpInfo) -> [u64; 3] {
    [i.busy_time_us, i.rwnd_limited_us, i.sndbuf_limited_us]
}

/// ECN as TCP_INFO says, when in play: negotiated, or `asked` by this
/// host (and refused). A sender's segments acked under ECE count from
/// `since` (a `tcpi_delivered_ce` read before); nothing is counted where
/// nothing can be.
pub(super) fn tcp_ecn(info: &TcpInfo, asked: bool, sending: bool, since: u32) -> Option<TcpEcn> {
    let negotiated = info.ecn_negotiated();
    if !negotiated && !asked {
        return None;
    }
    Some(TcpEcn {
        negotiated,
        seen: info.ecn_seen(),
        acked_under_ece: info
            .delivered_ce
            .filter(|_| negotiated && sending)
            .map(|c| u64::from(c.wrapping_sub(since))),
    })
}

/// TCP_INFO as an interval's numbers.
pub(super) fn tcp_sample(info: &TcpInfo, retransmits: i64) -> TcpSample {
    TcpSample {
        retransmits,
        snd_cwnd: info.cwnd_bytes(),
        snd_wnd: info.snd_wnd as u64,
        rtt: info.rtt as u64,
        rttvar: info.rttvar as u64,
        pmtu: info.pmtu as u64,
        reorder: info.reord_seen as i64,
        ecn: None,
    }
}

impl StreamStats {
    /// Frames since the last interval's sample.
    pub(super) fn frame_interval(&mut self) -> Option<FrameSample> {
        let f = self.meta.frames.clone()?;
        let then = std::mem::replace(&mut self.last_frames, f.counts());
        Some(frame_sample(&f, then, f.latency.take_interval()))
    }

    /// Frames over the whole test.
    pub(super) fn frame_total(&self) -> Option<FrameSample> {
        let f = self.meta.frames.as_ref()?;
        Some(frame_sample(f, [0; 3], f.latency.total()))
    }

    /// The ECN field between two snapshots, when in play: a receiver's
    /// arrivals per codepoint; a sender's datagrams, all with its codepoint.
    pub(super) fn ecn_sample(&self, now: &Snapshot, then: &Snapshot) -> Option<EcnSample> {
        let sent = self.meta.ecn_sent;
        let arrived = EcnCounts::from_field(now.ecn);
        if !sent.is_some_and(|e| e != Ecn::NotEct) && !arrived.any_ecn() {
            return None;
        }
        let counts = match self.role {
            StreamRole::Send => EcnCounts::all(sent.unwrap_or(Ecn::NotEct), (now.packets - then.packets).max(0) as u64),
            StreamRole::Recv => arrived.minus(&EcnCounts::from_field(then.ecn)),
        };
        Some(EcnSample {
            sent,
            counts,
            l4s: self.meta.l4s,
        })
    }

    /// This stream's sample of the span `(start, end)`: who it is, its
    /// bytes and rate, what the caller measured, and iperf 2's numbers
    /// derived from them.
    pub(super) fn sample(
        &self,
        (start, end): (f64, f64),
        bytes: u64,
        tcp: Option<TcpSample>,
        udp: Option<UdpSample>,
        extras: Enhanced,
    ) -> StreamSample {
        let seconds = end - start;
        let mut out = StreamSample {
            id: self.id,
            socket: self.socket,
            role: self.tag,
            sender: self.role == StreamRole::Send,
            reversed: self.meta.reversed,
            connect_back: self.meta.connect_back,
            both_ways: self.meta.bounceback.is_some(),
            start,
            end,
            seconds,
            bytes,
            bits_per_second: super::rate(bytes, seconds),
            omitted: false,
            retransmits: tcp.map(|t| t.retransmits),
            tcp,
            tcp_ecn_sum: None,
            udp,
            extras,
            addrs: self.meta.addrs.clone(),
        };
        add_derived(&mut out);
        out
    }

    /// A new stream's statistics.
    pub fn new(
        id: u32,
        socket: i32,
        role: StreamRole,
        tag: Option<RoleTag>,
        counters: Arc<StreamCounters>,
        tcp_fd: Option<RawSock>,
    ) -> StreamStats {
        let (retrans, known, limits, ce) = match (role, tcp_fd) {
            (StreamRole::Send, Some(fd)) => match tcp_info_raw(fd) {
                Ok(i) => (i.total_retrans, true, limit_times(&i), i.delivered_ce.unwrap_or(0)),
                Err(_) => (0, false, [0; 3], 0),
            },
            _ => (0, false, [0; 3], 0),
        };
        StreamStats {
            id,
            socket,
            role,
            tag,
            counters,
            tcp_fd,
            meta: StreamMeta::default(),
            last: Snapshot::default(),
            base: Snapshot::default(),
            last_bins: [0; 8],
            last_frames: [0; 3],
            histogram: HistogramView::default(),
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
            bb_retrans: 0,
            last_ce: ce,
            base_ce: ce,
        }
    }

    /// The same stream with what the reporter knows besides its counters.
    pub(crate) fn with_meta(mut self, meta: StreamMeta) -> StreamStats {
        self.meta = meta;
        self
    }

    /// Whether this stream reports retransmits (a TCP sender with TCP_INFO).
    pub fn has_retransmits(&self) -> bool {
        self.retrans_known
    }

    /// Whether the hook measures latency on this stream.
    pub(super) fn trip_times(&self) -> bool {
        self.meta.detail.as_ref().is_some_and(|d| d.trip_times())
    }

    /// Reads TCP_INFO. Every TCP stream feeds the end-of-test extremes (as
    /// iperf3 does, even for receivers); only senders report an interval sample.
    pub(super) fn tcp_sample(&mut self) -> Option<TcpSample> {
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
        let mut s = tcp_sample(&info, retr);
        if sending {
            s.ecn = tcp_ecn(&info, self.meta.tcp_ecn_asked, true, self.last_ce);
            self.last_ce = info.delivered_ce.unwrap_or(0);
        }
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

    /// TCP_INFO now, with the retransmits since the start (a sender's
    /// whole-test line).
    pub(super) fn tcp_now(&self) -> Option<TcpSample> {
        if self.role != StreamRole::Send || !self.retrans_known {
            return None;
        }
        let info = tcp_info_raw(self.tcp_fd?).ok()?;
        let mut s = tcp_sample(&info, self.retransmits_total().unwrap_or(0));
        s.ecn = tcp_ecn(&info, self.meta.tcp_ecn_asked, true, self.base_ce);
        Some(s)
    }

    /// The L4S exchange as this side knows it now, on a stream that runs it.
    pub(super) fn l4s_sample(&self) -> Option<crate::events::L4sSample> {
        let log = self.meta.l4s_log.as_ref()?;
        Some(log.sample(self.role == StreamRole::Send))
    }

    /// ECN over the whole test as this host's kernel saw the connection,
    /// when in play (either role; only a sender counts acks under ECE).
    pub(super) fn tcp_ecn_total(&self) -> Option<TcpEcn> {
        let info = tcp_info_raw(self.tcp_fd?).ok()?;
        let sending = self.role == StreamRole::Send && self.retrans_known;
        tcp_ecn(&info, self.meta.tcp_ecn_asked, sending, self.base_ce)
    }

    /// Retransmits since the omit period ended.
    pub(super) fn retransmits_total(&self) -> Option<i64> {
        self.retrans_known
            .then(|| self.last_retrans.wrapping_sub(self.base_retrans) as i64)
    }

    /// The connection's (cwnd, RTT µs) and the retransmits since the last
    /// call (`total`: since the start), for a bounceback line.
    pub(super) fn bounceback_tcp(&mut self, total: bool) -> (u32, Option<(u64, u32)>) {
        let Some(info) = self.tcp_fd.and_then(|fd| tcp_info_raw(fd).ok()) else {
            return (0, None);
        };
        let retrans = if total {
            info.total_retrans
        } else {
            info.total_retrans.saturating_sub(self.bb_retrans)
        };
        self.bb_retrans = info.total_retrans;
        (retrans, Some((info.cwnd_bytes(), info.rtt)))
    }

    pub(super) fn tcp_totals(&self) -> Option<TcpTotals> {
        if self.rtt_n == 0 {
            return None;
        }
        let mut t = self.tcp_totals;
        t.mean_rtt = self.rtt_sum / self.rtt_n;
        Some(t)
    }

    /// Counters so far become the baseline (the omit period ended).
    pub(super) fn rebase(&mut self) {
        let snap = self.counters.snapshot();
        self.base = snap;
        self.last = snap;
        self.base_retrans = self.last_retrans;
        if let (StreamRole::Send, Some(fd)) = (self.role, self.tcp_fd)
            && let Ok(i) = tcp_info_raw(fd)
        {
            self.base_retrans = i.total_retrans;
            self.last_retrans = i.total_retrans;
            self.limits = limit_times(&i);
            self.base_limits = self.limits;
            self.base_ce = i.delivered_ce.unwrap_or(0);
            self.last_ce = self.base_ce;
        }
        self.tcp_totals = TcpTotals {
            min_rtt: u64::MAX,
            ..TcpTotals::default()
        };
        self.rtt_sum = 0;
        self.rtt_n = 0;
    }
}

fn frame_sample(f: &FrameCounters, then: [u64; 3], latency: super::Welford) -> FrameSample {
    let now = f.counts();
    FrameSample {
        frames: now[0].saturating_sub(then[0]),
        missed: now[1].saturating_sub(then[1]),
        slips: now[2].saturating_sub(then[2]),
        latency: latency.stats(),
    }
}

/// iperf 2's derived numbers: network power (rate over delay) and bytes
/// in flight, from whichever delay the sample has.
pub(super) fn add_derived(l: &mut StreamSample) {
    if let Some(u) = l.udp.as_ref() {
        if let Some(lat) = u.latency.filter(|x| x.count > 0) {
            l.extras.net_power = super::net_power(l.bits_per_second, lat.mean);
        }
        return;
    }
    if let Some(t) = l.tcp
        && l.sender
    {
        l.extras.net_power = super::net_power(l.bits_per_second, t.rtt as f64 * 1e-6);
    }
    if let Some(lat) = l.extras.latency
        && lat.count > 0
    {
        l.extras.net_power = super::net_power(l.bits_per_second, lat.mean);
        l.extras.in_flight = Some(l.bits_per_second / 8.0 * lat.mean);
    }
}
