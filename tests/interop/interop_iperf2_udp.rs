//! The iperf 2 dialect's UDP tests against the real iperf 2.1.8 (Debian's),
//! both directions (real server + our client, our server + real client),
//! and against itself: the server report, `-e`, `-P`, `-d`/`-r`, `-R`,
//! `--full-duplex`, `-y C` rows, histograms, multicast in a network
//! namespace, and iperf 2 UDP clients on the iperf3 server's port.
//! Tests that need the real iperf are skipped with a notice when it is
//! missing, unless WIRESPEED_REQUIRE_PEERS=1. Rates are low (1-5 Mbit/s)
//! and tests short, so a loaded machine does not lose datagrams.

use crate::common;
use crate::common::netns;

use common::*;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// Both interop directions: (server, client).
const BOTH: [(Iperf2, Iperf2); 2] = [(Iperf2::Real, Iperf2::Ours), (Iperf2::Ours, Iperf2::Real)];

/// Whether /proc's UDP table text shows a socket bound to `port`.
fn bound_in(table: &str, port: u16) -> bool {
    let tail = format!(":{port:04X}");
    table
        .lines()
        .any(|l| l.split_whitespace().nth(1).is_some_and(|a| a.ends_with(&tail)))
}

/// Waits until a UDP socket is bound to `port` (by reading /proc, in
/// network namespace `ns` if given).
fn wait_udp_bound_in(ns: Option<&str>, port: u16) {
    wait::condition(
        format_args!("a UDP socket on port {port} (netns {ns:?})"),
        wait::LONG,
        || {
            ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
                let table = match ns {
                    None => std::fs::read_to_string(f).unwrap_or_default(),
                    Some(n) => std::process::Command::new("ip")
                        .args(["netns", "exec", n, "cat", f])
                        .output()
                        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                        .unwrap_or_default(),
                };
                bound_in(&table, port)
            })
        },
    );
}

fn wait_udp_bound(port: u16) {
    wait_udp_bound_in(None, port);
}

/// Starts a UDP iperf 2 server (`-s -u -p port extra...`), bounded by its
/// own listen time; `None` if the real iperf is asked for and missing.
fn udp_server(who: Iperf2, port: u16, extra: &str) -> Option<Proc> {
    let (prog, mut args) = who.command()?;
    args.extend(["-s", "-u", "-p"].iter().map(|s| s.to_string()));
    args.push(port.to_string());
    args.extend(["-t", "20"].iter().map(|s| s.to_string()));
    args.extend(extra.split_whitespace().map(String::from));
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let p = Proc::spawn(&prog, &a);
    wait_udp_bound(port);
    Some(p)
}

/// Runs `server -s -u sargs` and `client -c -u cargs`; returns the client's
/// run and the server's stdout once `done` holds of it (the server prints
/// its last lines after it answered the FIN).
fn pair(server: Iperf2, sargs: &str, client: Iperf2, cargs: &str, done: Done) -> Option<(Ran, String)> {
    let port = free_port();
    let srv = udp_server(server, port, sargs)?;
    let r = iperf2_client(client, port, &format!("-u {cargs}"), T)?;
    if r.code == Some(0) {
        wait::text("the server's report of the test", wait::LONG, || srv.out(), done);
    }
    Some((r, stop_server(srv)))
}

/// What the server's output must show before it is stopped.
type Done = fn(&str) -> bool;

/// A whole-test total (not the first of `-i 0.5` intervals).
fn total_line(t: &str) -> bool {
    t.lines()
        .any(|l| l.contains(" 0.0000-") && !l.contains(" 0.0000-0.5000 "))
}

/// A CSV whole-test total.
fn csv_total(t: &str) -> bool {
    t.lines().any(|l| {
        let f: Vec<&str> = l.split(',').collect();
        f.len() > 7 && f[6].starts_with("0.0-") && !f[6].starts_with("0.0-0.5")
    })
}

fn has(out: &str, needle: &str) -> bool {
    out.lines().any(|l| l.contains(needle))
}

fn ok(r: &Ran) {
    assert_eq!(r.code, Some(0), "client failed:\n{}\n{}", r.stdout, r.stderr);
}

/// The `(lost, total)` of a receiver line `... 0.005 ms 0/91 (0%)`.
fn loss_of(line: &str) -> Option<(i64, i64)> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| *x == "ms")?;
    let (l, t) = w.get(i + 1)?.split_once('/')?;
    Some((l.parse().ok()?, t.parse().ok()?))
}

