//! What a report shows, read from one iperf3 `-J` document.
//!
//! The document is the single source: our `--report` builds it with the
//! same [`JsonSink`](crate::json::JsonSink) that prints `-J`,
//! and `wirespeed report` reads one saved by us or by iperf3. Nothing here
//! is measured or recomputed; values are picked out and arranged. Input may
//! be foreign, so every field is optional and a missing or odd one is
//! skipped, never a panic.

use serde_json::Value;

use super::chart::{self, Chart, Series, Unit};
use wirespeed_core::units::format_iperf3;
use wirespeed_proto::json::lenient_i64;

mod mode;
mod rtt;
use rtt::{latency_chart, latency_table};

/// More streams than this are drawn as one light crowd, not one colour each.
const NAMED_STREAMS: usize = 8;

/// A table: header cells and rows; rows marked `true` are sums.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column titles.
    pub head: Vec<String>,
    /// Rows, with a flag for sum rows.
    pub rows: Vec<(bool, Vec<String>)>,
}

/// Everything one test's section shows.
#[derive(Debug, Clone, Default)]
pub struct TestView {
    /// Section heading.
    pub heading: String,
    /// Line under the heading (time, versions).
    pub subtitle: String,
    /// The document's `error`, if the test failed.
    pub error: Option<String>,
    /// Key results shown large: (label, value).
    pub headline: Vec<(String, String)>,
    /// Window advice text (`end.advice.text`), if present.
    pub advice: Option<String>,
    /// Plots.
    pub charts: Vec<Chart>,
    /// Remarks about what could not be plotted.
    pub notes: Vec<String>,
    /// End-of-test table.
    pub summary: Table,
    /// Idle and loaded round trips (`--latency`), if measured.
    pub latency: Option<Table>,
    /// Test parameters.
    pub params: Vec<(String, String)>,
}

/// A number, or `None` for absent, non-numeric, or iperf3 3.12's unsigned
/// image of `-1` (unavailable TCP_INFO fields).
fn num(v: &Value, key: &str) -> Option<f64> {
    let x = v.get(key)?;
    if let Some(u) = x.as_u64()
        && u > i64::MAX as u64
    {
        return None;
    }
    x.as_f64().filter(|f| f.is_finite())
}

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(lenient_i64)
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn flag(v: &Value, key: &str) -> bool {
    match v.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0) != 0,
        _ => false,
    }
}

fn bytes_text(b: f64) -> String {
    format!("{}s", format_iperf3(b, 'A'))
}

fn rate_text(bps: f64) -> String {
    format!("{}s/sec", format_iperf3(bps / 8.0, 'a'))
}

fn empty() -> &'static Value {
    static NULL: Value = Value::Null;
    &NULL
}

/// How one stream is named in legends and tables.
fn stream_label(socket: i64, sender: bool, both_ways: bool) -> String {
    match (both_ways, sender) {
        (true, true) => format!("stream {socket} (sending)"),
        (true, false) => format!("stream {socket} (receiving)"),
        _ => format!("stream {socket}"),
    }
}

/// (x, value) points.
type Points = Vec<(f64, f64)>;

/// One stream's points: (socket, this host sends, points).
type StreamPoints = (i64, bool, Points);

/// Where an interval sits on the time axis.
struct Times {
    /// Each interval's x.
    xs: Vec<f64>,
    /// The omitted warm-up, before zero.
    warm: Option<(f64, f64)>,
    /// The axis' ends.
    span: (f64, f64),
}

/// Per-stream and sum series of one measurement across all intervals.
struct Collected {
    streams: Vec<StreamPoints>,
    sums: Vec<(String, Points)>,
}

/// The time axis: intervals restart at 0 when the omitted warm-up ends, so
/// warm-up intervals are moved before zero. Returns each interval's x (its
/// middle: a point stands for the interval's average), the warm-up span if
/// any, and the axis span.
fn interval_times(intervals: &[Value]) -> Times {
    let omitted = |iv: &Value| flag(iv.get("sum").unwrap_or(empty()), "omitted");
    let warm_end = intervals
        .iter()
        .filter(|iv| omitted(iv))
        .filter_map(|iv| num(iv.get("sum").unwrap_or(empty()), "end"))
        .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
    let mut hi = 0.0f64;
    let xs = intervals
        .iter()
        .map(|iv| {
            let sum = iv.get("sum").unwrap_or(empty());
            let end = num(sum, "end").unwrap_or(0.0);
            let start = num(sum, "start").unwrap_or(end);
            let shift = match warm_end {
                Some(w) if omitted(iv) => -w,
                _ => 0.0,
            };
            hi = hi.max(end + shift);
            (start + end) / 2.0 + shift
        })
        .collect();
    let lo = warm_end.map_or(0.0, |w| -w);
    Times {
        xs,
        warm: warm_end.map(|w| (-w, 0.0)),
        span: (lo, hi),
    }
}

