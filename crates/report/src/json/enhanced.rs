//! What an iperf 2 test's JSON adds to iperf3's keys (wirespeed's schema,
//! `docs/json-iperf2.md`): per stream an `"iperf2"` object with the
//! enhanced-report numbers, the full-duplex pair sums of an interval, and
//! the receiver's report an iperf 2 UDP sender gets back.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::keys;
use crate::document as doc;
use wirespeed_core::events::*;

/// A count as the model's integer.
fn int(v: u64) -> Option<i64> {
    Some(i64::try_from(v).unwrap_or(i64::MAX))
}

/// Milliseconds of a latency distribution.
fn spread(l: &LatencyStats) -> doc::Spread {
    doc::Spread {
        count: int(l.count),
        mean_ms: Some(l.mean * 1e3),
        min_ms: Some(l.min * 1e3),
        max_ms: Some(l.max * 1e3),
        stdev_ms: Some(l.stdev * 1e3),
        ..doc::Spread::default()
    }
}

fn histogram(h: &HistogramSample) -> doc::Histogram {
    let bins = h
        .bins
        .iter()
        .map(|(b, n)| (int(*b).unwrap_or_default(), int(*n).unwrap_or_default()));
    doc::Histogram {
        name: Some(h.name.to_string()),
        bin_width: Some(h.width.clone()),
        count: int(h.count),
        bins: Some(bins.collect()),
        below: int(h.below),
        above: int(h.above),
        outliers: int(h.outliers),
        ci_lower_percent: Some(h.ci_lower),
        ci_upper_percent: Some(h.ci_upper),
        ci_lower_bin: int(h.lower_bin),
        ci_upper_bin: int(h.upper_bin),
        bin_99_7: int(h.bin_997),
        ..doc::Histogram::default()
    }
}

fn bounceback(b: &BouncebackSample) -> doc::Bounceback {
    doc::Bounceback {
        rtt: Some(spread(&b.rtt)),
        round_trips_per_second: Some(b.rps),
        retransmits: Some(i64::from(b.retransmits)),
        snd_cwnd: b.tcp.and_then(|(cwnd, _)| int(cwnd)),
        tcp_rtt_us: b.tcp.map(|(_, rtt)| i64::from(rtt)),
        one_way: b.owd.as_ref().map(|o| doc::OneWay {
            to_server: Some(spread(&o.to)),
            from_server: Some(spread(&o.from)),
            asymmetry: Some(spread(&o.asymmetry)),
            ..doc::OneWay::default()
        }),
        ..doc::Bounceback::default()
    }
}

/// Whether a stream's data goes from the server to the client, for the
/// host on `side` that `sends` on it (or receives).
pub(crate) fn server_to_client(side: Side, sends: bool) -> bool {
    (side == Side::Server) == sends
}

/// The direction of samples that all flow one way (`None`: mixed, or none).
fn one_way(side: Side, samples: &[StreamSample]) -> Option<bool> {
    let first = server_to_client(side, samples.first()?.sender);
    samples
        .iter()
        .all(|s| server_to_client(side, s.sender) == first)
        .then_some(first)
}

/// The `"iperf2"` object of one stream (or sum) sample; `reversed`: whether
/// its data goes from the server to the client (`None`: both ways, left out).
pub(crate) fn stream_extras(s: &StreamSample, reversed: Option<bool>) -> doc::Iperf2 {
    let e = &s.extras;
    let udp = s.udp.as_ref();
    let sender = s.sender;
    doc::Iperf2 {
        transfer_id: (s.id != 0).then_some(i64::from(s.id)),
        reversed,
        connect_back: s.connect_back.then_some(true),
        writes: if sender { int(e.calls) } else { None },
        reads: if sender { None } else { int(e.calls) },
        write_errors: if sender { int(e.errors) } else { None },
        read_size_bins: e.read_bins.map(|b| b.iter().filter_map(|x| int(*x)).collect()),
        latency: e.latency.as_ref().or(udp.and_then(|u| u.latency.as_ref())).map(spread),
        packets_per_second: udp.map(|u| u.pps),
        datagrams_sent: udp.and_then(|u| u.sent),
        datagrams_received: udp.and_then(|u| u.in_flight).map(|(rx, _, _)| rx),
        datagrams_in_flight: udp.and_then(|u| u.in_flight).map(|(_, inp, _)| inp),
        bytes_in_flight: e.in_flight,
        net_power: e.net_power,
        histogram: e.histogram.as_ref().map(histogram),
        bounceback: e.bounceback.as_ref().map(bounceback),
        isochronous: e.frames.as_ref().map(|f| doc::Isochronous {
            frames_sent: if sender { int(f.frames) } else { None },
            frames_received: if sender { None } else { int(f.frames) },
            slots_missed: if sender { int(f.missed) } else { None },
            frames_lost: if sender { None } else { int(f.missed) },
            slips: if sender { int(f.slips) } else { None },
            latency: f.latency.as_ref().map(spread),
            ..doc::Isochronous::default()
        }),
        bytes_both_ways: s.both_ways.then_some(true),
        ..doc::Iperf2::default()
    }
}

