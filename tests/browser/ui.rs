//! `wirespeed ui` and `wirespeed -s --ui`: a real browser (headless
//! chromium through chromedriver) fills the form, runs tests against our
//! server and the real iperf3 and iperf 2 servers, watches them draw
//! live, downloads, compares and stops; the same page watches a server.
//! Screenshots are kept in `target/tmp/ui-artifacts/`.
//!
//! Browser tests are skipped with a notice when chromium or chromedriver
//! is missing, unless WIRESPEED_REQUIRE_BROWSER=1 (CI). The HTTP refusals
//! need no browser; the non-loopback one needs root (a namespace).

use crate::common;
use crate::common::netns;
use crate::common::webdriver;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use serde_json::Value;
use webdriver::{Browser, http};

const T: Duration = Duration::from_secs(30);

fn artifacts() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-artifacts")
}

/// `wirespeed ui` (or a server with `--ui`) on a free port: the process
/// and its port.
fn start_ui(args: &[&str]) -> (Proc, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut all: Vec<&str> = args.to_vec();
    if args.first() == Some(&"ui") {
        all.extend(["--listen", &listen]);
    } else {
        all.extend(["--ui", &listen]);
    }
    // Each UI its own history, gone when it ends, unless given one.
    if !args.contains(&"--db") {
        all.extend(["--db", ":memory:"]);
    }
    let p = Proc::spawn(&wirespeed(), &all);
    wait_listening(port);
    (p, port)
}

/// The token the page of a loopback UI carries.
fn token(port: u16) -> String {
    let (status, page) = http(port, "GET", "/", &[], "");
    assert_eq!(status, 200, "{page}");
    let at = page.find("\"token\":\"").expect("token in page") + 9;
    page[at..at + 32].to_string()
}

/// Sets the form for a test of `secs` seconds against `port` and runs it;
/// returns the run's number.
fn run_from_form(b: &Browser, dialect: &str, port: u16, secs: &str, interval: &str) -> u64 {
    b.click(&format!("#dialect option[value={dialect}]"));
    b.fill("#host", "127.0.0.1");
    b.fill("#port", &port.to_string());
    b.fill("#time", secs);
    b.fill("#interval", interval);
    b.fill("#parallel", "2");
    let expect = if dialect == "iperf2" {
        "wirespeed --iperf2 -c 127.0.0.1"
    } else {
        "wirespeed -c 127.0.0.1"
    };
    b.wait_for(
        &format!("return document.getElementById('command').textContent.startsWith('{expect}')"),
        Duration::from_secs(5),
    );
    let before = b
        .eval("return document.querySelectorAll('#runs tr').length")
        .as_u64()
        .unwrap();
    b.eval("window.wsTrace = []");
    b.click("#run");
    b.wait_for(
        &format!("return document.querySelectorAll('#runs tr').length > {before}"),
        Duration::from_secs(10),
    );
    b.eval("return Number(document.querySelector('#runs tr').dataset.run)")
        .as_u64()
        .unwrap()
}

/// Waits for the watched run to end; the page's trace of live updates.
fn trace_until_done(b: &Browser, timeout: Duration) -> Vec<Value> {
    b.wait_for(
        "const t = window.wsTrace; return t.length > 0 && t[t.length - 1].state !== 'running'",
        timeout,
    );
    b.eval("return window.wsTrace").as_array().unwrap().clone()
}

/// At least three updates drew the chart while the test was running, each
/// with more intervals than the one before.
fn assert_live(trace: &[Value], what: &str) {
    let running: Vec<u64> = trace
        .iter()
        .filter(|t| t["state"] == "running" && t["charts"].as_u64().unwrap_or(0) > 0)
        .map(|t| t["intervals"].as_u64().unwrap())
        .collect();
    let mut distinct = running.clone();
    distinct.dedup();
    assert!(distinct.len() >= 3, "{what}: live updates {trace:?}");
    assert!(distinct.windows(2).all(|w| w[0] < w[1]), "{what}: {trace:?}");
    assert_eq!(trace.last().unwrap()["state"], "done", "{what}: {trace:?}");
}

/// The run's JSON, fetched through its download link in the page.
fn download_json(b: &Browser, run: u64) -> Value {
    let text = b.eval_async(&format!(
        "fetch(document.querySelector('#runs tr[data-run=\"{run}\"] a.get-result-json').href).then(r => r.text()).then(done)"
    ));
    serde_json::from_str(text.as_str().unwrap()).unwrap()
}

