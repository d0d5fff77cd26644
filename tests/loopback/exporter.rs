//! `wirespeed exporter`: probes of our server (both dialects), the real
//! iperf3 and iperf 2, latency and responsiveness probes, refusals before
//! anything runs, basic auth and the token, and the scrape timeout, read
//! with a small HTTP client over a TcpStream.

use crate::common;

use std::time::{Duration, Instant};

use common::{Iperf2, Proc, free_port, iperf2_server, iperf3_server, peer, wait, wirespeed, wirespeed_server};

/// An exporter on 127.0.0.1 with `extra` options, and its port.
fn exporter(extra: &[&str]) -> (Proc, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut args = vec!["exporter", "--listen", &listen];
    args.extend_from_slice(extra);
    let p = Proc::spawn(&wirespeed(), &args);
    assert!(
        p.wait_for_line("Exporter at http://127.0.0.1:", Duration::from_secs(10)),
        "exporter did not start: {}",
        p.err()
    );
    (p, port)
}

/// Status line and body of `GET path` with `headers`, within 30 s.
fn get(port: u16, path: &str, headers: &[&str]) -> (String, String) {
    common::http_get(port, path, headers)
}

/// A series' value, whatever its labels (every iperf3_* series has
/// `target` and `port`, as iperf3_exporter writes them).
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && (l[name.len()..].starts_with(' ') || l[name.len()..].starts_with('{')))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn probe(port: u16, query: &str) -> String {
    let (status, body) = get(port, &format!("/probe?{query}"), &[]);
    assert_eq!(status, "HTTP/1.1 200 OK", "{query}: {body}");
    body
}

fn assert_up(body: &str) {
    assert_eq!(sample(body, "iperf3_up"), Some(1.0), "{body}");
    assert!(sample(body, "iperf3_sent_bytes").is_some_and(|b| b > 0.0), "{body}");
    assert!(sample(body, "iperf3_received_bytes").is_some_and(|b| b > 0.0), "{body}");
}

#[test]
fn a_tcp_probe_of_our_server_is_up() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let body = probe(port, &format!("target=127.0.0.1&port={sport}&period=1"));
    assert_up(&body);
    assert!(sample(&body, "iperf3_retransmits").is_some(), "{body}");
    assert!(sample(&body, "iperf3_sent_seconds").is_some_and(|s| s > 0.5), "{body}");
    assert!(sample(&body, "wirespeed_probe_duration_seconds").is_some(), "{body}");
    let (_, m) = get(port, "/metrics", &[]);
    assert_eq!(
        sample(&m, "wirespeed_exporter_probes_total{outcome=\"up\"}"),
        Some(1.0),
        "{m}"
    );
    assert_eq!(sample(&m, "wirespeed_exporter_probes_in_flight"), Some(0.0), "{m}");
}

/// `quic_mode=true`: the client's `-q` against our server (which takes
/// QUIC with no option); the probe says what it ran.
#[test]
fn a_quic_probe_of_our_server_is_up() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let body = probe(
        port,
        &format!("target=127.0.0.1&port={sport}&period=1&quic_mode=true&parallel=2"),
    );
    assert_up(&body);
    assert!(
        body.contains(
            "wirespeed_probe_info{dialect=\"iperf3\",protocol=\"quic\",direction=\"forward\",mode=\"test\"} 1"
        ),
        "{body}"
    );
    assert_eq!(sample(&body, "wirespeed_probe_streams"), Some(2.0), "{body}");
    // What -q refuses is refused before anything runs.
    let (status, body) = get(
        port,
        &format!("/probe?target=127.0.0.1&port={sport}&quic_mode=true&udp_mode=true"),
        &[],
    );
    assert!(status.starts_with("HTTP/1.1 400"), "{status}: {body}");
    assert!(
        body.contains("parameter 'quic_mode' cannot be used with udp_mode"),
        "{body}"
    );
}

