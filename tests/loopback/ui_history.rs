//! The UI's history (`--db`) and schedules, over its HTTP API: runs
//! survive a restart; a UI killed mid-run leaves its run whole and marked
//! interrupted when the next UI opens the file; a server's `--ui` records
//! its tests too; schedules run on time, record a target that is down as
//! a failure with its reason, and expose their newest results on
//! `/metrics`.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::webdriver::http;
use common::{Proc, free_port, run, wait_listening, wirespeed, wirespeed_server};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

/// A fresh directory for one test's database.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-history-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `wirespeed ui --db db` on a free port.
fn ui(db: &str) -> (Proc, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let p = Proc::spawn(&wirespeed(), &["ui", "--listen", &listen, "--db", db]);
    assert!(p.wait_for_line(&format!("History in {db}"), T), "{}", p.err());
    wait_listening(port);
    (p, port)
}

fn token(port: u16) -> String {
    let (_, page) = http(port, "GET", "/", &[], "");
    let at = page.find("\"token\":\"").expect("token in page") + 9;
    page[at..at + 32].to_string()
}

fn get(port: u16, path: &str) -> (u16, Value) {
    let t = token(port);
    let sep = if path.contains('?') { '&' } else { '?' };
    let (s, body) = http(port, "GET", &format!("{path}{sep}token={t}"), &[], "");
    (s, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

fn post(port: u16, path: &str, body: &Value) -> (u16, Value) {
    let t = token(port);
    let (s, body) = http(
        port,
        "POST",
        path,
        &[("Content-Type", "application/json"), ("X-Wirespeed-Token", &t)],
        &body.to_string(),
    );
    (s, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

/// Waits until `f` holds of the run list (newest first); the list.
fn runs_until(port: u16, what: &str, f: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut last = Vec::new();
    common::wait::within(T, || {
        let (_, v) = get(port, "/api/runs");
        last = v.as_array().cloned().unwrap_or_default();
        f(&last).then(|| last.clone())
    })
    .unwrap_or_else(|| panic!("timed out waiting for {what}: {last:?}"))
}

fn state(r: &Value) -> &str {
    r["state"].as_str().unwrap_or("")
}

#[test]
fn the_history_outlives_the_ui_and_a_killed_ui_leaves_its_run_interrupted() {
    let dir = scratch("restart");
    let db = dir.join("h.db").to_string_lossy().into_owned();
    let sport = free_port();
    let _server = wirespeed_server(sport, &[]);
    let (mut first, port) = ui(&db);
    let form = |t: &str| json!({"host": "127.0.0.1", "port": sport.to_string(), "time": t});
    let (s, v) = post(port, "/api/runs", &form("1"));
    assert_eq!(s, 201, "{v}");
    runs_until(port, "the short run ends", |r| r.len() == 1 && state(&r[0]) == "done");
    // A long run, killed with the UI once it has two intervals.
    let (s, v) = post(port, "/api/runs", &form("30"));
    assert_eq!(s, 201, "{v}");
    let long = v["id"].as_u64().unwrap();
    runs_until(port, "the long run reports", |r| {
        r.iter().any(|x| x["id"] == long && x["intervals"].as_u64() >= Some(2))
    });
    first.signal(9);
    first.wait(T).expect("the UI ends on SIGKILL");
    let (_second, port) = ui(&db);
    let runs = runs_until(port, "both runs are back", |r| r.len() == 2);
    let (done, cut) = (&runs[1], &runs[0]);
    assert_eq!((state(done), state(cut)), ("done", "interrupted"), "{runs:?}");
    assert!(done["headline"]["received_bps"].as_f64().unwrap() > 0.0, "{done}");
    assert!(
        cut["error"].as_str().unwrap().contains("ended before the run did"),
        "{cut}"
    );
    // The interrupted run keeps the intervals it reported, whole.
    let (s, doc) = get(port, &format!("/api/runs/{long}/result.json"));
    assert_eq!(s, 200, "{doc}");
    let stored = doc["intervals"].as_array().unwrap().len();
    assert!(stored >= 2, "{doc}");
    // The list says as many (it said 0 for an interrupted run once).
    assert_eq!(cut["intervals"].as_u64(), Some(stored as u64), "{cut}");
    let (s, doc) = get(port, &format!("/api/runs/{}/result.json", done["id"]));
    assert_eq!(s, 200);
    assert!(doc["end"]["sum_received"]["bits_per_second"].as_f64().unwrap() > 0.0);
    // Time ranges: nothing started in the future; the export has both.
    let later = crate::common::now_secs() + 3600;
    let (s, v) = get(port, &format!("/api/runs?from={later}"));
    assert_eq!((s, v.as_array().map(Vec::len)), (200, Some(0)), "{v}");
    let (s, v) = get(port, "/api/runs?from=yesterday");
    assert_eq!(s, 400, "{v}");
    let t = token(port);
    let (s, csv) = http(port, "GET", &format!("/api/history.csv?token={t}"), &[], "");
    assert_eq!(s, 200);
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.lines().nth(1).unwrap().contains(",interrupted,"), "{csv}");
    let (s, v) = get(port, "/api/history.json");
    assert_eq!((s, v["runs"].as_array().map(Vec::len)), (200, Some(2)), "{v}");
    let (s, html) = http(port, "GET", &format!("/api/chart?target=127.0.0.1&token={t}"), &[], "");
    assert_eq!(s, 200);
    assert!(html.contains("chart-history-throughput"), "{html}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_ui_records_its_tests_and_db_needs_ui() {
    let dir = scratch("server");
    let db = dir.join("server.db").to_string_lossy().into_owned();
    let (sport, uport) = (free_port(), free_port());
    let listen = format!("127.0.0.1:{uport}");
    let server = Proc::spawn(
        &wirespeed(),
        &["-s", "-p", &sport.to_string(), "--ui", &listen, "--db", &db],
    );
    wait_listening(sport);
    wait_listening(uport);
    // It says where, on standard error beside the page's address.
    common::wait::stderr_has(&server, &format!("History in {db}\n"), T);
    let c = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &sport.to_string(), "-t", "1"],
        T,
    );
    assert_eq!(c.code, Some(0), "{}", c.stderr);
    let runs = runs_until(uport, "the server's test is recorded", |r| {
        r.len() == 1 && state(&r[0]) == "done"
    });
    assert_eq!(runs[0]["kind"], "server");
    assert_eq!(runs[0]["target"], "127.0.0.1");
    drop(server);
    // The file holds it for the next server.
    let server = Proc::spawn(
        &wirespeed(),
        &["-s", "-p", &sport.to_string(), "--ui", &listen, "--db", &db],
    );
    wait_listening(uport);
    runs_until(uport, "the test is still there", |r| r.len() == 1);
    drop(server);
    // --db without --ui, and a --db that cannot be made: one line each.
    let r = run(&wirespeed(), &["-s", "--db", &db], T);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("--db keeps the history of a server's --ui"),
        "{}",
        r.stderr
    );
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let bad = file.join("h.db").to_string_lossy().into_owned();
    let r = run(
        &wirespeed(),
        &["ui", "--listen", &format!("127.0.0.1:{}", free_port()), "--db", &bad],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("cannot make") && r.stderr.lines().count() == 1,
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn schedules_run_record_failures_and_feed_metrics() {
    let dir = scratch("schedule");
    let db = dir.join("h.db").to_string_lossy().into_owned();
    let sport = free_port();
    let _server = wirespeed_server(sport, &[]);
    let closed = free_port();
    let (_ui, port) = ui(&db);
    // Refused: a period out of range, a test longer than its period, a
    // form the parser refuses.
    for (form, why) in [
        (json!({"host": "127.0.0.1", "every": "0"}), "outside"),
        (
            json!({"host": "127.0.0.1", "time": "120", "every": "1"}),
            "does not fit",
        ),
        (json!({"host": "127.0.0.1", "time": "-3", "every": "5"}), ""),
    ] {
        let (s, v) = post(port, "/api/schedules", &form);
        assert_eq!(s, 400, "{form}: {v}");
        assert!(v["error"].as_str().unwrap().contains(why), "{v}");
    }
    let up = json!({"host": "127.0.0.1", "port": sport.to_string(), "time": "1", "every": "60"});
    let down = json!({"host": "127.0.0.1", "port": closed.to_string(), "time": "1", "every": "60"});
    let (s, a) = post(port, "/api/schedules", &up);
    assert_eq!(s, 201, "{a}");
    // The first turn is now; the second schedule waits for the first's
    // run (one test at a time) and then fails to connect.
    let (s, b) = post(port, "/api/schedules", &down);
    assert_eq!(s, 201, "{b}");
    let runs = runs_until(port, "both schedules ran", |r| {
        r.len() == 2 && r.iter().all(|x| !matches!(state(x), "running"))
    });
    let of = |id: &Value| runs.iter().find(|r| r["schedule"] == *id).unwrap().clone();
    let (good, bad) = (of(&a["id"]), of(&b["id"]));
    assert_eq!(
        (state(&good), good["kind"].as_str()),
        ("done", Some("scheduled")),
        "{good}"
    );
    assert_eq!(state(&bad), "failed", "{bad}");
    assert!(!bad["error"].as_str().unwrap_or("").is_empty(), "{bad}");
    let (s, list) = get(port, "/api/schedules");
    assert_eq!(s, 200);
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    let (s, metrics) = http(port, "GET", "/metrics", &[], "");
    assert_eq!(s, 200);
    let label = |id: &Value| format!("schedule=\"{id}\",target=\"127.0.0.1\",dialect=\"iperf3\"");
    assert!(
        metrics.contains(&format!("wirespeed_schedule_up{{{}}} 1\n", label(&a["id"]))),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!("wirespeed_schedule_up{{{}}} 0\n", label(&b["id"]))),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "wirespeed_schedule_runs_total{{{},outcome=\"failed\"}} 1",
            label(&b["id"])
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains("wirespeed_schedule_received_bits_per_second{"),
        "{metrics}"
    );
    // Removing one stops it.
    let (s, _) = post(port, &format!("/api/schedules/{}/delete", a["id"]), &json!({}));
    assert_eq!(s, 200);
    let (_, list) = get(port, "/api/schedules");
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_ui_runs_the_standard_rpm_and_reports_both_directions() {
    let srv_port = free_port();
    let rpm = free_port();
    let listen = format!("127.0.0.1:{rpm}");
    let _srv = wirespeed_server(srv_port, &["--rpm-listen", &listen]);
    wait_listening(rpm);
    let (_ui, port) = ui(":memory:");
    let url = format!("https://127.0.0.1:{rpm}/.well-known/nq");
    let form = json!({"host": url, "mode": "rpm", "time": "2", "interval": "1", "insecure": true});
    let (s, v) = post(port, "/api/runs", &form);
    assert_eq!(s, 201, "{v}");
    let id = v["id"].clone();
    let runs = runs_until(port, "the RPM run ends", |r| {
        r.iter().any(|r| r["id"] == id && state(r) != "running")
    });
    let run = runs.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!(state(run), "done", "{run}");
    let t = token(port);
    let (s, page) = http(port, "GET", &format!("/api/runs/{id}/report.html?token={t}"), &[], "");
    assert_eq!(s, 200);
    let sections = page.matches("<h2>Responsiveness (RPM) with").count();
    assert_eq!(sections, 2, "one section a direction");
    for way in ["download", "upload"] {
        assert!(
            page.contains(&format!("draft-ietf-ippm-responsiveness-09), {way}")),
            "{way}"
        );
    }
}

/// The form's QUIC protocol runs `-q` against our server; the stored
/// result says QUIC and its totals are exact.
#[test]
fn a_quic_run_from_the_form_is_recorded_as_quic() {
    let dir = scratch("quic");
    let db = dir.join("h.db").to_string_lossy().into_owned();
    let sport = free_port();
    let _server = wirespeed_server(sport, &[]);
    let (_ui, port) = ui(&db);
    let form = json!({"host": "127.0.0.1", "port": sport.to_string(), "time": "1", "protocol": "quic"});
    let (s, v) = post(port, "/api/runs", &form);
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_u64().unwrap();
    let runs = runs_until(port, "the QUIC run ends", |r| r.len() == 1 && state(&r[0]) != "running");
    assert_eq!(state(&runs[0]), "done", "{runs:?}");
    assert!(runs[0]["title"].as_str().unwrap().contains(" -q"), "{runs:?}");
    let (s, doc) = get(port, &format!("/api/runs/{id}/result.json"));
    assert_eq!(s, 200, "{doc}");
    assert_eq!(doc["start"]["test_start"]["protocol"], "QUIC", "{doc}");
    let end = &doc["end"];
    assert!(end["sum_sent"]["bytes"].as_u64().unwrap() > 0, "{end}");
    assert_eq!(end["sum_sent"]["bytes"], end["sum_received"]["bytes"], "{end}");
    let _ = std::fs::remove_dir_all(&dir);
}