/// A 3 s test from the form against `port`, drawn live; its JSON (through
/// the page's link) moved bytes (`end[sum]`); a screenshot named `what`.
fn live_run(b: &Browser, dialect: &str, port: u16, what: &str, sum: &str) -> (u64, Value) {
    let run = run_from_form(b, dialect, port, "3", "0.5");
    assert_live(&trace_until_done(b, Duration::from_secs(30)), what);
    let doc = download_json(b, run);
    assert!(doc["end"][sum]["bytes"].as_u64().unwrap() > 0, "{doc}");
    b.screenshot(&artifacts().join(format!("ui-{what}.png")));
    (run, doc)
}

#[test]
fn the_page_runs_tests_against_three_servers_and_shows_them_live() {
    let Some((driver, chromium)) = webdriver::tools() else {
        return;
    };
    let (_ui, ui_port) = start_ui(&["ui"]);
    let b = Browser::start(&driver, &chromium);
    b.go(&format!("http://127.0.0.1:{ui_port}/"));
    b.wait_for(
        "return document.getElementById('command').textContent",
        Duration::from_secs(10),
    );

    // A bad option: the page shows the command line's own refusal.
    b.fill("#parallel", "0");
    let cli = run(&wirespeed(), &["-c", "127.0.0.1", "-P", "0"], Duration::from_secs(10));
    let refusal = cli.stderr.trim().to_string();
    assert!(refusal.starts_with("wirespeed: parameter error"), "{refusal}");
    let shown = b.wait_for(
        "return document.getElementById('form-error').textContent",
        Duration::from_secs(5),
    );
    assert_eq!(shown.as_str().unwrap(), refusal);

    // Our server.
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let (run1, doc) = live_run(&b, "iperf3", port, "wirespeed-server", "sum_received");
    assert_eq!(doc["intervals"].as_array().unwrap().len(), 6, "{doc}");

    // The real iperf3 and iperf 2 servers.
    let mut runs = vec![run1];
    if let Some(iperf3) = peer("iperf3") {
        let port = free_port();
        let _srv = iperf3_server(&iperf3, port, &[]);
        runs.push(live_run(&b, "iperf3", port, "iperf3-server", "sum_received").0);
    }
    let port2 = free_port();
    if let Some(_srv) = iperf2_server(Iperf2::Real, port2, &[]) {
        runs.push(live_run(&b, "iperf2", port2, "iperf2-server", "sum_sent").0);
    }

    // Two runs on one chart.
    for r in &runs[..2.min(runs.len())] {
        b.click(&format!("#runs tr[data-run=\"{r}\"] input"));
    }
    if runs.len() >= 2 {
        b.click("#compare-btn");
        b.wait_for(
            "return document.querySelector('#compare svg[data-chart=compare]') !== null",
            Duration::from_secs(5),
        );
        let legend = b.eval("return document.getElementById('compare').textContent");
        assert!(
            legend.as_str().unwrap().contains(&format!("run {}", runs[1])),
            "{legend}"
        );
        b.eval("document.getElementById('compare-panel').scrollIntoView()");
        b.screenshot(&artifacts().join("ui-compare.png"));
    }

    // Stop: a long test ends within seconds, with what it measured.
    let run = run_from_form(&b, "iperf3", port, "60", "0.5");
    b.wait_for(
        "return window.wsTrace.filter(t => t.intervals > 0).length > 0",
        Duration::from_secs(10),
    );
    b.click("#stop");
    b.wait_for(
        "const t = window.wsTrace; return t.length > 0 && t[t.length - 1].state === 'stopped'",
        Duration::from_secs(10),
    );
    let doc = download_json(&b, run);
    assert!(!doc["intervals"].as_array().unwrap().is_empty(), "{doc}");
    b.screenshot(&artifacts().join("ui-compare-and-stop.png"));

    // Opened again, the page shows its newest run, not "No test yet."
    b.go(&format!("http://127.0.0.1:{ui_port}/"));
    let status = b.wait_for(
        &format!(
            "const s = document.getElementById('status').textContent; return s.startsWith('Run {run}: stopped') && s"
        ),
        Duration::from_secs(10),
    );
    assert!(status.as_str().is_some(), "{status}");
    b.wait_for(
        "return document.querySelectorAll('#live svg.chart').length > 0",
        Duration::from_secs(10),
    );
}

