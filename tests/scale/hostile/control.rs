//! The iperf3 control protocol abused: junk, half cookies, impossible
//! lengths and parameters, silent and killed clients, stray streams, UDP
//! junk, hostile results, and a stop mid-exchange.

use super::*;

#[test]
fn random_bytes_are_refused_and_clients_still_served() {
    let (mut srv, port) = server(&[]);
    let mut rng = Rng::new(0x5eed_0001);
    for n in [1usize, 3, 36, 37, 38, 100, 4096, 65536] {
        for _ in 0..4 {
            let mut s = connect(port);
            let _ = s.write_all(&rng.bytes(n));
            // Done sending: whatever the bytes were taken for (junk, or by
            // chance a plausible iperf 2 header and its data), the server
            // lets the connection go.
            let _ = s.shutdown(std::net::Shutdown::Write);
            assert!(closed_within(&mut s, Duration::from_secs(10)), "{n} random bytes");
        }
    }
    // Cookie characters, then junk where the NUL should be.
    let mut s = connect(port);
    let mut c = rng.cookie();
    c[36] = b'x';
    s.write_all(&c).unwrap();
    s.write_all(&rng.bytes(500)).unwrap();
    assert!(
        closed_within(&mut s, Duration::from_secs(10)),
        "cookie with junk for its NUL"
    );
    alive(&mut srv);
    real_clients_complete(port, true);
}

#[test]
fn a_half_cookie_does_not_block_anyone_and_is_dropped() {
    let (mut srv, port) = server(&["--max-tests", "1"]);
    let mut rng = Rng::new(2);
    let mut half = connect(port);
    half.write_all(&rng.cookie()[..18]).unwrap();
    let t0 = Instant::now();
    real_clients_complete(port, true);
    assert!(t0.elapsed() < Duration::from_secs(20));
    alive(&mut srv);
    drop(half);
}

/// Starts a server with `server_args`, and sends each case's bytes after
/// a parameter exchange has begun: each is answered at once with
/// SERVER_ERROR and its code. Then the server still serves real clients;
/// it is returned for more checks.
fn refused_each(server_args: &[&str], seed: u64, cases: &[(Vec<u8>, i32)]) -> Proc {
    let (mut srv, port) = server(server_args);
    let mut rng = Rng::new(seed);
    for (sent, code) in cases {
        let t0 = Instant::now();
        assert_eq!(
            refusal_code(port, &mut rng, sent),
            *code,
            "{:?}",
            String::from_utf8_lossy(&sent[..sent.len().min(80)])
        );
        assert!(t0.elapsed() < Duration::from_secs(5), "answered at once");
    }
    alive(&mut srv);
    real_clients_complete(port, false);
    srv
}

#[test]
fn length_prefixes_of_4_gib_and_0_get_server_error() {
    // Just the length: 114, unable to receive parameters.
    let cases: Vec<(Vec<u8>, i32)> = [u32::MAX, 0x8000_0000, 8193, 0]
        .iter()
        .map(|prefix| (prefix.to_be_bytes().to_vec(), 114))
        .collect();
    let srv = refused_each(&[], 3, &cases);
    assert!(err_shows(&srv, "exceeds the 8192-byte limit"), "{}", srv.err());
    assert!(err_shows(&srv, "empty message"), "{}", srv.err());
}

#[test]
fn malformed_parameter_json_gets_server_error() {
    let bodies: &[&[u8]] = &[
        b"not json at all",
        b"{\"tcp\":true,",
        b"[1,2,3]",
        b"\"a string\"",
        b"42",
        b"null",
        b"{\"tcp\":true,\"parallel\":\"many\"}",
        b"{\"tcp\":true,\"time\":[1]}",
        b"{\"tcp\":true,\"reverse\":\"yes\"}",
        b"{\"tcp\":true,\"title\":{\"a\":1}}",
        b"{\"tcp\":true,\"time\":1e400}",
        b"\xff\xfe\x00\x01",
        // Deep nesting: refused by the parser's depth limit, not the stack.
        &[b'['; 5000],
    ];
    let cases: Vec<(Vec<u8>, i32)> = bodies.iter().map(|b| (frame(b), 114)).collect();
    refused_each(&[], 4, &cases);
}