/// Adds the iperf 2 extras to one `intervals[]` element built from `r`
/// by the host on `side`.
pub fn interval(v: &mut doc::Interval, r: &IntervalReport, side: Side) {
    for (o, s) in v.streams.iter_mut().zip(&r.streams) {
        o.iperf2 = Some(stream_extras(s, Some(server_to_client(side, s.sender))));
    }
    if let Some(sum) = v.sum.as_mut() {
        sum.iperf2 = Some(stream_extras(&r.sum, one_way(side, &r.streams)));
    }
    v.full_duplex = r.pairs.iter().map(|p| sample(p, None)).collect();
}

/// The `(sum, sum_sent, sum_received)` of one direction of `end`
/// (`back`: the connect-back's, `*_bidir_reverse`).
fn sums(e: &mut doc::End, back: bool) -> [&mut Option<doc::Totals>; 3] {
    if back {
        [
            &mut e.sum_bidir_reverse,
            &mut e.sum_sent_bidir_reverse,
            &mut e.sum_received_bidir_reverse,
        ]
    } else {
        [&mut e.sum, &mut e.sum_sent, &mut e.sum_received]
    }
}

/// Adds the iperf 2 extras to the `end` object built from `s` by the host
/// on `side`: each stream's whole-test numbers as this end saw them.
pub fn end(m: &mut doc::End, s: &Summary, side: Side) {
    for ((o, l), st) in m.streams.iter_mut().zip(&s.local.streams).zip(&s.streams) {
        let back = server_to_client(side, st.local_sender);
        o.iperf2 = Some(stream_extras(l, Some(back)));
        only_what_was_seen(o, st);
    }
    // iperf 2 exchanges no results: a side nobody here counted is left
    // out, not written as zeros (a UDP sender's receiver side comes back
    // with the peer's report, see `peer_report`). The client's flows are
    // the test's direction, the server's connect-back flows (-d, -r) its
    // reverse (`stats` sums them apart), each with only what was seen.
    if !s.streams.iter().any(|st| st.peer_known) {
        for (back, d) in [(false, Some(&s.forward)), (true, s.reverse.as_ref())] {
            let dir: Vec<&StreamSummary> = s.streams.iter().filter(|st| st.connect_back == back).collect();
            let sends = dir.iter().any(|st| st.local_sender);
            let receives = dir.iter().any(|st| !st.local_sender);
            let [sum, sum_sent, sum_received] = sums(m, back);
            if !receives {
                *sum_received = None;
            }
            if !sends {
                *sum_sent = None;
            }
            if dir.is_empty() {
                *sum = None;
            } else if !sends && let (Some(sum), Some(d)) = (sum.as_mut(), d) {
                sum.bytes = Some(d.received.bytes as f64);
                sum.bits_per_second = Some(d.received.bits_per_second);
            }
        }
    }
    if let Some(cpu) = m.cpu_utilization_percent.as_mut() {
        (cpu.remote_total, cpu.remote_user, cpu.remote_system) = (None, None, None);
    }
    m.full_duplex = s.local.pairs.iter().map(|p| sample(p, None)).collect();
}

/// One stream of `end` with only the side this host counted: the
/// receiver's half of a sending stream (or the reverse) is dropped, and a
/// receiving UDP stream shows the bytes it received.
fn only_what_was_seen(o: &mut doc::EndStream, st: &StreamSummary) {
    if st.peer_known {
        return;
    }
    if st.local_sender {
        o.receiver = None;
    } else {
        o.sender = None;
        if let Some(u) = o.udp.as_mut() {
            u.bytes = Some(st.receiver.bytes as f64);
            u.bits_per_second = Some(st.receiver.bits_per_second);
        }
    }
}

