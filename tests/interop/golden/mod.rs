//! The golden matrix: a table of command lines in both dialects (and with
//! the real iperf3 / iperf 2 as the other end), run against the binary
//! under test, their output normalised to its *shape* (numbers, addresses,
//! times, cookies and unit prefixes do not matter; which lines, columns,
//! words and keys appear does), and compared with the files kept in
//! `tests/golden/<case>.txt`.
//!
//! ```text
//! cargo test --release --test golden                       # compare
//! WIRESPEED_BLESS=1 cargo test --release --test golden     # rewrite the files
//! WIRESPEED_GOLDEN_BIN=/opt/wirespeed-baseline/wirespeed WIRESPEED_BLESS=1 \
//!     cargo test --release --test golden                   # bless from another build
//! ```
//!
//! Other knobs: `WIRESPEED_GOLDEN_ONLY=a,b` runs only the cases whose name
//! contains one of the words; `WIRESPEED_GOLDEN_REPEAT=N` runs the matrix N
//! times (flake hunting: every run must match); `WIRESPEED_GOLDEN_JOBS=N`
//! cases at once (default 3); `WIRESPEED_GOLDEN_DUMP=dir` writes each run's
//! raw and normalised output there. Cases with a real peer print a NOTICE
//! and are skipped when it is missing (fail with WIRESPEED_REQUIRE_PEERS=1).
//!
//! How output is normalised (the unit tests at the end pin each rule):
//!
//! * Text, line by line: the machine's `uname` string becomes `UNAME`;
//!   IPv4/IPv6 addresses (an IPv4 one with an optional `:port`) become
//!   `ADDR`; 26+ character base32 words (iperf3 cookies) become `COOKIE`;
//!   every number (integer, decimal, dotted version, exponent form,
//!   negative, `0x` hex, and a printed `nan`/`-nan`/`inf`) becomes `N`,
//!   but digits inside a word (`iperf3`, `x86_64`, `T8`) are kept; so
//!   dates and times become `N-N-N N:N:N`, and
//!   weekday and month names become `DAY` / `MON` and a time zone in
//!   parentheses after a time `(TZ)`; a histogram's bin list
//!   (`cnt(N)=N:N,N:N,...`, as many bins as latencies were seen) becomes
//!   `=BINS`; unit words lose their magnitude prefix (`KBytes`, `GBytes` ->
//!   `?Bytes`, iperf 2's `MByte` -> `?Byte`, `Mbits/sec` -> `?bits/sec`,
//!   `KBytes/sec` -> `?Bytes/sec`), except the rate units in the client
//!   output of a case that fixes them with `-f`; the TCP congestion
//!   algorithm after `snd_tcp_congestion` / `rcv_tcp_congestion` becomes
//!   `CC` (the machine's default); runs of blanks collapse to one and lines
//!   are trimmed. The window advice's `Window needed ...` line ends in one of
//!   two ways by the measured RTT (a window-limited loopback test's
//!   rate x RTT can fall on either side of the window it had), so its tail
//!   after the arithmetic becomes `-> try -w NK`.
//! * Then repetition is collapsed: consecutive identical lines become one,
//!   and a block of up to 8 lines repeated back to back becomes one copy
//!   (repeated until nothing changes). How many interval lines or interval
//!   groups (`[ 1]..[ 2]..[SUM]..- - -`) a test prints is timing: a final
//!   short "sliver" interval (`2.00-2.00 sec` on an iperf3 server,
//!   `2.0000-2.0012 sec` in iperf 2) comes and goes, and a loaded machine
//!   that starves a process for a second makes a 2 s test print a single
//!   `0.00-2.00` interval. Interval lines and the whole-test line have the
//!   same shape (where a line starts does not matter), so they fold into
//!   one; nothing is dropped by kind.
//! * Two cases (`-d` dual tests) regroup the client's report lines by flow
//!   first: a sending and a receiving thread report as they happen to run
//!   (`by_flow`).
//! * Real peers only: iperf 2.1.8's `WARNING: ack of last datagram failed.`
//!   comes and goes by chance and is dropped from its output
//!   (`peer_quirks`); wirespeed's output keeps every line kind.
//! * `-J` output: every key path with the JSON type found there
//!   (`number`, `string`, `bool`, `null`, `object`, `array`), array elements
//!   collapsed to `[]` (types found at one path are joined with `|`); an
//!   `error` string is kept as normalised text. The window advice's
//!   `target_bits_per_second`, `suggested_window_bytes` and
//!   `suggested_option` exist exactly when `limited_by` is a window, and
//!   which limit a full-speed loopback test hits depends on the load: when
//!   they follow that rule they read the same either way (`advice_keys`).
//! * `--json-stream`: the sequence of event names (repetition collapsed as
//!   for text) and, per event name, the key path/type set over all its
//!   events.
//! * `-y C` CSV: per row the number of columns and a type per column
//!   (`int`, `float`, `ip`, `range` for `a-b` intervals, `text`, `empty`),
//!   repetition collapsed as for text.
//!
//! Servers are stopped with SIGTERM once they are done with the test: they
//! hold no more sockets than when idle, an iperf3 server has printed its
//! next "Server listening" banner, and the output has been quiet for a
//! while; a server started with `-1` exits by itself. A case whose setup
//! fails (a port taken meanwhile, a server that did not listen) is retried
//! with new ports, up to three times.
//!
//! Every process is bounded in time and ended by its pid.

