//! The server's guards (docs/limits.md) on iperf 2 clients, ours
//! (`--iperf2 -c`) and the real iperf 2: `--server-bitrate-limit` ends a
//! client sending faster (TCP and UDP) with the reason printed on the
//! server, `--server-max-duration` refuses a longer test, and
//! `--rcv-timeout` ends a client gone silent. Loopback only; every
//! process is bounded in time and killed by pid.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use wirespeed::proto::iperf2::{Amount, ClientHeader, HeaderExt, VERSION_L, VERSION_U, flags};

const T: Duration = Duration::from_secs(40);

/// What an iperf 2 client started in the background runs as.
fn spawn_client(who: Iperf2, port: u16, args: &str) -> Option<Proc> {
    let (prog, mut a) = who.command()?;
    a.extend(["-c", "127.0.0.1", "-p"].iter().map(|s| s.to_string()));
    a.push(port.to_string());
    a.extend(args.split_whitespace().map(String::from));
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    Some(Proc::spawn(&prog, &a))
}

/// Waits up to 10 s for the server's stderr to contain `needle`.
fn err_shows(srv: &Proc, needle: &str) -> bool {
    wait::within(wait::LONG, || srv.err().contains(needle).then_some(())).is_some()
}

/// Waits until the server's TCP connection on `port` has received data
/// past an iperf 2 header (`bytes_received` in `ss -ti`).
fn tcp_data_arrived(port: u16) {
    let received = || {
        let out = Command::new("ss")
            .args(["-tinH", "state", "established", &format!("( sport = :{port} )")])
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("bytes_received:")?.parse::<u64>().ok())
            .max()
    };
    wait::condition(format_args!("data at port {port}"), wait::LONG, || {
        received().is_some_and(|n| n > 1000)
    });
}

/// Sends `sig` (a name: STOP, CONT) to `p`, by pid.
fn signal(p: &Proc, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(p.pid().to_string())
        .status();
}

const OVER_RATE: &str = "server ended the test from 127.0.0.1: total required bandwidth is larger than server limit";
const IDLE: &str = "server ended the test from 127.0.0.1: idle timeout for receiving data";

/// An iperf 2 TCP client writing unpaced over loopback (far over 100
/// Mbit/s) is ended a second in, under a 1 s window, instead of running
/// its 8 s; the server says why. A paced client under the limit runs to
/// its end.
#[test]
fn iperf2_tcp_clients_over_the_bitrate_limit_are_ended() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let mut srv = wirespeed_server(port, &["--server-bitrate-limit", "100M/1"]);
        let t0 = Instant::now();
        let Some(r) = iperf2_client(who, port, "-t 8", T) else {
            continue;
        };
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs(6),
            "{who:?}: {took:?}\n{}{}\nserver:\n{}{}",
            r.stdout,
            r.stderr,
            srv.out(),
            srv.err()
        );
        assert!(err_shows(&srv, OVER_RATE), "{who:?}: {}", srv.err());
        assert!(
            srv.err().contains("--server-bitrate-limit 100 Mbits/sec"),
            "{}",
            srv.err()
        );
        // The client learns from its connection: reset or closed under it.
        assert!(
            r.code != Some(0) || r.stderr.contains("write failed") || r.stderr.contains("Broken pipe"),
            "{who:?}: {:?}\n{}{}",
            r.code,
            r.stdout,
            r.stderr
        );
        let r = iperf2_client(who, port, "-t 2 -b 20M", T).unwrap();
        assert_eq!(r.code, Some(0), "{who:?}: {}{}", r.stdout, r.stderr);
        assert_eq!(srv.err().matches(OVER_RATE).count(), 1, "{}", srv.err());
        assert!(srv.running(), "{}", srv.err());
    }
}

/// The same for UDP: a client sending 30 Mbit/s under a 5 Mbit/s limit is
/// ended (the server says why; the client's FIN gets no report), and the
/// datagrams it goes on sending do not start its test again.
#[test]
fn iperf2_udp_clients_over_the_bitrate_limit_are_ended() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let mut srv = wirespeed_server(port, &["--server-bitrate-limit", "5M/1"]);
        let Some(r) = iperf2_client(who, port, "-u -b 30M -t 4", T) else {
            continue;
        };
        assert!(err_shows(&srv, OVER_RATE), "{who:?}: {}", srv.err());
        assert!(!r.stdout.contains("Server Report"), "{who:?}: {}", r.stdout);
        assert!(
            (r.stdout.clone() + &r.stderr).contains("did not receive ack of last datagram"),
            "{who:?}: {}{}",
            r.stdout,
            r.stderr
        );
        assert_eq!(srv.err().matches(OVER_RATE).count(), 1, "{who:?}: {}", srv.err());
        assert_eq!(srv.out().matches("connected with").count(), 1, "{who:?}: {}", srv.out());
        // Under the limit: a whole test, with its server report.
        let r = iperf2_client(who, port, "-u -b 2M -t 2", T).unwrap();
        assert!(r.stdout.contains("Server Report"), "{who:?}: {}{}", r.stdout, r.stderr);
        assert_eq!(srv.err().matches(OVER_RATE).count(), 1, "{who:?}: {}", srv.err());
        assert!(srv.running(), "{}", srv.err());
    }
}

