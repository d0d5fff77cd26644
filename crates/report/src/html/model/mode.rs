//! The sections of the modes' documents (`--rpm`, `--udp-search`, as
//! `report::mode` writes them): the responsiveness over time with the
//! goodput, and the search's probes (rate asked against received, loss).

use super::{Table, TestView, rate_text};
use crate::document::{NqDoc, NqWay, RpmDoc, RpmInterval, RpmProbes, SearchDoc, SearchProbe};
use crate::html::chart::{self, Chart, Series, Unit};

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

fn points<T>(rows: &[T], x: &dyn Fn(usize, &T) -> Option<f64>, key: fn(&T) -> Option<f64>) -> Vec<(f64, f64)> {
    rows.iter()
        .enumerate()
        .filter_map(|(i, r)| Some((x(i, r)?, key(r)?)))
        .collect()
}

fn count(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.0}"))
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |m| format!("{m:.3} ms"))
}

/// The responsiveness test's section.
pub(super) fn rpm_view(doc: &RpmDoc) -> TestView {
    let start = doc.start.clone().unwrap_or_default();
    let ivs = &doc.intervals;
    let mut v = TestView {
        heading: format!(
            "Responsiveness (RPM) with {} port {}",
            start.host.as_deref().unwrap_or("?"),
            start.port.map_or("?".into(), |p| p.to_string())
        ),
        subtitle: start.method.clone().unwrap_or_default(),
        error: doc.error.clone(),
        ..TestView::default()
    };
    let at = |_: usize, r: &RpmInterval| r.seconds;
    let span = (0.0, ivs.last().and_then(|r| r.seconds).unwrap_or(1.0));
    type Pick = fn(&RpmInterval) -> Option<f64>;
    let rpm: Vec<Series> = [
        ("RPM", (|r| r.rpm) as Pick, true),
        ("foreign", |r| r.foreign_rpm, false),
        ("loaded", |r| r.loaded_rpm, false),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, bold))| series(label, points(ivs, &at, *key), i, *bold))
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
        ("goodput", (|r| r.goodput_bits_per_second) as Pick, false),
        ("moving average", |r| r.goodput_moving_average, true),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, bold))| series(label, points(ivs, &at, *key), i, *bold))
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
    let end = doc.end.clone().unwrap_or_default();
    if let Some(r) = end.rpm {
        v.headline.push((
            "Responsiveness".into(),
            format!("{r:.0} RPM ({})", end.class.as_deref().unwrap_or("?")),
        ));
    } else if doc.end.is_some() {
        v.headline
            .push(("Responsiveness".into(), "no probe came back under load".into()));
    }
    if let Some(c) = &end.confidence {
        v.headline.push(("Confidence".into(), c.to_string()));
    }
    if let Some(g) = end.goodput_bits_per_second {
        v.headline.push(("Goodput".into(), rate_text(g)));
    }
    if let Some(i) = end.idle_rpm {
        v.headline.push(("Idle".into(), format!("{i:.0} RPM")));
    }
    let idle = end.idle.clone().unwrap_or_default();
    let loaded: RpmProbes = end.loaded.clone().unwrap_or_default();
    if doc.end.is_some() {
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
                        ms(idle.tcp_handshake_ms),
                        ms(idle.round_trip_ms),
                        "-".into(),
                        "-".into(),
                    ],
                ),
                (
                    false,
                    vec![
                        "loaded".into(),
                        ms(loaded.tcp_handshake_ms),
                        ms(loaded.round_trip_ms),
                        ms(loaded.round_trip_p90_ms.flatten()),
                        ms(loaded.tcp_info_rtt_ms.flatten().or(loaded.self_probe_ms)),
                    ],
                ),
            ],
        };
    }
    let mut p = Vec::new();
    for (k, x) in [
        ("Direction", end.direction.clone()),
        ("Load flows at the end", end.flows.map(|f| f.to_string())),
        ("Probes that failed", end.probe_failures.map(|f| f.to_string())),
    ] {
        if let Some(x) = x {
            p.push((k.to_string(), x));
        }
    }
    for (k, x) in [
        ("Most load flows", start.max_flows.map(|m| m as f64)),
        ("Probes per second", start.probes_per_second),
        ("Time limit (s)", start.time_limit_seconds),
    ] {
        if let Some(x) = x {
            p.push((k.to_string(), count(Some(x))));
        }
    }
    v.params = p;
    v
}

