//! iperf3 over QUIC (`-q`) across the path emulator: a long (200 ms
//! round trip), lossy (1 % each way) path, each report held against the
//! path's own ground truth — the totals exact, QUIC's loss count against
//! the emulator's drops of UDP, QUIC's RTT against the path's delay.
//!
//! Needs root and the example built (`cargo build --release --example
//! pathemu`); skipped with a notice otherwise (see common::pathemu).

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::pathemu::{Path, PathSpec, count};
use common::{json, wirespeed};
use serde_json::Value;

/// 200 ms round trip, 100 Mbit/s, a 2000-packet queue, 1 % random loss
/// each way.
const LONG_LOSSY: &str = "delay=100ms,rate=100M,queue=2000,loss=1%";

/// What the emulator dropped of UDP going `dir`, whatever the fate (the
/// test's only UDP is its QUIC connection: control is TCP).
fn udp_drops(stats: &Value, dir: &str) -> u64 {
    ["loss", "queue", "outage", "limit"]
        .iter()
        .map(|f| count(stats, dir, "udp", f))
        .sum()
}

/// What the emulator carried of UDP going `dir` (read from its device).
fn udp_in(stats: &Value, dir: &str) -> u64 {
    count(stats, dir, "udp", "in")
}

/// `wirespeed -s -1` in B, `wirespeed -c B -q -J args` in A: the client's
/// exit code, its document, its wall time, and what the server printed.
fn quic_test(p: &Path, args: &[&str]) -> (Option<i32>, Value, Duration, String) {
    let ws = wirespeed();
    let mut srv = p.spawn_b(&ws, &["-s", "-1"]);
    assert!(
        srv.wait_for_line("Server listening", Duration::from_secs(10)),
        "server did not start: {}",
        srv.err()
    );
    let mut cargs = vec!["-c", &p.addr_b, "-q", "-J"];
    cargs.extend_from_slice(args);
    let t0 = Instant::now();
    let r = p.run_a(&PathBuf::from(&ws), &cargs, Duration::from_secs(120));
    let wall = t0.elapsed();
    let _ = srv.wait(Duration::from_secs(20));
    (r.code, json(&r.stdout), wall, srv.out() + &srv.err() + &r.stderr)
}

/// Runs `-q args` across `p` and holds the report to the path: exact
/// totals, `streams` streams, QUIC's loss against the path's drops, its
/// RTT against the path's delay; `limit` bounds the client's wall time.
/// Its document, how many of the client's packets the path dropped, and
/// how many QUIC declared lost.
fn check(p: &Path, args: &[&str], streams: usize, limit: Duration) -> (Value, u64, u64) {
    let what = format!("-q {}", args.join(" "));
    let before = p.stats();
    let (code, doc, wall, server) = quic_test(p, args);
    let after = p.stats();
    assert_eq!(code, Some(0), "{what}: {doc}\nserver: {server}");
    assert_eq!(doc["start"]["test_start"]["protocol"], "QUIC", "{what}: {doc}");
    let end = &doc["end"];
    let sent = end["sum_sent"]["bytes"].as_u64().unwrap_or(0);
    assert!(sent > 0, "{what}: nothing sent: {end}");
    assert_eq!(
        end["sum_sent"]["bytes"], end["sum_received"]["bytes"],
        "{what}: the receiver's total is not the sender's: {end}"
    );
    // Setup (a TCP and a QUIC handshake, some round trips each), the
    // test, its end (the last bytes and their repairs cross the path),
    // the results. Not a hang; a loaded machine is not a failure.
    assert!(wall < limit, "{what} took {wall:?}");
    let ss = end["streams"].as_array().unwrap();
    assert_eq!(ss.len(), streams, "{what}: {end}");
    for s in ss {
        assert_eq!(s["sender"]["bytes"], s["receiver"]["bytes"], "{what}: {s}");
    }
    // The client's own view of its connection (the same on every
    // stream: they share it). It counts the packets the client sent:
    // A to B.
    let q = &ss[0]["quic"];
    let lost = q["lost_packets"].as_u64().unwrap();
    let qsent = q["sent_packets"].as_u64().unwrap();
    let dir = "a2b";
    let dropped = udp_drops(&after, dir) - udp_drops(&before, dir);
    let carried = udp_in(&after, dir) - udp_in(&before, dir);
    let ctx = format!("{what}: QUIC {q}; path {dir}: {dropped} of {carried} UDP packets dropped");
    eprintln!("{ctx}");
    // Every packet the client sent crossed the emulator (within the
    // few in flight when the stats were read).
    assert!(qsent <= carried + 50, "{ctx}");
    // The bound: QUIC declares lost what the path dropped, less what it
    // never learned about (the connection's last packets, lost MTU
    // probes, which quinn counts apart, a dropped ACK-only packet that
    // is never acknowledged-around), plus spurious losses (a packet
    // merely late past 9/8 RTT or 3 packets behind; this path neither
    // reorders nor, at a 1 % loss rate, fills its queue, so few).
    // So: at least half the drops (less two: a test's last packets, its
    // final ACKs and close, never get a verdict), and not more than the
    // drops plus a small allowance. Seen on this path: 10 of 10, 3 of 3,
    // 5 of 6, 23 of 23; tighter would assert more than is measured.
    assert!(2 * lost + 4 >= dropped, "{ctx}");
    assert!(lost <= dropped + dropped / 2 + 10, "{ctx}");
    // The round trip: the path's 200 ms, plus what waits in the queue
    // and the receiver's ACK delay. The minimum sees the empty path.
    let min_rtt = q["min_rtt_us"].as_u64().unwrap();
    let rtt = q["rtt_us"].as_u64().unwrap();
    assert!((200_000..260_000).contains(&min_rtt), "{ctx}");
    assert!((200_000..700_000).contains(&rtt), "{ctx}");
    assert!(rtt >= min_rtt, "{ctx}");
    (doc, dropped, lost)
}