/// The line after the client's `Server Report:` header (the relayed one).
fn relayed(out: &str) -> Vec<String> {
    let lines: Vec<&str> = out.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.ends_with("Server Report:"))
        // The report's line follows, after a column header that 2.1.8
        // prints only before the first report.
        .filter_map(|(i, _)| {
            lines[i + 1..]
                .iter()
                .take(2)
                .find(|l| l.contains(" sec ") && !l.starts_with("[ ID]"))
                .map(|s| s.to_string())
        })
        .collect()
}

#[test]
fn the_server_report_reaches_the_client_both_ways() {
    for (s, c) in BOTH {
        let Some((r, srv)) = pair(s, "", c, "-t 1", |t| t.contains("[  1] 0.0000-")) else {
            return;
        };
        ok(&r);
        let ctx = format!("{s:?} server, {c:?} client:\n{}\n{srv}", r.stdout);
        assert!(
            has(&r.stdout, "Sending 1470 byte datagrams, IPG target: 11215.21 us"),
            "{ctx}"
        );
        assert!(has(&r.stdout, "Sent "), "{ctx}");
        let rep = relayed(&r.stdout);
        assert_eq!(rep.len(), 1, "{ctx}");
        let (lost, total) = loss_of(&rep[0]).unwrap_or_else(|| panic!("{ctx}"));
        // 1 Mbit/s of 1470-byte datagrams for 1 s: about 90 (fewer if a
        // busy machine stalled a sender for long).
        assert!((30..=120).contains(&total) && lost * 10 <= total, "{ctx}");
        // The server printed the same datagram count.
        let line = srv
            .lines()
            .find(|l| l.starts_with("[  1] 0.0000-") && l.contains(" ms "))
            .unwrap_or_else(|| panic!("{ctx}"));
        assert_eq!(loss_of(line).map(|x| x.1), Some(total), "{ctx}");
    }
}

#[test]
fn csv_rows_have_udp_columns_and_the_ends_agree() {
    for (s, c) in BOTH {
        let Some((r, srv)) = pair(s, "-y C -i 0.5", c, "-t 1 -y C -i 0.5", csv_total) else {
            return;
        };
        ok(&r);
        let ctx = format!("{s:?} server, {c:?} client:\n{}\n{srv}", r.stdout);
        let rows = |out: &str| -> Vec<Vec<String>> {
            out.lines()
                .filter(|l| l.contains(','))
                .map(|l| l.split(',').map(String::from).collect())
                .collect()
        };
        let (cr, sr) = (rows(&r.stdout), rows(&srv));
        assert!(cr.len() >= 3 && sr.len() >= 3, "{ctx}");
        for row in cr.iter().chain(&sr) {
            assert_eq!(row.len(), 14, "{ctx}");
        }
        let total = |rows: &[Vec<String>]| -> Vec<String> {
            rows.iter()
                .filter(|r| r[6].starts_with("0.0-") && !r[6].starts_with("0.0-0.5"))
                .map(|r| r[7].clone())
                .collect()
        };
        // Bytes: the FIN counts at both ends, as 2.1.8 counts it.
        assert_eq!(total(&cr), total(&sr), "{ctx}");
        let client_final = cr
            .iter()
            .find(|r| r[6].starts_with("0.0-") && r[6] != "0.0-0.5")
            .unwrap();
        assert_eq!(
            (client_final[11].as_str(), client_final[12].as_str()),
            ("-1", "-0.000"),
            "{ctx}"
        );
        let server_final = sr
            .iter()
            .find(|r| r[6].starts_with("0.0-") && r[6] != "0.0-0.5")
            .unwrap();
        assert!(server_final[11].parse::<i64>().unwrap() > 30, "{ctx}");
        // Addresses: client side first at both ends.
        assert_eq!(client_final[1..5], server_final[1..5], "{ctx}");
    }
}

#[test]
fn enhanced_reports_show_latency_pps_and_inp() {
    for (s, c) in BOTH {
        let Some((r, srv)) = pair(s, "-e -i 0.5", c, "-t 1 -e -b 100pps -i 0.5", total_line) else {
            return;
        };
        ok(&r);
        let ctx = format!("{s:?} server, {c:?} client:\n{}\n{srv}", r.stdout);
        assert!(has(&r.stdout, "Write/Err  PPS"), "{ctx}");
        assert!(has(&r.stdout, "IPG target: 10000.00 us"), "{ctx}");
        let rep = relayed(&r.stdout);
        assert_eq!(rep.len(), 1, "{ctx}");
        assert!(rep[0].contains(" pps ") && rep[0].contains(" pkts "), "{ctx}");
        assert!(has(&srv, "Latency avg/min/max/stdev PPS  Rx/inP  NetPwr"), "{ctx}");
        assert!(has(&srv, "0.0000-0.5000 sec"), "{ctx}");
        // 100 pps for 1 s.
        let (_, total) = loss_of(&rep[0]).unwrap();
        assert!((40..=115).contains(&total), "{ctx}");
    }
}

