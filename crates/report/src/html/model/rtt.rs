//! The page's view of `--latency`: round trips per interval under the
//! throughput chart, and idle against loaded at the end.

use serde_json::Value;

use super::chart::{self, Chart, Series, Unit};
use super::{Points, Table, Times, empty, int, interval_times, num};

/// `--latency`'s round trips per interval: p50, p90 and max.
pub(super) fn latency_chart(intervals: &[Value]) -> Option<Chart> {
    if !intervals.iter().any(|iv| iv.get("latency").is_some()) {
        return None;
    }
    let Times { xs, warm, span } = interval_times(intervals);
    let pick = |key: &str| -> Points {
        intervals
            .iter()
            .zip(&xs)
            .filter_map(|(iv, x)| {
                let l = iv.get("latency")?;
                (int(l, "probes")? > 0).then_some(())?;
                Some((*x, num(l, key)?))
            })
            .collect()
    };
    let series = [
        ("p50", "p50_ms", true),
        ("p90", "p90_ms", false),
        ("max", "max_ms", false),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, emphasis))| Series {
        label: label.to_string(),
        points: pick(key),
        colour: if i == 0 {
            chart::SUM_COLOUR.to_string()
        } else {
            chart::colour(i).to_string()
        },
        emphasis: *emphasis,
        in_legend: true,
    })
    .collect();
    Some(Chart {
        id: "latency".into(),
        title: "Round trips under load (--latency probes)".into(),
        y_name: "RTT".into(),
        unit: Unit::Millis,
        series,
        x_span: span,
        x_name: None,
        shade: warm.map(|(a, b)| (a, b, "omitted".to_string())),
        note: None,
    })
}

/// Idle against loaded round trips.
pub(super) fn latency_table(l: &Value) -> Table {
    let mut t = Table {
        head: ["Round trips", "Probes", "p50", "p90", "p99", "max"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    };
    let ms = |x: Option<f64>| x.map(|v| format!("{v:.3} ms")).unwrap_or_default();
    for (key, label) in [("idle", "idle (before the test)"), ("loaded", "under load")] {
        let d = l.get(key).unwrap_or(empty());
        t.rows.push((
            false,
            vec![
                label.to_string(),
                int(d, "probes").map(|n| n.to_string()).unwrap_or_default(),
                ms(num(d, "p50_ms")),
                ms(num(d, "p90_ms")),
                ms(num(d, "p99_ms")),
                ms(num(d, "max_ms")),
            ],
        ));
    }
    t
}
