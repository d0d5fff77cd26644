//! The numbers iperf 2's enhanced reports add: read-size histograms,
//! `--trip-times` burst latency, write/read call counts, and per-flow
//! reports with `[SUM]` and full-duplex `[FDn]` sums.
//!
//! Data threads feed [`FlowCounters`] (through the iperf 2 stream hooks);
//! [`FlowStats`] turns them, together with the session's [`TestStats`],
//! into [`FlowReport`]s.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use super::histogram::{HistogramView, LatencyHistogram};
use super::{StreamRole, TestStats, rate};
use crate::report::event::{FlowExtras, FlowLine, FlowReport, IntervalReport, LatencyStats, TcpSample, UdpFlow};
use crate::sys::socket::tcp_info_raw;

/// Welford's running mean and M2 with extremes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Welford {
    /// Samples.
    pub count: u64,
    /// Running mean.
    pub mean: f64,
    /// Sum of squared deviations.
    pub m2: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Sum of the weights (bytes of the bursts).
    pub bytes: u64,
}

impl Welford {
    /// Adds one sample.
    pub fn add(&mut self, x: f64, bytes: u64) {
        if self.count == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.count += 1;
        self.bytes += bytes;
        let d = x - self.mean;
        self.mean += d / self.count as f64;
        self.m2 += d * (x - self.mean);
    }

    /// Adds another accumulator's samples (Chan et al.'s parallel update).
    pub fn merge(&mut self, o: &Welford) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        let n = self.count + o.count;
        let d = o.mean - self.mean;
        self.mean += d * o.count as f64 / n as f64;
        self.m2 += o.m2 + d * d * (self.count as f64 * o.count as f64) / n as f64;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.bytes += o.bytes;
        self.count = n;
    }

    /// Standard deviation (n − 1), 0 below two samples.
    pub fn stdev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / (self.count - 1) as f64).sqrt()
        }
    }

    /// As reported.
    pub fn stats(&self) -> Option<LatencyStats> {
        (self.count > 0).then(|| LatencyStats {
            count: self.count,
            bytes: self.bytes,
            mean: self.mean,
            min: self.min,
            max: self.max,
            stdev: self.stdev(),
        })
    }
}

/// Counters an iperf 2 stream's hook updates from its data thread.
#[derive(Debug)]
pub struct FlowCounters {
    /// Read sizes in 8 bins of `bin_width` bytes (the last one open-ended).
    pub read_bins: [AtomicU64; 8],
    /// Width of a read-size bin (`-l` / 8).
    pub bin_width: u64,
    /// Burst latencies: (this interval, whole test). A completed burst takes
    /// the lock once (thousands per second at most, never per read).
    latency: Mutex<(Welford, Welford)>,
    /// The stream carries `--trip-times` bursts (cleared by the hook when
    /// the stream turns out not to be framed); for UDP: latency is reported.
    trip_times: AtomicBool,
    /// `--histograms`: the latency distribution.
    pub histogram: Option<Arc<LatencyHistogram>>,
    /// UDP: the sender's end-of-stream datagram arrived.
    fin: AtomicBool,
}

impl FlowCounters {
    /// Counters for a stream reading `block_len`-byte buffers.
    pub fn new(block_len: usize, trip_times: bool) -> Arc<FlowCounters> {
        FlowCounters::with_histogram(block_len, trip_times, None)
    }

    /// Counters that also keep a latency histogram.
    pub fn with_histogram(
        block_len: usize,
        trip_times: bool,
        histogram: Option<LatencyHistogram>,
    ) -> Arc<FlowCounters> {
        Arc::new(FlowCounters {
            read_bins: Default::default(),
            bin_width: (block_len as u64 / 8).max(1),
            latency: Mutex::new((Welford::default(), Welford::default())),
            trip_times: AtomicBool::new(trip_times),
            histogram: histogram.map(Arc::new),
            fin: AtomicBool::new(false),
        })
    }

    /// Adds latencies gathered over a batch of datagrams.
    pub fn merge_latency(&self, w: &Welford) {
        if w.count == 0 {
            return;
        }
        if let Ok(mut g) = self.latency.lock() {
            g.0.merge(w);
            g.1.merge(w);
        }
    }

    /// Marks the stream as ended by its sender's FIN.
    pub fn set_fin(&self) {
        self.fin.store(true, Relaxed);
    }