mod cases;
mod normalise;
#[cfg(test)]
mod normalise_tests;
mod run;

use crate::common;

use common::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cases::CASES;
use normalise::*;
use run::*;

// ---------------------------------------------------------------------------
// The matrix.

/// Who runs a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prog {
    /// The wirespeed binary under test.
    Ws,
    /// The real iperf3.
    Iperf3,
    /// The real iperf 2.
    Iperf,
}

impl Prog {
    fn name(self) -> &'static str {
        match self {
            Prog::Ws => "wirespeed",
            Prog::Iperf3 => "iperf3",
            Prog::Iperf => "iperf",
        }
    }
}

/// One golden case. Arguments are templates: `{port}` is the server's port,
/// `{lport}` a free port for the client's own listener (iperf 2 `-L`),
/// `{closed}` a port nobody listens on.
#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    server: Option<(Prog, &'static str)>,
    client: (Prog, &'static str),
    /// Keep the rate units as printed (the case fixes them with `-f`).
    keep_rate_units: bool,
    /// The client's report lines interleave by timing: group them by flow.
    by_flow: bool,
}

const fn case(name: &'static str, server: Option<(Prog, &'static str)>, client: (Prog, &'static str)) -> Case {
    Case {
        name,
        server,
        client,
        keep_rate_units: false,
        by_flow: false,
    }
}

/// wirespeed, iperf3 dialect, against a wirespeed `-s` server.
const fn i3(name: &'static str, client: &'static str) -> Case {
    case(name, Some((Prog::Ws, "-s -p {port}")), (Prog::Ws, client))
}

/// wirespeed `--iperf2` client and server.
const fn i2(name: &'static str, server: &'static str, client: &'static str) -> Case {
    case(name, Some((Prog::Ws, server)), (Prog::Ws, client))
}

/// A client run with no server.
const fn alone(name: &'static str, prog: Prog, client: &'static str) -> Case {
    case(name, None, (prog, client))
}

// ---------------------------------------------------------------------------
// The golden text of a case.

/// How a stream of output is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    JsonStream,
    Csv,
}

impl Format {
    fn of(args: &str) -> Format {
        let w: Vec<&str> = args.split_whitespace().collect();
        if w.contains(&"--json-stream") {
            Format::JsonStream
        } else if w.contains(&"-J") || w.contains(&"--json") {
            Format::Json
        } else if w.windows(2).any(|p| p[0] == "-y" && p[1].eq_ignore_ascii_case("c")) {
            Format::Csv
        } else {
            Format::Text
        }
    }

    fn label(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "JSON key paths and types",
            Format::JsonStream => "JSON stream events, then key paths and types per event",
            Format::Csv => "CSV columns and types per row",
        }
    }
}

fn shown(template: &str) -> String {
    template
        .replace("{port}", "PORT")
        .replace("{lport}", "LPORT")
        .replace("{closed}", "CLOSED")
}

/// The golden file's text for a captured run of `c`.
fn render(c: &Case, cap: &Captured, n: &Normaliser) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "# golden case {} (tests/interop/golden.rs; normalised output)\n",
        c.name
    ));
    if let Some((prog, args)) = c.server {
        s.push_str(&format!("# server: {} {}\n", prog.name(), shown(args)));
    }
    s.push_str(&format!("# client: {} {}\n", c.client.0.name(), shown(c.client.1)));
    let section = |s: &mut String, title: &str, fmt: Format, text: &str, n: &Normaliser| {
        s.push_str(&format!("==== {title} ({}) ====\n", fmt.label()));
        let lines = n.normalise(text, fmt);
        if lines.is_empty() {
            s.push_str("(empty)\n");
        }
        for l in lines {
            s.push_str(&l);
            s.push('\n');
        }
    };
    let cfmt = Format::of(c.client.1);
    // `-f` fixes the client's rate units only (a server reports in its own).
    let client_n = Normaliser {
        keep_rate_units: c.keep_rate_units,
        ..n.clone()
    };
    let cp = c.client.0;
    let mut out = peer_quirks(cp, &cap.client_out);
    if c.by_flow {
        s.push_str("# (client report lines grouped by flow: they interleave by timing)\n");
        out = by_flow(&out);
    }
    section(&mut s, "client stdout", cfmt, &out, &client_n);
    section(
        &mut s,
        "client stderr",
        Format::Text,
        &peer_quirks(cp, &cap.client_err),
        n,
    );
    s.push_str(&format!("==== client exit status ====\n{}\n", cap.client_exit));
    if let (Some((sp, sargs)), Some((out, err, exit))) = (c.server, &cap.server) {
        section(&mut s, "server stdout", Format::of(sargs), &peer_quirks(sp, out), n);
        section(&mut s, "server stderr", Format::Text, &peer_quirks(sp, err), n);
        s.push_str(&format!("==== server exit status ====\n{exit}\n"));
    }
    s
}

