//! `--bounceback` (iperf 2's request/response test): wirespeed's client
//! against the real iperf 2.1.8 server, the real client against
//! `wirespeed --iperf2 -s` and the shared-port `wirespeed -s`, and
//! wirespeed against itself. Tests needing the real iperf are skipped with
//! a notice when it is missing, unless WIRESPEED_REQUIRE_PEERS=1.

use crate::common;

use common::*;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// One client data line: (start, end, count, avg, min, max, stdev, rps).
#[derive(Debug)]
struct BbLine {
    start: f64,
    end: f64,
    count: u64,
    avg: f64,
    min: f64,
    max: f64,
    rps: u64,
}

/// The `[  1] a-b sec ... n=avg/min/max/stdev ms ... N rps` lines of flow `id`.
fn bb_lines(out: &str, id: u32) -> Vec<BbLine> {
    let tag = format!("[{id:>3}] ");
    out.lines()
        .filter(|l| l.starts_with(&tag) && l.ends_with(" rps"))
        .map(|l| {
            let f: Vec<&str> = l[tag.len()..].split_whitespace().collect();
            let (a, b) = f[0].split_once('-').unwrap();
            let stats = f.iter().find(|w| w.contains('=')).unwrap();
            let (n, rest) = stats.split_once('=').unwrap();
            let v: Vec<f64> = rest.split('/').map(|x| x.parse().unwrap()).collect();
            BbLine {
                start: a.parse().unwrap(),
                end: b.parse().unwrap(),
                count: n.parse().unwrap(),
                avg: v[0],
                min: v[1],
                max: v[2],
                rps: f[f.len() - 2].parse().unwrap(),
            }
        })
        .collect()
}

fn sane(l: &BbLine) {
    assert!(l.count > 0, "{l:?}");
    assert!(l.min > 0.0 && l.min <= l.avg && l.avg <= l.max, "{l:?}");
    assert!(l.rps > 0, "{l:?}");
}

fn ok(r: &Ran) {
    assert_eq!(r.code, Some(0), "client failed:\n{}\n{}", r.stdout, r.stderr);
}

/// Checks a `-t 2 -i 1` client with the default 10 writes per 1 s burst:
/// two interval lines of about 10 and a final line of about 20.
fn default_bursts(out: &str) {
    assert!(
        out.contains("[ ID] Interval            Transfer    Bandwidth         BB cnt=avg/min/max/stdev         Rtry  Cwnd/RTT    RPS"),
        "{out}"
    );
    assert!(
        out.contains("Bursting:  100 Byte writes 10 times every 1.00 second(s)"),
        "{out}"
    );
    assert!(out.contains("(bb w/quickack len/hold=100/0)"), "{out}");
    let lines = bb_lines(out, 1);
    assert!(lines.len() >= 2, "{out}");
    let last = lines.last().unwrap();
    assert_eq!(last.start, 0.0, "{out}");
    // Two bursts of ten, and a third when the sender's tick at 2.0 s wins
    // the race with its own end of test (2.1.8's does on a busy machine).
    assert!((18..=22).contains(&last.count) || last.count == 30, "{out}");
    for l in &lines {
        sane(l);
    }
    let intervals = &lines[..lines.len() - 1];
    assert!(intervals.iter().all(|l| (8..=12).contains(&l.count)), "{out}");
    assert!(intervals.iter().any(|l| l.start == 0.0 && l.end == 1.0), "{out}");
    // The whole test's RTT histogram, 100 µs bins.
    let pdf = format!("sec BB8(f)-PDF: bin(w=100us):cnt({})=", last.count);
    assert!(
        out.lines().any(|l| l.starts_with("[  1] 0.0000-") && l.contains(&pdf)),
        "{out}"
    );
}

#[test]
fn our_client_bounces_off_the_real_server_in_bursts_of_ten() {
    let port = free_port();
    let Some(srv) = iperf2_server(Iperf2::Real, port, &["-e", "-i", "1"]) else {
        return;
    };
    let r = iperf2_client(Iperf2::Ours, port, "--bounceback -t 2 -i 1", T).unwrap();
    let srv_out = stop_server(srv);
    ok(&r);
    default_bursts(&r.stdout);
    assert!(srv_out.contains("(bb w/quickack len/hold=100/0)"), "{srv_out}");
}

