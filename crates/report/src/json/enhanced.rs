//! What an iperf 2 test's JSON adds to iperf3's keys (wirespeed's schema,
//! `docs/json-iperf2.md`): per stream an `"iperf2"` object with the
//! enhanced-report numbers, the full-duplex pair sums of an interval, and
//! the receiver's report an iperf 2 UDP sender gets back.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::keys::obj;
use crate::document as doc;
use wirespeed_core::events::*;
use wirespeed_proto::json::num;

/// Milliseconds of a latency distribution.
fn latency(l: &LatencyStats) -> Value {
    let mut m = obj();
    m.insert("count".into(), Value::from(l.count));
    m.insert("mean_ms".into(), num(l.mean * 1e3));
    m.insert("min_ms".into(), num(l.min * 1e3));
    m.insert("max_ms".into(), num(l.max * 1e3));
    m.insert("stdev_ms".into(), num(l.stdev * 1e3));
    Value::Object(m)
}

fn histogram(h: &HistogramSample) -> Value {
    let mut m = obj();
    m.insert("name".into(), Value::from(h.name));
    m.insert("bin_width".into(), Value::from(h.width.clone()));
    m.insert("count".into(), Value::from(h.count));
    let bins: Vec<Value> = h
        .bins
        .iter()
        .map(|(b, n)| Value::Array(vec![Value::from(*b), Value::from(*n)]))
        .collect();
    m.insert("bins".into(), Value::Array(bins));
    m.insert("below".into(), Value::from(h.below));
    m.insert("above".into(), Value::from(h.above));
    m.insert("outliers".into(), Value::from(h.outliers));
    m.insert("ci_lower_percent".into(), num(h.ci_lower));
    m.insert("ci_upper_percent".into(), num(h.ci_upper));
    m.insert("ci_lower_bin".into(), Value::from(h.lower_bin));
    m.insert("ci_upper_bin".into(), Value::from(h.upper_bin));
    m.insert("bin_99_7".into(), Value::from(h.bin_997));
    Value::Object(m)
}