/// A `-e` client of a server without `-e`: the server's report carries no
/// latency fields, so the client prints it in the short layout, as
/// 2.1.8's client does (not zero latency, `0 pps` and `NAN`). Every pair,
/// the real one included, which shows what 2.1.8 does.
#[test]
fn an_enhanced_client_prints_a_plain_servers_report_plainly() {
    let pairs = [
        (Iperf2::Real, Iperf2::Ours),
        (Iperf2::Ours, Iperf2::Real),
        (Iperf2::Ours, Iperf2::Ours),
        (Iperf2::Real, Iperf2::Real),
    ];
    for (s, c) in pairs {
        let Some((r, srv)) = pair(s, "", c, "-t 1 -e", total_line) else {
            return;
        };
        ok(&r);
        let ctx = format!("{s:?} server, {c:?} client:\n{}\n{srv}", r.stdout);
        let lines: Vec<&str> = r.stdout.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.ends_with("Server Report:"))
            .unwrap_or_else(|| panic!("{ctx}"));
        assert_eq!(
            lines[at + 1],
            "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams",
            "{ctx}"
        );
        let rep = relayed(&r.stdout);
        assert_eq!(rep.len(), 1, "{ctx}");
        assert!(loss_of(&rep[0]).is_some(), "{ctx}");
        assert!(!rep[0].contains("pps") && !rep[0].contains("NAN"), "{ctx}");
        // With --trip-times the report carries latency: the enhanced layout.
        let Some((r, srv)) = pair(s, "", c, "-t 1 -e --trip-times", total_line) else {
            return;
        };
        ok(&r);
        let ctx = format!("{s:?} server, {c:?} client:\n{}\n{srv}", r.stdout);
        let rep = relayed(&r.stdout);
        assert_eq!(rep.len(), 1, "{ctx}");
        assert!(rep[0].contains(" pps ") && rep[0].contains(" pkts "), "{ctx}");
    }
}

#[test]
fn parallel_flows_have_sum_lines_and_reports_each() {
    for (s, c) in BOTH {
        let Some((r, srv)) = pair(s, "-i 0.5", c, "-t 1 -P 2 -i 0.5", |t| {
            t.lines()
                .any(|l| l.starts_with("[SUM] 0.0000-") && !l.contains("0.0000-0.5000 "))
        }) else {
            return;
        };
        ok(&r);
        let ctx = format!("{s:?} server, {c:?} client:\n{}\n{srv}", r.stdout);
        assert!(has(&r.stdout, "[SUM] 0.0000-0.5000 sec"), "{ctx}");
        // Our client sums its two flows' datagrams; 2.1.8's names a count
        // of its own there (seen as `[SUM-4]` on a loaded host).
        let sent = if c == Iperf2::Ours { "[SUM-2] Sent " } else { "[SUM-" };
        assert!(has(&r.stdout, sent), "{ctx}");
        assert_eq!(relayed(&r.stdout).len(), 2, "{ctx}");
        assert!(has(&srv, "[SUM] 0.0000-0.5000 sec"), "{ctx}");
        for id in ["[  1]", "[  2]"] {
            assert!(has(&r.stdout, &format!("{id} local 127.0.0.1")), "{ctx}");
            assert!(has(&srv, &format!("{id} local 127.0.0.1")), "{ctx}");
        }
    }
}

