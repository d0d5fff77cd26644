//! iperf 2's load and timing tools against the real iperf 2.1.8, both
//! ways: a working load beside bounceback and beside any test, bounceback
//! request and reply sizes, `--sync-transfer-id` (with iperf 2.2's server
//! where there is one) and isochronous frames, TCP and UDP.

use crate::common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(60);

/// Connection lines of a server's output with `tag`.
fn tagged(out: &str, tag: &str) -> usize {
    out.lines()
        .filter(|l| l.contains(" connected with ") && l.contains(tag))
        .count()
}

/// The count of a bounceback client's final `BB cnt=` line.
fn bb_total(out: &str) -> u64 {
    bb_final(out).0
}

#[test]
fn a_working_load_beside_bounceback_both_ways() {
    let Some(iperf) = peer("iperf") else { return };
    for (dir, tag) in [
        ("up", None),
        ("down", Some("(reverse)")),
        ("bidir", Some("(full-duplex)")),
    ] {
        let port = free_port();
        let mut srv = iperf2_server(Iperf2::Real, port, &[]).unwrap();
        let args = format!("--bounceback --bounceback-congest={dir},2 -t 2");
        let r = iperf2_client(Iperf2::Ours, port, &args, T).unwrap();
        assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
        assert!((18..=30).contains(&bb_total(&r.stdout)), "{dir}: {}", r.stdout);
        // The bounceback flow and the two load flows.
        wait::text(
            "the server's three flows",
            wait::LONG,
            || srv.out(),
            |t| tagged(t, " connected with ") >= 3,
        );
        srv.signal(15);
        srv.wait(T);
        let out = srv.out();
        assert_eq!(tagged(&out, "(bb w/quickack"), 1, "{dir}: {out}");
        let load = out
            .lines()
            .filter(|l| l.contains(" connected with ") && !l.contains("(bb "))
            .count();
        assert_eq!(load, 2, "{dir}: {out}");
        if let Some(t) = tag {
            assert_eq!(tagged(&out, t), 2, "{dir}: {out}");
        }
    }
    // The real client with its load, against our server.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let r = run(
        &iperf,
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--bounceback",
            "--bounceback-congest",
            "-t",
            "2",
        ],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!((18..=30).contains(&bb_total(&r.stdout)), "{}", r.stdout);
    let out = stop_server(srv);
    assert_eq!(tagged(&out, "(full-duplex)"), 1, "{out}");
    // A transmit delay: said, waited, and the load still runs.
    let port = free_port();
    let _srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let t0 = std::time::Instant::now();
    let r = iperf2_client(
        Iperf2::Ours,
        port,
        "--bounceback --bounceback-congest=up --bounceback-txdelay 1 -t 2",
        T,
    )
    .unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("] Client traffic to start in "), "{}", r.stdout);
    assert!(t0.elapsed() > Duration::from_secs(3), "{:?}", t0.elapsed());
    let r = iperf2_client(Iperf2::Ours, port, "--bounceback-congest=sideways -t 1", T).unwrap();
    assert_eq!(r.code, Some(1));
}

