//! Interval samples: each stream's numbers since the last sample, their
//! sums per direction, and full-duplex pairs.

use std::time::Instant;

use super::counters::{Snapshot, Welford};
use super::stream::{StreamRole, StreamStats};
use super::{TestStats, pct, rate};
use crate::config::Protocol;
use crate::events::{
    BouncebackSample, Ecn, EcnSample, Enhanced, IntervalReport, LatencyStats, RoleTag, StreamSample, TcpEcnSum,
    UdpSample,
};

impl TestStats {
    /// Takes an interval sample ending at `now` (`last`: the partial
    /// interval at the end of the test). `None` when the interval is too
    /// short to print (under `min_len` seconds and carrying nothing).
    pub fn sample(&mut self, now: Instant, min_len: f64, last: bool) -> Option<IntervalReport> {
        let real_start = self.last_sample.saturating_duration_since(self.start).as_secs_f64();
        let real_end = self.elapsed(now);
        let moved: u64 = self
            .streams
            .iter()
            .map(|s| s.counters.snapshot().bytes.saturating_sub(s.last.bytes))
            .sum();
        if real_end - real_start < min_len && moved == 0 {
            self.last_sample = now;
            self.end_secs = real_end;
            return None;
        }
        let ended = self.all_ended().map(|t| self.elapsed(t));
        let (start, end) = self.span(real_start, real_end, last, ended);
        let (protocol, omitted) = (self.protocol, self.omitting);
        let streams: Vec<StreamSample> = self
            .streams
            .iter_mut()
            .map(|s| stream_interval(s, protocol, (start, end), omitted, last))
            .collect();
        self.last_sample = now;
        self.end_secs = real_end;
        Some(report(streams, start, end, omitted))
    }

    /// Where a second chain of samples would start now (see [`ChartSampler`]).
    pub fn aside(&self) -> ChartSampler {
        ChartSampler {
            streams: self.streams.iter().map(Cursor::of).collect(),
            last_sample: self.last_sample,
            end_secs: self.end_secs,
            grid_end: self.grid_end,
        }
    }

    /// Takes a sample of the chain `aside` instead of the reported one,
    /// which is left as it was.
    pub(crate) fn sample_aside(
        &mut self,
        aside: &mut ChartSampler,
        now: Instant,
        min_len: f64,
        last: bool,
    ) -> Option<IntervalReport> {
        self.swap_chain(aside);
        let r = self.sample(now, min_len, last);
        self.swap_chain(aside);
        r
    }

    fn swap_chain(&mut self, a: &mut ChartSampler) {
        for (s, c) in self.streams.iter_mut().zip(&mut a.streams) {
            c.swap(s);
        }
        std::mem::swap(&mut self.last_sample, &mut a.last_sample);
        std::mem::swap(&mut self.end_secs, &mut a.end_secs);
        std::mem::swap(&mut self.grid_end, &mut a.grid_end);
    }

    /// The span an interval covers: the instants it was taken at, or (on
    /// a grid) the next step(s) of the grid for a periodic report and from
    /// the grid to the real end for the last one.
    pub(super) fn span(&mut self, real_start: f64, real_end: f64, last: bool, ended: Option<f64>) -> (f64, f64) {
        let Some(i) = self.presentation.grid.filter(|i| *i > 0.0) else {
            return (real_start, real_end);
        };
        let start = self.grid_end;
        if !last {
            let steps = ((real_end - start) / i).round().max(1.0);
            self.grid_end = start + steps * i;
            // Streams that already ended close their interval there.
            let e = ended
                .filter(|e| *e > start)
                .map_or(self.grid_end, |e| e.min(self.grid_end));
            return (start, e);
        }
        // The last interval closes at the end of the test, but never spans
        // more than one step (a tick skipped at the very end).
        let e = real_end.max(start).min(start + i);
        self.grid_end = e;
        (start, e)
    }
}

/// One stream's numbers since its last sample.
fn stream_interval(
    s: &mut StreamStats,
    protocol: Protocol,
    (start, end): (f64, f64),
    omitted: bool,
    last: bool,
) -> StreamSample {
    let snap = s.counters.snapshot();
    let secs = end - start;
    let mut bytes = snap.bytes.saturating_sub(s.last.bytes);
    let tcp = if protocol == Protocol::Tcp {
        s.tcp_sample()
    } else {
        None
    };
    let calls = snap.calls.saturating_sub(s.last.calls);
    let detail = s.meta.detail.clone();
    let bins = detail.as_ref().map(|d| d.bins());
    let latency = detail
        .as_ref()
        .filter(|d| d.trip_times())
        .map(|d| d.latency.take_interval().stats().unwrap_or_default());
    let histogram = match detail.as_ref().and_then(|d| d.histogram.as_ref()) {
        Some(h) if s.trip_times() => Some(s.histogram.sample(h, false)),
        _ => None,
    };
    let udp = protocol == Protocol::Udp;
    let mut extras = Enhanced {
        calls,
        errors: snap.errors.saturating_sub(s.last.errors),
        read_bins: (s.role == StreamRole::Recv && !udp)
            .then(|| bins.map(|b| std::array::from_fn(|i| b[i].saturating_sub(s.last_bins[i]))))
            .flatten(),
        latency,
        histogram,
        frames: s.frame_interval(),
        ..Enhanced::default()
    };
    let udp = udp.then(|| UdpSample {
        ecn: s.ecn_sample(&snap, &s.last),
        l4s: s.l4s_sample(),
        ..udp_sample(s.role, &snap, &s.last, s.counters.jitter(), secs, extras.latency.take())
    });
    if let Some(bb) = s.meta.bounceback.clone() {
        // Round trips count in the interval their request was sent in.
        let w = bb.take_until((!last).then_some(end));
        bytes = w.bytes;
        if !bb.echo {
            let (retransmits, tcp) = s.bounceback_tcp(false);
            extras.bounceback = Some(bounceback_sample(&w, retransmits, tcp));
        }
    }
    s.last = snap;
    if let Some(b) = bins {
        s.last_bins = b;
    }
    StreamSample {
        omitted,
        ..s.sample((start, end), bytes, tcp, udp, extras)
    }
}