/// Gathers `pick(stream)` over intervals, per stream (by socket) and for sums.
fn collect(intervals: &[Value], xs: &[f64], pick: &dyn Fn(&Value) -> Option<f64>) -> Collected {
    let mut streams: Vec<StreamPoints> = Vec::new();
    let mut sums: Vec<(String, Points)> = Vec::new();
    let both_ways = has_both_directions(intervals);
    for (iv, &x) in intervals.iter().zip(xs) {
        for st in iv.get("streams").and_then(Value::as_array).into_iter().flatten() {
            let (Some(sock), Some(v)) = (int(st, "socket"), pick(st)) else {
                continue;
            };
            let sender = flag(st, "sender");
            match streams.iter_mut().find(|(s, d, _)| *s == sock && *d == sender) {
                Some((_, _, pts)) => pts.push((x, v)),
                None => streams.push((sock, sender, vec![(x, v)])),
            }
        }
        for key in ["sum", "sum_bidir_reverse"] {
            let Some(sum) = iv.get(key) else { continue };
            let Some(v) = pick(sum) else { continue };
            let label = if both_ways {
                if flag(sum, "sender") {
                    "sum (sending)".to_string()
                } else {
                    "sum (receiving)".to_string()
                }
            } else {
                "sum".to_string()
            };
            match sums.iter_mut().find(|(l, _)| *l == label) {
                Some((_, pts)) => pts.push((x, v)),
                None => sums.push((label, vec![(x, v)])),
            }
        }
    }
    Collected { streams, sums }
}

fn has_both_directions(intervals: &[Value]) -> bool {
    let mut seen = [false, false];
    for iv in intervals {
        for st in iv.get("streams").and_then(Value::as_array).into_iter().flatten() {
            seen[usize::from(flag(st, "sender"))] = true;
        }
    }
    seen[0] && seen[1]
}

/// Series for a chart: one per stream (a light crowd past
/// [`NAMED_STREAMS`]), plus the sums when they add something (a direction
/// with one stream has a sum equal to it).
fn to_series(c: Collected, with_sums: bool, both_ways: bool) -> Vec<Series> {
    let per_direction = |sender: bool| c.streams.iter().filter(|s| s.1 == sender).count();
    let sums_add = per_direction(true) > 1 || per_direction(false) > 1 || c.streams.is_empty();
    let crowd = c.streams.len() > NAMED_STREAMS;
    let mut out: Vec<Series> = c
        .streams
        .iter()
        .enumerate()
        .map(|(i, (sock, sender, pts))| Series {
            label: stream_label(*sock, *sender, both_ways),
            points: pts.clone(),
            colour: if crowd { chart::CROWD_COLOUR } else { chart::colour(i) }.to_string(),
            emphasis: false,
            in_legend: !crowd,
        })
        .collect();
    if with_sums && sums_add {
        for (i, (label, pts)) in c.sums.into_iter().enumerate() {
            out.push(Series {
                label,
                points: pts,
                colour: if i == 0 { chart::SUM_COLOUR } else { chart::SUM2_COLOUR }.to_string(),
                emphasis: true,
                in_legend: true,
            });
        }
    }
    out
}

struct ChartSpec {
    id: &'static str,
    title: &'static str,
    y_name: &'static str,
    unit: Unit,
    with_sums: bool,
    pick: fn(&Value) -> Option<f64>,
}

const THROUGHPUT: ChartSpec = ChartSpec {
    id: "throughput",
    title: "Throughput",
    y_name: "Throughput",
    unit: Unit::BitsPerSecond,
    with_sums: true,
    pick: |v| num(v, "bits_per_second"),
};
const TCP_CHARTS: [ChartSpec; 3] = [
    ChartSpec {
        id: "retransmits",
        title: "TCP retransmits per interval",
        y_name: "Retransmits",
        unit: Unit::Count,
        with_sums: true,
        pick: |v| num(v, "retransmits"),
    },
    ChartSpec {
        id: "cwnd",
        title: "TCP congestion window",
        y_name: "cwnd",
        unit: Unit::Bytes,
        with_sums: false,
        pick: |v| num(v, "snd_cwnd"),
    },
    ChartSpec {
        id: "rtt",
        title: "TCP round-trip time (smoothed)",
        y_name: "RTT",
        unit: Unit::Millis,
        with_sums: false,
        pick: |v| num(v, "rtt").map(|us| us / 1000.0),
    },
];
const UDP_CHARTS: [ChartSpec; 3] = [
    ChartSpec {
        id: "jitter",
        title: "UDP jitter",
        y_name: "Jitter",
        unit: Unit::Millis,
        with_sums: false,
        pick: |v| num(v, "jitter_ms"),
    },
    ChartSpec {
        id: "loss",
        title: "UDP datagrams lost per interval",
        y_name: "Lost",
        unit: Unit::Percent,
        with_sums: true,
        pick: |v| num(v, "lost_percent"),
    },
    ChartSpec {
        id: "reorder",
        title: "UDP datagrams out of order per interval",
        y_name: "Out of order",
        unit: Unit::Count,
        with_sums: true,
        pick: |v| num(v, "out_of_order"),
    },
];

