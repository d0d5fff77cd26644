//! The real Prometheus (Debian's 2.42) scraping `wirespeed exporter` the way
//! a blackbox-style probe is scraped: relabelling turns each job's targets
//! into `/probe?target=…`, and the results are read back through
//! Prometheus's HTTP API. Probed: a wirespeed server (TCP by two jobs at
//! once, and UDP reversed), the real iperf3 and iperf 2 servers, and a
//! closed port. Scraped too: a `wirespeed ui`'s `/metrics`, with the
//! newest result of a test it runs on a schedule.

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
