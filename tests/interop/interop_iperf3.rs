//! Interop with the real iperf3 (Debian's 3.12 in CI), both directions:
//! our client against `iperf3 -s`, and `iperf3 -c` against our server.
//! Skipped with a notice when iperf3 is missing, unless
//! WIRESPEED_REQUIRE_PEERS=1.

use crate::common;

use common::*;
use std::time::Duration;

const T: Duration = Duration::from_secs(40);

/// Our client against a real iperf3 server.
fn ours_to_iperf3(args: &str) -> Option<(Ran, String)> {
    let iperf3 = peer("iperf3")?;
    let port = free_port();
    let mut srv = iperf3_server(&iperf3, port, &[]);
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p];
    a.extend(args.split_whitespace());
    let r = run(&wirespeed(), &a, T);
    if r.code == Some(0) {
        wait_test_done(&srv, 1);
    }
    let server_out = srv.out();
    srv.signal(15);
    srv.wait(Duration::from_secs(5));
    Some((r, server_out))
}

/// The real iperf3 client against our server.
fn iperf3_to_ours(args: &str) -> Option<(Ran, String)> {
    let iperf3 = peer("iperf3")?;
    let port = free_port();
    let mut srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p];
    a.extend(args.split_whitespace());
    let r = run(&iperf3, &a, T);
    if r.code == Some(0) {
        wait_test_done(&srv, 1);
    }
    let server_out = srv.out();
    srv.signal(15);
    srv.wait(Duration::from_secs(5));
    Some((r, server_out))
}

fn check_text(r: &Ran, server: &str, client_lines: &[&str], server_lines: &[&str]) {
    assert_eq!(r.code, Some(0), "client failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("iperf Done."), "{}", r.stdout);
    for l in client_lines {
        assert!(
            r.stdout.lines().any(|x| x.contains(l)),
            "client output lacks {l:?}:\n{}",
            r.stdout
        );
    }
    for l in server_lines {
        assert!(
            server.lines().any(|x| x.contains(l)),
            "server output lacks {l:?}:\n{server}"
        );
    }
}

macro_rules! both_ways {
    ($name:ident, $args:expr, $client:expr, $server_fwd:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn wirespeed_client_to_iperf3_server() {
                let Some((r, s)) = ours_to_iperf3($args) else {
                    return;
                };
                check_text(&r, &s, $client, $server_fwd);
            }
            #[test]
            fn iperf3_client_to_wirespeed_server() {
                let Some((r, s)) = iperf3_to_ours($args) else {
                    return;
                };
                check_text(&r, &s, $client, $server_fwd);
            }
        }
    };
}

both_ways!(
    forward,
    "-t 1",
    &["sender", "receiver"],
    &["Accepted connection", "receiver"]
);
both_ways!(reverse, "-t 1 -R", &["Reverse mode", "sender", "receiver"], &["sender"]);
both_ways!(bidir, "-t 1 --bidir", &["[TX-C]", "[RX-C]"], &["[RX-S]", "[TX-S]"]);
both_ways!(parallel_four, "-t 1 -P 4", &["[SUM]"], &["[SUM]"]);
both_ways!(bytes, "-n 20M", &["20.0 MBytes"], &["receiver"]);
both_ways!(blocks, "-k 200", &["25.0 MBytes"], &["receiver"]);
both_ways!(omit, "-t 2 -O 1", &["(omitted)", "sender"], &["(omitted)"]);
both_ways!(
    server_output,
    "-t 1 --get-server-output",
    &["Server output:"],
    &["receiver"]
);