fn bounceback(b: &BouncebackSample) -> Value {
    let mut m = obj();
    m.insert("rtt".into(), latency(&b.rtt));
    m.insert("round_trips_per_second".into(), num(b.rps));
    m.insert("retransmits".into(), Value::from(b.retransmits));
    if let Some((cwnd, rtt)) = b.tcp {
        m.insert("snd_cwnd".into(), Value::from(cwnd));
        m.insert("tcp_rtt_us".into(), Value::from(rtt));
    }
    if let Some(o) = &b.owd {
        let mut w = obj();
        w.insert("to_server".into(), latency(&o.to));
        w.insert("from_server".into(), latency(&o.from));
        w.insert("asymmetry".into(), latency(&o.asymmetry));
        m.insert("one_way".into(), Value::Object(w));
    }
    Value::Object(m)
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
pub(crate) fn stream_extras(s: &StreamSample, reversed: Option<bool>) -> Value {
    let e = &s.extras;
    let mut m = obj();
    if s.id != 0 {
        m.insert("transfer_id".into(), Value::from(s.id));
    }
    if let Some(r) = reversed {
        m.insert("reversed".into(), Value::Bool(r));
    }
    if s.connect_back {
        m.insert("connect_back".into(), Value::Bool(true));
    }
    let calls = if s.sender { "writes" } else { "reads" };
    m.insert(calls.into(), Value::from(e.calls));
    if s.sender {
        m.insert("write_errors".into(), Value::from(e.errors));
    }
    if let Some(b) = e.read_bins {
        m.insert(
            "read_size_bins".into(),
            Value::Array(b.iter().map(|x| Value::from(*x)).collect()),
        );
    }
    if let Some(l) = e.latency.as_ref().or(s.udp.as_ref().and_then(|u| u.latency.as_ref())) {
        m.insert("latency".into(), latency(l));
    }
    if let Some(u) = &s.udp {
        m.insert("packets_per_second".into(), num(u.pps));
        if let Some(n) = u.sent {
            m.insert("datagrams_sent".into(), Value::from(n));
        }
        if let Some((rx, inp, _)) = u.in_flight {
            m.insert("datagrams_received".into(), Value::from(rx));
            m.insert("datagrams_in_flight".into(), num(inp));
        }
    }
    if let Some(b) = e.in_flight {
        m.insert("bytes_in_flight".into(), num(b));
    }
    if let Some(p) = e.net_power {
        m.insert("net_power".into(), num(p));
    }
    if let Some(h) = &e.histogram {
        m.insert("histogram".into(), histogram(h));
    }
    if let Some(b) = &e.bounceback {
        m.insert("bounceback".into(), bounceback(b));
    }
    if let Some(f) = &e.frames {
        let mut o = obj();
        let (count, missed) = if s.sender {
            ("frames_sent", "slots_missed")
        } else {
            ("frames_received", "frames_lost")
        };
        o.insert(count.into(), Value::from(f.frames));
        o.insert(missed.into(), Value::from(f.missed));
        if s.sender {
            o.insert("slips".into(), Value::from(f.slips));
        }
        if let Some(l) = &f.latency {
            o.insert("latency".into(), latency(l));
        }
        m.insert("isochronous".into(), Value::Object(o));
    }
    if s.both_ways {
        m.insert("bytes_both_ways".into(), Value::Bool(true));
    }
    Value::Object(m)
}

/// Adds the iperf 2 extras to one `intervals[]` element built from `r`
/// by the host on `side`.
pub fn interval(v: &mut Value, r: &IntervalReport, side: Side) {
    let Value::Object(m) = v else { return };
    if let Some(Value::Array(streams)) = m.get_mut("streams") {
        for (o, s) in streams.iter_mut().zip(&r.streams) {
            if let Value::Object(o) = o {
                o.insert(
                    "iperf2".into(),
                    stream_extras(s, Some(server_to_client(side, s.sender))),
                );
            }
        }
    }
    if let Some(Value::Object(sum)) = m.get_mut("sum") {
        sum.insert("iperf2".into(), stream_extras(&r.sum, one_way(side, &r.streams)));
    }
    if !r.pairs.is_empty() {
        let pairs = r.pairs.iter().map(|p| sample(p, None)).collect();
        m.insert("full_duplex".into(), Value::Array(pairs));
    }
}

/// Adds the iperf 2 extras to the `end` object built from `s` by the host
/// on `side`: each stream's whole-test numbers as this end saw them.
pub fn end(v: &mut Value, s: &Summary, side: Side) {
    let Value::Object(m) = v else { return };
    if let Some(Value::Array(streams)) = m.get_mut("streams") {
        for ((o, l), st) in streams.iter_mut().zip(&s.local.streams).zip(&s.streams) {
            if let Value::Object(o) = o {
                let back = server_to_client(side, st.local_sender);
                o.insert("iperf2".into(), stream_extras(l, Some(back)));
                only_what_was_seen(o, st);
            }
        }
    }
    // iperf 2 exchanges no results: a side nobody here counted is left
    // out, not written as zeros (a UDP sender's receiver side comes back
    // with the peer's report, see `peer_report`). The client's flows are
    // the test's direction, the server's connect-back flows (-d, -r) its
    // reverse (`stats` sums them apart), each with only what was seen.
    if !s.streams.iter().any(|st| st.peer_known) {
        for (suffix, back, d) in [
            ("", false, Some(&s.forward)),
            ("_bidir_reverse", true, s.reverse.as_ref()),
        ] {
            let dir: Vec<&StreamSummary> = s.streams.iter().filter(|st| st.connect_back == back).collect();
            let sends = dir.iter().any(|st| st.local_sender);
            let receives = dir.iter().any(|st| !st.local_sender);
            if !receives {
                m.shift_remove(&format!("sum_received{suffix}"));
            }
            if !sends {
                m.shift_remove(&format!("sum_sent{suffix}"));
            }
            if dir.is_empty() {
                m.shift_remove(&format!("sum{suffix}"));
            } else if !sends && let (Some(Value::Object(sum)), Some(d)) = (m.get_mut(&format!("sum{suffix}")), d) {
                sum.insert("bytes".into(), Value::from(d.received.bytes));
                sum.insert("bits_per_second".into(), num(d.received.bits_per_second));
            }
        }
    }
    if let Some(Value::Object(cpu)) = m.get_mut("cpu_utilization_percent") {
        cpu.retain(|k, _| !k.starts_with("remote_"));
    }
    if !s.local.pairs.is_empty() {
        let pairs = s.local.pairs.iter().map(|p| sample(p, None)).collect();
        m.insert("full_duplex".into(), Value::Array(pairs));
    }
}

/// One stream of `end` with only the side this host counted: the
/// receiver's half of a sending stream (or the reverse) is dropped, and a
/// receiving UDP stream shows the bytes it received.
fn only_what_was_seen(o: &mut Map<String, Value>, st: &StreamSummary) {
    if st.peer_known {
        return;
    }
    o.shift_remove(if st.local_sender { "receiver" } else { "sender" });
    if !st.local_sender
        && let Some(Value::Object(u)) = o.get_mut("udp")
    {
        u.insert("bytes".into(), Value::from(st.receiver.bytes));
        u.insert("bits_per_second".into(), num(st.receiver.bits_per_second));
    }
}

/// `end.sum_received` of a sender, rebuilt from the reports its peers
/// sent back (`streams[].peer_report`); marked `"from_peer_report"`. The
/// reports of connect-back flows (`-d`, `-r`) make
/// `sum_received_bidir_reverse`.
pub(crate) fn sum_peer_reports(end: &mut Map<String, Value>) {
    for (suffix, back) in [("", false), ("_bidir_reverse", true)] {
        sum_peer_reports_of(end, suffix, back);
    }
}

fn sum_peer_reports_of(end: &mut Map<String, Value>, suffix: &str, back: bool) {
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
    let key = format!("sum_received{suffix}");
    let f = |x: Option<f64>| x.unwrap_or(0.0);
    let u = |x: Option<i64>| x.unwrap_or(0).max(0) as u64;
    let end_s = reports.iter().map(|r| f(r.end)).fold(0.0, f64::max);
    let bytes: u64 = reports.iter().map(|r| f(r.bytes).max(0.0) as u64).sum();
    let mut m = obj();
    m.insert("start".into(), num(0.0));
    m.insert("end".into(), num(end_s));
    m.insert("seconds".into(), num(end_s));
    m.insert("bytes".into(), Value::from(bytes));
    m.insert(
        "bits_per_second".into(),
        num(reports.iter().map(|r| f(r.bits_per_second)).sum()),
    );
    if reports.iter().any(|r| r.packets.is_some()) {
        let lost: u64 = reports.iter().map(|r| u(r.lost_packets)).sum();
        let packets: u64 = reports.iter().map(|r| u(r.packets)).sum();
        let jitter = reports.iter().map(|r| f(r.jitter_ms)).sum::<f64>() / reports.len() as f64;
        m.insert("jitter_ms".into(), num(jitter));
        m.insert("lost_packets".into(), Value::from(lost));
        m.insert("packets".into(), Value::from(packets));
        let pct = if packets > 0 {
            lost as f64 * 100.0 / packets as f64
        } else {
            0.0
        };
        m.insert("lost_percent".into(), num(pct));
    }
    m.insert("sender".into(), Value::Bool(true));
    m.insert("from_peer_report".into(), Value::Bool(true));
    end.insert(key, Value::Object(m));
}

/// One sample with iperf3's interval keys and the extras (`reversed` as
/// [`stream_extras`] takes it).
pub fn sample(s: &StreamSample, reversed: Option<bool>) -> Value {
    let mut m = obj();
    m.insert("start".into(), num(s.start));
    m.insert("end".into(), num(s.end));
    m.insert("seconds".into(), num(s.end - s.start));
    m.insert("bytes".into(), Value::from(s.bytes));
    m.insert("bits_per_second".into(), num(s.bits_per_second));
    if let Some(u) = &s.udp {
        m.insert("jitter_ms".into(), num(u.jitter_ms));
        m.insert("lost_packets".into(), Value::from(u.lost.max(0)));
        m.insert("packets".into(), Value::from(u.packets));
        m.insert("lost_percent".into(), num(u.lost_percent));
        m.insert("out_of_order".into(), Value::from(u.out_of_order));
        // The ECN field, only when in play.
        if let Some(e) = &u.ecn {
            m.insert(
                "ecn".into(),
                wirespeed_proto::iperf3::results::ecn_value(e.sent, &e.counts),
            );
        }
    }
    m.insert("iperf2".into(), stream_extras(s, reversed));
    Value::Object(m)
}

/// A receiver's report of a stream this host (on `side`) sent: the
/// `peer_report` of `--json-stream` and of `end.streams[]`.
pub(crate) fn report_sample(l: &StreamSample, side: Side) -> Value {
    let mut v = sample(l, Some(server_to_client(side, true)));
    // A server report carries no read count, and a packet rate only with
    // its latency block: unknown is left out, not 0.
    if let Some(Value::Object(x)) = v.get_mut("iperf2") {
        x.shift_remove("reads");
        if l.udp.as_ref().is_none_or(|u| u.latency.is_none()) {
            x.shift_remove("packets_per_second");
        }
    }
    v
}

/// What the peer reported of a stream this host (on `side`) sent, as
/// `end.streams[].peer_report`.
pub fn peer_report(end: &mut Map<String, Value>, ids: &[u32], p: &PeerReport, side: Side) {
    let (id, v) = match p {
        PeerReport::Report(l) => (l.id, report_sample(l, side)),
        PeerReport::Missing { id, tries, refused } => {
            let mut m = obj();
            m.insert("missing".into(), Value::Bool(true));
            m.insert("tries".into(), Value::from(*tries));
            m.insert("refused".into(), Value::Bool(*refused > 0));
            (*id, Value::Object(m))
        }
        PeerReport::Undelivered { .. } => return,
    };
    let Some(i) = ids.iter().position(|x| *x == id) else {
        return;
    };
    if let Some(Value::Object(o)) = end.get_mut("streams").and_then(|s| s.get_mut(i)) {
        o.insert("peer_report".into(), v);
    }
}

/// `peer_report` lines (of `--json-stream`) written into the streams of
/// `end` they report on, by transfer id, where a stream has none yet.
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
