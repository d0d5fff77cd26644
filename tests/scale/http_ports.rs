//! Every HTTP port of wirespeed under attack: the web UI (`wirespeed ui`),
//! the exporter (`wirespeed exporter`), the `--metrics` endpoint and the
//! RPM port (`--rpm-listen`, TLS). For each: 200 connections trickling a
//! request a byte a second (reopened when cut), 1,000 idle connections, a
//! 1 MB header, and bad methods and paths (and, for the UI, missing or
//! wrong tokens and origins). During each, a normal request is answered
//! within 2 s; after each, an iperf test against the `wirespeed -s`
//! works, and the attacked process's open descriptors come back to where
//! they were.
//!
//! The worst answer times are printed (`--nocapture`); with
//! `WIRESPEED_HTTP_PORTS_BIN` naming another wirespeed binary, that one is
//! attacked instead (to compare with an older build).
#![cfg(feature = "rpm-server")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::common::*;

/// The answer a normal request must have within.
const ANSWER: Duration = Duration::from_secs(2);
/// How long the trickling goes on.
const TRICKLE: Duration = Duration::from_secs(10);
/// How long the idle connections are held.
const IDLE_HOLD: Duration = Duration::from_secs(8);
const TOKEN: &str = "http-ports-token-0123456789";

fn binary() -> PathBuf {
    std::env::var_os("WIRESPEED_HTTP_PORTS_BIN").map_or_else(wirespeed, PathBuf::from)
}

/// One port under attack.
struct Port {
    name: &'static str,
    port: u16,
    /// The process serving it.
    pid: u32,
    /// TLS (the RPM port).
    tls: bool,
    /// A normal request's path.
    path: &'static str,
}

impl Port {
    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Sends `raw` on a new connection and returns the status line of
    /// the answer (empty when the connection closed without one), within
    /// `limit`.
    fn exchange(&self, raw: &[u8], limit: Duration) -> Result<String, String> {
        let t0 = Instant::now();
        let head = if self.tls {
            let mut s = crate::rpm_hostile::tls(self.port, b"http/1.1").map_err(|e| format!("TLS: {e}"))?;
            s.sock.set_read_timeout(Some(limit)).map_err(|e| e.to_string())?;
            let _ = s.write_all(raw).and_then(|()| s.flush());
            first_line(&mut s, t0 + limit)
        } else {
            let mut s = TcpStream::connect_timeout(&self.addr(), limit).map_err(|e| format!("connect: {e}"))?;
            s.set_read_timeout(Some(limit)).map_err(|e| e.to_string())?;
            s.set_write_timeout(Some(limit)).map_err(|e| e.to_string())?;
            let _ = s.write_all(raw);
            first_line(&mut s, t0 + limit)
        };
        if t0.elapsed() > limit {
            return Err(format!("no answer within {limit:?} ({head:?})"));
        }
        Ok(head)
    }

    /// A normal request: how long its answer took, or why it failed.
    fn normal(&self) -> Result<Duration, String> {
        let t0 = Instant::now();
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.path, self.port
        );
        let line = self.exchange(req.as_bytes(), ANSWER)?;
        if !line.starts_with("HTTP/1.1 200") {
            return Err(format!("answered {line:?}"));
        }
        Ok(t0.elapsed())
    }
}

/// The first line a connection answers (until `until`).
fn first_line(s: &mut impl Read, until: Instant) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while Instant::now() < until && !got.contains(&b'\n') && got.len() < 4096 {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&got).lines().next().unwrap_or("").to_string()
}

/// Open descriptors of `pid`.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// What normal requests met while an attack went on.
#[derive(Default)]
struct Seen {
    times: Vec<Duration>,
    failures: Vec<String>,
}

impl Seen {
    fn worst(&self) -> Duration {
        self.times.iter().copied().max().unwrap_or_default()
    }

    fn median(&self) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        t.get(t.len() / 2).copied().unwrap_or_default()
    }
}

