//! A server with `--json` reports each way a test can fail as iperf3's
//! server does: one JSON document with an `"error"` key, worded as iperf3
//! words it, and iperf3's exit status (0 for a failed test of a `-1`
//! server: the server did its one test). Tools that run one-off servers
//! (perfSONAR's pScheduler) parse that document. Each case runs against
//! our server and the real iperf3 (Debian's 3.12; a newer one such as
//! 3.21 from `WIRESPEED_IPERF3_NEW`), always with our client as the
//! driver, so the server is the only thing that differs.

use crate::common;
use crate::common::login;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{Proc, free_port, json_docs, newer_iperf3, peer, run, wait, wait_listening, wirespeed};
use login::Login;
use serde_json::Value;

const T: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Ours,
    /// Debian's iperf3 3.12.
    Old,
    /// A newer iperf3 (3.21), whose behaviour ours follows.
    New,
}

fn servers() -> Vec<(Server, PathBuf)> {
    let mut v = vec![(Server::Ours, wirespeed())];
    if let Some(p) = peer("iperf3") {
        v.push((Server::Old, p));
    }
    if let Some(p) = newer_iperf3() {
        v.push((Server::New, p));
    }
    v
}

fn start(prog: &PathBuf, extra: &[String]) -> (Proc, String) {
    let port = free_port().to_string();
    let mut a = vec!["-s".to_string(), "--json".into(), "-p".into(), port.clone()];
    a.extend(extra.iter().cloned());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let p = Proc::spawn(prog, &a);
    wait_listening(port.parse().unwrap());
    (p, port)
}

/// Waits for the server's own exit; its status and documents.
fn ended(mut srv: Proc, within: Duration, who: Server) -> (Option<i32>, Vec<Value>) {
    let st = srv.wait(within);
    assert!(st.is_some(), "{who:?}: the server did not exit within {within:?}");
    (st.and_then(|s| s.code()), json_docs(&srv.out()))
}

/// Exactly one document, whose error is `want`.
fn one_error(docs: &[Value], want: &str, who: Server) -> Value {
    assert_eq!(docs.len(), 1, "{who:?}: {docs:?}");
    let d = docs[0].clone();
    assert_eq!(d["error"].as_str(), Some(want), "{who:?}: {d}");
    d
}

