//! `--rpm=URL`, the standard responsiveness test, against Debian's nginx
//! set up as the network-quality/server project's nginx example: TLS 1.3,
//! HTTP/2, a self-signed certificate, `/config` and `/.well-known/nq`
//! answering the configuration, `/small` one byte, `/large` a 1 GB sparse
//! file and `/slurp` proxied, unbuffered, to an upload sink in this test.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Proc, free_port, peer, wirespeed};
use serde_json::Value;

/// A sink for uploads: reads each request's body to its end (length,
/// chunked end or close), then answers 200.
fn upload_sink() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            std::thread::spawn(move || sink_one(c));
        }
    });
    port
}

fn sink_one(mut c: std::net::TcpStream) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(60)));
    let mut buf = vec![0u8; 64 * 1024];
    let mut head = Vec::new();
    // The header.
    let body_start = loop {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > 64 * 1024 {
            return;
        }
    };
    let text = String::from_utf8_lossy(&head[..body_start]).to_ascii_lowercase();
    let length = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let mut got = head.len() - body_start;
    let mut tail: Vec<u8> = head[body_start..].to_vec();
    let ended = |got: usize, tail: &[u8]| match length {
        Some(n) => got >= n,
        None => tail.ends_with(b"0\r\n\r\n"),
    };
    while !ended(got, &tail) {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                got += n;
                tail.extend_from_slice(&buf[..n]);
                let keep = tail.len().saturating_sub(8);
                tail.drain(..keep);
            }
        }
    }
    let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

/// nginx serving the test's files on `port` (ended when dropped).
struct Nginx {
    proc: Proc,
    dir: PathBuf,
    port: u16,
}

