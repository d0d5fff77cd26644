//! Many streams: hundreds of flows multiplexed on per-core workers move
//! data on every flow and report sums that add up; `-A` pins the threads
//! that move the data; a too-low open-file limit is one clear line.
//! (Mechanisms only: how fast is for bench/.)

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const FLOWS: usize = 300;

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for k in path {
        x = &x[*k];
    }
    x.as_f64().unwrap_or_else(|| panic!("no number at {path:?}"))
}

/// Runs a JSON client test against a fresh server; returns the document.
fn client_json(args: &[&str], timeout: Duration) -> Value {
    let port = free_port();
    let server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let mut argv = vec!["-c", "127.0.0.1", "-p", &p, "-J"];
    argv.extend_from_slice(args);
    let r = run(&wirespeed(), &argv, timeout);
    stop_server(server);
    assert_eq!(r.code, Some(0), "client failed:\n{}\n{}", r.stderr, r.stdout);
    json(&r.stdout)
}

/// Every stream carried data, both ends agree on every stream, and the
/// sums (end and each interval) are the sums of the streams.
fn assert_every_flow_counted(d: &Value, streams: usize) {
    let end = &d["end"];
    let list = end["streams"].as_array().expect("end.streams");
    assert_eq!(list.len(), streams, "every flow is reported");
    let bidir = end.get("sum_sent_bidir_reverse").is_some();
    let (mut sent, mut received) = (0u64, 0u64);
    for s in list {
        let tx = s["sender"]["bytes"].as_u64().unwrap();
        let rx = s["receiver"]["bytes"].as_u64().unwrap();
        assert!(rx > 0, "a flow moved nothing: {s}");
        assert_eq!(tx, rx, "sender and receiver disagree on a flow: {s}");
        sent += tx;
        received += rx;
    }
    let mut sum_sent = num(end, &["sum_sent", "bytes"]) as u64;
    let mut sum_received = num(end, &["sum_received", "bytes"]) as u64;
    if bidir {
        sum_sent += num(end, &["sum_sent_bidir_reverse", "bytes"]) as u64;
        sum_received += num(end, &["sum_received_bidir_reverse", "bytes"]) as u64;
    }
    assert_eq!(sum_sent, sent, "[SUM] sender is the sum of the flows");
    assert_eq!(sum_received, received, "[SUM] receiver is the sum of the flows");
    for iv in d["intervals"].as_array().expect("intervals") {
        let ss = iv["streams"].as_array().unwrap();
        assert_eq!(ss.len(), streams, "every flow in every interval");
        let fwd: u64 = ss
            .iter()
            .filter(|s| !bidir || s["sender"].as_bool() == Some(true))
            .map(|s| s["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(iv["sum"]["bytes"].as_u64().unwrap(), fwd, "interval [SUM]");
    }
}

#[test]
fn three_hundred_flows_all_move_data_and_sum_right() {
    let d = client_json(&["-P", "300", "-t", "2", "-i", "0.5"], Duration::from_secs(60));
    assert_every_flow_counted(&d, FLOWS);
    // The test ends when asked, not many seconds later behind hundreds of
    // flows (a thread each took 12 s too long for -P 1000 -t 3). The margin
    // is for a loaded machine.
    let secs = num(&d["end"], &["sum_sent", "seconds"]);
    assert!((1.9..4.0).contains(&secs), "sender ran {secs} s for -t 2");
}

#[test]
fn three_hundred_reverse_flows_all_move_data_and_sum_right() {
    let d = client_json(&["-P", "300", "-t", "2", "-R"], Duration::from_secs(60));
    assert_every_flow_counted(&d, FLOWS);
    // The receiver's end is its last byte: what the buffers of 300 flows
    // held when the server stopped still arrives after the 2 s.
    let secs = num(&d["end"], &["sum_received", "seconds"]);
    assert!((1.9..5.0).contains(&secs), "receiver ran {secs} s for -t 2");
}

#[test]
fn bidirectional_many_flows_sum_each_direction() {
    let d = client_json(&["-P", "150", "--bidir", "-t", "2"], Duration::from_secs(60));
    assert_every_flow_counted(&d, FLOWS);
}

#[test]
fn many_flows_share_an_exact_byte_budget() {
    // 4 KiB blocks: some 16 per flow, while a turn moves at most 4, so
    // every flow gets some.
    let d = client_json(&["-P", "300", "-n", "20000003", "-l", "4K"], Duration::from_secs(60));
    assert_every_flow_counted(&d, FLOWS);
    assert_eq!(num(&d["end"], &["sum_sent", "bytes"]) as u64, 20_000_003);
    assert_eq!(num(&d["end"], &["sum_received", "bytes"]) as u64, 20_000_003);
}

#[test]
fn many_flows_text_report_lists_every_flow_and_one_sum() {
    let port = free_port();
    let server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-P", "300", "-t", "1"],
        Duration::from_secs(60),
    );
    stop_server(server);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let receivers = r.stdout.lines().filter(|l| l.ends_with("receiver")).count();
    assert_eq!(receivers, FLOWS + 1, "300 flows and one [SUM]:\n{}", r.stdout);
    let sums: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("[SUM]") && l.ends_with("receiver"))
        .collect();
    assert_eq!(sums.len(), 1);
}

