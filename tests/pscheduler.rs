//! perfSONAR's pScheduler runs iperf3 with a fixed set of options and reads
//! a fixed set of JSON fields (pscheduler-tool-iperf3: `run` builds the
//! command lines, `iperf3_parser.py` reads the output; see
//! docs/pscheduler.md). These tests run wirespeed exactly that way and check
//! every field that parser reads is there, with the type it expects.

mod common;

use std::time::Duration;

use common::{Proc, free_port, json, run, wait_listening, wirespeed};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

/// The keys `rename_json` maps, by object kind.
const ALWAYS: [&str; 4] = ["start", "end", "bytes", "bits_per_second"];
const TCP_SENDER_INTERVAL: [&str; 3] = ["retransmits", "snd_cwnd", "rtt"];

fn number(o: &Value, k: &str, what: &str) {
    assert!(
        o.get(k).is_some_and(Value::is_number),
        "{what}: '{k}' missing or not a number in {o}"
    );
}

/// What iperf3_parser.parse_output needs of a document: intervals with
/// streams and sum, end with sum_sent (TCP) or sum (UDP), end.streams with
/// sender or udp objects.
fn check_like_pscheduler(doc: &Value, local_sends: bool) {
    let intervals = doc["intervals"].as_array().expect("'intervals' (required)");
    assert!(!intervals.is_empty());
    for iv in intervals {
        let streams = iv["streams"].as_array().expect("interval streams");
        for s in streams {
            number(s, "socket", "interval stream");
            for k in ALWAYS {
                number(s, k, "interval stream");
            }
            assert!(s["omitted"].is_boolean());
            if local_sends {
                for k in TCP_SENDER_INTERVAL {
                    number(s, k, "TCP sender interval");
                }
            }
        }
        for k in ALWAYS {
            number(&iv["sum"], k, "interval sum");
        }
        assert!(iv["sum"]["omitted"].is_boolean());
    }
    let end = doc["end"].as_object().expect("'end' (required)");
    let summary = end
        .get("sum_sent")
        .or_else(|| end.get("sum"))
        .expect("'sum_sent' or 'sum'");
    for k in ALWAYS {
        number(summary, k, "end summary");
    }
    number(summary, "retransmits", "end sum_sent");
    for st in end["streams"].as_array().expect("end streams") {
        let s = st.get("udp").or_else(|| st.get("sender")).expect("'udp' or 'sender'");
        number(s, "socket", "end stream");
        for k in ALWAYS {
            number(s, k, "end stream");
        }
        if local_sends {
            number(s, "retransmits", "end sender");
            number(s, "mean_rtt", "end sender");
        }
    }
}

/// pScheduler's server: `iperf3 -s -1 --json -p PORT [-B dest] [-4|-6]`.
fn pscheduler_server(port: u16) -> Proc {
    let p = port.to_string();
    let srv = Proc::spawn(&wirespeed(), &["-s", "-1", "--json", "-p", &p, "-B", "127.0.0.1", "-4"]);
    wait_listening(port);
    srv
}

fn pscheduler_client(port: u16, extra: &[&str]) -> common::Ran {
    let p = port.to_string();
    let mut args = vec![
        "-p",
        &p,
        "-4",
        "-B",
        "127.0.0.1",
        "-c",
        "127.0.0.1",
        "-t",
        "2",
        "--json",
    ];
    args.extend_from_slice(extra);
    run(&wirespeed(), &args, T)
}

fn congestion() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "cubic".into())
}

#[test]
fn pscheduler_throughput_test_parses() {
    let port = free_port();
    let mut srv = pscheduler_server(port);
    let cc = congestion();
    // Every option pScheduler's run maps from a throughput test spec.
    let r = pscheduler_client(
        port,
        &[
            "-i", "1", "-P", "2", "-w", "1M", "-M", "1400", "-O", "1", "-b", "5G", "-l", "128K", "-S", "0", "-C", &cc,
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let doc = json(&r.stdout);
    check_like_pscheduler(&doc, true);
    // The one-off server exits after its test, having printed one document.
    let st = srv.wait(Duration::from_secs(15)).expect("server exits after one test");
    assert_eq!(st.code(), Some(0));
    let server_doc = json(&srv.out());
    assert!(server_doc["end"].is_object());
}

#[test]
fn pscheduler_reverse_test_reads_the_servers_document() {
    // For a reverse test pScheduler keeps the destination's (the server's) result.
    let port = free_port();
    let mut srv = pscheduler_server(port);
    let r = pscheduler_client(port, &["-R"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    check_like_pscheduler(&json(&r.stdout), false);
    assert_eq!(srv.wait(Duration::from_secs(15)).and_then(|s| s.code()), Some(0));
    check_like_pscheduler(&json(&srv.out()), true);
}

#[test]
fn pscheduler_sees_failures_as_json_errors() {
    // No server: non-zero status, and stdout is JSON with an "error" key.
    let r = pscheduler_client(free_port(), &[]);
    assert_eq!(r.code, Some(1));
    let doc = json(&r.stdout);
    assert!(doc["error"].as_str().is_some_and(|e| !e.is_empty()), "{doc}");
}
