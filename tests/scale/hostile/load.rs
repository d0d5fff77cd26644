//! Many tests and hostile clients without leaks, round-trip probe floods,
//! a bounceback hold from the network, and a client that vanishes
//! mid-RPM.

use super::*;

/// Waits until the server is done with every test: it holds no accepted
/// connection open (ESTABLISHED or CLOSE_WAIT at local `port`), and each
/// of its threads waits.
fn server_idle(srv: &Proc, port: u16) {
    let tail = format!(":{port:04X}");
    let connected = || {
        ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
            std::fs::read_to_string(f).unwrap_or_default().lines().skip(1).any(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                c.len() > 3 && c[1].ends_with(&tail) && (c[3] == "01" || c[3] == "08")
            })
        })
    };
    wait::condition("the server's connections to close", wait::LONG, || !connected());
    wait::blocked(srv, wait::LONG);
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// One short test with the in-process client.
fn short_test(port: u16, args: &str) {
    use wirespeed::cli::iperf3::{Command, parse_args};
    let argv: Vec<String> = format!("-c 127.0.0.1 -p {port} {args}")
        .split_whitespace()
        .map(String::from)
        .collect();
    let Ok(Command::Run(cfg, _)) = parse_args(&argv) else {
        panic!("{args}")
    };
    let mut reporter = wirespeed::report::Reporter::new();
    let sig = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    wirespeed::dialect::iperf3::client::run(&cfg, "127.0.0.1", port, &mut reporter, &sig)
        .unwrap_or_else(|e| panic!("{args}: {}", e.line()));
}

#[test]
fn two_hundred_tests_and_hostile_clients_leak_no_descriptors_or_memory() {
    let (mut srv, port) = server(&[]);
    let pid = srv.pid();
    let mut rng = Rng::new(13);
    let mut round = |i: usize| {
        let args = match i % 4 {
            0 => "-n 1M",
            1 => "-n 1M -R",
            2 => "-n 1M -P 2",
            _ => "-u -b 50M -n 256K -l 1400",
        };
        short_test(port, args);
        // And something hostile every few tests.
        match i % 5 {
            0 => {
                let mut s = connect(port);
                let _ = s.write_all(&rng.bytes(100));
            }
            1 => {
                let mut s = exchange(port, &mut rng);
                let _ = s.write_all(&frame(b"[]"));
                let _ = server_error(&mut s);
            }
            2 => {
                let mut s = exchange(port, &mut rng);
                let _ = s.write_all(&u32::MAX.to_be_bytes());
                let _ = server_error(&mut s);
            }
            _ => {}
        }
    };
    // Warm-up: thread stacks, allocator arenas and buffers settle.
    for i in 0..20 {
        round(i);
    }
    // Done with them: no connection left, every thread waiting.
    server_idle(&srv, port);
    let (fd0, rss0) = (fd_count(pid), rss_kib(pid));
    let mut rss_mid = 0;
    for i in 20..220 {
        round(i);
        if i == 119 {
            rss_mid = rss_kib(pid);
        }
    }
    // Let the last tests' threads finish and close.
    server_idle(&srv, port);
    wait::within(wait::LONG, || (fd_count(pid) <= fd0).then_some(()));
    let (fd1, rss1) = (fd_count(pid), rss_kib(pid));
    assert!(fd1 <= fd0, "descriptors grew from {fd0} to {fd1}");
    // Allocator noise is fine; growth with the number of tests is not: the
    // second hundred tests add (almost) nothing to what the first left.
    assert!(
        rss1 < rss_mid + 2048,
        "RSS grew from {rss_mid} KiB to {rss1} KiB over 100 tests"
    );
    assert!(rss1 < rss0 + 16 * 1024, "RSS grew from {rss0} KiB to {rss1} KiB");
    eprintln!("200 tests: fds {fd0} -> {fd1}, RSS {rss0} -> {rss_mid} -> {rss1} KiB");
    alive(&mut srv);
}

