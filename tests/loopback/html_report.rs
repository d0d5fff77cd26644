//! The HTML report: its plotted points, read back from the SVG, are the
//! numbers of the JSON document it was made from — for real iperf3 3.12
//! output and for our own `--report`; and bad input fails cleanly.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{json, run, wirespeed, wirespeed_server};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ws-html-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Attributes of the tag starting at `tag` (`<svg ...>`), unescaped.
fn attrs(tag: &str) -> HashMap<String, String> {
    let end = tag.find('>').unwrap();
    let mut out = HashMap::new();
    let mut rest = &tag[..end];
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].rsplit(' ').next().unwrap().to_string();
        let after = &rest[eq + 2..];
        let close = after.find('"').unwrap();
        let v = after[..close]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&");
        out.insert(name, v);
        rest = &after[close + 1..];
    }
    out
}

/// A chart read back from the page: series label -> (seconds, raw value) points.
struct Plotted {
    series: Vec<(String, Vec<(f64, f64)>)>,
    y_range: f64,
}

/// Reads chart `id`'s series back, inverting the SVG coordinates with the
/// scale the chart declares.
fn plotted(html: &str, id: &str) -> Option<Plotted> {
    let start = html.find(&format!("<svg class=\"chart\" id=\"chart-{id}\""))?;
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    let a = attrs(svg);
    let f = |k: &str| a[k].parse::<f64>().unwrap();
    let (x0, x1, y1, scale) = (f("data-x-min"), f("data-x-max"), f("data-y-max"), f("data-y-scale"));
    let plot: Vec<f64> = a["data-plot"].split(' ').map(|v| v.parse().unwrap()).collect();
    let (pl, pt, pr, pb) = (plot[0], plot[1], plot[2], plot[3]);
    let mut series = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<polyline ") {
        let pa = attrs(&rest[i..]);
        let pts = pa["points"]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
                (x0 + (x - pl) / (pr - pl) * (x1 - x0), (pb - y) / (pb - pt) * y1 * scale)
            })
            .collect();
        series.push((pa["data-label"].clone(), pts));
        rest = &rest[i + 10..];
    }
    Some(Plotted {
        series,
        y_range: y1 * scale,
    })
}