#[test]
fn dual_and_tradeoff_connect_back_on_l() {
    for (s, c) in BOTH {
        for mode in ["-d", "-r"] {
            let l = free_port();
            let Some((r, srv)) = pair(s, "", c, &format!("-t 1 {mode} -L {l}"), |t| {
                t.contains("[ *2] local 127.0.0.1") && t.contains("Server Report:")
            }) else {
                return;
            };
            ok(&r);
            let ctx = format!("{s:?} server, {c:?} client {mode}:\n{}\n{}\n{srv}", r.stdout, r.stderr);
            // (2.1.8 words it "ports L-P" when -L comes after -p.)
            assert!(has(&r.stdout, "Server listening on UDP port"), "{ctx}");
            assert!(has(&r.stdout, &l.to_string()), "{ctx}");
            // The client's own flow, reported back by the server.
            assert_eq!(relayed(&r.stdout).len(), 1, "{ctx}");
            // The server's connect-back, received by the client.
            let back = r
                .stdout
                .lines()
                .find(|l| l.starts_with("[  2] 0.0000-") && l.contains(" ms "))
                .unwrap_or_else(|| panic!("{ctx}"));
            let (_, total) = loss_of(back).unwrap();
            assert!(total > 30, "{ctx}");
            // The server starred its sender and got our report for it.
            assert!(has(&srv, "[ *2] local 127.0.0.1"), "{ctx}");
            assert!(has(&srv, "Server Report:"), "{ctx}");
        }
    }
}

#[test]
fn reverse_and_full_duplex_use_one_socket() {
    for (s, c) in BOTH {
        for mode in ["-R", "--full-duplex"] {
            let Some((r, srv)) = pair(s, "", c, &format!("-t 1 {mode}"), |t| {
                t.contains("Sent ") && t.contains("(no-udp-fin)")
            }) else {
                return;
            };
            ok(&r);
            let ctx = format!("{s:?} server, {c:?} client {mode}:\n{}\n{srv}", r.stdout);
            let got = r
                .stdout
                .lines()
                .find(|l| l.starts_with("[ *1] 0.0000-") && l.contains(" ms "))
                .unwrap_or_else(|| panic!("{ctx}"));
            assert!(loss_of(got).unwrap().1 > 30, "{ctx}");
            assert!(has(&srv, "Sent "), "{ctx}");
            // No FIN/report exchange for these (2.1.8 marks them).
            assert!(has(&srv, "(no-udp-fin)"), "{ctx}");
            assert!(relayed(&r.stdout).is_empty(), "{ctx}");
        }
    }
}

#[test]
fn trip_times_give_histograms_and_latency_to_the_server() {
    let Some((r, srv)) = pair(
        Iperf2::Ours,
        "--histograms -i 0.5",
        Iperf2::Real,
        "-t 1 -b 2m --trip-times -i 0.5",
        |t| t.contains("T8(f)-PDF: bin(w=100us):cnt("),
    ) else {
        return;
    };
    ok(&r);
    let ctx = format!("{}\n{srv}", r.stdout);
    assert!(
        has(&srv, "Enabled receive histograms bin-width=0.100 ms, bins=10000"),
        "{ctx}"
    );
    assert!(has(&srv, "(trip-times)"), "{ctx}");
    assert!(has(&srv, "0.0000-0.5000 sec T8-PDF: bin(w=100us):cnt("), "{ctx}");
    assert!(has(&srv, "T8(f)-PDF: bin(w=100us):cnt("), "{ctx}");
    // The relayed report carries the latency (the client did not ask -e).
    assert!(has(&r.stdout, "Latency avg/min/max/stdev"), "{ctx}");
    // TCP: burst latency histograms.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-e", "--histograms=1m,50", "-t", "20"]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, "-t 1 -b 10m -l 10K --trip-times", T).unwrap();
    wait::stdout_has(&srv, "F8(f)-PDF: bin(w=1ms):cnt(", wait::LONG);
    let srv = stop_server(srv);
    ok(&r);
    assert!(has(&srv, "F8(f)-PDF: bin(w=1ms):cnt("), "{srv}");
}

#[test]
fn iperf2_udp_clients_are_served_on_the_iperf3_port() {
    let Some(iperf) = peer("iperf") else { return };
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let ps = port.to_string();
    let r = run(&iperf, &["-c", "127.0.0.1", "-p", &ps, "-u", "-t", "1"], T);
    // (The server's lines are context for a failure only: the client's
    // relayed report is what is held to account.)
    let out = stop_server(srv);
    ok(&r);
    let rep = relayed(&r.stdout);
    assert_eq!(rep.len(), 1, "{}\n{out}", r.stdout);
    assert!(loss_of(&rep[0]).unwrap().1 > 30, "{}\n{out}", r.stdout);
    // ... and iperf3's UDP clients still are.
    if let Some(iperf3) = peer("iperf3") {
        let srv = wirespeed_server(port, &[]);
        let r = run(&iperf3, &["-c", "127.0.0.1", "-p", &ps, "-u", "-t", "1"], T);
        drop(srv);
        ok(&r);
        assert!(r.stdout.contains("receiver"), "{}", r.stdout);
    }
}

