//! The iperf 2 banners' size lines (`TCP window size:`, `UDP buffer size:`,
//! `Read buffer size:`, `Write buffer size:`, the MSS line) against the real
//! iperf 2.1.8's, line for line: under the options perfSONAR pScheduler's
//! iperf2 tool passes (`-e --format b -m -i N`, with `-w`, `-l`, `-P`,
//! `-u -b`), and under every `-f` letter. Each program's client runs
//! against its own server, so each banner is its own program's. A size the
//! kernel chose (a default window, which 2.1.8 reads after the connection
//! may already have grown it) is held to its shape; a size asked for
//! (`-w`, `-l`, `-M`) to the byte.

use crate::common;

use std::time::Duration;

use common::{Iperf2, iperf2_client, iperf2_server, stop_server};

const T: Duration = Duration::from_secs(30);

/// The size lines of the first banner in `out` (between its rules).
fn size_lines(out: &str) -> Vec<String> {
    let rule = "------------------------------------------------------------";
    out.lines()
        .skip_while(|l| *l != rule)
        .skip(1)
        .take_while(|l| *l != rule)
        .filter(|l| {
            [
                "TCP window size:",
                "UDP buffer size:",
                "Read buffer size:",
                "Write buffer size:",
                "MSS ",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .map(String::from)
        .collect()
}

/// A default size's line with its number as `N`.
fn shape(line: &str) -> String {
    if !line.contains("(default)") {
        return line.to_string();
    }
    let (label, rest) = line.split_once(':').unwrap();
    let rest = rest.trim_start();
    let unit = rest.split_once(' ').map_or(rest, |(_, u)| u);
    format!("{label}: N {unit}")
}

/// The server's and the client's size lines of `who`'s banners.
fn banners(who: Iperf2, sargs: &str, cargs: &str) -> Option<(Vec<String>, Vec<String>)> {
    let port = common::free_port();
    let extra: Vec<&str> = sargs.split_whitespace().collect();
    let srv = iperf2_server(who, port, &extra)?;
    let r = iperf2_client(who, port, cargs, T)?;
    // The banner is printed before the server accepts; stopping the server
    // (SIGTERM, then its exit) flushes whatever it still holds.
    let sout = stop_server(srv);
    assert_eq!(r.code, Some(0), "{who:?} -c {cargs}:\n{}{}", r.stdout, r.stderr);
    Some((size_lines(&sout), size_lines(&r.stdout)))
}

/// Runs each (server, client) pair with both programs and holds ours to
/// 2.1.8's.
fn hold(cases: &[(String, String)]) {
    for (sargs, cargs) in cases {
        let Some(real) = banners(Iperf2::Real, sargs, cargs) else {
            return;
        };
        let ours = banners(Iperf2::Ours, sargs, cargs).unwrap();
        let norm = |v: &[String]| v.iter().map(|l| shape(l)).collect::<Vec<_>>();
        assert!(!real.0.is_empty() && !real.1.is_empty(), "{real:?}");
        assert_eq!(
            (norm(&ours.0), norm(&ours.1)),
            (norm(&real.0), norm(&real.1)),
            "-s {sargs} / -c {cargs}: ours (server, client) against 2.1.8's:\n{ours:#?}\n{real:#?}"
        );
    }
}

#[test]
fn size_lines_match_2_1_8_under_pschedulers_options() {
    let ps = "-e --format b -m -i 1";
    let cases: Vec<(String, String)> = [
        ("", "-t 1"),
        ("-w 1000000", "-t 1 -w 1000000 -l 100000 -P 2"),
        ("-u", "-t 1 -u -b 10M -l 1000"),
        ("-u -w 300000", "-t 1 -u -b 10M -w 300000 -P 2"),
    ]
    .iter()
    .map(|(s, c)| (format!("{ps} {s}"), format!("{ps} {c}")))
    .collect();
    hold(&cases);
}

#[test]
fn size_lines_follow_every_format_as_2_1_8() {
    // 2.1.8 prints a socket's size in bytes under -f b/B and adaptive
    // otherwise, and the size requested in -f's unit as bytes.
    let mut cases = Vec::new();
    for f in ["", "-f b", "-f k", "-f m", "-f K", "-f M", "-f a"] {
        cases.push((format!("{f} -w 1000000 -e"), format!("{f} -t 0.3 -w 1500000 -e")));
        cases.push((format!("{f} -u -w 300000"), format!("{f} -t 0.3 -u -w 100000")));
    }
    hold(&cases);
}
