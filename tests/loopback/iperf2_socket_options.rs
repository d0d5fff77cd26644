//! iperf 2's socket options that reach the kernel: `--fq-rate` (fair-queue
//! pacing of the client's flows, and of the server's sending side of -R
//! when the client's header asks for it) against the real iperf 2.1.8 both
//! ways, `--local-only` (SO_DONTROUTE) across network namespaces, and the
//! other TCP options 2.1.8 applies to its sockets and reads.

use crate::common;
use crate::common::netns;

use common::*;
use netns::NetnsPair;
use std::process::Command;
use std::time::Duration;

const T: Duration = Duration::from_secs(40);

/// The rate in bit/s of the first line of `out` that holds `tag` and a
/// whole-test interval.
fn rate_of(out: &str, tag: &str) -> f64 {
    let line = out
        .lines()
        .find(|l| l.contains(tag) && l.contains(" 0.0000-"))
        .unwrap_or_else(|| panic!("no {tag} total in:\n{out}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w
        .iter()
        .position(|t| t.ends_with("bits/sec"))
        .unwrap_or_else(|| panic!("no rate in {line}"));
    let v: f64 = w[i - 1].parse().unwrap();
    v * match w[i].chars().next() {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        _ => 1.0,
    }
}

#[test]
fn fq_rate_paces_the_client_and_the_reverse_sender_with_real_peers() {
    // Unpaced, loopback moves gigabits; paced at 10 Mbit/s the receivers
    // see about 10 (2.1.8 too reports 10-16, its sender's socket buffer
    // drains at the paced rate after the test's time).
    let limit = 30e6;
    for (s, c) in [(Iperf2::Real, Iperf2::Ours), (Iperf2::Ours, Iperf2::Real)] {
        let port = free_port();
        let Some(srv) = iperf2_server(s, port, &[]) else { return };
        // Forward: the client's own flow is paced; the server measures.
        let Some(fwd) = iperf2_client(c, port, "-t 1 --fq-rate 10m", T) else {
            return;
        };
        assert_eq!(fwd.code, Some(0), "{}{}", fwd.stdout, fwd.stderr);
        assert!(
            fwd.stdout.contains("fair-queue socket pacing set to 10.0 Mbit/s"),
            "{}",
            fwd.stdout
        );
        // Reverse: the header carries the rate, the server paces its sending.
        let Some(rev) = iperf2_client(c, port, "-t 1 -R --fq-rate 10m", T) else {
            return;
        };
        assert_eq!(rev.code, Some(0), "{}{}", rev.stdout, rev.stderr);
        let got = rate_of(&rev.stdout, "[ *1]");
        assert!(
            got > 1e6 && got < limit,
            "{s:?} server sent -R at {got} bit/s:\n{}",
            rev.stdout
        );
        // Both flows' totals are out (the reverse one's after its lines).
        wait::text(
            "the server's two totals",
            wait::LONG,
            || srv.out(),
            |t| t.contains("(reverse) (fq)") && t.lines().filter(|l| l.contains(" 0.0000-")).count() >= 2,
        );
        let out = stop_server(srv);
        let recv = rate_of(&out, "[  1]");
        assert!(recv > 1e6 && recv < limit, "{s:?} server received {recv} bit/s:\n{out}");
        assert!(out.contains("(reverse) (fq)"), "{s:?} server:\n{out}");
    }
}

#[test]
fn fq_rate_units_are_bits_in_lower_case_and_bytes_in_upper_case() {
    let ws = wirespeed();
    let port = free_port();
    let Some(srv) = iperf2_server(Iperf2::Ours, port, &[]) else {
        return;
    };
    let r = run(
        &ws,
        &[
            "--iperf2",
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "0.5",
            "--fq-rate",
            "2M",
        ],
        T,
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("fair-queue socket pacing set to 16.0 Mbit/s"),
        "{}",
        r.stdout
    );
    stop_server(srv);
    let bad = run(&ws, &["--iperf2", "-c", "127.0.0.1", "--fq-rate", "10x"], T);
    assert_eq!(bad.code, Some(1));
    assert!(
        bad.stderr.contains("--fq-rate value of '10x' not recognized"),
        "{}",
        bad.stderr
    );
    let bad = run(&ws, &["--iperf2", "-c", "127.0.0.1", "--local-only=2"], T);
    assert_eq!(bad.code, Some(1));
    assert!(bad.stderr.contains("--local-only"), "{}", bad.stderr);
}

#[test]
fn local_only_reaches_a_neighbour_but_not_a_host_behind_a_gateway() {
    let Some(path) = NetnsPair::new() else { return };
    // `b` also owns an address on its loopback that `a` reaches only
    // through `b` as a gateway.
    let n: u8 = path.addr_b.split('.').nth(2).unwrap().parse().unwrap();
    let far = format!("10.252.{n}.9");
    let ok = |args: &[&str]| Command::new("ip").args(args).status().is_ok_and(|s| s.success());
    assert!(ok(&["-n", &path.b, "addr", "add", &format!("{far}/32"), "dev", "lo"]));
    assert!(ok(&[
        "-n",
        &path.a,
        "route",
        "add",
        &format!("{far}/32"),
        "via",
        &path.addr_b
    ]));
    let ws = wirespeed();
    let port = free_port().to_string();
    let srv = NetnsPair::spawn(&path.b, &ws, &["--iperf2", "-s", "-p", &port]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let client = |host: &str, extra: &[&str]| {
        let mut args = vec!["--iperf2", "-c", host, "-p", &port, "-t", "0.5"];
        args.extend_from_slice(extra);
        let mut c = NetnsPair::spawn(&path.a, &ws, &args);
        let st = c.wait(Duration::from_secs(20)).expect("client ends");
        (st.code(), c.out(), c.err())
    };
    // Through the gateway without the option, directly with it.
    let (code, out, err) = client(&far, &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = client(&path.addr_b, &["--local-only"]);
    assert_eq!(code, Some(0), "{out}{err}");
    // With it, the far address is not on a connected network.
    let (code, out, err) = client(&far, &["--local-only"]);
    assert_ne!(code, Some(0), "{out}{err}");
    assert!(format!("{out}{err}").contains("Network is unreachable"), "{out}{err}");
    let (code, out, err) = client(&far, &["-u", "--local-only", "-b", "1m"]);
    assert_ne!(code, Some(0), "{out}{err}");
    drop(srv);
}

/// The values of `key:` fields that `ss -tinH [extra] state established
/// FILTER` shows, sampled every 50 ms over 1.5 s of a running test.
fn ss_sample(filter: &str, key: &str, extra: &[&str]) -> Vec<String> {
    let prefix = format!("{key}:");
    let mut seen = Vec::new();
    for _ in 0..30 {
        // Samples spread over a span of the test: the time is the point.
        wait::pause(Duration::from_millis(50));
        let Ok(out) = Command::new("ss")
            .arg("-tinH")
            .args(extra)
            .args(["state", "established", filter])
            .output()
        else {
            continue;
        };
        seen.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|w| w.strip_prefix(prefix.as_str()).map(String::from)),
        );
    }
    seen
}

/// The largest numeric `key:` value `ss` showed for `filter`.
fn ss_max(filter: &str, key: &str) -> Option<u64> {
    ss_sample(filter, key, &[]).iter().filter_map(|v| v.parse().ok()).max()
}

/// Starts a client (`-c 127.0.0.1 -p port args...`) without waiting for it.
fn spawn_client(who: Iperf2, port: u16, args: &str) -> Option<Proc> {
    let (prog, mut a) = who.command()?;
    a.extend(["-c", "127.0.0.1", "-p"].map(String::from));
    a.push(port.to_string());
    a.extend(args.split_whitespace().map(String::from));
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    Some(Proc::spawn(&prog, &a))
}

#[test]
fn rx_window_clamp_caps_the_window_the_server_offers() {
    for s in [Iperf2::Real, Iperf2::Ours] {
        let port = free_port();
        let Some(srv) = iperf2_server(s, port, &["--tcp-rx-window-clamp", "100K"]) else {
            return;
        };
        let Some(mut cli) = spawn_client(Iperf2::Real, port, "-t 3") else {
            return;
        };
        // The largest window offered to the client's socket during the test.
        let seen = ss_max(&format!("( dport = :{port} )"), "snd_wnd");
        cli.wait(T).expect("client ends");
        let out = stop_server(srv);
        // Unclamped, loopback offers megabytes; 100 KiB rounds up to the
        // window scale's granularity (2.1.8's server: 131070).
        let w = seen.expect("the client's socket seen by ss");
        assert!(w <= 200_000, "{s:?} server offered {w} bytes");
        assert!(out.contains("(clamp=102400)"), "{s:?} server:\n{out}");
    }
}

#[test]
fn write_prefetch_bounds_the_unsent_queue_on_the_sending_side() {
    // Unbounded, a loopback sender queues megabytes unsent; with a 64 KiB
    // watermark a write waits until less than that is queued.
    for (s, c, reverse) in [(Iperf2::Real, Iperf2::Ours, false), (Iperf2::Ours, Iperf2::Real, true)] {
        let port = free_port();
        let Some(srv) = iperf2_server(s, port, &[]) else { return };
        let args = format!("-t 3 --tcp-write-prefetch 64K{}", if reverse { " -R" } else { "" });
        let Some(mut cli) = spawn_client(c, port, &args) else {
            return;
        };
        // The sender's socket: the client's (to the port), or the server's (from it).
        let filter = if reverse {
            format!("( sport = :{port} )")
        } else {
            format!("( dport = :{port} )")
        };
        let q = ss_max(&filter, "notsent");
        cli.wait(T).expect("client ends");
        let out = stop_server(srv);
        let q = q.expect("the sender's socket seen by ss");
        assert!(
            q <= 400_000,
            "{c:?} client, {s:?} server (reverse {reverse}): {q} bytes unsent"
        );
        let shows = if reverse { out } else { cli.out() };
        assert!(shows.contains("(prefetch=65536)"), "{shows}");
    }
}

/// Runs `prog args` under `strace -f -e trace=setsockopt` to its end and
/// returns how many TCP_QUICKACK calls it made (None: no strace, skipped).
fn quickacks(prog: &std::path::Path, args: &[&str]) -> Option<usize> {
    let strace = peer("strace")?;
    let log = std::env::temp_dir().join(format!("ws-qack-{}-{}", std::process::id(), free_port()));
    let log_s = log.to_string_lossy().into_owned();
    let p = prog.to_string_lossy().into_owned();
    let mut all = vec!["-f", "-e", "trace=setsockopt", "-o", &log_s, &p];
    all.extend_from_slice(args);
    let r = run(&strace, &all, T);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    Some(text.lines().filter(|l| l.contains("TCP_QUICKACK")).count())
}

#[test]
fn tcp_quickack_rearms_quick_acks_on_every_read_where_it_reads() {
    let ws = wirespeed();
    let Some(real) = peer("iperf") else { return };
    // Our client reading (-R) from the real server; without the option, none.
    let port = free_port();
    let Some(srv) = iperf2_server(Iperf2::Real, port, &[]) else {
        return;
    };
    let p = port.to_string();
    let base = ["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "1", "-R"];
    let Some(with) = quickacks(&ws, &[&base[..], &["--tcp-quickack"]].concat()) else {
        return;
    };
    let without = quickacks(&ws, &base).unwrap();
    let out = stop_server(srv);
    assert!(with >= 10, "{with} TCP_QUICKACK calls");
    assert_eq!(without, 0);
    // 2.1.8's server is not asked to (it only sends in -R).
    assert!(out.contains("(reverse) (icwnd"), "{out}");
    // Our server reading from the real client: the header asks for it. The
    // server serves one connection (-P 1) and ends, and strace with it.
    let port = free_port().to_string();
    let ws_s = ws.to_string_lossy().into_owned();
    let strace = peer("strace").unwrap();
    let log = std::env::temp_dir().join(format!("ws-qack-srv-{}-{port}", std::process::id()));
    let log_s = log.to_string_lossy().into_owned();
    let mut srv = Proc::spawn(
        &strace,
        &[
            "-f",
            "-e",
            "trace=setsockopt",
            "-o",
            &log_s,
            &ws_s,
            "--iperf2",
            "-s",
            "-P",
            "1",
            "-p",
            &port,
        ],
    );
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let r = run(&real, &["-c", "127.0.0.1", "-p", &port, "-t", "1", "--tcp-quickack"], T);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("(qack)"), "{}", r.stdout);
    srv.wait(T).expect("the -P 1 server ends");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let n = text.lines().filter(|l| l.contains("TCP_QUICKACK")).count();
    assert!(n >= 10, "our server made {n} TCP_QUICKACK calls");
    assert!(srv.out().contains("(qack)"), "{}", srv.out());
}

#[test]
fn tos_override_marks_what_the_server_sends_back() {
    for s in [Iperf2::Real, Iperf2::Ours] {
        let port = free_port();
        let Some(srv) = iperf2_server(s, port, &["--tos-override", "0x48"]) else {
            return;
        };
        let Some(mut cli) = spawn_client(Iperf2::Real, port, "-t 2 -R") else {
            return;
        };
        // The server's socket of the test, as `ss --tos` reports it.
        let tos = ss_sample(&format!("( sport = :{port} )"), "tos", &["--tos"]);
        cli.wait(T).expect("client ends");
        let out = stop_server(srv);
        assert!(
            !tos.is_empty() && tos.iter().all(|t| t == "0x48"),
            "{s:?} server: {tos:?}"
        );
        assert!(out.contains("Reflected TOS will be set to 0x48"), "{out}");
    }
}

#[test]
fn a_server_read_rate_limit_paces_its_reads() {
    // `-s -b 100m`: the server reads each flow at 100 Mbit/s, so the
    // sender, blocked by TCP, moves about that too (loopback: gigabits).
    for s in [Iperf2::Real, Iperf2::Ours] {
        let port = free_port();
        let Some(srv) = iperf2_server(s, port, &["-b", "100m"]) else {
            return;
        };
        let Some(r) = iperf2_client(Iperf2::Real, port, "-t 2", T) else {
            return;
        };
        assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
        wait::text(
            "the server's total",
            wait::LONG,
            || srv.out(),
            |t| t.lines().any(|l| l.contains("[  1]") && l.contains(" 0.0000-")),
        );
        let out = stop_server(srv);
        let got = rate_of(&out, "[  1]");
        assert!((80e6..125e6).contains(&got), "{s:?} server read at {got} bit/s:\n{out}");
    }
}
