//! `--latency[=N]`: round-trip probes beside a test's load, in both
//! dialects, against our server and the real iperf 2, refused clearly by
//! an iperf3 server; and through a real bottleneck with a deep and a
//! shallow queue, where the probes must see the bufferbloat.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

/// The distribution's numbers are in order and positive.
fn ordered(l: &Value, what: &str) {
    let f = |k: &str| l[k].as_f64().unwrap_or_else(|| panic!("{what}: no {k} in {l}"));
    let v = [f("min_ms"), f("p50_ms"), f("p90_ms"), f("p99_ms"), f("max_ms")];
    assert!(v[0] > 0.0, "{what}: {l}");
    assert!(v.windows(2).all(|w| w[0] <= w[1]), "{what}: {l}");
    assert!(f("mean_ms") >= v[0] && f("mean_ms") <= v[4], "{what}: {l}");
}

#[test]
fn iperf3_dialect_json_has_idle_loaded_and_interval_round_trips() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "--latency=20", "-J"],
        T,
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let d = json(&r.stdout);
    let intervals = d["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 2);
    for iv in intervals {
        assert!(iv["latency"]["probes"].as_u64().unwrap() >= 5, "{iv}");
        ordered(&iv["latency"], "interval");
    }
    let l = &d["end"]["latency"];
    assert_eq!(l["probes_per_second"], 20);
    assert_eq!(l["idle"]["probes"], 10, "{l}");
    let loaded = l["loaded"]["probes"].as_u64().unwrap();
    // 20/s for 2 s, the last interval's included.
    assert!((20..=45).contains(&loaded), "{l}");
    ordered(&l["idle"], "idle");
    ordered(&l["loaded"], "loaded");
    // Without the option nothing of it appears.
    let plain = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-J"], T);
    let d = json(&plain.stdout);
    assert!(d["end"].get("latency").is_none() && d["intervals"][0].get("latency").is_none());
}