/// Lines a real peer prints or not by chance, dropped from that peer's
/// output only (wirespeed's own output keeps every line kind):
///
/// * iperf 2.1.8's UDP server prints `WARNING: ack of last datagram
///   failed.` on loopback even when the client got its report, depending on
///   a race between its FIN handling and the client's retries (the README's
///   notes on the iperf 2 dialect; wirespeed prints it only when the client
///   really kept retrying). Seen in 1 of 5 runs.
fn peer_quirks(prog: Prog, text: &str) -> String {
    match prog {
        Prog::Iperf => text
            .lines()
            .filter(|l| !l.ends_with("WARNING: ack of last datagram failed."))
            .map(|l| format!("{l}\n"))
            .collect(),
        Prog::Ws | Prog::Iperf3 => text.to_string(),
    }
}

/// Regroups report lines by flow: the lines of each flow tag (`[  1]`,
/// `[ *2]`, `[SUM]`), in the tags' order, each in its own order. Lines
/// before the first tagged line stay first. Column headers (`[ ID] ...`)
/// printed after that come next, each once, sorted (a header shared by the
/// flows is printed by whichever reports first); any other untagged line
/// goes with the tagged line that follows it, or last.
fn by_flow(text: &str) -> String {
    let mut prelude = String::new();
    let mut headers = BTreeSet::new();
    let mut flows: BTreeMap<String, String> = BTreeMap::new();
    let mut pending = String::new();
    for l in text.lines() {
        let tag = l
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|(t, _)| t.trim());
        match tag {
            Some("ID") if !flows.is_empty() => {
                headers.insert(l.to_string());
            }
            Some(t) if t != "ID" && t != "CT" => {
                let f = flows.entry(t.to_string()).or_default();
                f.push_str(&pending);
                pending.clear();
                f.push_str(l);
                f.push('\n');
            }
            _ if flows.is_empty() => {
                prelude.push_str(l);
                prelude.push('\n');
            }
            _ => {
                pending.push_str(l);
                pending.push('\n');
            }
        }
    }
    let headers: String = headers.into_iter().map(|h| h + "\n").collect();
    prelude + &headers + &flows.into_values().collect::<String>() + &pending
}

// ---------------------------------------------------------------------------
// Comparing.