/// `end.sum_received` of a sender, rebuilt from the reports its peers
/// sent back (`streams[].peer_report`); marked `"from_peer_report"`. The
/// reports of connect-back flows (`-d`, `-r`) make
/// `sum_received_bidir_reverse`.
pub(crate) fn sum_peer_reports(end: &mut Map<String, Value>) {
    for back in [false, true] {
        sum_peer_reports_of(end, back);
    }
}

fn sum_peer_reports_of(end: &mut Map<String, Value>, back: bool) {
    let Ok(read) = doc::End::deserialize(&Value::Object(end.clone())) else {
        return;
    };
    let had = if back {
        &read.sum_received_bidir_reverse
    } else {
        &read.sum_received
    };
    if had.as_ref().is_some_and(|r| r.from_peer_report.is_none()) {
        return;
    }
    let reports: Vec<&doc::Totals> = (read.streams.iter())
        .filter(|o| doc::Iperf2::is_connect_back(&o.iperf2) == back)
        .filter_map(|o| o.peer_report.as_ref())
        .filter(|r| r.bytes.is_some())
        .collect();
    if reports.is_empty() {
        return;
    }
    let f = |x: Option<f64>| x.unwrap_or(0.0);
    let u = |x: Option<i64>| x.unwrap_or(0).max(0) as u64;
    let end_s = reports.iter().map(|r| f(r.end)).fold(0.0, f64::max);
    let bytes: u64 = reports.iter().map(|r| f(r.bytes).max(0.0) as u64).sum();
    let mut sum = doc::Totals {
        start: Some(0.0),
        end: Some(end_s),
        seconds: Some(end_s),
        bytes: Some(bytes as f64),
        bits_per_second: Some(reports.iter().map(|r| f(r.bits_per_second)).sum()),
        sender: Some(true),
        from_peer_report: Some(true),
        ..doc::Totals::default()
    };
    if reports.iter().any(|r| r.packets.is_some()) {
        let lost: u64 = reports.iter().map(|r| u(r.lost_packets)).sum();
        let packets: u64 = reports.iter().map(|r| u(r.packets)).sum();
        let jitter = reports.iter().map(|r| f(r.jitter_ms)).sum::<f64>() / reports.len() as f64;
        sum.jitter_ms = Some(jitter);
        sum.lost_packets = i64::try_from(lost).ok();
        sum.packets = i64::try_from(packets).ok();
        sum.lost_percent = Some(if packets > 0 {
            lost as f64 * 100.0 / packets as f64
        } else {
            0.0
        });
    }
    // The key goes where it was, or after the keys there (the document's
    // `end` is JSON by now, merged in the order its parts came): its name
    // is the model's.
    let mut named = doc::End::default();
    *sums(&mut named, back)[2] = Some(sum);
    for (k, v) in keys::to_map(&named) {
        if v.is_object() {
            end.insert(k, v);
        }
    }
}

/// One sample with iperf3's interval keys and the extras (`reversed` as
/// [`stream_extras`] takes it): a `full_duplex` pair's.
pub fn sample(s: &StreamSample, reversed: Option<bool>) -> doc::Sample {
    let u = s.udp.as_ref();
    doc::Sample {
        start: Some(s.start),
        end: Some(s.end),
        seconds: Some(s.end - s.start),
        bytes: Some(s.bytes as f64),
        bits_per_second: Some(s.bits_per_second),
        jitter_ms: u.map(|u| u.jitter_ms),
        lost_packets: u.map(|u| u.lost.max(0)),
        packets: u.map(|u| u.packets),
        lost_percent: u.map(|u| u.lost_percent),
        out_of_order: u.map(|u| u.out_of_order),
        // The ECN field, only when in play.
        ecn: u
            .and_then(|u| u.ecn.as_ref())
            .map(|e| super::keys::ecn_counts(e.sent, &e.counts)),
        l4s: u.and_then(|u| u.l4s.as_ref()).map(super::keys::l4s),
        iperf2: Some(stream_extras(s, reversed)),
        ..doc::Sample::default()
    }
}

