//! `--udp-l4s` on loopback (docs/protocols.md "iperf 2 UDP L4S"): our
//! server's acks held to what a hand-made sender sent (CE forced through
//! the sender's TOS byte, a gap in the sequence, a bleached field), and
//! our client against our server, and the exchange's numbers in both
//! ends' `-J` and `--json-stream`.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirespeed::proto::iperf2::l4s::{ACK_LEN, Ack, Forward};
use wirespeed::report::document::TestDoc;

use crate::common::{Iperf2, Proc, free_port, iperf2_client, stop_server, wait, wait_bound_udp, wirespeed};

/// An L4S datagram as 2.2.1's sender lays it out (200 bytes): iperf 2
/// sequence `seq`, settings with UDPTESTS | EXTEND and upper flag 0x2000,
/// the L4S fields.
fn datagram(seq: i32, l4s_seq: u32, sender_ts: u32) -> Vec<u8> {
    let mut d = vec![0u8; 200];
    d[0..4].copy_from_slice(&seq.to_be_bytes());
    d[12..16].copy_from_slice(&(if seq < 0 { u32::MAX } else { 0 }).to_be_bytes());
    d[16..20].copy_from_slice(&0x6801_00a0u32.to_be_bytes());
    d[20..24].copy_from_slice(&1u32.to_be_bytes());
    // -t 3: time in tens of ms, negated.
    d[36..40].copy_from_slice(&(-300i32).to_be_bytes());
    d[48..50].copy_from_slice(&0x2000u16.to_be_bytes());
    Forward {
        sender_ts,
        echoed_ts: 0,
        seqno: l4s_seq,
    }
    .stamp(&mut d)
    .unwrap();
    d
}

fn set_ecn(s: &UdpSocket, ecn: u32) {
    SockRef::from(s).set_tos_v4(ecn).unwrap();
}

/// Reads acks until one says `received` datagrams (or the deadline).
fn ack_for(s: &UdpSocket, received: u32) -> Ack {
    let deadline = Instant::now() + wait::LONG;
    let mut buf = [0u8; 2048];
    let mut last = None;
    while Instant::now() < deadline {
        s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        if let Ok(n) = s.recv(&mut buf) {
            assert_eq!(n, ACK_LEN, "only L4S acks before the FIN");
            let a = Ack::decode(&buf[..n]).unwrap();
            last = Some(a);
            if a.received == received {
                return a;
            }
        }
    }
    panic!("no ack for {received} datagrams (last {last:?})");
}

/// 40 datagrams with L4S sequence 1..=41 but 7 never sent; the first 20
/// sent CE (forced through the TOS byte; loopback has no AQM), the rest
/// ECT(1). The acks count 40 received, 19 CE, 1 lost, no error; the
/// server's lines say the same.
#[test]
fn our_server_acks_what_arrived() {
    let port = free_port();
    let srv = Proc::spawn(
        &wirespeed(),
        &["--iperf2", "-s", "-u", "-p", &port.to_string(), "-i", "1"],
    );
    wait_bound_udp(port);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(("127.0.0.1", port)).unwrap();
    let mut seq = 1;
    let mut a = Ack::default();
    for l4s_seq in 1..=41u32 {
        if l4s_seq == 7 {
            continue;
        }
        set_ecn(&s, if l4s_seq <= 20 { 3 } else { 1 });
        s.send(&datagram(seq, l4s_seq, l4s_seq * 1000)).unwrap();
        seq += 1;
        // One at a time, so each batch of the server's is one datagram.
        a = ack_for(&s, seq as u32 - 1);
    }
    assert_eq!((a.received, a.ce, a.lost, a.ecn_error), (40, 19, 1, false), "{a:?}");
    // The newest sender timestamp comes back (advanced by how long the
    // server held it, well under a second here).
    assert!(a.echoed_ts.wrapping_sub(41_000) < 1_000_000, "{a:?}");
    // The FIN (sent unmarked, as 2.2.1's is) is answered with the report,
    // not an ack.
    set_ecn(&s, 0);
    s.send(&datagram(-seq, 0, 0)).unwrap();
    let mut buf = [0u8; 2048];
    s.set_read_timeout(Some(wait::LONG)).unwrap();
    let n = s.recv(&mut buf).unwrap();
    assert!(n > ACK_LEN, "the report, {n} bytes");
    wait::until("the server's ECN line", wait::LONG, || {
        srv.out().contains("ECN:").then_some(())
    });
    let out = stop_server(srv);
    assert!(out.lines().any(|l| l.ends_with("(l4s)")), "{out}");
    let ecn = out.lines().find(|l| l.contains("ECN:")).unwrap();
    assert!(
        ecn.contains("sent ECT(1), arrived Not-ECT 0, ECT(0) 0, ECT(1) 21, CE 19"),
        "{out}"
    );
    // The whole test's line: 19 of the 40 datagrams CE.
    let total = out
        .lines()
        .rev()
        .find(|l| l.contains(" CE ") && l.contains(" sec "))
        .unwrap();
    assert!(total.ends_with(" CE 19/40 (47.50%)"), "{out}");
}

