//! iperf3 tests over QUIC (`-q`/`--quic`) against our own server on
//! 127.0.0.1: every direction, `-P`, the end conditions, the outputs,
//! exact totals (the receiver counts what the sender counted), the
//! refusals, and a TCP test on the same server between them.

use crate::common;

use common::*;
use serde_json::Value;
use std::time::Duration;

const T: Duration = Duration::from_secs(40);

/// `-q` against the server on `port`, with `extra`.
fn quic(port: u16, extra: &[&str]) -> Ran {
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-q"];
    a.extend_from_slice(extra);
    run(&wirespeed(), &a, T)
}

/// A `-J` run that must succeed: its document.
fn quic_json(port: u16, extra: &[&str]) -> Value {
    let mut a = vec!["-J"];
    a.extend_from_slice(extra);
    let r = quic(port, &a);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    json(&r.stdout)
}

/// Sender and receiver bytes agree for every stream and every sum, and
/// the streams carry QUIC's numbers.
fn assert_exact(doc: &Value, streams: usize) -> u64 {
    assert_eq!(doc["start"]["test_start"]["protocol"], "QUIC", "{doc:#}");
    let end = &doc["end"];
    let ss = end["streams"].as_array().expect("end.streams");
    assert_eq!(ss.len(), streams, "{end:#}");
    for s in ss {
        let sent = s["sender"]["bytes"].as_u64().unwrap();
        let received = s["receiver"]["bytes"].as_u64().unwrap();
        assert!(sent > 0, "{s:#}");
        assert_eq!(sent, received, "a stream's totals differ: {s:#}");
        let q = &s["quic"];
        assert!(q["sent_packets"].as_u64().unwrap() > 0, "{s:#}");
        assert!(
            q["rtt_us"].as_u64().is_some() && q["cwnd"].as_u64().unwrap() > 0,
            "{s:#}"
        );
        assert!(q["lost_packets"].as_u64().is_some(), "{s:#}");
    }
    let mut total = 0;
    for suffix in ["", "_bidir_reverse"] {
        let sent = &end[format!("sum_sent{suffix}")];
        if sent.is_null() {
            continue;
        }
        let received = &end[format!("sum_received{suffix}")];
        assert_eq!(sent["bytes"], received["bytes"], "sums differ: {end:#}");
        total += sent["bytes"].as_u64().unwrap();
    }
    total
}

#[test]
fn forward_reverse_and_parallel_totals_are_exact() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    assert_exact(&quic_json(port, &["-t", "1"]), 1);
    assert_exact(&quic_json(port, &["-t", "1", "-R"]), 1);
    let doc = quic_json(port, &["-t", "1", "-P", "4"]);
    assert_exact(&doc, 4);
    assert_eq!(doc["start"]["test_start"]["num_streams"], 4);
    // Four streams on one connection: one pair of ports.
    let connected = doc["start"]["connected"].as_array().unwrap();
    assert_eq!(connected.len(), 4);
    assert!(connected.iter().all(|c| c["local_port"] == connected[0]["local_port"]));
}

#[test]
fn bidir_totals_are_exact_both_ways() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let doc = quic_json(port, &["-t", "1", "--bidir", "-P", "2"]);
    assert_exact(&doc, 4);
    assert!(doc["end"]["sum_sent_bidir_reverse"]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn bytes_and_blocks_end_the_test_exactly() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    assert_eq!(assert_exact(&quic_json(port, &["-n", "20M", "-P", "2"]), 2), 20 << 20);
    assert_eq!(assert_exact(&quic_json(port, &["-n", "10M", "-R"]), 1), 10 << 20);
    let doc = quic_json(port, &["-k", "100", "-l", "64K"]);
    assert_eq!(assert_exact(&doc, 1), 100 * 65536);
    assert_eq!(doc["start"]["test_start"]["blksize"], 65536);
}

