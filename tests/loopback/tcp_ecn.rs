//! TCP's ECN report stays out of the way where ECN is not in play: a
//! plain TCP test on this host (whose `net.ipv4.tcp_ecn` is the default,
//! answering only) writes no `tcp_ecn` key and no ECN line, in either
//! dialect's text, `-J` or `--json-stream`. `tests/paths/tcp_ecn.rs` has
//! the path emulator's marking queue; here two namespaces that ask for ECN
//! (made and removed by the tests, skipped without root) carry the
//! sending server's view to a `-R` client and the sums of `-P 2`.

use crate::common;

use std::time::Duration;

use common::netns;
use common::*;

#[test]
fn a_plain_tcp_test_has_no_tcp_ecn_key_or_line() {
    let asks = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_ecn").is_ok_and(|v| v.trim() == "1");
    if asks {
        eprintln!("NOTICE: this host asks for ECN (net.ipv4.tcp_ecn=1); loopback connections negotiate it; skipping");
        return;
    }
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    for args in [
        &["-t", "1", "-i", "0.5"][..],
        &["-t", "1", "-J"],
        &["-t", "1", "-R", "-J"],
        &["-t", "1", "--json-stream"],
    ] {
        let mut all = vec!["-c", "127.0.0.1", "-p", &p];
        all.extend_from_slice(args);
        let r = run(&wirespeed(), &all, Duration::from_secs(30));
        assert_eq!(r.code, Some(0), "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("receiver"), "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("tcp_ecn"), "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("ECN"), "{args:?}: {}", r.stdout);
    }
    let r = run(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "1", "-e"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("ECN"), "{}", r.stdout);
    let out = stop_server(srv);
    assert!(!out.contains("ECN"), "{out}");
}

/// Two namespaces joined by a veth pair, both asking for classic ECN
/// (`net.ipv4.tcp_ecn=1`), so every connection between them negotiates
/// it. Nothing on the way marks CE (this kernel has no marking qdisc;
/// `tests/paths/tcp_ecn.rs` has the emulator's marking queue), so the
/// counts are the kernel's zeros: what matters here is where they go.
fn ecn_pair() -> Option<netns::NetnsPair> {
    let path = netns::NetnsPair::new()?;
    for ns in [&path.a, &path.b] {
        let ok = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "sysctl net.ipv4.tcp_ecn=1 in {ns} failed");
    }
    Some(path)
}

/// A client in `a` with `args` against `server` (a wirespeed or iperf3
/// server already listening in `b` on `port`): its stdout.
fn client_in(path: &netns::NetnsPair, prog: &std::path::Path, port: &str, args: &[&str]) -> String {
    let mut all = vec!["-c", &path.addr_b, "-p", port];
    all.extend_from_slice(args);
    let mut c = netns::NetnsPair::spawn(&path.a, prog, &all);
    let st = c.wait(Duration::from_secs(40)).expect("the client ends");
    assert_eq!(st.code(), Some(0), "{all:?}: {}{}", c.out(), c.err());
    c.out()
}

/// In `-R` the sender's kernel is the server's: a wirespeed server says
/// what it counted in the results, and the client shows it on the
/// sender's side, per stream and added up over `-P 2`, beside its own
/// (the receiver's) view; the sums carry the streams' totals.
#[test]
fn the_sending_servers_view_reaches_the_client_and_the_sums() {
    let Some(path) = ecn_pair() else { return };
    let ws = wirespeed();
    let port = free_port().to_string();
    let srv = netns::NetnsPair::spawn(&path.b, &ws, &["-s", "-p", &port]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));

    let doc = json(&client_in(
        &path,
        &ws,
        &port,
        &["-R", "-P", "2", "-t", "2", "-J", "-C", "cubic"],
    ));
    let end = &doc["end"];
    let mut total = 0;
    for st in end["streams"].as_array().unwrap() {
        let snd = &st["sender"]["tcp_ecn"];
        assert_eq!(snd["negotiated"], true, "the server's view: {st}");
        total += snd["acked_under_ece"]
            .as_u64()
            .unwrap_or_else(|| panic!("no count: {st}"));
        let rcv = &st["receiver"]["tcp_ecn"];
        assert_eq!(rcv["negotiated"], true, "the client's own view: {st}");
        assert!(rcv.get("acked_under_ece").is_none(), "a receiver counts none: {st}");
    }
    let sent = &end["sum_sent"]["tcp_ecn"];
    assert_eq!(
        (sent["streams"].as_u64(), sent["negotiated_streams"].as_u64()),
        (Some(2), Some(2)),
        "{end}"
    );
    assert_eq!(sent["acked_under_ece"].as_u64(), Some(total), "{end}");
    let received = &end["sum_received"]["tcp_ecn"];
    assert_eq!(received["negotiated_streams"].as_u64(), Some(2), "{end}");
    assert!(received.get("acked_under_ece").is_none(), "{end}");

    // Text: the server's line per stream and the sums.
    let out = client_in(&path, &ws, &port, &["-R", "-P", "2", "-t", "2", "-C", "cubic"]);
    let peer: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("ECN at the sender (the peer's kernel): negotiated, "))
        .collect();
    assert_eq!(peer.len(), 2, "{out}");
    assert!(peer.iter().all(|l| l.contains("acked under ECE")), "{out}");
    let sums: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("[SUM] ECN: negotiated on 2 of 2 streams"))
        .collect();
    assert_eq!(sums.len(), 2, "{out}");
    assert!(
        sums[0].contains("acked under ECE") && sums[1].contains("arrived ECT on"),
        "{out}"
    );
    assert!(!out.contains("not known"), "{out}");

    // Forward: the client's own sender view, summed in each interval too.
    let doc = json(&client_in(&path, &ws, &port, &["-P", "2", "-t", "1", "-J"]));
    for iv in doc["intervals"].as_array().unwrap() {
        let s = &iv["sum"]["tcp_ecn"];
        assert_eq!(s["streams"].as_u64(), Some(2), "{iv}");
        assert!(s["acked_under_ece"].as_u64().is_some(), "{iv}");
    }
    assert_eq!(
        doc["end"]["sum_sent"]["tcp_ecn"]["negotiated_streams"].as_u64(),
        Some(2)
    );
    drop(srv);
}

/// A real iperf3 server sends no view of its kernel: in `-R` the client
/// claims nothing for the sender and says so once.
#[test]
fn an_iperf3_sender_says_nothing_and_that_is_said_once() {
    let Some(iperf3) = peer("iperf3") else { return };
    let Some(path) = ecn_pair() else { return };
    let port = free_port().to_string();
    let srv = netns::NetnsPair::spawn(&path.b, &iperf3, &["-s", "-p", &port, "--forceflush"]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let out = client_in(&path, &wirespeed(), &port, &["-R", "-P", "2", "-t", "1"]);
    assert_eq!(out.matches("ECN at the sender: not known").count(), 1, "{out}");
    assert!(!out.contains("peer's kernel"), "{out}");
    assert!(!out.contains("acked under ECE"), "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("ECN: negotiated, the sender's segments arrived ECT"))
            .count(),
        2,
        "{out}"
    );
    drop(srv);
}
