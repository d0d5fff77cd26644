//! The sections of the modes' documents (`--rpm`, `--udp-search`, as
//! `report::mode` writes them): the responsiveness over time with the
//! goodput, and the search's probes (rate asked against received, loss).

use serde_json::Value;

use super::{Table, TestView, empty, flag, num, rate_text, text};
use crate::html::chart::{self, Chart, Series, Unit};

/// Whether `doc` is a responsiveness test's document.
pub(super) fn is_rpm(doc: &Value) -> bool {
    doc.get("start")
        .and_then(|s| text(s, "method"))
        .is_some_and(|m| m.contains("RPM"))
}

/// Whether `doc` is a UDP search's document.
pub(super) fn is_search(doc: &Value) -> bool {
    doc.get("search").is_some_and(Value::is_object)
}

fn series(label: &str, points: Vec<(f64, f64)>, i: usize, emphasis: bool) -> Series {
    Series {
        label: label.into(),
        points,
        colour: if emphasis {
            chart::SUM_COLOUR.to_string()
        } else {
            chart::colour(i).to_string()
        },
        emphasis,
        in_legend: true,
    }
}

fn points(rows: &[Value], x: &dyn Fn(usize, &Value) -> Option<f64>, key: &str) -> Vec<(f64, f64)> {
    rows.iter()
        .enumerate()
        .filter_map(|(i, r)| Some((x(i, r)?, num(r, key)?)))
        .collect()
}

fn count(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.0}"))
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |m| format!("{m:.3} ms"))
}

/// The responsiveness test's section.
pub(super) fn rpm_view(doc: &Value) -> TestView {
    let start = doc.get("start").unwrap_or(empty());
    let end = doc.get("end").unwrap_or(empty());
    let ivs: Vec<Value> = doc
        .get("intervals")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut v = TestView {
        heading: format!(
            "Responsiveness (RPM) with {} port {}",
            text(start, "host").unwrap_or("?"),
            num(start, "port").map_or("?".into(), |p| format!("{p:.0}"))
        ),
        subtitle: text(start, "method").unwrap_or_default().to_string(),
        error: text(doc, "error").map(str::to_string),
        ..TestView::default()
    };
    let at = |_: usize, r: &Value| num(r, "seconds");
    let span = (0.0, ivs.last().and_then(|r| num(r, "seconds")).unwrap_or(1.0));
    let rpm: Vec<Series> = [
        ("RPM", "rpm", true),
        ("foreign", "foreign_rpm", false),
        ("loaded", "loaded_rpm", false),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, bold))| series(label, points(&ivs, &at, key), i, *bold))
    .filter(|s| !s.points.is_empty())
    .collect();
    if !rpm.is_empty() {
        v.charts.push(Chart {
            id: "rpm".into(),
            title: "Responsiveness over time".into(),
            y_name: "Responsiveness".into(),
            unit: Unit::Rpm,
            series: rpm,
            x_span: span,
            x_name: None,
            shade: None,
            note: Some("Each second's RPM, from the probes of the last four seconds.".into()),
        });
    }
    let goodput: Vec<Series> = [
        ("goodput", "goodput_bits_per_second", false),
        ("moving average", "goodput_moving_average", true),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, bold))| series(label, points(&ivs, &at, key), i, *bold))
    .filter(|s| !s.points.is_empty())
    .collect();
    if !goodput.is_empty() {
        v.charts.push(Chart {
            id: "rpm_goodput".into(),
            title: "Goodput of the load flows".into(),
            y_name: "Goodput".into(),
            unit: Unit::BitsPerSecond,
            series: goodput,
            x_span: span,
            x_name: None,
            shade: None,
            note: None,
        });
    }
    if ivs.is_empty() {
        v.notes
            .push("No interval was measured, so there is nothing to plot.".into());
    }
    if let Some(r) = num(end, "rpm") {
        v.headline.push((
            "Responsiveness".into(),
            format!("{r:.0} RPM ({})", text(end, "class").unwrap_or("?")),
        ));
    } else if end.is_object() {
        v.headline
            .push(("Responsiveness".into(), "no probe came back under load".into()));
    }
    if let Some(c) = text(end, "confidence") {
        v.headline.push(("Confidence".into(), c.to_string()));
    }
    if let Some(g) = num(end, "goodput_bits_per_second") {
        v.headline.push(("Goodput".into(), rate_text(g)));
    }
    if let Some(i) = num(end, "idle_rpm") {
        v.headline.push(("Idle".into(), format!("{i:.0} RPM")));
    }
    let idle = end.get("idle").unwrap_or(empty());
    let loaded = end.get("loaded").unwrap_or(empty());
    if end.is_object() {
        v.summary = Table {
            head: [
                "Probes",
                "TCP handshake",
                "Round trip",
                "Round trip p90",
                "Load flows' RTT",
            ]
            .map(String::from)
            .to_vec(),
            rows: vec![
                (
                    false,
                    vec![
                        "idle".into(),
                        ms(num(idle, "tcp_handshake_ms")),
                        ms(num(idle, "round_trip_ms")),
                        "-".into(),
                        "-".into(),
                    ],
                ),
                (
                    false,
                    vec![
                        "loaded".into(),
                        ms(num(loaded, "tcp_handshake_ms")),
                        ms(num(loaded, "round_trip_ms")),
                        ms(num(loaded, "round_trip_p90_ms")),
                        ms(num(loaded, "tcp_info_rtt_ms").or_else(|| num(loaded, "self_probe_ms"))),
                    ],
                ),
            ],
        };
    }
    let mut p = Vec::new();
    for (k, key) in [
        ("Direction", "direction"),
        ("Load flows at the end", "flows"),
        ("Probes that failed", "probe_failures"),
    ] {
        if let Some(x) = end.get(key) {
            p.push((k.to_string(), x.as_str().map_or_else(|| x.to_string(), str::to_string)));
        }
    }
    for (k, key) in [
        ("Most load flows", "max_flows"),
        ("Probes per second", "probes_per_second"),
        ("Time limit (s)", "time_limit_seconds"),
    ] {
        if let Some(x) = num(start, key) {
            p.push((k.to_string(), count(Some(x))));
        }
    }
    v.params = p;
    v
}