#[test]
fn congestion_control_runs_on_both_ends_of_the_connection() {
    // The server prints a JSON document per test, which the client asks
    // for: both ends' `quic.congestion`, in each direction.
    let port = free_port();
    let _srv = wirespeed_server(port, &["-J"]);
    for (c, name) in [("cubic", "cubic"), ("reno", "newreno"), ("BBR", "bbr")] {
        for dir in [&[][..], &["-R"][..]] {
            let mut a = vec!["-n", "4M", "-C", c, "--get-server-output"];
            a.extend_from_slice(dir);
            let doc = quic_json(port, &a);
            assert_eq!(assert_exact(&doc, 1), 4 << 20);
            let theirs = &doc["server_output_json"]["end"]["streams"][0]["quic"];
            assert_eq!(
                doc["end"]["streams"][0]["quic"]["congestion"], name,
                "{c} {dir:?}: {doc:#}"
            );
            assert_eq!(theirs["congestion"], name, "{c} {dir:?}: {doc:#}");
        }
    }
    // Without -C: quinn's default, CUBIC; -V says which.
    let r = quic(port, &["-n", "1M", "-V"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("\nquic_congestion cubic\n"), "{}", r.stdout);
    // A controller QUIC does not have: one line, before any connection.
    let r = quic(port, &["-C", "vegas"]);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--quic has no congestion control 'vegas': -C takes cubic, reno (newreno) or bbr"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_window_holds_the_sender_to_it() {
    // -w is each stream's flow-control window: the receiver never lets
    // more than it be in flight, and the sender holds no more unsent.
    // On loopback the bytes still cross; the windows show in the ends'
    // numbers (the path test holds the rate to window / RTT).
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    for dir in [&[][..], &["-R"][..], &["-P", "3"][..]] {
        let mut a = vec!["-n", "8M", "-w", "64K"];
        a.extend_from_slice(dir);
        let doc = quic_json(port, &a);
        let streams = doc["end"]["streams"].as_array().unwrap().len();
        assert_eq!(assert_exact(&doc, streams), 8 << 20, "{dir:?}");
    }
}

#[test]
fn latency_probes_ride_the_quic_connection() {
    // --latency's probes ride a stream of the test's own QUIC connection,
    // which the server echoes: ten on the idle connection, then about ten
    // a second beside the load, each interval with its own.
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    for dir in [&[][..], &["-R"][..], &["--bidir", "-P", "2"][..]] {
        let mut a = vec!["-t", "2", "--latency"];
        a.extend_from_slice(dir);
        let doc = quic_json(port, &a);
        let streams = doc["end"]["streams"].as_array().unwrap().len();
        assert!(assert_exact(&doc, streams) > 0);
        let lat = &doc["end"]["latency"];
        assert_eq!(lat["in_test_connection"], true, "{dir:?}: {lat:#}");
        assert_eq!(lat["idle"]["probes"], 10, "{dir:?}: {lat:#}");
        let loaded = lat["loaded"]["probes"].as_u64().unwrap_or(0);
        assert!(loaded >= 5, "{dir:?}: {lat:#}");
        assert!(lat["loaded"]["p50_ms"].as_f64().unwrap() > 0.0, "{dir:?}: {lat:#}");
        let per_interval: u64 = doc["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["latency"]["probes"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(per_interval, loaded, "{dir:?}: {doc:#}");
    }
    let text = quic(port, &["-t", "1", "--latency"]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    for line in [
        "[LAT] idle ",
        "[LAT] loaded ",
        "[LAT] the probes rode a stream of the test's own QUIC connection",
    ] {
        assert!(text.stdout.contains(line), "{line}: {}", text.stdout);
    }
}

#[test]
fn omit_intervals_text_and_json_stream() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let doc = quic_json(port, &["-t", "2", "-O", "1", "-i", "0.5"]);
    // Each end starts counting at its own end of the omit period: what
    // each counted in it (`omitted_bytes`) reconciles the two.
    let s = &doc["end"]["streams"][0];
    let whole = |t: &Value| t["bytes"].as_u64().unwrap() + t["omitted_bytes"].as_u64().unwrap();
    assert_eq!(whole(&s["sender"]), whole(&s["receiver"]), "{s:#}");
    assert_eq!(doc["start"]["test_start"]["protocol"], "QUIC");
    let intervals = doc["intervals"].as_array().unwrap();
    assert!(intervals.iter().any(|i| i["sum"]["omitted"] == true), "{intervals:#?}");
    assert!(intervals.iter().filter(|i| i["sum"]["omitted"] == false).count() >= 3);
    let text = quic(port, &["-t", "1"]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert!(
        text.stdout.contains("sender") && text.stdout.contains("receiver"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("iperf Done."), "{}", text.stdout);
    let stream = quic(port, &["-t", "1", "--json-stream"]);
    assert_eq!(stream.code, Some(0), "{}", stream.stderr);
    let events: Vec<Value> = stream.stdout.lines().map(json).collect();
    let end = events.iter().find(|e| e["event"] == "end").expect("an end line");
    let s = &end["data"]["streams"][0];
    assert_eq!(s["sender"]["bytes"], s["receiver"]["bytes"], "{end:#}");
}

#[test]
fn a_tcp_test_runs_on_the_same_server_between_quic_tests() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    assert_exact(&quic_json(port, &["-t", "1"]), 1);
    let p = port.to_string();
    let tcp = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-J"], T);
    assert_eq!(tcp.code, Some(0), "{}", tcp.stderr);
    assert_eq!(json(&tcp.stdout)["start"]["test_start"]["protocol"], "TCP");
    let udp = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-u", "-J"], T);
    assert_eq!(udp.code, Some(0), "{}", udp.stderr);
    assert_exact(&quic_json(port, &["-t", "1", "-R"]), 1);
}

#[test]
fn options_quic_cannot_honour_are_refused_in_one_line() {
    for (opt, spelled) in [
        (&["-u"][..], "-u"),
        (&["-Z"][..], "-Z"),
        (&["--rpm"][..], "--rpm"),
        (&["-M", "1000"][..], "-M"),
        (&["-S", "16"][..], "-S"),
    ] {
        let mut a = vec!["-c", "127.0.0.1", "-p", "9", "--quic"];
        a.extend_from_slice(opt);
        let r = run(&wirespeed(), &a, T);
        assert_eq!(r.code, Some(1), "{opt:?}: {}{}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{opt:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("--quic cannot be used with {spelled}")),
            "{opt:?}: {}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{opt:?}: {}", r.stdout);
    }
    let r = run(&wirespeed(), &["-s", "-q"], T);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}