/// Our client's JSON must carry every key the real iperf3 client writes
/// for the same test (and parse as JSON).
fn json_superset(args: &str) {
    let Some(iperf3) = peer("iperf3") else { return };
    let port = free_port();
    let mut srv = iperf3_server(&iperf3, port, &[]);
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-J"];
    a.extend(args.split_whitespace());
    let theirs = run(&iperf3, &a, T);
    let ours = run(&wirespeed(), &a, T);
    srv.signal(15);
    srv.wait(Duration::from_secs(5));
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    let tk = key_paths(&json(&theirs.stdout));
    let ok = key_paths(&json(&ours.stdout));
    let missing: Vec<&String> = tk.difference(&ok).collect();
    assert!(
        missing.is_empty(),
        "keys iperf3 writes but wirespeed does not: {missing:?}"
    );
}

#[test]
fn json_keys_forward() {
    json_superset("-t 1");
}

#[test]
fn json_keys_reverse_parallel() {
    json_superset("-t 1 -R -P 2");
}

#[test]
fn json_keys_bidir() {
    json_superset("-t 1 --bidir");
}

#[test]
fn iperf3_json_client_against_our_server() {
    let Some((r, _)) = iperf3_to_ours("-t 1 -J") else {
        return;
    };
    let v = json(&r.stdout);
    assert!(v["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
    assert!(v.get("error").is_none(), "{}", r.stdout);
}

// ---------------------------------------------------------------- UDP

const UDP_CLIENT: &[&str] = &["Jitter    Lost/Total Datagrams", "sender", "receiver"];

both_ways!(udp_forward, "-u -b 50M -t 1", UDP_CLIENT, &["Lost/Total", "receiver"]);
both_ways!(udp_reverse, "-u -t 1 -R", UDP_CLIENT, &["Total Datagrams", "sender"]);
both_ways!(
    udp_bidir,
    "-u -t 1 --bidir",
    &["[TX-C]", "[RX-C]"],
    &["[RX-S]", "[TX-S]"]
);
both_ways!(
    udp_parallel_length,
    "-u -P 2 -l 1000 -t 1",
    &["[SUM]", "receiver"],
    &["[SUM]", "receiver"]
);
both_ways!(
    udp_64bit_counters,
    "-u --udp-counters-64bit -b 20M -t 1",
    UDP_CLIENT,
    &["receiver"]
);

/// On loopback at these rates nothing is lost, so both peers' numbers must
/// say exactly that, whichever end is wirespeed (a header or sequence
/// mismatch would show up as loss or as "Unknown").
fn udp_clean(args: &str, ours_client: bool) {
    let r = if ours_client {
        ours_to_iperf3(args)
    } else {
        iperf3_to_ours(args)
    };
    let Some((r, server)) = r else { return };
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    for text in [&r.stdout, &server] {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("sender") || l.contains("receiver"))
            .collect();
        assert!(!lines.is_empty(), "{text}");
        for l in lines {
            assert!(
                l.contains(" 0/") && l.contains("(0%)"),
                "loss reported on loopback: {l}\n{text}"
            );
        }
    }
}

// A slow rate, so iperf3's default 208 KiB receive buffer rides out a
// scheduling stall on a busy machine: the point is the headers, not speed.
#[test]
fn udp_wirespeed_client_loses_nothing_against_iperf3() {
    udp_clean("-u -b 4M -t 1 -l 1400", true);
    udp_clean("-u -b 4M -t 1 -l 1400 -R --udp-counters-64bit", true);
}

#[test]
fn udp_iperf3_client_loses_nothing_against_wirespeed() {
    udp_clean("-u -b 4M -t 1 -l 1400", false);
    udp_clean("-u -b 4M -t 1 -l 1400 -R --udp-counters-64bit", false);
}

#[test]
fn json_keys_udp_forward() {
    json_superset("-u -t 1");
}

#[test]
fn json_keys_udp_reverse_parallel() {
    json_superset("-u -t 1 -R -P 2");
}

#[test]
fn json_keys_udp_bidir() {
    json_superset("-u -t 1 --bidir");
}

/// Our server's -J document carries every key iperf3's server writes for
/// the same UDP test from the same (real iperf3) client.
#[test]
fn server_json_keys_udp() {
    let Some(iperf3) = peer("iperf3") else { return };
    let docs: Vec<serde_json::Value> = [&iperf3, &wirespeed()]
        .iter()
        .map(|prog| {
            let port = free_port();
            let p = port.to_string();
            let mut srv = Proc::spawn(prog, &["-s", "-1", "-J", "-p", &p]);
            wait_listening(port);
            let c = run(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-u", "-t", "1", "-b", "5M"], T);
            assert_eq!(c.code, Some(0), "{}", c.stderr);
            srv.wait(Duration::from_secs(10));
            json(&srv.out())
        })
        .collect();
    let missing: Vec<String> = key_paths(&docs[0]).difference(&key_paths(&docs[1])).cloned().collect();
    assert!(
        missing.is_empty(),
        "keys iperf3's server writes but ours does not: {missing:?}"
    );
}

/// ECN between us and iperf3 3.12: our results carry an `ecn` object,
/// which iperf3 accepts and ignores both ways; our server counts what an
/// iperf3 client sent with `-S 1` (ECT(1)); our client says what it sent
/// and, knowing nothing of what arrived, no more. iperf3 3.12's server
/// does not set the TOS on its own UDP sockets, so a `-R` test is not in
/// play and prints as always.
#[test]
fn ecn_results_are_accepted_by_iperf3() {
    let Some((r, server)) = iperf3_to_ours("-u -b 5M -t 1 -S 1") else {
        return;
    };
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let line = server
        .lines()
        .find(|l| l.contains("ECN:"))
        .unwrap_or_else(|| panic!("{server}"));
    assert!(
        line.contains("sent ECT(1), arrived Not-ECT 0, ECT(0) 0, ECT(1) "),
        "{line}"
    );
    assert!(line.ends_with("the path kept ECT(1)"), "{line}");
    assert!(
        !r.stdout.contains("ECN"),
        "iperf3 prints its own lines only: {}",
        r.stdout
    );
    let Some((r, iperf3_server)) = iperf3_to_ours("-u -b 5M -t 1 -S 1 -R") else {
        return;
    };
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(iperf3_server.contains("ECN: sent ECT(1) ("), "{iperf3_server}");
    let Some((r, server)) = ours_to_iperf3("-u -b 5M -t 1 --ecn ect1") else {
        return;
    };
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(!server.contains("error"), "{server}");
    let line = r
        .stdout
        .lines()
        .find(|l| l.contains("ECN:"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        line.contains("ECN: sent ECT(1) (") && line.ends_with("the receiver did not say what arrived"),
        "{line}"
    );
    let Some((r, _)) = ours_to_iperf3("-u -b 5M -t 1 --ecn ect1 -R") else {
        return;
    };
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("ECN"), "{}", r.stdout);
}

/// `-q` against a real iperf3: it ignores the parameter it does not know
/// and waits for TCP streams; its port has no UDP socket, so the QUIC
/// handshake meets "port unreachable". The client says so in one line
/// within a second or two, not after its 30 s setup wait.
#[test]
fn quic_against_iperf3_is_refused_in_one_line_at_once() {
    let t0 = std::time::Instant::now();
    let Some((r, _)) = ours_to_iperf3("-q -t 2") else {
        return;
    };
    let took = t0.elapsed();
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    let err: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(err.len(), 1, "{}", r.stderr);
    assert!(
        err[0].starts_with("wirespeed: error - unable to connect stream: QUIC: ")
            && err[0].contains("takes no QUIC; only a wirespeed server answers --quic"),
        "{}",
        r.stderr
    );
    // The setup wait is 30 s; the refusal comes with the first round trip.
    assert!(took < Duration::from_secs(15), "{took:?}");
    // With -J: the same words under "error", in a valid document.
    let Some((r, _)) = ours_to_iperf3("-q -t 2 -J") else {
        return;
    };
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let doc = json(&r.stdout);
    assert!(
        doc["error"].as_str().is_some_and(|e| e.contains("takes no QUIC")),
        "{doc}"
    );
}