/// The UDP search's section.
pub(super) fn search_view(doc: &Value) -> TestView {
    let s = doc.get("search").unwrap_or(empty());
    let result = s.get("result");
    let probes: Vec<Value> = s.get("probes").and_then(Value::as_array).cloned().unwrap_or_default();
    let max_loss = num(s, "max_loss_percent");
    let mut v = TestView {
        heading: format!(
            "UDP rate search: the highest rate with loss <= {}%",
            max_loss.map_or("?".into(), crate::mode::trim_num)
        ),
        subtitle: format!(
            "{} probes of {} s, {} stream(s){}",
            probes.len(),
            num(s, "probe_seconds").map_or("?".into(), crate::mode::trim_num),
            count(num(s, "streams")),
            if flag(s, "reverse") { ", the server sending" } else { "" }
        ),
        error: text(doc, "error").map(str::to_string),
        ..TestView::default()
    };
    let n = |i: usize, _: &Value| Some((i + 1) as f64);
    let span = (1.0, probes.len().max(2) as f64);
    let rates: Vec<Series> = [
        ("asked", "bits_per_second", false),
        ("received", "received_bits_per_second", true),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, bold))| series(label, points(&probes, &n, key), i, *bold))
    .filter(|s| !s.points.is_empty())
    .collect();
    if !rates.is_empty() {
        v.charts.push(Chart {
            id: "search_rates".into(),
            title: "Probes: rate asked and received".into(),
            y_name: "Rate".into(),
            unit: Unit::BitsPerSecond,
            series: rates,
            x_span: span,
            x_name: Some("Probe".into()),
            shade: None,
            note: None,
        });
        let mut loss = vec![series("lost", points(&probes, &n, "lost_percent"), 2, true)];
        if let Some(m) = max_loss {
            loss.push(series("--max-loss", vec![(span.0, m), (span.1, m)], 3, false));
        }
        v.charts.push(Chart {
            id: "search_loss".into(),
            title: "Probes: datagrams lost".into(),
            y_name: "Loss".into(),
            unit: Unit::Percent,
            series: loss,
            x_span: span,
            x_name: Some("Probe".into()),
            shade: None,
            note: None,
        });
    } else {
        v.notes.push("No probe ended, so there is nothing to plot.".into());
    }
    if let Some(r) = result {
        if let Some(b) = num(r, "bits_per_second") {
            v.headline.push(("Highest rate".into(), rate_text(b)));
        }
        if let Some(b) = num(r, "received_bits_per_second") {
            v.headline.push(("Received".into(), rate_text(b)));
        }
        if let Some(l) = num(r, "lost_percent") {
            v.headline
                .push(("Lost".into(), format!("{}%", crate::mode::percent(l))));
        }
        if let Some(f) = text(r, "finish") {
            v.headline.push(("Search ended".into(), f.replace('_', " ")));
        }
    }
    let floor = result
        .and_then(|r| num(r, "loss_floor_percent"))
        .or_else(|| num(s, "loss_floor_percent"));
    if let Some(f) = floor {
        v.headline
            .push(("Loss floor".into(), format!("{}%", crate::mode::percent(f))));
    }
    v.summary = Table {
        head: ["Probe", "Asked", "Received", "Lost/Total", "Loss", "Verdict"]
            .map(String::from)
            .to_vec(),
        rows: probes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let verdict = if flag(p, "ok") {
                    "ok"
                } else if flag(p, "sender_limited") {
                    "sender short of the rate"
                } else {
                    "too much loss"
                };
                (
                    false,
                    vec![
                        format!("{}", i + 1),
                        num(p, "bits_per_second").map_or("-".into(), rate_text),
                        num(p, "received_bits_per_second").map_or("-".into(), rate_text),
                        format!("{}/{}", count(num(p, "lost_packets")), count(num(p, "packets"))),
                        num(p, "lost_percent").map_or("-".into(), |l| format!("{}%", crate::mode::percent(l))),
                        verdict.into(),
                    ],
                )
            })
            .collect(),
    };
    v
}
