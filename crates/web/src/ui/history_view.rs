//! What the page shows of the history: the runs of a time range (and one
//! target), as a table, as CSV or JSON to download, and as charts of one
//! target's throughput and round trips over hours or days.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::board::{Board, Mode};
use super::history::{MAX_LIST, MAX_POINTS, Query, Stored};
use wirespeed_http::Request;
use wirespeed_report::html::chart::{self, Chart, Series, Unit};
use wirespeed_report::html::escape;

/// Runs a listing shows unless asked for fewer or more.
pub(crate) const DEFAULT_LIMIT: usize = 100;

/// The query a request's parameters make: `from` and `to` (epoch
/// seconds), `target`, `schedule`, `before` (a run number, for paging) and
/// `limit`; a server's page lists its own tests, a UI's page its runs.
pub fn query(board: &Board, req: &Request, default_limit: usize, cap: usize) -> Result<Query, String> {
    let num = |k: &str| -> Result<Option<i64>, String> {
        req.param(k)
            .filter(|v| !v.is_empty())
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| format!("{k}: '{v}' is not a whole number"))
            })
            .transpose()
    };
    let secs = |k: &str| num(k).map(|v| v.map(|s| s.saturating_mul(1000)));
    let limit = num("limit")?.map_or(default_limit, |n| n.clamp(1, cap as i64) as usize);
    Ok(Query {
        from_ms: secs("from")?,
        to_ms: secs("to")?,
        target: req.param("target").filter(|t| !t.is_empty()).map(String::from),
        schedule: num("schedule")?.map(|n| n.max(0) as u64),
        before: num("before")?.map(|n| n.max(0) as u64),
        served: Some(board.mode == Mode::Server),
        limit,
    })
}

/// The runs `q` finds, each as the page lists it; a run this board holds
/// in memory shows its state as of now.
pub fn list(board: &Board, q: &Query) -> Result<Value, String> {
    // The board first: a run's end is written to the file under its lock,
    // so the rows read now agree with the states laid over them (read
    // before it, a run could be listed done without its numbers).
    let runs = board.runs();
    let stored = board.history.list(q)?;
    Ok(Value::Array(
        stored
            .iter()
            .map(|s| {
                let mut v = s.json();
                if let Some(r) = runs.iter().find(|r| r.id == s.id) {
                    let live = r.summary();
                    for k in ["state", "error", "intervals", "stderr"] {
                        v[k] = live[k].clone();
                    }
                }
                v
            })
            .collect(),
    ))
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn utc(ms: i64) -> String {
    wirespeed_sys::time::strftime("%Y-%m-%d %H:%M:%S", ms.div_euclid(1000), true)
}

fn cell(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x}"))
}

