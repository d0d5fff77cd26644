//! The iperf3 dialect's `-q` (QUIC data) against hostile clients: a
//! control connection from another address that asks for QUIC and never
//! connects, and junk (random bytes and QUIC-looking long headers) at the
//! port from a third address, all while a real `-q` test runs. The test
//! ends exact; the silent client's place is freed when its control
//! connection closes.

use super::*;

/// A control connection to `port` from `from` (another loopback address).
fn connect_from(from: &str, port: u16) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(from.parse().unwrap(), 0).into()).unwrap();
    s.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into()).unwrap();
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// A control connection from `from` that has asked for a QUIC test and
/// been told to create its streams.
fn asks_for_quic(from: &str, port: u16, rng: &mut Rng) -> TcpStream {
    let mut s = connect_from(from, port);
    s.write_all(&rng.cookie()).unwrap();
    assert_eq!(read_byte(&mut s), Some(PARAM_EXCHANGE));
    s.write_all(&frame(br#"{"tcp":true,"quic":true,"time":2,"parallel":1,"len":65536}"#))
        .unwrap();
    assert_eq!(read_byte(&mut s), Some(CREATE_STREAMS), "from {from}");
    s
}

#[test]
fn a_quic_test_holds_against_a_silent_client_and_junk_at_the_port() {
    let (mut srv, port) = server(&[]);
    let mut rng = Rng::new(31);
    // Asks for QUIC from 127.0.0.2 and connects nothing: it holds the
    // place of QUIC and UDP tests from its own address only.
    let silent = asks_for_quic("127.0.0.2", port, &mut rng);
    let (stop, junk) = udp_junk("127.0.0.3", port, 32, |rng, sent| {
        let n = 1 + (rng.next() % 1400) as usize;
        let mut d = rng.bytes(n);
        if sent.is_multiple_of(2) && d.len() >= 7 {
            // A long header: form and fixed bits, QUIC v1.
            d[0] |= 0xc0;
            d[1..5].copy_from_slice(&1u32.to_be_bytes());
        }
        d
    });
    // A real -q test from 127.0.0.1 meanwhile: exact.
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-q", "-P", "2", "-t", "2", "-J"],
        T,
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let doc = json(&r.stdout);
    let end = &doc["end"];
    assert!(end["sum_sent"]["bytes"].as_u64().unwrap() > 0, "{end}");
    assert_eq!(end["sum_sent"]["bytes"], end["sum_received"]["bytes"], "{end}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(junk.join().unwrap() > 100);
    // The silent client leaves: its place is free at once (a new QUIC
    // test from its address is told to create streams, not kept waiting
    // for the 30 s the setup allows).
    drop(silent);
    let t0 = Instant::now();
    let again = asks_for_quic("127.0.0.2", port, &mut rng);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    drop(again);
    alive(&mut srv);
    real_clients_complete(port, false);
}
