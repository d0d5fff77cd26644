//! Outputs one dialect borrowed from the other: iperf 2 with `-J` and
//! `--json-stream` (wirespeed's schema, `docs/json-iperf2.md`), `-W`
//! window advice and `--report`; iperf3 with `--csv` (iperf 2's `-y C`
//! rows, as flent reads them). Each against wirespeed's server and, where
//! installed, the real iperf 2.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

fn docs(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(|d| d.unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{text}")))
        .collect()
}

fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{path} missing in {v}"))
}

/// A TCP client's document holds what it sent, per interval and in all;
/// the receiving side it never heard from is left out, not written as 0.
fn check_tcp_sender_doc(d: &Value) {
    let intervals = d["intervals"].as_array().expect("intervals");
    assert!(intervals.len() >= 2, "{d}");
    for i in intervals {
        assert!(u(i, "/sum/bytes") > 0, "{i}");
        assert!(u(i, "/streams/0/iperf2/writes") > 0, "{i}");
    }
    let end = &d["end"];
    let sent = u(end, "/sum_sent/bytes");
    assert!(sent > 0, "{end}");
    assert_eq!(u(end, "/streams/0/sender/bytes"), sent);
    assert!(end.get("sum_received").is_none(), "{end}");
    assert!(end["streams"][0].get("receiver").is_none(), "{end}");
    assert!(end["cpu_utilization_percent"].get("remote_total").is_none(), "{end}");
    let summed: u64 = intervals.iter().map(|i| u(i, "/sum/bytes")).sum();
    assert!(summed <= sent, "intervals {summed} > total {sent}");
}

#[test]
fn iperf2_json_of_a_tcp_client_and_its_server() {
    let port = free_port();
    let server = iperf2_server(Iperf2::Ours, port, &["-J"]).unwrap();
    let c = iperf2_client(Iperf2::Ours, port, "-t 2 -i 1 -J", T).unwrap();
    assert_eq!(c.code, Some(0), "{}{}", c.stdout, c.stderr);
    let d = json(&c.stdout);
    assert!(d.get("error").is_none(), "{d}");
    assert_eq!(d["start"]["connecting_to"]["port"], port);
    check_tcp_sender_doc(&d);
    let sent = u(&d["end"], "/sum_sent/bytes");
    // The server's document: what it received, and no sender side.
    let out = stop_server(server);
    let s = docs(&out);
    assert_eq!(s.len(), 1, "{out}");
    let end = &s[0]["end"];
    assert_eq!(u(end, "/sum_received/bytes"), sent, "{end}");
    assert!(end.get("sum_sent").is_none(), "{end}");
    assert!(end["streams"][0].get("sender").is_none(), "{end}");
    assert!(u(end, "/streams/0/iperf2/reads") > 0, "{end}");
}

#[test]
fn iperf2_json_against_the_real_iperf2_server() {
    let port = free_port();
    let Some(server) = iperf2_server(Iperf2::Real, port, &[]) else {
        return;
    };
    let c = iperf2_client(Iperf2::Ours, port, "-t 2 -i 1 -J -e", T).unwrap();
    assert_eq!(c.code, Some(0), "{}{}", c.stdout, c.stderr);
    check_tcp_sender_doc(&json(&c.stdout));
    drop(server);
}

/// A UDP sender's `sum_received` is the receiver's report it got back.
fn check_udp_sender_doc(d: &Value) {
    let end = &d["end"];
    let sent = u(end, "/streams/0/iperf2/datagrams_sent");
    let report = &end["streams"][0]["peer_report"];
    assert!(report.get("missing").is_none(), "no server report: {end}");
    let r = &end["sum_received"];
    assert_eq!(r["from_peer_report"], true, "{end}");
    assert_eq!(u(r, "/packets"), u(report, "/packets"));
    assert_eq!(u(r, "/bytes"), u(report, "/bytes"));
    // On loopback at 2 Mbit/s every datagram arrives: the report counts
    // the sender's datagrams (the FIN included), none lost.
    assert_eq!(u(r, "/lost_packets"), 0, "{end}");
    assert!(u(r, "/packets") + 1 >= sent && u(r, "/packets") <= sent, "{end}");
    assert!(u(end, "/sum_sent/bytes") > 0, "{end}");
}

