//! Loss through a real bottleneck is counted exactly.
//!
//! Three network namespaces: a sender, a router that forwards, and a
//! receiver. Toward the receiver the router's link has a `tbf` qdisc at
//! 50 Mbit/s; wirespeed sends UDP through it at 100 Mbit/s, so about half
//! is dropped there, and the lost count wirespeed reports must equal the
//! qdisc's own `dropped` counter.
//!
//! Two details keep that comparison exact. The control connection (TCP)
//! is policy-routed over a second, unshaped link, so the tbf carries only
//! the test's datagrams and its counter counts nothing else (IPv6 is off so
//! no router solicitation can land in it either). And the sender's link
//! segments UDP GSO batches (`gso_max_segs 1`), as a physical wire does:
//! a qdisc counts a dropped GSO batch as one drop however many datagrams
//! it held.
//!
//! Needs root (`ip netns`); skipped with a notice otherwise, unless
//! WIRESPEED_REQUIRE_PEERS=1 (CI). The namespaces are removed however the
//! test ends.

use crate::common;

use common::*;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Namespaces removed on drop.
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip")
                .args(["netns", "del", n])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Runs a setup command; panics with its stderr if it fails.
fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tbf_counters(ns: &str, dev: &str) -> (u64, u64) {
    let out = Command::new("tc")
        .args(["-n", ns, "-s", "-j", "qdisc", "show", "dev", dev])
        .output()
        .expect("tc");
    let v = json(&String::from_utf8_lossy(&out.stdout));
    let q = v
        .as_array()
        .and_then(|a| a.iter().find(|q| q["kind"] == "tbf"))
        .unwrap_or_else(|| panic!("no tbf qdisc on {dev}: {v}"));
    (q["packets"].as_u64().unwrap(), q["drops"].as_u64().unwrap())
}

#[test]
fn udp_loss_through_a_tbf_bottleneck_equals_the_qdisc_drops() {
    let required = std::env::var("WIRESPEED_REQUIRE_PEERS").as_deref() == Ok("1");
    if !is_root() || Command::new("ip").arg("-V").output().is_err() {
        assert!(
            !required,
            "the bottleneck test needs root and iproute2 (WIRESPEED_REQUIRE_PEERS=1)"
        );
        eprintln!("NOTICE: not root or no iproute2; skipping the namespace bottleneck test");
        return;
    }
    let id = format!("{}{}", std::process::id(), free_port());
    let (s, r, d) = (format!("wsbn-s-{id}"), format!("wsbn-r-{id}"), format!("wsbn-d-{id}"));
    let _guard = Namespaces(vec![s.clone(), r.clone(), d.clone()]);
    for n in [&s, &r, &d] {
        sh(&["ip", "netns", "add", n]);
        sh(&[
            "ip",
            "netns",
            "exec",
            n,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
            "net.ipv4.conf.all.rp_filter=0",
            "net.ipv4.conf.default.rp_filter=0",
        ]);
        sh(&["ip", "-n", n, "link", "set", "lo", "up"]);
    }
    sh(&[
        "ip", "link", "add", "s0", "netns", &s, "type", "veth", "peer", "name", "r0", "netns", &r,
    ]);
    sh(&[
        "ip", "link", "add", "r1", "netns", &r, "type", "veth", "peer", "name", "d0", "netns", &d,
    ]);
    sh(&[
        "ip", "link", "add", "r2", "netns", &r, "type", "veth", "peer", "name", "d1", "netns", &d,
    ]);
    sh(&["ip", "-n", &s, "addr", "add", "10.201.1.1/24", "dev", "s0"]);
    sh(&["ip", "-n", &s, "link", "set", "s0", "gso_max_segs", "1"]);
    sh(&["ip", "-n", &r, "addr", "add", "10.201.1.2/24", "dev", "r0"]);
    sh(&["ip", "-n", &r, "addr", "add", "10.201.2.1/24", "dev", "r1"]);
    sh(&["ip", "-n", &d, "addr", "add", "10.201.2.2/24", "dev", "d0"]);
    for (n, dev) in [(&s, "s0"), (&r, "r0"), (&r, "r1"), (&r, "r2"), (&d, "d0"), (&d, "d1")] {
        sh(&["ip", "-n", n, "link", "set", dev, "up"]);
    }
    sh(&["ip", "-n", &s, "route", "add", "default", "via", "10.201.1.2"]);
    sh(&["ip", "-n", &d, "route", "add", "default", "via", "10.201.2.1"]);
    sh(&["ip", "netns", "exec", &r, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    // The control connection goes around the bottleneck.
    sh(&[
        "ip",
        "-n",
        &r,
        "route",
        "add",
        "10.201.2.2/32",
        "dev",
        "r2",
        "table",
        "100",
    ]);
    sh(&[
        "ip", "-n", &r, "rule", "add", "ipproto", "tcp", "lookup", "100", "priority", "100",
    ]);
    sh(&[
        "tc", "-n", &r, "qdisc", "add", "dev", "r1", "root", "handle", "10:", "tbf", "rate", "50mbit", "burst", "32kb",
        "limit", "64kb",
    ]);

    let ws = wirespeed();
    let ws = ws.to_str().unwrap();
    let ip = PathBuf::from("ip");
    let mut server = Proc::spawn(&ip, &["netns", "exec", &d, ws, "-s", "-p", "5201", "-1"]);
    assert!(
        server.wait_for_line("Server listening", Duration::from_secs(10)),
        "server did not start: {}",
        server.err()
    );
    let c = run(
        &ip,
        &[
            "netns",
            "exec",
            &s,
            ws,
            "-c",
            "10.201.2.2",
            "-p",
            "5201",
            "-u",
            "-b",
            "100M",
            "-l",
            "1400",
            "-t",
            "2",
            "-J",
        ],
        Duration::from_secs(40),
    );
    server.wait(Duration::from_secs(10));
    assert_eq!(c.code, Some(0), "client failed:\n{}\n{}", c.stdout, c.stderr);
    let v = json(&c.stdout);
    let sent = v["end"]["sum_sent"]["packets"].as_u64().unwrap();
    let lost = v["end"]["sum_received"]["lost_packets"].as_u64().unwrap();
    let total = v["end"]["sum_received"]["packets"].as_u64().unwrap();
    let (passed, dropped) = tbf_counters(&r, "r1");
    let report = format!(
        "sent {sent}, receiver total {total}, lost {lost}; tbf passed {passed}, dropped {dropped}\nserver: {}",
        server.out()
    );
    // A real bottleneck: roughly half of what was sent is dropped.
    assert!(dropped > sent / 4 && dropped < sent * 3 / 4, "{report}");
    assert_eq!(total, sent, "{report}");
    assert_eq!(lost, dropped, "{report}");
}
