//! `-J` documents, ours against real iperf3's for the same test: every key
//! path with the type of its value (arrays' elements merged, numbers one
//! type), in both directions, on the client and on the server; the
//! `sender` flags by value; and the counters iperf3 writes as 0 where a
//! side did not measure them. Differences must be on the short lists
//! below, which docs/json.md documents. Run against Debian's iperf3 3.12
//! (CI) and, from `WIRESPEED_IPERF3_NEW`, a newer one (3.21, the release
//! ours follows).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use common::{Proc, free_port, json, newer_iperf3, peer, run, wait_listening, wirespeed};
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

/// Keys only wirespeed writes (by path prefix).
const EXTENSIONS: &[&str] = &[
    // Window advice (TCP).
    ".end.advice",
    // Datagrams that arrived more than once (UDP).
    ".end.streams[].udp.duplicates",
];

/// Keys iperf3 added after 3.12 that ours writes as 3.21 does: allowed
/// against 3.12, and checked to be in 3.21's output when it is present.
const AFTER_3_12: &[&str] = &[
    ".start.fq_rate",
    ".start.timestamp.timemillisecs",
    ".start.test_start.bidir",
    ".start.test_start.fqrate",
    ".start.test_start.interval",
    ".start.test_start.gso",
    ".start.test_start.gro",
    ".intervals[].streams[].reorder",
    ".end.streams[].sender.reorder",
];

/// Numbers iperf3 writes as 0 where the side did not measure them; when
/// all of the peer's values at the path are 0, ours must be too.
const ZERO_WHERE_UNMEASURED: &[&str] = &["jitter_ms", "lost_packets", "lost_percent", "packets"];

/// TCP_INFO extremes: 3.21 writes 0 on a stream this host only received;
/// 3.12 sometimes carries the peer's and sometimes reads 0 where it sent,
/// so these are compared with the newer iperf3 only (and checked on ours
/// directly in `tcp_reverse`).
const TCP_INFO: &[&str] = &["max_snd_cwnd", "max_snd_wnd", "max_rtt", "min_rtt", "mean_rtt"];

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every path (array indices as `[]`) with the types and values seen.
#[derive(Default)]
struct Shape {
    types: BTreeMap<String, BTreeSet<&'static str>>,
    bools: BTreeMap<String, BTreeSet<bool>>,
    zero: BTreeMap<String, bool>,
}

impl Shape {
    fn of(doc: &Value) -> Shape {
        let mut s = Shape::default();
        s.walk(doc, "");
        s
    }

    fn walk(&mut self, v: &Value, path: &str) {
        if !path.is_empty() {
            self.types.entry(path.to_string()).or_default().insert(type_of(v));
        }
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    self.walk(x, &format!("{path}.{k}"));
                }
            }
            Value::Array(a) => {
                for x in a {
                    self.walk(x, &format!("{path}[]"));
                }
            }
            Value::Bool(b) => {
                self.bools.entry(path.to_string()).or_default().insert(*b);
            }
            Value::Number(n) => {
                let z = n.as_f64() == Some(0.0);
                *self.zero.entry(path.to_string()).or_insert(true) &= z;
            }
            _ => {}
        }
    }
}

fn listed(list: &[&str], path: &str) -> bool {
    list.iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}.")) || path.starts_with(&format!("{p}[")))
}

