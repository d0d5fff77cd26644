//! iperf 2.2.1's UDP L4S exchange (`--udp-l4s`, docs/protocols.md "iperf 2
//! UDP L4S") against a real 2.2.1 built with `--enable-udp-l4s`, named by
//! `WIRESPEED_IPERF2_L4S` (skipped with a notice otherwise).

use std::path::PathBuf;
use std::time::Duration;

use crate::common::{self, wait};

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
