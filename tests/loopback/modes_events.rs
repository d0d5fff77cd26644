//! The modes that run many tests to answer one question (`--rpm`,
//! `--udp-search`) speak events: their `--json-stream` lines, their HTML
//! report with its charts, and their `--metrics` gauges, on loopback.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{Proc, free_port, run, wirespeed, wirespeed_server};
use serde_json::Value;

const T: Duration = Duration::from_secs(90);

fn events(stdout: &str) -> Vec<(String, Value)> {
    stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            (v["event"].as_str().unwrap().to_string(), v["data"].clone())
        })
        .collect()
}

/// The search's arguments that keep it short on loopback.
const SEARCH: [&str; 7] = ["--udp-search", "-t", "0.3", "-b", "50M", "--max-loss", "5"];

#[test]
fn rpm_json_stream_carries_its_start_intervals_and_result() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "--rpm", "-t", "3", "--json-stream"],
        T,
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let ev = events(&r.stdout);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"rpm_start"), "{}", r.stdout);
    assert_eq!(names.last(), Some(&"rpm_end"), "{}", r.stdout);
    assert!(
        names.iter().filter(|n| **n == "rpm_interval").count() >= 2,
        "{}",
        r.stdout
    );
    assert_eq!(ev[0].1["port"], port, "{}", r.stdout);
    let end = &ev.last().unwrap().1;
    assert!(end["rpm"].as_f64().unwrap() > 0.0, "{end}");
    assert!(end["goodput_bits_per_second"].as_f64().unwrap() > 0.0, "{end}");
}

#[test]
fn search_json_stream_carries_its_probes_and_answer() {
    let mut a = vec!["--loopback"];
    a.extend_from_slice(&SEARCH);
    a.push("--json-stream");
    let r = run(&wirespeed(), &a, T);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let ev = events(&r.stdout);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"search_start"), "{}", r.stdout);
    assert_eq!(names.last(), Some(&"search_end"), "{}", r.stdout);
    assert!(names.contains(&"probe"), "{}", r.stdout);
    assert_eq!(ev[1].1["bits_per_second"], 50_000_000, "{}", r.stdout);
    assert!(ev.last().unwrap().1["bits_per_second"].as_f64().unwrap() > 0.0);
}

fn report_of(args: &[&str], name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("ws-modes-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("r.html");
    let path_s = path.to_str().unwrap().to_string();
    let mut a = args.to_vec();
    a.extend_from_slice(&["--report", &path_s]);
    let r = run(&wirespeed(), &a, T);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let html = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    let _ = std::fs::remove_dir_all(&dir);
    html
}

/// The number of points of chart `id`'s series labelled `label`.
fn points(html: &str, id: &str, label: &str) -> usize {
    let start = html
        .find(&format!("<svg class=\"chart\" id=\"chart-{id}\""))
        .unwrap_or_else(|| panic!("no {id} chart"));
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    let at = svg
        .find(&format!("data-label=\"{label}\""))
        .unwrap_or_else(|| panic!("no {label} series in {id}"));
    let pts = &svg[at..];
    let pts = &pts[pts.find("points=\"").unwrap() + 8..];
    pts[..pts.find('"').unwrap()].split_whitespace().count()
}

#[test]
fn an_rpm_report_charts_the_responsiveness_and_the_goodput() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let html = report_of(&["-c", "127.0.0.1", "-p", &p, "--rpm", "-t", "3"], "rpm");
    assert!(html.contains("Responsiveness (RPM) with 127.0.0.1"), "{html}");
    assert!(points(&html, "rpm", "RPM") >= 2, "{html}");
    assert!(points(&html, "rpm_goodput", "goodput") >= 2, "{html}");
}

#[test]
fn a_search_report_charts_its_probes() {
    let mut a = vec!["--loopback"];
    a.extend_from_slice(&SEARCH);
    let html = report_of(&a, "search");
    assert!(html.contains("UDP rate search"), "{html}");
    let n = points(&html, "search_rates", "asked");
    assert!(n >= 1, "{html}");
    assert_eq!(points(&html, "search_rates", "received"), n);
    assert_eq!(points(&html, "search_loss", "lost"), n);
    assert!(html.contains(">Probe</text>"), "the x axis counts probes");
}

/// One scrape of the metrics endpoint (HTTP/1.0, bounded in time).
fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text)
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Scrapes until `ok` holds or the client ends; the last scrape it held on.
fn watch(client: &mut Proc, mport: u16, ok: impl Fn(&str) -> bool) -> Option<String> {
    let mut ended = false;
    let seen = common::wait::within(Duration::from_secs(30), || {
        if let Some(t) = scrape(mport)
            && ok(&t)
        {
            return Some(Some(t));
        }
        ended = !client.running();
        ended.then_some(None)
    });
    seen.flatten()
}

#[test]
fn a_mode_client_serves_its_gauges_while_it_runs() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let mport = free_port();
    let m = format!("127.0.0.1:{mport}");
    let mut c = Proc::spawn(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "--rpm", "-t", "4", "--metrics", &m],
    );
    let t = watch(&mut c, mport, |t| sample(t, "wirespeed_rpm").is_some_and(|v| v > 0.0))
        .unwrap_or_else(|| panic!("no wirespeed_rpm while --rpm ran: {}", c.err()));
    assert!(
        sample(&t, "wirespeed_rpm_goodput_bits_per_second").is_some_and(|v| v > 0.0),
        "{t}"
    );
    assert!(sample(&t, "wirespeed_rpm_load_flows").is_some_and(|v| v >= 1.0), "{t}");
    assert_eq!(c.wait(T).and_then(|s| s.code()), Some(0), "{}", c.err());

    let mport = free_port();
    let m = format!("127.0.0.1:{mport}");
    let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-u"];
    a.extend_from_slice(&SEARCH);
    a.extend_from_slice(&["--metrics", &m]);
    let mut c = Proc::spawn(&wirespeed(), &a);
    let t = watch(&mut c, mport, |t| {
        sample(t, "wirespeed_udp_search_probes").is_some_and(|v| v >= 1.0)
    })
    .unwrap_or_else(|| panic!("no search gauges while --udp-search ran: {}", c.err()));
    assert_eq!(
        sample(&t, "wirespeed_udp_search_probe_bits_per_second{rate=\"asked\"}").map(|v| v > 0.0),
        Some(true),
        "{t}"
    );
    assert!(sample(&t, "wirespeed_udp_search_probe_lost_percent").is_some(), "{t}");
    assert_eq!(c.wait(T).and_then(|s| s.code()), Some(0), "{}", c.err());
    // A plain client has no metrics of its own.
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "--metrics", &m], T);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
}