/// A UDP stream's numbers between two snapshots: a receiver's loss,
/// reordering, jitter, latency and rates; a sender's count and rate.
pub(super) fn udp_sample(
    role: StreamRole,
    now: &Snapshot,
    then: &Snapshot,
    jitter_secs: f64,
    secs: f64,
    latency: Option<LatencyStats>,
) -> UdpSample {
    let datagrams = now.calls.saturating_sub(then.calls);
    let pps = if secs > 0.0 { datagrams as f64 / secs } else { 0.0 };
    let packets = now.packets - then.packets;
    if role == StreamRole::Send {
        return UdpSample {
            packets,
            pps,
            ..UdpSample::default()
        };
    }
    let lost = now.lost - then.lost;
    let in_flight = latency.map(|l| {
        (
            datagrams as i64,
            (pps * l.mean).round(),
            (pps * l.stdev * l.stdev).round(),
        )
    });
    UdpSample {
        packets,
        lost,
        jitter_ms: jitter_secs * 1000.0,
        lost_percent: pct(lost, packets),
        out_of_order: now.ooo - then.ooo,
        duplicates: now.dups - then.dups,
        pps,
        latency,
        in_flight,
        sent: None,
        ecn: None,
        l4s: None,
    }
}

/// A bounceback stream's round trips over a span.
pub(super) fn bounceback_sample(w: &Welford, retransmits: u32, tcp: Option<(u64, u32)>) -> BouncebackSample {
    let sum = w.mean * w.count as f64;
    BouncebackSample {
        rtt: w.stats().unwrap_or_default(),
        rps: if sum > 0.0 { w.count as f64 / sum } else { 0.0 },
        retransmits,
        tcp,
        owd: None,
    }
}

/// The interval report of `streams` over `[start, end]`: sums per
/// direction and full-duplex pairs.
fn report(streams: Vec<StreamSample>, start: f64, end: f64, omitted: bool) -> IntervalReport {
    let (fwd, rev): (Vec<&StreamSample>, Vec<&StreamSample>) =
        streams.iter().partition(|s| !RoleTag::is_reverse(s.role));
    let mut sum = sum_samples(&fwd, 0, start, end);
    sum.omitted = omitted;
    let sum_bidir_reverse = (!rev.is_empty()).then(|| {
        let mut r = sum_samples(&rev, 0, start, end);
        r.omitted = omitted;
        r
    });
    let pairs = pairs(&streams);
    IntervalReport {
        streams,
        sum,
        sum_bidir_reverse,
        pairs,
        latency: None,
    }
}

/// Full duplex: both directions of one connection share its id; each such
/// pair is summed.
pub(super) fn pairs(streams: &[StreamSample]) -> Vec<StreamSample> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for f in streams {
        if seen.contains(&f.id) {
            continue;
        }
        seen.push(f.id);
        let both: Vec<&StreamSample> = streams.iter().filter(|g| g.id == f.id).collect();
        if both.len() == 2 && both[0].sender != both[1].sender {
            let e = both.iter().map(|l| l.end).fold(0.0, f64::max);
            let s = both.iter().map(|l| l.start).fold(f64::MAX, f64::min);
            out.push(sum_samples(&both, f.id, s, e));
        }
    }
    out
}

/// The ECN fields of several streams summed: in play if in any; the
/// codepoint sent when all that say agree.
pub(super) fn sum_ecn<'a>(each: impl Iterator<Item = Option<&'a EcnSample>>) -> Option<EcnSample> {
    let mut out: Option<EcnSample> = None;
    let mut sent: Option<Option<Ecn>> = None;
    for e in each.flatten() {
        let o = out.get_or_insert_with(EcnSample::default);
        o.counts = o.counts.plus(&e.counts);
        sent = Some(match sent {
            None => e.sent,
            Some(s) if s == e.sent => s,
            Some(_) => None,
        });
    }
    if let Some(o) = out.as_mut() {
        o.sent = sent.flatten();
    }
    out
}