/// The differences of `ours` from `theirs` (a peer at 3.12 when `old`).
fn differences(theirs: &Value, ours: &Value, old: bool) -> Vec<String> {
    let (t, o) = (Shape::of(theirs), Shape::of(ours));
    let mut d = Vec::new();
    for (p, ty) in &t.types {
        match o.types.get(p) {
            None => d.push(format!("missing {p}")),
            Some(oty) if oty != ty => d.push(format!("type of {p}: theirs {ty:?}, ours {oty:?}")),
            _ => {}
        }
    }
    for p in o.types.keys() {
        let allowed = listed(EXTENSIONS, p) || (old && listed(AFTER_3_12, p));
        if !t.types.contains_key(p) && !allowed {
            d.push(format!("extra {p}"));
        }
    }
    for (p, b) in &t.bools {
        if let Some(ob) = o.bools.get(p)
            && ob != b
        {
            d.push(format!("value of {p}: theirs {b:?}, ours {ob:?}"));
        }
    }
    for (p, all_zero) in &t.zero {
        let last = p.rsplit('.').next().unwrap_or("");
        if *all_zero
            && p.starts_with(".end.")
            && (ZERO_WHERE_UNMEASURED.contains(&last) || (!old && TCP_INFO.contains(&last)))
            && o.zero.get(p) == Some(&false)
        {
            d.push(format!("{p}: theirs 0, ours not"));
        }
    }
    d
}

/// The client's and the server's documents of one test of `prog` against
/// itself.
fn run_pair(prog: &PathBuf, args: &str) -> (Value, Value) {
    let port = free_port();
    let p = port.to_string();
    let mut srv = Proc::spawn(prog, &["-s", "-1", "-J", "-p", &p]);
    wait_listening(port);
    let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-J"];
    a.extend(args.split_whitespace());
    let c = run(prog, &a, T);
    assert_eq!(c.code, Some(0), "{prog:?} {args}: {}{}", c.stdout, c.stderr);
    assert!(srv.wait(T).is_some(), "{prog:?}: the -1 server did not end");
    (json(&c.stdout), json(&srv.out()))
}

fn parity(args: &str) {
    let mut peers = Vec::new();
    if let Some(p) = peer("iperf3") {
        peers.push((p, true));
    }
    if let Some(p) = newer_iperf3() {
        peers.push((p, false));
    }
    if peers.is_empty() {
        return;
    }
    let (oc, os) = run_pair(&wirespeed(), args);
    let mut problems = Vec::new();
    let mut newer_paths = None;
    for (prog, old) in &peers {
        let (tc, ts) = run_pair(prog, args);
        for (side, t, o) in [("client", &tc, &oc), ("server", &ts, &os)] {
            for x in differences(t, o, *old) {
                problems.push(format!("{} {side}: {x}", if *old { "3.12" } else { "newer" }));
            }
        }
        if !old {
            let mut all = Shape::of(&tc).types;
            all.extend(Shape::of(&ts).types);
            newer_paths = Some(all);
        }
    }
    // The allowance for 3.12 covers only what the newer iperf3 writes.
    if let Some(newer) = newer_paths {
        let ours: BTreeSet<String> = Shape::of(&oc)
            .types
            .into_keys()
            .chain(Shape::of(&os).types.into_keys())
            .collect();
        for p in ours.iter().filter(|p| listed(AFTER_3_12, p)) {
            if !newer.contains_key(p) {
                problems.push(format!(
                    "{p} is listed as a newer iperf3's key but it does not write it"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "-J {args}: differences from iperf3:\n{}",
        problems.join("\n")
    );
}

#[test]
fn tcp() {
    parity("-t 1");
}

#[test]
fn tcp_reverse() {
    parity("-t 1 -R");
    // A reverse client sent nothing: no TCP_INFO of its own (3.21).
    let (client, _) = run_pair(&wirespeed(), "-t 1 -R");
    for st in client["end"]["streams"].as_array().unwrap() {
        for k in TCP_INFO {
            assert_eq!(st["sender"][k], 0, "{k}: {st}");
        }
    }
}

#[test]
fn tcp_bidir() {
    parity("-t 1 --bidir");
}

#[test]
fn tcp_parallel() {
    parity("-t 1 -P 2");
}

#[test]
fn udp() {
    parity("-u -b 10M -t 1");
}

#[test]
fn udp_reverse() {
    parity("-u -b 10M -t 1 -R");
}

#[test]
fn udp_bidir() {
    parity("-u -b 10M -t 1 --bidir");
}

#[test]
fn udp_parallel() {
    parity("-u -b 10M -t 1 -P 2");
}