/// Datagrams that arrive Not-ECT (a bleached path) raise the ack's flag.
#[test]
fn our_server_flags_a_bleached_field() {
    let port = free_port();
    let srv = Proc::spawn(&wirespeed(), &["--iperf2", "-s", "-u", "-p", &port.to_string()]);
    wait_bound_udp(port);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(("127.0.0.1", port)).unwrap();
    set_ecn(&s, 1);
    s.send(&datagram(1, 1, 10)).unwrap();
    assert!(!ack_for(&s, 1).ecn_error);
    set_ecn(&s, 0);
    s.send(&datagram(2, 2, 20)).unwrap();
    let a = ack_for(&s, 2);
    assert!(a.ecn_error, "{a:?}");
    s.send(&datagram(-3, 0, 0)).unwrap();
    wait::until("the server's ECN line", wait::LONG, || {
        srv.out().contains("ECN:").then_some(())
    });
    let out = stop_server(srv);
    // (An L4S sender goes Not-ECT once told: the line says so.)
    assert!(
        out.contains(
            "bleached the field: 1 of 2 arrived Not-ECT (the path's, and the L4S sender's own once the acks told it)"
        ),
        "{out}"
    );
}

/// Our client against our server: the acks come back and pace it, the
/// counts the last ack carried match what the server reports.
#[test]
fn our_client_against_our_server() {
    let port = free_port();
    let srv = Proc::spawn(&wirespeed(), &["--iperf2", "-s", "-u", "-p", &port.to_string()]);
    wait_bound_udp(port);
    let r = iperf2_client(Iperf2::Ours, port, "-u --udp-l4s -t 2 -b 5M", Duration::from_secs(20))
        .expect("ours always runs");
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("Client connecting to 127.0.0.1, UDP L4S port"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.lines().any(|l| l.ends_with("(l4s)")), "{}", r.stdout);
    let acks = r
        .stdout
        .lines()
        .find(|l| l.contains("L4S acks"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    // Loopback marks nothing; it loses nothing unless a starved receiver's
    // socket buffer overflows (a loaded machine), which the server's
    // report then says too.
    assert!(acks.contains(", CE 0 (0.00%), lost "), "{}", r.stdout);
    let received: u64 = acks
        .split("received ")
        .nth(1)
        .and_then(|t| t.split(',').next()?.parse().ok())
        .unwrap();
    let sent: u64 = r
        .stdout
        .split("Sent ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap();
    let ack_lost: u64 = acks
        .rsplit("lost ")
        .next()
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .unwrap();
    // Every data datagram acked, as received or lost (the FIN is counted
    // in "Sent"; the very last ones may not have been read before the end).
    assert!(
        received < sent && received + ack_lost + 20 >= sent,
        "{received} of {sent}: {}",
        r.stdout
    );
    assert!(sent > 300, "paced up by the acks: {}", r.stdout);
    wait::until("the server's ECN line", wait::LONG, || {
        srv.out().contains("ECN:").then_some(())
    });
    let out = stop_server(srv);
    // The client has our report: lost/total, total what it sent.
    let total = format!("/{sent} (");
    let lost: u64 = r
        .stdout
        .lines()
        .find_map(|l| {
            let at = l.find(&total)?;
            l[..at].rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("the client has no report of our server's: {}", r.stdout));
    assert!(lost * 100 <= sent, "{lost} of {sent} lost on loopback: {}", r.stdout);
    let ecn = out.lines().find(|l| l.contains("ECN:")).unwrap();
    assert!(
        ecn.contains(&format!("ECT(1) {}, CE 0: the path kept ECT(1)", sent - 1 - lost)),
        "{out}"
    );
}

/// A test's `-J` through the typed document every reader uses.
fn test_doc(text: &str) -> TestDoc {
    // A server's log may hold more: its first document is this test's.
    let v = serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON: {text}"));
    serde_json::from_value::<TestDoc>(v).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `-J` and `--json-stream` carry the L4S exchange beside `ecn`: the
/// client's view from its acks (the newest ack's counts, the bleached
/// flag, the controller's rate and alpha) in each interval and at the end,
/// and the server's (the acks it sent) in its own document.
#[test]
fn the_l4s_exchange_is_in_json_on_both_ends() {
    let port = free_port();
    let srv = Proc::spawn(&wirespeed(), &["--iperf2", "-s", "-u", "-J", "-p", &port.to_string()]);
    wait_bound_udp(port);
    let r = iperf2_client(
        Iperf2::Ours,
        port,
        "-u --udp-l4s -t 2 -i 1 -b 5M -J",
        Duration::from_secs(20),
    )
    .expect("ours always runs");
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let d = test_doc(&r.stdout);
    let end = d.end.as_ref().expect("an end");
    let u = end.streams[0].udp.as_ref().expect("a UDP stream");
    let l = u.l4s.as_ref().unwrap_or_else(|| panic!("no l4s: {}", r.stdout));
    assert_eq!(l.role.as_deref(), Some("sender"));
    let acks = l.acks.unwrap();
    assert!(acks > 10, "{}", r.stdout);
    let received = l.received.unwrap();
    assert!(received > 300, "{}", r.stdout);
    // Loopback marks nothing and keeps the field.
    assert_eq!((l.ce, l.ecn_error), (Some(0), Some(false)), "{}", r.stdout);
    assert!(l.lost.is_some(), "{}", r.stdout);
    assert!(l.rate_bps.is_some_and(|r| r > 0.0), "{}", r.stdout);
    assert!(l.alpha.is_some_and(|a| (0.0..=1.0).contains(&a)), "{}", r.stdout);
    // The whole test's sum: the one flow's, without an alpha.
    let sum = end.sum.as_ref().and_then(|s| s.l4s.as_ref()).expect("end.sum.l4s");
    assert_eq!((sum.acks, sum.received, sum.alpha), (Some(acks), Some(received), None));
    // Each interval, cumulative: never more than the end's.
    let seen: Vec<i64> = d
        .intervals()
        .iter()
        .map(|iv| iv.streams[0].l4s.as_ref().and_then(|l| l.acks).expect("interval l4s"))
        .collect();
    assert!(!seen.is_empty() && seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert!(seen.iter().all(|a| *a <= acks), "{seen:?} against {acks}");

    // The server's document: the acks it sent, no controller.
    let out = stop_server(srv);
    let sd = test_doc(&out);
    let s = sd.end.as_ref().unwrap().streams[0]
        .udp
        .as_ref()
        .and_then(|u| u.l4s.clone())
        .unwrap_or_else(|| panic!("no l4s on the server: {out}"));
    assert_eq!(s.role.as_deref(), Some("receiver"));
    assert!(s.acks.is_some_and(|a| a >= acks), "{out}");
    assert!(s.received.is_some_and(|n| n >= received), "{out}");
    assert_eq!((s.rate_bps, s.alpha), (None, None), "{out}");

    // --json-stream: each interval event's streams carry it.
    let srv = Proc::spawn(&wirespeed(), &["--iperf2", "-s", "-u", "-p", &port.to_string()]);
    wait_bound_udp(port);
    let r = iperf2_client(
        Iperf2::Ours,
        port,
        "-u --udp-l4s -t 2 -i 1 -b 5M --json-stream",
        Duration::from_secs(20),
    )
    .expect("ours always runs");
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let with_l4s = r
        .stdout
        .lines()
        .filter(|l| l.contains("\"event\":\"interval\""))
        .filter(|l| l.contains("\"l4s\":{\"role\":\"sender\""))
        .count();
    assert!(with_l4s >= 1, "{}", r.stdout);
    drop(stop_server(srv));
}