/// Runs `attack` (which returns when done, or when told to stop) while
/// normal requests are made every 250 ms.
fn during(p: &Port, attack: impl FnOnce(&AtomicBool) + Send) -> Seen {
    let stop = AtomicBool::new(false);
    let mut seen = Seen::default();
    std::thread::scope(|sc| {
        let attacker = sc.spawn(|| {
            attack(&stop);
            stop.store(true, Relaxed);
        });
        // Let the attack get going first.
        std::thread::sleep(Duration::from_millis(1500));
        let t0 = Instant::now();
        while !stop.load(Relaxed) && t0.elapsed() < Duration::from_secs(60) {
            match p.normal() {
                Ok(t) => seen.times.push(t),
                Err(e) => seen.failures.push(e),
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        stop.store(true, Relaxed);
        attacker.join().unwrap();
    });
    seen
}

/// A connection of the attacker's: plain TCP, non-blocking.
fn open(p: &Port) -> Option<TcpStream> {
    let s = TcpStream::connect_timeout(&p.addr(), Duration::from_secs(1)).ok()?;
    s.set_nonblocking(true).ok()?;
    Some(s)
}

/// Whether the server has closed `s` (or reset it).
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 512];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// 200 connections each sending a byte of a request a second, each
/// reopened when cut, for [`TRICKLE`].
fn trickle(p: &Port, stop: &AtomicBool) {
    // A request's head for HTTP; a TLS handshake record promising 512
    // bytes for TLS.
    let lead: Vec<u8> = if p.tls {
        let mut v = vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03];
        v.resize(600, 0);
        v
    } else {
        let mut v = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".to_vec();
        v.resize(600, b'a');
        v
    };
    let mut conns: Vec<(Option<TcpStream>, usize)> = (0..200).map(|_| (open(p), 0)).collect();
    let t0 = Instant::now();
    while t0.elapsed() < TRICKLE && !stop.load(Relaxed) {
        for (c, at) in conns.iter_mut() {
            let ok = match c {
                Some(s) => !closed(s) && s.write(&lead[*at % lead.len()..][..1]).is_ok(),
                None => false,
            };
            if ok {
                *at += 1;
            } else {
                *c = open(p);
                *at = 0;
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// 1,000 connections that send nothing, held for [`IDLE_HOLD`].
fn idle(p: &Port, stop: &AtomicBool) {
    let t0 = Instant::now();
    let held: Vec<TcpStream> = (0..1000)
        .map_while(|_| (t0.elapsed() < Duration::from_secs(20)).then(|| open(p)))
        .flatten()
        .collect();
    let t1 = Instant::now();
    while t1.elapsed() < IDLE_HOLD && !stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(held);
}

/// Requests with a 1 MB header, from two connections at a time, for 4 s.
fn big_header(p: &Port, stop: &AtomicBool) {
    let mut req = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ".to_vec();
    req.resize(req.len() + (1 << 20), b'a');
    req.extend_from_slice(b"\r\n\r\n");
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                while t0.elapsed() < Duration::from_secs(4) && !stop.load(Relaxed) {
                    let line = p.exchange(&req, Duration::from_secs(10)).unwrap_or_default();
                    assert!(!line.contains(" 200 "), "{}: a 1 MB header answered {line}", p.name);
                }
            });
        }
    });
}

/// Bad methods and paths (and, for the UI, tokens and origins), each
/// refused, over and over for 3 s.
fn bad_requests(p: &Port, stop: &AtomicBool) {
    let host = format!("Host: 127.0.0.1:{}", p.port);
    let mut reqs: Vec<String> = [
        "BREW / HTTP/1.1",
        "DELETE /metrics HTTP/1.1",
        "GET /../../../etc/passwd HTTP/1.1",
        "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1",
        "GET ../ HTTP/1.1",
        "GET http://evil.example/../ HTTP/1.1",
        "GET /\0 HTTP/1.1",
        "\x16\x03\x01 junk",
    ]
    .iter()
    .map(|l| format!("{l}\r\n{host}\r\nConnection: close\r\n\r\n"))
    .collect();
    if p.name == "ui" {
        let t = TOKEN;
        for r in [
            format!("GET /api/runs HTTP/1.1\r\n{host}"),
            format!("GET /api/runs?token=wrong-token-0123456789 HTTP/1.1\r\n{host}"),
            format!("GET /api/runs?token={t} HTTP/1.1\r\nHost: evil.example"),
            format!("POST /api/runs?token={t} HTTP/1.1\r\n{host}\r\nContent-Length: 2"),
            format!(
                "POST /api/runs HTTP/1.1\r\n{host}\r\nX-Wirespeed-Token: {t}\r\nOrigin: http://evil.example\r\nContent-Length: 2"
            ),
            format!("POST /api/runs HTTP/1.1\r\n{host}\r\nX-Wirespeed-Token: nope\r\nContent-Length: 2"),
        ] {
            reqs.push(format!("{r}\r\nConnection: close\r\n\r\n{{}}"));
        }
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) && !stop.load(Relaxed) {
        for r in &reqs {
            let line = p.exchange(r.as_bytes(), Duration::from_secs(5)).unwrap_or_default();
            let code: u16 = line.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
            assert!(
                !(200..400).contains(&code),
                "{}: {:?} answered {line}",
                p.name,
                r.lines().next()
            );
        }
    }
}