fn build_chart(spec: &ChartSpec, intervals: &[Value]) -> Option<Chart> {
    let Times { xs, warm, span } = interval_times(intervals);
    let collected = collect(intervals, &xs, &spec.pick);
    if collected.streams.is_empty() && collected.sums.is_empty() {
        return None;
    }
    let crowd = collected.streams.len() > NAMED_STREAMS;
    let n = collected.streams.len();
    let series = to_series(collected, spec.with_sums, has_both_directions(intervals));
    Some(Chart {
        id: spec.id.to_string(),
        title: spec.title.to_string(),
        y_name: spec.y_name.to_string(),
        unit: spec.unit,
        series,
        x_span: span,
        x_name: None,
        shade: warm.map(|(a, b)| (a, b, "omitted".to_string())),
        note: crowd.then(|| format!("{n} streams, drawn in light blue; the dark line is their sum.")),
    })
}

fn is_array_of_objects(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_some()
}

/// Checks that `doc` looks like an iperf3 `-J` document.
pub(crate) fn check_document(doc: &Value) -> Result<(), String> {
    let obj = doc.as_object().ok_or("the JSON value is not an object")?;
    // A mode's document (`--rpm`, `--udp-search`) has a shape of its own.
    if mode::is_search(doc) || mode::is_rpm(doc) {
        return Ok(());
    }
    if !obj.get("start").is_some_and(Value::is_object) {
        return Err("it has no \"start\" object".into());
    }
    if !is_array_of_objects(obj.get("intervals")) {
        return Err("it has no \"intervals\" array".into());
    }
    if !obj.get("end").is_some_and(Value::is_object) {
        return Err("it has no \"end\" object".into());
    }
    Ok(())
}

/// Builds the view of one document (already checked with [`check_document`]).
pub fn view(doc: &Value) -> TestView {
    if mode::is_search(doc) {
        return mode::search_view(doc);
    }
    if mode::is_rpm(doc) {
        return mode::rpm_view(doc);
    }
    let start = doc.get("start").unwrap_or(empty());
    let end = doc.get("end").unwrap_or(empty());
    let ts = start.get("test_start").unwrap_or(empty());
    let intervals: Vec<Value> = doc
        .get("intervals")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let protocol = text(ts, "protocol").unwrap_or("TCP").to_string();
    let udp = protocol.eq_ignore_ascii_case("UDP");
    let mut v = TestView {
        heading: heading(start, &protocol),
        subtitle: subtitle(doc, start),
        error: text(doc, "error").map(str::to_string),
        advice: end.get("advice").and_then(|a| text(a, "text")).map(str::to_string),
        ..TestView::default()
    };
    if intervals.is_empty() {
        v.notes
            .push("No intervals were measured, so there is nothing to plot.".into());
    }
    if let Some(c) = build_chart(&THROUGHPUT, &intervals) {
        v.charts.push(c);
    }
    // Round trips under the load, right under the throughput they met.
    if let Some(c) = latency_chart(&intervals) {
        v.charts.push(c);
    }
    if udp {
        // Jitter and loss are the receiver's numbers; a sending client has
        // them only in the server's document (--get-server-output).
        let own = intervals
            .iter()
            .any(|iv| iv.get("sum").is_some_and(|s| s.get("jitter_ms").is_some()));
        let server_intervals: Vec<Value> = doc
            .get("server_output_json")
            .and_then(|s| s.get("intervals"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let (src, by_server) = if own || server_intervals.is_empty() {
            (&intervals, false)
        } else {
            (&server_intervals, true)
        };
        for spec in &UDP_CHARTS {
            if let Some(mut c) = build_chart(spec, src) {
                if by_server {
                    c.title.push_str(" (measured by the server)");
                }
                v.charts.push(c);
            }
        }
        if !own && !by_server && !intervals.is_empty() {
            v.notes.push(if is_iperf2(doc) {
                // iperf 2 has no --get-server-output: its server reports
                // the whole test only, which the summary shows.
                "Jitter and loss are measured by the receiver: this document is the sender's, \
                 and an iperf 2 server reports them for the whole test only (in the summary). \
                 Run with -R to plot them."
                    .into()
            } else {
                "Jitter and loss are measured by the receiver: this document is the sender's. \
                 Run with -R, or with --get-server-output, to plot them."
                    .into()
            });
        }
        if !src.iter().any(|iv| {
            iv.get("streams")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|s| s.get("out_of_order").is_some()))
        }) && (own || by_server)
        {
            v.notes.push(
                "Reordering is counted per test, not per interval, in iperf3's JSON: see the \
                 \"Out of order\" column of the summary."
                    .into(),
            );
        }
    } else {
        for spec in &TCP_CHARTS {
            if let Some(c) = build_chart(spec, &intervals) {
                v.charts.push(c);
            }
        }
        if !intervals.is_empty() && !v.charts.iter().any(|c| c.id == "rtt") {
            v.notes.push(
                "Retransmits, congestion window and RTT come from the sender's TCP_INFO: this \
                 document is the receiver's."
                    .into(),
            );
        }
    }
    v.headline = headline(end, udp);
    if let Some(l) = end.get("latency") {
        let p50 = |k: &str| l.get(k).and_then(|x| num(x, "p50_ms"));
        if let (Some(i), Some(b)) = (p50("idle"), p50("loaded")) {
            v.headline.push((
                "RTT idle \u{2192} loaded (p50)".into(),
                format!("{i:.2} \u{2192} {b:.2} ms"),
            ));
        }
        v.latency = Some(latency_table(l));
    }
    let seen = Seen::of(doc);
    v.summary = if udp {
        udp_table(end, seen)
    } else {
        tcp_table(end, seen)
    };
    v.params = params(doc, start, end);
    v
}

