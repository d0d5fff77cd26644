//! TCP's ECN report stays out of the way where ECN is not in play: a
//! plain TCP test on this host (whose `net.ipv4.tcp_ecn` is the default,
//! answering only) writes no `tcp_ecn` key and no ECN line, in either
//! dialect's text, `-J` or `--json-stream`. `tests/paths/tcp_ecn.rs` has
//! the namespaces where it is.

use crate::common;

use std::time::Duration;

use common::*;

#[test]
fn a_plain_tcp_test_has_no_tcp_ecn_key_or_line() {
    let asks = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_ecn").is_ok_and(|v| v.trim() == "1");
    if asks {
        eprintln!("NOTICE: this host asks for ECN (net.ipv4.tcp_ecn=1); loopback connections negotiate it; skipping");
        return;
    }
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    for args in [
        &["-t", "1", "-i", "0.5"][..],
        &["-t", "1", "-J"],
        &["-t", "1", "-R", "-J"],
        &["-t", "1", "--json-stream"],
    ] {
        let mut all = vec!["-c", "127.0.0.1", "-p", &p];
        all.extend_from_slice(args);
        let r = run(&wirespeed(), &all, Duration::from_secs(30));
        assert_eq!(r.code, Some(0), "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("receiver"), "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("tcp_ecn"), "{args:?}: {}", r.stdout);
        assert!(!r.stdout.contains("ECN"), "{args:?}: {}", r.stdout);
    }
    let r = run(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "1", "-e"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("ECN"), "{}", r.stdout);
    let out = stop_server(srv);
    assert!(!out.contains("ECN"), "{out}");
}
