//! The RPM server (`--rpm-listen`) against hostile clients: thousands of
//! idle TLS connections, requests trickled a byte at a time over HTTP/1.1
//! and HTTP/2, malformed HTTP/2 frames, an upload that never ends. The
//! server stays up, small, and answers a normal request afterwards, and
//! the iperf port serves a test meanwhile.
#![cfg(feature = "rpm-server")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use crate::common::*;

pub(crate) type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A TLS 1.3 connection to 127.0.0.1:`port` offering `alpn`, its
/// handshake done (within 10 s), or why not.
pub(crate) fn tls(port: u16, alpn: &[u8]) -> std::io::Result<Tls> {
    let provider = wirespeed_tls::provider();
    let mut cfg = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(wirespeed_tls::AnyCertificate::new(provider))
        .with_no_client_auth();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    let conn = ClientConnection::new(Arc::new(cfg), ServerName::try_from("localhost").unwrap()).unwrap();
    let tcp = TcpStream::connect(("127.0.0.1", port))?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    tcp.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut s = StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// Reads until the server closes (or `limit` passes): how long it took,
/// and what came.
fn until_closed(s: &mut Tls, limit: Duration) -> (Duration, Vec<u8>) {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while start.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (start.elapsed(), got)
}

/// `GET /small` over HTTP/1.1 on a new connection: the status line.
fn get_small(port: u16) -> String {
    let mut s = tls(port, b"http/1.1").expect("a TLS connection");
    s.write_all(b"GET /small HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (_, got) = until_closed(&mut s, Duration::from_secs(10));
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The HTTP/2 connection preface and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Resident memory of `pid`, KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

#[test]
fn the_rpm_port_survives_hostile_clients_while_the_iperf_port_serves() {
    let port = free_port();
    let rpm = free_port();
    let listen = format!("127.0.0.1:{rpm}");
    let mut srv = wirespeed_server(port, &["--rpm-listen", &listen]);
    wait_listening(rpm);
    assert_eq!(get_small(rpm), "HTTP/1.1 200 OK");

    // Trickled requests, running beside the rest: HTTP/1.1 must send its
    // head within 10 s; HTTP/2 must make progress within 10 s.
    let trickle = |alpn: &'static [u8], start: &'static [u8]| {
        std::thread::spawn(move || {
            let mut s = tls(rpm, alpn).expect("a TLS connection");
            s.write_all(start).unwrap();
            s.flush().unwrap();
            s.sock.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            let t0 = Instant::now();
            let mut buf = [0u8; 4096];
            while t0.elapsed() < Duration::from_secs(60) {
                if s.write_all(b"x").and_then(|()| s.flush()).is_err() {
                    break;
                }
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Err(e)
                        if e.kind() != std::io::ErrorKind::WouldBlock && e.kind() != std::io::ErrorKind::TimedOut =>
                    {
                        break;
                    }
                    _ => {}
                }
            }
            t0.elapsed()
        })
    };
    let slow_h1 = trickle(b"http/1.1", b"GET /small HTTP/1.1\r\nX-Slow: ");
    // The preface, then a HEADERS frame's 9-byte header promising 16 KiB
    // of header block that comes a byte a second.
    let slow_h2 = trickle(
        b"h2",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x40\x00\x01\x04\x00\x00\x00\x01",
    );

    // Malformed HTTP/2: a frame longer than the 16 KiB the server allows,
    // a HEADERS frame on stream 0, a header block that is no HPACK. Each
    // connection is closed (after a GOAWAY), the server goes on.
    for junk in [
        &b"\x00\xff\xff\x00\x00\x00\x00\x00\x01"[..],
        &b"\x00\x00\x01\x01\x05\x00\x00\x00\x00\x82"[..],
        &b"\x00\x00\x04\x01\x05\x00\x00\x00\x01\xff\xff\xff\xff"[..],
    ] {
        let mut s = tls(rpm, b"h2").expect("a TLS connection");
        let mut bytes = PREFACE.to_vec();
        bytes.extend_from_slice(junk);
        s.write_all(&bytes).unwrap();
        let (took, got) = until_closed(&mut s, Duration::from_secs(15));
        assert!(took < Duration::from_secs(12), "{junk:?}: open after {took:?}");
        // A GOAWAY frame (type 7) came before the close.
        assert!(got.windows(2).any(|w| w[1] == 7 && w[0] >= 8), "{junk:?}: {got:?}");
    }

    // An upload that never ends (HTTP/1.1, a terabyte announced): read
    // and dropped as it comes, the server stays small.
    let before = rss_kib(srv.pid());
    {
        let mut s = tls(rpm, b"http/1.1").expect("a TLS connection");
        s.write_all(b"POST /slurp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000000000\r\n\r\n")
            .unwrap();
        let block = vec![0u8; 1 << 16];
        let t0 = Instant::now();
        let mut sent = 0u64;
        while t0.elapsed() < Duration::from_secs(3) {
            s.write_all(&block).unwrap();
            sent += block.len() as u64;
        }
        assert!(sent > 100 << 20, "only {sent} bytes went in 3 s");
        let grew = rss_kib(srv.pid()).saturating_sub(before);
        assert!(
            grew < 64 << 10,
            "the server grew by {grew} KiB while {sent} bytes were uploaded"
        );
    }

    // Two thousand idle TLS connections: the first 1024 are served, the
    // next 16 answered 429 with Retry-After, the rest closed at once.
    let mut held = Vec::new();
    let mut refused = 0;
    let opening = Instant::now();
    for _ in 0..2000 {
        match tls(rpm, b"http/1.1") {
            Ok(s) => held.push(s),
            Err(_) => refused += 1,
        }
    }
    // (Exact only if they were all open before the first could pass its
    // 10 idle seconds and free its place.)
    let most = if opening.elapsed() < Duration::from_secs(9) {
        1040
    } else {
        2000
    };
    assert!(
        (1024..=most).contains(&held.len()) && refused > 0,
        "{} TLS connections held, {refused} refused, in {:?}",
        held.len(),
        opening.elapsed()
    );
    let rss = rss_kib(srv.pid());
    assert!(rss < 256 << 10, "{} connections take {rss} KiB", held.len());
    let mut busy = held.pop().unwrap();
    busy.write_all(b"GET /small HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let (_, got) = until_closed(&mut busy, Duration::from_secs(10));
    let answer = String::from_utf8_lossy(&got);
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("retry-after: 5"), "{answer}");
    // The iperf port serves a test meanwhile.
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    drop(held);

    let h1 = slow_h1.join().unwrap();
    assert!(
        h1 >= Duration::from_secs(8) && h1 < Duration::from_secs(20),
        "a trickled HTTP/1.1 head was cut after {h1:?}"
    );
    let h2 = slow_h2.join().unwrap();
    assert!(
        h2 >= Duration::from_secs(8) && h2 < Duration::from_secs(20),
        "a trickled HTTP/2 request was cut after {h2:?}"
    );
    // Everything is back: a new request is answered, the server runs.
    wait::text(
        "a request answered again",
        wait::LONG,
        || get_small(rpm),
        |s| s == "HTTP/1.1 200 OK",
    );
    assert!(srv.running(), "{}", srv.err());
}