/// A receiver's report of a stream this host (on `side`) sent: the
/// `peer_report` of `--json-stream` and of `end.streams[]`.
pub(crate) fn report_sample(l: &StreamSample, side: Side) -> doc::Totals {
    let s = sample(l, Some(server_to_client(side, true)));
    let mut iperf2 = s.iperf2;
    // A server report carries no read count, and a packet rate only with
    // its latency block: unknown is left out, not 0.
    if let Some(x) = iperf2.as_mut() {
        x.reads = None;
        if l.udp.as_ref().is_none_or(|u| u.latency.is_none()) {
            x.packets_per_second = None;
        }
    }
    doc::Totals {
        start: s.start,
        end: s.end,
        seconds: s.seconds,
        bytes: s.bytes,
        bits_per_second: s.bits_per_second,
        jitter_ms: s.jitter_ms,
        lost_packets: s.lost_packets,
        packets: s.packets,
        lost_percent: s.lost_percent,
        out_of_order: s.out_of_order,
        iperf2,
        ..doc::Totals::default()
    }
}

/// What the peer reported of a stream this host (on `side`) sent, as
/// `end.streams[].peer_report`.
pub fn peer_report(end: &mut Map<String, Value>, ids: &[u32], p: &PeerReport, side: Side) {
    let (id, report) = match p {
        PeerReport::Report(l) => (l.id, report_sample(l, side)),
        PeerReport::Missing { id, tries, refused } => (
            *id,
            doc::Totals {
                missing: Some(true),
                tries: Some(i64::from(*tries)),
                refused: Some(*refused > 0),
                ..doc::Totals::default()
            },
        ),
        PeerReport::Undelivered { .. } => return,
    };
    let Some(i) = ids.iter().position(|x| *x == id) else {
        return;
    };
    put_peer_report(end, i, report);
}

/// Writes `report` as the `peer_report` of the `i`th of `end`'s streams
/// (JSON by now: see [`merge_end`]); the key is the model's, after the
/// stream's own keys as it always was.
fn put_peer_report(end: &mut Map<String, Value>, i: usize, report: doc::Totals) {
    let named = doc::End {
        streams: vec![doc::EndStream {
            peer_report: Some(report),
            ..doc::EndStream::default()
        }],
        ..doc::End::default()
    };
    let Some((streams_key, Value::Array(mut named))) = keys::to_map(&named).into_iter().next() else {
        return;
    };
    let Some(Value::Object(entry)) = named.pop() else {
        return;
    };
    if let Some(Value::Object(o)) = end.get_mut(&streams_key).and_then(|s| s.get_mut(i)) {
        o.extend(entry);
    }
}

/// `peer_report` lines (of `--json-stream`) written into the streams of
/// `end` they report on, by transfer id, where a stream has none yet.
///
/// JSON, not the model: the lines are kept as they came (a foreign or
/// older writer's keys included), and the `end` is a merged one.
pub(crate) fn peer_reports_by_id(end: &mut Map<String, Value>, reports: &[Value]) {
    let id_of = |v: &Value| {
        doc::Totals::deserialize(v)
            .ok()
            .and_then(|t| doc::Iperf2::id(&t.iperf2))
    };
    let Some(Value::Array(streams)) = end.get_mut("streams") else {
        return;
    };
    for r in reports {
        let Some(id) = id_of(r) else { continue };
        if let Some(Value::Object(o)) = streams.iter_mut().find(|s| id_of(s) == Some(id))
            && !o.contains_key("peer_report")
        {
            o.insert("peer_report".into(), r.clone());
        }
    }
}

/// Merges a second test's `end` (an iperf 2 dual or tradeoff test's
/// connect-back, or the client's own when the connect-back ended first)
/// into the first: its streams are appended, and its sums, already named
/// for their direction (the connect-back's `*_bidir_reverse`), join the
/// first's.
///
/// JSON, not the model: the merged `end` keeps its keys in the order its
/// parts came (the first's, then what only the second has), which no one
/// struct's field order can say; and the stream rebuild merges lines kept
/// as they came.
pub(crate) fn merge_end(first: &mut Map<String, Value>, second: Map<String, Value>) {
    for (k, v) in second {
        match k.as_str() {
            "streams" | "full_duplex" => {
                if let (Some(Value::Array(a)), Value::Array(b)) = (first.get_mut(&k), v.clone()) {
                    a.extend(b);
                } else {
                    first.insert(k, v);
                }
            }
            _ => {
                first.entry(k).or_insert(v);
            }
        }
    }
}
