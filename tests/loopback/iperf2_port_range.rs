//! iperf 2's `-p m-n`: a server listens on every port of the range, a
//! client sends one flow to each port (adjusting `-P`, with 2.1.8's
//! warning). Against the real iperf 2.1.8 both ways.

use crate::common;

use common::*;
use std::net::TcpListener;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// A base port with the next `n - 1` ports free too.
fn free_range(n: u16) -> u16 {
    for _ in 0..50 {
        let base = free_port();
        if base > 65535 - n {
            continue;
        }
        let held: Vec<_> = (base..base + n)
            .filter_map(|p| TcpListener::bind(("0.0.0.0", p)).ok())
            .collect();
        if held.len() == n as usize {
            return base;
        }
    }
    panic!("no {n} consecutive free ports");
}

#[test]
fn a_port_range_is_served_on_every_port_and_sent_one_flow_each() {
    for (s, c) in [(Iperf2::Ours, Iperf2::Real), (Iperf2::Real, Iperf2::Ours)] {
        let base = free_range(3);
        let range = format!("{base}-{}", base + 2);
        let Some((prog, mut args)) = s.command() else { return };
        args.extend(["-s".to_string(), "-p".to_string(), range.clone()]);
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let srv = Proc::spawn(&prog, &a);
        for p in base..base + 3 {
            wait_listening(p);
        }
        let Some((prog, mut args)) = c.command() else { return };
        args.extend(["-c", "127.0.0.1", "-t", "1", "-p", &range].map(String::from));
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let r = run(&prog, &a, T);
        assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
        assert!(
            r.stderr
                .contains("WARNING: port-range and -P mismatch (adjusting -P to 3)"),
            "{c:?} client:\n{}",
            r.stderr
        );
        assert!(r.stdout.contains("[SUM] 0.0000-"), "{}", r.stdout);
        wait::stdout_has(&srv, "[SUM] 0.0000-", wait::LONG);
        let out = stop_server(srv);
        if s == Iperf2::Ours {
            assert!(
                out.contains(&format!("Server listening on TCP ports {range} with pid")),
                "{out}"
            );
        }
        // One flow arrived on each port of the range, and they were summed.
        for p in base..base + 3 {
            assert!(
                out.contains(&format!("port {p} connected with 127.0.0.1")),
                "{s:?} server, no flow on {p}:\n{out}"
            );
        }
        assert!(out.contains("[SUM] 0.0000-"), "{s:?} server:\n{out}");
    }
}

#[test]
fn port_ranges_are_checked() {
    let ws = wirespeed();
    let e = |args: &[&str]| {
        let mut a = vec!["--iperf2"];
        a.extend_from_slice(args);
        let r = run(&ws, &a, T);
        assert_eq!(r.code, Some(1), "{args:?}: {}{}", r.stdout, r.stderr);
        r.stderr
    };
    assert!(e(&["-s", "-p", "6000-5000"]).contains("ascending"));
    assert!(e(&["-s", "-p", "5000-9000"]).contains("at most 1024 ports"));
    assert!(e(&["-s", "-p", "5000-70000"]).contains("out of range"));
}

#[test]
fn incr_dstport_sends_flow_i_to_port_plus_i() {
    for s in [Iperf2::Real, Iperf2::Ours] {
        let base = free_range(3);
        let range = format!("{base}-{}", base + 2);
        let Some((prog, mut args)) = s.command() else { return };
        args.extend(["-s".to_string(), "-p".to_string(), range]);
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let srv = Proc::spawn(&prog, &a);
        for p in base..base + 3 {
            wait_listening(p);
        }
        let Some(r) = iperf2_client(Iperf2::Ours, base, "-t 1 -P 3 --incr-dstport", T) else {
            return;
        };
        assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
        for p in base..base + 3 {
            assert!(
                r.stdout.contains(&format!("connected with 127.0.0.1 port {p}")),
                "{}",
                r.stdout
            );
        }
        wait::stdout_has(&srv, "[SUM] 0.0000-", wait::LONG);
        let out = stop_server(srv);
        assert!(out.contains("[SUM] 0.0000-"), "{s:?} server:\n{out}");
    }
}