#[test]
fn absurd_parameters_are_refused_with_their_codes() {
    let base = |extra: &str| format!("{{\"tcp\":true,\"time\":5,\"parallel\":1,\"len\":131072{extra}}}");
    let cases = [
        (base(",\"parallel\":0"), 6),
        (base(",\"parallel\":1000000000"), 6),
        (base(",\"parallel\":17"), 6),
        (base(",\"len\":2000000000"), 7),
        (base(",\"len\":-1"), 7),
        (base(",\"window\":2147483647"), 8),
        (base(",\"MSS\":99999"), 10),
        (base(",\"omit\":601"), 12),
        (base(",\"time\":86401"), 5),
        (base(",\"time\":-5"), 5),
        (base(",\"time\":60"), 37),
        (base(",\"time\":0"), 37),
        (base(",\"bandwidth\":2000000000"), 27),
        (base(",\"TOS\":256"), 21),
        (base(",\"burst\":5000"), 15),
        ("{\"udp\":true,\"time\":5,\"parallel\":1,\"len\":70000}".to_string(), 20),
        (base(",\"reverse\":true,\"bidirectional\":true"), 25),
    ];
    let cases: Vec<(Vec<u8>, i32)> = cases.iter().map(|(b, c)| (frame(b.as_bytes()), *c)).collect();
    let limits = [
        "--server-max-duration",
        "30",
        "--server-bitrate-limit",
        "1G",
        "--max-streams",
        "16",
    ];
    refused_each(&limits, 5, &cases);
}

#[test]
fn fifty_idle_connections_do_not_hold_the_only_test_slot() {
    let (mut srv, port) = server(&["--max-tests", "1"]);
    let mut rng = Rng::new(6);
    let mut idle = Vec::new();
    for i in 0..50 {
        let mut s = connect(port);
        match i % 5 {
            // Silent.
            0 | 1 => {}
            // Part of a cookie.
            2 => s.write_all(&rng.cookie()[..10]).unwrap(),
            // A whole cookie, then nothing: the parameter exchange waits.
            3 => {
                s.write_all(&rng.cookie()).unwrap();
                assert_eq!(read_byte(&mut s), Some(PARAM_EXCHANGE));
            }
            // Half a parameter frame.
            _ => {
                s.write_all(&rng.cookie()).unwrap();
                assert_eq!(read_byte(&mut s), Some(PARAM_EXCHANGE));
                s.write_all(&[0, 0, 0, 50, b'{']).unwrap();
            }
        }
        idle.push(s);
    }
    let t0 = Instant::now();
    if let Some(iperf3) = peer("iperf3") {
        let r = run(&iperf3, &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "2"], T);
        assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    }
    real_clients_complete(port, true);
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    alive(&mut srv);
    drop(idle);
}

#[test]
fn a_silent_parameter_exchange_is_given_up_with_server_error() {
    let (mut srv, port) = server(&[]);
    let mut rng = Rng::new(7);
    let mut s = exchange(port, &mut rng);
    let t0 = Instant::now();
    // iperf3's 10 s for the first byte of the parameters.
    assert_eq!(server_error(&mut s).0, 114);
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_secs(9) && waited < Duration::from_secs(15),
        "{waited:?}"
    );
    assert!(err_shows(&srv, "Connection timed out"), "{}", srv.err());
    alive(&mut srv);
}

#[test]
fn a_killed_iperf3_client_frees_its_test_within_seconds() {
    let Some(iperf3) = peer("iperf3") else { return };
    for reverse in [false, true] {
        let (mut srv, port) = server(&["--max-tests", "1"]);
        let p = port.to_string();
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "60", "--forceflush"];
        if reverse {
            args.push("-R");
        }
        let c = Proc::spawn(&iperf3, &args);
        assert!(c.wait_for_line("  0.00-1.", Duration::from_secs(10)), "{}", c.err());
        c.signal(9);
        drop(c);
        wait::condition("the server to take a test again", Duration::from_secs(10), || {
            run(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-n", "4M"], T).code == Some(0)
        });
        alive(&mut srv);
    }
}

#[test]
fn data_streams_with_a_wrong_cookie_do_not_disturb_a_test() {
    let Some(iperf3) = peer("iperf3") else { return };
    let (mut srv, port) = server(&[]);
    let p = port.to_string();
    let c = Proc::spawn(
        &iperf3,
        &["-c", "127.0.0.1", "-p", &p, "-t", "3", "-P", "2", "--forceflush"],
    );
    assert!(c.wait_for_line("  0.00-1.", Duration::from_secs(10)));
    let mut rng = Rng::new(8);
    let mut strays = Vec::new();
    for _ in 0..10 {
        let mut s = connect(port);
        // A cookie nobody has, then data as a stream would send.
        s.write_all(&rng.cookie()).unwrap();
        let _ = s.write_all(&rng.bytes(10_000));
        strays.push(s);
    }
    let mut c = c;
    let st = c.wait(T).expect("client finished");
    assert_eq!(st.code(), Some(0), "{}{}", c.out(), c.err());
    assert!(c.out().contains("[SUM]"), "{}", c.out());
    for s in &mut strays {
        assert!(closed_within(s, Duration::from_secs(10)), "stray stream closed");
    }
    alive(&mut srv);
    real_clients_complete(port, false);
}