#[test]
fn the_real_client_bounces_off_our_iperf2_server() {
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["-e", "-i", "1"]).unwrap();
    let Some(r) = iperf2_client(Iperf2::Real, port, "--bounceback -t 2 -i 1", T) else {
        stop_server(srv);
        return;
    };
    // The server's total (after its one-second intervals).
    wait::text(
        "the server's total",
        wait::LONG,
        || srv.out(),
        |t| {
            t.lines().any(|l| {
                l.starts_with("[  1] 0.0000-") && !l.starts_with("[  1] 0.0000-1.0000") && l.contains("KBytes")
            })
        },
    );
    let srv_out = stop_server(srv);
    ok(&r);
    default_bursts(&r.stdout);
    assert!(srv_out.contains("(bb w/quickack len/hold=100/0)"), "{srv_out}");
    // Both directions' bytes: 20 round trips of 100 bytes each way (more
    // when 2.1.8's client, late on a busy host, catches up with a burst
    // of a third second), so the total is a whole number of round trips.
    // Each interval's bytes are whole round trips too (10 a second, one
    // burst more or less in an interval where the client's timer slipped).
    let kbytes = |l: &str| -> Option<f64> {
        let f: Vec<&str> = l.split_whitespace().collect();
        let i = f.iter().position(|w| *w == "KBytes")?;
        f[i - 1].parse::<f64>().ok()
    };
    let whole = |kb: f64| {
        let trips = kb * 1024.0 / 200.0;
        (trips - trips.round()).abs() * 200.0 <= 6.0
    };
    let first = srv_out
        .lines()
        .find(|l| l.starts_with("[  1] 0.0000-1.0000 sec"))
        .and_then(kbytes)
        .unwrap_or_else(|| panic!("no first interval:\n{srv_out}"));
    assert!(whole(first) && first * 1024.0 >= 8.0 * 200.0, "{srv_out}");
    let total = srv_out
        .lines()
        .filter(|l| l.starts_with("[  1] 0.0000-") && !l.starts_with("[  1] 0.0000-1.0000"))
        .find_map(kbytes)
        .unwrap_or_else(|| panic!("no total:\n{srv_out}"));
    assert!(
        total * 1024.0 / 200.0 >= 19.9 && whole(total),
        "{total} KBytes is not whole round trips of 200 bytes:\n{srv_out}"
    );
}

#[test]
fn the_real_client_bounces_back_to_back_off_the_shared_port() {
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let Some(r) = iperf2_client(Iperf2::Real, port, "--bounceback --bounceback-period 0 -t 1", T) else {
        stop_server(srv);
        return;
    };
    let srv_out = stop_server(srv);
    ok(&r);
    assert!(!r.stdout.contains("Bursting:"), "{}", r.stdout);
    let lines = bb_lines(&r.stdout, 1);
    let last = lines.last().expect("a final line");
    sane(last);
    // Back to back: far more than one burst of 10 (loopback does thousands).
    assert!(last.count > 100, "{}", r.stdout);
    assert!(srv_out.contains("(bb w/quickack len/hold=100/0)"), "{srv_out}");
}

#[test]
fn wirespeed_bounces_off_itself_with_hold_parallel_flows_and_csv() {
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let r = iperf2_client(
        Iperf2::Ours,
        port,
        "--bounceback=3 --bounceback-period 0.5 --bounceback-hold 2 --bounceback-no-quickack -t 1 -i 0.5 -P 2",
        T,
    )
    .unwrap();
    ok(&r);
    assert!(r.stdout.contains("(server hold req=2000 usecs)"), "{}", r.stdout);
    assert!(r.stdout.contains("(bb len/hold=100/2000)"), "{}", r.stdout);
    for id in [1, 2] {
        let lines = bb_lines(&r.stdout, id);
        let last = lines.last().expect("a final line");
        sane(last);
        assert_eq!(last.count, 6, "{}", r.stdout);
        // The server holds each message 2 ms.
        assert!(last.min >= 2.0, "{}", r.stdout);
        assert!(last.rps < 500, "{}", r.stdout);
    }
    // -y C: 2.1.8's plain rows, both directions' bytes.
    let c = iperf2_client(Iperf2::Ours, port, "--bounceback -t 1 -y C", T).unwrap();
    ok(&c);
    let rows: Vec<&str> = c.stdout.lines().collect();
    assert_eq!(rows.len(), 1, "{}", c.stdout);
    let f: Vec<&str> = rows[0].split(',').collect();
    assert_eq!(f.len(), 9, "{}", c.stdout);
    assert_eq!(f[7], "2000", "{}", c.stdout);
    stop_server(srv);
}

#[test]
fn bounceback_lengths_below_64_bytes_and_other_modes_are_refused() {
    for args in [
        "--bounceback -l 63",
        "--bounceback -u",
        "--bounceback -R",
        "--bounceback-hold 1",
        "--bounceback --bounceback-period 61",
        "--bounceback-congest=up",
        "--bounceback --bounceback-congest=sideways",
        "--bounceback-txdelay 1",
    ] {
        let r = iperf2_client(Iperf2::Ours, free_port(), args, T).unwrap();
        assert_eq!(r.code, Some(1), "{args}: {}{}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args}: {}", r.stderr);
    }
}

#[test]
fn trip_times_add_one_way_delays_against_the_real_server() {
    let port = free_port();
    let Some(srv) = iperf2_server(Iperf2::Real, port, &["-e"]) else {
        return;
    };
    let r = iperf2_client(Iperf2::Ours, port, "--bounceback=3 --trip-times -t 1 -l 64", T).unwrap();
    let srv_out = stop_server(srv);
    ok(&r);
    assert!(
        r.stdout.contains("(bb w/quickack len/hold=64/0) (trip-times)"),
        "{}",
        r.stdout
    );
    assert!(
        srv_out.contains("(bb w/quickack len/hold=64/0) (trip-times)"),
        "{srv_out}"
    );
    let owd = r
        .stdout
        .lines()
        .find(|l| l.contains(" OWD Delays (ms) Cnt=3 To="))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        owd.contains(" From=") && owd.contains(" Asymmetry=") && owd.ends_with(" rps"),
        "{owd}"
    );
}