#[test]
fn iperf2_udp_json_takes_the_receivers_report() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let Some(server) = iperf2_server(who, port, &["-u"]) else {
            continue;
        };
        let c = iperf2_client(Iperf2::Ours, port, "-u -b 2M -t 2 -i 1 -J", T).unwrap();
        assert_eq!(c.code, Some(0), "{who:?}: {}{}", c.stdout, c.stderr);
        check_udp_sender_doc(&json(&c.stdout));
        drop(server);
    }
}

#[test]
fn iperf2_udp_json_of_a_receiving_server_counts_what_arrived() {
    let port = free_port();
    let server = iperf2_server(Iperf2::Ours, port, &["-u", "-J"]).unwrap();
    let c = iperf2_client(Iperf2::Ours, port, "-u -b 2M -t 1", T).unwrap();
    assert_eq!(c.code, Some(0), "{}", c.stderr);
    let out = stop_server(server);
    let s = docs(&out);
    assert_eq!(s.len(), 1, "{out}");
    let end = &s[0]["end"];
    let udp = &end["streams"][0]["udp"];
    assert!(u(udp, "/bytes") > 0, "{end}");
    assert_eq!(u(udp, "/bytes"), u(end, "/sum/bytes"));
    assert_eq!(u(udp, "/bytes"), u(end, "/sum_received/bytes"));
    assert!(end.get("sum_sent").is_none(), "{end}");
}

/// The streams of an `end`, by whether they flow from the server to the
/// client (`iperf2.reversed`); each must say so.
fn by_direction(end: &Value) -> (Vec<&Value>, Vec<&Value>) {
    end["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .partition(|s| !s["iperf2"]["reversed"].as_bool().expect("reversed"))
}

/// `-d` and `-r` as iperf3 writes `--bidir`: the client's flows in
/// `sum_sent`/`sum_received`, the server's connect-back in the
/// `*_bidir_reverse` sums, each stream with its true `reversed` (the
/// client's own `false`, the connect-back `true`, on both ends).
#[test]
fn iperf2_dual_and_tradeoff_json_sum_each_direction_apart() {
    for (mode, proto) in [("-d", ""), ("-r", ""), ("-d", "-u -b 2M"), ("-r", "-u -b 2M")] {
        let udp = !proto.is_empty();
        let port = free_port();
        let server = iperf2_server(Iperf2::Ours, port, if udp { &["-u", "-J"] } else { &["-J"] }).unwrap();
        let back = free_port();
        let args = format!("{mode} -L {back} -t 1 {proto} -J");
        let c = iperf2_client(Iperf2::Ours, port, &args, T).unwrap();
        assert_eq!(c.code, Some(0), "{args}: {}{}", c.stdout, c.stderr);
        let client = json(&c.stdout);
        let end = &client["end"];
        let (own, connect_back) = by_direction(end);
        assert_eq!((own.len(), connect_back.len()), (1, 1), "{args}: {end}");
        assert!(connect_back[0]["iperf2"]["connect_back"].as_bool().unwrap(), "{end}");
        assert!(own[0]["iperf2"].get("connect_back").is_none(), "{end}");
        let key = if udp { "udp" } else { "sender" };
        assert_eq!(
            u(end, "/sum_sent/bytes"),
            u(own[0], &format!("/{key}/bytes")),
            "{args}: {end}"
        );
        let key = if udp { "udp" } else { "receiver" };
        assert_eq!(
            u(end, "/sum_received_bidir_reverse/bytes"),
            u(connect_back[0], &format!("/{key}/bytes")),
            "{args}: {end}"
        );
        assert!(end.get("sum_sent_bidir_reverse").is_none(), "{args}: {end}");
        // A UDP sender's sum_received is its receiver's report; TCP has none.
        assert_eq!(end.get("sum_received").is_some(), udp, "{args}: {end}");
        let out = stop_server(server);
        let s = docs(&out);
        assert_eq!(s.len(), 1, "{args}: {out}");
        let end = &s[0]["end"];
        let (own, connect_back) = by_direction(end);
        assert_eq!((own.len(), connect_back.len()), (1, 1), "{args}: {end}");
        // The server received the client's flow and sent the connect-back.
        assert!(end.get("sum_received").is_some(), "{args}: {end}");
        assert!(end.get("sum_sent_bidir_reverse").is_some(), "{args}: {end}");
        assert!(end.get("sum_sent").is_none(), "{args}: {end}");
        // The client's report of the connect-back came back to a UDP server.
        assert_eq!(end.get("sum_received_bidir_reverse").is_some(), udp, "{args}: {end}");
    }
}

/// `-R` flows from the server to the client: `reversed` on both ends.
#[test]
fn iperf2_reverse_json_says_reversed_on_both_ends() {
    let port = free_port();
    let server = iperf2_server(Iperf2::Ours, port, &["-J"]).unwrap();
    let c = iperf2_client(Iperf2::Ours, port, "-R -t 1 -i 1 -J", T).unwrap();
    assert_eq!(c.code, Some(0), "{}", c.stderr);
    let client = json(&c.stdout);
    let server_doc = docs(&stop_server(server)).remove(0);
    for d in [&client, &server_doc] {
        assert_eq!(d["end"]["streams"][0]["iperf2"]["reversed"], true, "{d}");
        for i in d["intervals"].as_array().unwrap() {
            assert_eq!(i["streams"][0]["iperf2"]["reversed"], true, "{i}");
        }
    }
}

#[test]
fn iperf2_json_stream_is_one_event_per_line() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let Some(server) = iperf2_server(who, port, &[]) else {
            continue;
        };
        let c = iperf2_client(Iperf2::Ours, port, "-t 2 -i 1 --json-stream", T).unwrap();
        assert_eq!(c.code, Some(0), "{who:?}: {}", c.stderr);
        let events: Vec<String> = c
            .stdout
            .lines()
            .map(|l| json(l)["event"].as_str().expect("event").to_string())
            .collect();
        assert_eq!(events.first().map(String::as_str), Some("start"), "{events:?}");
        assert_eq!(events.last().map(String::as_str), Some("end"), "{events:?}");
        assert!(events.iter().filter(|e| *e == "interval").count() >= 2, "{events:?}");
        drop(server);
    }
}