#[test]
fn a_udp_reverse_probe_has_the_udp_metrics() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let body = probe(
        port,
        &format!("target=127.0.0.1&port={sport}&udp_mode=true&reverse_mode=true&bitrate=2M&period=1&parallel=2"),
    );
    assert_up(&body);
    assert!(
        sample(&body, "iperf3_received_packets").is_some_and(|p| p > 0.0),
        "{body}"
    );
    for name in [
        "iperf3_sent_packets",
        "iperf3_sent_jitter_ms",
        "iperf3_sent_lost_packets",
        "iperf3_sent_lost_percent",
        "iperf3_received_jitter_ms",
        "iperf3_received_lost_packets",
        "iperf3_received_lost_percent",
    ] {
        assert!(sample(&body, name).is_some(), "{name}: {body}");
    }
    assert!(
        body.contains("direction=\"reverse\"") && body.contains("protocol=\"udp\""),
        "{body}"
    );
    assert_eq!(sample(&body, "wirespeed_probe_streams"), Some(2.0), "{body}");
}

#[test]
fn a_closed_port_is_down_not_an_error() {
    let (_ex, port) = exporter(&[]);
    let t0 = Instant::now();
    let closed = free_port();
    let body = probe(port, &format!("target=127.0.0.1&port={closed}&period=1"));
    assert_eq!(sample(&body, "iperf3_up"), Some(0.0), "{body}");
    // As iperf3_exporter 1.3: the failed probe's series at 0, labelled.
    assert_eq!(sample(&body, "iperf3_sent_bytes"), Some(0.0), "{body}");
    let up = format!("iperf3_up{{target=\"127.0.0.1\",port=\"{closed}\"}} 0\n");
    assert!(body.contains(&up), "{body}");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_real_iperf3_is_probed() {
    let Some(iperf3) = peer("iperf3") else { return };
    let sport = free_port();
    let _srv = iperf3_server(&iperf3, sport, &[]);
    let (_ex, port) = exporter(&[]);
    assert_up(&probe(port, &format!("target=127.0.0.1&port={sport}&period=1")));
}

#[test]
fn iperf2_servers_are_probed_in_their_dialect() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let sport = free_port();
        let Some(_srv) = iperf2_server(who, sport, &[]) else {
            continue;
        };
        let (_ex, port) = exporter(&[]);
        let body = probe(port, &format!("target=127.0.0.1&port={sport}&dialect=iperf2&period=1"));
        // An iperf 2 server tells a TCP client nothing of what it
        // received: the sender's numbers, and no received ones.
        assert_eq!(sample(&body, "iperf3_up"), Some(1.0), "{who:?}: {body}");
        assert!(
            sample(&body, "iperf3_sent_bytes").is_some_and(|b| b > 0.0),
            "{who:?}: {body}"
        );
        assert!(sample(&body, "iperf3_received_bytes").is_none(), "{who:?}: {body}");
        assert!(body.contains("dialect=\"iperf2\""), "{who:?}: {body}");
        // Reversed, this host receives and counts; what the server sent
        // is not known.
        let body = probe(
            port,
            &format!("target=127.0.0.1&port={sport}&dialect=iperf2&period=1&reverse_mode=true"),
        );
        assert_eq!(sample(&body, "iperf3_up"), Some(1.0), "{who:?}: {body}");
        assert!(
            sample(&body, "iperf3_received_bytes").is_some_and(|b| b > 0.0),
            "{who:?}: {body}"
        );
        assert!(sample(&body, "iperf3_sent_bytes").is_none(), "{who:?}: {body}");
    }
}

