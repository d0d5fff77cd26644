//! A two-namespace path for tests that need more than loopback: namespaces
//! `a` and `b` joined by a veth pair (10.251.N.1 <-> 10.251.N.2), optionally
//! shaped with tbf. Created by the test, removed when dropped. Traffic stays
//! inside the namespaces the test made.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::common::Proc;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Two namespaces joined by a veth pair.
pub struct NetnsPair {
    /// Client-side namespace.
    pub a: String,
    /// Server-side namespace.
    pub b: String,
    /// Address of `a`'s end.
    pub addr_a: String,
    /// Address of `b`'s end.
    pub addr_b: String,
    /// `a`'s interface.
    pub dev_a: String,
    /// Held while the pair exists.
    _turn: crate::common::PathTurn,
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

impl NetnsPair {
    /// Creates the pair, or `None` (with a notice) where namespaces cannot
    /// be made (not root, no `ip`).
    pub fn new() -> Option<NetnsPair> {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        let has_ip = Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success());
        if !root || !has_ip {
            eprintln!("NOTICE: network namespaces need root and iproute2; skipping");
            return None;
        }
        let turn = crate::common::path_turn();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}x{n}", std::process::id());
        let p = NetnsPair {
            a: format!("wsA{tag}"),
            b: format!("wsB{tag}"),
            addr_a: format!("10.251.{}.1", n % 250),
            addr_b: format!("10.251.{}.2", n % 250),
            dev_a: format!("wsa{tag}"),
            _turn: turn,
        };
        let dev_b = format!("wsb{tag}");
        let ok = ip(&["netns", "add", &p.a])
            && ip(&["netns", "add", &p.b])
            && ip(&["link", "add", &p.dev_a, "type", "veth", "peer", "name", &dev_b])
            && ip(&["link", "set", &p.dev_a, "netns", &p.a])
            && ip(&["link", "set", &dev_b, "netns", &p.b])
            && ip(&["-n", &p.a, "addr", "add", &format!("{}/24", p.addr_a), "dev", &p.dev_a])
            && ip(&["-n", &p.b, "addr", "add", &format!("{}/24", p.addr_b), "dev", &dev_b])
            && ip(&["-n", &p.a, "link", "set", &p.dev_a, "up"])
            && ip(&["-n", &p.b, "link", "set", &dev_b, "up"])
            && ip(&["-n", &p.a, "link", "set", "lo", "up"])
            && ip(&["-n", &p.b, "link", "set", "lo", "up"]);
        assert!(ok, "could not build the namespace pair");
        Some(p)
    }

    /// Shapes `a`'s egress (a -> b) with tbf at `rate` (e.g. "100mbit").
    pub fn shape(&self, rate: &str) {
        let ok = Command::new("ip")
            .args(["netns", "exec", &self.a, "tc", "qdisc", "add", "dev", &self.dev_a])
            .args(["root", "tbf", "rate", rate, "burst", "64kb", "latency", "20ms"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "tc tbf failed");
    }

    /// Starts `prog args` inside namespace `ns` (`ip netns exec` execs the
    /// program, so the pid is the program's).
    pub fn spawn(ns: &str, prog: &std::path::Path, args: &[&str]) -> Proc {
        let p = prog.to_string_lossy().into_owned();
        let mut all = vec!["netns", "exec", ns, &p];
        all.extend_from_slice(args);
        Proc::spawn(&PathBuf::from("ip"), &all)
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        // Deleting a namespace destroys its end of the veth pair, and so both.
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}
