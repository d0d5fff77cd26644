//! Server behaviour: several tests at once, one-off, daemon + pidfile +
//! logfile, and peers that stall or die.

use crate::common;

use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(40);

fn client(port: u16, extra: &[&str]) -> Proc {
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p];
    a.extend_from_slice(extra);
    Proc::spawn(&wirespeed(), &a)
}

#[test]
fn several_clients_are_served_at_once() {
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let t0 = Instant::now();
    let mut cs: Vec<Proc> = (0..4).map(|_| client(port, &["-t", "2", "-b", "100M"])).collect();
    for c in &mut cs {
        let st = c.wait(T).expect("client finished");
        assert_eq!(st.code(), Some(0), "{}{}", c.out(), c.err());
        assert!(!c.err().contains("busy"));
    }
    // Served together, not one after another (4 × 2 s).
    assert!(t0.elapsed() < Duration::from_secs(7), "{:?}", t0.elapsed());
    assert_eq!(srv.out().matches("Accepted connection").count(), 4);
}

#[test]
fn iperf3_clients_are_served_at_once() {
    let Some(iperf3) = peer("iperf3") else { return };
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let mut cs: Vec<Proc> = (0..3)
        .map(|_| Proc::spawn(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-b", "100M"]))
        .collect();
    for c in &mut cs {
        let st = c.wait(T).expect("client finished");
        assert_eq!(st.code(), Some(0), "{}{}", c.out(), c.err());
    }
}

#[test]
fn one_off_server_exits_after_its_test() {
    let port = free_port();
    let mut srv = wirespeed_server(port, &["-1"]);
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
        T,
    );
    assert_eq!(r.code, Some(0));
    let st = srv.wait(Duration::from_secs(10)).expect("server exits");
    assert_eq!(st.code(), Some(0));
}

#[test]
fn idle_connections_do_not_keep_clients_out() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    // Connections that never say anything, and one that sends half a cookie.
    let mut idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    idle[0].write_all(b"abcdefgh").unwrap();
    let t0 = Instant::now();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_killed_client_frees_its_test() {
    let port = free_port();
    let srv = wirespeed_server(port, &["--max-tests", "1"]);
    let mut c = client(port, &["-t", "60"]);
    assert!(c.wait_for_line("  0.00-1.", Duration::from_secs(10)));
    c.signal(9);
    c.wait(Duration::from_secs(5));
    // The server notices the dead control connection and takes the next test.
    let p = port.to_string();
    wait::condition("the server to take a test again", Duration::from_secs(10), || {
        run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1"], T).code == Some(0)
    });
    assert!(
        srv.err().contains("the client has unexpectedly closed the connection"),
        "{}",
        srv.err()
    );
}

/// An iperf 2 UDP client killed in a reverse test: the server sends on
/// the client's own socket, so the kernel's refusal (ICMP port
/// unreachable) says that socket is gone, and the flow ends at once with
/// one line. It sent on to the end of the client's `-t` (60 s here)
/// before, and a junk or spoofed first datagram asking for a slow reverse
/// flow held a test place for as long as the junk asked. (A full-duplex
/// flow also ends when its receiving half has been quiet for 3 s.)
#[test]
fn a_killed_iperf2_udp_client_ends_the_flow_that_sends_to_it() {
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let mut c = Proc::spawn(
        &wirespeed(),
        &[
            "--iperf2",
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-u",
            "-b",
            "2M",
            "-t",
            "60",
            "-i",
            "1",
            "-R",
        ],
    );
    wait::stdout_has(&srv, " connected with ", wait::LONG);
    assert!(c.wait_for_line(" 0.00", Duration::from_secs(10)), "{}", c.out());
    c.signal(9);
    c.wait(Duration::from_secs(5));
    // A refusal comes back for the next datagram: a second, not 60.
    let said = wait::within(Duration::from_secs(10), || {
        let e = srv.err();
        e.contains("the client has gone").then_some(e)
    })
    .unwrap_or_else(|| panic!("the server did not end the flow:\n{}\n{}", srv.out(), srv.err()));
    assert!(
        said.contains("the client's port refused our datagrams (ICMP port unreachable)"),
        "{said}"
    );
}

#[test]
fn daemon_writes_pidfile_and_logs() {
    let dir = std::env::temp_dir().join(format!("ws-daemon-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("ws.pid");
    let log = dir.join("ws.log");
    let port = free_port();
    let r = run(
        &wirespeed(),
        &[
            "-s",
            "-D",
            "-p",
            &port.to_string(),
            "-I",
            pidfile.to_str().unwrap(),
            "--logfile",
            log.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    wait_listening(port);
    // The daemon binds before it forks and writes its pidfile: wait for both.
    let pid: u32 = wait::until(format_args!("a pid in {}", pidfile.display()), wait::LONG, || {
        std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    });
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let c = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
        T,
    );
    assert_eq!(c.code, Some(0));
    let _ = std::process::Command::new("kill").arg(pid.to_string()).status();
    wait::exited(pid, wait::LONG);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("Server listening on"), "{text}");
    assert!(text.contains("receiver"), "{text}");
    assert!(!pidfile.exists(), "pidfile removed at exit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_server_prints_one_document_per_test() {
    let port = free_port();
    let srv = wirespeed_server(port, &["-J"]);
    for _ in 0..2 {
        let r = run(
            &wirespeed(),
            &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
            T,
        );
        assert_eq!(r.code, Some(0));
    }
    // Both documents, whole.
    let out = wait::text(
        "two JSON documents from the server",
        wait::LONG,
        || srv.out(),
        |t| t.matches("\n}\n").count() >= 2,
    );
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&out)
        .into_iter::<serde_json::Value>()
        .map(|d| d.expect("valid JSON"))
        .collect();
    assert_eq!(docs.len(), 2, "{out}");
    assert!(docs[0]["start"]["accepted_connection"]["port"].as_u64().is_some());
    assert!(docs[1]["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn an_iperf2_server_has_no_test_limit_unless_asked() {
    // 2.1.8 serves every client that comes: so does `--iperf2 -s`, past
    // the iperf3 dialect's default of 16 tests at once.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let p = port.to_string();
    let mut cs: Vec<Proc> = (0..20)
        .map(|_| {
            Proc::spawn(
                &wirespeed(),
                &["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "3", "-b", "1M"],
            )
        })
        .collect();
    for c in &mut cs {
        let st = c.wait(T).expect("client finished");
        assert_eq!(st.code(), Some(0), "{}{}", c.out(), c.err());
    }
    let out = stop_server(srv);
    assert_eq!(out.matches(" connected with ").count(), 20, "{out}");
    assert!(!out.contains("busy"), "{out}");
}

#[test]
fn an_iperf2_server_with_max_tests_drops_one_more_client() {
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["--max-tests", "1"]).unwrap();
    let p = port.to_string();
    let args = ["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "3"];
    let mut first = Proc::spawn(&wirespeed(), &args);
    assert!(srv.wait_for_line(" connected with ", Duration::from_secs(10)));
    let mut second = Proc::spawn(&wirespeed(), &args);
    assert!(
        srv.wait_for_line("(server is busy)", Duration::from_secs(10)),
        "{}",
        srv.out()
    );
    second.wait(T);
    let st = first.wait(T).expect("first client finished");
    assert_eq!(st.code(), Some(0), "{}", first.err());
    // The limit is on clients at once: once the first is done, the next
    // is served.
    let third = run(&wirespeed(), &["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "1"], T);
    assert_eq!(third.code, Some(0), "{}", third.stderr);
    let out = stop_server(srv);
    assert_eq!(out.matches("(server is busy)").count(), 1, "{out}");
}

/// `--server-bitrate-limit`'s measured check: a test as long as the
/// window is judged over full windows, as iperf3 judges it; a shorter one
/// (here bounded by `--server-max-duration 3`, under the default 5 s
/// window, where iperf3 never judges) over its length so far, from its
/// first interval. Unpaced loopback TCP is far over 200 Mbit/s.
#[test]
fn the_server_bitrate_limit_judges_short_tests_too() {
    let port = free_port();
    let _srv = wirespeed_server(port, &["--server-bitrate-limit", "200M", "--server-max-duration", "3"]);
    let t0 = Instant::now();
    let mut c = client(port, &["-t", "3"]);
    let st = c.wait(T).expect("client finished");
    assert_eq!(st.code(), Some(1), "{}{}", c.out(), c.err());
    assert!(
        c.err().contains("total required bandwidth is larger than server limit"),
        "{}",
        c.err()
    );
    assert!(t0.elapsed() < Duration::from_millis(2900), "{:?}", t0.elapsed());
    // Paced under the limit, it runs to its end.
    let mut c = client(port, &["-t", "2", "-b", "100M"]);
    assert_eq!(c.wait(T).and_then(|s| s.code()), Some(0), "{}", c.err());

    // A 6 s test under a 2 s window: judged from the window's end on.
    let port = free_port();
    let _srv = wirespeed_server(port, &["--server-bitrate-limit", "200M/2"]);
    let t0 = Instant::now();
    let mut c = client(port, &["-t", "6"]);
    assert_eq!(c.wait(T).and_then(|s| s.code()), Some(1), "{}", c.err());
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(5),
        "{took:?}"
    );
}