#[test]
fn the_history_and_the_schedules_outlive_the_ui() {
    let Some((driver, chromium)) = webdriver::tools() else {
        return;
    };
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-history-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("history.db").to_string_lossy().into_owned();
    let sport = free_port();
    let _server = wirespeed_server(sport, &[]);
    let (ui, port) = start_ui(&["ui", "--db", &db]);
    let b = Browser::start(&driver, &chromium);
    b.go(&format!("http://127.0.0.1:{port}/"));
    run_from_form(&b, "iperf3", sport, "2", "0.5");
    trace_until_done(&b, Duration::from_secs(30));
    // The same test every 60 minutes: its first turn is now.
    b.fill("#every", "60");
    b.click("#schedule");
    b.wait_for(
        "const c = document.querySelector('#schedules tr td:nth-child(5)'); return c !== null && c.textContent.startsWith('done')",
        Duration::from_secs(30),
    );
    assert!(
        b.eval("return document.getElementById('schedule-error').textContent")
            .as_str()
            == Some("")
    );
    b.eval("document.getElementById('runs-title').scrollIntoView()");
    b.screenshot(&artifacts().join("ui-schedules.png"));
    // A new UI on the same file: both runs and the schedule are there.
    drop(ui);
    let (_ui, port) = start_ui(&["ui", "--db", &db]);
    b.go(&format!("http://127.0.0.1:{port}/"));
    b.wait_for(
        "return document.querySelectorAll('#runs tr').length === 2 && document.querySelectorAll('#schedules tr').length === 1",
        Duration::from_secs(10),
    );
    let kinds = b.eval("return [...document.querySelectorAll('#runs tr td:nth-child(4)')].map(td => td.textContent)");
    assert!(kinds.to_string().contains("wirespeed -c 127.0.0.1"), "{kinds}");
    // One target over time: the charts of its runs.
    b.wait_for(
        "return document.getElementById('target').options.length === 2",
        Duration::from_secs(10),
    );
    b.eval("const s = document.getElementById('target'); s.value = '127.0.0.1'; s.dispatchEvent(new Event('change'))");
    b.wait_for(
        "return !document.getElementById('chart-panel').hidden && document.querySelector('#history-charts svg#chart-history-throughput') !== null",
        Duration::from_secs(10),
    );
    let points = b.eval("return document.querySelectorAll('#chart-history-throughput circle').length");
    assert!(points.as_u64().unwrap() >= 2, "{points}");
    b.eval("const s = document.getElementById('range'); s.value = '3600'; s.dispatchEvent(new Event('change'))");
    b.wait_for(
        "return document.querySelectorAll('#runs tr').length === 2",
        Duration::from_secs(10),
    );
    let csv = b.eval_async("fetch(document.getElementById('export-csv').href).then(r => r.text()).then(done)");
    let csv = csv.as_str().unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.contains(",scheduled,"), "{csv}");
    b.eval("document.getElementById('runs-title').scrollIntoView()");
    b.screenshot(&artifacts().join("ui-history.png"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_page_watches_a_server_live() {
    let Some((driver, chromium)) = webdriver::tools() else {
        return;
    };
    let port = free_port();
    let p = port.to_string();
    // The server reports every 0.5 s too (its own -i): a 3 s test gives
    // the page six intervals to draw, not three that a loaded host may
    // deliver together with the end.
    let (_srv, ui_port) = start_ui(&["-s", "-p", &p, "-i", "0.5"]);
    let b = Browser::start(&driver, &chromium);
    b.go(&format!("http://127.0.0.1:{ui_port}/"));
    b.wait_for(
        "return document.getElementById('setup').hidden",
        Duration::from_secs(10),
    );
    let client = Proc::spawn(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "3", "-i", "0.5", "-P", "2"],
    );
    let trace = trace_until_done(&b, Duration::from_secs(30));
    assert_live(&trace, "server watch");
    let title = b.eval("return document.querySelector('#runs tr td:nth-child(4)').textContent");
    assert_eq!(title.as_str().unwrap(), "TCP iperf3 test from 127.0.0.1");
    b.screenshot(&artifacts().join("ui-server-watch.png"));
    drop(client);
}

#[test]
fn an_iperf2_server_is_watched_too() {
    let port = free_port();
    let p = port.to_string();
    let (_srv, ui_port) = start_ui(&["--iperf2", "-s", "-p", &p]);
    let t = token(ui_port);
    let r = run(&wirespeed(), &["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "1"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let runs = || http(ui_port, "GET", &format!("/api/runs?token={t}"), &[], "").1;
    common::wait::text("a done run in the history", common::wait::LONG, runs, |t| {
        t.contains("\"done\"")
    });
    assert!(runs().contains("TCP iperf 2 test from 127.0.0.1"), "{}", runs());
    // On a client it is refused, as iperf 2's other server options are.
    let r = run(&wirespeed(), &["--iperf2", "-c", "127.0.0.1", "--ui", "127.0.0.1:1"], T);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("option --ui is only valid for a server"),
        "{}",
        r.stderr
    );
}

#[test]
fn requests_are_refused_without_the_token_or_from_other_sites() {
    let (_ui, port) = start_ui(&["ui"]);
    let t = token(port);
    let form = r#"{"host":"127.0.0.1","time":"1"}"#;
    let json = ("Content-Type", "application/json");
    let (s, _) = http(port, "POST", "/api/runs", &[json], form);
    assert_eq!(s, 401);
    let (s, _) = http(port, "GET", "/api/runs", &[], "");
    assert_eq!(s, 401);
    let (s, body) = http(
        port,
        "POST",
        "/api/runs",
        &[json, ("X-Wirespeed-Token", &t), ("Origin", "http://evil.example")],
        form,
    );
    assert_eq!(s, 403, "{body}");
    assert!(body.contains("another origin (http://evil.example)"), "{body}");
    let (s, body) = http(port, "POST", "/api/check", &[json, ("X-Wirespeed-Token", &t)], form);
    assert_eq!(s, 200, "{body}");
    assert!(body.contains("wirespeed -c 127.0.0.1 -t 1"), "{body}");
    let (s, body) = http(
        port,
        "POST",
        "/api/runs",
        &[json, ("X-Wirespeed-Token", &t)],
        r#"{"host":"127.0.0.1","args":"-s"}"#,
    );
    assert_eq!(s, 400, "{body}");
    assert!(body.contains("unknown field 'args'"), "{body}");
    let big = "x".repeat(20_000);
    let (s, _) = http(port, "POST", "/api/check", &[json, ("X-Wirespeed-Token", &t)], &big);
    assert_eq!(s, 413);
    // A name that is not loopback's (DNS rebinding) is refused.
    let (s, _) = http(port, "GET", "/", &[("Host", "rebind.example")], "");
    assert!(s == 403 || s == 400, "{s}");
    let (s, _) = http(port, "GET", &format!("/api/runs?token={t}"), &[], "");
    assert_eq!(s, 200);
    // A busy address and a bad option are one line and exit 1.
    let r = run(
        &wirespeed(),
        &["ui", "--listen", &format!("127.0.0.1:{port}")],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .starts_with("wirespeed: error - unable to start the web UI on 127.0.0.1:"),
        "{}",
        r.stderr
    );
    let r = run(&wirespeed(), &["ui", "--bogus"], Duration::from_secs(10));
    assert_eq!((r.code, r.stderr.lines().count()), (Some(1), 1), "{}", r.stderr);
}

#[test]
fn a_listener_off_loopback_wants_the_token() {
    let Some(ns) = netns::NetnsPair::new() else {
        return;
    };
    let listen = format!("{}:5280", ns.addr_b);
    let ui = netns::NetnsPair::spawn(&ns.b, &wirespeed(), &["ui", "--listen", &listen]);
    assert!(
        ui.wait_for_line("wirespeed UI at http://", Duration::from_secs(10)),
        "{}",
        ui.err()
    );
    let url = ui
        .out()
        .lines()
        .find_map(|l| l.strip_prefix("wirespeed UI at "))
        .unwrap()
        .to_string();
    let t = url
        .split("?token=")
        .nth(1)
        .expect("the address carries the token")
        .trim()
        .to_string();
    assert_eq!(t.len(), 32, "{url}");
    // From the other namespace, over the veth pair.
    let get = |path: &str| {
        let script = format!(
            "exec 3<>/dev/tcp/{}/5280; printf 'GET {path} HTTP/1.1\\r\\nHost: {}:5280\\r\\n\\r\\n' >&3; timeout 5 cat <&3",
            ns.addr_b, ns.addr_b
        );
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &ns.a, "bash", "-c", &script])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(get("/").starts_with("HTTP/1.1 401"), "{}", get("/"));
    assert!(get("/api/runs").starts_with("HTTP/1.1 401"));
    assert!(get(&format!("/api/runs?token={t}")).starts_with("HTTP/1.1 200"));
    let page = get(&format!("/?token={t}"));
    assert!(page.starts_with("HTTP/1.1 200") && page.contains(&t));
    drop(ui);
}