fn heading(start: &Value, protocol: &str) -> String {
    let ts = start.get("test_start").unwrap_or(empty());
    let dir = if flag(ts, "bidir") {
        "bidirectional "
    } else if flag(ts, "reverse") {
        "reverse "
    } else {
        ""
    };
    let streams = int(ts, "num_streams").unwrap_or(1);
    let what = format!(
        "{protocol} {dir}test, {streams} stream{}",
        if streams == 1 { "" } else { "s" }
    );
    let peer = |o: &Value| {
        format!(
            "{} port {}",
            text(o, "host").unwrap_or("?"),
            int(o, "port").unwrap_or(0)
        )
    };
    if let Some(c) = start.get("connecting_to") {
        format!("{what} to {}", peer(c))
    } else if let Some(a) = start.get("accepted_connection") {
        format!("{what} from {}", peer(a))
    } else {
        what
    }
}

fn subtitle(doc: &Value, start: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(t) = start.get("timestamp").and_then(|t| text(t, "time")) {
        parts.push(t.to_string());
    }
    if let Some(ver) = text(start, "version") {
        parts.push(ver.to_string());
    }
    if let Some(t) = text(doc, "title") {
        parts.insert(0, format!("\u{201c}{t}\u{201d}"));
    }
    parts.join(" \u{b7} ")
}

fn headline(end: &Value, udp: bool) -> Vec<(String, String)> {
    let mut h = Vec::new();
    let mut rate = |label: &str, key: &str| {
        if let Some(s) = end.get(key)
            && num(s, "bytes").unwrap_or(0.0) > 0.0
            && let Some(bps) = num(s, "bits_per_second")
        {
            h.push((label.to_string(), rate_text(bps)));
        }
    };
    // iperf3's --bidir, or iperf 2's -d/-r (whose client knows only what
    // it received of the server's connect-back).
    let bidir = end.get("sum_sent_bidir_reverse").is_some() || end.get("sum_received_bidir_reverse").is_some();
    if bidir {
        rate("Sent (client \u{2192} server)", "sum_sent");
        rate("Received (client \u{2192} server)", "sum_received");
        rate("Sent (server \u{2192} client)", "sum_sent_bidir_reverse");
        rate("Received (server \u{2192} client)", "sum_received_bidir_reverse");
    } else {
        rate("Sender", "sum_sent");
        rate("Receiver", "sum_received");
        if end.get("sum_sent").is_none() {
            rate("Rate", "sum");
        }
    }
    if udp {
        // The receiver's numbers: `sum_received` (an iperf 2 sender's from
        // its server's report), or `sum` of a receiver's document. A sender
        // that heard nothing back measured no jitter or loss.
        let recv = end
            .get("sum_received")
            .or_else(|| end.get("sum").filter(|_| end.get("sum_sent").is_none()))
            .unwrap_or(empty());
        if let Some(j) = num(recv, "jitter_ms") {
            h.push(("Jitter".into(), format!("{j:.3} ms")));
        }
        if let (Some(l), Some(p)) = (int(recv, "lost_packets"), int(recv, "packets")) {
            let pct = num(recv, "lost_percent").unwrap_or(0.0);
            h.push(("Lost".into(), format!("{l}/{p} ({})", percent_text(pct))));
        }
    } else {
        if let Some(r) = end.get("sum_sent").and_then(|s| int(s, "retransmits")) {
            h.push(("Retransmits".into(), r.to_string()));
        }
        let rtts: Vec<f64> = end
            .get("streams")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("sender").and_then(|x| num(x, "mean_rtt")))
            .filter(|r| *r > 0.0)
            .collect();
        if !rtts.is_empty() {
            let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
            h.push(("Mean RTT".into(), format!("{:.3} ms", mean / 1000.0)));
        }
    }
    h
}

