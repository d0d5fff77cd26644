//! `--metrics`: a real HTTP client (curl) reads the Prometheus endpoint
//! during and after tests; a busy address is one line and exit 1.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{Proc, free_port, peer, run, wirespeed, wirespeed_server};

const T: Duration = Duration::from_secs(60);

fn curl(curl: &PathBuf, port: u16) -> String {
    let url = format!("http://127.0.0.1:{port}/metrics");
    let r = run(curl, &["-sS", "--max-time", "5", "-D", "-", &url], T);
    assert_eq!(r.code, Some(0), "curl: {}", r.stderr);
    assert!(r.stdout.starts_with("HTTP/1.1 200 OK"), "{}", r.stdout);
    assert!(
        r.stdout.contains("Content-Type: text/plain; version=0.0.4"),
        "{}",
        r.stdout
    );
    r.stdout
}

/// The value of the sample line starting with `series` (name and labels).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn wait_for(curl_bin: &PathBuf, port: u16, what: &str, ok: impl Fn(&str) -> bool) -> String {
    common::wait::text(what, Duration::from_secs(10), || curl(curl_bin, port), ok)
}

fn client(port: u16, secs: &str) -> Proc {
    Proc::spawn(&wirespeed(), &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", secs])
}

#[test]
fn metrics_answer_during_and_after_a_test() {
    let Some(curl_bin) = peer("curl") else { return };
    let (port, mport) = (free_port(), free_port());
    let _srv = wirespeed_server(port, &["--metrics", &format!("127.0.0.1:{mport}")]);
    let mut c = client(port, "3");
    let during = wait_for(&curl_bin, mport, "an active test", |t| {
        sample(t, "wirespeed_active_tests") == Some(1.0) && sample(t, "wirespeed_active_streams") == Some(1.0)
    });
    assert_eq!(
        sample(
            &during,
            "wirespeed_tests_started_total{dialect=\"iperf3\",protocol=\"tcp\"}"
        ),
        Some(1.0)
    );
    // Bytes count up while the test runs (from its interval reports).
    wait_for(&curl_bin, mport, "bytes during the test", |t| {
        sample(
            t,
            "wirespeed_bytes_total{dialect=\"iperf3\",protocol=\"tcp\",direction=\"received\"}",
        )
        .is_some_and(|b| b > 0.0)
            && sample(t, "wirespeed_active_tests") == Some(1.0)
    });
    assert_eq!(c.wait(T).and_then(|s| s.code()), Some(0), "{}", c.err());
    let after = wait_for(&curl_bin, mport, "the test to end", |t| {
        sample(t, "wirespeed_active_tests") == Some(0.0)
    });
    assert_eq!(
        sample(
            &after,
            "wirespeed_tests_completed_total{dialect=\"iperf3\",protocol=\"tcp\"}"
        ),
        Some(1.0)
    );
    assert_eq!(sample(&after, "wirespeed_active_streams"), Some(0.0));
    let bps = sample(
        &after,
        "wirespeed_client_last_bits_per_second{client=\"127.0.0.1\",direction=\"received\"}",
    )
    .expect("last result of the client");
    assert!(bps > 0.0);
    assert_eq!(
        sample(&after, "wirespeed_client_last_success{client=\"127.0.0.1\"}"),
        Some(1.0)
    );
}

#[test]
fn refusals_are_counted_by_reason() {
    let Some(curl_bin) = peer("curl") else { return };
    let (port, mport) = (free_port(), free_port());
    let _srv = wirespeed_server(
        port,
        &[
            "--max-tests",
            "1",
            "--max-streams",
            "2",
            "--metrics",
            &format!(":{mport}"),
        ],
    );
    let mut long = client(port, "3");
    wait_for(&curl_bin, mport, "an active test", |t| {
        sample(t, "wirespeed_active_tests") == Some(1.0)
    });
    let busy = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
        T,
    );
    assert_eq!(busy.code, Some(1));
    assert_eq!(long.wait(T).and_then(|s| s.code()), Some(0));
    let limit = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-P", "3"],
        T,
    );
    assert_eq!(limit.code, Some(1));
    // Junk that is not iperf3 at all.
    let mut junk = TcpStream::connect(("127.0.0.1", port)).unwrap();
    junk.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let t = wait_for(&curl_bin, mport, "three refusals", |t| {
        sample(t, "wirespeed_refusals_total{reason=\"busy\"}") == Some(1.0)
            && sample(t, "wirespeed_refusals_total{reason=\"limit\"}") == Some(1.0)
            && sample(t, "wirespeed_refusals_total{reason=\"unrecognized\"}") == Some(1.0)
    });
    assert_eq!(
        sample(&t, "wirespeed_tests_started_total{dialect=\"iperf3\",protocol=\"tcp\"}"),
        Some(1.0)
    );
}