#[test]
fn every_http_port_answers_through_attacks() {
    let _ = wirespeed::sys::process::raise_nofile_limit();
    let bin = binary();
    let (sport, mport, rport) = (free_port(), free_port(), free_port());
    let mut srv = Proc::spawn(
        &bin,
        &[
            "-s",
            "-p",
            &sport.to_string(),
            "--metrics",
            &format!("127.0.0.1:{mport}"),
            "--rpm-listen",
            &format!("127.0.0.1:{rport}"),
        ],
    );
    let uport = free_port();
    let ui = Proc::spawn(
        &bin,
        &[
            "ui",
            "--listen",
            &format!("127.0.0.1:{uport}"),
            "--token",
            TOKEN,
            "--db",
            ":memory:",
        ],
    );
    let eport = free_port();
    let exporter = Proc::spawn(&bin, &["exporter", "--listen", &format!("127.0.0.1:{eport}")]);
    for p in [sport, mport, rport, uport, eport] {
        wait_listening(p);
    }
    let iperf = || {
        let r = run(
            &bin,
            &["-c", "127.0.0.1", "-p", &sport.to_string(), "-t", "1"],
            Duration::from_secs(30),
        );
        (r.code == Some(0))
            .then_some(())
            .ok_or(format!("{}{}", r.stdout, r.stderr))
    };
    iperf().expect("an iperf test before any attack");
    let ui_path: &'static str = Box::leak(format!("/api/runs?token={TOKEN}").into_boxed_str());
    let ports = [
        Port {
            name: "ui",
            port: uport,
            pid: ui.pid(),
            tls: false,
            path: ui_path,
        },
        Port {
            name: "exporter",
            port: eport,
            pid: exporter.pid(),
            tls: false,
            path: "/metrics",
        },
        Port {
            name: "metrics",
            port: mport,
            pid: srv.pid(),
            tls: false,
            path: "/metrics",
        },
        Port {
            name: "rpm",
            port: rport,
            pid: srv.pid(),
            tls: true,
            path: "/small",
        },
    ];
    type Attack = fn(&Port, &AtomicBool);
    let attacks: [(&str, Attack); 4] = [
        ("trickle", trickle),
        ("idle", idle),
        ("1 MB header", big_header),
        ("bad requests", bad_requests),
    ];
    let mut problems = Vec::new();
    let mut table = String::new();
    for p in &ports {
        // Warm: what a first request opens lazily is open before counting.
        let _ = p.normal();
        let before = fds(p.pid);
        for (what, attack) in &attacks {
            let seen = during(p, |stop| attack(p, stop));
            table.push_str(&format!(
                "{:<9} {:<13} answers {:>3}  median {:>6.1} ms  worst {:>7.1} ms  failed {}\n",
                p.name,
                what,
                seen.times.len(),
                seen.median().as_secs_f64() * 1e3,
                seen.worst().as_secs_f64() * 1e3,
                seen.failures.len()
            ));
            if !seen.failures.is_empty() || seen.times.is_empty() || seen.worst() > ANSWER {
                problems.push(format!(
                    "{} during {what}: worst {:?}, failures {:?}",
                    p.name,
                    seen.worst(),
                    &seen.failures[..seen.failures.len().min(3)]
                ));
            }
            if let Err(e) = iperf() {
                problems.push(format!("{}: an iperf test after {what} failed: {e}", p.name));
            }
            // The descriptors come back (what a test opened closed too).
            let back = wait::within(Duration::from_secs(20), || (fds(p.pid) <= before + 2).then_some(()));
            if back.is_none() {
                problems.push(format!(
                    "{} after {what}: {} descriptors open, {before} before",
                    p.name,
                    fds(p.pid)
                ));
            }
        }
    }
    eprint!("{table}");
    assert!(srv.running(), "the server died: {}", srv.err());
    assert!(problems.is_empty(), "{table}{}", problems.join("\n"));
}