#[test]
fn a_bounceback_hold_from_the_network_does_not_keep_a_server_from_stopping() {
    // A 64-byte bounceback message whose hold (offset 44) asks the server
    // to sit on it for 4295 s: the hold is capped and a stop cuts it short.
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let mut msg = vec![0x5au8; 64];
    msg[0..4].copy_from_slice(&0x0080_0000u32.to_be_bytes());
    msg[4..8].copy_from_slice(&64u32.to_be_bytes());
    msg[8..12].copy_from_slice(&1u32.to_be_bytes());
    msg[44..48].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut s = connect(port);
    s.write_all(&msg).unwrap();
    // The server took the message and holds it.
    wait::stdout_has(&srv, "connected with", wait::LONG);
    wait::blocked(&srv, wait::LONG);
    srv.signal(15);
    let t0 = std::time::Instant::now();
    assert!(srv.wait(Duration::from_secs(8)).is_some(), "server still running");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "the server took {:?} to stop",
        t0.elapsed()
    );
}

/// A valid 100-byte bounceback message (what `--latency` probes send).
fn probe_message(id: u32) -> Vec<u8> {
    let mut m = vec![0x5au8; 100];
    m[0..4].copy_from_slice(&0x0080_0000u32.to_be_bytes());
    m[4..8].copy_from_slice(&100u32.to_be_bytes());
    m[8..12].copy_from_slice(&id.to_be_bytes());
    m[12..14].copy_from_slice(&0x8000u16.to_be_bytes());
    // Server stamps to come (all ones), and no hold.
    m[28..44].fill(0xff);
    m[44..48].fill(0);
    m
}

#[test]
fn a_flood_of_round_trip_probes_is_served_and_silent_probers_do_not_block_tests() {
    let (mut srv, port) = server(&[]);
    // 32 probers at full speed, 300 round trips each (echo connections
    // are counted apart from tests: 64 at once with 16 test places).
    let busy: Vec<_> = (0..32)
        .map(|_| {
            std::thread::spawn(move || -> bool {
                let mut s = connect(port);
                let mut back = [0u8; 100];
                for id in 0..300 {
                    if s.write_all(&probe_message(id)).is_err() || s.read_exact(&mut back).is_err() {
                        return false;
                    }
                    assert_eq!(&back[8..12], &id.to_be_bytes());
                }
                true
            })
        })
        .collect();
    // And 64 that go silent: after one round trip, or half way through a
    // message (the server gives a message 4 s, a next message 120 s).
    // Those beyond the echo places are turned away; those in them must
    // not keep tests out.
    let mut silent = Vec::new();
    for i in 0..64u32 {
        let mut s = connect(port);
        let m = probe_message(i);
        // (Those over the server's limits are closed at once.)
        if i % 2 == 0 {
            let mut back = [0u8; 100];
            let _ = s.write_all(&m).and_then(|_| s.read_exact(&mut back));
        } else {
            let _ = s.write_all(&m[..50]);
        }
        silent.push(s);
    }
    let served = busy
        .into_iter()
        .filter(|_| true)
        .map(|t| t.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert!(served >= 8, "only {served} of 32 probers were served: {}", srv.out());
    // Tests still run beside them, and a --latency client is served.
    alive(&mut srv);
    real_clients_complete(port, true);
    let p = port.to_string();
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "--latency"], T);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    // The half messages are dropped within the message deadline.
    for s in silent.iter_mut().skip(1).step_by(2) {
        assert!(closed_within(s, Duration::from_secs(10)));
    }
    alive(&mut srv);
}

#[test]
fn a_client_that_vanishes_mid_rpm_leaves_no_test_behind() {
    let mport = free_port();
    let (_srv, port) = server(&["--metrics", &format!("127.0.0.1:{mport}")]);
    let p = port.to_string();
    let mut c = Proc::spawn(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "--rpm", "-t", "30"]);
    // Wait until it has several load flows running, then kill it.
    assert!(c.wait_for_line("  3 flows", Duration::from_secs(15)), "{}", c.out());
    let active = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("wirespeed_active_tests "))
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
    };
    assert!(active(&scrape(mport)).unwrap_or(0) >= 3, "{}", scrape(mport));
    c.signal(9);
    c.wait(Duration::from_secs(5));
    // Every test it left ends, and the server serves the next client.
    wait::text(
        "no test left running",
        Duration::from_secs(20),
        || scrape(mport),
        |t| active(t) == Some(0),
    );
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}