#[test]
fn the_endpoint_is_a_careful_http_server() {
    let (port, mport) = (free_port(), free_port());
    let _srv = wirespeed_server(port, &["--metrics", &format!("127.0.0.1:{mport}")]);
    let ask = |req: &str| {
        let mut s = TcpStream::connect(("127.0.0.1", mport)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    };
    let head = ask("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    assert!(ask("GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
    assert!(ask("DELETE /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    // A client that never finishes its request is dropped within seconds,
    // and others are served meanwhile after it.
    let _stalled = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    let t0 = Instant::now();
    assert!(ask("GET /metrics HTTP/1.0\r\n\r\n").contains("wirespeed_up 1"));
    assert!(t0.elapsed() < Duration::from_secs(4));
    // An oversized request is refused, not buffered.
    let big = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let mut s = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(big.as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.is_empty() || out.starts_with("HTTP/1.1 431"), "{out}");
}

#[test]
fn a_busy_metrics_address_is_one_line_and_exit_1() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let mport = taken.local_addr().unwrap().port();
    let port = free_port();
    let r = run(
        &wirespeed(),
        &[
            "-s",
            "-p",
            &port.to_string(),
            "--metrics",
            &format!("127.0.0.1:{mport}"),
        ],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        format!(
            "wirespeed: error - unable to start the metrics endpoint on 127.0.0.1:{mport}: Address already in use\n"
        )
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let r = run(
        &wirespeed(),
        &["-s", "-p", &port.to_string(), "--metrics", "nonsense"],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--metrics wants ADDR:PORT"), "{}", r.stderr);
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "--metrics", "127.0.0.1:1"], T);
    assert_eq!(r.code, Some(1), "--metrics is a server option");
}

#[test]
fn iperf2_tests_on_the_shared_port_are_counted_by_protocol() {
    let Some(curl_bin) = peer("curl") else { return };
    let Some(iperf) = peer("iperf") else { return };
    let (port, mport) = (free_port(), free_port());
    let _srv = wirespeed_server(port, &["--metrics", &format!("127.0.0.1:{mport}")]);
    let p = port.to_string();
    let tcp = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-t", "1"], T);
    assert_eq!(tcp.code, Some(0), "{}\n{}", tcp.stdout, tcp.stderr);
    let udp = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-u", "-t", "1", "-b", "10m"], T);
    assert_eq!(udp.code, Some(0), "{}\n{}", udp.stdout, udp.stderr);
    let t = wait_for(&curl_bin, mport, "two iperf 2 tests to end", |t| {
        sample(
            t,
            "wirespeed_tests_completed_total{dialect=\"iperf2\",protocol=\"tcp\"}",
        ) == Some(1.0)
            && sample(
                t,
                "wirespeed_tests_completed_total{dialect=\"iperf2\",protocol=\"udp\"}",
            ) == Some(1.0)
            && sample(t, "wirespeed_active_tests") == Some(0.0)
    });
    for proto in ["tcp", "udp"] {
        let started = format!("wirespeed_tests_started_total{{dialect=\"iperf2\",protocol=\"{proto}\"}}");
        assert_eq!(sample(&t, &started), Some(1.0), "{t}");
        let bytes = format!("wirespeed_bytes_total{{dialect=\"iperf2\",protocol=\"{proto}\",direction=\"received\"}}");
        assert!(sample(&t, &bytes).is_some_and(|b| b > 0.0), "{t}");
    }
    assert_eq!(sample(&t, "wirespeed_active_streams"), Some(0.0), "{t}");
    assert_eq!(
        sample(&t, "wirespeed_client_last_success{client=\"127.0.0.1\"}"),
        Some(1.0),
        "{t}"
    );
    // The iperf3 series are untouched.
    assert_eq!(
        sample(&t, "wirespeed_tests_started_total{dialect=\"iperf3\",protocol=\"tcp\"}"),
        Some(0.0)
    );
}

#[test]
fn bounceback_and_reverse_iperf2_tests_count_both_directions() {
    let Some(curl_bin) = peer("curl") else { return };
    let Some(iperf) = peer("iperf") else { return };
    let (port, mport) = (free_port(), free_port());
    let _srv = wirespeed_server(port, &["--metrics", &format!("127.0.0.1:{mport}")]);
    let p = port.to_string();
    let series =
        |dir: &str| format!("wirespeed_bytes_total{{dialect=\"iperf2\",protocol=\"tcp\",direction=\"{dir}\"}}");
    // Bounceback: every byte the client sends comes back.
    let bb = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "--bounceback", "-t", "1"], T);
    assert_eq!(bb.code, Some(0), "{}\n{}", bb.stdout, bb.stderr);
    let t = wait_for(&curl_bin, mport, "the bounceback test to end", |t| {
        sample(
            t,
            "wirespeed_tests_completed_total{dialect=\"iperf2\",protocol=\"tcp\"}",
        ) == Some(1.0)
    });
    let (rx, tx) = (sample(&t, &series("received")), sample(&t, &series("sent")));
    assert!(
        rx.is_some_and(|b| b > 0.0) && rx == tx,
        "echoed bytes count both ways: {t}"
    );
    // -R: the server sends.
    let r = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-R", "-t", "1"], T);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let t = wait_for(&curl_bin, mport, "the reverse test to end", |t| {
        sample(
            t,
            "wirespeed_tests_completed_total{dialect=\"iperf2\",protocol=\"tcp\"}",
        ) == Some(2.0)
    });
    let sent = sample(&t, &series("sent")).unwrap_or(0.0);
    assert!(sent > 1e6 + tx.unwrap_or(0.0), "a second of sending: {t}");
    assert_eq!(sample(&t, &series("received")), rx, "{t}");
}

