//! What a report shows, read from one iperf3 `-J` document.
//!
//! The document is the single source: our `--report` builds it with the
//! same [`JsonSink`](crate::json::JsonSink) that prints `-J`,
//! and `wirespeed report` reads one saved by us or by iperf3. Nothing here
//! is measured or recomputed; values are picked out and arranged. Input may
//! be foreign, so it is read through the typed model
//! ([`crate::document`]), where every field is optional: a missing or odd
//! one is skipped, never a panic.

use serde_json::Value;

use super::chart::{self, Chart, Series, Unit};
use crate::document::{Cpu, Document, End, HostPort, Interval, Sample, Start, TestDoc, TestStart, Totals};
use wirespeed_core::units::format_iperf3;

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

/// Whether a flag is set (absent: not).
fn set(f: Option<bool>) -> bool {
    f.unwrap_or(false)
}

fn bytes_text(b: f64) -> String {
    format!("{}s", format_iperf3(b, 'A'))
}

fn rate_text(bps: f64) -> String {
    format!("{}s/sec", format_iperf3(bps / 8.0, 'a'))
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
fn interval_times(intervals: &[Interval]) -> Times {
    let omitted = |iv: &Interval| iv.sum.as_ref().is_some_and(|s| set(s.omitted));
    let warm_end = intervals
        .iter()
        .filter(|iv| omitted(iv))
        .filter_map(|iv| iv.sum.as_ref().and_then(|s| s.end))
        .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
    let mut hi = 0.0f64;
    let xs = intervals
        .iter()
        .map(|iv| {
            let sum = iv.sum.as_ref();
            let end = sum.and_then(|s| s.end).unwrap_or(0.0);
            let start = sum.and_then(|s| s.start).unwrap_or(end);
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
fn collect(intervals: &[Interval], xs: &[f64], pick: &dyn Fn(&Sample) -> Option<f64>) -> Collected {
    let mut streams: Vec<StreamPoints> = Vec::new();
    let mut sums: Vec<(String, Points)> = Vec::new();
    let both_ways = has_both_directions(intervals);
    for (iv, &x) in intervals.iter().zip(xs) {
        for st in &iv.streams {
            let (Some(sock), Some(v)) = (st.socket, pick(st)) else {
                continue;
            };
            let sender = set(st.sender);
            match streams.iter_mut().find(|(s, d, _)| *s == sock && *d == sender) {
                Some((_, _, pts)) => pts.push((x, v)),
                None => streams.push((sock, sender, vec![(x, v)])),
            }
        }
        for sum in [&iv.sum, &iv.sum_bidir_reverse] {
            let Some(sum) = sum else { continue };
            let Some(v) = pick(sum) else { continue };
            let label = if both_ways {
                if set(sum.sender) {
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

fn has_both_directions(intervals: &[Interval]) -> bool {
    let mut seen = [false, false];
    for iv in intervals {
        for st in &iv.streams {
            seen[usize::from(set(st.sender))] = true;
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
    pick: fn(&Sample) -> Option<f64>,
}

/// A count as a chart's value (iperf3's unsigned `-1` is no value).
fn count(v: Option<i64>) -> Option<f64> {
    v.filter(|c| *c >= 0).map(|c| c as f64)
}

const THROUGHPUT: ChartSpec = ChartSpec {
    id: "throughput",
    title: "Throughput",
    y_name: "Throughput",
    unit: Unit::BitsPerSecond,
    with_sums: true,
    pick: |v| v.bits_per_second,
};
const TCP_CHARTS: [ChartSpec; 3] = [
    ChartSpec {
        id: "retransmits",
        title: "TCP retransmits per interval",
        y_name: "Retransmits",
        unit: Unit::Count,
        with_sums: true,
        pick: |v| count(v.retransmits),
    },
    ChartSpec {
        id: "cwnd",
        title: "TCP congestion window",
        y_name: "cwnd",
        unit: Unit::Bytes,
        with_sums: false,
        pick: |v| v.snd_cwnd,
    },
    ChartSpec {
        id: "rtt",
        title: "TCP round-trip time (smoothed)",
        y_name: "RTT",
        unit: Unit::Millis,
        with_sums: false,
        pick: |v| v.rtt.map(|us| us / 1000.0),
    },
];
const UDP_CHARTS: [ChartSpec; 4] = [
    ChartSpec {
        id: "jitter",
        title: "UDP jitter",
        y_name: "Jitter",
        unit: Unit::Millis,
        with_sums: false,
        pick: |v| v.jitter_ms,
    },
    ChartSpec {
        id: "loss",
        title: "UDP datagrams lost per interval",
        y_name: "Lost",
        unit: Unit::Percent,
        with_sums: true,
        pick: |v| v.lost_percent,
    },
    ChartSpec {
        id: "ce",
        title: "UDP datagrams that arrived marked CE per interval (ECN)",
        y_name: "CE",
        unit: Unit::Count,
        with_sums: true,
        pick: |v| v.ecn.as_ref().and_then(|e| count(e.ce)),
    },
    ChartSpec {
        id: "reorder",
        title: "UDP datagrams out of order per interval",
        y_name: "Out of order",
        unit: Unit::Count,
        with_sums: true,
        pick: |v| count(v.out_of_order),
    },
];

fn build_chart(spec: &ChartSpec, intervals: &[Interval]) -> Option<Chart> {
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

/// What the path did to the ECN field, for the headline: `CE 12 of 900
/// (1.33%); path: CE-marked` and its kin.
fn ecn_headline(e: &crate::document::Ecn) -> String {
    let arrived: i64 = [e.not_ect, e.ect0, e.ect1, e.ce].iter().flatten().sum();
    let mut s = match e.sent.as_deref() {
        Some("ect0") => "sent ECT(0); ".to_string(),
        Some("ect1") => "sent ECT(1); ".to_string(),
        Some("ce") => "sent CE; ".to_string(),
        Some("not_ect") => "sent Not-ECT; ".to_string(),
        _ => String::new(),
    };
    s.push_str(&format!("CE {} of {arrived}", e.ce.unwrap_or(0)));
    if let Some(p) = e.ce_percent {
        s.push_str(&format!(" ({})", percent_text(p)));
    }
    if let Some(path) = e.path.as_ref().filter(|p| !p.is_empty()) {
        let words: Vec<&str> = path
            .iter()
            .map(|w| match w.as_str() {
                "ce_marked" => "CE-marked",
                other => other,
            })
            .collect();
        s.push_str(&format!("; path: {}", words.join(", ")));
    }
    if e.impossible_peer_counts.is_some() {
        s.push_str("; the peer's counts were impossible and are not used");
    }
    s
}

/// Checks that `doc` looks like an iperf3 `-J` document (or a mode's).
pub(crate) fn check_document(doc: &Value) -> Result<(), String> {
    Document::from_value(doc)?.check()
}

/// Builds the view of one document (already checked with [`check_document`]).
pub fn view(doc: &Value) -> TestView {
    match Document::from_value(doc) {
        Ok(d) => view_of(&d),
        Err(why) => TestView {
            heading: "Not a test's document".into(),
            error: Some(why),
            ..TestView::default()
        },
    }
}

/// Builds the view of one read document.
pub fn view_of(doc: &Document) -> TestView {
    match doc {
        Document::Test(t) => test_view(t),
        Document::Rpm(r) => mode::rpm_view(r),
        Document::Search(s) => mode::search_view(s),
        Document::Nq(n) => mode::nq_view(n),
    }
}

fn test_view(doc: &TestDoc) -> TestView {
    let no_start = Start::default();
    let no_end = End::default();
    let start = doc.start.as_ref().unwrap_or(&no_start);
    let end = doc.end.as_ref().unwrap_or(&no_end);
    let intervals = doc.intervals();
    let protocol = doc
        .test_start()
        .and_then(|t| t.protocol.clone())
        .unwrap_or_else(|| "TCP".into());
    let udp = protocol.eq_ignore_ascii_case("UDP");
    let mut v = TestView {
        heading: heading(start, &protocol),
        subtitle: subtitle(doc, start),
        error: doc.error.clone(),
        advice: end.advice.as_ref().and_then(|a| a.text.clone()),
        ..TestView::default()
    };
    if intervals.is_empty() {
        v.notes
            .push("No intervals were measured, so there is nothing to plot.".into());
    }
    if let Some(c) = build_chart(&THROUGHPUT, intervals) {
        v.charts.push(c);
    }
    // Round trips under the load, right under the throughput they met.
    if let Some(c) = latency_chart(intervals) {
        v.charts.push(c);
    }
    if udp {
        // Jitter and loss are the receiver's numbers; a sending client has
        // them only in the server's document (--get-server-output).
        let own = intervals
            .iter()
            .any(|iv| iv.sum.as_ref().is_some_and(|s| s.jitter_ms.is_some()));
        let server_intervals = doc.server_output_json.as_ref().map_or(&[][..], |s| s.intervals());
        let (src, by_server) = if own || server_intervals.is_empty() {
            (intervals, false)
        } else {
            (server_intervals, true)
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
            v.notes.push(if doc.is_iperf2() {
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
        if !src.iter().any(|iv| iv.streams.iter().any(|s| s.out_of_order.is_some())) && (own || by_server) {
            v.notes.push(
                "Reordering is counted per test, not per interval, in iperf3's JSON: see the \
                 \"Out of order\" column of the summary."
                    .into(),
            );
        }
    } else {
        for spec in &TCP_CHARTS {
            if let Some(c) = build_chart(spec, intervals) {
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
    if let Some(l) = &end.latency {
        let p50 = |r: &Option<crate::document::Rtt>| r.as_ref().and_then(|x| x.p50_ms);
        if let (Some(i), Some(b)) = (p50(&l.idle), p50(&l.loaded)) {
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

/// "host port N" of an endpoint.
fn peer(o: &HostPort) -> String {
    format!("{} port {}", o.host.as_deref().unwrap_or("?"), o.port.unwrap_or(0))
}

fn heading(start: &Start, protocol: &str) -> String {
    let no_ts = TestStart::default();
    let ts = start.test_start.as_ref().unwrap_or(&no_ts);
    let dir = if set(ts.bidir) {
        "bidirectional "
    } else if set(ts.reverse) {
        "reverse "
    } else {
        ""
    };
    let streams = ts.num_streams.unwrap_or(1);
    let what = format!(
        "{protocol} {dir}test, {streams} stream{}",
        if streams == 1 { "" } else { "s" }
    );
    if let Some(c) = &start.connecting_to {
        format!("{what} to {}", peer(c))
    } else if let Some(a) = &start.accepted_connection {
        format!("{what} from {}", peer(a))
    } else {
        what
    }
}

fn subtitle(doc: &TestDoc, start: &Start) -> String {
    let mut parts = Vec::new();
    if let Some(t) = start.timestamp.as_ref().and_then(|t| t.time.as_ref()) {
        parts.push(t.to_string());
    }
    if let Some(ver) = &start.version {
        parts.push(ver.to_string());
    }
    if let Some(t) = &doc.title {
        parts.insert(0, format!("\u{201c}{t}\u{201d}"));
    }
    parts.join(" \u{b7} ")
}

fn headline(end: &End, udp: bool) -> Vec<(String, String)> {
    let mut h = Vec::new();
    let mut rate = |label: &str, s: &Option<Totals>| {
        if let Some(s) = s
            && s.bytes.unwrap_or(0.0) > 0.0
            && let Some(bps) = s.bits_per_second
        {
            h.push((label.to_string(), rate_text(bps)));
        }
    };
    // iperf3's --bidir, or iperf 2's -d/-r (whose client knows only what
    // it received of the server's connect-back).
    if end.both_ways() {
        rate("Sent (client \u{2192} server)", &end.sum_sent);
        rate("Received (client \u{2192} server)", &end.sum_received);
        rate("Sent (server \u{2192} client)", &end.sum_sent_bidir_reverse);
        rate("Received (server \u{2192} client)", &end.sum_received_bidir_reverse);
    } else {
        rate("Sender", &end.sum_sent);
        rate("Receiver", &end.sum_received);
        if end.sum_sent.is_none() {
            rate("Rate", &end.sum);
        }
    }
    if udp {
        // The receiver's numbers: `sum_received` (an iperf 2 sender's from
        // its server's report), or `sum` of a receiver's document. A sender
        // that heard nothing back measured no jitter or loss.
        let no_sum = Totals::default();
        let recv = end
            .sum_received
            .as_ref()
            .or_else(|| end.sum.as_ref().filter(|_| end.sum_sent.is_none()))
            .unwrap_or(&no_sum);
        if let Some(j) = recv.jitter_ms {
            h.push(("Jitter".into(), format!("{j:.3} ms")));
        }
        if let (Some(l), Some(p)) = (recv.lost_packets, recv.packets) {
            let pct = recv.lost_percent.unwrap_or(0.0);
            h.push(("Lost".into(), format!("{l}/{p} ({})", percent_text(pct))));
        }
        if let Some(e) = &recv.ecn {
            h.push(("ECN".into(), ecn_headline(e)));
        }
    } else {
        if let Some(r) = end.sum_sent.as_ref().and_then(|s| s.retransmits) {
            h.push(("Retransmits".into(), r.to_string()));
        }
        let rtts: Vec<f64> = end
            .streams
            .iter()
            .filter_map(|s| s.sender.as_ref().and_then(|x| x.mean_rtt))
            .filter(|r| *r > 0.0)
            .collect();
        if !rtts.is_empty() {
            let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
            h.push(("Mean RTT".into(), format!("{:.3} ms", mean / 1000.0)));
        }
    }
    h
}

/// One host's CPU use (`host`, or the peer's), as iperf3 counts it: process
/// CPU time over wall time, so 100% is one CPU and more is more than one.
/// `None` when not measured: absent (iperf 2 exchanges none), or 0, which
/// is what an iperf3 server writes for a peer it has not heard from yet
/// (a process that moved data used some CPU).
fn cpu_text(c: &Cpu, host: bool) -> Option<String> {
    let (total, user, system) = c.of(host);
    let total = total.filter(|t| *t > 0.0)?;
    let cpus = if total > 100.0 {
        format!(", i.e. {:.2} CPUs", total / 100.0)
    } else {
        String::new()
    };
    Some(format!(
        "{total:.1}% of one CPU{cpus} (user {:.1}%, system {:.1}%)",
        user.unwrap_or(0.0),
        system.unwrap_or(0.0)
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
    fn of(doc: &TestDoc) -> Seen {
        let start = doc.start.as_ref();
        if doc.is_iperf2() {
            Seen::Iperf2
        } else if start.is_some_and(|s| s.connecting_to.is_none() && s.accepted_connection.is_some()) {
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

fn tcp_table(end: &End, seen: Seen) -> Table {
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
    let none = Totals::default();
    // A side this host did not count (`seen`) is blank, not zeros.
    let row = |label: String, s: &Totals, r: &Totals| -> Vec<String> {
        let local_sender = set(s.sender) || set(r.sender);
        let own = seen == Seen::OwnSide;
        let s = if own && !local_sender { &none } else { s };
        let r = if own && local_sender { &none } else { r };
        vec![
            label,
            s.bytes.map(bytes_text).unwrap_or_default(),
            s.bits_per_second.map(rate_text).unwrap_or_default(),
            s.retransmits.map(|r| r.to_string()).unwrap_or_default(),
            r.bytes.map(bytes_text).unwrap_or_default(),
            r.bits_per_second.map(rate_text).unwrap_or_default(),
        ]
    };
    for st in &end.streams {
        let s = st.sender.as_ref().unwrap_or(&none);
        let r = st.receiver.as_ref().unwrap_or(&none);
        let sock = s.socket.or(r.socket).unwrap_or(0);
        t.rows.push((false, row(format!("stream {sock}"), s, r)));
    }
    for (s, r, label) in [
        (&end.sum_sent, &end.sum_received, "sum"),
        (
            &end.sum_sent_bidir_reverse,
            &end.sum_received_bidir_reverse,
            "sum (server \u{2192} client)",
        ),
    ] {
        if s.is_some() || r.is_some() {
            t.rows.push((
                true,
                row(
                    label.to_string(),
                    s.as_ref().unwrap_or(&none),
                    r.as_ref().unwrap_or(&none),
                ),
            ));
        }
    }
    t
}

fn udp_table(end: &End, seen: Seen) -> Table {
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
    let none = Totals::default();
    // A row's bytes and its jitter and loss are shown where this host
    // counted them (`seen`); a row of nothing it counted is left out.
    let row = |label: String, u: &Totals, bytes_seen: bool, loss_seen: bool| -> Option<Vec<String>> {
        let b = if bytes_seen { u } else { &none };
        let l = if loss_seen { u } else { &none };
        (bytes_seen || loss_seen).then(|| {
            vec![
                label,
                b.bytes.map(bytes_text).unwrap_or_default(),
                b.bits_per_second.map(rate_text).unwrap_or_default(),
                l.jitter_ms.map(|j| format!("{j:.3} ms")).unwrap_or_default(),
                match (l.lost_packets, l.packets) {
                    (Some(x), Some(p)) => format!("{x}/{p}"),
                    _ => String::new(),
                },
                l.lost_percent.map(percent_text).unwrap_or_default(),
                l.out_of_order.map(|o| o.to_string()).unwrap_or_default(),
            ]
        })
    };
    // A stream's and `sum`'s bytes are the sender's (an iperf 2 receiver
    // writes its own count), their jitter and loss the receiver's; their
    // "sender" says whether this host sent.
    let both = |u: &Totals| {
        let local_sender = set(u.sender);
        (
            seen == Seen::Iperf2 || seen.sent(local_sender),
            seen.received(local_sender),
        )
    };
    for st in &end.streams {
        if let Some(u) = &st.udp {
            let sock = u.socket.unwrap_or(0);
            let (b, l) = both(u);
            t.rows
                .extend(row(format!("stream {sock}"), u, b, l).map(|r| (false, r)));
        }
    }
    // `sum_sent` is the sender's count (it measured no jitter or loss),
    // `sum_received` the receiver's; they are marked by what they are
    // (iperf3 3.11+), so `sum` says whether this host sent.
    for (sum, sent, received, label) in [
        (&end.sum, &end.sum_sent, &end.sum_received, ""),
        (
            &end.sum_bidir_reverse,
            &end.sum_sent_bidir_reverse,
            &end.sum_received_bidir_reverse,
            " (server \u{2192} client)",
        ),
    ] {
        let local_sender = sum.as_ref().is_some_and(|s| set(s.sender));
        if let Some(s) = sent {
            let r = row(format!("sum sent{label}"), s, seen.sent(local_sender), false);
            t.rows.extend(r.map(|r| (true, r)));
        }
        if let Some(s) = received {
            // (An iperf 2 sender's is its receivers' report.)
            let counted = seen == Seen::Iperf2 || seen.received(local_sender);
            t.rows
                .extend(row(format!("sum received{label}"), s, counted, counted).map(|r| (true, r)));
        }
    }
    if end.sum_sent.is_none()
        && let Some(s) = &end.sum
    {
        let (b, l) = both(s);
        t.rows.extend(row("sum".into(), s, b, l).map(|r| (true, r)));
    }
    t
}

fn params(doc: &TestDoc, start: &Start, end: &End) -> Vec<(String, String)> {
    let no_ts = TestStart::default();
    let ts = start.test_start.as_ref().unwrap_or(&no_ts);
    let mut p: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, v: String| {
        if !v.is_empty() {
            p.push((k.to_string(), v));
        }
    };
    let endpoint = |o: &Option<HostPort>| o.as_ref().map(peer).unwrap_or_default();
    add("Server", endpoint(&start.connecting_to));
    add("Client", endpoint(&start.accepted_connection));
    add("Protocol", ts.protocol.clone().unwrap_or_default());
    add("Streams", ts.num_streams.map(|n| n.to_string()).unwrap_or_default());
    let dir = if set(ts.bidir) {
        "bidirectional"
    } else if set(ts.reverse) {
        "reverse (server sends)"
    } else {
        "forward (client sends)"
    };
    add("Direction", dir.into());
    match (ts.duration, ts.bytes, ts.blocks) {
        (_, Some(b), _) if b > 0 => add("Length", format!("{} (-n)", bytes_text(b as f64))),
        (_, _, Some(k)) if k > 0 => add("Length", format!("{k} blocks (-k)")),
        (Some(d), _, _) => add("Duration", format!("{d} s")),
        _ => {}
    }
    if let Some(o) = ts.omit.filter(|o| *o > 0) {
        add("Omitted warm-up", format!("{o} s"));
    }
    add(
        "Block size",
        ts.blksize.map(|b| bytes_text(b as f64)).unwrap_or_default(),
    );
    if let Some(r) = ts.target_bitrate.filter(|r| *r > 0.0) {
        add("Target bitrate", rate_text(r));
    }
    if let Some(t) = ts.tos.filter(|t| *t > 0) {
        add("TOS", format!("0x{t:02x}"));
    }
    let window = match (start.sock_bufsize, start.sndbuf_actual, start.rcvbuf_actual) {
        (Some(w), Some(s), Some(r)) => format!(
            "{} (send buffer {}, receive buffer {})",
            if w > 0 { bytes_text(w as f64) } else { "default".into() },
            bytes_text(s as f64),
            bytes_text(r as f64)
        ),
        _ => String::new(),
    };
    add("Window (-w)", window);
    if let Some(m) = start.tcp_mss {
        add("MSS (-M)", format!("{m} bytes"));
    } else if let Some(m) = start.tcp_mss_default.filter(|m| *m > 0) {
        add("MSS", format!("{m} bytes"));
    }
    match (&end.sender_tcp_congestion, &end.receiver_tcp_congestion) {
        (Some(s), Some(r)) if s == r => add("Congestion control", s.to_string()),
        (s, r) => {
            add("Sender congestion control", s.clone().unwrap_or_default());
            add("Receiver congestion control", r.clone().unwrap_or_default());
        }
    }
    if let Some(c) = &end.cpu_utilization_percent {
        add("CPU, this host", cpu_text(c, true).unwrap_or_default());
        add("CPU, peer", cpu_text(c, false).unwrap_or_default());
    }
    add("Version", start.version.clone().unwrap_or_default());
    add("System", start.system_info.clone().unwrap_or_default());
    add("Cookie", start.cookie.clone().unwrap_or_default());
    add("Extra data", doc.extra_data.clone().unwrap_or_default());
    if let Some(w) = &doc.warnings {
        add("Warnings", w.join("; "));
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

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn an_iperf2_dual_test_heads_with_both_directions() {
        // What a -d client knows: its own flow sent, the connect-back received.
        let end = serde_json::json!({
            "sum_sent": {"bytes": 1000, "bits_per_second": 8000.0},
            "sum_received_bidir_reverse": {"bytes": 500, "bits_per_second": 4000.0},
        });
        let h: Vec<String> = headline(&typed(end), false).into_iter().map(|(k, _)| k).collect();
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
        let c: Cpu = typed(serde_json::json!({
            "host_total": 108.04, "host_user": 3.6, "host_system": 104.4,
            "remote_total": 0, "remote_user": 0, "remote_system": 0,
        }));
        assert_eq!(
            cpu_text(&c, true).unwrap(),
            "108.0% of one CPU, i.e. 1.08 CPUs (user 3.6%, system 104.4%)"
        );
        // An iperf3 server's zeros for the peer it has not heard from, and
        // iperf 2's missing keys, are not 0%.
        assert_eq!(cpu_text(&c, false), None);
        assert_eq!(cpu_text(&typed(serde_json::json!({"host_total": 2.5})), false), None);
        assert_eq!(
            cpu_text(
                &typed(serde_json::json!({"host_total": 22.2, "host_user": 1.0, "host_system": 21.2})),
                true
            )
            .unwrap(),
            "22.2% of one CPU (user 1.0%, system 21.2%)"
        );
        let doc: TestDoc =
            typed(serde_json::json!({"start": {}, "intervals": [], "end": {"cpu_utilization_percent": c}}));
        let p = params(&doc, doc.start.as_ref().unwrap(), doc.end.as_ref().unwrap());
        assert!(p.iter().any(|(k, _)| k == "CPU, this host"), "{p:?}");
        assert!(p.iter().all(|(k, _)| k != "CPU, peer"), "{p:?}");
    }

    #[test]
    fn a_servers_report_leaves_its_peers_side_blank() {
        // iperf3 3.12's own server document of a TCP test it received.
        let server = |end: Value| -> TestDoc {
            typed(
                serde_json::json!({"start": {"accepted_connection": {"host": "h", "port": 1}}, "intervals": [], "end": end}),
            )
        };
        let doc = server(serde_json::json!({
            "streams": [{"sender": {"socket": 5, "bytes": 0, "bits_per_second": 0, "retransmits": 0, "sender": false},
                         "receiver": {"socket": 5, "bytes": 1000, "bits_per_second": 8000.0, "sender": false}}],
            "sum_sent": {"bytes": 0, "bits_per_second": 0, "retransmits": 0, "sender": false},
            "sum_received": {"bytes": 1000, "bits_per_second": 8000.0, "sender": false},
        }));
        let t = tcp_table(doc.end.as_ref().unwrap(), Seen::of(&doc));
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
        let t = udp_table(doc.end.as_ref().unwrap(), Seen::of(&doc));
        let c = cells(&t, "stream 5");
        assert_eq!(c[1..3], ["", ""], "{c:?}");
        assert_eq!(c[3..5], ["0.012 ms", "1/38"], "{c:?}");
        assert!(t.rows.iter().all(|(_, r)| r[0] != "sum sent"), "{:?}", t.rows);
        assert_eq!(cells(&t, "sum received")[1], "1000 Bytes");
    }

    #[test]
    fn ce_marks_are_charted_and_headlined() {
        let iv = |ce: i64| {
            serde_json::json!({"streams": [{"socket": 5, "start": 0, "end": 1, "seconds": 1, "bytes": 1000,
                "bits_per_second": 8000.0, "jitter_ms": 0.1, "lost_packets": 0, "packets": 10, "lost_percent": 0,
                "ecn": {"not_ect": 0, "ect0": 0, "ect1": 10 - ce, "ce": ce}, "sender": false}],
              "sum": {"start": 0, "end": 1, "seconds": 1, "bytes": 1000, "bits_per_second": 8000.0, "jitter_ms": 0.1,
                "lost_packets": 0, "packets": 10, "lost_percent": 0,
                "ecn": {"not_ect": 0, "ect0": 0, "ect1": 10 - ce, "ce": ce}, "sender": false}})
        };
        let doc = serde_json::json!({"start": {"connecting_to": {"host": "h", "port": 1},
                                               "test_start": {"protocol": "UDP", "num_streams": 1}},
            "intervals": [iv(2), iv(3)],
            "end": {"sum_received": {"bytes": 2000, "bits_per_second": 8000.0, "jitter_ms": 0.1, "lost_packets": 0,
                                     "packets": 20, "lost_percent": 0, "sender": false,
                                     "ecn": {"sent": "ect1", "not_ect": 0, "ect0": 0, "ect1": 15, "ce": 5,
                                             "sent_packets": 20, "path": ["ce_marked"], "ce_percent": 25}}}});
        let v = view(&doc);
        let c = v.charts.iter().find(|c| c.id == "ce").expect("a CE chart");
        assert!(c.title.contains("CE"), "{}", c.title);
        let h = v.headline.iter().find(|(k, _)| k == "ECN").expect("an ECN headline");
        assert_eq!(h.1, "sent ECT(1); CE 5 of 20 (25%); path: CE-marked", "{h:?}");
        // No ECN in play: no chart, no headline.
        let mut plain = doc.clone();
        for i in plain["intervals"].as_array_mut().unwrap() {
            i["sum"].as_object_mut().unwrap().remove("ecn");
            i["streams"][0].as_object_mut().unwrap().remove("ecn");
        }
        plain["end"]["sum_received"].as_object_mut().unwrap().remove("ecn");
        let v = view(&plain);
        assert!(v.charts.iter().all(|c| c.id != "ce"));
        assert!(v.headline.iter().all(|(k, _)| k != "ECN"));
    }

    #[test]
    fn a_udp_senders_sum_sent_has_no_jitter_or_loss() {
        let doc: TestDoc = typed(
            serde_json::json!({"start": {"connecting_to": {"host": "h", "port": 1}}, "intervals": [], "end": {
                "sum": {"bytes": 1000, "bits_per_second": 8000.0, "jitter_ms": 0.5, "lost_packets": 2, "packets": 10, "sender": true},
                "sum_sent": {"bytes": 1000, "bits_per_second": 8000.0, "jitter_ms": 0, "lost_packets": 0, "packets": 10, "sender": true},
                "sum_received": {"bytes": 980, "bits_per_second": 7840.0, "jitter_ms": 0.5, "lost_packets": 2, "packets": 10, "sender": true},
            }}),
        );
        let t = udp_table(doc.end.as_ref().unwrap(), Seen::of(&doc));
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
