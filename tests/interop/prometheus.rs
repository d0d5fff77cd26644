//! The real Prometheus (Debian's 2.42) scraping `wirespeed exporter` the way
//! a blackbox-style probe is scraped: relabelling turns each job's targets
//! into `/probe?target=…`, and the results are read back through
//! Prometheus's HTTP API. Probed: a wirespeed server (TCP by two jobs at
//! once, and UDP reversed), the real iperf3 and iperf 2 servers, and a
//! closed port. Scraped too: a `wirespeed ui`'s `/metrics`, with the
//! newest result of a test it runs on a schedule.
//!
//! And the rules shipped in `contrib/prometheus/`: `promtool` checks them
//! and runs their unit tests, and a real Prometheus loads them, scrapes an
//! exporter, a server's `--metrics` and the exporter's own `/metrics`,
//! records every series they use, and fires `WirespeedTargetDown` for a
//! closed port.

use crate::common;

use std::time::Duration;

use common::{Iperf2, Proc, free_port, iperf2_server, iperf3_server, peer, wirespeed, wirespeed_server};
use serde_json::Value;

/// One scrape job: its name, the probe's target port and its parameters.
struct Job {
    name: &'static str,
    port: u16,
    params: &'static [(&'static str, &'static str)],
}

fn config(jobs: &[Job], exporter: u16, ui: u16) -> String {
    let mut c = String::from("global:\n  scrape_interval: 4s\n  scrape_timeout: 3500ms\nscrape_configs:\n");
    c.push_str(&format!(
        "  - job_name: ui\n    static_configs:\n      - targets: ['127.0.0.1:{ui}']\n"
    ));
    for j in jobs {
        c.push_str(&format!(
            "  - job_name: {}\n    metrics_path: /probe\n    params:\n      port: ['{}']\n      period: ['1s']\n",
            j.name, j.port
        ));
        for (k, v) in j.params {
            c.push_str(&format!("      {k}: ['{v}']\n"));
        }
        c.push_str(&format!(
            "    static_configs:\n      - targets: ['127.0.0.1']\n    relabel_configs:\n\
             \x20     - source_labels: [__address__]\n        target_label: __param_target\n\
             \x20     - source_labels: [__param_target]\n        target_label: instance\n\
             \x20     - target_label: __address__\n        replacement: 127.0.0.1:{exporter}\n"
        ));
    }
    c
}

/// `query`'s value for each job, from Prometheus's API.
fn values(prom: u16, query: &str) -> Vec<(String, f64)> {
    let (status, body) = common::http_get(prom, &format!("/api/v1/query?query={query}"), &[]);
    if !status.contains(" 200 ") {
        return Vec::new();
    }
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let job = r["metric"]["job"].as_str()?.to_string();
            let val = r["value"][1].as_str()?.parse().ok()?;
            Some((job, val))
        })
        .collect()
}

