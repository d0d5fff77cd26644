//! perfSONAR's pScheduler, played in its roles (its iperf3 tool, release
//! 5.2.5; docs/pscheduler.md): it reads each host's iperf3 version as the
//! second word of `iperf3 --version` (the bare name, through PATH), adds
//! `--use-pkcs1-padding` to a side at 3.17 or later whose peer is older,
//! runs a one-off server and a client with its exact command lines and
//! RSA login, parses each side's JSON as its `iperf3_parser` does, merges
//! them as `merged-results` does (a reverse test keeps the server's
//! result and the client's received rate) and checks the result against
//! its throughput schema's types. Pairings: wirespeed with itself, with
//! Debian's iperf3 3.12, and with a newer iperf3 (`WIRESPEED_IPERF3_NEW`),
//! each as client and as server; TCP, UDP, reverse, parallel.

use crate::common;
use crate::common::login;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use common::{Proc, free_port, json, newer_iperf3, peer, run, wait_listening, wirespeed};
use login::Login;
use serde_json::{Map, Value};

const T: Duration = Duration::from_secs(60);
/// The test length (`-t`) and the server's `--idle-timeout` (pScheduler
/// gives the server the test's duration).
const SECS: &str = "2";

/// One host's iperf3 as pScheduler finds it: a directory holding a program
/// named `iperf3` (for wirespeed, a link to it: the set-up
/// docs/pscheduler.md documents), first on that host's PATH.
struct Host {
    label: &'static str,
    dir: PathBuf,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Host {
    fn new(label: &'static str, program: &Path) -> Host {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Relaxed);
        let dir = std::env::temp_dir().join(format!("ws-ps-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(program, dir.join("iperf3")).unwrap();
        Host { label, dir }
    }

    /// `iperf3_cmd`, the program `run` starts.
    fn iperf3(&self) -> PathBuf {
        self.dir.join("iperf3")
    }

    /// participant-data: runs `iperf3 --version` found through PATH and
    /// reads the second word as a version; anything else fails the run.
    fn version(&self) -> Vec<u32> {
        let out = Command::new("iperf3")
            .arg("--version")
            .env("PATH", &self.dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: iperf3 --version failed", self.label);
        let text = String::from_utf8_lossy(&out.stdout);
        let word = text
            .split_whitespace()
            .nth(1)
            .unwrap_or_else(|| panic!("{}: no second word in {text:?}", self.label));
        word.split('.')
            .map(|n| {
                n.parse()
                    .unwrap_or_else(|_| panic!("{}: {word:?} is not a version", self.label))
            })
            .collect()
    }
}

/// The hosts of the pairings: wirespeed, Debian's iperf3, a newer iperf3.
fn hosts() -> (Host, Option<Host>, Option<Host>) {
    (
        Host::new("wirespeed", &wirespeed()),
        peer("iperf3").map(|p| Host::new("iperf3", &p)),
        newer_iperf3().map(|p| Host::new("iperf3-new", &p)),
    )
}

/// 5.2.5's rule: a side at 3.17 or later whose peer is older gets
/// `--use-pkcs1-padding`, first after the program, in either role.
fn first_args(mine: &[u32], other: &[u32]) -> Vec<String> {
    let v317: &[u32] = &[3, 17];
    if other < v317 && mine >= v317 {
        vec!["--use-pkcs1-padding".into()]
    } else {
        Vec::new()
    }
}

/// pScheduler's `rename_json`: the keys it keeps and what it calls them.
fn rename(o: &Value) -> Map<String, Value> {
    const NAMES: [(&str, &str); 13] = [
        ("socket", "stream-id"),
        ("start", "start"),
        ("end", "end"),
        ("bytes", "throughput-bytes"),
        ("bits_per_second", "throughput-bits"),
        ("omitted", "omitted"),
        ("jitter_ms", "jitter"),
        ("packets", "sent"),
        ("lost_packets", "lost"),
        ("retransmits", "retransmits"),
        ("snd_cwnd", "tcp-window-size"),
        ("rtt", "rtt"),
        ("mean_rtt", "rtt"),
    ];
    let mut m = Map::new();
    if let Some(o) = o.as_object() {
        for (k, v) in o {
            if let Some((_, to)) = NAMES.iter().find(|(from, _)| from == k) {
                m.insert(to.to_string(), v.clone());
            }
        }
    }
    m
}

/// `iperf3_parser.parse_output` on one side's stdout (exit status 0), or
/// why pScheduler would fail the run.
fn parse_output(stdout: &str) -> Result<Value, String> {
    // It joins the lines without their newlines before parsing.
    let doc: Value = serde_json::from_str(&stdout.replace('\n', ""))
        .map_err(|e| format!("Unable to parse iperf3 output as JSON: {e}"))?;
    if let Some(e) = doc.get("error") {
        return Err(format!("Iperf3 failed: {e}"));
    }
    let intervals = doc
        .get("intervals")
        .and_then(Value::as_array)
        .ok_or("iperf3 output is missing required field 'intervals'")?;
    let intervals: Vec<Value> = intervals
        .iter()
        .map(|iv| {
            let streams: Vec<Value> = iv
                .get("streams")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|s| Value::Object(rename(s))).collect())
                .unwrap_or_default();
            let sum = iv.get("sum").map(rename).unwrap_or_default();
            serde_json::json!({"streams": streams, "summary": sum})
        })
        .collect();
    let end = doc.get("end").ok_or("iperf3 output is missing required field 'end'")?;
    let sum = end
        .get("sum_sent")
        .or_else(|| end.get("sum"))
        .ok_or("iperf3 output has neither 'sum_sent' nor 'sum' field, and one of them is required")?;
    let mut summary = rename(sum);
    if let Some(r) = end.get("sum_received") {
        // A missing rate here is a Python exception in pScheduler.
        let bps = r.get("bits_per_second").ok_or("sum_received without bits_per_second")?;
        summary.insert("receiver-throughput-bits".into(), bps.clone());
    }
    let streams: Vec<Value> = end
        .get("streams")
        .and_then(Value::as_array)
        .ok_or("end without streams")?
        .iter()
        .filter_map(|s| s.get("udp").or_else(|| s.get("sender")))
        .map(|s| Value::Object(rename(s)))
        .collect();
    Ok(serde_json::json!({
        "succeeded": true,
        "intervals": intervals,
        "summary": {"streams": streams, "summary": summary},
    }))
}

/// The throughput result schema's `throughput-data` (validate.py), and
/// the keys `result-format` sorts by.
fn check_throughput_data(d: &Value, what: &str) {
    let m = d.as_object().unwrap_or_else(|| panic!("{what}: not an object"));
    for (k, v) in m {
        let ok = match k.as_str() {
            "throughput-bits" | "throughput-bytes" | "receiver-throughput-bits" | "start" | "end" => v.is_number(),
            "jitter" | "rtt" => v.is_number() || v.is_null(),
            "sent" | "lost" | "tcp-window-size" | "retransmits" => v.is_u64() || v.is_i64() || v.is_null(),
            "stream-id" => v.is_u64() || v.is_i64() || v.is_string(),
            "omitted" => v.is_boolean(),
            _ => false,
        };
        assert!(ok, "{what}: '{k}' = {v} does not fit the throughput schema");
        if let Some(f) = v.as_f64() {
            assert!(f.is_finite(), "{what}: {k} = {v}");
        }
    }
    for k in ["start", "end", "throughput-bits", "throughput-bytes"] {
        assert!(m.contains_key(k), "{what}: no '{k}' in {d}");
    }
}

fn check_result(r: &Value, what: &str, streams: usize) {
    let intervals = r["intervals"].as_array().unwrap();
    assert!(!intervals.is_empty(), "{what}: no intervals");
    for iv in intervals {
        check_throughput_data(&iv["summary"], &format!("{what}: interval summary"));
        let st = iv["streams"].as_array().unwrap();
        assert_eq!(st.len(), streams, "{what}: interval streams");
        for s in st {
            check_throughput_data(s, &format!("{what}: interval stream"));
            assert!(s.get("stream-id").is_some(), "{what}: {s}");
        }
    }
    check_throughput_data(&r["summary"]["summary"], &format!("{what}: summary"));
    let st = r["summary"]["streams"].as_array().unwrap();
    assert_eq!(st.len(), streams, "{what}: summary streams");
    for s in st {
        check_throughput_data(s, &format!("{what}: summary stream"));
    }
}

/// One throughput run the way pScheduler's `run` makes it, between a
/// client host and a server host; returns the merged result.
fn throughput(client: &Host, server: &Host, spec: &[&str]) -> Value {
    let what = format!("{} -> {} {spec:?}", client.label, server.label);
    let login = Login::new(&format!("{}-{}", client.label, server.label));
    let (cv, sv) = (client.version(), server.version());
    let port = free_port().to_string();
    // Server: [pkcs1] -s -1 --idle-timeout N --json -p PORT + login.
    let mut sa = first_args(&sv, &cv);
    sa.extend(["-s", "-1", "--idle-timeout", SECS, "--json", "-p", &port].map(String::from));
    sa.extend(login.server_args());
    let sa: Vec<&str> = sa.iter().map(String::as_str).collect();
    let mut srv = Proc::spawn(&server.iperf3(), &sa);
    wait_listening(port.parse().unwrap());
    // Client: [pkcs1] -p PORT -c HOST -t N --json [spec] + login, the
    // password in the environment.
    let mut ca = first_args(&cv, &sv);
    ca.extend(["-p", &port, "-c", "127.0.0.1", "-t", SECS, "--json"].map(String::from));
    ca.extend(spec.iter().map(|s| s.to_string()));
    ca.extend(login.client_args());
    let ca: Vec<&str> = ca.iter().map(String::as_str).collect();
    let mut c = Proc::spawn_env(&client.iperf3(), &ca, &[("IPERF3_PASSWORD", &login.password)]);
    let cst = c.wait(T).unwrap_or_else(|| panic!("{what}: the client did not end"));
    let sst = srv
        .wait(T)
        .unwrap_or_else(|| panic!("{what}: the one-off server did not end"));
    assert_eq!(cst.code(), Some(0), "{what}: client {ca:?}\n{}{}", c.out(), c.err());
    assert_eq!(sst.code(), Some(0), "{what}: server\n{}{}", srv.out(), srv.err());
    let client_result = parse_output(&c.out()).unwrap_or_else(|e| panic!("{what}: client: {e}\n{}", c.out()));
    // The server's text before the first '{' is thrown away (an old
    // iperf3 printed a login line there).
    let out = srv.out();
    let from = out.find('{').unwrap_or(0);
    let server_result = parse_output(&out[from..]).unwrap_or_else(|e| panic!("{what}: server: {e}\n{out}"));
    let reverse = spec.contains(&"-R");
    let udp = spec.contains(&"-u");
    let streams = spec
        .iter()
        .position(|a| *a == "-P")
        .map_or(1, |i| spec[i + 1].parse().unwrap());
    check_result(&client_result, &format!("{what}: client"), streams);
    check_result(&server_result, &format!("{what}: server"), streams);
    // merged-results: forward keeps the client's result; reverse keeps
    // the server's (the sender's) and takes the client's received rate.
    let merged = if reverse {
        merge_reverse(client_result, server_result, &what)
    } else {
        client_result
    };
    // What the sending side measured.
    let s = &merged["summary"]["summary"];
    assert!(s["throughput-bits"].as_f64().unwrap() > 0.0, "{what}: {s}");
    if udp {
        assert!(s["sent"].as_u64().unwrap() > 0, "{what}: {s}");
    }
    merged
}

/// merged-results for a reverse test.
fn merge_reverse(client_result: Value, server_result: Value, what: &str) -> Value {
    let rx = client_result["summary"]["summary"]
        .get("receiver-throughput-bits")
        .cloned()
        .unwrap_or_else(|| panic!("{what}: merged-results fails: the client has no sum_received"));
    let mut merged = server_result;
    merged["summary"]["summary"]["receiver-throughput-bits"] = rx;
    check_throughput_data(&merged["summary"]["summary"], what);
    merged
}

/// The runs of one pairing, both roles: TCP, TCP reverse, UDP at
/// 10 Mbit/s (pScheduler puts `-b` before `-u`), UDP reverse.
fn pairing(a: &Host, b: &Host) {
    for (client, server) in [(a, b), (b, a)] {
        for spec in [
            &[][..],
            &["-R"][..],
            &["-b", "10000000", "-u"][..],
            &["-b", "10000000", "-u", "-R"][..],
        ] {
            let r = throughput(client, server, spec);
            let s = &r["summary"]["summary"];
            if spec.contains(&"-u") {
                // iperf3 3.11+ sums UDP from the sender's side: pScheduler
                // reports no loss and no jitter in the summary.
                assert_eq!(s["lost"], 0, "{s}");
            } else if !spec.contains(&"-R") {
                assert!(s.get("retransmits").is_some(), "{s}");
            }
            if spec.contains(&"-R") {
                assert!(s["receiver-throughput-bits"].as_f64().unwrap() > 0.0, "{s}");
            }
        }
    }
}

#[test]
fn wirespeed_called_iperf3_reports_the_iperf3_release_it_implements() {
    let (ws, old, new) = hosts();
    assert_eq!(ws.version(), vec![3, 21]);
    let text = run(&ws.iperf3(), &["--version"], T).stdout;
    assert!(text.starts_with("iperf 3.21 (wirespeed "), "{text}");
    // Under its own name it says what it is first.
    let own = run(&wirespeed(), &["--version"], T).stdout;
    assert!(own.starts_with("wirespeed "), "{own}");
    // docs/pscheduler.md shows both outputs whole: the same lines, with
    // the system line (the host's own) and the version numbers aside.
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/pscheduler.md")).unwrap();
    for (cmd, printed) in [("$ iperf3 --version", &text), ("$ wirespeed --version", &own)] {
        let shown: Vec<&str> = doc
            .lines()
            .skip_while(|l| !l.starts_with(cmd))
            .skip(1)
            .take_while(|l| !l.starts_with('$') && !l.starts_with("```"))
            .collect();
        let printed: Vec<&str> = printed.lines().collect();
        assert_eq!(
            shown.len(),
            printed.len(),
            "docs/pscheduler.md shows {cmd} as {shown:?}, it prints {printed:?}"
        );
        let words = |l: &str| l.split_whitespace().take(2).map(String::from).collect::<Vec<_>>();
        assert_eq!(words(shown[0])[0], words(printed[0])[0], "{cmd}");
        assert!(
            shown[1].starts_with("Linux ") && printed[1].starts_with("Linux "),
            "{cmd}"
        );
        assert_eq!(shown[2], printed[2], "{cmd}: the features line");
    }
    // So a 3.12 peer makes pScheduler ask us for PKCS#1 padding, and a
    // newer one for none.
    if let Some(old) = old {
        assert_eq!(first_args(&ws.version(), &old.version()), ["--use-pkcs1-padding"]);
        assert!(first_args(&old.version(), &ws.version()).is_empty());
    }
    if let Some(new) = new {
        assert!(first_args(&ws.version(), &new.version()).is_empty());
    }
}

#[test]
fn pscheduler_wirespeed_with_wirespeed() {
    let (ws, _, _) = hosts();
    let other = Host::new("wirespeed-b", &wirespeed());
    pairing(&ws, &other);
    // Parallel streams, and every option pScheduler maps from a spec.
    throughput(&ws, &other, &["-P", "4"]);
    let cc = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "cubic".into());
    throughput(
        &ws,
        &other,
        &[
            "-i",
            "1",
            "-P",
            "2",
            "-w",
            "1048576",
            "-M",
            "1400",
            "-O",
            "1",
            "-b",
            "5000000000",
            "-l",
            "131072",
            "-S",
            "0",
            "-C",
            &cc,
        ],
    );
}

#[test]
fn pscheduler_wirespeed_with_iperf3_3_12() {
    let (ws, old, _) = hosts();
    let Some(old) = old else { return };
    pairing(&ws, &old);
    throughput(&ws, &old, &["-P", "4"]);
}

#[test]
fn pscheduler_wirespeed_with_newer_iperf3() {
    let (ws, _, new) = hosts();
    let Some(new) = new else { return };
    pairing(&ws, &new);
    throughput(&new, &ws, &["-P", "4"]);
}

#[test]
fn pscheduler_sees_a_failed_client_as_a_json_error() {
    // No server: status 1, and stdout is JSON whose "error" pScheduler
    // reports as "iperf3 returned an error: ...".
    let r = run(
        &wirespeed(),
        &["-p", &free_port().to_string(), "-c", "127.0.0.1", "-t", "2", "--json"],
        T,
    );
    assert_eq!(r.code, Some(1));
    let doc = json(&r.stdout);
    assert!(doc["error"].as_str().is_some_and(|e| !e.is_empty()), "{doc}");
}