/// `--server-max-duration`: an iperf 2 test asking for more time is
/// refused when its header arrives (as an iperf3 test is at its parameter
/// check), one within it runs.
#[test]
fn iperf2_tests_longer_than_the_server_max_duration_are_refused() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        for udp in ["", "-u"] {
            let port = free_port();
            let mut srv = wirespeed_server(port, &["--server-max-duration", "2"]);
            let t0 = Instant::now();
            let Some(_) = iperf2_client(who, port, &format!("{udp} -t 5"), T) else {
                continue;
            };
            // A refused TCP client is closed at once; a UDP client is not
            // told (it sends its time and gets no report).
            if udp.is_empty() {
                assert!(t0.elapsed() < Duration::from_secs(5), "{who:?}: {:?}", t0.elapsed());
            }
            wait::stdout_has(&srv, "longer than the server allows", Duration::from_secs(5));
            let r = iperf2_client(who, port, &format!("{udp} -t 1 -b 10M"), T).unwrap();
            assert_eq!(r.code, Some(0), "{who:?} {udp}: {}{}", r.stdout, r.stderr);
            assert!(srv.running(), "{}", srv.err());
        }
    }
}

/// A client that stops sending mid-test (stopped with SIGSTOP) is ended
/// by `--rcv-timeout` on the server, TCP and UDP, ours and the real one.
#[test]
fn iperf2_clients_gone_silent_are_ended_by_the_rcv_timeout() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        for udp in ["", "-u"] {
            let port = free_port();
            let mut srv = wirespeed_server(port, &["--rcv-timeout", "1000"]);
            let Some(mut c) = spawn_client(who, port, &format!("{udp} -b 5M -t 6")) else {
                continue;
            };
            assert!(
                srv.wait_for_line("connected with", Duration::from_secs(10)),
                "{}",
                srv.out()
            );
            // Mid-test: data flows (a UDP client is "connected" by its
            // first datagram already).
            if udp.is_empty() {
                tcp_data_arrived(port);
            }
            signal(&c, "STOP");
            let t0 = Instant::now();
            let shown = err_shows(&srv, IDLE);
            let took = t0.elapsed();
            signal(&c, "CONT");
            assert!(shown, "{who:?} {udp}: {}", srv.err());
            assert!(srv.err().contains("--rcv-timeout 1000 ms"), "{}", srv.err());
            assert!(took < Duration::from_secs(4), "{who:?} {udp}: {took:?}");
            c.wait(T);
            assert_eq!(srv.err().matches(IDLE).count(), 1, "{who:?} {udp}: {}", srv.err());
            assert!(srv.running(), "{}", srv.err());
        }
    }
}

/// A client that sends its header and then nothing at all is ended by
/// the idle guard too.
#[test]
fn a_silent_iperf2_client_is_ended_by_the_idle_guard() {
    let port = free_port();
    let mut srv = wirespeed_server(port, &["--rcv-timeout", "800"]);
    let header = ClientHeader {
        flags: flags::EXTEND,
        num_threads: 1,
        port: port as u32,
        amount: Some(Amount::Time(1000)),
        ext: Some(HeaderExt {
            version_u: VERSION_U,
            version_l: VERSION_L,
            ..HeaderExt::default()
        }),
        ..ClientHeader::default()
    };
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(&header.encode_tcp()).unwrap();
    let t0 = Instant::now();
    assert!(err_shows(&srv, IDLE), "{}{}", srv.out(), srv.err());
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // The server closed the connection.
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 256];
    let closed = loop {
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) => break true,
            Err(e) => break !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
            Ok(_) => {}
        }
        if t0.elapsed() > Duration::from_secs(10) {
            break false;
        }
    };
    assert!(closed);
    assert!(srv.running(), "{}", srv.err());
}

/// `wirespeed --iperf2 -s` takes the iperf3 server's limits as options of
/// its own and holds its clients to the same guards: the rate (TCP and
/// UDP), the maximum duration, the receive timeout.
#[test]
fn the_iperf2_server_takes_the_same_limits() {
    let port = free_port();
    let mut srv = iperf2_server(
        Iperf2::Ours,
        port,
        &["--server-bitrate-limit", "100M/1", "--server-max-duration", "6"],
    )
    .unwrap();
    let t0 = Instant::now();
    let r = iperf2_client(Iperf2::Ours, port, "-t 5", T).unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "{:?}\n{}{}",
        t0.elapsed(),
        r.stdout,
        r.stderr
    );
    assert!(err_shows(&srv, OVER_RATE), "{}{}", srv.out(), srv.err());
    let _ = iperf2_client(Iperf2::Ours, port, "-t 8", T).unwrap();
    wait::stdout_has(&srv, "longer than the server allows", Duration::from_secs(5));
    assert!(srv.running(), "{}", srv.err());

    let port = free_port();
    let mut srv = iperf2_server(
        Iperf2::Ours,
        port,
        &["-u", "--server-bitrate-limit", "5M/1", "--rcv-timeout", "1000"],
    )
    .unwrap();
    let _ = iperf2_client(Iperf2::Ours, port, "-u -b 20M -t 3", T).unwrap();
    assert!(err_shows(&srv, OVER_RATE), "{}{}", srv.out(), srv.err());
    let before = srv.out().matches("connected with").count();
    let c = spawn_client(Iperf2::Ours, port, "-u -b 1M -t 8");
    let mut c = c.unwrap();
    // Its first datagram arrived: the test runs.
    wait::stdout_has_n(&srv, "connected with", before + 1, wait::LONG);
    signal(&c, "STOP");
    let shown = err_shows(&srv, IDLE);
    signal(&c, "CONT");
    assert!(shown, "{}{}", srv.out(), srv.err());
    c.wait(T);
    assert!(srv.running(), "{}", srv.err());
}