/// Threads of a live process: (name, Cpus_allowed_list).
fn thread_cpus(pid: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in dir.flatten() {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            out.push((
                name.trim().to_string(),
                l.split_whitespace().nth(1).unwrap_or("").to_string(),
            ));
        }
    }
    out
}

/// A CPU this test may run on (not necessarily 0 in a container).
fn some_cpu() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    list.split([',', '-']).next().unwrap().to_string()
}

/// Runs a client with `-A cpu,cpu` and `-P streams` and looks at the
/// threads of both ends while the data flows.
fn pinned_threads(streams: &str, data_thread: &str) {
    let cpu = some_cpu();
    let port = free_port();
    let server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let a = format!("{cpu},{cpu}");
    let mut client = Proc::spawn(
        &wirespeed(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-P",
            streams,
            "-t",
            "3",
            "-A",
            &a,
            "-i",
            "0.5",
        ],
    );
    // Data is flowing once the first interval is printed.
    assert!(
        client.wait_for_line("sec", Duration::from_secs(20)),
        "no interval: {}",
        client.err()
    );
    let (c, s) = (thread_cpus(client.pid()), thread_cpus(server.pid()));
    assert_eq!(client.wait(Duration::from_secs(30)).and_then(|s| s.code()), Some(0));
    stop_server(server);
    for (end, threads) in [("client", &c), ("server", &s)] {
        let data: Vec<_> = threads.iter().filter(|(n, _)| n.starts_with(data_thread)).collect();
        assert!(!data.is_empty(), "no {data_thread} threads on the {end}: {threads:?}");
        for (n, cpus) in data {
            assert_eq!(cpus, &cpu, "{end} thread {n} not pinned");
        }
    }
    // The client process as a whole is pinned, as iperf3 pins itself.
    assert!(c.iter().all(|(_, cpus)| cpus == &cpu), "client threads: {c:?}");
}

#[test]
fn affinity_pins_stream_threads_on_both_ends() {
    pinned_threads("2", "ws-tcp");
}

#[test]
fn affinity_pins_multiplexing_workers_on_both_ends() {
    pinned_threads("40", "ws-mux");
}

#[test]
fn affinity_to_a_cpu_that_does_not_exist_is_an_error() {
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", "1", "-A", "1024"],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("unable to set CPU affinity"), "{}", r.stderr);
}

/// `sh -c 'ulimit -n N; exec wirespeed ...'`: soft and hard limit N.
fn limited(n: u32, args: &[&str], timeout: Duration) -> Ran {
    let mut script = format!("ulimit -n {n} && exec \"$0\"");
    for i in 1..=args.len() {
        script.push_str(&format!(" \"${{{i}}}\""));
    }
    let prog = wirespeed();
    let mut argv = vec!["-c", script.as_str(), prog.to_str().unwrap()];
    argv.extend_from_slice(args);
    run(&std::path::PathBuf::from("/bin/sh"), &argv, timeout)
}

