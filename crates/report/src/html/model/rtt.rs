//! The page's view of `--latency`: round trips per interval under the
//! throughput chart, and idle against loaded at the end.

use super::chart::{self, Chart, Series, Unit};
use super::{Points, Table, Times, interval_times};
use crate::document::{Interval, Latency, Rtt};

/// `--latency`'s round trips per interval: p50, p90 and max.
pub(super) fn latency_chart(intervals: &[Interval]) -> Option<Chart> {
    if !intervals.iter().any(|iv| iv.latency.is_some()) {
        return None;
    }
    let Times { xs, warm, span } = interval_times(intervals);
    let pick = |key: fn(&Rtt) -> Option<f64>| -> Points {
        intervals
            .iter()
            .zip(&xs)
            .filter_map(|(iv, x)| {
                let l = iv.latency.as_ref()?;
                (l.probes? > 0).then_some(())?;
                Some((*x, key(l)?))
            })
            .collect()
    };
    let series = [
        ("p50", (|l| l.p50_ms) as fn(&Rtt) -> Option<f64>, true),
        ("p90", |l| l.p90_ms, false),
        ("max", |l| l.max_ms, false),
    ]
    .iter()
    .enumerate()
    .map(|(i, (label, key, emphasis))| Series {
        label: label.to_string(),
        points: pick(*key),
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
pub(super) fn latency_table(l: &Latency) -> Table {
    let mut t = Table {
        head: ["Round trips", "Probes", "p50", "p90", "p99", "max"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    };
    let ms = |x: Option<f64>| x.map(|v| format!("{v:.3} ms")).unwrap_or_default();
    let none = Rtt::default();
    for (d, label) in [(&l.idle, "idle (before the test)"), (&l.loaded, "under load")] {
        let d = d.as_ref().unwrap_or(&none);
        t.rows.push((
            false,
            vec![
                label.to_string(),
                d.probes.map(|n| n.to_string()).unwrap_or_default(),
                ms(d.p50_ms),
                ms(d.p90_ms),
                ms(d.p99_ms),
                ms(d.max_ms),
            ],
        ));
    }
    t
}