/// A line diff of `old` and `new` (longest common subsequence), unified
/// style with 3 lines of context.
fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // (tag, line): ' ' both, '-' golden only, '+' this run only.
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near = |k: usize| {
        let lo = k.saturating_sub(3);
        let hi = (k + 3).min(ops.len() - 1);
        ops[lo..=hi].iter().any(|(t, _)| *t != ' ')
    };
    let mut out = String::from("--- golden\n+++ this run\n");
    let mut skipped = false;
    for (k, (t, l)) in ops.iter().enumerate() {
        if near(k) {
            if skipped {
                out.push_str("@@ ... @@\n");
                skipped = false;
            }
            out.push_str(&format!("{t}{l}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

#[test]
fn golden_matrix() {
    let started = Instant::now();
    let bin = std::env::var_os("WIRESPEED_GOLDEN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_wirespeed")));
    let bless = env_flag("WIRESPEED_BLESS");
    let repeat: usize = std::env::var("WIRESPEED_GOLDEN_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let jobs: usize = std::env::var("WIRESPEED_GOLDEN_JOBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let only: Vec<String> = std::env::var("WIRESPEED_GOLDEN_ONLY")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let dump = std::env::var_os("WIRESPEED_GOLDEN_DUMP").map(PathBuf::from);
    if let Some(d) = &dump {
        std::fs::create_dir_all(d).unwrap();
    }
    eprintln!("golden: binary under test {}", bin.display());

    // Which peers exist (peer() prints the NOTICE, or panics when required).
    let has_iperf3 = peer("iperf3").is_some();
    let has_iperf = peer("iperf").is_some();
    let available = |c: &Case| {
        let progs = [Some(c.client.0), c.server.map(|s| s.0)];
        progs.iter().flatten().all(|p| match p {
            Prog::Ws => true,
            Prog::Iperf3 => has_iperf3,
            Prog::Iperf => has_iperf,
        })
    };
    let mut names = HashSet::new();
    for c in CASES {
        assert!(names.insert(c.name), "two cases are named {}", c.name);
    }
    let selected: Vec<&Case> = CASES
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.name.contains(o.as_str())))
        .collect();
    let mut skipped = Vec::new();
    let mut work: Vec<(usize, usize)> = Vec::new(); // (case index in selected, repetition)
    for rep in 0..repeat {
        for (k, c) in selected.iter().enumerate() {
            if available(c) {
                work.push((k, rep));
            } else if rep == 0 {
                eprintln!("NOTICE: golden case {} skipped (a real peer is missing)", c.name);
                skipped.push(c.name);
            }
        }
    }

    let normaliser = Normaliser::new();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, usize, String)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(work.len()).max(1) {
            s.spawn(|| {
                loop {
                    let w = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(k, rep)) = work.get(w) else { break };
                    let c = selected[k];
                    let t = Instant::now();
                    let cap = run_case(c, &bin);
                    let text = render(c, &cap, &normaliser);
                    if let Some(d) = &dump {
                        let raw = format!(
                            "== client stdout\n{}== client stderr\n{}== client exit {}\n{}",
                            cap.client_out,
                            cap.client_err,
                            cap.client_exit,
                            cap.server
                                .as_ref()
                                .map(|(o, e, x)| format!(
                                    "== server stdout\n{o}== server stderr\n{e}== server exit {x}\n"
                                ))
                                .unwrap_or_default()
                        );
                        let _ = std::fs::write(d.join(format!("{}.{rep}.raw", c.name)), raw);
                        let _ = std::fs::write(d.join(format!("{}.{rep}.txt", c.name)), &text);
                    }
                    eprintln!("golden: {} ({:.1} s)", c.name, t.elapsed().as_secs_f64());
                    results.lock().unwrap().push((k, rep, text));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort();
    let dir = golden_dir();

    if bless {
        std::fs::create_dir_all(&dir).unwrap();
        for (k, rep, text) in &results {
            if *rep == 0 {
                std::fs::write(dir.join(format!("{}.txt", selected[*k].name)), text).unwrap();
            }
        }
        if only.is_empty() {
            // Files of cases that no longer exist go.
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(stem) = name.strip_suffix(".txt")
                    && !CASES.iter().any(|c| c.name == stem)
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        eprintln!(
            "golden: blessed {} cases in {:.1} s",
            results.len(),
            started.elapsed().as_secs_f64()
        );
        return;
    }

    let mut failures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (k, rep, text) in &results {
        let c = selected[*k];
        let path = dir.join(format!("{}.txt", c.name));
        let golden = std::fs::read_to_string(&path).unwrap_or_default();
        if golden != *text {
            let d = if golden.is_empty() {
                format!("no golden file {} (bless with WIRESPEED_BLESS=1)\n", path.display())
            } else {
                diff(&golden, text)
            };
            let v = failures.entry(c.name).or_default();
            if !v.iter().any(|x| x.ends_with(&d)) {
                v.push(format!("(run {})\n{d}", rep + 1));
            } else {
                v.push(format!("(run {}: the same difference)", rep + 1));
            }
        }
    }
    let mut stale = Vec::new();
    if only.is_empty() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".txt")
                && !CASES.iter().any(|c| c.name == stem)
            {
                stale.push(name);
            }
        }
    }
    eprintln!(
        "golden: {} runs of {} cases in {:.1} s, {} skipped",
        results.len(),
        selected.len(),
        started.elapsed().as_secs_f64(),
        skipped.len()
    );
    if !failures.is_empty() || !stale.is_empty() {
        let mut msg = String::new();
        for (name, diffs) in &failures {
            msg.push_str(&format!("\n===== golden case {name} differs =====\n"));
            for d in diffs {
                msg.push_str(d);
                msg.push('\n');
            }
        }
        for s in &stale {
            msg.push_str(&format!(
                "\ngolden file tests/golden/{s} has no case (remove it or bless)\n"
            ));
        }
        eprintln!("{msg}");
        panic!(
            "golden: {} of {} cases differ: {}{}",
            failures.len(),
            selected.len(),
            failures.keys().copied().collect::<Vec<_>>().join(", "),
            if stale.is_empty() {
                String::new()
            } else {
                format!("; stale files: {}", stale.join(", "))
            }
        );
    }
}
