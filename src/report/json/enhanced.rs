//! What an iperf 2 test's JSON adds to iperf3's keys (wirespeed's schema,
//! `docs/json-iperf2.md`): per stream an `"iperf2"` object with the
//! enhanced-report numbers, the full-duplex pair sums of an interval, and
//! the receiver's report an iperf 2 UDP sender gets back.

use serde_json::{Map, Value};

use super::keys::obj;
use crate::events::*;
use crate::json::num;

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

/// The `"iperf2"` object of one stream (or sum) sample.
pub fn stream_extras(s: &StreamSample) -> Value {
    let e = &s.extras;
    let mut m = obj();
    if s.id != 0 {
        m.insert("transfer_id".into(), Value::from(s.id));
    }
    m.insert("reversed".into(), Value::Bool(s.reversed));
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
    if s.both_ways {
        m.insert("bytes_both_ways".into(), Value::Bool(true));
    }
    Value::Object(m)
}

/// Adds the iperf 2 extras to one `intervals[]` element built from `r`.
pub fn interval(v: &mut Value, r: &IntervalReport) {
    let Value::Object(m) = v else { return };
    if let Some(Value::Array(streams)) = m.get_mut("streams") {
        for (o, s) in streams.iter_mut().zip(&r.streams) {
            if let Value::Object(o) = o {
                o.insert("iperf2".into(), stream_extras(s));
            }
        }
    }
    if let Some(Value::Object(sum)) = m.get_mut("sum") {
        sum.insert("iperf2".into(), stream_extras(&r.sum));
    }
    if !r.pairs.is_empty() {
        m.insert("full_duplex".into(), Value::Array(r.pairs.iter().map(sample).collect()));
    }
}

/// Adds the iperf 2 extras to the `end` object built from `s`: each
/// stream's whole-test numbers as this end saw them.
pub fn end(v: &mut Value, s: &Summary) {
    let Value::Object(m) = v else { return };
    if let Some(Value::Array(streams)) = m.get_mut("streams") {
        for (o, l) in streams.iter_mut().zip(&s.local.streams) {
            if let Value::Object(o) = o {
                o.insert("iperf2".into(), stream_extras(l));
            }
        }
    }
    if !s.local.pairs.is_empty() {
        m.insert(
            "full_duplex".into(),
            Value::Array(s.local.pairs.iter().map(sample).collect()),
        );
    }
}

/// One sample with iperf3's interval keys and the extras.
pub fn sample(s: &StreamSample) -> Value {
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
    }
    m.insert("iperf2".into(), stream_extras(s));
    Value::Object(m)
}

/// What the peer reported of a stream, as `end.streams[].peer_report`.
pub fn peer_report(end: &mut Map<String, Value>, ids: &[u32], p: &PeerReport) {
    let (id, v) = match p {
        PeerReport::Report(l) => (l.id, sample(l)),
        PeerReport::Missing { id, tries, refused } => {
            let mut m = obj();
            m.insert("missing".into(), Value::Bool(true));
            m.insert("tries".into(), Value::from(*tries));
            m.insert("refused".into(), Value::Bool(*refused));
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

/// Merges a second test's `end` (an iperf 2 dual or tradeoff test's
/// connect-back) into the first: its streams are appended, its sums take
/// iperf3's names for a bidirectional test's reverse direction.
pub fn merge_end(first: &mut Map<String, Value>, second: Map<String, Value>) {
    for (k, v) in second {
        match k.as_str() {
            "streams" | "full_duplex" => {
                if let (Some(Value::Array(a)), Value::Array(b)) = (first.get_mut(&k), v.clone()) {
                    a.extend(b);
                } else {
                    first.insert(k, v);
                }
            }
            k if k.starts_with("sum") => {
                first.insert(format!("{k}_bidir_reverse"), v);
            }
            _ => {
                first.entry(k).or_insert(v);
            }
        }
    }
}