/// Expected (x, value) points of `key` for the stream with `socket` and
/// direction, from the document's intervals (x = interval middle; warm-up
/// intervals moved before zero).
fn expected(doc: &Value, socket: Option<i64>, sender: bool, key: &str, div: f64) -> Vec<(f64, f64)> {
    let ivs = doc["intervals"].as_array().unwrap();
    let warm = ivs
        .iter()
        .filter(|iv| iv["sum"]["omitted"] == true)
        .map(|iv| iv["sum"]["end"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let mut out = Vec::new();
    for iv in ivs {
        let shift = if iv["sum"]["omitted"] == true { -warm } else { 0.0 };
        let x = (iv["sum"]["start"].as_f64().unwrap() + iv["sum"]["end"].as_f64().unwrap()) / 2.0 + shift;
        let obj = match socket {
            Some(s) => iv["streams"]
                .as_array()
                .unwrap()
                .iter()
                .find(|st| st["socket"] == s && st["sender"] == sender)
                .cloned(),
            None => Some(iv["sum"].clone()),
        };
        if let Some(v) = obj.and_then(|o| o[key].as_f64()) {
            out.push((x, v / div));
        }
    }
    out
}

fn assert_matches(p: &Plotted, label: &str, want: &[(f64, f64)]) {
    let got = &p
        .series
        .iter()
        .find(|(l, _)| l == label)
        .unwrap_or_else(|| {
            panic!(
                "no series {label:?}; have {:?}",
                p.series.iter().map(|s| &s.0).collect::<Vec<_>>()
            )
        })
        .1;
    assert_eq!(got.len(), want.len(), "{label}: point count");
    for ((gx, gy), (wx, wy)) in got.iter().zip(want) {
        assert!((gx - wx).abs() < 0.01, "{label}: x {gx} vs {wx}");
        // Coordinates carry 0.01 px on a 240 px axis.
        assert!((gy - wy).abs() <= p.y_range * 1e-3, "{label}: y {gy} vs {wy}");
    }
}

fn render(input: &Path, out: &Path) -> String {
    let r = run(
        &wirespeed(),
        &["report", input.to_str().unwrap(), "-o", out.to_str().unwrap()],
        T,
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn iperf3_tcp_document_is_plotted_exactly() {
    let dir = scratch("tcp");
    let src = data("iperf3-3.12-tcp-p2.json");
    let doc = json(&std::fs::read_to_string(&src).unwrap());
    let html = render(&src, &dir.join("r.html"));
    let tp = plotted(&html, "throughput").expect("throughput chart");
    for s in [5, 7] {
        assert_matches(
            &tp,
            &format!("stream {s}"),
            &expected(&doc, Some(s), true, "bits_per_second", 1.0),
        );
    }
    assert_matches(&tp, "sum", &expected(&doc, None, true, "bits_per_second", 1.0));
    let rtt = plotted(&html, "rtt").expect("rtt chart");
    assert_matches(&rtt, "stream 5", &expected(&doc, Some(5), true, "rtt", 1000.0));
    let cwnd = plotted(&html, "cwnd").expect("cwnd chart");
    assert_matches(&cwnd, "stream 7", &expected(&doc, Some(7), true, "snd_cwnd", 1.0));
    assert!(plotted(&html, "retransmits").is_some());
    // Self-contained: nothing fetched from anywhere.
    for needle in ["<script", "http://", "https://", "@import", "url("] {
        assert!(!html.contains(needle), "page contains {needle}");
    }
}

#[test]
fn iperf3_udp_document_plots_jitter_and_loss() {
    let dir = scratch("udp");
    let src = data("iperf3-3.12-udp-lossy-reverse.json");
    let doc = json(&std::fs::read_to_string(&src).unwrap());
    let html = render(&src, &dir.join("r.html"));
    let jitter = plotted(&html, "jitter").expect("jitter chart");
    assert_matches(&jitter, "stream 5", &expected(&doc, Some(5), false, "jitter_ms", 1.0));
    let loss = plotted(&html, "loss").expect("loss chart");
    assert_matches(&loss, "stream 7", &expected(&doc, Some(7), false, "lost_percent", 1.0));
    assert_matches(&loss, "sum", &expected(&doc, None, false, "lost_percent", 1.0));
    // Reordering is only a total in iperf3's JSON: it is in the table.
    assert!(html.contains("Out of order"));
}

#[test]
fn omitted_warm_up_is_drawn_before_zero() {
    let dir = scratch("omit");
    let src = data("iperf3-3.12-tcp-bidir-omit.json");
    let doc = json(&std::fs::read_to_string(&src).unwrap());
    let html = render(&src, &dir.join("r.html"));
    let tp = plotted(&html, "throughput").unwrap();
    let want = expected(&doc, Some(5), true, "bits_per_second", 1.0);
    assert!(want[0].0 < 0.0, "the warm-up interval sits before zero");
    assert_matches(&tp, "stream 5 (sending)", &want);
    assert_matches(
        &tp,
        "stream 7 (receiving)",
        &expected(&doc, Some(7), false, "bits_per_second", 1.0),
    );
    assert!(html.contains("class=\"shade\""));
}

#[test]
fn a_server_log_with_several_documents_is_one_page() {
    let dir = scratch("log");
    let html = render(&data("iperf3-3.12-server-log.json"), &dir.join("r.html"));
    assert_eq!(html.matches("<section class=\"test\"").count(), 5);
}

#[test]
fn report_option_plots_the_numbers_json_prints() {
    let dir = scratch("live-run");
    let port = common::free_port();
    let _srv = wirespeed_server(port, &[]);
    let out = dir.join("run.html");
    let r = run(
        &wirespeed(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "2",
            "-P",
            "2",
            "-J",
            "--report",
            out.to_str().unwrap(),
        ],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let doc = json(&r.stdout);
    let html = std::fs::read_to_string(&out).expect("report written");
    let tp = plotted(&html, "throughput").unwrap();
    let sock = |i: usize| doc["start"]["connected"][i]["socket"].as_i64().unwrap();
    for i in 0..2 {
        assert_matches(
            &tp,
            &format!("stream {}", sock(i)),
            &expected(&doc, Some(sock(i)), true, "bits_per_second", 1.0),
        );
    }
    assert_matches(&tp, "sum", &expected(&doc, None, true, "bits_per_second", 1.0));
    let rtt = plotted(&html, "rtt").unwrap();
    assert_matches(
        &rtt,
        &format!("stream {}", sock(0)),
        &expected(&doc, Some(sock(0)), true, "rtt", 1000.0),
    );
    // The window advice of the JSON is on the page too.
    let advice = doc["end"]["advice"]["text"].as_str().expect("advice in JSON");
    let first = advice.lines().next().unwrap().trim_start_matches("Window advice: ");
    assert!(html.contains(&first.replace('\'', "&#39;")), "{first}");
    // Nothing else was left in the directory (no temporary files).
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

/// The x of each point of chart `id`'s first series.
fn xs(html: &str, id: &str) -> Vec<f64> {
    let p = plotted(html, id).unwrap_or_else(|| panic!("no {id} chart"));
    p.series[0].1.iter().map(|(x, _)| *x).collect()
}

/// A test without periodic reports (iperf 2 without -i, iperf3 -i 0) is
/// sampled every second for its page, which draws those samples, while
/// every other output prints what it would without --report.
#[test]
fn a_test_without_periodic_reports_is_sampled_for_its_charts() {
    let dir = scratch("sampled");
    let secs = |xs: &[f64]| xs.iter().map(|x| (x * 10.0).round() / 10.0).collect::<Vec<_>>();
    // iperf 2, client and server (the server's own page, from its flows).
    let port = common::free_port();
    let srv_page = dir.join("srv.html");
    let _srv = common::iperf2_server(common::Iperf2::Ours, port, &["--report", srv_page.to_str().unwrap()]).unwrap();
    let page = dir.join("i2.html");
    let args = ["--iperf2", "-c", "127.0.0.1", "-p", &port.to_string(), "-t", "3"];
    let with: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--report", page.to_str().unwrap()])
        .collect();
    let r = run(&wirespeed(), &with, T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("No intervals were measured"));
    // Points at the middle of each second.
    assert_eq!(secs(&xs(&html, "throughput"))[..3], [0.5, 1.5, 2.5]);
    // The text is what it is without --report: the whole-test line only.
    let plain = run(&wirespeed(), &args, T);
    let shape = |t: &str| t.lines().filter(|l| l.contains(" sec ")).count();
    assert_eq!((shape(&r.stdout), shape(&plain.stdout)), (1, 1), "{}", r.stdout);
    // -J too: no intervals, with or without the page.
    let j: Vec<&str> = with.iter().copied().chain(["-J"]).collect();
    let doc = json(&run(&wirespeed(), &j, T).stdout);
    assert_eq!(doc["intervals"].as_array().map(Vec::len), Some(0), "{doc}");
    common::wait::file_exists(&srv_page, common::wait::LONG);
    let html = std::fs::read_to_string(&srv_page).expect("the server's page");
    assert!(xs(&html, "throughput").len() >= 3, "the server's page");
    // iperf3 -i 0: -J keeps its one whole-test interval; the page has seconds.
    let port = common::free_port();
    let _srv = wirespeed_server(port, &[]);
    let page = dir.join("i3.html");
    let r = run(
        &wirespeed(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "3",
            "-i",
            "0",
            "-J",
            "--report",
            page.to_str().unwrap(),
        ],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let doc = json(&r.stdout);
    let ivs = doc["intervals"].as_array().unwrap();
    assert_eq!(ivs.len(), 1, "{doc}");
    assert_eq!(ivs[0]["sum"]["start"].as_f64(), Some(0.0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(secs(&xs(&html, "throughput"))[..3], [0.5, 1.5, 2.5]);
}

#[test]
fn a_server_writes_one_numbered_report_per_test() {
    let dir = scratch("server");
    let port = common::free_port();
    let base = dir.join("srv.html");
    let _srv = wirespeed_server(port, &["--report", base.to_str().unwrap()]);
    for _ in 0..2 {
        let r = run(
            &wirespeed(),
            &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
            T,
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    // The server writes after the client is done.
    common::wait::file_exists(&dir.join("srv-2.html"), common::wait::LONG);
    for n in [1, 2] {
        let html = std::fs::read_to_string(dir.join(format!("srv-{n}.html"))).expect("numbered report");
        assert!(html.contains("TCP test, 1 stream from 127.0.0.1"), "test {n}");
        assert!(plotted(&html, "throughput").is_some());
    }
    assert!(!base.exists());
}

#[test]
fn an_unwritable_report_path_fails_before_the_test() {
    let port = common::free_port();
    let t0 = std::time::Instant::now();
    // No server: if the path were not checked first, this would be a
    // connection error instead.
    let r = run(
        &wirespeed(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--report",
            "/nonexistent-dir/r.html",
        ],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        "wirespeed: error - unable to write report /nonexistent-dir/r.html: No such file or directory\n"
    );
    assert!(r.stdout.is_empty());
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn report_command_refuses_what_is_not_iperf3_json() {
    let dir = scratch("bad");
    let bad = dir.join("bad.json");
    let out = dir.join("bad.html");
    for (content, why) in [
        (
            "{\"hello\": 1}",
            "is not an iperf3 JSON document: it has no \"start\" object",
        ),
        ("not json", "is not valid JSON"),
        ("", "is empty"),
    ] {
        std::fs::write(&bad, content).unwrap();
        let r = run(
            &wirespeed(),
            &["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()],
            T,
        );
        assert_eq!(r.code, Some(1), "{content}");
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(why), "{}", r.stderr);
        assert!(!out.exists(), "nothing written for {content:?}");
    }
    let r = run(&wirespeed(), &["report", dir.join("missing.json").to_str().unwrap()], T);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("No such file or directory"), "{}", r.stderr);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only bad.json remains");
}