/// Whether `doc` is an iperf 2 test's (its streams carry `"iperf2"`).
fn is_iperf2(doc: &Value) -> bool {
    let has = |streams: Option<&Value>| {
        streams
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|s| s.get("iperf2").is_some()))
    };
    has(doc.pointer("/end/streams"))
        || doc
            .get("intervals")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|iv| has(iv.get("streams"))))
}

/// One host's CPU use (`host` or `remote`), as iperf3 counts it: process
/// CPU time over wall time, so 100% is one CPU and more is more than one.
/// `None` when not measured: absent (iperf 2 exchanges none), or 0, which
/// is what an iperf3 server writes for a peer it has not heard from yet
/// (a process that moved data used some CPU).
fn cpu_text(c: &Value, who: &str) -> Option<String> {
    let total = num(c, &format!("{who}_total")).filter(|t| *t > 0.0)?;
    let part = |k: &str| num(c, &format!("{who}_{k}")).unwrap_or(0.0);
    let cpus = if total > 100.0 {
        format!(", i.e. {:.2} CPUs", total / 100.0)
    } else {
        String::new()
    };
    Some(format!(
        "{total:.1}% of one CPU{cpus} (user {:.1}%, system {:.1}%)",
        part("user"),
        part("system")
    ))
}

/// Which sides of a document its host measured, so the page leaves blank
/// (rather than shows as measured) the zeros of a side nobody told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// An iperf3 client: it writes after the results exchange and knows
    /// both sides.
    Both,
    /// An iperf3 server: it writes before the exchange, so the side its
    /// peer counted (the sender's of what it received, the receiver's of
    /// what it sent) is zeros.
    OwnSide,
    /// iperf 2: no exchange, and the document leaves out what it did not
    /// see, except a UDP stream's jitter and loss, which only a receiver
    /// measures (a sender's come back in `peer_report`/`sum_received`).
    Iperf2,
}

impl Seen {
    fn of(doc: &Value) -> Seen {
        let start = doc.get("start").unwrap_or(empty());
        if is_iperf2(doc) {
            Seen::Iperf2
        } else if start.get("connecting_to").is_none() && start.get("accepted_connection").is_some() {
            Seen::OwnSide
        } else {
            Seen::Both
        }
    }

    /// Whether this host has the sender's count of a stream or sum whose
    /// `"sender"` flag (this host sent it) is `local_sender`.
    fn sent(self, local_sender: bool) -> bool {
        self != Seen::OwnSide || local_sender
    }

    /// Whether it has the receiver's count.
    fn received(self, local_sender: bool) -> bool {
        self == Seen::Both || !local_sender
    }
}

fn percent_text(p: f64) -> String {
    format!("{}%", wirespeed_proto::json::format_g(p, 2))
}

