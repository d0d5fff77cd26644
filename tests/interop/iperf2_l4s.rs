//! iperf 2.2.1's UDP L4S exchange (`--udp-l4s`, docs/protocols.md "iperf 2
//! UDP L4S") against a real 2.2.1 built with `--enable-udp-l4s`, named by
//! `WIRESPEED_IPERF2_L4S` (skipped with a notice otherwise).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::{self, Proc, wait};
use wirespeed::report::document::TestDoc;

/// iperf 2.2.1 built with L4S, or `None` with a notice.
fn iperf2_l4s() -> Option<PathBuf> {
    match std::env::var_os("WIRESPEED_IPERF2_L4S") {
        Some(p) if !p.is_empty() => Some(p.into()),
        _ => {
            eprintln!("NOTICE: WIRESPEED_IPERF2_L4S not set; skipping the iperf 2.2.1 --udp-l4s test");
            None
        }
    }
}

/// The number after `label` in `line` (`Sent 254 datagrams` → 254).
fn number_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    let w = text[at..].split_whitespace().next()?;
    w.trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok()
}

/// (lost, total) of the last `N/M (` in `line`.
fn lost_total(line: &str) -> Option<(u64, u64)> {
    let field = line.split_whitespace().rev().find(|w| {
        w.split_once('/')
            .is_some_and(|(a, b)| a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok())
    })?;
    let (a, b) = field.split_once('/')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

#[test]
fn real_l4s_client_against_our_server() {
    let Some(iperf) = iperf2_l4s() else { return };
    let port = common::free_port();
    let srv = common::wirespeed_server(port, &[]);
    let ran = common::run(
        &iperf,
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-u",
            "--udp-l4s",
            "-t",
            "3",
            "-i",
            "1",
            "-b",
            "5M",
        ],
        Duration::from_secs(20),
    );
    let out = wait::stdout_has(&srv, "] ECN:", wait::LONG);
    let srv_out = common::stop_server(srv);
    let both = format!("client:\n{}{}\nserver:\n{srv_out}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, Some(0), "{both}");
    // The client ran its 3 s and took our report as 2.2.1's.
    assert!(ran.stdout.contains("(l4s)"), "{both}");
    let sent = number_after(&ran.stdout, "Sent ").expect("Sent N datagrams");
    // Without acks 2.2.1's sender stops at its initial window (about 100
    // datagrams); with them it ramps towards -b.
    assert!(sent > 300, "the sender never grew: were the acks taken? {both}");
    let report = ran
        .stdout
        .lines()
        .skip_while(|l| !l.contains("Server Report:"))
        .find(|l| l.contains(" ms "))
        .unwrap_or_else(|| panic!("no server report on the client: {both}"));
    let (c_lost, c_total) = lost_total(report).expect("Lost/Total on the client");
    // Sane: not an L4S ack taken for the report.
    assert!(c_total > 0 && c_lost <= c_total && c_total + 1 == sent, "{both}");
    assert!(!ran.stderr.contains("WARNING"), "{both}");
    // Our server's lines.
    assert!(
        out.lines()
            .any(|l| l.contains("connected with 127.0.0.1") && l.ends_with("(l4s)")),
        "{both}"
    );
    let total = out
        .lines()
        .rev()
        .find(|l| l.contains(" sec ") && l.contains(" CE "))
        .unwrap_or_else(|| panic!("no CE in the server's lines: {both}"));
    assert!(total.contains("] 0.0000-"), "{both}");
    let (s_lost, s_total) = lost_total(total.split(" CE ").next().unwrap()).unwrap();
    assert_eq!(
        (s_lost, s_total),
        (c_lost, c_total),
        "the client printed our report: {both}"
    );
    // Every data datagram arrived ECT(1) (the FIN, sent unmarked, is not
    // counted); none CE on loopback.
    let ecn = out.lines().find(|l| l.contains("] ECN:")).unwrap();
    assert!(ecn.contains("sent ECT(1), arrived Not-ECT 0, ECT(0) 0"), "{both}");
    let ect1 = number_after(ecn, "ECT(1) ").unwrap();
    assert_eq!(number_after(ecn, "CE ").unwrap(), 0, "{both}");
    assert_eq!(ect1, s_total - s_lost - 1, "data datagrams arrived ECT(1): {both}");
    assert!(ecn.contains("kept ECT(1)"), "{both}");
}

/// Our client against a real 2.2.1 server: its acks pace us up to `-b`,
/// the server sees an L4S flow whose datagrams all arrived, and we print
/// its report and what its last ack said.
#[test]
fn our_l4s_client_against_the_real_server() {
    let Some(iperf) = iperf2_l4s() else { return };
    let port = common::free_port();
    let srv = Proc::spawn(&iperf, &["-s", "-u", "-p", &port.to_string(), "-i", "1"]);
    common::wait_bound_udp(port);
    let t0 = Instant::now();
    let ran = common::iperf2_client(
        common::Iperf2::Ours,
        port,
        "-u --udp-l4s -t 3 -b 5M",
        Duration::from_secs(20),
    )
    .expect("ours always runs");
    let took = t0.elapsed();
    // The real server prints its whole-test line when the flow ends.
    let out = wait::stdout_has(&srv, "] 0.00-3.", wait::LONG);
    let srv_out = common::stop_server(srv);
    let both = format!("client:\n{}{}\nserver:\n{srv_out}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, Some(0), "{both}");
    assert!(took < Duration::from_secs(8), "{took:?}: {both}");
    assert!(
        ran.stdout.contains("Client connecting to 127.0.0.1, UDP L4S port"),
        "{both}"
    );
    assert!(ran.stdout.lines().any(|l| l.ends_with("(l4s)")), "{both}");
    // 2.2.1 took the flow for L4S.
    assert!(out.contains("(l4s)"), "{both}");
    let sent = number_after(&ran.stdout, "Sent ").unwrap();
    assert!(sent > 300, "paced up by the acks: {both}");
    let acks = ran
        .stdout
        .lines()
        .find(|l| l.contains("L4S acks"))
        .unwrap_or_else(|| panic!("{both}"));
    assert!(acks.contains(", CE 0 (0.00%)"), "{both}");
    // 2.2.1's listener keeps the flow's first datagram from its L4S
    // counts, so its acks say at most one lost.
    assert!(number_after(acks, "lost ").unwrap() <= 1, "{both}");
    let received = number_after(acks, "received ").unwrap();
    assert!(received + 25 >= sent && received < sent, "{received} of {sent}: {both}");
    // The server's whole-test line and the report we print agree, every
    // datagram there.
    let s_line = out.lines().rev().find(|l| l.contains("] 0.00-3.")).unwrap();
    let (s_lost, s_total) = lost_total(s_line).unwrap();
    assert_eq!((s_lost, s_total), (0, sent), "{both}");
    let report = ran
        .stdout
        .lines()
        .skip_while(|l| !l.contains("Server Report:"))
        .find(|l| l.contains(" ms "))
        .unwrap_or_else(|| panic!("{both}"));
    assert_eq!(lost_total(report), Some((s_lost, s_total)), "{both}");
}

/// A server that does not speak L4S (Debian's 2.1.8) sends no acks: the
/// test still ends at `-t`, with one line saying so.
#[test]
fn our_l4s_client_against_a_server_without_l4s() {
    let port = common::free_port();
    let Some(srv) = common::iperf2_server(common::Iperf2::Real, port, &["-u"]) else {
        return;
    };
    let t0 = Instant::now();
    let ran = common::iperf2_client(common::Iperf2::Ours, port, "-u --udp-l4s -t 2", Duration::from_secs(20))
        .expect("ours always runs");
    let took = t0.elapsed();
    let srv_out = common::stop_server(srv);
    let both = format!("client:\n{}{}\nserver:\n{srv_out}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, Some(0), "{both}");
    assert!(took < Duration::from_secs(7), "{took:?}: {both}");
    assert_eq!(ran.stderr.matches("no L4S acks came back").count(), 1, "{both}");
    // Its report still comes back.
    assert!(ran.stdout.contains("Server Report:"), "{both}");
}

/// Our client's `-J` carries the L4S exchange (`l4s` beside `ecn`): what
/// a real 2.2.1 server's acks said, and against a server that sends none
/// (2.1.8) only that none came, with no counts or rate claimed.
#[test]
fn our_l4s_client_json_against_the_real_servers() {
    let l4s_of = |out: &str| {
        let d: TestDoc = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let end = d.end.unwrap_or_else(|| panic!("no end: {out}"));
        let st = end.streams.into_iter().next().and_then(|s| s.udp);
        st.and_then(|u| u.l4s).unwrap_or_else(|| panic!("no l4s: {out}"))
    };
    if let Some(iperf) = iperf2_l4s() {
        let port = common::free_port();
        let srv = Proc::spawn(&iperf, &["-s", "-u", "-p", &port.to_string()]);
        common::wait_bound_udp(port);
        let ran = common::iperf2_client(
            common::Iperf2::Ours,
            port,
            "-u --udp-l4s -t 2 -b 5M -J",
            Duration::from_secs(20),
        )
        .expect("ours always runs");
        let srv_out = common::stop_server(srv);
        assert_eq!(ran.code, Some(0), "{}{}\nserver:\n{srv_out}", ran.stdout, ran.stderr);
        let l = l4s_of(&ran.stdout);
        assert_eq!(l.role.as_deref(), Some("sender"), "{}", ran.stdout);
        assert!(l.acks.is_some_and(|a| a > 10), "{}", ran.stdout);
        assert!(
            l.received.is_some_and(|n| n > 300),
            "paced up by the acks: {}",
            ran.stdout
        );
        assert_eq!((l.ce, l.ecn_error), (Some(0), Some(false)), "{}", ran.stdout);
        // 2.2.1's listener keeps the flow's first datagram from its counts.
        assert!(l.lost.is_some_and(|n| n <= 1), "{}", ran.stdout);
        assert!(
            l.rate_bps.is_some_and(|r| r > 0.0) && l.alpha.is_some(),
            "{}",
            ran.stdout
        );
    }
    let port = common::free_port();
    let Some(srv) = common::iperf2_server(common::Iperf2::Real, port, &["-u"]) else {
        return;
    };
    let ran = common::iperf2_client(
        common::Iperf2::Ours,
        port,
        "-u --udp-l4s -t 1 -J",
        Duration::from_secs(20),
    )
    .expect("ours always runs");
    let srv_out = common::stop_server(srv);
    assert_eq!(ran.code, Some(0), "{}{}\nserver:\n{srv_out}", ran.stdout, ran.stderr);
    let l = l4s_of(&ran.stdout);
    assert_eq!(l.acks, Some(0), "{}", ran.stdout);
    assert_eq!((l.received, l.ce, l.lost), (None, None, None), "{}", ran.stdout);
    assert_eq!((l.rate_bps, l.alpha), (None, None), "{}", ran.stdout);
}