#[test]
fn iperf3_dialect_text_has_lat_lines_under_udp_and_reverse() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    for extra in [&["-u", "-b", "50M"][..], &["-R"][..]] {
        let mut a = vec!["-c", "127.0.0.1", "-p", &p, "-t", "2", "--latency"];
        a.extend_from_slice(extra);
        let r = run(&wirespeed(), &a, T);
        assert_eq!(r.code, Some(0), "{extra:?}: {}{}", r.stdout, r.stderr);
        assert_eq!(
            r.stdout.matches("[LAT]   0.00-1.00   sec  RTT p50 ").count(),
            1,
            "{}",
            r.stdout
        );
        assert!(r.stdout.contains("[LAT] idle         RTT p50 "), "{}", r.stdout);
        assert!(r.stdout.contains(", 10/s)\n"), "{}", r.stdout);
        // What the load added, or (on an idle loopback, a loaded median
        // at or under the idle one) that it added nothing measurable.
        assert!(
            r.stdout.contains("to the median round trip")
                || r.stdout
                    .contains("[LAT] the load made no measurable increase in the median round trip\n"),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn iperf2_dialect_probes_our_server_and_the_real_iperf2() {
    for who in [Iperf2::Ours, Iperf2::Real] {
        let port = free_port();
        let Some(_srv) = iperf2_server(who, port, &[]) else {
            continue;
        };
        let r = iperf2_client(Iperf2::Ours, port, "-t 2 -i 1 --latency=20", T).unwrap();
        assert_eq!(r.code, Some(0), "{who:?}: {}{}", r.stdout, r.stderr);
        assert_eq!(
            r.stdout.matches("[LAT]   1.00-2.00   sec  RTT").count(),
            1,
            "{who:?}: {}",
            r.stdout
        );
        assert!(
            r.stdout.contains("[LAT] loaded       RTT p50 "),
            "{who:?}: {}",
            r.stdout
        );
        // And the iperf 2 JSON.
        let r = iperf2_client(Iperf2::Ours, port, "-t 1 --latency -J", T).unwrap();
        let d = json(&r.stdout);
        assert_eq!(d["end"]["latency"]["idle"]["probes"], 10, "{who:?}: {d}");
    }
}

#[test]
fn an_iperf3_server_is_refused_with_one_clear_line_and_keeps_serving() {
    let Some(iperf3) = peer("iperf3") else { return };
    let port = free_port();
    let _srv = iperf3_server(&iperf3, port, &[]);
    let p = port.to_string();
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "--latency"], T);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("does not answer round-trip probes") && r.stderr.contains("an iperf3 server cannot"),
        "{}",
        r.stderr
    );
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "1", "--latency", "-J"],
        T,
    );
    assert_eq!(r.code, Some(1));
    assert!(json(&r.stdout)["error"].as_str().unwrap().contains("round-trip probes"));
    // The probe did not wedge it.
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn bad_latency_options_are_refused() {
    for (args, want) in [
        (&["-c", "h", "--latency=0"][..], "invalid --latency '0'"),
        (&["-c", "h", "--latency=1001"][..], "from 1 to 1000"),
        (&["-c", "h", "--latency=x"][..], "invalid --latency 'x'"),
        (
            &["-c", "h", "--latency", "--udp-search"][..],
            "--latency cannot be used with --udp-search",
        ),
        (&["-s", "--latency"][..], "client only"),
        (&["--iperf2", "-c", "h", "--latency=0"][..], "invalid --latency '0'"),
        (
            &["--iperf2", "-c", "h", "--latency", "--bounceback"][..],
            "--latency cannot be used with --bounceback",
        ),
    ] {
        let r = run(&wirespeed(), args, T);
        assert_eq!(r.code, Some(1), "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
}

/// Three namespaces: sender, a router with a 50 Mbit/s `tbf` toward the
/// receiver (its child queue `pfifo limit N`), receiver. Removed on drop.
pub(crate) struct Path3 {
    /// Sender (10.202.1.1), router, receiver (10.202.2.2).
    pub(crate) ns: [String; 3],
}

impl Drop for Path3 {
    fn drop(&mut self) {
        for n in &self.ns {
            let _ = Command::new("ip")
                .args(["netns", "del", n])
                .stderr(Stdio::null())
                .status();
        }
    }
}

pub(crate) fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Path3 {
    fn new(limit: u32) -> Path3 {
        Path3::shaped(limit, &["r1"])
    }

    /// The queue on the router's `devs`: `r1` toward the receiver, `r0`
    /// toward the sender.
    pub(crate) fn shaped(limit: u32, devs: &[&str]) -> Path3 {
        let id = format!("{}{}", std::process::id(), free_port());
        let p = Path3 {
            ns: [format!("wsl-s-{id}"), format!("wsl-r-{id}"), format!("wsl-d-{id}")],
        };
        let [s, r, d] = &p.ns;
        for n in [s, r, d] {
            sh(&["ip", "netns", "add", n]);
            sh(&["ip", "-n", n, "link", "set", "lo", "up"]);
        }
        sh(&[
            "ip", "link", "add", "s0", "netns", s, "type", "veth", "peer", "name", "r0", "netns", r,
        ]);
        sh(&[
            "ip", "link", "add", "r1", "netns", r, "type", "veth", "peer", "name", "d0", "netns", d,
        ]);
        sh(&["ip", "-n", s, "addr", "add", "10.202.1.1/24", "dev", "s0"]);
        sh(&["ip", "-n", r, "addr", "add", "10.202.1.2/24", "dev", "r0"]);
        sh(&["ip", "-n", r, "addr", "add", "10.202.2.1/24", "dev", "r1"]);
        sh(&["ip", "-n", d, "addr", "add", "10.202.2.2/24", "dev", "d0"]);
        for (n, dev) in [(s, "s0"), (r, "r0"), (r, "r1"), (d, "d0")] {
            sh(&["ip", "-n", n, "link", "set", dev, "up"]);
            // Segments as a wire carries them, so the queue counts packets.
            sh(&[
                "ip", "netns", "exec", n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off",
            ]);
        }
        sh(&["ip", "-n", s, "route", "add", "default", "via", "10.202.1.2"]);
        sh(&["ip", "-n", d, "route", "add", "default", "via", "10.202.2.1"]);
        sh(&["ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        for dev in devs {
            sh(&[
                "tc", "-n", r, "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf", "rate", "50mbit", "burst",
                "32kb", "latency", "1s",
            ]);
            sh(&[
                "tc",
                "-n",
                r,
                "qdisc",
                "add",
                "dev",
                dev,
                "parent",
                "1:1",
                "handle",
                "10:",
                "pfifo",
                "limit",
                &limit.to_string(),
            ]);
        }
        p
    }

    /// A cubic TCP client through the queue (`extra` its own options)
    /// against a wirespeed server started for it: its `-J` document.
    fn through(&self, extra: &[&str]) -> Value {
        let [s, _, d] = &self.ns;
        let ws = wirespeed();
        let ws = ws.to_str().unwrap();
        let ip = PathBuf::from("ip");
        let srv = Proc::spawn(&ip, &["netns", "exec", d, ws, "-s", "-p", "5201"]);
        assert!(
            srv.wait_for_line("Server listening", Duration::from_secs(10)),
            "{}",
            srv.err()
        );
        let mut args = vec!["netns", "exec", s, ws, "-c", "10.202.2.2", "-C", "cubic", "-J"];
        args.extend_from_slice(extra);
        let c = run(&ip, &args, T);
        drop(srv);
        assert_eq!(c.code, Some(0), "{}{}", c.stdout, c.stderr);
        json(&c.stdout)
    }

    /// A test with `--latency=20`: its end.latency.
    fn loaded(&self) -> Value {
        self.through(&["-t", "4", "--latency=20"])["end"]["latency"].clone()
    }

    /// The responsiveness test (`--rpm`): its `end`.
    fn rpm(&self) -> Value {
        self.through(&["-t", "8", "--rpm"])["end"].clone()
    }

    /// `ping`'s median over the idle path, ms.
    fn ping_ms(&self) -> f64 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns[0],
                "ping",
                "-n",
                "-c",
                "20",
                "-i",
                "0.02",
                "10.202.2.2",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut v: Vec<f64> = text
            .lines()
            .filter_map(|l| l.split("time=").nth(1))
            .filter_map(|t| t.trim_end_matches(" ms").parse().ok())
            .collect();
        assert!(!v.is_empty(), "ping: {text}");
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
}

/// Whether this machine can build [`Path3`] (root, iproute2, ethtool,
/// ping); else says that `what` is skipped (a failure where
/// WIRESPEED_REQUIRE_PEERS=1).
pub(crate) fn can_shape(what: &str) -> bool {
    let required = std::env::var("WIRESPEED_REQUIRE_PEERS").as_deref() == Ok("1");
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout == b"0\n");
    let tools = ["ip", "tc", "ethtool", "ping"].iter().all(|t| {
        Command::new(t)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    });
    if !root || !tools {
        assert!(!required, "{what} needs root, iproute2, ethtool and ping");
        eprintln!("NOTICE: not root or no ip/tc/ethtool/ping; skipping {what}");
    }
    root && tools
}

#[test]
fn bufferbloat_through_a_deep_queue_shows_and_a_shallow_one_does_not() {
    if !can_shape("the bufferbloat test") {
        return;
    }
    let deep = Path3::new(1000);
    let ping = deep.ping_ms();
    let d = deep.loaded();
    let d_rpm = deep.rpm();
    drop(deep);
    let shallow = Path3::new(8);
    let s = shallow.loaded();
    let s_rpm = shallow.rpm();
    let p50 = |l: &Value, k: &str| l[k]["p50_ms"].as_f64().unwrap();
    let report = format!("ping {ping:.3} ms\ndeep: {d}\nshallow: {s}\ndeep --rpm: {d_rpm}\nshallow --rpm: {s_rpm}");
    eprintln!("{report}");
    // The idle probes see what ping sees.
    assert!((p50(&d, "idle") - ping).abs() < 0.2, "{report}");
    // The deep queue fills: the median round trip under load is many
    // times the idle one, and many times the shallow queue's.
    assert!(p50(&d, "loaded") >= 5.0 * p50(&d, "idle"), "{report}");
    assert!(p50(&d, "loaded") >= 5.0 * p50(&s, "loaded"), "{report}");
    // --rpm ranks them the same way: the shallow queue's responsiveness is
    // many times the deep one's.
    let rpm = |v: &Value| v["rpm"].as_f64().unwrap();
    assert!(rpm(&s_rpm) >= 5.0 * rpm(&d_rpm), "{report}");
    assert!(d_rpm["goodput_bits_per_second"].as_f64().unwrap() > 30e6, "{report}");
}

#[test]
fn the_html_report_plots_round_trips_and_compares_idle_with_loaded() {
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let dir = std::env::temp_dir().join(format!("ws-lat-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("r.html");
    let h = html.to_str().unwrap();
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "--latency=20", "--report", h],
        T,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(page.contains("Round trips under load"), "no latency chart");
    assert!(page.contains("Latency: idle and under load"), "no latency table");
    assert!(page.contains("idle (before the test)") && page.contains("under load"));
    assert!(page.contains("RTT idle"), "no headline");
}

#[test]
fn the_probes_are_not_a_test_of_their_own_on_our_server() {
    // A -1 JSON server prints the one test's document, no second one for
    // the probe connection, and its text has no bounceback lines.
    let port = free_port();
    let p = port.to_string();
    let mut srv = Proc::spawn(&wirespeed(), &["-s", "-1", "-J", "-p", &p]);
    wait_listening(port);
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "--latency"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(srv.wait(T).is_some(), "the -1 server did not end");
    let docs = json_docs(&srv.out());
    assert_eq!(docs.len(), 1, "{}", srv.out());
    assert_eq!(docs[0]["start"]["test_start"]["protocol"], "TCP");
    let port = free_port();
    let srv = wirespeed_server(port, &[]);
    let p = port.to_string();
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "--latency"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = stop_server(srv);
    assert!(!out.contains("bb w/quickack") && !out.contains("BB8"), "{out}");
    assert!(out.contains("receiver"), "{out}");
}

#[test]
fn csv_rows_end_with_the_round_trips_of_their_span() {
    let port = free_port();
    let srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, "-t 2 -i 1 -y C --latency=20", T).unwrap();
    drop(srv);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rows: Vec<Vec<&str>> = r.stdout.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "two intervals and the total:\n{}", r.stdout);
    for row in &rows {
        // iperf 2's nine TCP columns, then probes, p50, p90, p99, max.
        assert_eq!(row.len(), 14, "{row:?}");
        let probes: u64 = row[9].parse().unwrap();
        let ms: Vec<f64> = row[10..].iter().map(|v| v.parse().unwrap()).collect();
        assert!(probes > 0, "{row:?}");
        assert!(ms.windows(2).all(|w| w[0] <= w[1]) && ms[0] > 0.0, "{row:?}");
    }
    let intervals: u64 = rows[..2].iter().map(|r| r[9].parse::<u64>().unwrap()).sum();
    let total: u64 = rows[2][9].parse().unwrap();
    assert!(total >= intervals, "the final row counts every loaded probe: {rows:?}");
    // Without --latency the rows are iperf 2's own.
    let port = free_port();
    let _srv = iperf2_server(Iperf2::Ours, port, &[]).unwrap();
    let r = iperf2_client(Iperf2::Ours, port, "-t 1 -y C", T).unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.lines().all(|l| l.split(',').count() == 9), "{}", r.stdout);
}