#[test]
fn hostile_parameters_are_refused_and_nothing_runs() {
    let sport = free_port();
    let srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    for q in [
        "target=-s".to_string(),
        format!("target=127.0.0.1&port={sport}&bind=-B"),
        format!("target=127.0.0.1%20-s&port={sport}"),
        format!("target=127.0.0.1&port={sport}&period=99999"),
        format!("target=127.0.0.1&port={sport}&parallel=1000"),
        format!("target=127.0.0.1&port={sport}&exec=1"),
        format!("target=127.0.0.1&port=-p{sport}"),
        "port=5201".to_string(),
        format!("target=127.0.0.1&port={sport}&latency=maybe"),
        format!("target=127.0.0.1&port={sport}&rpm=1&udp_mode=true"),
    ] {
        let (status, body) = get(port, &format!("/probe?{q}"), &[]);
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{q}: {body}");
        assert_eq!(body.lines().count(), 1, "{q}: {body}");
    }
    let (_, m) = get(port, "/metrics", &[]);
    assert_eq!(
        sample(&m, "wirespeed_exporter_probes_total{outcome=\"invalid\"}"),
        Some(10.0),
        "{m}"
    );
    assert_eq!(
        sample(&m, "wirespeed_exporter_probe_duration_seconds_count"),
        Some(0.0),
        "{m}"
    );
    assert!(!srv.out().contains("Accepted connection"), "{}", srv.out());
}

#[test]
fn overlapping_probes_of_one_server_are_both_up() {
    let sport = free_port();
    let srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let q = format!("target=127.0.0.1&port={sport}&period=2");
    let q2 = q.clone();
    let other = std::thread::spawn(move || probe(port, &q2));
    // The first probe's test has started at the server.
    wait::stdout_has(&srv, "Accepted connection", wait::LONG);
    assert_up(&probe(port, &q));
    assert_up(&other.join().unwrap());
}

#[test]
fn more_probes_than_allowed_get_503() {
    let sport = free_port();
    let srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&["--max-probes", "1"]);
    let q = format!("target=127.0.0.1&port={sport}&period=2");
    let q2 = q.clone();
    let other = std::thread::spawn(move || probe(port, &q2));
    // The first probe holds the only place once its test has started.
    wait::stdout_has(&srv, "Accepted connection", wait::LONG);
    let (status, body) = get(port, &format!("/probe?{q}"), &[]);
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{body}");
    assert_up(&other.join().unwrap());
}

#[test]
fn the_scrape_timeout_shortens_the_period() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let t0 = Instant::now();
    let (status, body) = get(
        port,
        &format!("/probe?target=127.0.0.1&port={sport}&period=30"),
        &["X-Prometheus-Scrape-Timeout-Seconds: 3"],
    );
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert_up(&body);
    assert_eq!(sample(&body, "wirespeed_probe_period_seconds"), Some(1.0), "{body}");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    let (status, _) = get(
        port,
        &format!("/probe?target=127.0.0.1&port={sport}"),
        &["X-Prometheus-Scrape-Timeout-Seconds: 1"],
    );
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
}

#[test]
fn the_token_and_the_allow_list_are_enforced() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&["--token", "s3cret-token", "--allow", "192.0.2.0/24"]);
    let q = format!("/probe?target=127.0.0.1&port={sport}&period=1");
    let (status, _) = get(port, &q, &[]);
    assert_eq!(status, "HTTP/1.1 401 Unauthorized");
    let (status, _) = get(port, &q, &["Authorization: Bearer wrong"]);
    assert_eq!(status, "HTTP/1.1 401 Unauthorized");
    let (status, body) = get(port, &q, &["Authorization: Bearer s3cret-token"]);
    assert_eq!(status, "HTTP/1.1 403 Forbidden", "{body}");
    let (status, _) = get(port, &format!("{q}&token=s3cret-token"), &[]);
    assert_eq!(status, "HTTP/1.1 403 Forbidden");
    // An allowed target, with the token as a parameter.
    let (_ex2, port2) = exporter(&["--token", "s3cret-token", "--allow", "127.0.0.0/8"]);
    let (status, body) = get(port2, &format!("{q}&token=s3cret-token"), &[]);
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert_up(&body);
}

#[test]
fn the_manual_documents_the_exporter() {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man/wirespeed.1")).unwrap();
    for s in [
        "wirespeed exporter",
        "\\-\\-max\\-probes",
        "iperf3_up",
        "X\\-Prometheus\\-Scrape\\-Timeout\\-Seconds",
        "\\-\\-basic\\-auth\\-file",
        "wirespeed_probe_latency_seconds",
        "wirespeed_probe_rpm",
    ] {
        assert!(text.contains(s), "man page lacks {s}");
    }
}