/// A UDP sender's `--json-stream`: the server's report comes before the
/// `end`, which carries it and `sum_received` from it, as `-J` does.
#[test]
fn iperf2_udp_json_stream_ends_with_the_servers_report() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let Some(server) = iperf2_server(who, port, &["-u"]) else {
            continue;
        };
        let c = iperf2_client(Iperf2::Ours, port, "-u -b 2M -t 2 -i 1 --json-stream", T).unwrap();
        assert_eq!(c.code, Some(0), "{who:?}: {}", c.stderr);
        let lines: Vec<Value> = c.stdout.lines().map(json).collect();
        let names: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        let n = names.len();
        assert!(n >= 2 && names[n - 2..] == ["peer_report", "end"], "{who:?}: {names:?}");
        let end = &lines[n - 1]["data"];
        let report = &lines[n - 2]["data"];
        assert_eq!(end["sum_received"]["from_peer_report"], true, "{who:?}: {end}");
        assert_eq!(u(end, "/sum_received/bytes"), u(report, "/bytes"), "{who:?}: {end}");
        assert_eq!(end["sum_received"]["jitter_ms"], report["jitter_ms"], "{who:?}");
        assert_eq!(end["streams"][0]["peer_report"], *report, "{who:?}");
        drop(server);
    }
}

#[test]
fn iperf2_json_errors_are_a_document() {
    let port = free_port();
    let c = iperf2_client(Iperf2::Ours, port, "-t 1 -J", T).unwrap();
    assert_eq!(c.code, Some(1));
    let d = json(&c.stdout);
    assert!(d["error"].as_str().is_some_and(|e| !e.is_empty()), "{d}");
}

