//! What a run is downloaded as besides its JSON: iperf 2's `-y C` rows,
//! and the chart that lays two runs' throughput over each other.

use serde_json::Value;

use wirespeed_report::document::{Document, TestDoc};
use wirespeed_report::html::{chart, model};
use wirespeed_report::iperf2::csv::{UdpColumns, row};

/// A run's intervals as iperf 2's `-y C` rows (`docs/ui.md`): one per
/// stream and interval, client address first; UDP rows add the
/// receiver's columns.
pub fn csv(doc: &Value) -> String {
    match Document::from_value(doc) {
        Ok(Document::Test(t)) => csv_of(&t),
        _ => String::new(),
    }
}

fn csv_of(doc: &TestDoc) -> String {
    let start = doc.start.clone().unwrap_or_default();
    let t0 = start.timestamp.as_ref().and_then(|t| t.timesecs).unwrap_or(0.0);
    // A server's document names who connected to it.
    let server = start.accepted_connection.is_some();
    let udp = doc.test_start().and_then(|t| t.protocol.as_deref()) == Some("UDP");
    let ends = |socket: i64| {
        let c = start.connected().iter().find(|c| c.socket.unwrap_or(0) == socket);
        let host = |h: Option<&String>| h.cloned().unwrap_or_default();
        let port = |p: Option<i64>| p.unwrap_or(0).clamp(0, 65535) as u16;
        let local = (
            host(c.and_then(|c| c.local_host.as_ref())),
            port(c.and_then(|c| c.local_port)),
        );
        let remote = (
            host(c.and_then(|c| c.remote_host.as_ref())),
            port(c.and_then(|c| c.remote_port)),
        );
        if server { (remote, local) } else { (local, remote) }
    };
    let mut out = String::new();
    for iv in doc.intervals() {
        for (n, s) in iv.streams.iter().enumerate() {
            let socket = s.socket.unwrap_or(0);
            let (src, dst) = ends(socket);
            let udp_cols = udp.then(|| UdpColumns {
                jitter_ms: s.jitter_ms.unwrap_or(0.0),
                lost: s.lost_packets.unwrap_or(0),
                total: s.packets.unwrap_or(0),
                out_of_order: s.out_of_order.unwrap_or(0),
            });
            let end = s.end.unwrap_or(0.0);
            out.push_str(&row(
                t0 + end,
                true,
                &src,
                &dst,
                (n + 1) as u32,
                s.start.unwrap_or(0.0),
                end,
                s.bytes.unwrap_or(0.0).max(0.0) as u64,
                s.bits_per_second.unwrap_or(0.0),
                udp_cols,
            ));
        }
    }
    out
}

/// The sum throughput line of a document (its only stream's, if one).
fn throughput(doc: &Value) -> Vec<(f64, f64)> {
    let view = model::view(doc);
    let Some(c) = view.charts.iter().find(|c| c.id == "throughput") else {
        return Vec::new();
    };
    c.series
        .iter()
        .find(|s| s.emphasis)
        .or_else(|| c.series.first())
        .map(|s| s.points.clone())
        .unwrap_or_default()
}

/// One chart with two runs' throughput, each on its own time from 0.
pub fn compare(a: &Value, a_label: &str, b: &Value, b_label: &str) -> String {
    let (pa, pb) = (throughput(a), throughput(b));
    let end = pa.iter().chain(&pb).map(|p| p.0).fold(1.0, f64::max);
    let series = |label: &str, points: Vec<(f64, f64)>, i: usize| chart::Series {
        label: label.to_string(),
        points,
        colour: chart::colour(i).to_string(),
        emphasis: true,
        in_legend: true,
    };
    let c = chart::Chart {
        id: "compare".into(),
        title: "Throughput".into(),
        y_name: "Throughput".into(),
        unit: chart::Unit::BitsPerSecond,
        series: vec![series(a_label, pa, 0), series(b_label, pb, 1)],
        x_span: (0.0, end),
        x_name: None,
        shade: None,
        note: None,
    };
    format!(
        "<figure><figcaption>{}</figcaption>{}</figure>",
        wirespeed_report::html::escape(&format!("Throughput: {a_label} and {b_label}")),
        chart::render(&c)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(rate: f64) -> Value {
        json!({
            "start": {
                "connected": [{"socket": 5, "local_host": "127.0.0.1", "local_port": 40000, "remote_host": "127.0.0.1", "remote_port": 5201}],
                "timestamp": {"timesecs": 1_800_000_000},
                "test_start": {"protocol": "TCP", "num_streams": 1, "duration": 2}
            },
            "intervals": [
                {"streams": [{"socket": 5, "start": 0.0, "end": 1.0, "seconds": 1.0, "bytes": 1000, "bits_per_second": rate}],
                 "sum": {"start": 0.0, "end": 1.0, "seconds": 1.0, "bytes": 1000, "bits_per_second": rate}},
                {"streams": [{"socket": 5, "start": 1.0, "end": 2.0, "seconds": 1.0, "bytes": 1000, "bits_per_second": rate}],
                 "sum": {"start": 1.0, "end": 2.0, "seconds": 1.0, "bytes": 1000, "bits_per_second": rate}}
            ],
            "end": {}
        })
    }

    #[test]
    fn intervals_become_iperf2_csv_rows() {
        let rows = csv(&doc(8000.0));
        let lines: Vec<&str> = rows.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].ends_with(",127.0.0.1,40000,127.0.0.1,5201,1,0.0-1.0,1000,8000"),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains(",1.0-2.0,1000,8000"), "{}", lines[1]);
    }

    #[test]
    fn two_runs_share_one_chart() {
        let html = compare(&doc(8000.0), "run 1", &doc(16000.0), "run 2");
        assert!(html.contains("run 1") && html.contains("run 2"), "{html}");
        assert!(html.contains("data-chart=\"compare\""), "{html}");
        assert_eq!(html.matches("<polyline class=\"series\"").count(), 2, "{html}");
    }
}
