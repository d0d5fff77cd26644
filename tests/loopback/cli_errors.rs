//! Bad input and failure paths: one clear line (or a JSON document with
//! "error" under -J), exit code 1, never a panic.

use crate::common;

use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

fn ws(args: &[&str]) -> Ran {
    run(&wirespeed(), args, T)
}

fn assert_one_line_error(r: &Ran, needle: &str) {
    assert_eq!(r.code, Some(1), "stdout:{}\nstderr:{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{}", r.stderr);
    assert!(lines[0].starts_with("wirespeed: "), "{}", lines[0]);
    assert!(lines[0].contains(needle), "{:?} lacks {needle:?}", lines[0]);
    assert!(!r.stderr.contains("panicked") && !r.stderr.contains("RUST_BACKTRACE"));
}

fn assert_json_error(r: &Ran, needle: &str) {
    assert_eq!(r.code, Some(1), "stderr:{}", r.stderr);
    let v = json(&r.stdout);
    let e = v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error key:\n{}", r.stdout));
    assert!(e.contains(needle), "{e:?} lacks {needle:?}");
    assert!(v.get("start").is_some() && v.get("intervals").is_some() && v.get("end").is_some());
}

#[test]
fn unknown_option() {
    let r = ws(&["-c", "127.0.0.1", "--frobnicate"]);
    assert_one_line_error(&r, "parameter error - unrecognized option '--frobnicate'");
}

#[test]
fn bad_values_name_the_rule() {
    assert_one_line_error(&ws(&["-c", "h", "-P", "0"]), "invalid number of parallel streams");
    assert_one_line_error(&ws(&["-c", "h", "-l", "12Q"]), "invalid unit value or suffix: '12Q'");
    assert_one_line_error(&ws(&["-c", "h", "-f", "x"]), "bad format specifier");
    assert_one_line_error(&ws(&["-s", "-c", "h"]), "cannot be both server and client");
    assert_one_line_error(
        &ws(&["-c", "h", "-R", "--bidir"]),
        "cannot be both reverse and bidirectional",
    );
    assert_one_line_error(&ws(&["-s", "-t", "5"]), "client only");
}

/// A bare `wirespeed` (or one without -c or -s) answers as iperf3 3.12
/// does: the error and a blank line on stderr, the usage (`-h`'s) on
/// stdout, exit 1.
#[test]
fn no_role_prints_the_usage_as_iperf3_does() {
    let help = ws(&["-h"]).stdout;
    assert!(help.starts_with("Usage: wirespeed [-s|-c host] [options]\n"), "{help}");
    for args in [&[][..], &["-p", "5000"][..]] {
        let r = ws(args);
        assert_eq!(r.code, Some(1), "{args:?}");
        assert_eq!(
            r.stderr, "wirespeed: parameter error - must either be a client (-c) or server (-s)\n\n",
            "{args:?}"
        );
        assert_eq!(r.stdout, help, "{args:?}");
    }
    // The same streams and code as the real iperf3, where it is installed.
    if let Some(iperf3) = peer("iperf3") {
        let real = run(&iperf3, &[], T);
        assert_eq!(real.code, Some(1));
        assert_eq!(
            real.stderr,
            "iperf3: parameter error - must either be a client (-c) or server (-s)\n\n"
        );
        assert!(real.stdout.starts_with("Usage: iperf3 [-s|-c host] [options]\n"));
    }
    // Other parameter errors stay one line; with -J, a JSON document.
    assert_one_line_error(&ws(&["-s", "-c", "h"]), "cannot be both server and client");
    assert_json_error(&ws(&["-J"]), "must either be a client (-c) or server (-s)");
}

#[test]
fn parameter_error_with_json_is_a_json_document() {
    let r = ws(&["-c", "h", "-J", "-P", "0"]);
    assert_json_error(&r, "invalid number of parallel streams");
}

#[test]
fn help_and_version_exit_zero() {
    let r = ws(&["-h"]);
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.contains("Usage: wirespeed [-s|-c host] [options]"));
    assert!(r.stdout.contains("--get-server-output"));
    let r = ws(&["-v"]);
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.starts_with("wirespeed "));
}

#[test]
fn refused_connection() {
    let port = free_port().to_string();
    let r = ws(&["-c", "127.0.0.1", "-p", &port]);
    assert_one_line_error(&r, "error - unable to connect to server");
    assert!(r.stderr.contains("Connection refused"), "{}", r.stderr);
    let r = ws(&["-c", "127.0.0.1", "-p", &port, "-J"]);
    assert_json_error(&r, "Connection refused");
}

#[test]
fn unresolvable_name() {
    let r = ws(&["-c", "no-such-host.invalid", "-t", "1"]);
    assert_one_line_error(&r, "unable to connect to server");
}

#[test]
fn connect_timeout() {
    // A listener whose accept queue is full drops further SYNs, so the
    // connect can only time out.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into())
        .unwrap();
    sock.listen(0).unwrap();
    let addr = sock.local_addr().unwrap().as_socket().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            fillers.push(s);
        }
    }
    let port = addr.port().to_string();
    let t = Instant::now();
    let r = ws(&["-c", "127.0.0.1", "-p", &port, "--connect-timeout", "500", "-t", "1"]);
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_one_line_error(&r, "unable to connect to server");
    assert!(r.stderr.contains("timed out"), "{}", r.stderr);
}

