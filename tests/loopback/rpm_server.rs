//! `-s --rpm-listen`: the networkQuality (RPM) server, driven by Debian's
//! curl over HTTP/2 and HTTP/1.1, with its self-signed certificate and
//! with one made by openssl; its handshake deadline; and the refusals of
//! its options.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

/// Whether curl is here and speaks HTTP/2 (else the test says so and
/// passes without running).
fn curl_h2() -> bool {
    let ok = Command::new("curl")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("HTTP2"))
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: no curl with HTTP/2 on this machine");
    }
    ok
}

/// A server on a free iperf port with the RPM server on another; returns
/// it, the RPM port and what it said on stderr at start.
fn rpm_server(extra: &[&str]) -> (common::Proc, u16, String) {
    let port = common::free_port();
    let rpm = common::free_port();
    let listen = format!("127.0.0.1:{rpm}");
    let mut args = vec!["--rpm-listen", listen.as_str()];
    args.extend_from_slice(extra);
    let p = common::wirespeed_server(port, &args);
    let said = common::wait::stderr_has(&p, "RPM server", common::wait::LONG);
    assert!(said.contains("RPM server (networkQuality) at"), "{said}");
    common::wait_listening(rpm);
    (p, rpm, said)
}

/// `curl -sk args...` (at most `secs` seconds): its exit code, stdout bytes
/// and stderr.
fn curl(args: &[&str], secs: u32) -> (Option<i32>, Vec<u8>, String) {
    let t = secs.to_string();
    let o = Command::new("curl")
        .args(["-sSk", "--max-time", &t])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("curl runs");
    (
        o.status.code(),
        o.stdout,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The fingerprint as the server printed it.
fn printed_fingerprint(said: &str) -> String {
    said.split("SHA-256 ")
        .nth(1)
        .and_then(|s| s.lines().next())
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn curl_gets_config_small_large_and_uploads_over_h2_and_h1() {
    if !curl_h2() {
        return;
    }
    let (_server, rpm, said) = rpm_server(&[]);
    assert!(
        said.contains(&format!(
            "https://127.0.0.1:{rpm}/.well-known/nq, self-signed certificate SHA-256 "
        )),
        "{said}"
    );
    let fp = printed_fingerprint(&said);
    assert_eq!(fp.len(), 32 * 3 - 1, "{said}");
    let base = format!("https://127.0.0.1:{rpm}");

    // The config, over both protocols and at both paths.
    for (proto, path) in [
        ("--http2", "/.well-known/nq"),
        ("--http1.1", "/config"),
        ("--http2", "/config"),
    ] {
        let (code, body, err) = curl(&[proto, "-w", "", &format!("{base}{path}")], 10);
        assert_eq!(code, Some(0), "{proto} {path}: {err}");
        let doc: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(doc["version"], 1);
        let urls = &doc["urls"];
        for (k, p) in [
            ("small_download_url", "small"),
            ("large_download_url", "large"),
            ("upload_url", "slurp"),
            ("small_https_download_url", "small"),
            ("large_https_download_url", "large"),
            ("https_upload_url", "slurp"),
        ] {
            assert_eq!(urls[k], format!("{base}/{p}"), "{k} in {doc}");
        }
    }
    // A host that is no host falls back to the listener's address; a name
    // is kept.
    let (_, body, _) = curl(&["--http1.1", "-H", "Host: a b/c", &format!("{base}/config")], 10);
    let doc: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(doc["urls"]["upload_url"], format!("{base}/slurp"));
    let (_, body, _) = curl(
        &[
            "--http1.1",
            "--resolve",
            &format!("nq.test:{rpm}:127.0.0.1"),
            &format!("https://nq.test:{rpm}/config"),
        ],
        10,
    );
    let doc: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        doc["urls"]["small_download_url"],
        format!("https://nq.test:{rpm}/small")
    );

    // /small: one byte, over HTTP/2 and HTTP/1.1.
    for (proto, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let (code, body, err) = curl(
            &[proto, "-w", "\n%{http_code} %{http_version}", &format!("{base}/small")],
            10,
        );
        assert_eq!(code, Some(0), "{err}");
        let text = String::from_utf8_lossy(&body).into_owned();
        let (one, tail) = text.split_once('\n').expect("the body, then curl's line");
        assert_eq!(one.len(), 1, "{text:?}");
        assert_eq!(tail, format!("200 {version}"));
    }

    // Unknown paths are 404, a wrong method 405.
    let (_, body, _) = curl(
        &[
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("{base}/nope"),
        ],
        10,
    );
    assert_eq!(body, b"404");
    let (_, body, _) = curl(
        &[
            "--http2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-d",
            "x",
            &format!("{base}/small"),
        ],
        10,
    );
    assert_eq!(body, b"405");

    // /large streams: 50 MB read over each protocol, then we hang up.
    for proto in ["--http2", "--http1.1"] {
        let mut c = Command::new("curl")
            .args(["-sk", "--max-time", "30", proto, &format!("{base}/large")])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("curl runs");
        let mut out = c.stdout.take().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut got = 0usize;
        while got < 50_000_000 {
            match out.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        let _ = c.kill();
        let _ = c.wait();
        assert!(got >= 50_000_000, "{proto}: /large gave {got} bytes");
    }

    // An upload of 20 MB from standard input (chunked in HTTP/1.1) is 200.
    for proto in ["--http2", "--http1.1"] {
        let mut c = Command::new("curl")
            .args([
                "-sSk",
                "--max-time",
                "30",
                proto,
                "--data-binary",
                "@-",
                "-o",
                "/dev/null",
            ])
            .args(["-w", "%{http_code} %{size_upload}", &format!("{base}/slurp")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("curl runs");
        let mut input = c.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let block = vec![b'u'; 1 << 20];
            for _ in 0..20 {
                if input.write_all(&block).is_err() {
                    break;
                }
            }
        });
        let o = c.wait_with_output().expect("curl ends");
        let _ = feeder.join();
        let said = String::from_utf8_lossy(&o.stdout);
        assert_eq!(said, "200 20971520", "{proto}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn a_certificate_given_is_served() {
    if !curl_h2() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ws-rpm-cert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some((cert, key)) = common::self_signed_cert(&dir) else {
        eprintln!("SKIPPED: openssl could not make a certificate");
        return;
    };
    let (cert_s, key_s) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let o = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in", cert_s])
        .output()
        .expect("openssl runs");
    let theirs = String::from_utf8_lossy(&o.stdout);
    let theirs = theirs.trim().rsplit('=').next().unwrap().to_string();
    let (_server, rpm, said) = rpm_server(&["--tls-cert", cert_s, "--tls-key", key_s]);
    assert!(said.contains(", certificate SHA-256 "), "{said}");
    assert_eq!(printed_fingerprint(&said), theirs);
    // Verified against that certificate, not -k.
    let url = format!("https://127.0.0.1:{rpm}/small");
    let o = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "--http2",
            "--cacert",
            cert_s,
            "-w",
            " %{http_version}",
            &url,
        ])
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "x 2",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A key that is not the certificate's is refused at start, in one line.
    let other = dir.join("other.pem");
    let _ = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            other.to_str().unwrap(),
        ])
        .stderr(Stdio::null())
        .status();
    let r = common::run(
        &common::wirespeed(),
        &[
            "-s",
            "--rpm-listen",
            &format!("127.0.0.1:{}", common::free_port()),
            "--tls-cert",
            cert_s,
            "--tls-key",
            other.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_silent_client_is_dropped_while_the_iperf_port_serves() {
    let port = common::free_port();
    let rpm = common::free_port();
    let listen = format!("127.0.0.1:{rpm}");
    let _server = common::wirespeed_server(port, &["--rpm-listen", &listen]);
    common::wait_listening(rpm);
    let started = Instant::now();
    let mut silent = TcpStream::connect(("127.0.0.1", rpm)).expect("connects");
    silent.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // A normal test on the iperf port meanwhile.
    let p = port.to_string();
    let r = common::run(
        &common::wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("receiver"), "{}", r.stdout);
    // The handshake deadline (10 s) closes the silent connection.
    // A read with a timeout is not restarted after a signal (CI once saw
    // EINTR here): read again until the connection ends or the timeout.
    let mut b = [0u8; 16];
    let n = loop {
        match silent.read(&mut b) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted && started.elapsed() < Duration::from_secs(20) => {}
            other => break other,
        }
    };
    let took = started.elapsed();
    assert!(
        matches!(n, Ok(0))
            || n.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "{n:?}"
    );
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(19),
        "closed after {took:?}"
    );
}

#[test]
fn the_options_are_refused_in_one_line_when_wrong() {
    let free = format!("127.0.0.1:{}", common::free_port());
    let cases: &[(&[&str], &str)] = &[
        (
            &["-s", "--tls-cert", "c.pem", "--tls-key", "k.pem"],
            "give --rpm-listen too",
        ),
        (&["-s", "--tls-key", "k.pem"], "give --rpm-listen too"),
        (
            &["-s", "--rpm-listen", &free, "--tls-cert", "c.pem"],
            "--tls-cert needs --tls-key",
        ),
        (
            &["-s", "--rpm-listen", &free, "--tls-key", "k.pem"],
            "--tls-key needs --tls-cert",
        ),
        (&["-s", "--rpm-listen", "nowhere"], "--rpm-listen wants ADDR:PORT"),
        (
            &[
                "-s",
                "--rpm-listen",
                &free,
                "--tls-cert",
                "/nonexistent/c.pem",
                "--tls-key",
                "/nonexistent/k.pem",
            ],
            "--tls-cert /nonexistent/c.pem: ",
        ),
        (
            &["--iperf2", "-s", "--tls-cert", "c.pem", "--tls-key", "k.pem"],
            "give --rpm-listen too",
        ),
    ];
    for (args, words) in cases {
        let r = common::run(&common::wirespeed(), args, Duration::from_secs(10));
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(words), "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
    }
    // A client may not serve it.
    let r = common::run(
        &common::wirespeed(),
        &["-c", "127.0.0.1", "--rpm-listen", &free],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
}

#[test]
fn the_servers_metrics_count_what_the_rpm_server_served() {
    if !curl_h2() {
        return;
    }
    let mport = common::free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let (_server, rpm, _) = rpm_server(&["--metrics", &maddr]);
    let base = format!("https://127.0.0.1:{rpm}");
    let code = |args: &[&str]| {
        let mut a = vec!["-o", "/dev/null", "-w", "%{http_code}"];
        a.extend_from_slice(args);
        String::from_utf8(curl(&a, 10).1).unwrap()
    };
    assert_eq!(code(&["--http2", &format!("{base}/.well-known/nq")]), "200");
    assert_eq!(code(&["--http2", &format!("{base}/small")]), "200");
    assert_eq!(code(&["--http1.1", &format!("{base}/small")]), "200");
    assert_eq!(code(&["--http2", &format!("{base}/nope")]), "404");
    let upload = vec![b'u'; 1 << 20];
    let file = std::env::temp_dir().join(format!("ws-rpm-upload-{}", std::process::id()));
    std::fs::write(&file, &upload).unwrap();
    let at = format!("@{}", file.display());
    assert_eq!(
        code(&["--http2", "--data-binary", &at, &format!("{base}/slurp")]),
        "200"
    );
    let _ = std::fs::remove_file(&file);
    // A connection that never starts TLS: a failed handshake once the
    // peer hangs up.
    drop(TcpStream::connect(("127.0.0.1", rpm)).unwrap());
    let value = |text: &str, series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no {series} in {text}"))
            .parse()
            .unwrap()
    };
    let text = common::wait::text(
        "the RPM server's counters to settle",
        common::wait::LONG,
        || common::http_get(mport, "/metrics", &[]).1,
        |t| {
            t.contains("wirespeed_rpm_server_tls_failures_total 1")
                && t.contains("wirespeed_rpm_server_open_connections 0")
        },
    );
    let v = |s: &str| value(&text, s);
    assert_eq!(v("wirespeed_rpm_server_connections_total"), 6.0, "{text}");
    assert_eq!(v("wirespeed_rpm_server_open_connections"), 0.0, "{text}");
    assert_eq!(v("wirespeed_rpm_server_tls_failures_total"), 1.0, "{text}");
    assert_eq!(v("wirespeed_rpm_server_requests_total{path=\"config\"}"), 1.0);
    assert_eq!(v("wirespeed_rpm_server_requests_total{path=\"small\"}"), 2.0);
    assert_eq!(v("wirespeed_rpm_server_requests_total{path=\"large\"}"), 0.0);
    assert_eq!(v("wirespeed_rpm_server_requests_total{path=\"upload\"}"), 1.0);
    assert_eq!(v("wirespeed_rpm_server_requests_total{path=\"other\"}"), 1.0);
    assert_eq!(v("wirespeed_rpm_server_turned_away_total{how=\"busy\"}"), 0.0);
    let received = v("wirespeed_rpm_server_bytes_total{direction=\"received\"}");
    assert!(received >= (1 << 20) as f64 && received < 2e6, "{text}");
    assert!(v("wirespeed_rpm_server_bytes_total{direction=\"sent\"}") > 0.0);
}

#[test]
fn the_standard_rpm_feeds_the_json_stream_the_html_report_and_metrics() {
    let (_server, rpm, _) = rpm_server(&[]);
    let url = format!("--rpm=https://127.0.0.1:{rpm}/.well-known/nq");
    let dir = std::env::temp_dir().join(format!("ws-nq-report-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let html = dir.join("rpm.html");
    let mport = common::free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let mut c = common::Proc::spawn(
        &common::wirespeed(),
        &[
            &url,
            "--insecure",
            "-t",
            "3",
            "-P",
            "2",
            "--json-stream",
            "--report",
            html.to_str().unwrap(),
            "--metrics",
            &maddr,
        ],
    );
    // The metrics serve the latest second while the test runs.
    let scrape = || {
        let mut seen = String::new();
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", mport)) {
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.read_to_string(&mut seen);
        }
        seen
    };
    common::wait::text("the RPM goodput in the metrics", Duration::from_secs(20), scrape, |t| {
        t.contains("wirespeed_rpm_goodput_bits_per_second")
    });
    let st = c.wait(Duration::from_secs(60)).expect("the test ends");
    assert_eq!(st.code(), Some(0), "{}{}", c.out(), c.err());
    // One JSON line per event: a start, seconds and an end per direction.
    let lines: Vec<serde_json::Value> = c
        .out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events.iter().filter(|e| **e == "rpm_start").count(), 2, "{events:?}");
    assert_eq!(events.iter().filter(|e| **e == "rpm_end").count(), 2, "{events:?}");
    assert!(
        events.iter().filter(|e| **e == "rpm_interval").count() >= 4,
        "{events:?}"
    );
    // `-t 3` is 3 s a direction: its last second ends at 3 s (each
    // second once closed a 100 ms tick early, and a direction ran 3.9 s
    // in four seconds); a late tick on a loaded machine may add some.
    let mut last = Vec::new();
    for l in &lines {
        match l["event"].as_str() {
            Some("rpm_start") => last.push(0.0),
            Some("rpm_interval") => *last.last_mut().unwrap() = l["data"]["seconds"].as_f64().unwrap(),
            _ => {}
        }
    }
    assert_eq!(last.len(), 2, "{events:?}");
    for secs in last {
        assert!((2.9..3.6).contains(&secs), "a direction's last second ends at {secs} s");
    }
    let ends: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["event"] == "rpm_end")
        .map(|l| &l["data"])
        .collect();
    for (end, way) in ends.iter().zip(["download", "upload"]) {
        assert_eq!(end["direction"], way, "{end}");

        assert!(end["rpm"].as_f64().is_some_and(|r| r > 0.0), "{end}");
        assert!(
            end["goodput_bits_per_second"].as_f64().is_some_and(|g| g > 1e6),
            "{end}"
        );
        assert!(
            end["loaded"]["self_probe_ms"].as_f64().is_some_and(|m| m > 0.0),
            "{end}"
        );
    }
    // The report draws both directions.
    let page = std::fs::read_to_string(&html).expect("the report is written");
    assert!(
        page.contains("download") && page.contains("upload"),
        "the report lacks a direction"
    );
    assert!(page.contains("<svg"), "the report has no chart");
    let _ = std::fs::remove_dir_all(&dir);
}