/// The columns of a CSV row, typed: flent reads iperf 2's rows by position.
fn check_csv(out: &str, columns: usize) -> Vec<Vec<String>> {
    let rows: Vec<Vec<String>> = out.lines().map(|l| l.split(',').map(String::from).collect()).collect();
    assert!(rows.len() >= 3, "{out}");
    for r in &rows {
        assert_eq!(r.len(), columns, "{r:?}");
        // YYYYmmddHHMMSS, and with -e (which flent passes, and needs)
        // .mmm: flent's parser skips rows without the milliseconds.
        let (secs, ms) = r[0].split_once('.').unwrap_or((&r[0], ""));
        assert_eq!(secs.len(), 14, "timestamp {r:?}");
        assert!(secs.parse::<u64>().is_ok(), "{r:?}");
        assert!(ms.is_empty() || (ms.len() == 3 && ms.parse::<u16>().is_ok()), "{r:?}");
        assert!(r[1].parse::<std::net::IpAddr>().is_ok(), "{r:?}");
        assert!(r[2].parse::<u16>().is_ok() && r[4].parse::<u16>().is_ok(), "{r:?}");
        let (a, b) = r[6].split_once('-').expect("interval");
        assert!(a.parse::<f64>().unwrap() < b.parse::<f64>().unwrap(), "{r:?}");
        assert!(r[7].parse::<u64>().is_ok() && r[8].parse::<u64>().is_ok(), "{r:?}");
    }
    rows
}

#[test]
fn iperf3_csv_has_the_rows_of_iperf2s() {
    let port = free_port();
    let server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let tcp = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-i", "1", "--csv"],
        T,
    );
    assert_eq!(tcp.code, Some(0), "{}", tcp.stderr);
    let rows = check_csv(&tcp.stdout, 9);
    assert!(rows.iter().all(|r| r[0].contains('.')), "flent needs .mmm: {rows:?}");
    // The last row is the whole test, and it is the sum of the intervals.
    let last = rows.last().unwrap();
    assert!(last[6].starts_with("0.0-"), "{last:?}");
    let whole: u64 = last[7].parse().unwrap();
    let parts: u64 = rows[..rows.len() - 1]
        .iter()
        .map(|r| r[7].parse::<u64>().unwrap())
        .sum();
    assert!(parts <= whole && whole > 0, "{parts} {whole}");
    let udp = run(
        &wirespeed(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "2",
            "-i",
            "1",
            "-u",
            "-b",
            "2M",
            "--csv",
        ],
        T,
    );
    assert_eq!(udp.code, Some(0), "{}", udp.stderr);
    check_csv(&udp.stdout, 14);
    drop(server);
    // The real iperf 2 prints the same number of columns for each kind.
    let Some(real) = peer("iperf") else { return };
    let port = free_port();
    let server = iperf2_server(Iperf2::Real, port, &["-u"]).unwrap();
    // flent runs it as `iperf --enhanced --reportstyle C --format m ...`.
    let p = port.to_string();
    let args = "-u -t 2 -i 1 --enhanced --reportstyle C --format m -c 127.0.0.1 -p";
    let mut args: Vec<&str> = args.split(' ').collect();
    args.push(&p);
    let r = run(&real, &args, T);
    let rows = check_csv(&r.stdout, 14);
    assert!(rows.iter().all(|r| r[0].contains('.')), "{rows:?}");
    drop(server);
}

#[test]
fn flents_iperf_command_line_works_in_the_iperf2_dialect() {
    // flent picks an `iperf` whose -h mentions --enhanced, then runs it so.
    let h = run(&wirespeed(), &["--iperf2", "-h"], T);
    assert!(h.stdout.contains("--enhanced") || h.stderr.contains("--enhanced"));
    let port = free_port();
    let server = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let args = format!("--enhanced --reportstyle C --format m --client 127.0.0.1 --time 2 --interval 0.5 -p {port}");
    let mut a = vec!["--iperf2"];
    a.extend(args.split(' '));
    let r = run(&wirespeed(), &a, T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rows = check_csv(&r.stdout, 9);
    assert!(rows.len() >= 4, "{rows:?}");
    assert!(rows.iter().all(|r| r[0].contains('.')), "{rows:?}");
    drop(server);
}

#[test]
fn iperf3_csv_cannot_be_mixed_with_json() {
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "--csv", "-J"], T);
    assert_eq!(r.code, Some(1));
    let d = json(&r.stdout);
    assert!(d["error"].as_str().is_some_and(|e| e.contains("--csv")), "{d}");
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "--csv", "--json-stream"], T);
    assert_eq!(r.code, Some(1));
}

