//! Truth on real paths: wirespeed across the path emulator
//! (`examples/pathemu`, docs/pathemu.md), each report held against the
//! path's own ground truth — its drop counters, its delay, its rate.
//!
//! Two network namespaces joined by a user-space forwarder that delays,
//! queues, drops, reorders and cuts packets; the server runs in B, the
//! client in A. Every test makes and removes its own path. The paths are
//! the ones users measure and loopback cannot show: a long fat path (200 ms,
//! 100 Mbit/s, a deep queue), a long lossy one (600 ms, 0.5–5 % loss), a
//! short lossy, jittery one that reorders (50 ms, 1 % loss, ±4 ms), one
//! that goes down for a while, and one that goes down for good.
//!
//! Needs root and the example built (`cargo test --release` builds it);
//! skipped with a notice otherwise, unless WIRESPEED_REQUIRE_PEERS=1. The
//! tests take turns, two at a time (each loads the CPUs), except the one that waits for
//! a dead path to time out (`PathSpec::mostly_waiting`).

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::pathemu::{Path, PathSpec};
use common::{json, wirespeed};
use serde_json::Value;

/// One busy path test at a time (held from before the path starts until
/// the test's last look at it).
fn turn() -> common::PathTurn {
    common::path_turn()
}

/// 200 ms round trip, 100 Mbit/s, a 2000-packet queue (240 ms of it).
const LONG_FAT: &str = "delay=100ms,rate=100M,queue=2000";
/// 600 ms round trip, 20 Mbit/s, 0.5 % random loss each way.
const LONG_LOSSY: &str = "delay=300ms,rate=20M,queue=2000,loss=0.5%";
/// 50 ms round trip, 1 % loss, ±4 ms jitter (which reorders).
const JITTERY: &str = "delay=25ms,rate=100M,queue=1000,loss=1%,jitter=4ms";

fn path(both: &str) -> Option<Path> {
    Path::start(&PathSpec::new().both(both).lifetime(300))
}

/// A client test against a one-off server, across `path`.
struct Run {
    /// The client's `-J` document.
    doc: Value,
    /// The client's exit code.
    code: Option<i32>,
    /// From starting the client to its exit.
    wall: Duration,
    /// What the server printed.
    server: String,
}

/// `wirespeed -s -1 SERVER` in B, `wirespeed -c B -J CLIENT` in A.
fn ws_test(path: &Path, server: &[&str], client: &[&str]) -> Run {
    ws_test_env(path, &[], server, client)
}

/// As [`ws_test`], with `env` set for both ends.
fn ws_test_env(path: &Path, env: &[&str], server: &[&str], client: &[&str]) -> Run {
    let ws = wirespeed();
    let ws = ws.to_string_lossy();
    let envp = PathBuf::from("/usr/bin/env");
    let mut sargs: Vec<&str> = env.to_vec();
    sargs.extend([&*ws, "-s", "-1"]);
    sargs.extend_from_slice(server);
    let mut srv = path.spawn_b(&envp, &sargs);
    assert!(
        srv.wait_for_line("Server listening", Duration::from_secs(10)),
        "server did not start: {}",
        srv.err()
    );
    let mut cargs: Vec<&str> = env.to_vec();
    cargs.extend([&*ws, "-c", &path.addr_b, "-J"]);
    cargs.extend_from_slice(client);
    let t0 = Instant::now();
    let r = path.run_a(&envp, &cargs, Duration::from_secs(120));
    let wall = t0.elapsed();
    let _ = srv.wait(Duration::from_secs(20));
    let doc = json(&r.stdout);
    Run {
        doc,
        code: r.code,
        wall,
        server: srv.out() + &srv.err(),
    }
}