fn args(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

#[test]
fn a_refused_login_is_a_document_and_the_one_off_server_waits_for_the_next_client() {
    let login = Login::new("refused");
    for (who, prog) in servers() {
        let mut extra = args(&["-1", "--idle-timeout", "3"]);
        extra.extend(login.server_args());
        let (mut srv, port) = start(&prog, &extra);
        let mut c = args(&["-c", "127.0.0.1", "-p", &port, "-t", "1"]);
        c.extend(login.client_args());
        let c: Vec<&str> = c.iter().map(String::as_str).collect();
        let mut client = Proc::spawn_env(&wirespeed(), &c, &[("IPERF3_PASSWORD", "not-the-password")]);
        assert_eq!(
            client.wait(T).and_then(|s| s.code()),
            Some(1),
            "{who:?}: {}",
            client.err()
        );
        // 3.21 closes the connection without a word (its own client says
        // "control socket has closed unexpectedly" too).
        if who != Server::New {
            assert!(
                client.err().contains("test authorization failed"),
                "{who:?}: {}",
                client.err()
            );
        }
        let failed_at = Instant::now();
        if who == Server::New {
            // 3.21 loses the error number before its main loop looks at it
            // ("error - no error") and so ends its one-off server here.
            let (code, docs) = ended(srv, T, who);
            assert_eq!(code, Some(0));
            assert!(docs.len() == 1 && docs[0]["error"].is_string(), "{docs:?}");
            continue;
        }
        // iperf3's intent (3.12 keeps it): a failed login does not count
        // as the one test; the server listens until its idle timeout (it
        // goes back to waiting for a client, and lives its 3 s).
        wait::blocked(&srv, wait::LONG);
        assert!(srv.running(), "{who:?}: a refused login ended the -1 server");
        let (code, docs) = ended(srv, T, who);
        assert!(failed_at.elapsed() >= Duration::from_secs(2), "{who:?}");
        assert_eq!(code, Some(0), "{who:?}");
        one_error(&docs, "error - test authorization failed", who);
    }
}

#[test]
fn refused_parameters_are_a_document_and_end_a_one_off_server() {
    for (who, prog) in servers() {
        let (srv, port) = start(&prog, &args(&["-1", "--server-bitrate-limit", "1M"]));
        let c = run(
            &wirespeed(),
            &["-c", "127.0.0.1", "-p", &port, "-t", "2", "-b", "100M"],
            T,
        );
        assert_eq!(c.code, Some(1), "{who:?}: {}", c.stderr);
        let (code, docs) = ended(srv, T, who);
        assert_eq!(code, Some(0), "{who:?}");
        one_error(
            &docs,
            "error - total required bandwidth is larger than server limit",
            who,
        );
    }
}

/// A client killed with `sig` a second or two into a 10 s test (once it
/// printed its second interval: the server has one of its own by then).
fn client_dies(sig: i32, want: &str) {
    for (who, prog) in servers() {
        let (srv, port) = start(&prog, &args(&["-1"]));
        let client = Proc::spawn(&wirespeed(), &["-c", "127.0.0.1", "-p", &port, "-t", "10"]);
        wait::stdout_has_n(&client, " sec ", 2, T);
        client.signal(sig);
        let (code, docs) = ended(srv, T, who);
        assert_eq!(code, Some(0), "{who:?}");
        let d = one_error(&docs, want, who);
        assert!(!d["intervals"].as_array().unwrap().is_empty(), "{who:?}: {d}");
    }
}

#[test]
fn a_client_that_vanishes_is_an_error_in_the_servers_document() {
    client_dies(9, "the client has unexpectedly closed the connection");
}

#[test]
fn a_client_that_is_interrupted_is_an_error_in_the_servers_document() {
    client_dies(2, "the client has terminated");
}

/// The server gets SIGTERM, idle (waiting for a client) or a second or two
/// into a test (the client printed its second interval).
fn server_stopped(mid_test: bool) {
    for (who, prog) in servers() {
        let (srv, port) = start(&prog, &[]);
        let client = mid_test.then(|| Proc::spawn(&wirespeed(), &["-c", "127.0.0.1", "-p", &port, "-t", "5"]));
        match &client {
            Some(c) => {
                wait::stdout_has_n(c, " sec ", 2, T);
            }
            None => wait::blocked(&srv, wait::LONG),
        }
        srv.signal(15);
        let (code, docs) = ended(srv, T, who);
        // 3.12 said it without the signal and exited 1; 3.21 (ours) names
        // the signal and exits 0.
        let (want_code, want) = match who {
            Server::Old => (1, "interrupt - the server has terminated"),
            _ => (0, "interrupt - the server has terminated by signal Terminated(15)"),
        };
        assert_eq!(code, Some(want_code), "{who:?}");
        let d = one_error(&docs, want, who);
        assert_eq!(d["intervals"].as_array().unwrap().is_empty(), !mid_test, "{who:?}: {d}");
        drop(client);
    }
}

#[test]
fn an_idle_server_stopped_by_a_signal_prints_a_document() {
    server_stopped(false);
}

#[test]
fn a_server_stopped_during_a_test_says_so_in_its_document() {
    server_stopped(true);
}

#[test]
fn a_one_off_server_that_no_client_reached_says_why() {
    for (who, prog) in servers() {
        let (srv, _) = start(&prog, &args(&["-1", "--idle-timeout", "1"]));
        let (code, docs) = ended(srv, T, who);
        assert_eq!(code, Some(0), "{who:?}");
        if who == Server::Ours {
            // An extension: iperf3 exits without a word, which its readers
            // see as output that is not JSON.
            one_error(
                &docs,
                "error - no connection request was received for 1 s in one-off mode",
                who,
            );
        } else {
            assert!(docs.is_empty(), "{who:?}: {docs:?}");
        }
    }
}
