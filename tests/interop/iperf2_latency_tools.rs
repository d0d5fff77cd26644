//! iperf 2's latency tools against the real iperf 2.1.8, both ways:
//! `--connect-only` (three-way handshakes, their count and `[ CT]` times).

use crate::common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(60);

/// The connection lines with a connect time, and the `[ CT]` line's
/// (tot, err).
fn handshakes(out: &str) -> (usize, Option<(u64, u64)>) {
    let lines = out
        .lines()
        .filter(|l| l.contains(" connected with ") && l.contains("(ct="))
        .count();
    let ct = out
        .lines()
        .find(|l| l.starts_with("[ CT] final connect times"))
        .map(|l| {
            let tail = l.rsplit("= ").next().unwrap();
            let (t, e) = tail.trim().split_once('/').unwrap();
            (t.parse().unwrap(), e.parse().unwrap())
        });
    (lines, ct)
}

#[test]
fn our_connect_only_client_against_the_real_server() {
    if peer("iperf").is_none() {
        return;
    }
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Real, port, &[]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, "--connect-only=3 -e", T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("TCP three-way-handshake (3WHS) only\n"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("TCP window size"), "{}", r.stdout);
    assert_eq!(handshakes(&r.stdout), (3, Some((3, 0))), "{}", r.stdout);
    // Without -e: the lines still carry ct= and the date, no [ CT].
    let r = iperf2_client(Iperf2::Ours, port, "--connect-only=2", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(handshakes(&r.stdout), (2, None), "{}", r.stdout);
    assert!(
        r.stdout
            .lines()
            .filter(|l| l.contains("(ct="))
            .all(|l| l.ends_with("(UTC)") || l.contains(" on "))
    );
    // -P 2 with the default 10 each.
    let r = iperf2_client(Iperf2::Ours, port, "--connect-only -P 2 -e", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(handshakes(&r.stdout), (20, Some((20, 0))), "{}", r.stdout);
    // -i: one per interval until -t.
    let r = iperf2_client(Iperf2::Ours, port, "--connect-only -i 0.5 -t 2 -e", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(handshakes(&r.stdout), (4, Some((4, 0))), "{}", r.stdout);
    // The real server saw every handshake and no data: 2.1.8 prints a
    // `(null)` connection line for each.
    let nulls = |t: &str| t.lines().filter(|l| l.starts_with("(null)local")).count();
    wait::text(
        "29 handshakes at the server",
        wait::LONG,
        || srv.out(),
        |t| nulls(t) >= 29,
    );
    srv.signal(15);
    srv.wait(T);
    let seen = nulls(&srv.out());
    assert_eq!(seen, 3 + 2 + 20 + 4, "{}", srv.out());
}

#[test]
fn the_real_connect_only_client_against_our_server() {
    if peer("iperf").is_none() {
        return;
    }
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let r = iperf2_client(Iperf2::Real, port, "--connect-only=5 -e", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(handshakes(&r.stdout), (5, Some((5, 0))), "{}", r.stdout);
    // The server takes them in its stride and still serves a test.
    let r = iperf2_client(Iperf2::Real, port, "-t 1", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("bits/sec"), "{}", r.stdout);
    let out = stop_server(srv);
    assert!(!out.contains("panicked"), "{out}");
    // And on the shared port of a default (iperf3-dialect) server.
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let r = iperf2_client(Iperf2::Real, port, "--connect-only=3 -e", T).unwrap();
    assert_eq!(handshakes(&r.stdout), (3, Some((3, 0))), "{}", r.stdout);
    let r = iperf2_client(Iperf2::Real, port, "-t 1", T).unwrap();
    assert!(r.stdout.contains("bits/sec"), "{}", r.stdout);
}

#[test]
fn connect_only_refusals_and_failures() {
    let r = run(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "-u", "--connect-only"],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("option of --connect-only not supported with -u UDP"),
        "{}",
        r.stderr
    );
    let r = run(&wirespeed(), &["--iperf2", "-c", "127.0.0.1", "--connect-only=0"], T);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("out of range"), "{}", r.stderr);
    // Nobody listens: each connect fails in one line, and the test fails.
    let port = free_port().to_string();
    let r = run(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "-p", &port, "--connect-only=2"],
        T,
    );
    assert_eq!(r.code, Some(1), "{} {}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.matches("tcp connect failed: Connection refused").count(),
        2,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("none of 2 connects succeeded"), "{}", r.stderr);
}

fn epoch_in(secs: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    (now + secs).to_string()
}

#[test]
fn txstart_time_waits_for_the_epoch_both_ways() {
    let Some(iperf) = peer("iperf") else { return };
    for udp in [false, true] {
        let u: &[&str] = if udp { &["-u", "-b", "10m"] } else { &[] };
        // Our client, the real server: it sees the scheduled start.
        let port = free_port();
        let p = port.to_string();
        let mut args = vec!["-s", "-e", "-p", &p];
        args.extend_from_slice(&u[..u.len().min(1)]);
        let mut srv = Proc::spawn(&iperf, &args);
        if udp {
            wait_bound_udp(port);
        } else {
            wait_listening(port);
        }
        let at = epoch_in(2);
        let mut args = vec![
            "--iperf2",
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "--txstart-time",
            &at,
        ];
        args.extend_from_slice(u);
        let t0 = std::time::Instant::now();
        let r = run(&wirespeed(), &args, T);
        let took = t0.elapsed().as_secs_f64();
        assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
        assert!(r.stdout.contains("(epoch-start)"), "{}", r.stdout);
        assert!(r.stdout.contains("] Client traffic to start in "), "{}", r.stdout);
        // Up to 2 s of waiting (the epoch is a whole second), then 1 s.
        assert!(took > 2.0, "udp={udp}: the test took {took:.2} s");
        wait::stdout_has(&srv, "(epoch-start)", wait::LONG);
        srv.signal(15);
        srv.wait(T);
        assert!(srv.out().contains("(epoch-start)"), "udp={udp}: {}", srv.out());

        // The real client, our server.
        let port = free_port();
        let p = port.to_string();
        let mut args = vec!["--iperf2", "-s", "-e", "-p", &p];
        args.extend_from_slice(&u[..u.len().min(1)]);
        let srv = Proc::spawn(&wirespeed(), &args);
        if udp {
            wait_bound_udp(port);
        } else {
            wait_listening(port);
        }
        let at = epoch_in(1);
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1", "--txstart-time", &at];
        args.extend_from_slice(u);
        let r = run(&iperf, &args, T);
        assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
        let out = stop_server(srv);
        assert!(out.contains("(epoch-start)"), "udp={udp}: {out}");
        assert!(out.contains("bits/sec"), "{out}");
    }
}

#[test]
fn txstart_time_checks_and_a_past_time() {
    let r = run(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "--txstart-time", "-5"],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("ERROR: --txstart-time must be a positive value"),
        "{}",
        r.stderr
    );
    let far = epoch_in(4000);
    let r = run(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "--txstart-time", &far],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("exceeds max scheduled delay of 3600 secs"),
        "{}",
        r.stderr
    );
    let r = run(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "--txstart-time", "12x"],
        T,
    );
    assert_eq!(r.code, Some(1));
    // A time already past: a warning, and the test runs at once.
    let port = free_port();
    let _srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, "-t 1 --txstart-time 1000000000.5", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("WARNING: --txstart-time (1000000000.500000) "),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(" is before now "), "{}", r.stdout);
}

