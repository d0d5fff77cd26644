//! TCP's ECN as the kernel reports it (docs/features.md): our client and
//! server through the path emulator's CE-marking queue, with classic ECN
//! (`net.ipv4.tcp_ecn=1`) set in the namespaces. Negotiated is what
//! TCP_INFO says; a sender's segments acked under ECE are counted when the
//! queue marked, and never called marks; a client that asked and was
//! refused says so once, with no zeros; without ECN nothing is added.
//!
//! Needs root and the example built (`cargo build --release --example
//! pathemu`); skipped with a notice without them, unless
//! WIRESPEED_REQUIRE_PEERS=1.

use crate::common;

use std::time::Duration;

use common::pathemu::{Path, PathSpec};
use common::{json, wirespeed};

/// A bottleneck A-to-B whose queue marks CE (classic ECN sends ECT(0),
/// marked from 1 ms of queue delay up, surely from 10 ms).
const MARKING: &str = "delay=5ms,rate=20M,queue=200,ecn=mark";

/// The TCP packets the emulator marked CE A-to-B.
fn marked(path: &Path) -> u64 {
    let s = path.stats();
    s["a2b"]["tcp"]["ecn"]["marked"].as_u64().unwrap_or(0)
}

/// A client run through `path`: a one-off server in B, the client in A
/// with `args`; the client's stdout.
fn client(path: &Path, args: &[&str]) -> String {
    let ws = wirespeed();
    let mut srv = path.spawn_b(&ws, &["-s", "-1"]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let mut all = vec!["-c", &path.addr_b];
    all.extend_from_slice(args);
    let r = path.run_a(&ws, &all, Duration::from_secs(40));
    assert_eq!(r.code, Some(0), "client failed: {}\n{}", r.stderr, r.stdout);
    srv.wait(Duration::from_secs(10));
    r.stdout
}

/// The lines of `out` holding `ECN:` or the peer's `ECN at the sender`.
fn ecn_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.contains("ECN:") || l.contains("ECN at the sender"))
        .collect()
}