#[test]
fn rpm_on_loopback_ramps_probes_and_reports() {
    let port = free_port();
    let p = port.to_string();
    let _srv = wirespeed_server(port, &[]);
    let r = run(
        &wirespeed(),
        &["-c", "127.0.0.1", "-p", &p, "--rpm", "-t", "5", "-P", "3", "-J"],
        T,
    );
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    let d = json(&r.stdout);
    let iv = d["intervals"].as_array().unwrap();
    assert!((4..=6).contains(&iv.len()), "{}", r.stdout);
    // One more flow a second, up to -P.
    let flows: Vec<u64> = iv.iter().map(|i| i["flows"].as_u64().unwrap()).collect();
    assert_eq!(&flows[..3], &[1, 2, 3], "{flows:?}");
    assert!(flows.iter().all(|f| *f <= 3), "{flows:?}");
    assert!(
        iv.iter().all(|i| i["goodput_bits_per_second"].as_f64().unwrap() > 1e8),
        "{}",
        r.stdout
    );
    let end = &d["end"];
    let rpm = end["rpm"].as_f64().unwrap();
    assert!(rpm > 0.0, "{end}");
    assert!(["Poor", "Fair", "Good", "Excellent"].contains(&end["class"].as_str().unwrap()));
    assert!(["low", "medium", "high"].contains(&end["confidence"].as_str().unwrap()));
    assert!(end["idle"]["round_trip_ms"].as_f64().unwrap() > 0.0, "{end}");
    assert!(end["loaded"]["tcp_info_rtt_ms"].as_f64().unwrap() > 0.0, "{end}");
    assert_eq!(end["probe_failures"].as_u64(), Some(0), "{end}");
    // The server ran every load flow as a test of its own and is still up.
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Text: a line a second and the verdict.
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "--rpm", "-t", "3"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .lines()
            .filter(|l| l.starts_with("[RPM] ") && l.contains(" flows "))
            .count()
            >= 2,
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("[RPM] Responsiveness: "), "{}", r.stdout);
    assert!(r.stdout.contains(" RPM ("), "{}", r.stdout);
}