#[test]
fn latency_probes_fill_the_servers_round_trip_histogram() {
    let Some(curl_bin) = peer("curl") else { return };
    let (port, mport) = (free_port(), free_port());
    let _srv = wirespeed_server(port, &["--metrics", &format!("127.0.0.1:{mport}")]);
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "--latency=20", "-J"],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let loaded = doc["end"]["latency"]["loaded"]["probes"].as_f64().unwrap();
    let name = "wirespeed_latency_probe_rtt_seconds";
    let text = wait_for(&curl_bin, mport, "the probes' round trips", |t| {
        sample(t, &format!("{name}_count{{phase=\"loaded\"}}")).is_some_and(|n| n >= loaded - 1.0)
    });
    // Each probe reports the one before it: all ten idle ones (the last by
    // the first loaded probe), and every loaded one but the last.
    assert_eq!(
        sample(&text, &format!("{name}_count{{phase=\"idle\"}}")),
        Some(10.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &format!("{name}_count{{phase=\"loaded\"}}")),
        Some(loaded - 1.0),
        "{text}"
    );
    let inf = sample(&text, &format!("{name}_bucket{{phase=\"loaded\",le=\"+Inf\"}}"));
    assert_eq!(inf, Some(loaded - 1.0), "{text}");
    // Loopback round trips are well under a second, and the sum agrees.
    let under_1s = sample(&text, &format!("{name}_bucket{{phase=\"idle\",le=\"1\"}}"));
    assert_eq!(under_1s, Some(10.0), "{text}");
    let sum = sample(&text, &format!("{name}_sum{{phase=\"idle\"}}")).unwrap();
    assert!(sum > 0.0 && sum < 10.0, "{text}");
}

/// The server's stderr once it holds `needle` (its stderr is read on a
/// thread of its own).
fn stderr_with(p: &Proc, needle: &str) -> String {
    common::wait::within(common::wait::LONG, || p.err().contains(needle).then_some(()));
    p.err()
}

#[test]
fn a_server_says_where_its_metrics_are_and_warns_when_anyone_may_read_them() {
    // One address: that one, and no warning.
    let (port, mport) = (free_port(), free_port());
    let srv = wirespeed_server(port, &["--metrics", &format!("127.0.0.1:{mport}")]);
    assert_eq!(
        stderr_with(&srv, "/metrics\n"),
        format!("Metrics at http://127.0.0.1:{mport}/metrics\n")
    );
    drop(srv);
    // Every address: each of the host's (never 0.0.0.0), and a warning.
    let (port, mport) = (free_port(), free_port());
    let srv = wirespeed_server(port, &["--metrics", &format!(":{mport}")]);
    let err = stderr_with(&srv, "warning: ");
    let urls: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|w| w.starts_with("http://"))
        .collect();
    assert!(err.starts_with("Metrics at http://"), "{err}");
    assert!(
        urls.contains(&format!("http://127.0.0.1:{mport}/metrics").as_str()),
        "{err}"
    );
    assert!(!err.contains("0.0.0.0") && !err.contains("[::]:"), "{err}");
    assert!(
        err.lines().last().unwrap().starts_with(&format!(
            "warning: --metrics :{mport} listens on every address, with no token or access list"
        )),
        "{err}"
    );
    // Each printed address answers.
    for u in &urls {
        let addr = u.trim_start_matches("http://").trim_end_matches("/metrics");
        let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        // (hyper answers an HTTP/1.0 request in HTTP/1.0.)
        assert!(
            out.starts_with("HTTP/1.0 200 OK") && out.contains("wirespeed_up 1"),
            "{addr}: {out}"
        );
    }
}