#[test]
fn negotiated_ecn_and_the_acks_under_ece_of_a_marking_path() {
    let spec = PathSpec::new()
        .a2b(MARKING)
        .b2a("delay=5ms")
        .seed(11)
        .realtime_endpoints();
    let Some(path) = Path::start(&spec) else { return };
    path.sysctl("a", "net.ipv4.tcp_ecn", "1");
    path.sysctl("b", "net.ipv4.tcp_ecn", "1");

    // -J: the sender's intervals and end.
    let before = marked(&path);
    let doc = json(&client(&path, &["-J", "-t", "3", "-C", "cubic"]));
    let marks = marked(&path) - before;
    let sender = &doc["end"]["streams"][0]["sender"];
    let e = &sender["tcp_ecn"];
    eprintln!("-J: {e}; the emulator marked {marks}");
    assert_eq!(e["negotiated"], true, "{}", doc["end"]);
    assert!(marks > 0, "the queue marked nothing: {}", path.stats());
    let acked = e["acked_under_ece"].as_u64().unwrap_or_else(|| panic!("no count: {e}"));
    assert!(acked > 0, "{marks} marks, nothing acked under ECE: {e}");
    // No marks claimed: the kernel has none to give.
    assert!(e.get("ce").is_none() && e.get("marks").is_none(), "{e}");
    // The receiver's side is the server's kernel, as it said in the
    // results: negotiated, the data arrived ECT, and no count (a receiver
    // keeps none).
    let r = &doc["end"]["streams"][0]["receiver"]["tcp_ecn"];
    assert_eq!((&r["negotiated"], &r["seen"]), (&true.into(), &true.into()), "{r}");
    assert!(r.get("acked_under_ece").is_none(), "{r}");
    // Every interval's share, and they add up to at most the end's (acks
    // still arrive after the last interval).
    let intervals: Vec<u64> = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let s = &i["streams"][0]["tcp_ecn"];
            assert_eq!(s["negotiated"], true, "{i}");
            s["acked_under_ece"].as_u64().unwrap()
        })
        .collect();
    assert!(intervals.iter().sum::<u64>() <= acked, "{intervals:?} against {acked}");
    assert!(intervals.iter().sum::<u64>() > 0, "{intervals:?}");

    // Text: one line, named for what it is.
    let before = marked(&path);
    let out = client(&path, &["-t", "2", "-C", "cubic"]);
    let marks = marked(&path) - before;
    let lines = ecn_lines(&out);
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].contains("ECN: negotiated, ") && lines[0].contains("acked under ECE"),
        "{out}"
    );
    assert!(lines[0].contains("cannot count CE marks without AccECN"), "{out}");
    eprintln!("text (the emulator marked {marks}):\n{out}");

    // -R: the client receives; its kernel says the data arrived ECT, and
    // counts nothing. The sender's kernel is the server's: our server says
    // what it counted in the results, and the client shows it as the
    // sender's.
    let out = client(&path, &["-t", "1", "-R", "-C", "cubic"]);
    let lines = ecn_lines(&out);
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains("ECN: negotiated, the sender's segments arrived ECT"),
        "{out}"
    );
    assert!(
        lines[1].contains("ECN at the sender (the peer's kernel): negotiated, ")
            && lines[1].contains("acked under ECE"),
        "{out}"
    );
    // The data B-to-A needs the marking queue that way: -R through the
    // same path marks nothing, so -J -R is run on the path turned round.
    path.set("b2a", MARKING);
    path.set("a2b", "rate=unlimited,ecn=off");
    let before = path.stats()["b2a"]["tcp"]["ecn"]["marked"].as_u64().unwrap_or(0);
    let doc = json(&client(&path, &["-J", "-t", "3", "-R", "-C", "cubic"]));
    let marks = path.stats()["b2a"]["tcp"]["ecn"]["marked"].as_u64().unwrap_or(0) - before;
    let st = &doc["end"]["streams"][0];
    eprintln!(
        "-J -R: sender {}; receiver {}; the emulator marked {marks}",
        st["sender"]["tcp_ecn"], st["receiver"]["tcp_ecn"]
    );
    assert!(marks > 0, "the queue marked nothing: {}", path.stats());
    let acked = st["sender"]["tcp_ecn"]["acked_under_ece"].as_u64().unwrap_or(0);
    assert!(acked > 0, "{marks} marks, the server's kernel counted none: {st}");
    assert_eq!(st["receiver"]["tcp_ecn"]["seen"], true, "{st}");
    assert_eq!(
        doc["end"]["sum_sent"]["tcp_ecn"]["acked_under_ece"].as_u64(),
        Some(acked),
        "{}",
        doc["end"]
    );
    path.set("a2b", MARKING);
    path.set("b2a", "rate=unlimited,queue=1000,ecn=off");

    // The iperf 2 dialect prints the same line.
    let ws = wirespeed();
    let mut srv = path.spawn_b(&ws, &["--iperf2", "-s"]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let r = path.run_a(
        &ws,
        &["--iperf2", "-c", &path.addr_b, "-t", "2", "-Z", "cubic"],
        Duration::from_secs(30),
    );
    srv.signal(libc::SIGTERM);
    srv.wait(Duration::from_secs(10));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, r.stdout);
    let lines = ecn_lines(&r.stdout);
    assert_eq!(lines.len(), 1, "{}", r.stdout);
    assert!(lines[0].contains("acked under ECE"), "{}", r.stdout);
}

#[test]
fn ecn_asked_and_refused_is_said_once_without_zeros() {
    let spec = PathSpec::new()
        .a2b(MARKING)
        .b2a("delay=5ms")
        .seed(12)
        .realtime_endpoints();
    let Some(path) = Path::start(&spec) else { return };

    // Neither end asks (2, the default, only answers): nothing added.
    let out = client(&path, &["-t", "1"]);
    assert!(ecn_lines(&out).is_empty(), "{out}");
    let doc = client(&path, &["-J", "-t", "1"]);
    assert!(!doc.contains("tcp_ecn"), "{doc}");

    // The client asks, the server refuses (0).
    path.sysctl("a", "net.ipv4.tcp_ecn", "1");
    path.sysctl("b", "net.ipv4.tcp_ecn", "0");
    let out = client(&path, &["-t", "2", "-C", "cubic"]);
    let lines = ecn_lines(&out);
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains("not negotiated"), "{out}");
    assert!(!lines[0].contains(" 0 "), "{out}");
    let doc = json(&client(&path, &["-J", "-t", "2", "-C", "cubic"]));
    let e = &doc["end"]["streams"][0]["sender"]["tcp_ecn"];
    assert_eq!(e["negotiated"], false, "{e}");
    assert!(e.get("acked_under_ece").is_none(), "a count where none is kept: {e}");
    for i in doc["intervals"].as_array().unwrap() {
        let s = &i["streams"][0]["tcp_ecn"];
        assert!(s.get("acked_under_ece").is_none(), "{i}");
    }
}