    /// Whether the sender's FIN ended the stream.
    pub fn fin(&self) -> bool {
        self.fin.load(Relaxed)
    }

    /// Whether burst latency is being measured.
    pub fn trip_times(&self) -> bool {
        self.trip_times.load(Relaxed)
    }

    /// Stops reporting burst latency (the stream is not burst-framed).
    pub fn no_trip_times(&self) {
        self.trip_times.store(false, Relaxed);
    }

    /// Counts one read of `n` bytes.
    pub fn count_read(&self, n: usize) {
        let bin = ((n as u64) / self.bin_width).min(7) as usize;
        self.read_bins[bin].fetch_add(1, Relaxed);
    }

    /// Records a completed burst's latency (seconds) and size.
    pub fn record_latency(&self, secs: f64, bytes: u64) {
        if let Ok(mut g) = self.latency.lock() {
            g.0.add(secs, bytes);
            g.1.add(secs, bytes);
        }
    }

    fn bins(&self) -> [u64; 8] {
        std::array::from_fn(|i| self.read_bins[i].load(Relaxed))
    }

    /// The interval's latency (and starts the next interval).
    fn take_interval_latency(&self) -> Welford {
        self.latency
            .lock()
            .map(|mut g| std::mem::take(&mut g.0))
            .unwrap_or_default()
    }