#[test]
fn rpm_refusals() {
    for (extra, why) in [
        (&["-u"][..], "-u"),
        (&["-n", "1M"][..], "-n or -k"),
        (&["--latency"][..], "--latency"),
        (&["--udp-search"][..], "--udp-search"),
    ] {
        let mut a = vec!["-c", "127.0.0.1", "--rpm"];
        a.extend_from_slice(extra);
        let r = run(&wirespeed(), &a, T);
        assert_eq!(r.code, Some(1), "{extra:?}");
        assert!(
            r.stderr.contains("--rpm cannot be used with") && r.stderr.contains(why),
            "{}",
            r.stderr
        );
    }
    // An iperf3 server answers no probes: one line before any load.
    let Some(iperf3) = peer("iperf3") else { return };
    let port = free_port();
    let p = port.to_string();
    let _srv = iperf3_server(&iperf3, port, &[]);
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "--rpm", "-t", "3"], T);
    assert_eq!(r.code, Some(1), "{} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("does not answer round-trip probes"), "{}", r.stderr);
}

#[test]
fn rpm_in_the_iperf2_dialect_against_the_real_iperf2_server() {
    let port = free_port();
    let Some(_srv) = iperf2_server(Iperf2::Real, port, &[]) else {
        return;
    };
    let r = iperf2_client(Iperf2::Ours, port, "--rpm -t 4 -P 3", T).unwrap();
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    let lines = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("[RPM] ") && l.contains(" flows "))
        .count();
    assert!(lines >= 3, "{}", r.stdout);
    assert!(r.stdout.contains("[RPM] Responsiveness: "), "{}", r.stdout);
    assert!(r.stdout.contains("with 3 load flows"), "{}", r.stdout);
    let r = iperf2_client(Iperf2::Ours, port, "--rpm --bounceback", T).unwrap();
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("--rpm cannot be used with --bounceback"),
        "{}",
        r.stderr
    );
}