#[test]
fn a_working_load_beside_any_test() {
    // A rate-limited TCP test with a download load, against the real server.
    let port = free_port();
    let Some(mut srv) = iperf2_server(Iperf2::Real, port, &[]) else {
        return;
    };
    let r = iperf2_client(Iperf2::Ours, port, "-t 2 -b 50m --working-load=down,2", T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    // The test's own flow keeps its rate; the load's is far above it.
    let own = r
        .stdout
        .lines()
        .find(|l| l.starts_with("[  1] 0.0000-"))
        .unwrap_or_default();
    assert!(own.contains(" Mbits/sec"), "{}", r.stdout);
    wait::text(
        "the server's three flows",
        wait::LONG,
        || srv.out(),
        |t| tagged(t, " connected with ") >= 3,
    );
    srv.signal(15);
    srv.wait(T);
    let out = srv.out();
    assert_eq!(tagged(&out, "(reverse)"), 2, "{out}");
    assert_eq!(tagged(&out, " connected with "), 3, "{out}");
    // A UDP test gets a TCP load on a server that has both (wirespeed's).
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let r = iperf2_client(Iperf2::Ours, port, "-u -t 2 -b 10m --working-load", T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Server Report:"), "{}", r.stdout);
    assert!(
        r.stdout.contains("(full-duplex)"),
        "the bidir load's connection: {}",
        r.stdout
    );
}

/// iperf 2.2.x built from its sources (`WIRESPEED_IPERF2_NEW`), or `None`
/// with a notice.
fn iperf2_new() -> Option<std::path::PathBuf> {
    match std::env::var_os("WIRESPEED_IPERF2_NEW") {
        Some(p) if !p.is_empty() => Some(p.into()),
        _ => {
            eprintln!("NOTICE: WIRESPEED_IPERF2_NEW not set; skipping the iperf 2.2 part");
            None
        }
    }
}

/// (round trips, bytes text) of a bounceback client's whole-test line.
fn bb_final(out: &str) -> (u64, String) {
    let line = out
        .lines()
        .rev()
        .find(|l| l.contains("] 0.0") && (l.contains(" rps") || l.contains("RPS=")))
        .unwrap_or_default();
    let bytes = line.split(" sec ").nth(1).unwrap_or_default().trim_start();
    let bytes = bytes.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    (bb_total_any(line), bytes)
}

fn bb_total_any(line: &str) -> u64 {
    line.split_whitespace()
        .find(|w| w.contains('=') && w.contains('/') && !w.starts_with("RPS"))
        .and_then(|w| w.split('=').next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn bounceback_request_and_reply_sizes() {
    // Ours against ours: 20 round trips of 200 bytes out, 1 KiB back.
    let args = "--bounceback --bounceback-request 200 --bounceback-reply 1K -t 2";
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("Bounce-back test (req/reply size = 200 Byte/1.00 KByte)"),
        "{}",
        r.stdout
    );
    let (n, bytes) = bb_final(&r.stdout);
    assert!((18..=30).contains(&n), "{}", r.stdout);
    assert_eq!(
        bytes,
        format!("{:.1} KBytes", n as f64 * 1224.0 / 1024.0),
        "{}",
        r.stdout
    );
    drop(srv);
    // A 2.1.8 server echoes the request's size: a reply size is 2.2's.
    let r = iperf2_client(Iperf2::Ours, 9, "--bounceback-reply 1K", T).unwrap();
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("needs --bounceback"), "{}", r.stderr);
    // With the real iperf 2.2 both ways.
    let Some(i22) = iperf2_new() else { return };
    let port = free_port();
    let p = port.to_string();
    let mut srv = Proc::spawn(&i22, &["-s", "-p", &p]);
    wait_listening(port);
    let r = iperf2_client(Iperf2::Ours, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    let (n, _) = bb_final(&r.stdout);
    assert!((18..=30).contains(&n), "{}", r.stdout);
    srv.signal(15);
    srv.wait(T);
    let port = free_port();
    let p = port.to_string();
    let srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p];
    a.extend(args.split_whitespace());
    let r = run(&i22, &a, T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let (n, _) = bb_final(&r.stdout);
    assert!((18..=30).contains(&n), "{}", r.stdout);
    // 2.2 counts what came back: 1 KiB per reply.
    assert!(r.stdout.contains(&format!("Rx={:.1} KByte", n as f64)), "{}", r.stdout);
    drop(srv);
}

#[test]
fn iperf_2_2_sync_transfer_id_clients_are_served() {
    let Some(i22) = iperf2_new() else { return };
    for udp in [false, true] {
        let port = free_port();
        let p = port.to_string();
        let srv = iperf2_server(Iperf2::Ours, port, if udp { &["-u"] } else { &[] }).unwrap();
        let mut a = vec!["-c", "127.0.0.1", "-p", &p, "--sync-transfer-id", "-P", "2", "-t", "1"];
        if udp {
            a.extend(["-u", "-b", "10m"]);
        }
        let r = run(&i22, &a, T);
        assert_eq!(r.code, Some(0), "udp={udp}: {} {}", r.stdout, r.stderr);
        let out = stop_server(srv);
        // Two flows summed, no connect-back (its VERSION1 is not a -r).
        assert_eq!(tagged(&out, " connected with "), 2, "udp={udp}: {out}");
        assert!(out.contains("[SUM] "), "udp={udp}: {out}");
        assert!(!out.contains("(reverse)"), "udp={udp}: {out}");
    }
}

/// The frame columns of the last data line that has them: what follows
/// `pps` (`tx/miss/slip` on a sender, `rx/lost` on a receiver) and, on a
/// receiver, the mean frame latency (ms).
fn frame_cols(out: &str) -> Option<(Vec<u64>, Option<f64>)> {
    let line = out
        .lines()
        .filter(|l| l.contains(" sec ") && l.contains(" pps "))
        .rfind(|l| {
            let after = l.split(" pps ").nth(1).unwrap_or("");
            after
                .split_whitespace()
                .next()
                .is_some_and(|t| t.contains('/') && !t.contains('('))
        })?;
    let mut after = line.split(" pps ").nth(1)?.split_whitespace();
    let counts = after.next()?.split('/').map(|x| x.parse().unwrap()).collect();
    let latency = after
        .next()
        .and_then(|t| t.split('/').next())
        .and_then(|m| m.parse().ok());
    Some((counts, latency))
}

#[test]
fn isochronous_udp_both_ways() {
    if peer("iperf").is_none() {
        return;
    }
    let args = "-u --isochronous=60:10m,1m --trip-times -t 2 -i 1";
    // Our client, the real server: every frame we sent completed there.
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Real, port, &["-u", "-e"]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("Isochronous: 60.00 frames/sec mean=10.0 Mbit/s, stddev=1.00 Mbit/s, Period/IPG=16.67/0.000 ms"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("IPG target"), "{}", r.stdout);
    assert!(r.stdout.contains("(isoch) (trip-times)"), "{}", r.stdout);
    assert!(r.stdout.contains("Write/Err  PPS  isoch:tx/miss/slip"), "{}", r.stdout);
    let (sent, _) = frame_cols(&r.stdout).expect("isoch columns");
    // 120 slots in 2 s: each a frame sent or one a late sender missed (a
    // loaded host can hold the sender back).
    assert!(
        (118..=121).contains(&(sent[0] + sent[1])) && sent[0] > 0,
        "{}",
        r.stdout
    );
    wait::text(
        "the server's frame count",
        wait::LONG,
        || srv.out(),
        |t| frame_cols(t).is_some_and(|(got, _)| got[0] >= sent[0]),
    );
    srv.signal(15);
    srv.wait(T);
    let out = srv.out();
    assert!(out.contains("(isoch) (trip-times)"), "{out}");
    assert!(out.contains("Frame:rx/lost  latency"), "{out}");
    let (got, lat) = frame_cols(&out).expect("frame columns");
    // 2.1.8 counts one frame more than it completed.
    assert!(got[0] == sent[0] + 1 || got[0] == sent[0], "{sent:?} {got:?} {out}");
    // A slot our late sender missed is a frame id 2.1.8 never sees: it
    // counts it lost. Nothing else may be.
    assert!(got[1] <= sent[1], "{sent:?} {got:?} {out}");
    assert!(lat.is_some_and(|l| l > 0.0 && l < 50.0), "{out}");
    // The real client, our server: its frames complete here, none lost,
    // and each has a latency.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-u", "-e"]).unwrap();
    let r = iperf2_client(Iperf2::Real, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let (claimed, _) = frame_cols(&r.stdout).expect("2.1.8's isoch columns");
    let out = stop_server(srv);
    assert!(out.contains("(isoch) (trip-times)"), "{out}");
    assert!(out.contains("Frame:rx/lost  latency"), "{out}");
    let (got, lat) = frame_cols(&out).expect("our frame columns");
    // 2.1.8's client counts one more than it sent, too.
    assert!(
        got[0] + 1 == claimed[0] || got[0] == claimed[0],
        "{claimed:?} {got:?} {out}"
    );
    assert_eq!(got[1], 0, "{out}");
    // 2.1.8's client stamps its start after its first frame's wake, so on
    // a busy machine its frames look early by that wake's delay (15 ms
    // seen with the host's two CPUs busy): a mean below zero is its own
    // clock's doing (its own server prints the same), not ours.
    assert!(lat.is_some_and(|l| l > -50.0 && l < 50.0), "{out}");
}

#[test]
fn isochronous_tcp_both_ways() {
    if peer("iperf").is_none() {
        return;
    }
    let args = "--isochronous=60:10m,1m --trip-times -t 2 -i 1";
    // Our client, the real server: the bytes arrive, and it tags the flow.
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Real, port, &["-e"]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("Rtry     Cwnd/RTT     isoch:tx/miss/slip  NetPwr"),
        "{}",
        r.stdout
    );
    let last = r
        .stdout
        .lines()
        .rfind(|l| l.contains("0.0000-2.0"))
        .unwrap()
        .to_string();
    // tx/miss/slip: every slot a frame sent, or missed by a late sender.
    let cols: Vec<u64> = last
        .split(" us ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .map(|t| t.split('/').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    assert!(
        cols.len() == 3 && (118..=121).contains(&(cols[0] + cols[1])) && cols[0] > 0,
        "{last}"
    );
    wait::stdout_has(&srv, "(isoch) (trip-times)", wait::LONG);
    srv.signal(15);
    srv.wait(T);
    let out = srv.out();
    assert!(out.contains("(isoch) (trip-times)"), "{out}");
    // The real client, our server: each frame is a burst whose latency we
    // measure (2.1.8's own server prints zeros there).
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-e"]).unwrap();
    let r = iperf2_client(Iperf2::Real, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = stop_server(srv);
    assert!(out.contains("(isoch) (trip-times)"), "{out}");
    let last = out.lines().rfind(|l| l.contains("[  1] 0.0000-")).unwrap();
    let cnt: u64 = last
        .split(" ms (")
        .nth(1)
        .and_then(|t| t.split('/').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!((118..=122).contains(&cnt), "{out}");
    assert!(!last.contains(" 0.000/0.000/0.000/0.000 ms"), "{out}");
}

#[test]
fn isochronous_frames_and_gaps_between_our_ends() {
    // 20 frames/s of 12,500 bytes in 1000-byte datagrams 2 ms apart: each
    // frame takes 12 gaps (24 ms) to send, so its latency is at least that.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-u", "-e", "-J"]).unwrap();
    let args = "-u -l 1000 --isochronous=20:2m,0 --ipg 2 --trip-times -t 2 -J";
    let r = iperf2_client(Iperf2::Ours, port, args, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    let client: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let sent = &client["end"]["streams"][0]["iperf2"]["isochronous"];
    let out = stop_server(srv);
    let server: serde_json::Value = serde_json::from_str(&out).unwrap();
    let got = &server["end"]["streams"][0]["iperf2"]["isochronous"];
    // 40 slots in 2 s: each a frame sent, or a slot a late sender missed
    // (a loaded machine can hold the sender back; what it did send must
    // still arrive whole, and be counted so).
    let frames = sent["frames_sent"].as_u64().unwrap();
    assert_eq!(frames + sent["slots_missed"].as_u64().unwrap(), 40, "{sent}");
    assert!(frames > 0, "{sent}");
    // Every frame sent arrives whole, but the last: a sender held back by a
    // loaded machine may still be in it when the test's time ends (38 sent,
    // 37 received, none lost, seen at load 8).
    let received = got["frames_received"].as_u64().unwrap_or(0);
    assert!(received == frames || received + 1 == frames, "{got} {sent}");
    assert_eq!(got["frames_lost"], 0, "{got}");
    // No frame arrives before its last datagram was sent (its 12 gaps);
    // how much later depends on the machine's load.
    let lat = got["latency"]["min_ms"].as_f64().unwrap();
    assert!((24.0..1000.0).contains(&lat), "{got}");
    // 13 datagrams a frame (12 of 1000 bytes, one of 500); the test's end
    // may cut the last frame short (seen in CI: 519 writes of 520, the
    // 500-byte datagram left unsent, when the sender ran 26 ms late).
    let writes = client["end"]["streams"][0]["iperf2"]["writes"].as_u64().unwrap();
    assert!(writes <= frames * 13 && writes > (frames - 1) * 13, "{client}");
    let (whole, part) = (writes / 13, writes % 13);
    assert_eq!(
        client["end"]["streams"][0]["udp"]["bytes"],
        whole * 12_500 + part * 1000,
        "{client}"
    );
}

#[test]
fn our_sync_transfer_id_client() {
    // Against our server: the flows keep the client's numbers (a second
    // client's are 1 and 2 again, not 3 and 4), and TCP's VERSION1 is not
    // taken for -r.
    for udp in [false, true] {
        let port = free_port();
        let srv = iperf2_server(Iperf2::Ours, port, if udp { &["-u"] } else { &[] }).unwrap();
        let args = format!("--sync-transfer-id -P 2 -t 1{}", if udp { " -u -b 10m" } else { "" });
        for _ in 0..2 {
            let r = iperf2_client(Iperf2::Ours, port, &args, T).unwrap();
            assert_eq!(r.code, Some(0), "udp={udp}: {} {}", r.stdout, r.stderr);
        }
        let out = stop_server(srv);
        assert_eq!(tagged(&out, " connected with "), 4, "udp={udp}: {out}");
        assert_eq!(tagged(&out, "[  1] local"), 2, "udp={udp}: {out}");
        assert_eq!(tagged(&out, "[  2] local"), 2, "udp={udp}: {out}");
        assert!(!out.contains("(reverse)"), "udp={udp}: {out}");
    }
    // A 2.1.8 UDP server reads no id and serves the flows as usual.
    if peer("iperf").is_some() {
        let port = free_port();
        let mut srv = iperf2_server(Iperf2::Real, port, &["-u"]).unwrap();
        let r = iperf2_client(Iperf2::Ours, port, "--sync-transfer-id -P 2 -t 1 -u", T).unwrap();
        assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
        assert_eq!(r.stdout.matches("Server Report:").count(), 2, "{}", r.stdout);
        wait::stdout_has_n(&srv, " connected with ", 2, wait::LONG);
        srv.signal(15);
        srv.wait(T);
        assert_eq!(tagged(&srv.out(), " connected with "), 2, "{}", srv.out());
    }
    // iperf 2.2's server takes our numbers: the second client's flows are
    // remapped to 1 and 2.
    if let Some(i22) = iperf2_new() {
        let port = free_port();
        let p = port.to_string();
        let mut srv = Proc::spawn(&i22, &["-s", "-p", &p, "-e"]);
        wait_listening(port);
        for _ in 0..2 {
            let r = iperf2_client(Iperf2::Ours, port, "--sync-transfer-id -P 2 -t 1", T).unwrap();
            assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
        }
        wait::stdout_has(&srv, "Transfer ID 4 remapped to 2", wait::LONG);
        srv.signal(15);
        srv.wait(T);
        let out = srv.out();
        assert!(out.contains("Transfer ID 3 remapped to 1"), "{out}");
        assert!(out.contains("Transfer ID 4 remapped to 2"), "{out}");
    }
}

/// The end of the last `[ *1] 0.0000-END sec` line: the whole test's span.
fn whole_span(out: &str) -> Option<f64> {
    let line = out.lines().rfind(|l| l.starts_with("[ *1] 0.0000-"))?;
    line["[ *1] 0.0000-".len()..].split_whitespace().next()?.parse().ok()
}

#[test]
fn isochronous_frames_from_the_server_both_ways() {
    if peer("iperf").is_none() {
        return;
    }
    let udp = "-u -R --isochronous=30:4m,1m --ipg 0.5 --trip-times -t 2 -e";
    // Our client, the real server sending: every frame completes here.
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Real, port, &["-u"]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, udp, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    let (got, lat) = frame_cols(&r.stdout).expect("frame columns");
    // 60 slots; a loaded host may hold the sender back from some.
    assert!((30..=62).contains(&got[0]) && got[1] == 0, "{}", r.stdout);
    // A frame's datagrams go 0.5 ms apart, so it takes some milliseconds.
    assert!(lat.is_some_and(|l| l > 1.0 && l < 60.0), "{}", r.stdout);
    srv.signal(15);
    srv.wait(T);
    // The real client, our server sending (and its start time in the
    // datagrams, which a receiving 2.1.8 client reads).
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-u"]).unwrap();
    let r = iperf2_client(Iperf2::Real, port, udp, T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stdout.contains("ignore --trip-times"), "{}", r.stdout);
    let (got, lat) = frame_cols(&r.stdout).expect("2.1.8's frame columns");
    // 2.1.8 counts one frame more than it completed.
    assert!((30..=62).contains(&got[0]) && got[1] == 0, "{}", r.stdout);
    assert!(lat.is_some_and(|l| l > 1.0 && l < 60.0), "{}", r.stdout);
    // The report spans the test (2.1.8 takes its start from our
    // datagrams), not the epoch; a loaded host moves its ends by some ms.
    let span = whole_span(&r.stdout);
    assert!(span.is_some_and(|s| (1.9..2.2).contains(&s)), "{}", r.stdout);
    // Plain -R --trip-times too.
    let r = iperf2_client(Iperf2::Real, port, "-u -R --trip-times -t 1 -e", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stdout.contains("ignore --trip-times"), "{}", r.stdout);
    let span = whole_span(&r.stdout);
    assert!(span.is_some_and(|s| (0.9..1.2).contains(&s)), "{}", r.stdout);
    let out = stop_server(srv);
    assert!(out.contains("isoch:tx/miss/slip"), "{out}");
    // TCP: each frame a burst of 4 Mbit/s / 20 = 25,000 bytes.
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Real, port, &[]).unwrap();
    let tcp = "-R --isochronous=20:4m,0 --trip-times -t 2 -e";
    let r = iperf2_client(Iperf2::Ours, port, tcp, T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    let last = r.stdout.lines().rfind(|l| l.contains("[ *1] 0.0000-")).unwrap_or("");
    let (cnt, size) = last
        .split(" ms (")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .and_then(|t| t.split_once('/'))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    let cnt: u64 = cnt.parse().unwrap();
    assert!((39..=42).contains(&cnt) && size == "25000", "{}", r.stdout);
    srv.signal(15);
    srv.wait(T);
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-e"]).unwrap();
    let r = iperf2_client(Iperf2::Real, port, "-R --isochronous=20:4m,0 -t 2", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = stop_server(srv);
    assert!(out.contains("(isoch) (reverse)"), "{out}");
    let (tx, _) = frame_cols(&out.replace(" us ", " pps ")).expect("our sender's frames");
    assert!((39..=41).contains(&tx[0]), "{out}");
    // 2.1.8's client received them (it prints no frame numbers over TCP).
    assert!(r.stdout.contains(" KBytes "), "{}", r.stdout);
}