fn tcp_table(end: &Value, seen: Seen) -> Table {
    let mut t = Table {
        head: [
            "Stream",
            "Sent",
            "Sender bitrate",
            "Retr",
            "Received",
            "Receiver bitrate",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    // A side this host did not count (`seen`) is blank, not zeros.
    let row = |label: String, s: &Value, r: &Value| -> Vec<String> {
        let local_sender = flag(s, "sender") || flag(r, "sender");
        let own = seen == Seen::OwnSide;
        let s = if own && !local_sender { empty() } else { s };
        let r = if own && local_sender { empty() } else { r };
        vec![
            label,
            num(s, "bytes").map(bytes_text).unwrap_or_default(),
            num(s, "bits_per_second").map(rate_text).unwrap_or_default(),
            int(s, "retransmits").map(|r| r.to_string()).unwrap_or_default(),
            num(r, "bytes").map(bytes_text).unwrap_or_default(),
            num(r, "bits_per_second").map(rate_text).unwrap_or_default(),
        ]
    };
    for st in end.get("streams").and_then(Value::as_array).into_iter().flatten() {
        let s = st.get("sender").unwrap_or(empty());
        let r = st.get("receiver").unwrap_or(empty());
        let sock = int(s, "socket").or_else(|| int(r, "socket")).unwrap_or(0);
        t.rows.push((false, row(format!("stream {sock}"), s, r)));
    }
    for (suffix, label) in [("", "sum"), ("_bidir_reverse", "sum (server \u{2192} client)")] {
        let s = end.get(format!("sum_sent{suffix}"));
        let r = end.get(format!("sum_received{suffix}"));
        if s.is_some() || r.is_some() {
            t.rows
                .push((true, row(label.to_string(), s.unwrap_or(empty()), r.unwrap_or(empty()))));
        }
    }
    t
}

fn udp_table(end: &Value, seen: Seen) -> Table {
    let mut t = Table {
        head: [
            "Stream",
            "Transfer",
            "Bitrate",
            "Jitter",
            "Lost/Total",
            "Lost",
            "Out of order",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    // A row's bytes and its jitter and loss are shown where this host
    // counted them (`seen`); a row of nothing it counted is left out.
    let row = |label: String, u: &Value, bytes_seen: bool, loss_seen: bool| -> Option<Vec<String>> {
        let b = if bytes_seen { u } else { empty() };
        let l = if loss_seen { u } else { empty() };
        (bytes_seen || loss_seen).then(|| {
            vec![
                label,
                num(b, "bytes").map(bytes_text).unwrap_or_default(),
                num(b, "bits_per_second").map(rate_text).unwrap_or_default(),
                num(l, "jitter_ms").map(|j| format!("{j:.3} ms")).unwrap_or_default(),
                match (int(l, "lost_packets"), int(l, "packets")) {
                    (Some(x), Some(p)) => format!("{x}/{p}"),
                    _ => String::new(),
                },
                num(l, "lost_percent").map(percent_text).unwrap_or_default(),
                int(l, "out_of_order").map(|o| o.to_string()).unwrap_or_default(),
            ]
        })
    };
    // A stream's and `sum`'s bytes are the sender's (an iperf 2 receiver
    // writes its own count), their jitter and loss the receiver's; their
    // "sender" says whether this host sent.
    let both = |u: &Value| {
        let local_sender = flag(u, "sender");
        (
            seen == Seen::Iperf2 || seen.sent(local_sender),
            seen.received(local_sender),
        )
    };
    for st in end.get("streams").and_then(Value::as_array).into_iter().flatten() {
        if let Some(u) = st.get("udp") {
            let sock = int(u, "socket").unwrap_or(0);
            let (b, l) = both(u);
            t.rows
                .extend(row(format!("stream {sock}"), u, b, l).map(|r| (false, r)));
        }
    }
    // `sum_sent` is the sender's count (it measured no jitter or loss),
    // `sum_received` the receiver's; they are marked by what they are
    // (iperf3 3.11+), so `sum` says whether this host sent.
    for (suffix, label) in [("", ""), ("_bidir_reverse", " (server \u{2192} client)")] {
        let local_sender = end.get(format!("sum{suffix}")).is_some_and(|s| flag(s, "sender"));
        if let Some(s) = end.get(format!("sum_sent{suffix}")) {
            let r = row(format!("sum sent{label}"), s, seen.sent(local_sender), false);
            t.rows.extend(r.map(|r| (true, r)));
        }
        if let Some(s) = end.get(format!("sum_received{suffix}")) {
            // (An iperf 2 sender's is its receivers' report.)
            let counted = seen == Seen::Iperf2 || seen.received(local_sender);
            t.rows
                .extend(row(format!("sum received{label}"), s, counted, counted).map(|r| (true, r)));
        }
    }
    if end.get("sum_sent").is_none()
        && let Some(s) = end.get("sum")
    {
        let (b, l) = both(s);
        t.rows.extend(row("sum".into(), s, b, l).map(|r| (true, r)));
    }
    t
}

fn params(doc: &Value, start: &Value, end: &Value) -> Vec<(String, String)> {
    let ts = start.get("test_start").unwrap_or(empty());
    let mut p: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, v: String| {
        if !v.is_empty() {
            p.push((k.to_string(), v));
        }
    };
    let endpoint = |o: Option<&Value>| {
        o.map(|o| {
            format!(
                "{} port {}",
                text(o, "host").unwrap_or("?"),
                int(o, "port").unwrap_or(0)
            )
        })
        .unwrap_or_default()
    };
    add("Server", endpoint(start.get("connecting_to")));
    add("Client", endpoint(start.get("accepted_connection")));
    add("Protocol", text(ts, "protocol").unwrap_or_default().to_string());
    add(
        "Streams",
        int(ts, "num_streams").map(|n| n.to_string()).unwrap_or_default(),
    );
    let dir = if flag(ts, "bidir") {
        "bidirectional"
    } else if flag(ts, "reverse") {
        "reverse (server sends)"
    } else {
        "forward (client sends)"
    };
    add("Direction", dir.into());
    match (int(ts, "duration"), int(ts, "bytes"), int(ts, "blocks")) {
        (_, Some(b), _) if b > 0 => add("Length", format!("{} (-n)", bytes_text(b as f64))),
        (_, _, Some(k)) if k > 0 => add("Length", format!("{k} blocks (-k)")),
        (Some(d), _, _) => add("Duration", format!("{d} s")),
        _ => {}
    }
    if let Some(o) = int(ts, "omit").filter(|o| *o > 0) {
        add("Omitted warm-up", format!("{o} s"));
    }
    add(
        "Block size",
        int(ts, "blksize").map(|b| bytes_text(b as f64)).unwrap_or_default(),
    );
    if let Some(r) = num(ts, "target_bitrate").filter(|r| *r > 0.0) {
        add("Target bitrate", rate_text(r));
    }
    if let Some(t) = int(ts, "tos").filter(|t| *t > 0) {
        add("TOS", format!("0x{t:02x}"));
    }
    let window = match (
        int(start, "sock_bufsize"),
        int(start, "sndbuf_actual"),
        int(start, "rcvbuf_actual"),
    ) {
        (Some(w), Some(s), Some(r)) => format!(
            "{} (send buffer {}, receive buffer {})",
            if w > 0 { bytes_text(w as f64) } else { "default".into() },
            bytes_text(s as f64),
            bytes_text(r as f64)
        ),
        _ => String::new(),
    };
    add("Window (-w)", window);
    if let Some(m) = int(start, "tcp_mss") {
        add("MSS (-M)", format!("{m} bytes"));
    } else if let Some(m) = int(start, "tcp_mss_default").filter(|m| *m > 0) {
        add("MSS", format!("{m} bytes"));
    }
    match (text(end, "sender_tcp_congestion"), text(end, "receiver_tcp_congestion")) {
        (Some(s), Some(r)) if s == r => add("Congestion control", s.to_string()),
        (s, r) => {
            add("Sender congestion control", s.unwrap_or_default().to_string());
            add("Receiver congestion control", r.unwrap_or_default().to_string());
        }
    }
    if let Some(c) = end.get("cpu_utilization_percent") {
        add("CPU, this host", cpu_text(c, "host").unwrap_or_default());
        add("CPU, peer", cpu_text(c, "remote").unwrap_or_default());
    }
    add("Version", text(start, "version").unwrap_or_default().to_string());
    add("System", text(start, "system_info").unwrap_or_default().to_string());
    add("Cookie", text(start, "cookie").unwrap_or_default().to_string());
    add("Extra data", text(doc, "extra_data").unwrap_or_default().to_string());
    if let Some(Value::Array(w)) = doc.get("warnings") {
        let ws: Vec<&str> = w.iter().filter_map(Value::as_str).collect();
        add("Warnings", ws.join("; "));
    }
    p
}

/// Rebuilds a `-J` document from `--json-stream` events
/// (`{"event": .., "data": ..}` objects), if `events` are such.
pub fn from_stream_events(events: &[Value]) -> Option<Value> {
    crate::json::document_from_stream(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iperf2_dual_test_heads_with_both_directions() {
        // What a -d client knows: its own flow sent, the connect-back received.
        let end = serde_json::json!({
            "sum_sent": {"bytes": 1000, "bits_per_second": 8000.0},
            "sum_received_bidir_reverse": {"bytes": 500, "bits_per_second": 4000.0},
        });
        let h: Vec<String> = headline(&end, false).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            h,
            ["Sent (client \u{2192} server)", "Received (server \u{2192} client)"]
        );
    }

    /// An iperf 2 UDP sender's document: intervals of what it sent, and
    /// (when its server's report came back) `sum_received` from it.
    fn iperf2_udp_sender(report: bool) -> Value {
        let mut end = serde_json::json!({
            "streams": [{"udp": {"bytes": 1000}, "iperf2": {"transfer_id": 1}}],
            "sum": {"bytes": 1000, "bits_per_second": 4000.0, "jitter_ms": 0, "lost_packets": 0, "packets": 0},
            "sum_sent": {"bytes": 1000, "bits_per_second": 4000.0},
        });
        if report {
            end["sum_received"] = serde_json::json!({
                "bytes": 990, "bits_per_second": 3960.0, "jitter_ms": 0.25,
                "lost_packets": 3, "packets": 100, "lost_percent": 3.0, "from_peer_report": true,
            });
        }
        serde_json::json!({
            "start": {"test_start": {"protocol": "UDP"}},
            "intervals": [{"streams": [{"bytes": 500, "iperf2": {"transfer_id": 1}}],
                           "sum": {"start": 0, "end": 1, "seconds": 1, "bytes": 500, "bits_per_second": 4000.0}}],
            "end": end,
        })
    }

    fn cells(t: &Table, label: &str) -> Vec<String> {
        t.rows
            .iter()
            .find(|(_, r)| r[0] == label)
            .unwrap_or_else(|| panic!("no row {label}: {:?}", t.rows))
            .1
            .clone()
    }

    #[test]
    fn cpu_is_of_one_cpu_and_absent_where_not_measured() {
        let c = serde_json::json!({
            "host_total": 108.04, "host_user": 3.6, "host_system": 104.4,
            "remote_total": 0, "remote_user": 0, "remote_system": 0,
        });
        assert_eq!(
            cpu_text(&c, "host").unwrap(),
            "108.0% of one CPU, i.e. 1.08 CPUs (user 3.6%, system 104.4%)"
        );
        // An iperf3 server's zeros for the peer it has not heard from, and
        // iperf 2's missing keys, are not 0%.
        assert_eq!(cpu_text(&c, "remote"), None);
        assert_eq!(cpu_text(&serde_json::json!({"host_total": 2.5}), "remote"), None);
        assert_eq!(
            cpu_text(
                &serde_json::json!({"host_total": 22.2, "host_user": 1.0, "host_system": 21.2}),
                "host"
            )
            .unwrap(),
            "22.2% of one CPU (user 1.0%, system 21.2%)"
        );
        let doc = serde_json::json!({"start": {}, "intervals": [], "end": {"cpu_utilization_percent": c}});
        let p = params(&doc, &doc["start"], &doc["end"]);
        assert!(p.iter().any(|(k, _)| k == "CPU, this host"), "{p:?}");
        assert!(p.iter().all(|(k, _)| k != "CPU, peer"), "{p:?}");
    }

    #[test]
    fn a_servers_report_leaves_its_peers_side_blank() {
        // iperf3 3.12's own server document of a TCP test it received.
        let server = |end: Value| serde_json::json!({"start": {"accepted_connection": {"host": "h", "port": 1}}, "intervals": [], "end": end});
        let doc = server(serde_json::json!({
            "streams": [{"sender": {"socket": 5, "bytes": 0, "bits_per_second": 0, "retransmits": 0, "sender": false},
                         "receiver": {"socket": 5, "bytes": 1000, "bits_per_second": 8000.0, "sender": false}}],
            "sum_sent": {"bytes": 0, "bits_per_second": 0, "retransmits": 0, "sender": false},
            "sum_received": {"bytes": 1000, "bits_per_second": 8000.0, "sender": false},
        }));
        let t = tcp_table(&doc["end"], Seen::of(&doc));
        for label in ["stream 5", "sum"] {
            let c = cells(&t, label);
            assert_eq!(c[1..4], ["", "", ""], "{label}: {c:?}");
            assert_eq!(c[4], "1000 Bytes", "{label}: {c:?}");
        }
        // A UDP test it received: the sender's bytes blank, its own jitter
        // and loss shown; the sender's sum left out.
        let doc = server(serde_json::json!({
            "streams": [{"udp": {"socket": 5, "bytes": 0, "bits_per_second": 0, "jitter_ms": 0.012,
                                 "lost_packets": 1, "packets": 38, "lost_percent": 2.6, "out_of_order": 0, "sender": false}}],
            "sum": {"bytes": 0, "bits_per_second": 0, "jitter_ms": 0.012, "lost_packets": 1, "packets": 38, "sender": false},
            "sum_sent": {"bytes": 0, "bits_per_second": 0, "jitter_ms": 0, "lost_packets": 0, "packets": 0, "sender": true},
            "sum_received": {"bytes": 1000, "bits_per_second": 8000.0, "jitter_ms": 0.012,
                             "lost_packets": 1, "packets": 38, "lost_percent": 2.6, "sender": false},
        }));
        let t = udp_table(&doc["end"], Seen::of(&doc));
        let c = cells(&t, "stream 5");
        assert_eq!(c[1..3], ["", ""], "{c:?}");
        assert_eq!(c[3..5], ["0.012 ms", "1/38"], "{c:?}");
        assert!(t.rows.iter().all(|(_, r)| r[0] != "sum sent"), "{:?}", t.rows);
        assert_eq!(cells(&t, "sum received")[1], "1000 Bytes");
    }

    #[test]
    fn a_udp_senders_sum_sent_has_no_jitter_or_loss() {
        let doc = serde_json::json!({"start": {"connecting_to": {"host": "h", "port": 1}}, "intervals": [], "end": {
            "sum": {"bytes": 1000, "bits_per_second": 8000.0, "jitter_ms": 0.5, "lost_packets": 2, "packets": 10, "sender": true},
            "sum_sent": {"bytes": 1000, "bits_per_second": 8000.0, "jitter_ms": 0, "lost_packets": 0, "packets": 10, "sender": true},
            "sum_received": {"bytes": 980, "bits_per_second": 7840.0, "jitter_ms": 0.5, "lost_packets": 2, "packets": 10, "sender": true},
        }});
        let t = udp_table(&doc["end"], Seen::of(&doc));
        assert_eq!(cells(&t, "sum sent")[3..], ["", "", "", ""]);
        assert_eq!(cells(&t, "sum received")[3..5], ["0.500 ms", "2/10"]);
    }

    #[test]
    fn an_iperf2_udp_sender_heads_with_its_servers_report() {
        let v = view(&iperf2_udp_sender(true));
        let h: Vec<(String, String)> = v.headline.clone();
        assert!(h.contains(&("Jitter".into(), "0.250 ms".into())), "{h:?}");
        assert!(h.contains(&("Lost".into(), "3/100 (3%)".into())), "{h:?}");
        // iperf 2 refuses --get-server-output: the page does not suggest it.
        assert!(
            v.notes.iter().all(|n| !n.contains("--get-server-output")),
            "{:?}",
            v.notes
        );
        assert!(
            v.notes
                .iter()
                .any(|n| n.contains("iperf 2 server reports them for the whole test"))
        );
        // Without the report, the sender measured no jitter or loss.
        let v = view(&iperf2_udp_sender(false));
        assert!(
            v.headline.iter().all(|(k, _)| k != "Jitter" && k != "Lost"),
            "{:?}",
            v.headline
        );
    }
}
