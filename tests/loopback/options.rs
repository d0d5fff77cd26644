//! Every iperf3 option wirespeed accepts does what it says: each test runs
//! a real client against a real server process and checks the effect.

use crate::common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(40);

/// Runs a client with `args` against a fresh `wirespeed -s <server_args>`.
fn pair(server_args: &[&str], args: &[&str]) -> (Ran, String, String) {
    let port = free_port();
    let mut srv = wirespeed_server(port, server_args);
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p];
    a.extend_from_slice(args);
    let r = run(&wirespeed(), &a, T);
    assert_eq!(r.code, Some(0), "client failed:\n{}\n{}", r.stdout, r.stderr);
    // The server is done with the test once it listens for the next one.
    wait::stdout_has_n(&srv, "Server listening", 2, wait::LONG);
    let (so, se) = (srv.out(), srv.err());
    srv.signal(15);
    srv.wait(Duration::from_secs(5));
    (r, so, se)
}

fn client_json(server_args: &[&str], args: &[&str]) -> serde_json::Value {
    let mut a = vec!["-J"];
    a.extend_from_slice(args);
    json(&pair(server_args, &a).0.stdout)
}

#[test]
fn format_sets_the_bitrate_unit() {
    let (r, _, _) = pair(&[], &["-t", "1", "-f", "m"]);
    assert!(r.stdout.contains(" Mbits/sec"), "{}", r.stdout);
    assert!(!r.stdout.contains("Gbits/sec"), "{}", r.stdout);
    let (r, _, _) = pair(&[], &["-t", "1", "-f", "K"]);
    assert!(r.stdout.contains(" KBytes/sec"), "{}", r.stdout);
}

#[test]
fn interval_sets_report_period() {
    let v = client_json(&[], &["-t", "1", "-i", "0.25"]);
    let n = v["intervals"].as_array().unwrap().len();
    assert!((4..=5).contains(&n), "{n} intervals");
}