#[test]
fn udp_junk_at_the_port_does_not_disturb_udp_tests() {
    let Some(iperf3) = peer("iperf3") else { return };
    let (mut srv, port) = server(&[]);
    // From another address than the client's: iperf3's hellos carry no
    // cookie, so a stray "9876" from the client's own address would be
    // taken for its stream (as by iperf3 itself).
    let (stop, blaster) = udp_junk("127.0.0.2", port, 9, |rng, sent| {
        let n = match sent % 4 {
            0 => 4,
            1 => 41,
            2 => 1,
            _ => (rng.next() % 9000) as usize,
        };
        let mut d = rng.bytes(n);
        if sent.is_multiple_of(8) && d.len() >= 4 {
            // Hellos from an address with no test collecting streams.
            d[..4].copy_from_slice(b"9876");
        }
        d
    });
    let p = port.to_string();
    let r = run(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-u", "-b", "20M", "-t", "2"], T);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let r = run(
        &iperf3,
        &["-c", "127.0.0.1", "-p", &p, "-u", "-b", "20M", "-t", "1", "-R"],
        T,
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(blaster.join().unwrap() > 100);
    alive(&mut srv);
    real_clients_complete(port, false);
}

/// A client that runs a whole iperf3 TCP test by hand, so the results it
/// sends can be hostile.
fn run_until_results(port: u16, rng: &mut Rng) -> TcpStream {
    let cookie = rng.cookie();
    let mut s = connect(port);
    s.write_all(&cookie).unwrap();
    assert_eq!(read_byte(&mut s), Some(PARAM_EXCHANGE));
    s.write_all(&frame(br#"{"tcp":true,"time":1,"parallel":1,"len":1024}"#))
        .unwrap();
    assert_eq!(read_byte(&mut s), Some(CREATE_STREAMS));
    let mut data = connect(port);
    data.write_all(&cookie).unwrap();
    assert_eq!(read_byte(&mut s), Some(TEST_START));
    assert_eq!(read_byte(&mut s), Some(TEST_RUNNING));
    data.write_all(&[0u8; 64 * 1024]).unwrap();
    drop(data);
    s.write_all(&[TEST_END]).unwrap();
    assert_eq!(read_byte(&mut s), Some(EXCHANGE_RESULTS));
    s
}

#[test]
fn hostile_results_get_server_error() {
    let (mut srv, port) = server(&[]);
    let mut rng = Rng::new(10);
    // Over the cap (1 MiB + 1 KiB per stream): refused on the prefix alone.
    for len in [1024u32 * 1024 + 1024 + 1, u32::MAX] {
        let mut s = run_until_results(port, &mut rng);
        s.write_all(&len.to_be_bytes()).unwrap();
        assert_eq!(server_error(&mut s).0, 117, "unable to receive results ({len} bytes)");
    }
    // Not results.
    for body in [&b"{}"[..], b"[]", b"garbage", br#"{"cpu_util_total":"x"}"#] {
        let mut s = run_until_results(port, &mut rng);
        s.write_all(&frame(body)).unwrap();
        assert_eq!(server_error(&mut s).0, 117, "{:?}", String::from_utf8_lossy(body));
    }
    alive(&mut srv);
    real_clients_complete(port, false);
}

#[test]
fn sigterm_mid_test_tells_a_real_client_the_server_terminated() {
    let Some(iperf3) = peer("iperf3") else { return };
    for extra in [&[][..], &["-R"][..]] {
        let (mut srv, port) = server(&[]);
        let p = port.to_string();
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "30", "--forceflush"];
        args.extend_from_slice(extra);
        let mut c = Proc::spawn(&iperf3, &args);
        assert!(c.wait_for_line("  0.00-1.", Duration::from_secs(10)));
        srv.signal(15);
        let st = c.wait(Duration::from_secs(10)).expect("client exits");
        assert_eq!(st.code(), Some(1), "{}{}", c.out(), c.err());
        assert!(c.err().contains("the server has terminated"), "{}", c.err());
        let st = srv.wait(Duration::from_secs(10)).expect("server exits");
        assert_eq!(st.code(), Some(0));
    }
}

#[test]
fn sigterm_during_a_parameter_exchange_tells_the_client() {
    let (mut srv, port) = server(&[]);
    let mut rng = Rng::new(11);
    let mut s = exchange(port, &mut rng);
    // The server waits for the parameters.
    wait::blocked(&srv, wait::LONG);
    srv.signal(15);
    assert_eq!(read_byte(&mut s), Some(SERVER_TERMINATE));
    assert!(srv.wait(Duration::from_secs(10)).is_some());
}
