//! A server the network cannot break: hostile clients on loopback, each
//! case followed by real clients (iperf3, and iperf 2 for the iperf 2
//! cases) that must still complete a test. Every wait is bounded; every
//! process is ended by its pid.
//!
//! The shared pieces are here; the cases are in a module per kind:
//! `control` (the iperf3 control protocol), `iperf2` (iperf 2 headers and
//! UDP), `policy` (--allow/--deny and refusals), `load` (many tests,
//! floods, vanishing clients, leaks), `daemon` (-D and the unit) and
//! `quic` (the iperf3 dialect's `-q`).

mod control;
mod daemon;
mod iperf2;
mod load;
mod policy;
mod quic;

use crate::common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

// iperf3 state bytes and error codes (docs/protocols.md, iperf3: state bytes).

const PARAM_EXCHANGE: u8 = 9;

const CREATE_STREAMS: u8 = 10;

const TEST_START: u8 = 1;

const TEST_RUNNING: u8 = 2;

const TEST_END: u8 = 4;

const EXCHANGE_RESULTS: u8 = 13;

const SERVER_ERROR: u8 = 0xfe;

const SERVER_TERMINATE: u8 = 11;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn cookie(&mut self) -> [u8; 37] {
        const A: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
        let mut c = [0u8; 37];
        for b in c.iter_mut().take(36) {
            *b = A[(self.next() % 32) as usize];
        }
        c
    }
}

fn server(extra: &[&str]) -> (Proc, u16) {
    let port = free_port();
    (wirespeed_server(port, extra), port)
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// A control connection that has sent a fresh cookie and got PARAM_EXCHANGE.
fn exchange(port: u16, rng: &mut Rng) -> TcpStream {
    let mut s = connect(port);
    s.write_all(&rng.cookie()).unwrap();
    assert_eq!(read_byte(&mut s), Some(PARAM_EXCHANGE));
    s
}

fn read_byte(s: &mut TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(1) => Some(b[0]),
        _ => None,
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

/// Reads up to SERVER_ERROR and its two ints (code, errno).
fn server_error(s: &mut TcpStream) -> (i32, i32) {
    loop {
        match read_byte(s) {
            Some(SERVER_ERROR) => break,
            Some(_) => {}
            None => panic!("connection ended without SERVER_ERROR"),
        }
    }
    let mut b = [0u8; 8];
    s.read_exact(&mut b).expect("SERVER_ERROR's two ints");
    (
        i32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        i32::from_be_bytes([b[4], b[5], b[6], b[7]]),
    )
}

/// The SERVER_ERROR code the server answers `sent` with (bytes sent once
/// the parameter exchange began: a length prefix, a framed JSON).
fn refusal_code(port: u16, rng: &mut Rng, sent: &[u8]) -> i32 {
    let mut s = exchange(port, rng);
    s.write_all(sent).unwrap();
    server_error(&mut s).0
}

/// Whether the server closed `s` (EOF or reset) within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 256];
    let t0 = Instant::now();
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                return false;
            }
            Err(_) => return true,
        }
        if t0.elapsed() > within {
            return false;
        }
    }
}

/// Real clients still get their tests: iperf3 always, iperf 2 when the case
/// was an iperf 2 one. (Skipped with a notice where the peers are missing,
/// failed under WIRESPEED_REQUIRE_PEERS=1.)
fn real_clients_complete(port: u16, iperf2_too: bool) {
    let p = port.to_string();
    if let Some(iperf3) = peer("iperf3") {
        let r = run(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-n", "4M"], T);
        assert_eq!(
            r.code,
            Some(0),
            "iperf3 after the hostile client: {}{}",
            r.stdout,
            r.stderr
        );
        assert!(r.stdout.contains("receiver"), "{}", r.stdout);
    }
    if iperf2_too && let Some(iperf) = peer("iperf") {
        let r = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-n", "4M"], T);
        assert_eq!(
            r.code,
            Some(0),
            "iperf after the hostile client: {}{}",
            r.stdout,
            r.stderr
        );
        assert!(r.stdout.contains("Bytes"), "{}", r.stdout);
    }
}

/// Waits (up to 5 s) until the server's stderr contains `needle`.
fn err_shows(srv: &Proc, needle: &str) -> bool {
    wait::within(Duration::from_secs(5), || srv.err().contains(needle).then_some(())).is_some()
}

/// Waits (up to 5 s) until the server's stdout contains `needle`.
fn out_shows(srv: &Proc, needle: &str) -> bool {
    wait::within(Duration::from_secs(5), || srv.out().contains(needle).then_some(())).is_some()
}

/// Junk datagrams to `port` from `from` (another loopback address), made
/// by `make` (the generator, the count so far), paced at four a
/// millisecond (junk, not a flood that would fill any socket buffer and
/// drop a real client's datagrams with it), until the returned flag is
/// set; the thread answers how many it sent.
fn udp_junk(
    from: &'static str,
    port: u16,
    seed: u64,
    make: fn(&mut Rng, u64) -> Vec<u8>,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<u64>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let junk = std::thread::spawn(move || {
        let u = UdpSocket::bind((from, 0)).unwrap();
        let to = SocketAddr::from(([127, 0, 0, 1], port));
        let mut rng = Rng::new(seed);
        let mut sent = 0u64;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            let d = make(&mut rng, sent);
            let _ = u.send_to(&d, to);
            sent += 1;
            if sent.is_multiple_of(4) {
                // A pace (the rate of junk is the point), not a wait.
                wait::pause(Duration::from_millis(1));
            }
        }
        sent
    });
    (stop, junk)
}

fn alive(srv: &mut Proc) {
    assert!(srv.running(), "the server died: {}{}", srv.out(), srv.err());
    assert!(!srv.err().contains("panicked"), "{}", srv.err());
}

/// `GET /metrics` from the server's metrics endpoint.
fn scrape(mport: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}