#[test]
fn iperf2_window_advice_follows_the_final_report() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let Some(server) = iperf2_server(who, port, &[]) else {
            continue;
        };
        // A 4 KByte send buffer: what the sender could keep in flight is
        // what held it back, and the advice says so with a larger -w.
        let c = iperf2_client(Iperf2::Ours, port, "-t 2 -w 4K -W", T).unwrap();
        assert_eq!(c.code, Some(0), "{who:?}: {}", c.stderr);
        assert!(
            c.stdout
                .lines()
                .any(|l| l.starts_with("Window advice: limited by the send buffer")),
            "{who:?}: {}",
            c.stdout
        );
        assert!(c.stdout.contains("try -w"), "{}", c.stdout);
        // With -J it is a key of `end`.
        let j = iperf2_client(Iperf2::Ours, port, "-t 1 -w 4K -W -J", T).unwrap();
        let d = json(&j.stdout);
        assert_eq!(d["end"]["advice"]["limited_by"], "send_buffer", "{d}");
        drop(server);
    }
    // It is a TCP sender's: refused with UDP.
    let u = iperf2_client(Iperf2::Ours, free_port(), "-u -W", T).unwrap();
    assert_eq!(u.code, Some(1), "{}", u.stdout);
}

#[test]
fn iperf2_report_writes_a_page_and_its_json_makes_one_too() {
    let dir = std::env::temp_dir().join(format!("ws-dialect-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let Some(server) = iperf2_server(who, port, &[]) else {
            continue;
        };
        let page = dir.join(format!("{who:?}.html"));
        let args = format!("-t 2 -i 1 --report {}", page.display());
        let c = iperf2_client(Iperf2::Ours, port, &args, T).unwrap();
        assert_eq!(c.code, Some(0), "{who:?}: {}", c.stderr);
        // The text report is unchanged, the page holds the test's charts.
        assert!(c.stdout.contains("bits/sec"), "{}", c.stdout);
        let html = std::fs::read_to_string(&page).expect("the page");
        assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80.min(html.len())]);
        assert!(html.contains("<svg class=\"chart\""), "no chart");
        // `wirespeed report` renders the same test's -J output.
        let j = iperf2_client(Iperf2::Ours, port, "-t 2 -i 1 -J", T).unwrap();
        let saved = dir.join(format!("{who:?}.json"));
        std::fs::write(&saved, &j.stdout).unwrap();
        let out = dir.join(format!("{who:?}-from-json.html"));
        let r = run(
            &wirespeed(),
            &["report", saved.to_str().unwrap(), "-o", out.to_str().unwrap()],
            T,
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let html = std::fs::read_to_string(&out).expect("the page from JSON");
        assert!(html.contains("<svg class=\"chart\""), "no chart from the JSON");
        drop(server);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--ecn ect1` adds the four codepoints' counts after every column of a
/// UDP row: a sending client's rows count what it sent, a receiving
/// client's (`-R`) what arrived (all ECT(1) on loopback). Without it the
/// rows are iperf 2's.
#[test]
fn csv_rows_end_with_the_ecn_counts_when_ecn_is_in_play() {
    let port = free_port();
    let _server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let run_csv = |extra: &[&str]| {
        let mut a = vec![
            "--iperf2",
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-u",
            "-b",
            "2M",
            "-t",
            "2",
            "-i",
            "1",
            "-y",
            "C",
        ];
        a.extend_from_slice(extra);
        let r = run(&wirespeed(), &a, T);
        assert_eq!(r.code, Some(0), "{extra:?}: {}{}", r.stdout, r.stderr);
        r.stdout
    };
    // Plain: iperf 2's 14 UDP columns.
    check_csv(&run_csv(&[]), 14);
    for extra in [&["--ecn", "ect1"][..], &["--ecn", "ect1", "-R"]] {
        let rows = check_csv(&run_csv(extra), 18);
        for r in &rows {
            let c: Vec<u64> = r[14..].iter().map(|v| v.parse().unwrap()).collect();
            // Not-ECT, ECT(0), CE: none; ECT(1): every datagram counted.
            assert_eq!((c[0], c[1], c[3]), (0, 0, 0), "{extra:?}: {r:?}");
            assert!(c[2] > 0, "{extra:?}: {r:?}");
        }
    }
}