impl Drop for Nginx {
    /// Ends nginx by its master's pid with SIGTERM, which stops its
    /// workers too (a SIGKILL, as a `Proc` ends itself, would leave them
    /// running as orphans).
    fn drop(&mut self) {
        self.proc.signal(15);
        let _ = self.proc.wait(Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn nginx(bin: &Path) -> Option<Nginx> {
    let dir = std::env::temp_dir().join(format!("wirespeed-nq-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let d = dir.display().to_string();
    if common::self_signed_cert(&dir).is_none() {
        eprintln!("NOTICE: openssl could not make a certificate; skipping the nginx test");
        return None;
    }
    std::fs::write(dir.join("www/small"), b"x").unwrap();
    let large = std::fs::File::create(dir.join("www/large")).unwrap();
    large.set_len(1 << 30).unwrap();
    let port = free_port();
    let sink = upload_sink();
    let base = format!("https://127.0.0.1:{port}");
    let config = format!(
        r#"{{"version":1,"urls":{{"small_download_url":"{base}/small","large_download_url":"{base}/large","upload_url":"{base}/slurp"}}}}"#
    );
    let conf = format!(
        "worker_processes 2;\nevents {{ worker_connections 1024; }}\nhttp {{\n\
         access_log off;\n\
         client_body_temp_path {d}/tmp/body;\nproxy_temp_path {d}/tmp/proxy;\n\
         fastcgi_temp_path {d}/tmp/fcgi;\nuwsgi_temp_path {d}/tmp/uwsgi;\nscgi_temp_path {d}/tmp/scgi;\n\
         server {{\n\
         listen 127.0.0.1:{port} ssl http2;\n\
         ssl_certificate {d}/cert.pem;\nssl_certificate_key {d}/key.pem;\nssl_protocols TLSv1.3;\n\
         root {d}/www;\n\
         location = /config {{ default_type application/json; return 200 '{config}'; }}\n\
         location = /.well-known/nq {{ default_type application/json; return 200 '{config}'; }}\n\
         location = /notjson {{ default_type text/html; return 200 '<html>hello</html>'; }}\n\
         location = /small {{ }}\n\
         location = /large {{ }}\n\
         location = /slurp {{ client_max_body_size 0; proxy_request_buffering off; \
         proxy_http_version 1.1; proxy_pass http://127.0.0.1:{sink}; }}\n\
         }}\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let g = format!("daemon off; pid {d}/nginx.pid; error_log stderr;");
    let conf_path = format!("{d}/nginx.conf");
    let proc = Proc::spawn(&bin.to_path_buf(), &["-p", &d, "-c", &conf_path, "-g", &g]);
    // Ready once it listens on the configured port.
    if common::wait::within(Duration::from_secs(5), || common::wait::tcp_listens(port).then_some(())).is_none() {
        panic!("nginx did not start: {}", proc.err());
    }
    Some(Nginx { proc, dir, port })
}

/// Runs wirespeed; its exit code, stdout and stderr.
fn run(args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let mut p = Proc::spawn(&wirespeed(), args);
    let st = p.wait(limit);
    (st.and_then(|s| s.code()), p.out(), p.err())
}

fn one_line_error(args: &[&str], needle: &str) {
    let (code, out, err) = run(args, Duration::from_secs(30));
    assert_eq!(code, Some(1), "{args:?}: {out}{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line expected: {err}");
    assert!(lines[0].contains(needle), "{args:?}: {needle:?} not in {err}");
    assert!(out.is_empty(), "{args:?}: {out}");
}

#[test]
fn standard_rpm_against_nginx() {
    let Some(bin) = peer("nginx") else { return };
    let Some(ng) = nginx(&bin) else { return };
    let base = format!("https://127.0.0.1:{}", ng.port);
    let cacert = ng.dir.join("cert.pem").display().to_string();
    let config = format!("--rpm={base}/config");

    // Both directions, -J, the certificate given.
    let (code, out, err) = run(
        &[&config, "--cacert", &cacert, "-t", "4", "-J"],
        Duration::from_secs(40),
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    for k in ["unloaded_latency_ms", "jitter_ms"] {
        assert!(doc[k].as_f64().is_some_and(|v| v > 0.0), "{k}: {doc}");
    }
    for way in ["download", "upload"] {
        let w = &doc[way];
        assert!(w["throughput"].as_f64().is_some_and(|v| v > 0.0), "{way}: {w}");
        assert!(w["rpm"].as_f64().is_some_and(|v| v > 0.0), "{way}: {w}");
        assert!(w["loaded_latency_ms"].as_f64().is_some_and(|v| v > 0.0), "{way}: {w}");
        assert!(
            ["Poor", "Fair", "Good", "Excellent"].contains(&w["class"].as_str().unwrap_or("")),
            "{w}"
        );
        assert!(
            ["high", "medium", "low"].contains(&w["confidence"].as_str().unwrap_or("")),
            "{w}"
        );
        assert!(w["flows"].as_u64().is_some_and(|n| (1..=16).contains(&n)), "{w}");
        for k in ["tcp", "tls", "http", "self"] {
            assert!(w["latency_ms"][k].as_f64().is_some_and(|v| v > 0.0), "{way} {k}: {w}");
        }
        assert!(w["probes"]["foreign"].as_u64().is_some_and(|n| n > 0), "{w}");
        assert!(w["probes"]["self"].as_u64().is_some_and(|n| n > 0), "{w}");
    }
    eprintln!(
        "nginx on loopback: download {} RPM, upload {} RPM",
        doc["download"]["rpm"], doc["upload"]["rpm"]
    );

    // --insecure, download only (-R), the well-known path, text.
    let wk = format!("--rpm={base}/.well-known/nq");
    let (code, out, err) = run(&[&wk, "--insecure", "-R", "-t", "3"], Duration::from_secs(30));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("Download responsiveness: "), "{out}");
    assert!(out.contains(" RPM ("), "{out}");
    assert!(!out.contains("Upload"), "-R is download only: {out}");

    // Refusals: one clear line each, exit 1.
    one_line_error(&[&config], "certificate is not trusted");
    one_line_error(&[&format!("--rpm={base}/nothing"), "--insecure"], "404");
    one_line_error(&[&format!("--rpm={base}/notjson"), "--insecure"], "not JSON");
    one_line_error(&["--rpm=http://127.0.0.1/config"], "only https://");
    one_line_error(
        &[&format!("--rpm=https://127.0.0.1:{}/config", free_port()), "--insecure"],
        "refused",
    );
    one_line_error(&[&config, "--cacert", "/nonexistent/ca.pem"], "/nonexistent/ca.pem");
    one_line_error(&[&config, "--insecure", "-u"], "cannot be used with -u");
    // With -J a failure is a JSON document with "error".
    let (code, out, _) = run(
        &[&format!("--rpm={base}/nothing"), "--insecure", "-J"],
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(1));
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(doc["error"].as_str().is_some_and(|e| e.contains("404")), "{doc}");
}
