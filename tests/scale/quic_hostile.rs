//! The QUIC perf server (`--quic-perf-listen`) against hostile clients:
//! garbage datagrams, handshakes that never finish (a client whose answers
//! never reach the server, through a one-way relay the test runs), a client
//! opening thousands of streams, and one holding every stream it may open
//! with an endless request it never reads. The server stays up and small,
//! its limits hold, and afterwards a real perf client and an iperf test
//! are served as ever. A quinn client in the test.
#![cfg(feature = "quic-perf")]

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::common::*;

/// The server's limits (crates/quic/src/server.rs, docs/limits.md).
const MAX_CONNECTIONS: u64 = 64;
const MAX_STREAMS: usize = 128;

/// A quinn client endpoint speaking perf, with a short idle timeout.
fn endpoint() -> quinn::Endpoint {
    let p = wirespeed_tls::provider();
    let mut tls = rustls::ClientConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(wirespeed_tls::AnyCertificate::new(p))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"perf".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(Duration::from_secs(30).try_into().unwrap()));
    cfg.transport_config(Arc::new(t));
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(cfg);
    ep
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn metric(port: u16, name: &str) -> u64 {
    let (_, text) = http_get(port, "/metrics", &[]);
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Random bytes (xorshift), the same every run.
fn noise(seed: &mut u64, out: &mut [u8]) {
    for b in out {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *b = *seed as u8;
    }
}

/// A relay on 127.0.0.1 that passes what clients send on to `server` and
/// drops every answer: each client's handshake starts on the server and
/// never finishes. Stops when `stop` is set.
fn one_way_relay(server: SocketAddr, stop: Arc<AtomicBool>) -> (SocketAddr, std::thread::JoinHandle<u64>) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let at = s.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        let mut passed = 0;
        while !stop.load(Relaxed) {
            if let Ok((n, from)) = s.recv_from(&mut buf)
                && from != server
            {
                let _ = s.send_to(&buf[..n], server);
                passed += 1;
            }
        }
        passed
    });
    (at, t)
}

#[test]
fn quic_perf_server_survives_hostile_clients() {
    let (port, quic, metrics) = (free_port(), free_port(), free_port());
    let listen = format!("127.0.0.1:{quic}");
    let m = format!("127.0.0.1:{metrics}");
    let srv = wirespeed_server(port, &["--quic-perf-listen", &listen, "--metrics", &m]);
    wait::udp_listening(quic, wait::LONG);
    let server: SocketAddr = listen.parse().unwrap();
    let rss_before = rss_kib(srv.pid());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // Garbage: 20,000 datagrams of noise, some dressed as QUIC v1 long
    // headers (Initial, Handshake) of every size up to 64 KiB.
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 65_000];
    for i in 0..20_000usize {
        let len = [1, 7, 40, 1200, 1252, 1500, 9000, 65_000][i % 8];
        noise(&mut seed, &mut buf[..len]);
        if i % 3 == 0 && len >= 5 {
            buf[0] = 0xc0 | (buf[0] & 0x3f);
            buf[1..5].copy_from_slice(&1u32.to_be_bytes());
        }
        let _ = junk.send_to(&buf[..len], server);
    }

    // Handshakes that never finish: 200 clients through the one-way relay,
    // more than the server holds at once.
    let stop = Arc::new(AtomicBool::new(false));
    let (relay, relay_thread) = one_way_relay(server, stop.clone());
    let half_open = rt.block_on(async {
        let ep = endpoint();
        let mut pending = Vec::new();
        for _ in 0..200 {
            pending.push(ep.connect(relay, "localhost").unwrap());
        }
        // Let the Initials (and their retransmissions) reach the server.
        tokio::time::sleep(Duration::from_secs(3)).await;
        (ep, pending)
    });
    let open = metric(metrics, "wirespeed_quic_perf_open_connections");
    assert!(open <= MAX_CONNECTIONS, "{open} connections open at once");
    assert!(open > 0, "no half-open connection held");
    assert!(
        metric(metrics, "wirespeed_quic_perf_refused_total") > 0,
        "none refused past the limit"
    );
    // Meanwhile the iperf port serves.
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    // The handshake deadline frees every place.
    wait::condition("the half-open connections to time out", Duration::from_secs(30), || {
        metric(metrics, "wirespeed_quic_perf_open_connections") == 0
    });
    assert!(metric(metrics, "wirespeed_quic_perf_handshake_failures_total") >= open);
    assert_eq!(metric(metrics, "wirespeed_quic_perf_connections_total"), 0);
    stop.store(true, Relaxed);
    assert!(relay_thread.join().unwrap() > 0);
    drop(half_open);

    // Thousands of streams on one connection, each asking for one byte
    // back and never reading it; then every stream the server allows held
    // with an endless request that is never read.
    rt.block_on(async {
        let ep = endpoint();
        let conn = ep.connect(server, "localhost").unwrap().await.unwrap();
        let started = Instant::now();
        for _ in 0..3000 {
            let (mut send, recv) = conn.open_bi().await.unwrap();
            send.write_all(&1u64.to_be_bytes()).await.unwrap();
            send.finish().unwrap();
            drop(recv);
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
        let mut held = Vec::new();
        loop {
            match tokio::time::timeout(Duration::from_secs(2), conn.open_bi()).await {
                Ok(Ok((mut send, recv))) => {
                    send.write_all(&u64::MAX.to_be_bytes()).await.unwrap();
                    send.finish().unwrap();
                    held.push((send, recv));
                    assert!(held.len() <= MAX_STREAMS + 1, "more streams than the server allows");
                }
                Ok(Err(e)) => panic!("{e}"),
                // No more credit: the server's limit holds.
                Err(_) => break,
            }
        }
        assert!(held.len() >= MAX_STREAMS / 2, "only {} streams", held.len());
        conn.close(0u32.into(), b"bye");
        ep.wait_idle().await;
    });
    // Each served to its end, or cut where the client's STOP_SENDING
    // overtook the byte it asked for.
    wait::condition("the streams to be counted", Duration::from_secs(20), || {
        metric(metrics, "wirespeed_quic_perf_streams_total") + metric(metrics, "wirespeed_quic_perf_streams_cut_total")
            >= 3000
    });

    // Small, alive, and serving both ports.
    let grown = rss_kib(srv.pid()).saturating_sub(rss_before);
    assert!(grown < 200 * 1024, "the server grew by {grown} KiB");
    let r = run(
        &wirespeed(),
        &["--quic-perf", &listen, "-n", "5M", "-J"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(json(&r.stdout)["end"]["sum_received"]["bytes"], 5 << 20, "{}", r.stdout);
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
}
