//! The QUIC performance protocol (draft-banks-quic-performance, ALPN
//! `perf`): our `--quic-perf` client against our `-s --quic-perf-listen`
//! server on loopback (always), and, when WIRESPEED_QUIC_GO_PERF and
//! WIRESPEED_PICOQUICDEMO name them, against quic-go's perf and picoquic's
//! picoquicdemo both ways (else each test says it skipped). quic-go's perf
//! opens pprof listeners on every interface, so it runs only in a network
//! namespace the test makes (and removes); picoquicdemo writes token and
//! ticket files, so it runs in a scratch directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

const LIMIT: Duration = Duration::from_secs(60);

/// `wirespeed args` to its end: its `-J` document (exit 0 asserted).
fn json_of(prefix: &[&str], args: &[&str]) -> Value {
    let (prog, all) = command(prefix, &wirespeed(), args);
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let r = run(&prog, &all, LIMIT);
    assert_eq!(r.code, Some(0), "{args:?}: {}{}", r.stdout, r.stderr);
    json(&r.stdout)
}

/// `prog args`, run through `prefix` (`ip netns exec NS`) when given.
fn command(prefix: &[&str], prog: &Path, args: &[&str]) -> (PathBuf, Vec<String>) {
    match prefix.split_first() {
        None => (prog.to_path_buf(), args.iter().map(|s| s.to_string()).collect()),
        Some((first, rest)) => {
            let mut all: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            all.push(prog.display().to_string());
            all.extend(args.iter().map(|s| s.to_string()));
            (PathBuf::from(first), all)
        }
    }
}

fn bytes(v: &Value) -> u64 {
    v["bytes"].as_u64().unwrap_or_else(|| panic!("no bytes in {v}"))
}

/// A `-J` document's totals: (sent, received).
fn totals(d: &Value) -> (u64, u64) {
    (bytes(&d["end"]["sum_sent"]), bytes(&d["end"]["sum_received"]))
}