#[test]
fn a_latency_probe_of_our_server_has_both_phases() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let body = probe(port, &format!("target=127.0.0.1&port={sport}&period=1&latency=true"));
    assert_up(&body);
    assert_eq!(sample(&body, "wirespeed_probe_latency_up"), Some(1.0), "{body}");
    assert_eq!(
        sample(&body, "wirespeed_probe_latency_probes{phase=\"idle\"}"),
        Some(10.0),
        "{body}"
    );
    assert!(
        sample(&body, "wirespeed_probe_latency_probes{phase=\"loaded\"}").is_some_and(|n| n >= 1.0),
        "{body}"
    );
    for phase in ["idle", "loaded"] {
        let q = |q: &str| {
            sample(
                &body,
                &format!("wirespeed_probe_latency_seconds{{phase=\"{phase}\",quantile=\"{q}\"}}"),
            )
        };
        let p50 = q("0.5");
        assert!(p50.is_some_and(|v| v > 0.0 && v < 1.0), "{phase}: {body}");
        assert!(
            q("1") >= p50 && q("0.9") >= p50 && q("0.99").is_some(),
            "{phase}: {body}"
        );
    }
    assert!(body.contains("# TYPE wirespeed_probe_latency_seconds gauge"), "{body}");
}

#[test]
fn a_latency_probe_of_the_real_iperf3_fails_with_the_reason() {
    let Some(iperf3) = peer("iperf3") else { return };
    let sport = free_port();
    let _srv = iperf3_server(&iperf3, sport, &[]);
    let (_ex, port) = exporter(&[]);
    let (head, body) = common::http_get_head(
        port,
        &format!("/probe?target=127.0.0.1&port={sport}&period=1&latency=true"),
        &[],
    );
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert_eq!(sample(&body, "iperf3_up"), Some(0.0), "{body}");
    assert!(!body.contains("wirespeed_probe_latency_seconds"), "{body}");
    assert!(head.contains("X-Wirespeed-Probe-Error: --latency:"), "{head}");
    assert!(head.contains("an iperf3 server cannot"), "{head}");
}

#[test]
fn an_rpm_probe_of_our_server_has_its_responsiveness() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let t0 = Instant::now();
    let body = probe(port, &format!("target=127.0.0.1&port={sport}&period=2&rpm=true"));
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    assert_eq!(sample(&body, "iperf3_up"), Some(1.0), "{body}");
    assert!(sample(&body, "wirespeed_probe_rpm").is_some_and(|r| r > 0.0), "{body}");
    assert!(
        sample(&body, "wirespeed_probe_rpm_goodput_bits_per_second").is_some_and(|g| g > 0.0),
        "{body}"
    );
    assert!(
        sample(&body, "wirespeed_probe_rpm_load_flows").is_some_and(|f| f >= 1.0),
        "{body}"
    );
    let levels: f64 = ["high", "medium", "low"]
        .iter()
        .filter_map(|l| sample(&body, &format!("wirespeed_probe_rpm_confidence{{level=\"{l}\"}}")))
        .sum();
    assert_eq!(levels, 1.0, "{body}");
    assert!(body.contains("mode=\"rpm\""), "{body}");
    assert_eq!(sample(&body, "wirespeed_probe_period_seconds"), Some(2.0), "{body}");
}

