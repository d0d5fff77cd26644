//! iperf 2 headers that cannot be, and iperf 2 UDP tests beside junk and
//! under the server's policy and limits.

use super::*;

/// iperf 2 headers that cannot be: each connection is closed (within the
/// 4 s iperf 2 gives a header), on the shared port and on `--iperf2 -s`.
fn malformed_iperf2_headers(port: u16) {
    let v1 = 0x8000_0000u32;
    let extend = 0x4000_0000u32;
    let keycheck = 0x1000_0000u32;
    let len_bit = 0x0001_0000u32;
    let bounceback = 0x0080_0000u32;
    let word = |w: u32| w.to_be_bytes().to_vec();
    let cases: Vec<Vec<u8>> = vec![
        // Length field shorter than the parts the flags announce.
        [word(v1 | extend | len_bit | (10 << 1)), vec![0; 60]].concat(),
        // Permit key length out of range.
        [
            word(v1 | extend | keycheck | len_bit | (62 << 1)),
            vec![0; 54],
            vec![0x7f, 0xff],
            vec![0; 64],
        ]
        .concat(),
        // A bounceback request without a header.
        word(bounceback),
        // Truncated: a v1 header that stops half way.
        [word(v1), vec![0; 8]].concat(),
        // Bounceback messages claiming 4 GiB, and fewer than 64 bytes.
        [word(bounceback), word(u32::MAX), vec![0; 92]].concat(),
        [word(bounceback), word(63), vec![0; 92]].concat(),
        // A bounceback message of 1000 bytes that stops after 100.
        [word(bounceback), word(1000), vec![0; 92]].concat(),
    ];
    for (i, c) in cases.iter().enumerate() {
        let mut s = connect(port);
        s.write_all(c).unwrap();
        assert!(closed_within(&mut s, Duration::from_secs(8)), "case {i}");
    }
}

#[test]
fn malformed_iperf2_headers_are_dropped_on_the_shared_port() {
    let (mut srv, port) = server(&[]);
    malformed_iperf2_headers(port);
    alive(&mut srv);
    real_clients_complete(port, true);
}

#[test]
fn iperf2_headers_over_the_servers_limits_are_refused() {
    let Some(iperf) = peer("iperf") else { return };
    let (mut srv, port) = server(&["--max-streams", "4", "--server-max-duration", "5"]);
    let p = port.to_string();
    let _ = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-P", "5", "-t", "1"], T);
    assert!(
        out_shows(&srv, "more parallel streams than the server allows"),
        "{}",
        srv.out()
    );
    let _ = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-t", "6"], T);
    assert!(out_shows(&srv, "longer than the server allows"), "{}", srv.out());
    alive(&mut srv);
    real_clients_complete(port, true);
}

#[test]
fn malformed_iperf2_headers_are_dropped_by_the_iperf2_server() {
    let port = free_port();
    let mut srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    malformed_iperf2_headers(port);
    assert!(srv.running(), "{}", srv.err());
    if let Some(iperf) = peer("iperf") {
        let r = run(&iperf, &["-c", "127.0.0.1", "-p", &port.to_string(), "-n", "4M"], T);
        assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    }
}

/// `wirespeed --iperf2 -s -u -p port extra...`, once it says it listens.
fn iperf2_udp_server(port: u16, extra: &[&str]) -> Proc {
    let p = port.to_string();
    let mut args = vec!["--iperf2", "-s", "-u", "-p", &p, "-t", "30"];
    args.extend_from_slice(extra);
    let srv = Proc::spawn(&wirespeed(), &args);
    assert!(srv.wait_for_line("Server listening on UDP port", Duration::from_secs(10)));
    srv
}

/// Junk datagrams at an iperf 2 UDP port, from another address: real
/// iperf 2 UDP clients are still served, on `--iperf2 -s -u` and on the
/// iperf3 server's shared port.
#[test]
fn udp_junk_does_not_disturb_iperf2_udp_tests() {
    let Some(iperf) = peer("iperf") else { return };
    let dedicated = free_port();
    let mut srv2 = iperf2_udp_server(dedicated, &[]);
    let (mut srv3, shared) = server(&[]);
    for port in [dedicated, shared] {
        let u = UdpSocket::bind("127.0.0.2:0").unwrap();
        let mut rng = Rng::new(14);
        for i in 0..2000u32 {
            let n = (rng.next() % 1500) as usize + 1;
            let mut d = rng.bytes(n);
            if i % 3 == 0 && d.len() >= 80 {
                // A plausible sequence number and header flags, junk after.
                d[..4].copy_from_slice(&(i + 1).to_be_bytes());
                d[16..20].copy_from_slice(&0xc000_0000u32.to_be_bytes());
            }
            let _ = u.send_to(&d, ("127.0.0.1", port));
        }
        let r = run(
            &iperf,
            &["-c", "127.0.0.1", "-p", &port.to_string(), "-u", "-b", "10M", "-t", "1"],
            T,
        );
        assert_eq!(r.code, Some(0), "port {port}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("Server Report"), "port {port}: {}", r.stdout);
    }
    assert!(srv2.running(), "{}", srv2.err());
    alive(&mut srv3);
}

#[test]
fn the_iperf2_udp_server_applies_the_policy_and_limits() {
    let Some(iperf) = peer("iperf") else { return };
    let port = free_port();
    let srv = iperf2_udp_server(port, &["--deny", "127.0.0.1"]);
    let _ = run(
        &iperf,
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-u", "-t", "1"],
        T,
    );
    assert!(stop_server(srv).contains("client not allowed"));
    // On the shared port: the policy, and the iperf3 server's limits.
    let (srv, port) = server(&["--deny", "127.0.0.1"]);
    let _ = run(
        &iperf,
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-u", "-t", "1"],
        T,
    );
    assert!(out_shows(&srv, "client not allowed"), "{}", srv.out());
    let (srv, port) = server(&["--server-max-duration", "2"]);
    let _ = run(
        &iperf,
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-u", "-t", "3"],
        T,
    );
    assert!(out_shows(&srv, "longer than the server allows"), "{}", srv.out());
}