/// Ports on which a connection line of `out` says a flow arrived.
fn ports_served(out: &str) -> Vec<u16> {
    let mut v: Vec<u16> = out
        .lines()
        .filter(|l| l.contains(" connected with "))
        .filter_map(|l| l.split(" port ").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn udp_port_ranges_both_ways() {
    let Some(iperf) = peer("iperf") else { return };
    // Three consecutive free UDP ports: find a base whose range is free.
    let base = (0..50)
        .map(|_| free_port())
        .find(|p| {
            *p < 65000
                && (0..3).all(|i| std::net::UdpSocket::bind(("127.0.0.1", p + i)).is_ok())
                && (0..3).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok())
        })
        .unwrap();
    let range = format!("{base}-{}", base + 2);
    let want: Vec<u16> = (base..=base + 2).collect();
    for ours_serve in [true, false] {
        let srv = if ours_serve {
            Proc::spawn(&wirespeed(), &["--iperf2", "-s", "-u", "-p", &range])
        } else {
            Proc::spawn(&iperf, &["-s", "-u", "-p", &range])
        };
        for i in 0..3 {
            wait_bound_udp(base + i);
        }
        let client_args = ["-c", "127.0.0.1", "-u", "-p", &range, "-t", "1", "-b", "5m"];
        let r = if ours_serve {
            run(&iperf, &client_args, T)
        } else {
            let mut a = vec!["--iperf2"];
            a.extend_from_slice(&client_args);
            run(&wirespeed(), &a, T)
        };
        assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
        // Each flow got its server's report, with every datagram counted.
        let reports: Vec<&str> = r.stdout.split("Server Report:").skip(1).collect();
        assert_eq!(reports.len(), 3, "{}", r.stdout);
        for rep in &reports {
            let line = rep.lines().find(|l| l.contains(" sec ")).unwrap();
            assert!(line.contains(" 0/"), "a lost datagram: {line}");
        }
        let out = stop_server(srv);
        assert_eq!(ports_served(&out), want, "ours_serve={ours_serve}:\n{out}");
        assert!(out.contains(&format!("Server listening on UDP ports {range}")), "{out}");
    }
}

/// The rates (bits/s) of a client's interval lines.
fn interval_rates(out: &str) -> Vec<f64> {
    out.lines()
        .filter(|l| l.starts_with("[  1] ") && l.contains(" sec ") && !l.contains("0.0000-4."))
        .filter_map(|l| {
            let mut w = l.split_whitespace().rev();
            let unit = w.next()?;
            let v: f64 = w.next()?.parse().ok()?;
            let scale = match unit {
                "Gbits/sec" => 1e9,
                "Mbits/sec" => 1e6,
                "Kbits/sec" => 1e3,
                "bits/sec" => 1.0,
                _ => return None,
            };
            Some(v * scale)
        })
        .collect()
}

fn mean_stdev(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
    (m, var.sqrt())
}

#[test]
fn a_varying_load_against_the_real_server() {
    if peer("iperf").is_none() {
        return;
    }
    for udp in [true, false] {
        let mut spread = Vec::new();
        for rate in ["20m,10m", "20m"] {
            // A server per test (2.1.8's UDP server stops taking clients
            // after one whose rate it did not expect).
            let port = free_port();
            let p = port.to_string();
            let _srv = iperf2_server(Iperf2::Real, port, if udp { &["-u"] } else { &[] }).unwrap();
            let mut args = vec![
                "--iperf2",
                "-c",
                "127.0.0.1",
                "-p",
                &p,
                "-t",
                "4",
                "-i",
                "0.2",
                "-b",
                rate,
            ];
            if udp {
                args.push("-u");
            } else {
                // Small writes, so intervals are not quantised by them.
                args.extend(["-l", "8K"]);
            }
            let r = run(&wirespeed(), &args, T);
            assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
            let rates = interval_rates(&r.stdout);
            assert!(rates.len() >= 18, "{}", r.stdout);
            let (m, s) = mean_stdev(&rates);
            assert!(
                (m / 20e6 - 1.0).abs() < 0.25,
                "udp={udp} -b {rate}: mean {m}\n{}",
                r.stdout
            );
            if udp {
                // The real server's report comes back; on a loaded host
                // 2.1.8's receiver itself may drop a few datagrams.
                let report = r.stdout.split("Server Report:").nth(1).unwrap_or_default();
                let lost = report.split_whitespace().find_map(|w| {
                    w.split_once('/')
                        .and_then(|(l, t)| Some((l.parse::<f64>().ok()?, t.parse::<f64>().ok()?)))
                });
                assert!(lost.is_some_and(|(l, t)| t > 0.0 && l / t < 0.01), "{}", r.stdout);
            }
            spread.push(s);
        }
        // Each 0.2 s interval averages two draws: about 10/√2 Mbit/s apart.
        assert!(spread[0] > 2.5e6, "udp={udp}: a varying load barely varies: {spread:?}");
        assert!(spread[1] < 1.5e6, "udp={udp}: a steady load varies: {spread:?}");
    }
}

#[test]
fn periodic_bursts_both_ways() {
    if peer("iperf").is_none() {
        return;
    }
    let args = "--burst-size 100K --burst-period 0.5 -l 10K -t 2 -e";
    // Our client, the real server: four bursts of 100 KBytes, each its
    // own line there.
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Real, port, &["-e"]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("Bursting:  100 KByte every 0.50 second(s)"),
        "{}",
        r.stdout
    );
    let total = r
        .stdout
        .lines()
        .find(|l| l.contains(" sec ") && l.contains("Write") || l.contains("/0 "));
    assert!(
        r.stdout.contains("  400 KBytes ") && r.stdout.contains(" 40/0 "),
        "{total:?}\n{}",
        r.stdout
    );
    let bursts = |t: &str| {
        t.lines()
            .filter(|l| l.contains("[  1] 0.0000-") && l.contains("   100 KBytes "))
            .count()
    };
    wait::text("the server's 4 bursts", wait::LONG, || srv.out(), |t| bursts(t) >= 4);
    srv.signal(15);
    srv.wait(T);
    let out = srv.out();
    assert!(out.contains("(burst-period=0.5000s)"), "{out}");
    let bursts = bursts(&out);
    assert_eq!(bursts, 4, "{out}");
    // The real client, our server: every burst's bytes, and the tag.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-e"]).unwrap();
    let real = "--burst-size 100K --burst-period 0.5 -l 10K -t 2";
    let r = iperf2_client(Iperf2::Real, port, real, T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = stop_server(srv);
    assert!(out.contains("(burst-period=0.5000s)"), "{out}");
    assert!(out.contains("   400 KBytes "), "{out}");
    // Refusals.
    for (a, why) in [
        (
            "--burst-size 64K",
            "must be equal or larger to write length (-l) 131072",
        ),
        ("--burst-size 100K -l 30K", "whole number of writes"),
        ("--burst-period 0.5 -b 10m", "cannot be used with -b"),
        ("--burst-period 0.5 -R", "the client must be the sender"),
    ] {
        let r = iperf2_client(Iperf2::Ours, 9, a, T).unwrap();
        assert_eq!(r.code, Some(1), "{a}");
        assert!(r.stderr.contains(why), "{a}: {}", r.stderr);
    }
}

#[test]
fn dscp_and_tcp_cca_reach_the_socket() {
    let Some(strace) = peer("strace") else { return };
    let port = free_port();
    let _srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let ws = wirespeed();
    let p = port.to_string();
    let r = run(
        &strace,
        &[
            "-f",
            "-e",
            "trace=setsockopt",
            ws.to_str().unwrap(),
            "--iperf2",
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "0.3",
            "--tcp-cca",
            "reno",
            "--dscp",
            "46",
        ],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // DSCP 46 is TOS 184; "reno" as the 4-byte value strace shows.
    assert!(r.stderr.contains("IP_TOS, [184]"), "{}", r.stderr);
    let reno = i32::from_le_bytes(*b"reno");
    assert!(r.stderr.contains(&format!("TCP_CONGESTION, [{reno}]")), "{}", r.stderr);
}