#[test]
fn basic_auth_refuses_missing_and_wrong_credentials() {
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let dir = std::env::temp_dir().join(format!("ws-exp-basic-{}-{sport}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("credentials");
    std::fs::write(&file, "prom:c0rrect horse\n").unwrap();
    let (ex, port) = exporter(&["--basic-auth-file", file.to_str().unwrap(), "--token", "s3cret-token"]);
    let _ = std::fs::remove_dir_all(&dir);
    // Read as it started, and never on its command line (ps shows the
    // file's name only).
    if let Ok(cmdline) = std::fs::read(format!("/proc/{}/cmdline", ex.pid())) {
        assert!(!String::from_utf8_lossy(&cmdline).contains("c0rrect"));
    }
    let basic = |pair: &str| {
        format!(
            "Authorization: Basic {}",
            wirespeed::proto::iperf3::auth::base64_encode(pair.as_bytes())
        )
    };
    let q = format!("/probe?target=127.0.0.1&port={sport}&period=1");
    for path in ["/metrics", q.as_str()] {
        for auth in [
            String::new(),
            basic("prom:wrong"),
            basic("prom:c0rrect horse "),
            basic("other:c0rrect horse"),
            "Authorization: Basic %%%".to_string(),
            "Authorization: Bearer wrong".to_string(),
        ] {
            let headers: Vec<&str> = if auth.is_empty() { vec![] } else { vec![auth.as_str()] };
            let (head, _) = common::http_get_head(port, path, &headers);
            assert!(head.starts_with("HTTP/1.1 401 Unauthorized"), "{path} {auth}: {head}");
            // (Header names are case-insensitive: hyper writes this one
            // `Www-Authenticate`.)
            assert!(
                head.to_ascii_lowercase()
                    .contains("www-authenticate: basic realm=\"wirespeed exporter\""),
                "{path}: {head}"
            );
        }
    }
    let right = basic("prom:c0rrect horse");
    let (status, m) = get(port, "/metrics", &[&right]);
    assert_eq!(status, "HTTP/1.1 200 OK", "{m}");
    assert_eq!(
        sample(&m, "wirespeed_exporter_probes_total{outcome=\"unauthorized\"}"),
        Some(6.0),
        "{m}"
    );
    let (status, body) = get(port, &q, &[&right]);
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert_up(&body);
    // The token is accepted beside it, on both paths.
    let (status, _) = get(port, "/metrics", &["Authorization: Bearer s3cret-token"]);
    assert_eq!(status, "HTTP/1.1 200 OK");
    let (status, body) = get(port, &format!("{q}&token=s3cret-token"), &[]);
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
}

/// The metric names (without labels) an answer in Prometheus text has.
fn metric_names(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(|n| {
            // A histogram's series are its name.
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    n.strip_suffix(s)
                        .filter(|b| text.contains(&format!("# TYPE {b} histogram")))
                })
                .unwrap_or(n)
                .to_string()
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn the_docs_name_every_metric_the_exporter_answers_and_its_scrape_timeout_floor() {
    let docs =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/features.md")).unwrap();
    let sport = free_port();
    let _srv = wirespeed_server(sport, &[]);
    let (_ex, port) = exporter(&[]);
    let mut names = Vec::new();
    for q in [
        "period=0.5",
        "period=0.5&udp_mode=true&bitrate=1M",
        "period=0.5&latency=true",
        "period=1&rpm=true",
    ] {
        names.extend(metric_names(&probe(
            port,
            &format!("target=127.0.0.1&port={sport}&{q}"),
        )));
    }
    names.extend(metric_names(&get(port, "/metrics", &[]).1));
    names.sort();
    names.dedup();
    assert!(
        names.contains(&"wirespeed_probe_received_bits_per_second".to_string()),
        "{names:?}"
    );
    let missing: Vec<&String> = names.iter().filter(|n| !docs.contains(n.as_str())).collect();
    assert!(missing.is_empty(), "docs/features.md does not name {missing:?}");
    // The floor the docs give: 2.5 s, 3 s with latency=true, 4 s with rpm=true.
    for (q, refused, taken) in [
        ("", "2.4", "2.5"),
        ("&latency=true", "2.9", "3"),
        ("&rpm=true", "3.9", "4"),
    ] {
        let path = format!("/probe?target=127.0.0.1&port={sport}{q}");
        let (status, body) = get(
            port,
            &path,
            &[&format!("X-Prometheus-Scrape-Timeout-Seconds: {refused}")],
        );
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{q} at {refused} s: {body}");
        assert_eq!(body.lines().count(), 1, "{body}");
        let (status, body) = get(port, &path, &[&format!("X-Prometheus-Scrape-Timeout-Seconds: {taken}")]);
        assert_eq!(status, "HTTP/1.1 200 OK", "{q} at {taken} s: {body}");
    }
}