fn csv_text(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The runs as CSV: one row each, its headline numbers in plain units,
/// and last the intervals it stored (an interrupted run's too).
pub fn csv(runs: &[Stored]) -> String {
    let mut o = String::from(
        "id,started_utc,started_epoch,ended_epoch,kind,schedule,target,dialect,state,error,title,\
         sent_bits_per_second,received_bits_per_second,retransmits,rtt_ms,jitter_ms,lost_percent,\
         latency_idle_p50_ms,latency_loaded_p50_ms,rpm,intervals\n",
    );
    for r in runs {
        let h = &r.headline;
        let _ = writeln!(
            o,
            "{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.id,
            utc(r.started_ms),
            r.started_ms as f64 / 1000.0,
            r.ended_ms
                .map_or(String::new(), |e| format!("{:.3}", e as f64 / 1000.0)),
            r.kind,
            r.schedule.map_or(String::new(), |s| s.to_string()),
            csv_text(&r.target),
            r.dialect,
            r.state,
            csv_text(r.error.as_deref().unwrap_or("")),
            csv_text(&r.title),
            cell(h.sent_bps),
            cell(h.received_bps),
            h.retransmits.map_or(String::new(), |n| n.to_string()),
            cell(h.rtt_ms),
            cell(h.jitter_ms),
            cell(h.lost_percent),
            cell(h.idle_ms),
            cell(h.loaded_ms),
            cell(h.rpm),
            r.intervals,
        );
    }
    o
}

/// The runs as one JSON document.
pub(crate) fn json_export(runs: &[Stored]) -> Value {
    json!({ "runs": runs.iter().map(Stored::json).collect::<Vec<_>>() })
}

/// Every run of the query for a download (capped at [`MAX_LIST`]).
pub fn all(board: &Board, q: &Query) -> Result<Vec<Stored>, String> {
    board.history.list(&Query {
        limit: q.limit.min(MAX_LIST),
        ..q.clone()
    })
}

/// Charts of `target`'s runs in the query's range: throughput (sent and
/// received), and round trips (TCP RTT, `--latency` idle and loaded
/// medians) and RPM when any run has them. Time runs from the first run
/// shown, in seconds, minutes, hours or days as the span asks.
pub fn charts(board: &Board, q: &Query) -> Result<String, String> {
    let Some(target) = &q.target else {
        return Err("a chart is of one target: give target=".into());
    };
    // The newest MAX_POINTS of the range, drawn oldest first.
    let mut runs = board.history.list(&Query {
        limit: MAX_POINTS,
        before: None,
        ..q.clone()
    })?;
    runs.reverse();
    let runs: Vec<&Stored> = runs
        .iter()
        .filter(|r| r.state == "done" || r.state == "stopped")
        .collect();
    let mut o = String::new();
    let (Some(first), Some(last)) = (runs.first(), runs.last()) else {
        let _ = write!(
            o,
            "<p class=\"status\">No finished runs against {} in this range.</p>",
            escape(target)
        );
        return Ok(o);
    };
    let t0 = first.started_ms;
    let (per, unit_name) = match last.started_ms - t0 {
        s if s > 3 * 86_400_000 => (86_400_000.0, "Days"),
        s if s > 2 * 3_600_000 => (3_600_000.0, "Hours"),
        s if s > 120_000 => (60_000.0, "Minutes"),
        _ => (1000.0, "Seconds"),
    };
    let x_name = format!("{unit_name} since {} UTC", utc(t0));
    let x = |r: &Stored| (r.started_ms - t0) as f64 / per;
    let x_end = ((last.started_ms - t0) as f64 / per).max(1e-3);
    let line = |label: &str, i: usize, pick: &dyn Fn(&Stored) -> Option<f64>| Series {
        label: label.to_string(),
        points: runs.iter().filter_map(|r| Some((x(r), pick(r)?))).collect(),
        colour: chart::colour(i).to_string(),
        emphasis: i == 0,
        in_legend: true,
    };
    let mut make = |id: &str, title: &str, y_name: &str, unit: Unit, series: Vec<Series>| {
        let series: Vec<Series> = series.into_iter().filter(|s| !s.points.is_empty()).collect();
        if series.is_empty() {
            return;
        }
        let c = Chart {
            id: id.into(),
            title: title.into(),
            y_name: y_name.into(),
            unit,
            series,
            x_span: (0.0, x_end),
            x_name: Some(x_name.clone()),
            shade: None,
            note: None,
        };
        let _ = write!(
            o,
            "<figure class=\"history-chart\"><figcaption>{}</figcaption>{}</figure>",
            escape(title),
            chart::render(&c)
        );
    };
    make(
        "history-throughput",
        &format!("Throughput against {target}, {} runs", runs.len()),
        "Throughput",
        Unit::BitsPerSecond,
        vec![
            line("received", 0, &|r| r.headline.received_bps),
            line("sent", 1, &|r| r.headline.sent_bps),
        ],
    );
    make(
        "history-latency",
        &format!("Round trips against {target}"),
        "Round trip",
        Unit::Millis,
        vec![
            line("loaded median (--latency)", 0, &|r| r.headline.loaded_ms),
            line("idle median (--latency)", 1, &|r| r.headline.idle_ms),
            line("TCP smoothed RTT", 2, &|r| r.headline.rtt_ms),
        ],
    );
    make(
        "history-rpm",
        &format!("Responsiveness against {target}"),
        "Responsiveness",
        Unit::Rpm,
        vec![line("RPM", 0, &|r| r.headline.rpm)],
    );
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::super::history::{Headline, History, NewRun};
    use super::*;
    use std::sync::Arc;

    #[test]
    fn csv_quotes_what_needs_it_and_charts_draw_one_target() {
        let h = Arc::new(History::open(":memory:").unwrap());
        let board = Board::new(Mode::Client { max_running: 1 }, h.clone());
        for (target, bps) in [("a", 1e6), ("a", 3e6), ("b, \"x\"", 5e6)] {
            let id = h
                .begin(&NewRun {
                    kind: "client",
                    schedule: None,
                    title: "t",
                    target,
                    dialect: "iperf3",
                })
                .unwrap();
            let hl = Headline {
                received_bps: Some(bps),
                rtt_ms: Some(1.5),
                ..Default::default()
            };
            h.finish(id, "done", None, &hl);
        }
        let runs = h
            .list(&Query {
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        let text = csv(&runs);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.contains(",\"b, \"\"x\"\"\",iperf3,done,,t,,5000000,"), "{text}");
        let q = Query {
            target: Some("a".into()),
            limit: 10,
            ..Default::default()
        };
        let html = charts(&board, &q).unwrap();
        assert!(html.contains("id=\"chart-history-throughput\""), "{html}");
        assert!(html.contains("id=\"chart-history-latency\""), "{html}");
        assert!(!html.contains("chart-history-rpm"), "{html}");
        assert!(html.contains("Throughput against a, 2 runs"), "{html}");
        assert!(charts(&board, &Query::default()).is_err());
    }
}
