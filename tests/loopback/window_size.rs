//! `-w` as the receiver offers it: a server whose reader is stopped fills
//! its receive queue up to the window the connection was given, so the
//! queue's length (from /proc/net/tcp) is the window, whatever the path.
//! A small window must be in the handshake (set on an accepted socket, the
//! first 64 KiB the SYN-ACK offered overflow its buffer and the test
//! crawls), and a large one must be honoured too.

use crate::common;

use std::time::Duration;

use common::{Iperf2, Proc, json, peer, wait, wirespeed, wirespeed_server};

/// The largest receive queue of an established TCP socket on local `port`.
fn receive_queue(port: u16) -> u64 {
    let hex = format!(":{port:04X}");
    let mut most = 0;
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let table = std::fs::read_to_string(f).unwrap_or_default();
        for l in table.lines().skip(1) {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // local address, state 01 = ESTABLISHED, tx_queue:rx_queue.
            if cols.len() > 4 && cols[1].ends_with(&hex) && cols[3] == "01" {
                let rx = cols[4].split(':').nth(1).unwrap_or("0");
                most = most.max(u64::from_str_radix(rx, 16).unwrap_or(0));
            }
        }
    }
    most
}

/// Whether the sender of a data stream to local `port` has a full window
/// in front of it: its zero-window probe timer runs (timer 4 in
/// /proc/net/tcp, `persist` in `ss -o`).
fn sender_window_full(port: u16) -> bool {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        let table = std::fs::read_to_string(f).unwrap_or_default();
        table.lines().skip(1).any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // remote address, state 01 = ESTABLISHED, tr:tm->when.
            cols.len() > 5 && cols[2].ends_with(&hex) && cols[3] == "01" && cols[5].starts_with("04:")
        })
    })
}

/// Runs `client` against `server` (listening on `port`); once the test
/// runs (the server's first interval), stops the server's reader until the
/// client's window is full, and returns what queued meanwhile with the
/// client's output.
fn queue_when_stopped(server: &Proc, port: u16, client: &std::path::Path, args: &[&str]) -> (u64, String) {
    let mut cli = Proc::spawn(&client.to_path_buf(), args);
    wait::stdout_has(server, "0.00-1.", wait::LONG);
    server.signal(19); // SIGSTOP
    wait::condition("the client's window to fill", wait::LONG, || sender_window_full(port));
    let queued = receive_queue(port);
    server.signal(18); // SIGCONT
    let st = cli.wait(Duration::from_secs(40)).expect("client finishes");
    assert_eq!(st.code(), Some(0), "{}{}", cli.out(), cli.err());
    (queued, cli.out())
}

fn received_bps(out: &str) -> f64 {
    json(out)["end"]["sum_received"]["bits_per_second"].as_f64().unwrap()
}

#[test]
fn a_small_window_is_offered_in_the_handshake() {
    let mut clients = vec![wirespeed()];
    clients.extend(peer("iperf3"));
    for client in clients {
        let port = common::free_port();
        let server = wirespeed_server(port, &[]);
        let p = port.to_string();
        let args = ["-c", "127.0.0.1", "-p", &p, "-w", "4K", "-t", "4", "-J"];
        let (queued, out) = queue_when_stopped(&server, port, &client, &args);
        // 4 KiB of window (iperf3's own server queues 4096 here); set after
        // the handshake, the 64 KiB the SYN-ACK offered arrive instead.
        assert!(queued > 0 && queued <= 6 * 1024, "{client:?}: {queued} bytes queued");
        // Before, a 4 KiB window crawled at under 1 Mbit/s on loopback.
        let bps = received_bps(&out);
        assert!(bps > 20e6, "{client:?}: {bps} bit/s");
    }
}

#[test]
fn a_large_window_is_honoured() {
    let port = common::free_port();
    let server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let args = ["-c", "127.0.0.1", "-p", &p, "-w", "4M", "-t", "4", "-J"];
    let (queued, _) = queue_when_stopped(&server, port, &wirespeed(), &args);
    assert!(queued >= 2 << 20, "{queued} bytes queued with -w 4M");
}

#[test]
fn a_small_window_and_a_default_test_share_the_port() {
    // Two tests at once, one with -w 4K: both run at loopback speed (the
    // other's streams are not offered the small window).
    let port = common::free_port();
    let _server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let ws = wirespeed();
    let small: Vec<Proc> = (0..2)
        .map(|_| Proc::spawn(&ws, &["-c", "127.0.0.1", "-p", &p, "-w", "4K", "-t", "3", "-J"]))
        .collect();
    let mut plain = Proc::spawn(&ws, &["-c", "127.0.0.1", "-p", &p, "-P", "4", "-t", "3", "-J"]);
    assert_eq!(
        plain.wait(Duration::from_secs(40)).and_then(|s| s.code()),
        Some(0),
        "{}",
        plain.err()
    );
    assert!(received_bps(&plain.out()) > 1e9, "{}", plain.out());
    for mut s in small {
        assert_eq!(
            s.wait(Duration::from_secs(40)).and_then(|s| s.code()),
            Some(0),
            "{}",
            s.err()
        );
        assert!(received_bps(&s.out()) > 20e6, "{}", s.out());
    }
}

#[test]
fn an_iperf2_connect_back_gets_the_clients_window_in_its_handshake() {
    // -r -w 4K: the server's flow arrives on the client's -L listener,
    // which carries the window (as 2.1.8's does). Set after accept only,
    // that flow crawled for half a minute.
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = common::free_port();
        let Some(_server) = common::iperf2_server(who, port, &[]) else {
            continue;
        };
        let back = common::free_port().to_string();
        let args = format!("-r -L {back} -w 4K -t 2 -f m");
        let t = std::time::Instant::now();
        let ran = common::iperf2_client(Iperf2::Ours, port, &args, Duration::from_secs(40)).unwrap();
        assert_eq!(ran.code, Some(0), "{who:?}: {}{}", ran.stdout, ran.stderr);
        assert!(t.elapsed() < Duration::from_secs(15), "{who:?}: took {:?}", t.elapsed());
        let rates: Vec<f64> = ran
            .stdout
            .lines()
            .filter(|l| l.contains("Mbits/sec"))
            .filter_map(|l| l.split_whitespace().rev().nth(1)?.parse().ok())
            .collect();
        assert_eq!(rates.len(), 2, "{who:?}: {}", ran.stdout);
        assert!(rates.iter().all(|r| *r > 5.0), "{who:?}: {}", ran.stdout);
    }
}