#[test]
fn a_single_udp_server_serves_one_client_and_refuses_the_rest() {
    let port = free_port();
    let Some(srv) = udp_server(Iperf2::Ours, port, "-U") else {
        return;
    };
    let r = iperf2_client(Iperf2::Ours, port, "-u -t 1 -P 2", T).unwrap();
    wait::stdout_has(&srv, " 0.0000-", wait::LONG);
    let out = stop_server(srv);
    ok(&r);
    assert!(has(&out, "WARN: Suggested to use lower case -u instead of -U"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.contains(" connected with ")).count(),
        1,
        "{out}"
    );
    assert_eq!(relayed(&r.stdout).len(), 1, "{}", r.stdout);
    assert!(
        has(&r.stderr, "WARNING: did not receive ack of last datagram"),
        "{}",
        r.stderr
    );
}

/// A UDP client whose server's port is closed: 2.1.8 writes a "read
/// failed: Connection refused" line per refused FIN and then its warning
/// ("after 10 tries" for a timed test, "after 1 tries" for -n) on standard
/// error, nothing on standard output, and gives up about a second after
/// the test. So do we (the warning's id aside: 2.1.8 prints its socket's
/// descriptor there, we the flow's id).
#[test]
fn a_closed_port_is_told_on_stderr_as_2_1_8_tells_it() {
    for (args, tries) in [("-u -t 1", 10), ("-u -n 20000", 1)] {
        let mut seen = Vec::new();
        for who in [Iperf2::Real, Iperf2::Ours] {
            let port = free_port();
            let started = std::time::Instant::now();
            let Some(r) = iperf2_client(who, port, args, T) else {
                continue;
            };
            let took = started.elapsed();
            assert_eq!(r.code, Some(0), "{who:?}: {}{}", r.stdout, r.stderr);
            assert!(
                !r.stdout.contains("read failed") && !r.stdout.contains("WARNING"),
                "{who:?}: {}",
                r.stdout
            );
            let refused = r
                .stderr
                .lines()
                .filter(|l| *l == "read failed: Connection refused")
                .count();
            let last = r.stderr.lines().last().unwrap_or_default();
            let want = format!("WARNING: did not receive ack of last datagram after {tries} tries.");
            assert!(last.ends_with(&want), "{who:?} {args}: {}", r.stderr);
            assert_eq!(r.stderr.lines().count(), refused + 1, "{who:?}: {}", r.stderr);
            assert!((50..=100).contains(&refused), "{who:?} {args}: {refused} refused reads");
            seen.push((who, took));
        }
        // Ours gives up after its 100 refused reads, 10 ms apart (about 1 s
        // after the test), as 2.1.8 does; how long either takes beyond that
        // is the machine's load (2.1.8 took 4.5 s on a loaded host), so
        // only ours is bounded, and loosely.
        if let Some((_, ours)) = seen.last() {
            assert!(*ours < Duration::from_secs(6), "{args}: we took {ours:?} ({seen:?})");
        }
    }
}

#[test]
fn byte_counts_and_packet_rates() {
    // -n: the flow ends after that many bytes (whole datagrams).
    let Some((r, _)) = pair(Iperf2::Ours, "", Iperf2::Ours, "-n 100K -b 10m -y C", |_| true) else {
        return;
    };
    ok(&r);
    let row = r.stdout.lines().last().unwrap().to_string();
    let bytes: u64 = row.split(',').nth(7).unwrap().parse().unwrap();
    // 70 datagrams carry 100 KiB, the FIN one more.
    assert_eq!(bytes, 71 * 1470, "{row}");
    // pps: never more datagrams than the rate asked (and the FIN); a
    // loaded machine may hold the sender back, so fewer only down to half.
    let Some((r, _)) = pair(Iperf2::Ours, "", Iperf2::Ours, "-t 1 -b 200pps", |_| true) else {
        return;
    };
    ok(&r);
    let rep = relayed(&r.stdout);
    let total = loss_of(&rep[0]).unwrap().1;
    assert!((100..=202).contains(&total), "{}", r.stdout);
}