/// The sum of `streams` over `[start, end]`, as stream `id` (0 for `[SUM]`).
pub(super) fn sum_samples(streams: &[&StreamSample], id: u32, start: f64, end: f64) -> StreamSample {
    let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
    let seconds = end - start;
    let all = |f: &dyn Fn(&StreamSample) -> bool| !streams.is_empty() && streams.iter().all(|s| f(s));
    let retransmits = all(&|s| s.retransmits.is_some()).then(|| streams.iter().filter_map(|s| s.retransmits).sum());
    let udp = all(&|s| s.udp.is_some()).then(|| {
        let us: Vec<&UdpSample> = streams.iter().filter_map(|s| s.udp.as_ref()).collect();
        let packets: i64 = us.iter().map(|u| u.packets).sum();
        let lost: i64 = us.iter().map(|u| u.lost).sum();
        let sent = us
            .iter()
            .any(|u| u.sent.is_some())
            .then(|| us.iter().filter_map(|u| u.sent).sum());
        UdpSample {
            packets,
            lost,
            jitter_ms: us.iter().map(|u| u.jitter_ms).sum::<f64>() / us.len() as f64,
            lost_percent: pct(lost, packets),
            out_of_order: us.iter().map(|u| u.out_of_order).sum(),
            duplicates: us.iter().map(|u| u.duplicates).sum(),
            pps: us.iter().map(|u| u.pps).sum(),
            sent,
            ecn: sum_ecn(us.iter().map(|u| u.ecn.as_ref())),
            l4s: crate::events::L4sSample::sum(us.iter().filter_map(|u| u.l4s.as_ref())),
            ..UdpSample::default()
        }
    });
    let mut bins: Option<[u64; 8]> = None;
    for b in streams.iter().filter_map(|s| s.extras.read_bins) {
        let acc = bins.get_or_insert([0; 8]);
        for (a, x) in acc.iter_mut().zip(b) {
            *a += x;
        }
    }
    StreamSample {
        id,
        socket: -1,
        role: streams.first().and_then(|s| s.role),
        sender: all(&|s| s.sender),
        reversed: false,
        connect_back: all(&|s| s.connect_back),
        both_ways: all(&|s| s.both_ways),
        start,
        end,
        seconds,
        bytes,
        bits_per_second: rate(bytes, seconds),
        omitted: false,
        tcp: None,
        retransmits,
        tcp_ecn_sum: TcpEcnSum::of(streams.iter().filter_map(|s| s.tcp.as_ref()?.ecn.as_ref())),
        udp,
        extras: Enhanced {
            calls: streams.iter().map(|s| s.extras.calls).sum(),
            errors: streams.iter().map(|s| s.extras.errors).sum(),
            read_bins: bins,
            ..Enhanced::default()
        },
        addrs: None,
    }
}

/// A second chain of samples beside the reported one: intervals measured
/// for a chart only (the HTML report of a test without periodic reports).
/// Sampling moves a stream's counters-at-the-last-sample and feeds the
/// end's TCP extremes; the aside chain keeps its own copy of all that, so
/// the reported intervals and the end's numbers are what they would be
/// without it. (What the streams' hooks hand out once per interval, such
/// as iperf 2's burst latency, goes to whichever chain asks first.)
#[derive(Debug)]
pub struct ChartSampler {
    streams: Vec<Cursor>,
    last_sample: Instant,
    end_secs: f64,
    grid_end: f64,
}

/// Where one chain of samples stands in a stream.
#[derive(Debug)]
struct Cursor {
    last: Snapshot,
    last_bins: [u64; 8],
    last_frames: [u64; 3],
    histogram: super::histogram::HistogramView,
    last_retrans: u32,
    limits: [u64; 3],
    min_rtt: u32,
    tcp_totals: crate::events::TcpTotals,
    rtt_sum: u64,
    rtt_n: u64,
    bb_retrans: u32,
}

impl Cursor {
    fn of(s: &StreamStats) -> Cursor {
        Cursor {
            last: s.last,
            last_bins: s.last_bins,
            last_frames: s.last_frames,
            histogram: s.histogram.clone(),
            last_retrans: s.last_retrans,
            limits: s.limits,
            min_rtt: s.min_rtt,
            tcp_totals: s.tcp_totals,
            rtt_sum: s.rtt_sum,
            rtt_n: s.rtt_n,
            bb_retrans: s.bb_retrans,
        }
    }

    fn swap(&mut self, s: &mut StreamStats) {
        use std::mem::swap;
        swap(&mut self.last, &mut s.last);
        swap(&mut self.last_bins, &mut s.last_bins);
        swap(&mut self.last_frames, &mut s.last_frames);
        swap(&mut self.histogram, &mut s.histogram);
        swap(&mut self.last_retrans, &mut s.last_retrans);
        swap(&mut self.limits, &mut s.limits);
        swap(&mut self.min_rtt, &mut s.min_rtt);
        swap(&mut self.tcp_totals, &mut s.tcp_totals);
        swap(&mut self.rtt_sum, &mut s.rtt_sum);
        swap(&mut self.rtt_n, &mut s.rtt_n);
        swap(&mut self.bb_retrans, &mut s.bb_retrans);
    }
}