#[test]
fn file_is_sent_and_received_byte_for_byte() {
    let dir = std::env::temp_dir().join(format!("ws-file-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("src.bin");
    let dst = dir.join("dst.bin");
    let data: Vec<u8> = (0..3_000_017u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&src, &data).unwrap();
    let (r, _, _) = pair(&["-F", dst.to_str().unwrap()], &["-F", src.to_str().unwrap()]);
    assert!(r.stdout.contains("sender"));
    assert_eq!(std::fs::read(&dst).unwrap(), data);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn affinity_pins_the_data_threads() {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let cpu = (cpus - 1).to_string();
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    // Long enough that the data thread is still there when the first
    // interval line shows, however loaded the machine is (which may end
    // that interval at 1.01: "0.00-1." matches either).
    let c = Proc::spawn(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "8", "-A", &cpu]);
    assert!(c.wait_for_line("0.00-1.", Duration::from_secs(30)), "{}", c.err());
    let mut found = false;
    for t in std::fs::read_dir(format!("/proc/{}/task", c.pid())).unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.starts_with("ws-tcp") {
            let st = std::fs::read_to_string(t.path().join("status")).unwrap();
            let list = st.lines().find(|l| l.starts_with("Cpus_allowed_list:")).unwrap();
            assert_eq!(list.split_whitespace().nth(1), Some(cpu.as_str()), "{list}");
            found = true;
        }
    }
    assert!(found, "no data thread seen");
}

#[test]
fn bind_and_cport_choose_the_local_address() {
    let cport = free_port();
    let (r, _, _) = pair(&[], &["-t", "1", "-B", "127.0.0.1", "--cport", &cport.to_string()]);
    assert!(
        r.stdout.contains(&format!("local 127.0.0.1 port {cport} connected")),
        "{}",
        r.stdout
    );
}

/// The client's established TCP sockets to server `port` as `ss -tnoH`
/// shows them (state, queues, local and peer address, timer), now.
fn client_sockets(port: u16) -> Vec<String> {
    ss_lines(&format!("( dport = :{port} )"))
}

/// The server's accepted sockets on `port`, as `ss -tnoH` shows them.
fn server_sockets(port: u16) -> Vec<String> {
    ss_lines(&format!("( sport = :{port} )"))
}

fn ss_lines(filter: &str) -> Vec<String> {
    let out = std::process::Command::new("ss")
        .args(["-tnoH", filter])
        .output()
        .expect("ss (iproute2) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("ESTAB"))
        .map(str::to_string)
        .collect()
}

/// Runs a client `-t 3 args` against a fresh server (`server_args`) and,
/// once its first interval is out (every socket of the test open), what
/// `ss` shows of the client's and the server's sockets.
fn sockets_while_running(server_args: &[&str], args: &[&str]) -> (Vec<String>, Vec<String>) {
    let port = free_port();
    let _srv = wirespeed_server(port, server_args);
    let p = port.to_string();
    let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-t", "3"];
    a.extend_from_slice(args);
    let mut c = Proc::spawn(&wirespeed(), &a);
    assert!(c.wait_for_line("0.00-1.", T), "{}{}", c.out(), c.err());
    let seen = (client_sockets(port), server_sockets(port));
    assert_eq!(c.wait(T).and_then(|s| s.code()), Some(0), "{}{}", c.out(), c.err());
    seen
}

#[test]
fn bind_dev_binds_to_loopback() {
    // SO_BINDTODEVICE shows in ss as the device after the local address:
    // `127.0.0.1%lo:PORT`, on the control connection and the data stream.
    let (client, _) = sockets_while_running(&[], &["--bind-dev", "lo"]);
    assert!(client.len() >= 2, "control and data connections: {client:#?}");
    for l in &client {
        let local = l.split_whitespace().nth(3).unwrap_or("");
        assert!(local.starts_with("127.0.0.1%lo:"), "not bound to lo: {l}");
    }
    // Without the option, no device (so the check above is not vacuous).
    let (client, _) = sockets_while_running(&[], &[]);
    assert!(
        !client.is_empty() && client.iter().all(|l| !l.contains("%lo:")),
        "{client:#?}"
    );
}

#[test]
fn verbose_adds_iperf3s_lines() {
    let (r, _, _) = pair(&[], &["-t", "1", "-V"]);
    for l in [
        "Cookie: ",
        "TCP MSS: ",
        "Starting Test: protocol: TCP, 1 streams",
        "Test Complete. Summary Results:",
        "CPU Utilization: local/sender",
    ] {
        assert!(r.stdout.contains(l), "missing {l:?}:\n{}", r.stdout);
    }
}

#[test]
fn json_stream_prints_one_event_per_line() {
    let (r, _, _) = pair(&[], &["-t", "1", "--json-stream"]);
    let events: Vec<String> = r
        .stdout
        .lines()
        .map(|l| json(l)["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events.first().map(String::as_str), Some("start"));
    assert_eq!(events.last().map(String::as_str), Some("end"));
    assert!(events.iter().any(|e| e == "interval"));
}

#[test]
fn logfile_receives_the_output() {
    let log = std::env::temp_dir().join(format!("ws-log-{}.txt", free_port()));
    let (r, _, _) = pair(&[], &["-t", "1", "--logfile", log.to_str().unwrap()]);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("iperf Done."));
    let _ = std::fs::remove_file(&log);
}

#[test]
fn debug_prints_the_control_exchange() {
    let (r, _, _) = pair(&[], &["-t", "0.5", "-d"]);
    assert!(r.stderr.contains("send JSON: {\"tcp\":true"), "{}", r.stderr);
    assert!(r.stderr.contains("recv state ExchangeResults"), "{}", r.stderr);
}

#[test]
fn ipv6_and_family_restrictions() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let r = run(&wirespeed(), &["-c", "::1", "-p", &p, "-6", "-t", "1"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("local ::1 port"), "{}", r.stdout);
    let r = run(&wirespeed(), &["-c", "::1", "-p", &p, "-4", "-t", "1"], T);
    assert_eq!(r.code, Some(1));
    // Flow labels are an IPv6 feature.
    let r = run(
        &wirespeed(),
        &["-c", "::1", "-p", &p, "-6", "-L", "12345", "-t", "1"],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn window_sets_socket_buffers() {
    let v = client_json(&[], &["-t", "1", "-w", "1M"]);
    assert_eq!(v["start"]["sock_bufsize"].as_u64(), Some(1 << 20));
    assert!(v["start"]["sndbuf_actual"].as_u64().unwrap() >= 1 << 20);
    assert!(v["start"]["rcvbuf_actual"].as_u64().unwrap() >= 1 << 20);
}

#[test]
fn mss_nodelay_tos_and_congestion_reach_both_ends() {
    let v = client_json(&[], &["-t", "1", "-M", "1200", "-N", "-S", "0x10", "-C", "reno"]);
    assert_eq!(v["start"]["tcp_mss"].as_u64(), Some(1200));
    assert_eq!(v["start"]["test_start"]["tos"].as_u64(), Some(16));
    assert_eq!(v["end"]["sender_tcp_congestion"].as_str(), Some("reno"));
    assert_eq!(v["end"]["receiver_tcp_congestion"].as_str(), Some("reno"));
    let v = client_json(&[], &["-t", "1", "--dscp", "af11"]);
    assert_eq!(v["start"]["test_start"]["tos"].as_u64(), Some(40));
}

#[test]
fn unknown_congestion_algorithm_is_an_error() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-C", "nosuchcc"],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("TCP_CONGESTION"), "{}", r.stderr);
}

#[test]
fn zerocopy_and_skip_rx_copy_move_the_same_bytes() {
    let v = client_json(&[], &["-n", "50M", "-Z"]);
    assert_eq!(v["end"]["sum_sent"]["bytes"].as_u64(), Some(50 << 20));
    assert_eq!(v["end"]["sum_received"]["bytes"].as_u64(), Some(50 << 20));
    let v = client_json(&[], &["-n", "50M", "-R", "--skip-rx-copy"]);
    assert_eq!(v["end"]["sum_received"]["bytes"].as_u64(), Some(50 << 20));
}

#[test]
fn mptcp_streams_work() {
    let v = client_json(&["-m"], &["-t", "1", "-m"]);
    assert!(v["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn title_and_extra_data() {
    let (r, _, _) = pair(&[], &["-t", "1", "-T", "mytitle"]);
    assert!(r.stdout.lines().all(|l| l.starts_with("mytitle:  ")), "{}", r.stdout);
    let port = free_port();
    let srv = wirespeed_server(port, &["-J"]);
    let r = run(
        &wirespeed(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "-J",
            "-T",
            "tt",
            "--extra-data",
            "xyz",
        ],
        T,
    );
    let v = json(&r.stdout);
    assert_eq!(v["title"].as_str(), Some("tt"));
    assert_eq!(v["extra_data"].as_str(), Some("xyz"));
    // The server's document is whole once it parses.
    let sv = wait::until("the server's JSON document", wait::LONG, || {
        serde_json::from_str::<serde_json::Value>(&srv.out()).ok()
    });
    assert_eq!(sv["extra_data"].as_str(), Some("xyz"), "{}", srv.out());
}

#[test]
fn timestamps_prefix_each_line() {
    let (r, _, _) = pair(&[], &["-t", "1", "--timestamps=[%Y]-"]);
    let year = wirespeed::sys::time::strftime("[%Y]-", wirespeed::sys::time::epoch_now() as i64, false);
    assert!(
        r.stdout.lines().filter(|l| !l.is_empty()).all(|l| l.starts_with(&year)),
        "{}",
        r.stdout
    );
}

/// The keepalive timer `ss -o` shows on a socket: `timer:(keepalive,28sec,0)`
/// gives 28 (seconds until the first probe).
fn keepalive_secs(ss_line: &str) -> Option<u64> {
    let t = ss_line.split("timer:(keepalive,").nth(1)?;
    t.split("sec").next()?.parse().ok()
}

#[test]
fn control_keepalive_and_send_timeout_are_accepted_and_applied() {
    // The kernel's own view: on each end, the control connection (and
    // only it) runs a keepalive timer of at most the 30 s idle time.
    let (client, server) = sockets_while_running(&["--cntl-ka=30/5/3"], &["--cntl-ka=30/5/3"]);
    for (end, socks) in [("client", &client), ("server", &server)] {
        let timers: Vec<u64> = socks.iter().filter_map(|l| keepalive_secs(l)).collect();
        assert_eq!(
            timers.len(),
            1,
            "{end}: one control connection with keepalive: {socks:#?}"
        );
        assert!(timers[0] <= 30, "{end}: keepalive idle over 30 s: {socks:#?}");
    }
    // Without --cntl-ka, no keepalive (the check above is not vacuous).
    let (client, server) = sockets_while_running(&[], &[]);
    assert!(
        client.iter().chain(&server).all(|l| keepalive_secs(l).is_none()),
        "{client:#?}{server:#?}"
    );
    // The values themselves, as the client set them (what ss cannot show:
    // the probe interval and count, and the send timeout), and the kernel
    // took each (= 0).
    let Some(strace) = peer("strace") else { return };
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let trace = std::env::temp_dir().join(format!("ws-setsockopt-{port}.txt"));
    let ws = wirespeed();
    let p = port.to_string();
    let r = run(
        &strace,
        &[
            "-f",
            "-qq",
            "-e",
            "trace=setsockopt",
            "-o",
            trace.to_str().unwrap(),
            ws.to_str().unwrap(),
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "--cntl-ka=30/5/3",
            "--snd-timeout",
            "5000",
        ],
        T,
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let calls = std::fs::read_to_string(&trace).unwrap();
    let _ = std::fs::remove_file(&trace);
    for set in [
        "SOL_SOCKET, SO_KEEPALIVE, [1], 4) = 0",
        "SOL_TCP, TCP_KEEPIDLE, [30], 4) = 0",
        "SOL_TCP, TCP_KEEPINTVL, [5], 4) = 0",
        "SOL_TCP, TCP_KEEPCNT, [3], 4) = 0",
        "SOL_TCP, TCP_USER_TIMEOUT, [5000], 4) = 0",
    ] {
        assert!(calls.contains(set), "no setsockopt(..., {set}:\n{calls}");
    }
}

#[test]
fn idle_timeout_with_one_off_exits() {
    let port = free_port();
    let mut srv = wirespeed_server(port, &["-1", "--idle-timeout", "1"]);
    let t0 = Instant::now();
    let st = srv.wait(Duration::from_secs(10)).expect("server exits");
    assert_eq!(st.code(), Some(0));
    assert!(t0.elapsed() < Duration::from_secs(5));
}

/// A client that sets up a test and then sends nothing on its data stream.
#[test]
fn server_receive_timeout_ends_a_silent_test() {
    let port = free_port();
    let srv = wirespeed_server(port, &["--rcv-timeout", "500"]);
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let cookie = b"abcdefghijklmnopqrstuvwxyz2345672345\0";
    c.write_all(cookie).unwrap();
    let mut b = [0u8; 1];
    c.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 9);
    let params = br#"{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":1,"len":131072}"#;
    c.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    c.write_all(params).unwrap();
    c.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 10, "CREATE_STREAMS");
    let mut d = TcpStream::connect(("127.0.0.1", port)).unwrap();
    d.write_all(cookie).unwrap();
    c.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 1, "TEST_START");
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t0 = Instant::now();
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    // TEST_RUNNING, then SERVER_ERROR with IENOMSG (144).
    assert!(rest.windows(5).any(|w| w == [0xfe, 0, 0, 0, 144]), "{rest:?}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    drop(d);
    wait::stderr_has(&srv, "idle timeout for receiving data", wait::LONG);
}

#[test]
fn client_receive_timeout_requires_receiving_mode() {
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "--rcv-timeout", "500"], T);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("receiving mode"));
}

#[test]
fn server_bind_limits_the_listening_address() {
    let port = free_port();
    let _srv = wirespeed_server(port, &["-B", "127.0.0.1"]);
    let p = port.to_string();
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "0.5"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = run(&wirespeed(), &["-c", "::1", "-p", &p, "-t", "0.5"], T);
    assert_eq!(r.code, Some(1), "an IPv4-bound server must not answer on ::1");
}
