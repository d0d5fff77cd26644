//! `--allow` / `--deny` and the refusals a client sees, in both dialects.

use super::*;

#[test]
fn a_denied_address_is_refused_in_both_dialects_and_counted() {
    let mport = free_port();
    let (mut srv, port) = server(&["--deny", "127.0.0.1", "--metrics", &format!("127.0.0.1:{mport}")]);
    let p = port.to_string();
    let mut rng = Rng::new(12);
    let mut s = connect(port);
    s.write_all(&rng.cookie()).unwrap();
    // Not "busy": SERVER_ERROR with iperf3's "test authorization failed"
    // (142), and EACCES (13), which tells a wirespeed client why.
    assert_eq!(server_error(&mut s), (142, 13));
    if let Some(iperf3) = peer("iperf3") {
        let r = run(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-n", "1M"], T);
        assert_eq!(r.code, Some(1));
        assert_eq!(r.stderr, "iperf3: error - test authorization failed\n");
    }
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-n", "1M"], T);
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        "wirespeed: error - access denied: the server's --allow/--deny does not admit this client's address\n"
    );
    if let Some(iperf) = peer("iperf") {
        let _ = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-n", "1M"], T);
        assert!(out_shows(&srv, "client not allowed"), "{}", srv.out());
    }
    assert!(out_shows(&srv, "(access policy)"), "{}", srv.out());
    let m = scrape(mport);
    let n: f64 = m
        .lines()
        .find_map(|l| l.strip_prefix("wirespeed_refusals_total{reason=\"policy\"} "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(n >= 1.0, "{m}");
    // The same server serves ::1.
    let r = run(&wirespeed(), &["-c", "::1", "-p", &p, "-n", "1M"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    alive(&mut srv);
}

#[test]
fn an_allow_list_admits_its_networks_only() {
    let (_srv, port) = server(&["--allow", "127.0.0.0/8,192.0.2.1"]);
    real_clients_complete(port, true);
    // (the server's policy, the client's address): refused, and told so
    // (not "busy").
    for (policy, from) in [
        (&["--allow", "127.0.0.0/8,192.0.2.1"][..], "::1"),
        (&["--allow", "127.0.0.2", "--allow", "10.0.0.0/8"][..], "127.0.0.1"),
        // Deny wins.
        (&["--allow", "127.0.0.0/8", "--deny", "127.0.0.1/32"][..], "127.0.0.1"),
    ] {
        let (_srv, port) = server(policy);
        let r = run(&wirespeed(), &["-c", from, "-p", &port.to_string(), "-n", "1M"], T);
        assert_eq!(r.code, Some(1), "{policy:?} from {from}");
        assert!(
            r.stderr.contains("access denied"),
            "{policy:?} from {from}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("busy"), "{policy:?} from {from}: {}", r.stderr);
    }
}

#[test]
fn the_iperf2_server_applies_the_policy_and_its_client_option() {
    let Some(iperf) = peer("iperf") else { return };
    for (extra, served) in [
        (&["--deny", "127.0.0.1"][..], false),
        (&["-c", "127.0.0.2"][..], false),
        (&["-c", "127.0.0.1"][..], true),
        (&["--allow", "127.0.0.0/24"][..], true),
        (&["--allow", "127.0.0.0/24", "--deny", "127.0.0.1"][..], false),
    ] {
        let port = free_port();
        let srv = iperf2_server(Iperf2::Ours, port, extra).unwrap();
        let r = run(
            &iperf,
            &["-c", "127.0.0.1", "-p", &port.to_string(), "-n", "1M", "-e"],
            T,
        );
        let out = stop_server(srv);
        assert_eq!(
            !out.contains("client not allowed"),
            served,
            "{extra:?}: {out}\nclient: {}",
            r.stdout
        );
        if served {
            assert_eq!(r.code, Some(0), "{extra:?}: {}{}", r.stdout, r.stderr);
        }
    }
}

/// Our iperf 2 client, refused by a server that closes on it (ours: its
/// --allow/--deny or --max-tests; 2.1.8's: a wrong permit key), prints no
/// interval for what it wrote into the closing connection, and one line
/// that says what happened: iperf 2 has no way to carry the reason.
#[test]
fn a_refused_iperf2_client_prints_no_interval_and_says_so() {
    let closed = |r: &Ran, ctx: &str| {
        assert_eq!(r.code, Some(1), "{ctx}: {}{}", r.stdout, r.stderr);
        assert!(!r.stdout.contains(" sec "), "{ctx}: an interval: {}", r.stdout);
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{ctx}: {}", r.stderr);
        assert!(
            lines[0].starts_with("the server closed the connection before the test started (")
                && lines[0].ends_with("): it may have refused this client"),
            "{ctx}: {}",
            r.stderr
        );
    };
    let client = |port: u16, extra: &[&str]| {
        let p = port.to_string();
        let mut a = vec!["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "2"];
        a.extend_from_slice(extra);
        run(&wirespeed(), &a, T)
    };
    for extra in [&["--allow", "10.9.9.9"][..], &["--deny", "127.0.0.1"][..]] {
        let port = free_port();
        let srv = iperf2_server(Iperf2::Ours, port, extra).unwrap();
        closed(&client(port, &[]), &format!("--iperf2 -s {extra:?}"));
        closed(
            &client(port, &["-P", "2", "-e"]),
            &format!("--iperf2 -s {extra:?}, -P 2"),
        );
        closed(&client(port, &["-R"]), &format!("--iperf2 -s {extra:?}, -R"));
        assert!(stop_server(srv).contains("(client not allowed)"));
    }
    // The shared port's policy.
    let (mut srv, port) = server(&["--deny", "127.0.0.1"]);
    closed(&client(port, &[]), "-s --deny");
    alive(&mut srv);
    // --max-tests: one test runs, the next is turned away.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["--max-tests", "1"]).unwrap();
    let mut first = Proc::spawn(
        &wirespeed(),
        &["--iperf2", "-c", "127.0.0.1", "-p", &port.to_string(), "-t", "4"],
    );
    assert!(first.wait_for_line("connected with", Duration::from_secs(10)));
    // The server holds the test too.
    wait::stdout_has(&srv, "connected with", wait::LONG);
    closed(&client(port, &[]), "--max-tests 1");
    assert_eq!(first.wait(T).and_then(|s| s.code()), Some(0), "{}", first.err());
    assert!(stop_server(srv).contains("(server is busy)"));
    // The real 2.1.8 server, whose client prints the interval and exits 0.
    if let Some(iperf) = peer("iperf") {
        let port = free_port();
        let p = port.to_string();
        let srv = Proc::spawn(&iperf, &["-s", "-p", &p, "--permit-key=right1"]);
        wait_listening(port);
        closed(&client(port, &["--permit-key=wrong1"]), "2.1.8 --permit-key");
        stop_server(srv);
    }
    // A test the server takes still runs and reports.
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &["--allow", "127.0.0.1"]).unwrap();
    let r = client(port, &["-t", "1"]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(" sec "), "{}", r.stdout);
    stop_server(srv);
}

#[test]
fn bad_policies_are_refused_at_start() {
    for (args, msg) in [
        (
            &["-s", "--allow", "10.0.0.0/33"][..],
            "invalid --allow entry '10.0.0.0/33'",
        ),
        (&["-s", "--deny", "a b"][..], "invalid --deny entry 'a b'"),
        (
            &["-s", "--allow", "no-such-host.invalid", "-p", "1"][..],
            "cannot resolve",
        ),
        (&["-c", "127.0.0.1", "--allow", "::1"][..], "server only"),
        (
            &["--iperf2", "-c", "127.0.0.1", "--deny", "::1"][..],
            "only valid for a server",
        ),
    ] {
        let r = run(&wirespeed(), args, T);
        assert_eq!(r.code, Some(1), "{args:?}");
        assert!(r.stderr.contains(msg), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"));
    }
}