/// The UDP search's section.
pub(super) fn search_view(doc: &SearchDoc) -> TestView {
    let s = doc.search.clone().unwrap_or_default();
    let result = s.result.as_ref();
    let probes = s.probes();
    let max_loss = s.max_loss_percent;
    let mut v = TestView {
        heading: format!(
            "UDP rate search: the highest rate with loss <= {}%",
            max_loss.map_or("?".into(), crate::mode::trim_num)
        ),
        subtitle: format!(
            "{} probes of {} s, {} stream(s){}",
            probes.len(),
            s.probe_seconds.map_or("?".into(), crate::mode::trim_num),
            count(s.streams.map(|n| n as f64)),
            if s.reverse.unwrap_or(false) {
                ", the server sending"
            } else {
                ""
            }
        ),
        error: doc.error.clone(),
        ..TestView::default()
    };
    let n = |i: usize, _: &SearchProbe| Some((i + 1) as f64);
    let span = (1.0, probes.len().max(2) as f64);
    type Pick = fn(&SearchProbe) -> Option<f64>;
    let rates: Vec<Series> = [
        ("asked", (|p| p.bits_per_second) as Pick, false),
        ("received", |p| p.received_bits_per_second, true),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, bold))| series(label, points(probes, &n, *key), i, *bold))
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
        let mut loss = vec![series("lost", points(probes, &n, |p| p.lost_percent), 2, true)];
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
        if let Some(b) = r.bits_per_second {
            v.headline.push(("Highest rate".into(), rate_text(b)));
        }
        if let Some(b) = r.received_bits_per_second {
            v.headline.push(("Received".into(), rate_text(b)));
        }
        if let Some(l) = r.lost_percent {
            v.headline
                .push(("Lost".into(), format!("{}%", crate::mode::percent(l))));
        }
        if let Some(f) = &r.finish {
            v.headline.push(("Search ended".into(), f.replace('_', " ")));
        }
    }
    let floor = result.and_then(|r| r.loss_floor_percent).or(s.loss_floor_percent);
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
                let verdict = if p.ok.unwrap_or(false) {
                    "ok"
                } else if p.sender_limited.unwrap_or(false) {
                    "sender short of the rate"
                } else {
                    "too much loss"
                };
                (
                    false,
                    vec![
                        format!("{}", i + 1),
                        p.bits_per_second.map_or("-".into(), rate_text),
                        p.received_bits_per_second.map_or("-".into(), rate_text),
                        format!(
                            "{}/{}",
                            count(p.lost_packets.map(|n| n as f64)),
                            count(p.packets.map(|n| n as f64))
                        ),
                        p.lost_percent
                            .map_or("-".into(), |l| format!("{}%", crate::mode::percent(l))),
                        verdict.into(),
                    ],
                )
            })
            .collect(),
    };
    v
}

/// The standard responsiveness test's document (`--rpm=URL -J`): each
/// direction's goodput over time and its result.
pub(super) fn nq_view(doc: &NqDoc) -> TestView {
    let mut v = TestView {
        heading: format!(
            "Responsiveness (networkQuality) of {}",
            doc.config_url.as_deref().unwrap_or("?")
        ),
        ..TestView::default()
    };
    let ways: Vec<(&str, &NqWay)> = [("download", &doc.download), ("upload", &doc.upload)]
        .into_iter()
        .filter_map(|(n, w)| Some((n, w.as_ref()?)))
        .collect();
    let at = |_: usize, s: &crate::document::NqSecond| s.seconds;
    let series: Vec<Series> = ways
        .iter()
        .enumerate()
        .map(|(i, (name, w))| series(name, points(&w.intervals, &at, |s| s.goodput), i, i == 0))
        .filter(|s| !s.points.is_empty())
        .collect();
    let span = ways
        .iter()
        .filter_map(|(_, w)| w.intervals.last().and_then(|s| s.seconds))
        .fold(1.0, f64::max);
    if series.is_empty() {
        v.notes
            .push("No second was measured, so there is nothing to plot.".into());
    } else {
        v.charts.push(Chart {
            id: "rpm_goodput".into(),
            title: "Goodput of the load connections".into(),
            y_name: "Goodput".into(),
            unit: Unit::BitsPerSecond,
            series,
            x_span: (0.0, span),
            x_name: None,
            shade: None,
            note: None,
        });
    }
    for (name, w) in &ways {
        if let Some(r) = w.rpm {
            v.headline.push((
                format!("Responsiveness ({name})"),
                format!("{r:.0} RPM ({})", w.class.as_deref().unwrap_or("?")),
            ));
        }
        if let Some(t) = w.throughput {
            v.headline.push((format!("Capacity ({name})"), rate_text(t)));
        }
    }
    v.summary = Table {
        head: ["Direction", "Flows", "Loaded latency", "Confidence", "Seconds"]
            .map(String::from)
            .to_vec(),
        rows: ways
            .iter()
            .map(|(name, w)| {
                (
                    false,
                    vec![
                        name.to_string(),
                        count(w.flows.map(|f| f as f64)),
                        ms(w.loaded_latency_ms),
                        w.confidence.clone().unwrap_or_else(|| "-".into()),
                        w.seconds.map_or("-".into(), crate::mode::trim_num),
                    ],
                )
            })
            .collect(),
    };
    if let Some(l) = doc.unloaded_latency_ms {
        v.params.push(("Idle latency".into(), ms(Some(l))));
    }
    if let Some(j) = doc.jitter_ms {
        v.params.push(("Idle jitter".into(), ms(Some(j))));
    }
    v
}