/// One series' value in Prometheus text.
fn series(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

const RECEIVED: &str = "wirespeed_quic_perf_bytes_total{direction=\"received\"}";
const SENT: &str = "wirespeed_quic_perf_bytes_total{direction=\"sent\"}";

/// Our server with the perf port and metrics, on 127.0.0.1.
fn our_server(port: u16, quic: u16, metrics: u16) -> Proc {
    let listen = format!("127.0.0.1:{quic}");
    let m = format!("127.0.0.1:{metrics}");
    let srv = wirespeed_server(port, &["--quic-perf-listen", &listen, "--metrics", &m]);
    wait::udp_listening(quic, wait::LONG);
    srv
}

#[test]
fn quic_perf_client_against_our_server() {
    let (port, quic, metrics) = (free_port(), free_port(), free_port());
    let srv = our_server(port, quic, metrics);
    assert!(
        srv.err().contains("QUIC perf server (ALPN perf) on UDP 127.0.0.1:"),
        "{}",
        srv.err()
    );
    let target = format!("127.0.0.1:{quic}");
    let t = target.as_str();

    // Upload of -n bytes: both ends have all of it, the server said so.
    let d = json_of(&[], &["--quic-perf", t, "-n", "20M", "-J"]);
    assert_eq!(totals(&d), (20 << 20, 20 << 20), "{d}");
    let q = &d["end"]["quic"];
    assert_eq!(q["alpn"], "perf", "{d}");
    assert_eq!(q["server_confirmed"], true, "{d}");
    assert!(q["rtt_us"].as_u64().is_some_and(|r| r > 0), "{d}");
    assert!(q["sent_packets"].as_u64().is_some_and(|n| n > 14_000), "{d}");
    assert_eq!(d["start"]["connected"].as_array().map(Vec::len), Some(1), "{d}");
    assert_eq!(q["congestion"], "cubic", "{d}");

    // -C: the client's controller (it matters on an upload).
    for (c, name) in [("reno", "newreno"), ("bbr", "bbr")] {
        let d = json_of(&[], &["--quic-perf", t, "-n", "5M", "-C", c, "-J"]);
        assert_eq!(totals(&d), (5 << 20, 5 << 20), "{d}");
        assert_eq!(d["end"]["quic"]["congestion"], name, "{d}");
    }

    // Download of -n bytes.
    let d = json_of(&[], &["--quic-perf", t, "-R", "-n", "30M", "-J"]);
    assert_eq!(totals(&d), (30 << 20, 30 << 20), "{d}");
    assert_eq!(d["start"]["test_start"]["reverse"], 1, "{d}");

    // -P 4: four streams on the connection, each a quarter.
    let d = json_of(&[], &["--quic-perf", t, "-P", "4", "-n", "40M", "-J"]);
    assert_eq!(totals(&d), (40 << 20, 40 << 20), "{d}");
    let streams = d["end"]["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 4, "{d}");
    for s in streams {
        assert_eq!(bytes(&s["sender"]), 10 << 20, "{d}");
        assert_eq!(bytes(&s["receiver"]), 10 << 20, "{d}");
    }
    assert_eq!(d["start"]["connected"].as_array().map(Vec::len), Some(4), "{d}");

    // Download for a time (-t): an endless request, cut at the end.
    let d = json_of(&[], &["--quic-perf", t, "-R", "-t", "2", "-P", "2", "-i", "0.5", "-J"]);
    let (_, got) = totals(&d);
    assert!(got > 1 << 20, "{d}");
    let n = d["intervals"].as_array().map_or(0, Vec::len);
    assert!((3..=6).contains(&n), "{n} intervals: {d}");
    let secs = d["end"]["sum_received"]["seconds"].as_f64().unwrap();
    assert!((1.9..3.0).contains(&secs), "{d}");

    // Upload for a time, in text: iperf3's layout.
    let r = run(&wirespeed(), &["--quic-perf", t, "-t", "2"], LIMIT);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    for want in [
        &format!("Connecting to host 127.0.0.1, port {quic}") as &str,
        "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd",
        "sender",
        "receiver",
        "iperf Done.",
    ] {
        assert!(r.stdout.contains(want), "no {want:?} in {}", r.stdout);
    }

    // The JSON stream: one event a line, ending with the end.
    let r = run(&wirespeed(), &["--quic-perf", t, "-n", "5M", "--json-stream"], LIMIT);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let events: Vec<Value> = r.stdout.lines().map(json).collect();
    assert_eq!(
        events.first().map(|e| e["event"].clone()),
        Some("start".into()),
        "{}",
        r.stdout
    );
    let end = events.iter().find(|e| e["event"] == "end").expect("an end event");
    assert_eq!(bytes(&end["data"]["sum_received"]), 5 << 20, "{}", r.stdout);

    // The server counted what it read and sent (the requests' 8 bytes not).
    let (_, text) = http_get(metrics, "/metrics", &[]);
    assert!(series(&text, RECEIVED) >= (20 + 40 + 5) << 20, "{text}");
    assert!(series(&text, SENT) >= 30 << 20, "{text}");
    assert_eq!(series(&text, "wirespeed_quic_perf_open_connections"), 0, "{text}");

    // The iperf port serves as ever.
    let p = port.to_string();
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1"], LIMIT);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
}

#[test]
fn quic_perf_server_takes_a_pem_certificate_and_ipv6() {
    let dir = scratch("pem");
    let Some((cert, key)) = self_signed_cert(&dir) else {
        eprintln!("SKIPPED: openssl made no certificate");
        return;
    };
    let (port, quic) = (free_port(), free_port());
    let listen = format!("[::1]:{quic}");
    let (c, k) = (cert.display().to_string(), key.display().to_string());
    let srv = wirespeed_server(
        port,
        &["--quic-perf-listen", &listen, "--tls-cert", &c, "--tls-key", &k],
    );
    wait::udp_listening(quic, wait::LONG);
    let said = wait::stderr_has(&srv, "SHA-256", wait::LONG);
    assert!(
        said.contains(&format!(
            "QUIC perf server (ALPN perf) on UDP {listen}, certificate SHA-256 "
        )),
        "{said}"
    );
    let d = json_of(&[], &["--quic-perf", &listen, "-R", "-n", "3M", "-J"]);
    assert_eq!(totals(&d), (3 << 20, 3 << 20), "{d}");
    assert_eq!(d["end"]["quic"]["remote"], listen.as_str(), "{d}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn quic_perf_refuses_what_it_does_not_honour() {
    for (args, want) in [
        (
            &["--quic-perf", "127.0.0.1:1", "-u"][..],
            "--quic-perf cannot be used with -u",
        ),
        (
            &["--quic-perf", "127.0.0.1:1", "--bidir"],
            "--quic-perf cannot be used with --bidir",
        ),
        (
            &["--quic-perf", "127.0.0.1:1", "-b", "1M"],
            "--quic-perf cannot be used with -b",
        ),
        (&["--quic-perf", "127.0.0.1:1", "-c", "h"], "do not give -c"),
        (
            &["--quic-perf", "127.0.0.1:1", "-C", "vegas"],
            "--quic-perf has no congestion control 'vegas'",
        ),
        (&["--quic-perf", "127.0.0.1:1", "-P", "101"], "at most 100 streams"),
        (&["--quic-perf", "127.0.0.1"], "--quic-perf wants HOST:PORT"),
        (
            &["-s", "--quic-perf-listen", "127.0.0.1"],
            "--quic-perf-listen wants ADDR:PORT",
        ),
        (&["-c", "127.0.0.1", "--quic-perf-listen", ":4433"], "server only"),
    ] {
        let r = run(&wirespeed(), args, LIMIT);
        assert_eq!(r.code, Some(1), "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
    }
}

/// The peer `var` names, or `None` with a visible notice.
fn peer_from(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        _ => {
            eprintln!("SKIPPED: {var} does not name the peer; skipping its QUIC perf interop test");
            None
        }
    }
}

/// A network namespace of the test's own with only loopback, removed
/// when dropped.
struct Netns {
    name: String,
    _turn: PathTurn,
}

impl Netns {
    fn new() -> Option<Netns> {
        if !is_root() {
            eprintln!("SKIPPED: a network namespace needs root; skipping the quic-go perf test");
            return None;
        }
        let turn = path_turn();
        let name = format!("wsquic{}x{}", std::process::id(), free_port());
        let ip = |args: &[&str]| Command::new("ip").args(args).status().is_ok_and(|s| s.success());
        assert!(ip(&["netns", "add", &name]), "ip netns add {name}");
        let ns = Netns { name, _turn: turn };
        assert!(ip(&["-n", &ns.name, "link", "set", "lo", "up"]), "lo up in {}", ns.name);
        Some(ns)
    }

    /// The prefix that runs a program inside.
    fn exec(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.name]
    }

    fn spawn(&self, prog: &Path, args: &[&str]) -> Proc {
        let (p, all) = command(&self.exec(), prog, args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        Proc::spawn(&p, &all)
    }

    /// `curl` inside: our server's metrics.
    fn metrics(&self, port: u16) -> String {
        let url = format!("http://127.0.0.1:{port}/metrics");
        let r = run(
            &PathBuf::from("ip"),
            &["netns", "exec", &self.name, "curl", "-s", &url],
            LIMIT,
        );
        r.stdout
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

#[test]
fn quic_go_perf_server_against_our_client() {
    let Some(go) = peer_from("WIRESPEED_QUIC_GO_PERF") else {
        return;
    };
    let Some(ns) = Netns::new() else { return };
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut srv = ns.spawn(&go, &["--run-server", &format!("--server-address={addr}")]);
    wait::child_listening(&srv, port, true, wait::LONG);
    let up = json_of(&ns.exec(), &["--quic-perf", &addr, "-n", "10M", "-J"]);
    assert_eq!(totals(&up), (10 << 20, 10 << 20), "{up}");
    assert_eq!(up["end"]["quic"]["server_confirmed"], true, "{up}");
    let down = json_of(&ns.exec(), &["--quic-perf", &addr, "-R", "-n", "20M", "-P", "2", "-J"]);
    assert_eq!(totals(&down), (20 << 20, 20 << 20), "{down}");
    assert_eq!(down["end"]["quic"]["server_confirmed"], true, "{down}");
    let timed = json_of(&ns.exec(), &["--quic-perf", &addr, "-R", "-t", "1", "-J"]);
    assert!(totals(&timed).1 > 1 << 20, "{timed}");
    srv.signal(15);
    srv.wait(Duration::from_secs(5));
    assert!(!srv.err().contains("panic"), "{}", srv.err());
}

#[test]
fn quic_go_perf_client_against_our_server() {
    let Some(go) = peer_from("WIRESPEED_QUIC_GO_PERF") else {
        return;
    };
    let Some(ns) = Netns::new() else { return };
    let (port, quic, metrics) = (free_port(), free_port(), free_port());
    let listen = format!("127.0.0.1:{quic}");
    let m = format!("127.0.0.1:{metrics}");
    let p = port.to_string();
    let srv = ns.spawn(
        &wirespeed(),
        &["-s", "-p", &p, "--quic-perf-listen", &listen, "--metrics", &m],
    );
    wait::child_listening(&srv, quic, true, wait::LONG);
    wait::child_listening(&srv, metrics, false, wait::LONG);
    // quic-go's client closes before reading the end of a stream that asked
    // for nothing back; one byte keeps its upload whole.
    let mut expect = (0u64, 0u64);
    for (up, down, up_n, down_n) in [("10M", "20M", 10u64 << 20, 20u64 << 20), ("3M", "1", 3 << 20, 1)] {
        let (prog, args) = command(
            &ns.exec(),
            &go,
            &[
                &format!("--server-address={listen}"),
                &format!("--upload-bytes={up}"),
                &format!("--download-bytes={down}"),
            ],
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(&prog, &args, LIMIT);
        assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
        let last = r.stdout.lines().last().map(json).unwrap_or_default();
        assert_eq!(last["type"], "final", "{}", r.stdout);
        assert_eq!(last["uploadBytes"].as_u64(), Some(up_n), "{}", r.stdout);
        assert_eq!(last["downloadBytes"].as_u64(), Some(down_n), "{}", r.stdout);
        expect = (expect.0 + up_n, expect.1 + down_n);
        let text = ns.metrics(metrics);
        assert_eq!(series(&text, RECEIVED), expect.0, "{text}");
        assert_eq!(series(&text, SENT), expect.1, "{text}");
    }
}

/// A picoquicdemo run in `dir`: (its exit, stdout).
fn picoquic(pq: &Path, dir: &Path, args: &[&str]) -> Proc {
    let mut line = format!("cd '{}' && exec '{}'", dir.display(), pq.display());
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    Proc::spawn(&PathBuf::from("sh"), &["-c", &line])
}

/// picoquicdemo's `-F` performance log: each connection's row by column.
fn perf_log(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines = text.lines();
    let head: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    lines
        .map(|l| {
            head.iter()
                .cloned()
                .zip(l.split(',').map(|s| s.trim().to_string()))
                .collect()
        })
        .collect()
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ws-quic-{tag}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn picoquic_server_against_our_client() {
    let Some(pq) = peer_from("WIRESPEED_PICOQUICDEMO") else {
        return;
    };
    let dir = scratch("pqs");
    let (cert, key) = self_signed_cert(&dir).expect("openssl makes a certificate");
    let log = dir.join("server.csv");
    let port = free_port();
    let p = port.to_string();
    let (c, k, l) = (
        cert.display().to_string(),
        key.display().to_string(),
        log.display().to_string(),
    );
    let mut srv = picoquic(&pq, &dir, &["-c", &c, "-k", &k, "-p", &p, "-F", &l]);
    wait::udp_listening(port, wait::LONG);
    let addr = format!("127.0.0.1:{port}");
    let up = json_of(&[], &["--quic-perf", &addr, "-n", "5000000", "-J"]);
    assert_eq!(totals(&up), (5_000_000, 5_000_000), "{up}");
    assert_eq!(up["end"]["quic"]["server_confirmed"], true, "{up}");
    let down = json_of(&[], &["--quic-perf", &addr, "-R", "-n", "7000000", "-J"]);
    assert_eq!(totals(&down), (7_000_000, 7_000_000), "{down}");
    assert_eq!(down["end"]["quic"]["server_confirmed"], true, "{down}");
    // The server's own counts, a row per connection once it closed (its
    // stream bytes: the 8-byte requests included).
    let rows = wait::until("picoquic's two log rows", wait::LONG, || {
        let r = perf_log(&log);
        (r.len() >= 2).then_some(r)
    });
    assert_eq!(rows[0]["Received"], "5000008", "{rows:?}");
    assert_eq!(rows[1]["Sent"], "7000000", "{rows:?}");
    assert_eq!(rows[1]["Received"], "8", "{rows:?}");
    srv.signal(15);
    srv.wait(Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn picoquic_client_against_our_server() {
    let Some(pq) = peer_from("WIRESPEED_PICOQUICDEMO") else {
        return;
    };
    let dir = scratch("pqc");
    let (port, quic, metrics) = (free_port(), free_port(), free_port());
    let _srv = our_server(port, quic, metrics);
    let q = quic.to_string();
    let log = dir.join("client.csv");
    let l = log.display().to_string();
    let mut expect = (0u64, 0u64);
    for (i, (scenario, up, down)) in [("*1:8:6000000;", 0u64, 6_000_000u64), ("*1:4000008:0;", 4_000_000, 0)]
        .into_iter()
        .enumerate()
    {
        let mut c = picoquic(&pq, &dir, &["-F", &l, "-a", "perf", "127.0.0.1", &q, scenario]);
        assert!(c.wait(LIMIT).is_some(), "picoquicdemo did not end");
        // Its report is split between stdout and stderr.
        let out = c.out() + &c.err();
        // It exits 0 whatever happened: its own words say how it went.
        assert!(out.contains("Client exit with code = 0"), "{out}");
        // Its own count of the stream's bytes each way (the request's 8
        // included), one row per connection.
        let rows = perf_log(&log);
        assert_eq!(rows.len(), i + 1, "{rows:?}");
        assert_eq!(rows[i]["Sent"], (up + 8).to_string(), "{rows:?}");
        assert_eq!(rows[i]["Received"], down.to_string(), "{rows:?}");
        expect = (expect.0 + up, expect.1 + down);
        let (_, text) = http_get(metrics, "/metrics", &[]);
        assert_eq!(series(&text, RECEIVED), expect.0, "{text}");
        assert_eq!(series(&text, SENT), expect.1, "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