/// Every stream's receiver counted exactly what its sender sent, and so do
/// the sums (both directions of a `--bidir` test).
fn assert_exact(doc: &Value, what: &str) {
    let end = &doc["end"];
    let streams = end["streams"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no streams: {doc}"));
    assert!(!streams.is_empty(), "{what}: no streams");
    for s in streams {
        let (sent, got) = (&s["sender"]["bytes"], &s["receiver"]["bytes"]);
        assert!(sent.as_u64().is_some_and(|b| b > 0), "{what}: {s}");
        assert_eq!(
            sent, got,
            "{what}: stream {} sent {sent}, received {got}",
            s["sender"]["socket"]
        );
    }
    for (tx, rx) in [
        ("sum_sent", "sum_received"),
        ("sum_sent_bidir_reverse", "sum_received_bidir_reverse"),
    ] {
        if end.get(tx).is_some() {
            assert_eq!(end[tx]["bytes"], end[rx]["bytes"], "{what}: {tx} against {rx}");
        }
    }
}

#[test]
fn tcp_totals_are_exact_across_a_long_fat_path() {
    let _t = turn();
    let Some(p) = path(LONG_FAT) else { return };
    for args in [
        &["-C", "cubic", "-P", "4", "-t", "3"][..],
        &["-C", "cubic", "-P", "4", "-R", "-t", "3"],
        &["-C", "cubic", "-P", "2", "--bidir", "-t", "3"],
        &["-C", "cubic", "-P", "8", "-t", "3"],
    ] {
        let what = args.join(" ");
        let r = ws_test(&p, &[], args);
        assert_eq!(r.code, Some(0), "{what}: {}\nserver: {}", r.doc, r.server);
        assert_exact(&r.doc, &what);
        // Setup (a few round trips), the test, and its end: the last bytes
        // cross the path and its queue, then the results are exchanged.
        // Not a hang; a loaded machine (7.4 s seen) is not a failure either.
        assert!(r.wall < Duration::from_secs(3 + 12), "{what} took {:?}", r.wall);
        // What the sender counts left for the network: its rate is the
        // path's, not a socket buffer's (never more than the bottleneck).
        let sent = r.doc["end"]["sum_sent"]["bits_per_second"].as_f64().unwrap();
        assert!(sent < 100e6, "{what}: sent at {sent} bit/s through 100 Mbit/s");
    }
}

#[test]
fn byte_counts_are_exact_across_a_long_fat_path() {
    let _t = turn();
    let Some(p) = path(LONG_FAT) else { return };
    for args in [
        &["-C", "cubic", "-P", "4", "-n", "8M"][..],
        &["-C", "cubic", "-P", "4", "-n", "8M", "-R"],
        &["-C", "cubic", "-P", "3", "-k", "50"],
    ] {
        let what = args.join(" ");
        let r = ws_test(&p, &[], args);
        assert_eq!(r.code, Some(0), "{what}: {}", r.doc);
        assert_exact(&r.doc, &what);
        let want = if what.contains("-k") { 50 * 128 * 1024 } else { 8 << 20 };
        assert_eq!(r.doc["end"]["sum_received"]["bytes"], want, "{what}");
    }
}

#[test]
fn tcp_totals_are_exact_across_loss_and_reordering() {
    let _t = turn();
    let Some(p) = path(JITTERY) else { return };
    for (env, args) in [
        (&[][..], &["-C", "cubic", "-P", "4", "-t", "3"][..]),
        (&[], &["-C", "cubic", "-P", "4", "-R", "-t", "3"]),
        // Many streams on the multiplexing workers.
        (&["WIRESPEED_MUX=always"], &["-C", "cubic", "-P", "24", "-t", "3"]),
        (&["WIRESPEED_MUX=always"], &["-C", "cubic", "-P", "24", "-R", "-t", "3"]),
    ] {
        let what = format!("{} {}", env.join(" "), args.join(" "));
        let r = ws_test_env(&p, env, &[], args);
        assert_eq!(r.code, Some(0), "{what}: {}", r.doc);
        assert_exact(&r.doc, &what);
        // Not a hang; a loaded machine (7.4 s seen) is not a failure either.
        assert!(r.wall < Duration::from_secs(3 + 12), "{what} took {:?}", r.wall);
    }
}

#[test]
fn a_long_lossy_path_agrees_and_ends_soon_after_its_time() {
    // How soon it ends is the subject: no other path beside it.
    let _t = common::path_turn_alone();
    let Some(p) = path(LONG_LOSSY) else { return };
    for args in [
        &["-C", "cubic", "-t", "4"][..],
        &["-C", "cubic", "-P", "4", "-R", "-t", "4"],
    ] {
        let what = args.join(" ");
        let r = ws_test(&p, &[], args);
        assert_eq!(r.code, Some(0), "{what}: {}", r.doc);
        assert_exact(&r.doc, &what);
        // About four round trips to set up, the test, then at most a few
        // seconds: the last bytes and their losses cross the path (never a
        // socket buffer's backlog), and two round trips of results.
        assert!(r.wall < Duration::from_secs(4 + 9), "{what} took {:?}", r.wall);
        let sent = &r.doc["end"]["sum_sent"];
        let got = &r.doc["end"]["sum_received"];
        let lag = got["seconds"].as_f64().unwrap() - sent["seconds"].as_f64().unwrap();
        assert!(
            lag < 4.0,
            "{what}: the receiver's last byte came {lag:.2} s after the sender's"
        );
    }
}

#[test]
fn the_control_connection_survives_a_long_path_losing_five_percent() {
    let _t = turn();
    let Some(p) = path("delay=300ms,rate=20M,queue=2000,loss=5%") else {
        return;
    };
    let r = ws_test(&p, &[], &["-C", "cubic", "-t", "3"]);
    assert_eq!(r.code, Some(0), "{}", r.doc);
    assert_exact(&r.doc, "-t 3 across 600 ms and 5 % loss");
}

/// What the emulator dropped of `len`-byte UDP datagrams going `dir`.
fn udp_drops(stats: &Value, dir: &str, len: usize) -> u64 {
    let d = &stats[dir]["udp_by_len"][len.to_string()];
    ["loss", "queue", "outage", "limit"]
        .iter()
        .map(|k| d[k].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn udp_loss_is_the_paths_drops_and_reordering_reaches_both_ends() {
    let _t = turn();
    let Some(p) = path(JITTERY) else { return };
    for reverse in [false, true] {
        let before = p.stats();
        let mut args = vec!["-u", "-b", "20M", "-l", "1400", "-t", "3"];
        if reverse {
            args.push("-R");
        }
        let r = ws_test(&p, &[], &args);
        let what = args.join(" ");
        assert_eq!(r.code, Some(0), "{what}: {}", r.doc);
        let after = p.stats();
        let dir = if reverse { "b2a" } else { "a2b" };
        let dropped = udp_drops(&after, dir, 1400) - udp_drops(&before, dir, 1400);
        let u = &r.doc["end"]["streams"][0]["udp"];
        assert!(dropped > 0, "{what}: a 1 % lossy path dropped nothing");
        assert_eq!(
            u["lost_packets"], dropped,
            "{what}: lost against the path's drops ({dropped}): {u}\n{before}\n{after}"
        );
        // ±4 ms of jitter reorders 20 Mbit/s of datagrams (0.56 ms apart):
        // the count reaches the client whichever end received.
        assert!(u["out_of_order"].as_u64().is_some_and(|n| n > 100), "{what}: {u}");
        // Uniform ±J settles the RFC 3550 estimate near 2J/3 = 2.7 ms.
        let jitter = u["jitter_ms"].as_f64().unwrap();
        assert!((1.5..4.5).contains(&jitter), "{what}: jitter {jitter} ms");
    }
}

#[test]
fn an_outage_shorter_than_tcps_timeout_is_ridden_out_and_shown() {
    let _t = turn();
    let Some(p) = path(LONG_FAT) else { return };
    let ws = wirespeed();
    let mut srv = p.spawn_b(&ws, &["-s", "-1"]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let mut cli = p.spawn_a(&ws, &["-c", &p.addr_b, "-C", "cubic", "-t", "8", "-i", "1", "-J"]);
    // The scenario is timed: 3 s of test, a 3 s outage, the rest.
    common::wait::pause(Duration::from_secs(3));
    p.down("both");
    common::wait::pause(Duration::from_secs(3));
    p.up("both");
    let st = cli.wait(Duration::from_secs(60)).expect("the client ends");
    let _ = srv.wait(Duration::from_secs(20));
    assert_eq!(st.code(), Some(0), "{}{}", cli.out(), cli.err());
    let doc = json(&cli.out());
    assert_exact(&doc, "-t 8 with a 3 s outage");
    let bytes: Vec<u64> = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["sum"]["bytes"].as_u64().unwrap())
        .collect();
    // The intervals show the gap: at least two seconds carried nothing,
    // and the path carried data again after it.
    let empty = bytes.iter().filter(|b| **b == 0).count();
    assert!(empty >= 2, "intervals {bytes:?}");
    assert!(bytes.last().is_some_and(|b| *b > 0), "intervals {bytes:?}");
}

#[test]
fn a_path_that_dies_ends_each_end_with_one_clear_line() {
    // Mostly waiting for the ends to give up on a dead path: it runs
    // beside the other path tests, without a turn.
    let spec = PathSpec::new()
        .both("delay=25ms,rate=100M,queue=1000")
        .lifetime(300)
        .mostly_waiting();
    let Some(p) = Path::start(&spec) else { return };
    let ws = wirespeed();
    let mut srv = p.spawn_b(&ws, &["-s", "-1"]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let t0 = Instant::now();
    let mut cli = p.spawn_a(&ws, &["-c", &p.addr_b, "-t", "3", "-i", "1", "-J"]);
    // Mid-test: the server has reported its first second.
    common::wait::stdout_has(&srv, "0.00-1.", Duration::from_secs(20));
    p.down("both");
    // The server gives up first (its grace past the test's time is
    // shorter than the client's wait for an answer).
    srv.wait(Duration::from_secs(60)).expect("the server frees the test");
    let server_took = t0.elapsed();
    let st = cli.wait(Duration::from_secs(60)).expect("the client gives up");
    let client_took = t0.elapsed();
    assert_eq!(st.code(), Some(1));
    let doc = json(&cli.out());
    // Its own side still stands, then why the rest is missing.
    assert!(doc["end"]["sum_sent"]["bytes"].as_u64().is_some_and(|b| b > 0), "{doc}");
    let err = doc["error"].as_str().unwrap();
    assert!(err.contains("did not answer"), "{err}");
    assert!(client_took < Duration::from_secs(3 + 35), "client took {client_took:?}");
    // The server frees a test whose client is silent past its time well
    // before its watchdog (the test's time + 40 s).
    let out = srv.out() + &srv.err();
    assert!(out.contains("has sent nothing"), "{out}");
    assert!(server_took < Duration::from_secs(3 + 20), "server took {server_took:?}");
}

#[test]
fn window_advice_leads_to_the_bandwidth_delay_product() {
    let _t = turn();
    let Some(p) = path(LONG_FAT) else { return };
    let mut window = "64K".to_string();
    let mut last = Value::Null;
    for _ in 0..5 {
        let r = ws_test(&p, &[], &["-C", "cubic", "-t", "3", "-w", &window]);
        assert_eq!(r.code, Some(0), "{}", r.doc);
        last = r.doc["end"]["advice"].clone();
        match last["suggested_option"].as_str() {
            Some(o) => window = o.trim_start_matches("-w ").to_string(),
            None => break,
        }
    }
    assert_ne!(last["limited_by"], "receive_window", "{last:#}");
    // The window it led to holds the path's bandwidth-delay product
    // (100 Mbit/s x 200 ms = 2.5 MB).
    let bytes = parse_size(&window);
    assert!(bytes >= 2_500_000, "ended at -w {window}: {last:#}");
}

fn parse_size(s: &str) -> u64 {
    let (n, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len()));
    let n: f64 = n.parse().unwrap();
    let m = match unit {
        "K" | "k" => 1024.0,
        "M" | "m" => 1024.0 * 1024.0,
        "G" | "g" => 1024.0 * 1024.0 * 1024.0,
        _ => 1.0,
    };
    (n * m) as u64
}

#[test]
fn rtt_probes_see_the_paths_round_trip_and_say_how_often_they_could_go() {
    let _t = turn();
    let Some(p) = path(LONG_FAT) else { return };
    let r = ws_test(&p, &[], &["-C", "cubic", "-t", "3", "--latency=20"]);
    assert_eq!(r.code, Some(0), "{}", r.doc);
    let lat = &r.doc["end"]["latency"];
    let idle = lat["idle"]["p50_ms"].as_f64().unwrap();
    assert!(
        (200.0..201.0).contains(&idle),
        "idle p50 {idle} ms on a 200 ms path: {lat}"
    );
    // One probe in flight at a time: 20/s asked, about 5/s possible.
    let achieved = lat["achieved_probes_per_second"].as_f64().unwrap();
    assert!((2.0..=5.5).contains(&achieved), "{lat}");
}

#[test]
fn rpm_runs_across_a_long_path() {
    let _t = turn();
    let Some(p) = path(LONG_FAT) else { return };
    let ws = wirespeed();
    let srv = p.spawn_b(&ws, &["-s"]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let r = p.run_a(
        &ws,
        &["-c", &p.addr_b, "--rpm", "-t", "6", "-J"],
        Duration::from_secs(60),
    );
    drop(srv);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let doc = json(&r.stdout);
    let end = &doc["end"];
    // 60 s / 200 ms: an idle path answers 300 times a minute, a loaded
    // one fewer.
    let idle = end["idle_rpm"].as_f64().unwrap_or_else(|| panic!("{doc}"));
    assert!((280.0..=300.0).contains(&idle), "idle RPM {idle}: {end}");
    let rpm = end["rpm"].as_f64().unwrap_or_else(|| panic!("{doc}"));
    assert!(rpm > 0.0 && rpm <= idle, "RPM {rpm}: {end}");
}

/// iperf3 peers to hold against: Debian's, and the newest when
/// `WIRESPEED_IPERF3_NEW` names it.
fn iperf3_peers() -> Vec<PathBuf> {
    common::peer("iperf3")
        .into_iter()
        .chain(common::newer_iperf3())
        .collect()
}

/// iperf 2 peers: Debian's, and 2.2.x when `WIRESPEED_IPERF2_NEW` names it.
fn iperf2_peers() -> Vec<PathBuf> {
    let newer = std::env::var_os("WIRESPEED_IPERF2_NEW")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    if newer.is_none() {
        eprintln!("NOTICE: WIRESPEED_IPERF2_NEW not set; skipping the iperf 2.2 part");
    }
    common::peer("iperf").into_iter().chain(newer).collect()
}

/// `server -s -1` in B and `client -c B -J args` in A (either may be a real
/// iperf3); the client's exit code and document.
fn iperf3_pair(path: &Path, server: &std::path::Path, client: &std::path::Path, args: &[&str]) -> (Option<i32>, Value) {
    // iperf3 block-buffers a piped stdout; --forceflush shows its lines.
    let srv = path.spawn_b(server, &["-s", "-1", "--forceflush"]);
    assert!(
        srv.wait_for_line("Server listening", Duration::from_secs(10)),
        "{server:?} did not start"
    );
    let mut cargs = vec!["-c", &path.addr_b, "-J"];
    cargs.extend_from_slice(args);
    let r = path.run_a(client, &cargs, Duration::from_secs(90));
    drop(srv);
    (r.code, json(&r.stdout))
}

#[test]
fn iperf3_peers_work_both_ways_across_long_paths() {
    let peers = iperf3_peers();
    if peers.is_empty() {
        return;
    }
    let _t = turn();
    let ws = wirespeed();
    for (both, secs) in [(LONG_FAT, "3"), (LONG_LOSSY, "4")] {
        let Some(p) = path(both) else { return };
        for peer in &peers {
            for (server, client, who) in [(&ws, peer, "peer client"), (peer, &ws, "our client")] {
                for extra in [&[][..], &["-R"], &["-u", "-b", "5M"]] {
                    let mut args = vec!["-t", secs];
                    args.extend_from_slice(extra);
                    let what = format!("{who} {peer:?} on {both}: {}", args.join(" "));
                    let (code, doc) = iperf3_pair(&p, server, client, &args);
                    assert_eq!(code, Some(0), "{what}: {doc}");
                    let end = &doc["end"];
                    let (sent, got) = (
                        end["sum_sent"]["bytes"].as_u64().unwrap_or(0),
                        end["sum_received"]["bytes"].as_u64().unwrap_or(0),
                    );
                    // (iperf3 3.16+ cancels its sending threads at the end:
                    // a write can complete uncounted, one block at most.)
                    assert!(
                        got > 0 && got <= sent + 128 * 1024,
                        "{what}: sent {sent}, received {got}"
                    );
                    // A real server closes its streams at TEST_END, so our
                    // receiver reads what it sent to the last byte.
                    if who == "our client" && extra == ["-R"] {
                        assert_eq!(sent, got, "{what}");
                    }
                }
            }
        }
    }
}

/// Per-flow byte counts from iperf 2 CSV (`-y C`) lines, keyed by the
/// flow's two ends (either order matches).
fn csv_flows(text: &str) -> Vec<((String, String), u64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 9 || f[5] == "-1" {
                return None;
            }
            let bytes = f[7].parse().ok()?;
            let (a, b) = (format!("{}:{}", f[1], f[2]), format!("{}:{}", f[3], f[4]));
            Some((if a < b { (a, b) } else { (b, a) }, bytes))
        })
        .collect()
}

/// An iperf 2 server (`server -s -y C extra`) in B and a client
/// (`client -c B -y C args`) in A; each side's flows, and what the client
/// and server printed.
fn iperf2_pair(path: &Path, server: &[&str], client: &[&str], args: &[&str]) -> (Ran2, Ran2) {
    let (sprog, sargs) = server.split_first().unwrap();
    let mut sa: Vec<&str> = sargs.to_vec();
    sa.extend(["-s", "-y", "C"]);
    if args.contains(&"-u") {
        sa.push("-u");
    }
    let mut srv = path.spawn_b(std::path::Path::new(sprog), &sa);
    common::wait::child_listening(&srv, 5001, args.contains(&"-u"), common::wait::LONG);
    let (cprog, cargs) = client.split_first().unwrap();
    let mut ca: Vec<&str> = cargs.to_vec();
    ca.extend(["-c", &path.addr_b, "-y", "C"]);
    ca.extend_from_slice(args);
    let r = path.run_a(std::path::Path::new(cprog), &ca, Duration::from_secs(60));
    // The server reports a flow when it ends: every flow the client
    // reported.
    let flows: Vec<(String, String)> = csv_flows(&r.stdout).into_iter().map(|(e, _)| e).collect();
    if r.code == Some(0) {
        common::wait::text(
            "the server's report of every flow",
            Duration::from_secs(20),
            || srv.out(),
            |t| {
                let s = csv_flows(t);
                flows.iter().all(|e| s.iter().any(|(f, _)| f == e))
            },
        );
    }
    srv.signal(15);
    let _ = srv.wait(Duration::from_secs(10));
    (
        Ran2 {
            code: r.code,
            out: r.stdout + &r.stderr,
        },
        Ran2 {
            code: None,
            out: srv.out() + &srv.err(),
        },
    )
}

/// What one end of an iperf 2 test printed.
struct Ran2 {
    code: Option<i32>,
    out: String,
}

/// Every flow the client reported, the server reported with the same bytes.
fn assert_flows_exact(client: &Ran2, server: &Ran2, what: &str) {
    let c = csv_flows(&client.out);
    let s = csv_flows(&server.out);
    assert!(!c.is_empty(), "{what}: no flows from the client:\n{}", client.out);
    for (ends, bytes) in &c {
        let theirs = s.iter().filter(|(e, _)| e == ends).map(|(_, b)| *b).next_back();
        assert_eq!(
            theirs,
            Some(*bytes),
            "{what}: flow {ends:?}\nclient:\n{}\nserver:\n{}",
            client.out,
            server.out
        );
    }
}

#[test]
fn the_iperf2_dialect_is_exact_across_loss_and_a_long_path() {
    let _t = turn();
    let ws = wirespeed();
    let ours = [ws.to_str().unwrap(), "--iperf2"];
    let Some(p) = path(JITTERY) else { return };
    let (c, s) = iperf2_pair(&p, &ours, &ours, &["-P", "4", "-t", "3"]);
    assert_eq!(c.code, Some(0), "{}", c.out);
    assert_flows_exact(&c, &s, "--iperf2 -P 4 across loss and reordering");
    drop(p);
    let Some(p) = path(LONG_FAT) else { return };
    // -d: a flow each way, the second on a connection back to the client.
    let (c, s) = iperf2_pair(&p, &ours, &ours, &["-d", "-t", "3"]);
    assert_eq!(c.code, Some(0), "{}", c.out);
    assert_eq!(csv_flows(&c.out).len(), 2, "{}", c.out);
    assert_flows_exact(&c, &s, "--iperf2 -d across 200 ms");
    // The real iperf 2 half-closes after its last byte, and reads to the
    // end of ours: exact either way.
    for peer in iperf2_peers() {
        let real = [peer.to_str().unwrap()];
        let (c, s) = iperf2_pair(&p, &ours, &real, &["-t", "3"]);
        assert_eq!(c.code, Some(0), "{}", c.out);
        assert_flows_exact(&c, &s, &format!("{peer:?} client across 200 ms"));
        let (c, s) = iperf2_pair(&p, &real, &ours, &["-t", "3"]);
        assert_eq!(c.code, Some(0), "{}", c.out);
        assert_flows_exact(&c, &s, &format!("{peer:?} server across 200 ms"));
    }
}

#[test]
fn iperf2_udp_reports_come_back_across_600ms_and_five_percent_loss() {
    let _t = turn();
    let ws = wirespeed();
    let ours = [ws.to_str().unwrap(), "--iperf2"];
    let Some(p) = path("delay=300ms,rate=20M,queue=2000,loss=5%") else {
        return;
    };
    let peers = iperf2_peers();
    let mut pairs: Vec<(Vec<&str>, Vec<&str>, String)> = vec![(ours.to_vec(), ours.to_vec(), "ours both ends".into())];
    for peer in &peers {
        let real = vec![peer.to_str().unwrap()];
        pairs.push((real.clone(), ours.to_vec(), format!("{peer:?} server")));
        pairs.push((ours.to_vec(), real, format!("{peer:?} client")));
    }
    for (server, client, what) in pairs {
        let (c, s) = iperf2_pair(&p, &server, &client, &["-u", "-b", "5M", "-l", "1400", "-t", "2"]);
        assert_eq!(c.code, Some(0), "{what}: {}", c.out);
        // The client heard the server's report (its loss and jitter).
        assert!(!c.out.contains("WARNING"), "{what}: {}", c.out);
        // The receiver answered the FIN and was not flooded past its answers.
        assert!(!s.out.contains("ack of last datagram failed"), "{what}: {}", s.out);
        assert!(csv_flows(&s.out).iter().any(|(_, b)| *b > 0), "{what}: {}", s.out);
    }
}