#[test]
fn multicast_in_a_namespace_both_ways() {
    let Some(path) = netns::NetnsPair::new() else { return };
    let dev_b = path.dev_a.replacen("wsa", "wsb", 1);
    for (ns, dev) in [(&path.a, &path.dev_a), (&path.b, &dev_b)] {
        let ok = std::process::Command::new("ip")
            .args(["-n", ns, "route", "add", "224.0.0.0/4", "dev", dev])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "multicast route");
    }
    let ws = wirespeed();
    let group = "239.255.77.1";
    let mut pairs = vec![(Some(ws.clone()), Some(ws.clone()))];
    if let Some(real) = peer("iperf") {
        pairs.push((None, Some(real.clone())));
        pairs.push((Some(real), None));
    }
    for (srv_prog, cli_prog) in pairs {
        let port = free_port().to_string();
        let (sp, mut sargs) = match &srv_prog {
            Some(p) if *p == ws => (ws.clone(), vec!["--iperf2".to_string()]),
            Some(p) => (p.clone(), Vec::new()),
            None => (ws.clone(), vec!["--iperf2".to_string()]),
        };
        let bind = format!("{group}%{dev_b}");
        sargs.extend(
            ["-s", "-u", "-B", &bind, "-p", &port, "-t", "6"]
                .iter()
                .map(|s| s.to_string()),
        );
        let sa: Vec<&str> = sargs.iter().map(|s| s.as_str()).collect();
        let mut srv = netns::NetnsPair::spawn(&path.b, &sp, &sa);
        wait_udp_bound_in(Some(&path.b), port.parse().unwrap());
        let (cp, mut cargs) = match &cli_prog {
            Some(p) if *p != ws => (p.clone(), Vec::new()),
            _ => (ws.clone(), vec!["--iperf2".to_string()]),
        };
        cargs.extend(
            ["-c", group, "-u", "-p", &port, "-T", "1", "-t", "1"]
                .iter()
                .map(|s| s.to_string()),
        );
        let ca: Vec<&str> = cargs.iter().map(|s| s.as_str()).collect();
        let mut all = vec!["netns", "exec", path.a.as_str(), cp.to_str().unwrap()];
        all.extend_from_slice(&ca);
        let r = run(&std::path::PathBuf::from("ip"), &all, T);
        srv.wait(Duration::from_secs(10));
        let out = srv.out();
        let ctx = format!("{sp:?} server, {cp:?} client:\n{}\n{}\n{out}", r.stdout, r.stderr);
        assert_eq!(r.code, Some(0), "{ctx}");
        assert!(
            has(&out, &format!("Joining multicast (*,G)=*,{group} w/iface {dev_b}")),
            "{ctx}"
        );
        let line = out
            .lines()
            .find(|l| l.starts_with("[  1] 0.0000-") && l.contains(" ms "))
            .unwrap_or_else(|| panic!("{ctx}"));
        // The server's flow socket is bound to the group.
        assert!(has(&out, &format!("local {group} port")), "{ctx}");
        let (lost, total) = loss_of(line).unwrap();
        assert!(total > 30 && lost * 10 <= total, "{ctx}");
        // No report travels back over multicast.
        assert!(relayed(&r.stdout).is_empty(), "{ctx}");
    }
    // A group that cannot be joined is one line and exit 1.
    let bad = format!("{group}%nosuchdev0");
    let r = run(
        &std::path::PathBuf::from("ip"),
        &[
            "netns",
            "exec",
            &path.b,
            ws.to_str().unwrap(),
            "--iperf2",
            "-s",
            "-u",
            "-B",
            &bad,
            "-t",
            "2",
        ],
        T,
    );
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert_eq!(r.stderr, "mcast join failed: No such device\n");
}

/// The seed tutorial's `iperf -u -c host -m -i 1 -b 10000M`: 2.1.8 takes
/// `-m` with UDP (it shows "MSS size 0 bytes"), and so do we; the banners'
/// first lines match.
#[test]
fn the_tutorials_udp_command_with_m_runs_as_in_2_1_8() {
    let mut heads = Vec::new();
    for who in [Iperf2::Real, Iperf2::Ours] {
        let port = free_port();
        let Some(srv) = iperf2_server(Iperf2::Ours, port, &["-u"]) else {
            return;
        };
        let Some(r) = iperf2_client(who, port, "-u -m -i 1 -b 10000M -t 1", T) else {
            return;
        };
        drop(srv);
        assert_eq!(r.code, Some(0), "{who:?}: {}{}", r.stdout, r.stderr);
        let head: Vec<String> = r
            .stdout
            .lines()
            .take(4)
            .map(|l| l.replace(&port.to_string(), "PORT"))
            .collect();
        heads.push(head);
    }
    assert_eq!(heads[0][..3], heads[1][..3], "{heads:?}");
    assert_eq!(heads[1][2], "MSS size 0 bytes");
}