/// Byte budgets (`-n`) small enough to cross in the client's 30 s wait
/// for the results (see the ignored test below for why that matters): a
/// 1 % loss on 200 ms holds QUIC's window to tens of KB (seen: about
/// 0.85 Mbit/s), as it holds TCP's.
#[test]
fn quic_budgets_across_a_long_lossy_path_are_exact_and_count_its_loss_and_delay() {
    let _t = common::path_turn();
    let Some(p) = Path::start(&PathSpec::new().both(LONG_LOSSY).lifetime(400)) else {
        return;
    };
    let (mut dropped, mut lost) = (0, 0);
    // 1 MiB: some 5-15 s each. The bound is for a hang, generous for a
    // loaded machine.
    for (args, streams) in [
        (&["-n", "1M"][..], 1usize),
        (&["-n", "1M", "-R"], 1),
        (&["-n", "1M", "-P", "4"], 4),
    ] {
        let (_, d, l) = check(&p, args, streams, Duration::from_secs(90));
        (dropped, lost) = (dropped + d, lost + l);
    }
    // Some 1,900 packets from the client in all: a 1 % path dropped some
    // (one run alone may lose none: -R's client sent 365, mostly ACKs).
    // and QUIC saw them.
    assert!(dropped > 0, "the path dropped none of the client's packets");
    assert!(lost > 0, "QUIC saw none of the {dropped} drops");
}

/// What the iperf3 tests ask of every path: a timed test ends about on
/// time, and a sender reports no more than the path carried. `-q` does
/// neither on this path; ignored until fixed (run with `--ignored`).
///
/// A sender counts bytes as sent when quinn buffers them, and quinn's
/// buffer is a fixed 8 MiB (SEND_WINDOW, crates/quic/src/iperf3.rs), not
/// held near the connection's window as a TCP socket's buffer is. Seen
/// 2026-11-28 on this path: `-q -t 4` counted 8 MiB sent in its first
/// second ("67 Mbit/s" through a path that carried 0.9 Mbit/s), then the
/// client waited 30 s for the results while quinn drained the buffer, and
/// gave up (exit 1, "the server did not answer for 30 s after the test's
/// end"); `-q -n 4M` "sent" its 4 MiB in 3 ms (10.6 Gbit/s) and ended the
/// same way, the server having received 3.06 MB in 30.3 s.
#[test]
#[ignore = "-q on a slow path: senders count quinn's 8 MiB buffer as sent (see the comment)"]
fn quic_timed_tests_across_a_long_lossy_path_end_in_time_and_report_the_paths_rate() {
    let _t = common::path_turn();
    let Some(p) = Path::start(&PathSpec::new().both(LONG_LOSSY).lifetime(400)) else {
        return;
    };
    for (args, streams) in [
        (&["-t", "4"][..], 1usize),
        (&["-t", "4", "-R"], 1),
        (&["-t", "4", "-P", "4"], 4),
        (&["-n", "4M"], 1),
    ] {
        let (doc, _, _) = check(&p, args, streams, Duration::from_secs(4 + 30));
        for i in doc["intervals"].as_array().unwrap() {
            let bps = i["sum"]["bits_per_second"].as_f64().unwrap();
            assert!(
                bps < 100e6,
                "{args:?}: an interval at {bps} bit/s through 100 Mbit/s: {i}"
            );
        }
        let bps = doc["end"]["sum_sent"]["bits_per_second"].as_f64().unwrap();
        assert!(bps < 100e6, "{args:?}: sent at {bps} bit/s through 100 Mbit/s");
    }
}