#[test]
fn busy_server_answers_access_denied() {
    let port = free_port();
    let _srv = wirespeed_server(port, &["--max-tests", "1"]);
    // Occupy the only test slot: a client that sends its cookie and
    // parameters, then never opens its stream. (One that stops before its
    // parameters holds no slot: the acceptor reads those.)
    let mut hog = TcpStream::connect(("127.0.0.1", port)).unwrap();
    hog.write_all(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\0").unwrap();
    let mut b = [0u8; 1];
    hog.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 9, "PARAM_EXCHANGE");
    let params = br#"{"tcp":true,"time":10,"parallel":1,"len":131072}"#;
    hog.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    hog.write_all(params).unwrap();
    hog.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 10, "CREATE_STREAMS");
    let p = port.to_string();
    let r = ws(&["-c", "127.0.0.1", "-p", &p, "-t", "1"]);
    assert_one_line_error(&r, "the server is busy running a test. try again later");
    let r = ws(&["-c", "127.0.0.1", "-p", &p, "-t", "1", "-J"]);
    assert_json_error(&r, "the server is busy");
}

#[test]
fn server_error_is_reported() {
    let port = free_port();
    let _srv = wirespeed_server(port, &["--max-streams", "2"]);
    let p = port.to_string();
    let r = ws(&["-c", "127.0.0.1", "-p", &p, "-t", "1", "-P", "3"]);
    assert_one_line_error(&r, "SERVER ERROR - invalid number of parallel streams");
}

/// A fake server that takes the parameters and then hangs up.
#[test]
fn peer_closing_mid_test() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut cookie = [0u8; 37];
        s.read_exact(&mut cookie).unwrap();
        s.write_all(&[9]).unwrap();
        let mut len = [0u8; 4];
        s.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).unwrap();
        drop(s);
    });
    let r = ws(&["-c", "127.0.0.1", "-p", &port, "-t", "1"]);
    h.join().unwrap();
    assert_one_line_error(&r, "control socket has closed unexpectedly");
}

#[test]
fn interrupted_client_prints_summary_and_tells_the_server() {
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let mut c = Proc::spawn(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "30"]);
    assert!(c.wait_for_line("  0.00-1.", Duration::from_secs(10)));
    c.signal(2);
    let st = c.wait(Duration::from_secs(10)).expect("client exits after SIGINT");
    assert_eq!(st.code(), Some(0));
    assert!(
        c.err()
            .contains("interrupt - the client has terminated by signal Interrupt(2)"),
        "{}",
        c.err()
    );
    assert!(c.out().contains("sender"), "{}", c.out());
    common::wait::stderr_has(&srv, "the client has terminated", Duration::from_secs(5));
}

#[test]
fn server_terminated_by_signal_tells_the_client() {
    let port = free_port();
    let mut srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let mut c = Proc::spawn(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "30"]);
    assert!(c.wait_for_line("  0.00-1.", Duration::from_secs(20)));
    srv.signal(15);
    let st = c.wait(Duration::from_secs(20)).expect("client exits");
    assert_eq!(st.code(), Some(1));
    assert!(c.err().contains("the server has terminated"), "{}", c.err());
    assert!(srv.wait(Duration::from_secs(10)).is_some(), "server exits on SIGTERM");
}

/// This kernel has no SCTP: one clear line, exit 1 (and valid JSON with -J).
#[test]
fn sctp_without_kernel_support_is_one_clear_line() {
    use socket2::{Domain, Protocol, Socket, Type};
    let supported = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::from(132))).is_ok();
    let r = ws(&["-c", "127.0.0.1", "--sctp", "-t", "1"]);
    if supported {
        assert_one_line_error(&r, "SCTP tests are not implemented yet");
        return;
    }
    assert_one_line_error(&r, "error - SCTP is not supported by this kernel");
    assert_json_error(
        &ws(&["-c", "127.0.0.1", "--sctp", "-J"]),
        "SCTP is not supported by this kernel",
    );
}

/// The CPUs the kernel lists online (`0-3,6`), as the affinity message
/// should name them.
#[cfg(target_os = "linux")]
fn online_cpus() -> (String, usize) {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let list = list.trim().to_string();
    let max = list
        .split([',', '-'])
        .filter_map(|n| n.parse::<usize>().ok())
        .max()
        .unwrap();
    (list, max)
}

#[cfg(target_os = "linux")]
#[test]
fn affinity_to_a_cpu_the_host_lacks_says_which_it_has() {
    let (list, max) = online_cpus();
    let missing = (max + 1).to_string();
    let has = if list.contains(['-', ',']) {
        format!("CPUs {list}")
    } else {
        format!("CPU {list}")
    };
    let want = format!("error - unable to set CPU affinity: CPU {missing} does not exist (this host has {has})");
    // The client pins itself before it connects: no server needed.
    let r = ws(&["-c", "127.0.0.1", "-p", "1", "-A", &format!("{missing},0")]);
    assert_one_line_error(&r, &want);
    assert_json_error(
        &ws(&["-c", "127.0.0.1", "-p", "1", "-J", "-A", &missing]),
        &want["error - ".len()..],
    );
    // A server pins itself before it listens.
    let r = ws(&["-s", "-p", &free_port().to_string(), "-A", &missing]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stderr, format!("wirespeed: {want}\nwirespeed: exiting\n"));
}