#[test]
fn too_low_open_file_limit_is_one_clear_line() {
    let port = free_port();
    let server = wirespeed_server(port, &[]);
    let p = port.to_string();
    let r = limited(
        200,
        &["-c", "127.0.0.1", "-p", &p, "-P", "300", "-t", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(
        lines[0].starts_with("wirespeed: error - unable to create 300 streams:")
            && lines[0].contains("open-file limit is 200"),
        "{}",
        lines[0]
    );
    // With -J: a valid document with the same words in "error".
    let r = limited(
        200,
        &["-c", "127.0.0.1", "-p", &p, "-P", "300", "-t", "1", "-J"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(1));
    let d = json(&r.stdout);
    assert!(d["error"].as_str().unwrap().contains("open-file limit is 200"), "{d}");
    // The server is still fine.
    let ok = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-P", "20", "-t", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(ok.code, Some(0), "{}", ok.stderr);
    stop_server(server);
}

#[test]
fn server_with_too_low_open_file_limit_refuses_the_test_clearly() {
    let port = free_port();
    let p = port.to_string();
    let script = "ulimit -n 200 && exec \"$0\" -s -p \"$1\"";
    let server = Proc::spawn(
        &std::path::PathBuf::from("/bin/sh"),
        &["-c", script, wirespeed().to_str().unwrap(), &p],
    );
    wait_listening(port);
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-P", "300", "-t", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .contains("SERVER ERROR - unable to create a new stream: Too many open files"),
        "{}",
        r.stderr
    );
    let mut server = server;
    server.signal(15);
    server.wait(Duration::from_secs(10));
    assert!(server.err().contains("open-file limit is 200"), "{}", server.err());
}

/// Runs a client under `env WIRESPEED_MUX=<mode>` against a server run the
/// same way; returns the client's (exit code, stdout, stderr).
fn with_mux_mode(mode: &str, streams: &str) -> (Option<i32>, String, String) {
    let env = std::path::PathBuf::from("/usr/bin/env");
    let prog = wirespeed();
    let var = format!("WIRESPEED_MUX={mode}");
    let port = free_port();
    let p = port.to_string();
    let server = Proc::spawn(&env, &[&var, prog.to_str().unwrap(), "-s", "-p", &p]);
    wait_listening(port);
    let r = run(
        &env,
        &[
            &var,
            prog.to_str().unwrap(),
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-P",
            streams,
            "-t",
            "1",
            "-d",
        ],
        Duration::from_secs(30),
    );
    stop_server(server);
    (r.code, r.stdout, r.stderr)
}

#[test]
fn mux_mode_can_be_forced_either_way() {
    let (code, out, err) = with_mux_mode("never", "40");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("40 streams: a thread each"), "{err}");
    assert!(out.contains("[SUM]"));
    let (code, _, err) = with_mux_mode("always", "2");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("2 streams: multiplexed, "), "{err}");
    let r = run(
        &std::path::PathBuf::from("/usr/bin/env"),
        &[
            "WIRESPEED_MUX=sometimes",
            wirespeed().to_str().unwrap(),
            "-c",
            "127.0.0.1",
            "-p",
            "1",
        ],
        Duration::from_secs(10),
    );
    let (code, err) = (r.code, r.stderr);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("error - WIRESPEED_MUX must be auto, always or never, not 'sometimes'"),
        "{err}"
    );
}

#[test]
fn a_server_multiplexes_new_tests_once_its_stream_threads_are_many() {
    // Pinned to one CPU, the server runs at most 32 stream threads.
    let cpu = some_cpu();
    let port = free_port();
    let p = port.to_string();
    let mut server = Proc::spawn(&wirespeed(), &["-s", "-p", &p, "-d", "-A", &cpu]);
    wait_listening(port);
    let args = ["-c", "127.0.0.1", "-p", &p, "-P", "20", "-i", "0.5"];
    let mut first = Proc::spawn(&wirespeed(), &[&args[..], &["-t", "4"]].concat());
    assert!(first.wait_for_line("sec", Duration::from_secs(20)), "{}", first.err());
    let second = run(
        &wirespeed(),
        &[&args[..], &["-t", "1"]].concat(),
        Duration::from_secs(30),
    );
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert_eq!(first.wait(Duration::from_secs(30)).and_then(|s| s.code()), Some(0));
    server.signal(15);
    server.wait(Duration::from_secs(10));
    let log = server.err();
    assert!(log.contains("20 streams: a thread each"), "{log}");
    assert!(log.contains("20 streams: multiplexed, 1 worker(s)"), "{log}");
}

/// A burst of streams larger than the server holds unread at once (1024):
/// the acceptor reads what the first ones sent before it takes more,
/// instead of turning the oldest away (which lost about a fifth of
/// `-P 10000`'s streams and failed the test after 30 s).
#[test]
fn a_burst_of_three_thousand_streams_is_served_whole() {
    let port = free_port();
    let server = wirespeed_server(port, &["--max-streams", "3000"]);
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-J", "-P", "3000", "-t", "1"],
        Duration::from_secs(60),
    );
    stop_server(server);
    assert_eq!(r.code, Some(0), "client failed:\n{}\n{}", r.stderr, r.stdout);
    // Every stream arrived and both ends agree on each (on a busy 2-CPU
    // machine a few of 3000 may get no turn to send within the second, so
    // this does not ask each to have moved data).
    let d = json(&r.stdout);
    let list = d["end"]["streams"].as_array().expect("end.streams");
    assert_eq!(list.len(), 3000);
    let mut total = 0;
    for s in list {
        let tx = s["sender"]["bytes"].as_u64().unwrap();
        assert_eq!(tx, s["receiver"]["bytes"].as_u64().unwrap(), "{s}");
        total += tx;
    }
    assert!(total > 0);
    assert_eq!(num(&d["end"], &["sum_received", "bytes"]) as u64, total);
}