#[test]
fn prometheus_scrapes_the_exporter_across_servers_of_both_dialects() {
    let Some(prometheus) = peer("prometheus") else { return };
    let Some(iperf3) = peer("iperf3") else { return };
    let ws_port = free_port();
    let _ws = wirespeed_server(ws_port, &[]);
    let i3_port = free_port();
    let _i3 = iperf3_server(&iperf3, i3_port, &[]);
    let i2_port = free_port();
    let Some(_i2) = iperf2_server(Iperf2::Real, i2_port, &[]) else {
        return;
    };
    let closed = free_port();

    let ex_port = free_port();
    let listen = format!("127.0.0.1:{ex_port}");
    // Prometheus spreads the six jobs' scrapes over the interval by a hash
    // of each target and of the host's name, so on some hosts five probes
    // overlap, and the default --max-probes (4) answers one job 503 at every
    // scrape (seen on CI: one job never up).
    let ex = Proc::spawn(&wirespeed(), &["exporter", "--listen", &listen, "--max-probes", "8"]);
    assert!(
        ex.wait_for_line("Exporter at http://127.0.0.1:", Duration::from_secs(10)),
        "exporter did not start: {}",
        ex.err()
    );

    let jobs = [
        Job {
            name: "ws_tcp",
            port: ws_port,
            params: &[],
        },
        // A second job probing the same server at the same moments: a
        // wirespeed server runs both tests at once.
        Job {
            name: "ws_tcp_again",
            port: ws_port,
            params: &[],
        },
        Job {
            name: "ws_udp_reverse",
            port: ws_port,
            params: &[("udp_mode", "true"), ("reverse_mode", "true")],
        },
        Job {
            name: "iperf3",
            port: i3_port,
            params: &[],
        },
        Job {
            name: "iperf2",
            port: i2_port,
            params: &[("dialect", "iperf2")],
        },
        Job {
            name: "closed",
            port: closed,
            params: &[],
        },
    ];
    // A UI that tests the wirespeed server every minute (the first turn
    // at once); its /metrics has the newest result.
    let ui_port = free_port();
    let ui_listen = format!("127.0.0.1:{ui_port}");
    let ui = Proc::spawn(&wirespeed(), &["ui", "--listen", &ui_listen, "--db", ":memory:"]);
    assert!(
        ui.wait_for_line("History in :memory:", Duration::from_secs(10)),
        "{}",
        ui.err()
    );
    let (_, page) = common::http_get(ui_port, "/", &[]);
    let at = page.find("\"token\":\"").expect("the UI's token") + 9;
    let token = page[at..at + 32].to_string();
    let form = format!(r#"{{"host":"127.0.0.1","port":"{ws_port}","time":"1","every":"1"}}"#);
    let (status, body) = common::webdriver::http(
        ui_port,
        "POST",
        "/api/schedules",
        &[("Content-Type", "application/json"), ("X-Wirespeed-Token", &token)],
        &form,
    );
    assert_eq!(status, 201, "{body}");
    let dir = std::env::temp_dir().join(format!("ws-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, config(&jobs, ex_port, ui_port)).unwrap();
    let prom_port = free_port();
    let prom = Proc::spawn(
        &prometheus,
        &[
            &format!("--config.file={}", cfg.display()),
            &format!("--storage.tsdb.path={}", dir.join("data").display()),
            &format!("--web.listen-address=127.0.0.1:{prom_port}"),
        ],
    );

    // Prometheus answers queries once it is ready.
    common::wait::tcp_listening(prom_port, Duration::from_secs(30));
    common::wait::text(
        "Prometheus to be ready",
        Duration::from_secs(30),
        || common::http_get(prom_port, "/-/ready", &[]).0,
        |status| status.contains(" 200 "),
    );
    // Keep looking until every job has been up where it should be.
    let want_up = ["ws_tcp", "ws_tcp_again", "ws_udp_reverse", "iperf3", "iperf2"];
    let mut up = Vec::new();
    let mut scheduled = Vec::new();
    common::wait::within(Duration::from_secs(40), || {
        up = values(prom_port, "max_over_time(iperf3_up[1m])");
        scheduled = values(prom_port, "wirespeed_schedule_received_bits_per_second");
        let has = |j: &str| up.iter().any(|(n, v)| n == j && *v == 1.0);
        (want_up.iter().all(|j| has(j)) && up.iter().any(|(n, _)| n == "closed") && !scheduled.is_empty()).then_some(())
    });
    let schedule_up = values(prom_port, "wirespeed_schedule_up");
    let sent = values(prom_port, "iperf3_sent_bytes");
    let received = values(prom_port, "iperf3_received_bytes");
    let udp = values(prom_port, "iperf3_received_packets");
    drop(prom);
    drop(ex);
    drop(ui);
    let _ = std::fs::remove_dir_all(&dir);

    for j in want_up {
        assert!(up.iter().any(|(n, v)| n == j && *v == 1.0), "{j} never up: {up:?}");
    }
    assert!(
        up.iter().any(|(n, v)| n == "closed" && *v == 0.0),
        "the closed port is not iperf3_up 0: {up:?}"
    );
    for j in ["ws_tcp", "ws_tcp_again", "iperf3"] {
        assert!(
            received.iter().any(|(n, v)| n == j && *v > 0.0) && sent.iter().any(|(n, v)| n == j && *v > 0.0),
            "{j}: sent {sent:?} received {received:?}"
        );
    }
    assert!(udp.iter().any(|(n, v)| n == "ws_udp_reverse" && *v > 0.0), "{udp:?}");
    assert!(scheduled.iter().any(|(n, v)| n == "ui" && *v > 0.0), "{scheduled:?}");
    assert!(
        schedule_up.iter().any(|(n, v)| n == "ui" && *v == 1.0),
        "{schedule_up:?}"
    );
}

/// The shipped rules: `contrib/prometheus/` of this checkout.
fn rules_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/prometheus")
}

/// The rule files a Prometheus loads (tests.yml is promtool's).
const RULE_FILES: [&str; 2] = ["recording.yml", "alerts.yml"];

/// The `expr:` of every rule in `yaml`, a one-line one or a folded block
/// (`expr: >` and the lines indented below it).
fn exprs(yaml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        let Some(rest) = line.trim_start().strip_prefix("expr:") else {
            continue;
        };
        let mut e = rest.trim().trim_start_matches(['>', '|']).to_string();
        while let Some(next) = lines.peek() {
            let t = next.trim_start();
            if !t.is_empty() && next.len() - t.len() <= indent {
                break;
            }
            e.push(' ');
            e.push_str(t);
            lines.next();
        }
        out.push(e);
    }
    out
}

/// The series names `expr` reads: wirespeed's and iperf3_exporter's, and
/// the recorded ones (`target:...`, `instance:...`); not label names,
/// label values or functions.
fn series_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while !rest.is_empty() {
        // Skip a quoted label value whole.
        if let Some(r) = rest.strip_prefix('"') {
            rest = r.split_once('"').map_or("", |(_, after)| after);
            continue;
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        if len == 0 {
            rest = &rest[rest.chars().next().map_or(1, char::len_utf8)..];
            continue;
        }
        let word = &rest[..len];
        if ["iperf3_", "wirespeed_", "target:", "instance:"]
            .iter()
            .any(|p| word.starts_with(p))
        {
            names.push(word.to_string());
        }
        rest = &rest[len..];
    }
    names
}

#[test]
fn promtool_checks_and_unit_tests_the_shipped_rules() {
    let Some(promtool) = peer("promtool") else { return };
    let dir = rules_dir();
    let files: Vec<String> = RULE_FILES.iter().map(|f| dir.join(f).display().to_string()).collect();
    let mut args = vec!["check", "rules"];
    args.extend(files.iter().map(String::as_str));
    let check = common::run(&promtool, &args, Duration::from_secs(60));
    assert_eq!(
        check.code,
        Some(0),
        "promtool check rules: {}{}",
        check.stdout,
        check.stderr
    );
    assert_eq!(
        check.stdout.matches("SUCCESS").count(),
        RULE_FILES.len(),
        "{}",
        check.stdout
    );

    let tests = dir.join("tests.yml");
    let unit = common::run(
        &promtool,
        &["test", "rules", &tests.display().to_string()],
        Duration::from_secs(120),
    );
    assert_eq!(
        unit.code,
        Some(0),
        "promtool test rules: {}{}",
        unit.stdout,
        unit.stderr
    );
    assert!(unit.stdout.contains("SUCCESS"), "{}", unit.stdout);

    // Every shipped alert is in a unit test.
    let alerts = std::fs::read_to_string(dir.join("alerts.yml")).unwrap();
    let tested = std::fs::read_to_string(&tests).unwrap();
    let names: Vec<&str> = alerts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert:"))
        .map(str::trim)
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    for n in names {
        assert!(
            tested.contains(&format!("alertname: {n}\n")),
            "alerts.yml's {n} has no test in tests.yml"
        );
    }
}

/// Prometheus's active alerts (pending and firing).
fn active_alerts(prom: u16) -> Vec<Value> {
    let (status, body) = common::http_get(prom, "/api/v1/alerts", &[]);
    if !status.contains(" 200 ") {
        return Vec::new();
    }
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    v["data"]["alerts"].as_array().cloned().unwrap_or_default()
}

/// A body sent with `Transfer-Encoding: chunked`, joined.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Every series name Prometheus holds (scraped or recorded). The list is
/// long enough for Prometheus to send it in chunks.
fn stored_names(prom: u16) -> Vec<String> {
    let (head, body) = common::http_get_head(prom, "/api/v1/label/__name__/values", &[]);
    if !head.lines().next().is_some_and(|l| l.contains(" 200 ")) {
        return Vec::new();
    }
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(&body)
    } else {
        body
    };
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    v["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(String::from))
        .collect()
}

#[test]
fn prometheus_fires_the_shipped_target_down_alert() {
    let Some(prometheus) = peer("prometheus") else { return };
    // A server with --metrics, probed over TCP and UDP.
    let ws_port = free_port();
    let metrics_port = free_port();
    let metrics = format!("127.0.0.1:{metrics_port}");
    let _ws = wirespeed_server(ws_port, &["--metrics", &metrics]);
    common::wait::tcp_listening(metrics_port, Duration::from_secs(10));
    let closed = free_port();

    let ex_port = free_port();
    let listen = format!("127.0.0.1:{ex_port}");
    let ex = Proc::spawn(&wirespeed(), &["exporter", "--listen", &listen, "--max-probes", "8"]);
    assert!(
        ex.wait_for_line("Exporter at http://127.0.0.1:", Duration::from_secs(10)),
        "exporter did not start: {}",
        ex.err()
    );

    // The shipped rules, with one change: their `for:` durations (minutes)
    // shortened to 2 s, so that an alert fires within the test. Every
    // expression, label and annotation is loaded as shipped.
    let dir = std::env::temp_dir().join(format!("ws-prom-rules-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut shortened = 0;
    let mut rule_files = String::new();
    let mut used = Vec::new();
    for f in RULE_FILES {
        let shipped = std::fs::read_to_string(rules_dir().join(f)).unwrap();
        for e in exprs(&shipped) {
            used.extend(series_names(&e));
        }
        // And what each recording rule records, whether or not an alert
        // reads it.
        used.extend(
            shipped
                .lines()
                .filter_map(|l| l.trim().strip_prefix("- record:"))
                .map(|n| n.trim().to_string()),
        );
        let copy: String = shipped
            .lines()
            .map(|l| match l.trim_start().strip_prefix("for:") {
                Some(_) => {
                    shortened += 1;
                    format!("{}for: 2s\n", &l[..l.len() - l.trim_start().len()])
                }
                None => format!("{l}\n"),
            })
            .collect();
        let path = dir.join(f);
        std::fs::write(&path, copy).unwrap();
        rule_files.push_str(&format!("  - {}\n", path.display()));
    }
    assert!(shortened > 0, "no `for:` in the shipped alerts");
    used.sort();
    used.dedup();
    assert!(used.contains(&"iperf3_up".to_string()), "{used:?}");

    let jobs = [
        Job {
            name: "closed",
            port: closed,
            params: &[],
        },
        Job {
            name: "ws_tcp",
            port: ws_port,
            params: &[("bitrate", "20M")],
        },
        Job {
            name: "ws_udp",
            port: ws_port,
            params: &[("udp_mode", "true"), ("bitrate", "1M")],
        },
    ];
    let mut c =
        String::from("global:\n  scrape_interval: 3s\n  scrape_timeout: 3s\n  evaluation_interval: 1s\nrule_files:\n");
    c.push_str(&rule_files);
    c.push_str("scrape_configs:\n");
    for (name, port) in [("exporter", ex_port), ("server", metrics_port)] {
        c.push_str(&format!(
            "  - job_name: {name}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ));
    }
    for j in &jobs {
        c.push_str(&format!(
            "  - job_name: {}\n    metrics_path: /probe\n    params:\n      port: ['{}']\n      period: ['1s']\n",
            j.name, j.port
        ));
        for (k, v) in j.params {
            c.push_str(&format!("      {k}: ['{v}']\n"));
        }
        c.push_str(&format!(
            "    static_configs:\n      - targets: ['127.0.0.1']\n    relabel_configs:\n\
             \x20     - source_labels: [__address__]\n        target_label: __param_target\n\
             \x20     - source_labels: [__param_target]\n        target_label: instance\n\
             \x20     - target_label: __address__\n        replacement: 127.0.0.1:{ex_port}\n"
        ));
    }
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, c).unwrap();
    let prom_port = free_port();
    let prom = Proc::spawn(
        &prometheus,
        &[
            &format!("--config.file={}", cfg.display()),
            &format!("--storage.tsdb.path={}", dir.join("data").display()),
            &format!("--web.listen-address=127.0.0.1:{prom_port}"),
        ],
    );
    common::wait::tcp_listening(prom_port, Duration::from_secs(30));
    common::wait::text(
        "Prometheus to be ready",
        Duration::from_secs(30),
        || common::http_get(prom_port, "/-/ready", &[]).0,
        |status| status.contains(" 200 "),
    );
    // The rules loaded: Prometheus lists both files' groups.
    let (_, groups) = common::http_get(prom_port, "/api/v1/rules", &[]);
    for g in [
        "wirespeed-probes.recording",
        "wirespeed-probes.alerts",
        "wirespeed-server.alerts",
    ] {
        assert!(
            groups.contains(&format!("\"name\":\"{g}\"")),
            "{g} not loaded: {groups}\n{}",
            prom.err()
        );
    }

    // The closed port's WirespeedTargetDown fires (pending first, firing
    // 2 s on), and so does WirespeedThroughputLow for the TCP probe paced
    // at 20 Mbit/s, below the shipped 100 Mbit/s.
    let port = closed.to_string();
    let is_closed_down = |a: &Value| {
        a["labels"]["alertname"] == "WirespeedTargetDown"
            && a["labels"]["target"] == "127.0.0.1"
            && a["labels"]["port"] == port.as_str()
    };
    let is_tcp_slow =
        |a: &Value| a["labels"]["alertname"] == "WirespeedThroughputLow" && a["labels"]["job"] == "ws_tcp";
    let mut alerts = Vec::new();
    let fired = common::wait::within(Duration::from_secs(60), || {
        alerts = active_alerts(prom_port);
        let firing = |f: &dyn Fn(&Value) -> bool| alerts.iter().find(|a| f(a) && a["state"] == "firing").cloned();
        Some((firing(&is_closed_down)?, firing(&is_tcp_slow)?))
    });
    // Every series the rules read or record is one Prometheus holds: the
    // names are real (scraped from the exporter, its /metrics and the
    // server's), and each recording rule yields something.
    let mut missing = used.clone();
    common::wait::within(Duration::from_secs(60), || {
        let have = stored_names(prom_port);
        missing.retain(|n| !have.contains(n));
        missing.is_empty().then_some(())
    });
    let later = active_alerts(prom_port);
    drop(prom);
    drop(ex);
    let _ = std::fs::remove_dir_all(&dir);

    let (down, slow) = fired.unwrap_or_else(|| {
        panic!("WirespeedTargetDown (port {closed}) and WirespeedThroughputLow (ws_tcp) did not both fire: {alerts:#?}")
    });
    assert_eq!(down["labels"]["severity"], "critical", "{down:#}");
    assert_eq!(down["labels"]["job"], "closed", "{down:#}");
    assert!(
        down["annotations"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains(&format!("127.0.0.1:{closed}"))),
        "{down:#}"
    );
    let bps: f64 = slow["value"].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
    assert!(bps > 1e6 && bps < 100e6, "{slow:#}");
    assert!(
        missing.is_empty(),
        "series the rules use that Prometheus never had: {missing:?}"
    );
    // The UDP probe, at 1 Mbit/s, is left out of WirespeedThroughputLow
    // (its rate is the bitrate it asked for); a closed port is down, not
    // slow.
    for a in alerts.iter().chain(&later) {
        if a["labels"]["alertname"] == "WirespeedThroughputLow" {
            assert!(is_tcp_slow(a), "{a:#}");
        }
    }
}