    /// Burst latency over the whole test so far.
    pub fn total_latency(&self) -> Welford {
        self.latency.lock().map(|g| g.1).unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Last {
    calls: u64,
    errors: u64,
    bins: [u64; 8],
}

/// What the reporter knows of one iperf 2 stream besides its counters.
#[derive(Debug, Clone, Default)]
pub struct FlowInfo {
    /// The hook's counters, if the stream has a hook.
    pub counters: Option<Arc<FlowCounters>>,
    /// (local, remote) addresses, for CSV.
    pub addrs: Option<((String, u16), (String, u16))>,
    /// Printed with a star (traffic opposite to the process's main role).
    pub reversed: bool,
}

/// Reporter-side tracking of a session's iperf 2 flows.
#[derive(Debug)]
pub struct FlowStats {
    /// Per stream of the session (same order).
    info: Vec<FlowInfo>,
    last: Vec<Last>,
    /// Reporting interval: interval reports sit on its grid (`0-1`, `1-2`,
    /// as iperf 2 bins them), whatever the timer's latency was.
    interval: Option<f64>,
    grid_end: f64,
    /// Per stream: the reporter's view of its histogram.
    histograms: Vec<HistogramView>,
}

fn delta_bins(now: [u64; 8], last: [u64; 8]) -> [u64; 8] {
    std::array::from_fn(|i| now[i].saturating_sub(last[i]))
}

impl FlowStats {
    /// Tracking for streams in session order.
    pub fn new(info: Vec<FlowInfo>, interval: Option<std::time::Duration>) -> FlowStats {
        let n = info.len();
        FlowStats {
            info,
            last: vec![Last::default(); n],
            interval: interval.map(|i| i.as_secs_f64()),
            grid_end: 0.0,
            histograms: (0..n).map(|_| HistogramView::default()).collect(),
        }
    }

    /// The span an interval report covers: the next step(s) of the grid for
    /// a periodic report, from the grid to the real end for the last one.
    fn span(&mut self, end: f64, last: bool, ended: Option<f64>) -> (f64, f64) {
        let start = self.grid_end;
        match self.interval {
            Some(i) if !last && i > 0.0 => {
                let steps = ((end - start) / i).round().max(1.0);
                self.grid_end = start + steps * i;
                // Flows that already ended close their interval there.
                let e = ended
                    .filter(|e| *e > start)
                    .map_or(self.grid_end, |e| e.min(self.grid_end));
                (start, e)
            }
            // The last interval closes at the end of the test, but never
            // spans more than one step (a tick skipped at the very end).
            Some(i) if i > 0.0 => {
                let e = end.max(start).min(start + i);
                self.grid_end = e;
                (start, e)
            }
            _ => {
                self.grid_end = end;
                (start, end.max(start))
            }
        }
    }

    /// Stream `i`'s hook counters, if it has them.
    pub fn counters_of(&self, i: usize) -> Option<&Arc<FlowCounters>> {
        self.counters(i)
    }

    fn counters(&self, i: usize) -> Option<&Arc<FlowCounters>> {
        self.info.get(i).and_then(|f| f.counters.as_ref())
    }

    /// The flow report of an interval the session just sampled; `last` for
    /// the partial interval at the end of the test.
    pub fn interval(&mut self, rep: &IntervalReport, stats: &TestStats, last: bool) -> FlowReport {
        let ended = stats.all_ended().map(|t| stats.elapsed(t));
        let (start, end) = self.span(rep.sum.end, last, ended);
        let mut flows = Vec::with_capacity(rep.streams.len());
        for (i, s) in rep.streams.iter().enumerate() {
            let Some(st) = stats.streams.get(i) else { break };
            let calls = st.counters.blocks.load(Relaxed);
            let errors = st.counters.errors.load(Relaxed);
            let last = self.last.get(i).copied().unwrap_or_default();
            let fc = self.counters(i).cloned();
            let fc = fc.as_ref();
            let bins = fc.map(|c| c.bins());
            let latency = fc.filter(|c| c.trip_times()).map(|c| c.take_interval_latency());
            let udp = s.udp.is_some();
            let histogram = match (fc.and_then(|c| c.histogram.as_ref()), self.histograms.get_mut(i)) {
                (Some(h), Some(v)) if fc.is_some_and(|c| c.trip_times()) => Some(v.sample(h, false)),
                _ => None,
            };
            let mut extras = FlowExtras {
                calls: calls.saturating_sub(last.calls),
                errors: errors.saturating_sub(last.errors),
                read_bins: (st.role == StreamRole::Recv && !udp)
                    .then(|| bins.map(|b| delta_bins(b, last.bins)))
                    .flatten(),
                latency: latency.map(|w| w.stats().unwrap_or_default()),
                tcp: s.tcp,
                retransmits: s.tcp.map(|t| t.retransmits),
                histogram,
                ..FlowExtras::default()
            };
            if let Some(u) = &s.udp {
                let lat = extras.latency.take();
                extras.udp = Some(udp_flow(
                    st.role,
                    u.packets,
                    u.lost,
                    u.out_of_order,
                    u.jitter_ms,
                    extras.calls,
                    end - start,
                    lat,
                ));
            }
            if let Some(l) = self.last.get_mut(i) {
                *l = Last {
                    calls,
                    errors,
                    bins: bins.unwrap_or_default(),
                };
            }
            flows.push(FlowLine {
                id: s.id,
                sender: s.sender,
                start,
                end,
                bytes: s.bytes,
                bits_per_second: rate(s.bytes, end - start),
                extras,
                addrs: self.info.get(i).and_then(|f| f.addrs.clone()),
                reversed: self.info.get(i).is_some_and(|f| f.reversed),
            });
        }
        build(false, flows, start, end)
    }

    /// The whole-test report: each flow over its own duration.
    pub fn end(&mut self, stats: &TestStats) -> FlowReport {
        let flows: Vec<FlowLine> = (0..stats.streams.len())
            .filter_map(|i| self.end_line(stats, i))
            .collect();
        let end = flows.iter().map(|f| f.end).fold(0.0, f64::max);
        build(true, flows, 0.0, end)
    }

    /// Stream `i`'s whole-test line, with its derived numbers (what a UDP
    /// receiver's report to its sender carries).
    pub fn flow_end(&mut self, stats: &TestStats, i: usize) -> Option<FlowLine> {
        let mut l = self.end_line(stats, i)?;
        // Mid-test the last sample may predate the stream's end: the line
        // runs to the end itself.
        if let Some(e) = stats.streams.get(i).and_then(|st| st.counters.ended(stats.epoch)) {
            l.end = stats.elapsed(e);
            l.bits_per_second = rate(l.bytes, l.end);
            if let Some(u) = l.extras.udp.as_mut()
                && l.end > 0.0
            {
                u.pps = l.extras.calls as f64 / l.end;
            }
        }
        add_derived(&mut l);
        Some(l)
    }

    fn end_line(&mut self, stats: &TestStats, i: usize) -> Option<FlowLine> {
        let st = stats.streams.get(i)?;
        let mut bytes = st.counters.bytes.load(Relaxed).saturating_sub(st.base.bytes);
        let dur = stats.stream_secs(st);
        let fc = self.counters(i).cloned();
        let fc = fc.as_ref();
        let tcp = if st.role == StreamRole::Send && st.retrans_known {
            st.tcp_fd.and_then(|fd| tcp_info_raw(fd).ok()).map(|info| TcpSample {
                retransmits: st.retransmits_total().unwrap_or(0),
                snd_cwnd: info.cwnd_bytes(),
                snd_wnd: info.snd_wnd as u64,
                rtt: info.rtt as u64,
                rttvar: info.rttvar as u64,
                pmtu: info.pmtu as u64,
                reorder: info.reord_seen as i64,
            })
        } else {
            None
        };
        let udp = stats.protocol == crate::config::Protocol::Udp;
        let histogram = match (fc.and_then(|c| c.histogram.as_ref()), self.histograms.get_mut(i)) {
            (Some(h), Some(v)) if fc.is_some_and(|c| c.trip_times()) => Some(v.sample(h, true)),
            _ => None,
        };
        let mut extras = FlowExtras {
            calls: st.counters.blocks.load(Relaxed),
            errors: st.counters.errors.load(Relaxed),
            read_bins: (st.role == StreamRole::Recv && !udp)
                .then(|| fc.map(|c| c.bins()))
                .flatten(),
            latency: fc
                .filter(|c| c.trip_times())
                .map(|c| c.total_latency().stats().unwrap_or_default()),
            retransmits: tcp.map(|t| t.retransmits),
            tcp,
            histogram,
            ..FlowExtras::default()
        };
        if udp {
            let c = &st.counters;
            let lat = extras.latency.take();
            let mut u = udp_flow(
                st.role,
                c.packets.load(Relaxed) as i64,
                c.lost.load(Relaxed),
                c.out_of_order.load(Relaxed) as i64,
                c.jitter() * 1e3,
                extras.calls,
                dur,
                lat,
            );
            if st.role == StreamRole::Send {
                // The datagrams and the FIN that ends them: a full-size
                // datagram that 2.1.8 counts as data at both ends, so the
                // two ends' totals agree.
                let sent = c.packets.load(Relaxed);
                bytes += bytes.checked_div(sent).unwrap_or(0);
                u.sent = Some(sent as i64 + 1);
            }
            extras.udp = Some(u);
        }
        Some(FlowLine {
            id: st.id,
            sender: st.role == StreamRole::Send,
            start: 0.0,
            end: dur,
            bytes,
            bits_per_second: rate(bytes, dur),
            extras,
            addrs: self.info.get(i).and_then(|f| f.addrs.clone()),
            reversed: self.info.get(i).is_some_and(|f| f.reversed),
        })
    }
}

/// A UDP flow's line numbers: a receiver's loss, reordering, jitter,
/// latency and rates; a sender's rate. `packets` is the highest sequence
/// number's advance (receiver) or datagrams sent, `datagrams` the
/// datagrams that moved in the span.
#[allow(clippy::too_many_arguments)]
fn udp_flow(
    role: StreamRole,
    packets: i64,
    lost: i64,
    out_of_order: i64,
    jitter_ms: f64,
    datagrams: u64,
    secs: f64,
    latency: Option<LatencyStats>,
) -> UdpFlow {
    let pps = if secs > 0.0 { datagrams as f64 / secs } else { 0.0 };
    if role == StreamRole::Send {
        return UdpFlow {
            pps,
            ..UdpFlow::default()
        };
    }
    let in_flight = latency.map(|l| {
        (
            datagrams as i64,
            (pps * l.mean).round(),
            (pps * l.stdev * l.stdev).round(),
        )
    });
    UdpFlow {
        jitter_ms,
        lost: lost.max(0),
        total: packets,
        out_of_order,
        pps,
        latency,
        in_flight,
        sent: None,
    }
}

/// Sums lines over a span `[start, end]`.
fn sum_lines<'a>(lines: impl Iterator<Item = &'a FlowLine>, id: u32, start: f64, end: f64) -> FlowLine {
    let mut bytes = 0;
    let mut ex = FlowExtras::default();
    let mut bins: Option<[u64; 8]> = None;
    let mut retr: Option<i64> = None;
    let mut udp: Option<UdpFlow> = None;
    let mut sender = true;
    for l in lines {
        bytes += l.bytes;
        sender &= l.sender;
        ex.calls += l.extras.calls;
        ex.errors += l.extras.errors;
        if let Some(b) = l.extras.read_bins {
            let acc = bins.get_or_insert([0; 8]);
            for (a, x) in acc.iter_mut().zip(b) {
                *a += x;
            }
        }
        if let Some(r) = l.extras.retransmits {
            *retr.get_or_insert(0) += r;
        }
        if let Some(u) = &l.extras.udp {
            let acc = udp.get_or_insert_with(UdpFlow::default);
            acc.lost += u.lost;
            acc.total += u.total;
            acc.out_of_order += u.out_of_order;
            acc.pps += u.pps;
            if let Some(n) = u.sent {
                *acc.sent.get_or_insert(0) += n;
            }
        }
    }
    ex.read_bins = bins;
    ex.retransmits = retr;
    ex.udp = udp;
    FlowLine {
        id,
        sender,
        reversed: false,
        start,
        end,
        bytes,
        bits_per_second: rate(bytes, end - start),
        extras: ex,
        addrs: None,
    }
}

/// iperf2's NetPwr: bytes per second over a delay, × 1e-6 (`None` when
/// the delay is unknown).
pub fn net_power(bits_per_second: f64, delay_secs: f64) -> Option<f64> {
    (delay_secs > 0.0).then(|| bits_per_second / 8.0 / delay_secs * 1e-6)
}

fn add_derived(l: &mut FlowLine) {
    if let Some(u) = l.extras.udp.as_ref() {
        if let Some(lat) = u.latency.filter(|x| x.count > 0) {
            l.extras.net_power = net_power(l.bits_per_second, lat.mean);
        }
        return;
    }
    if let Some(t) = l.extras.tcp
        && l.sender
    {
        l.extras.net_power = net_power(l.bits_per_second, t.rtt as f64 * 1e-6);
    }
    if let Some(lat) = l.extras.latency
        && lat.count > 0
    {
        l.extras.net_power = net_power(l.bits_per_second, lat.mean);
        l.extras.in_flight = Some(l.bits_per_second / 8.0 * lat.mean);
    }
}

fn build(final_report: bool, mut flows: Vec<FlowLine>, start: f64, end: f64) -> FlowReport {
    flows.iter_mut().for_each(add_derived);
    let sum = sum_lines(flows.iter(), 0, start, end);
    // Full duplex: both directions of one connection share its id.
    let mut pairs = Vec::new();
    let mut seen = Vec::new();
    for f in &flows {
        if seen.contains(&f.id) {
            continue;
        }
        let both: Vec<&FlowLine> = flows.iter().filter(|g| g.id == f.id).collect();
        if both.len() == 2 && both[0].sender != both[1].sender {
            let e = both.iter().map(|l| l.end).fold(0.0, f64::max);
            let s = both.iter().map(|l| l.start).fold(f64::MAX, f64::min);
            pairs.push(sum_lines(both.into_iter(), f.id, s, e));
        }
        seen.push(f.id);
    }
    FlowReport {
        final_report,
        flows,
        sum,
        pairs,
        relay: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Protocol;
    use crate::stats::{StreamCounters, StreamStats};
    use std::time::{Duration, Instant};

    #[test]
    fn welford_matches_the_textbook() {
        let mut w = Welford::default();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            w.add(x, 10);
        }
        assert_eq!(w.count, 8);
        assert!((w.mean - 5.0).abs() < 1e-12);
        // Sample stdev of that set: sqrt(32/7).
        assert!((w.stdev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((w.min, w.max, w.bytes), (2.0, 9.0, 80));
    }

    #[test]
    fn read_sizes_fall_into_eighths_of_the_buffer() {
        let c = FlowCounters::new(131072, false);
        assert_eq!(c.bin_width, 16384);
        for n in [1, 16383, 16384, 65536, 131072, 500_000] {
            c.count_read(n);
        }
        assert_eq!(c.bins(), [2, 1, 0, 0, 1, 0, 0, 2]);
    }

    fn stream(id: u32, role: StreamRole) -> (StreamStats, Arc<StreamCounters>) {
        let c = Arc::new(StreamCounters::default());
        (StreamStats::new(id, id as i32, role, None, c.clone(), None), c)
    }

    #[test]
    fn intervals_carry_call_counts_bins_and_latency_deltas() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Recv);
        let (b, cb) = stream(2, StreamRole::Recv);
        let mut st = TestStats::new(vec![a, b], Protocol::Tcp, 2, false, t0, t0);
        let fa = FlowCounters::new(800, true);
        let mut fs = FlowStats::new(
            vec![
                FlowInfo {
                    counters: Some(fa.clone()),
                    ..FlowInfo::default()
                },
                FlowInfo::default(),
            ],
            None,
        );
        ca.bytes.store(1000, Relaxed);
        ca.blocks.store(10, Relaxed);
        cb.bytes.store(3000, Relaxed);
        cb.blocks.store(3, Relaxed);
        fa.count_read(100);
        fa.count_read(750);
        fa.record_latency(0.002, 800);
        fa.record_latency(0.004, 800);
        let rep = st.sample(t0 + Duration::from_secs(1), 0.0).unwrap();
        let r = fs.interval(&rep, &st, false);
        assert!(!r.final_report);
        assert_eq!(r.flows[0].extras.calls, 10);
        assert_eq!(r.flows[0].extras.read_bins, Some([0, 1, 0, 0, 0, 0, 0, 1]));
        let lat = r.flows[0].extras.latency.unwrap();
        assert_eq!(lat.count, 2);
        assert!((lat.mean - 0.003).abs() < 1e-12);
        // 1000 bytes in 1 s over 3 ms: NetPwr 1000/0.003e6, in flight 3 bytes.
        assert!((r.flows[0].extras.net_power.unwrap() - 1000.0 / 0.003 * 1e-6).abs() < 1e-9);
        assert!((r.flows[0].extras.in_flight.unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(r.flows[1].extras.read_bins, None);
        assert_eq!(r.sum.bytes, 4000);
        assert_eq!(r.sum.extras.calls, 13);
        assert!(r.pairs.is_empty());
        // The next interval starts from zero.
        ca.blocks.store(12, Relaxed);
        fa.count_read(100);
        let rep = st.sample(t0 + Duration::from_secs(2), 0.0).unwrap();
        let r = fs.interval(&rep, &st, false);
        assert_eq!(r.flows[0].extras.calls, 2);
        assert_eq!(r.flows[0].extras.read_bins, Some([0, 1, 0, 0, 0, 0, 0, 0]));
        assert_eq!(r.flows[0].extras.latency.unwrap().count, 0);
        // The end report has whole-test totals.
        let e = fs.end(&st);
        assert!(e.final_report);
        assert_eq!(e.flows[0].extras.calls, 12);
        assert_eq!(e.flows[0].extras.latency.unwrap().count, 2);
        assert_eq!(e.sum.bytes, 4000);
    }

    #[test]
    fn interval_reports_sit_on_the_grid() {
        let mut fs = FlowStats::new(Vec::new(), Some(std::time::Duration::from_millis(500)));
        assert_eq!(fs.span(0.5007, false, None), (0.0, 0.5));
        assert_eq!(fs.span(1.0011, false, None), (0.5, 1.0));
        // A late tick that covers two steps.
        assert_eq!(fs.span(2.0004, false, None), (1.0, 2.0));
        assert_eq!(fs.span(2.2, true, None), (2.0, 2.2));
        let mut fs = FlowStats::new(Vec::new(), Some(std::time::Duration::from_secs(1)));
        assert_eq!(fs.span(1.0, false, None), (0.0, 1.0));
        assert_eq!(fs.span(2.004, true, None), (1.0, 2.0));
        // The flows ended inside the step.
        let mut fs = FlowStats::new(Vec::new(), Some(std::time::Duration::from_millis(500)));
        assert_eq!(fs.span(0.5, false, None), (0.0, 0.5));
        assert_eq!(fs.span(1.2, false, Some(0.91)), (0.5, 0.91));
    }

    #[test]
    fn full_duplex_directions_pair_up_by_id() {
        let t0 = Instant::now();
        let (a, ca) = stream(1, StreamRole::Send);
        let (b, cb) = stream(1, StreamRole::Recv);
        let mut st = TestStats::new(vec![a, b], Protocol::Tcp, 1, false, t0, t0);
        let mut fs = FlowStats::new(vec![FlowInfo::default(), FlowInfo::default()], None);
        ca.bytes.store(100, Relaxed);
        cb.bytes.store(50, Relaxed);
        let rep = st.sample(t0 + Duration::from_secs(1), 0.0).unwrap();
        let r = fs.interval(&rep, &st, false);
        assert_eq!(r.pairs.len(), 1);
        assert_eq!(r.pairs[0].bytes, 150);
        assert_eq!(r.pairs[0].id, 1);
    }
}
