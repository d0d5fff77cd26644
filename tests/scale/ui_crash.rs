//! The UI's history through crashes and a full disk (issue 33, item 6).
//!
//! `wirespeed ui` is killed with SIGKILL 100 times while its runs write
//! their events: before a run's first interval, after a given number of
//! them, at deterministic delays between, with one run or two at once,
//! and with nothing running after a run has finished. After every kill
//! the file is opened read-only here (`PRAGMA integrity_check`, every run
//! begun still there); at every start the next UI lists no run as
//! running, the dead process's runs are interrupted with the intervals
//! they stored (the list, the run's result.json and result.csv, and both
//! history exports agree), every run that had ended keeps its state and
//! numbers, and every interval the list had shown is still stored.
//!
//! Then a history on a full file system (a small tmpfs in a mount
//! namespace of the UI's own; root only, skipped with a notice
//! otherwise): one line on standard error and on the page, and the run
//! still runs to its end.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::webdriver::http;
use common::{Proc, free_port, wait_listening, wirespeed, wirespeed_server};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);
/// Each run's `-t` (seconds; `-i 0.1`): six intervals.
const RUN: &str = "0.6";

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ui-crash-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A `wirespeed ui` with its port and token.
struct Ui {
    p: Proc,
    port: u16,
    token: String,
}

impl Ui {
    /// `wirespeed ui --db db`, run through `wrap` (a command line that
    /// ends by exec'ing the UI's, or none).
    fn start(db: &str, wrap: &[&str]) -> Ui {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let exe = wirespeed();
        let exe = exe.to_str().unwrap();
        let ui = [exe, "ui", "--listen", &listen, "--db", db, "--max-running", "2"];
        let p = match wrap.split_first() {
            None => Proc::spawn(&wirespeed(), &ui[1..]),
            Some((prog, rest)) => {
                let mut args: Vec<&str> = rest.to_vec();
                args.extend_from_slice(&ui);
                Proc::spawn(&PathBuf::from(prog), &args)
            }
        };
        assert!(p.wait_for_line(&format!("History in {db}"), T), "{}", p.err());
        wait_listening(port);
        let (_, page) = http(port, "GET", "/", &[], "");
        let at = page.find("\"token\":\"").expect("token in page") + 9;
        let token = page[at..at + 32].to_string();
        Ui { p, port, token }
    }

    fn get_text(&self, path: &str) -> String {
        let sep = if path.contains('?') { '&' } else { '?' };
        let (s, body) = http(self.port, "GET", &format!("{path}{sep}token={}", self.token), &[], "");
        assert_eq!(s, 200, "{path}: {body}");
        body
    }

    fn get(&self, path: &str) -> Value {
        let body = self.get_text(path);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }

    /// Starts a run; its number.
    fn post_run(&self, form: &Value) -> u64 {
        let (s, body) = http(
            self.port,
            "POST",
            "/api/runs",
            &[("Content-Type", "application/json"), ("X-Wirespeed-Token", &self.token)],
            &form.to_string(),
        );
        assert_eq!(s, 201, "{form}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["id"].as_u64().unwrap()
    }

    /// Every run, by number.
    fn runs(&self) -> BTreeMap<u64, Value> {
        let list = self.get("/api/runs?limit=5000");
        (list.as_array().unwrap().iter())
            .map(|r| (r["id"].as_u64().unwrap(), r.clone()))
            .collect()
    }

    /// The test processes it started (its children).
    fn children(&self) -> Vec<u32> {
        let me = self.p.pid().to_string();
        let mut kids = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            if let Some((_, rest)) = stat.rsplit_once(") ")
                && rest.split(' ').nth(1) == Some(me.as_str())
            {
                kids.push(pid);
            }
        }
        kids
    }

    /// SIGKILL; then `server` ends, and with it the test processes the
    /// UI leaves behind (they would run to the end of their `-t`: losing
    /// their standard output does not stop them), by pid if they linger.
    fn kill(mut self, server: Proc) {
        let kids = self.children();
        self.p.signal(9);
        self.p.wait(T).expect("the UI ends on SIGKILL");
        drop(server);
        for pid in kids {
            if common::wait::within(common::wait::LONG, || common::wait::pid_gone(pid).then_some(())).is_none() {
                let _ = std::process::Command::new("kill")
                    .arg("-9")
                    .arg(pid.to_string())
                    .status();
                common::wait::exited(pid, T);
            }
        }
    }
}

fn state(r: &Value) -> &str {
    r["state"].as_str().unwrap_or("")
}

fn intervals(r: &Value) -> u64 {
    r["intervals"].as_u64().unwrap_or(u64::MAX)
}

/// What the test knows of the history.
#[derive(Default)]
struct Known {
    /// Every run begun (its POST answered 201).
    begun: BTreeSet<u64>,
    /// Runs seen ended, as they were listed then.
    ended: BTreeMap<u64, Value>,
    /// The most intervals the list showed of each run.
    shown: BTreeMap<u64, u64>,
    /// Runs running when their UI was killed.
    cut: Vec<u64>,
}

/// The file as it is left, read-only: whole, and every run begun is in it.
fn check_file(db: &str, known: &Known) {
    use rusqlite::{Connection, OpenFlags};
    let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .unwrap_or_else(|e| panic!("the history does not open: {e}"));
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let ids: BTreeSet<u64> = {
        let mut q = c.prepare("SELECT id FROM runs").unwrap();
        q.query_map([], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|r| r.unwrap() as u64)
            .collect()
    };
    assert_eq!(ids, known.begun, "the runs in the file");
}

/// What a UI opening the file lists: nothing running, the cut runs
/// interrupted with what they stored, the ended runs as they were, and
/// the exports saying the same.
fn check_listed(ui: &Ui, known: &mut Known) {
    let runs = ui.runs();
    assert_eq!(
        runs.keys().copied().collect::<BTreeSet<_>>(),
        known.begun,
        "the listed runs"
    );
    for (id, r) in &runs {
        assert_ne!(state(r), "running", "no process runs {r}");
        if let Some(was) = known.ended.get(id) {
            for k in ["state", "error", "intervals", "headline", "ended_ms"] {
                assert_eq!(r[k], was[k], "run {id}'s {k} changed: {r} was {was}");
            }
        }
        // Every interval the list showed had been committed.
        assert!(intervals(r) >= known.shown.get(id).copied().unwrap_or(0), "{r}");
    }
    for id in known.cut.drain(..) {
        let r = &runs[&id];
        let doc = ui.get(&format!("/api/runs/{id}/result.json"));
        let stored = doc["intervals"].as_array().map_or(0, Vec::len) as u64;
        assert_eq!(intervals(r), stored, "the list against result.json: {r}");
        if state(r) == "interrupted" {
            assert!(r["error"].as_str().unwrap().contains("ended before the run did"), "{r}");
        }
        // One stream: a row an interval.
        let csv = ui.get_text(&format!("/api/runs/{id}/result.csv"));
        assert_eq!(csv.lines().count() as u64, stored, "result.csv against the list: {csv}");
        known.ended.insert(id, r.clone());
    }
    // The downloads: the same runs, states and counts.
    let export = ui.get("/api/history.json");
    let exported: BTreeMap<u64, (String, u64)> = (export["runs"].as_array().unwrap().iter())
        .map(|r| (r["id"].as_u64().unwrap(), (state(r).to_string(), intervals(r))))
        .collect();
    let listed: BTreeMap<u64, (String, u64)> = (runs.iter())
        .map(|(id, r)| (*id, (state(r).to_string(), intervals(r))))
        .collect();
    assert_eq!(exported, listed, "history.json against the list");
    let csv = ui.get_text("/api/history.csv");
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (c_id, c_state, c_n) = (col("id"), col("state"), col("intervals"));
    let mut in_csv = BTreeMap::new();
    for line in csv.lines().skip(1) {
        // The cells this test reads come before any quoted one.
        let cells: Vec<&str> = line.split(',').collect();
        let id: u64 = cells[c_id].parse().unwrap();
        let n: u64 = line.rsplit(',').next().unwrap().parse().unwrap();
        assert_eq!(c_n, head.len() - 1, "intervals is the last column");
        in_csv.insert(id, (cells[c_state].to_string(), n));
    }
    assert_eq!(in_csv, listed, "history.csv against the list");
}

#[test]
fn the_ui_killed_100_times_leaves_a_whole_history_that_says_what_it_stored() {
    let cycles: usize = std::env::var("WIRESPEED_UI_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = scratch("kill");
    let db = dir.join("h.db").to_string_lossy().into_owned();
    let began = Instant::now();
    let mut known = Known::default();
    // How each kill found its runs: intervals stored at the kill.
    let mut cut_at: BTreeMap<u64, usize> = BTreeMap::new();
    for i in 0..cycles {
        // A server of its own each cycle, so a test the last UI left
        // running never finds this one's busy.
        let sport = free_port();
        let server = wirespeed_server(sport, &[]);
        let ui = Ui::start(&db, &[]);
        check_listed(&ui, &mut known);
        let form = |t: &str, dialect: &str| {
            json!({"dialect": dialect, "host": "127.0.0.1", "port": sport.to_string(),
                   "time": t, "interval": "0.1", "bitrate": "20M"})
        };
        let mut ids = vec![ui.post_run(&form(RUN, "iperf3"))];
        // Every fourth cycle a second run beside it, in iperf 2's dialect
        // (which the server serves beside an iperf3 test).
        if i % 4 == 3 {
            ids.push(ui.post_run(&form(RUN, "iperf2")));
        }
        known.begun.extend(&ids);
        // Waits until run `id` has listed `n` intervals or ended; the list.
        let until = |id: u64, n: u64| {
            common::wait::until(format!("run {id} to list {n} intervals or end"), T, || {
                let runs = ui.runs();
                let r = &runs[&id];
                (intervals(r) >= n || state(r) != "running").then(|| runs.clone())
            })
        };
        // The moment of the kill: deterministic, varied by the cycle.
        let k = i % 10;
        let spread = |step: u64, span: u64| Duration::from_millis((i as u64 * step) % span);
        match k {
            // At once: before the first interval (often before the test
            // process has connected).
            0 => {}
            // After 1 to 5 intervals (of 6), and a little more.
            1..=5 => {
                until(ids[0], k as u64);
                common::wait::pause(spread(17, 40));
            }
            // After the run has ended: its end is committed; then another
            // run, killed a varied moment after it starts.
            6 => {
                let runs = until(ids[0], u64::MAX);
                let r = &runs[&ids[0]];
                assert_eq!(state(r), "done", "{r}");
                assert!(r["headline"]["received_bps"].as_f64().unwrap() > 0.0, "{r}");
                for id in ids.drain(..) {
                    let r = until(id, u64::MAX)[&id].clone();
                    known.ended.insert(id, r);
                }
                ids.push(ui.post_run(&form(RUN, "iperf3")));
                known.begun.extend(&ids);
                common::wait::pause(spread(29, 250));
            }
            // A varied delay after the start.
            _ => common::wait::pause(spread(53, 700)),
        }
        // What the list shows now has been committed.
        let runs = ui.runs();
        for (id, r) in &runs {
            let n = intervals(r);
            if n != u64::MAX {
                let e = known.shown.entry(*id).or_default();
                *e = (*e).max(n);
            }
        }
        ui.kill(server);
        // The next start checks each of this cycle's runs against its
        // files and the exports (one that ended before the kill too).
        for id in ids {
            let r = &runs[&id];
            if state(r) == "running" {
                cut_at.insert(id, intervals(r) as usize);
            }
            known.cut.push(id);
        }
        check_file(&db, &known);
    }
    // A last start checks the last kill; a clean end marks nothing.
    let mut ui = Ui::start(&db, &[]);
    check_listed(&ui, &mut known);
    ui.p.signal(15);
    assert!(ui.p.wait(T).is_some_and(|s| s.success()), "{}", ui.p.err());
    check_file(&db, &known);
    let took = began.elapsed();
    // The figures (docs/reliability.md).
    let runs = known.ended.values();
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    let mut cut_intervals = 0;
    for r in runs {
        *by_state.entry(state(r).to_string()).or_default() += 1;
        if state(r) == "interrupted" {
            cut_intervals += intervals(r);
        }
    }
    let before_first = cut_at.values().filter(|n| **n == 0).count();
    eprintln!(
        "ui_crash: {cycles} kills in {:.1} s; runs by state {by_state:?}; the interrupted kept \
         {cut_intervals} intervals; {before_first} runs listed no interval when killed",
        took.as_secs_f64()
    );
    assert_eq!(known.ended.len(), known.begun.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A history on a full file system: a tmpfs of 512 KiB mounted in a mount
/// namespace of the UI's own (root only; skipped with a notice
/// otherwise), filled from outside through `/proc/PID/root` once a run
/// has stored some intervals.
#[test]
fn a_full_disk_is_one_line_and_the_run_goes_on() {
    if !common::is_root() {
        eprintln!("NOTICE: not root; skipping the full-disk history test (it mounts a tmpfs)");
        return;
    }
    let dir = scratch("full");
    let fs = dir.join("fs");
    std::fs::create_dir_all(&fs).unwrap();
    let fs_s = fs.to_string_lossy().into_owned();
    let probe = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=512k tmpfs \"$0\"", &fs_s])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("NOTICE: cannot mount a tmpfs in a mount namespace; skipping the full-disk history test");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let db = fs.join("h.db").to_string_lossy().into_owned();
    // unshare and sh exec into the UI: one pid throughout.
    let mount = "mount -t tmpfs -o size=512k tmpfs \"$0\" && exec \"$@\"";
    let mut ui = Ui::start(&db, &["unshare", "-m", "sh", "-c", mount, &fs_s]);
    // The UI's tmpfs, as this process sees it.
    let there = PathBuf::from(format!("/proc/{}/root{fs_s}", ui.p.pid()));
    assert!(there.join("h.db").is_file());
    let sport = free_port();
    let _server = wirespeed_server(sport, &[]);
    let form = json!({"host": "127.0.0.1", "port": sport.to_string(), "time": "2",
                      "interval": "0.1", "bitrate": "20M"});
    let id = ui.post_run(&form);
    common::wait::until("three intervals", T, || (intervals(&ui.runs()[&id]) >= 3).then_some(()));
    // Fill it.
    {
        use std::io::Write;
        let mut f = std::fs::File::create(there.join("fill")).unwrap();
        let chunk = vec![0u8; 4096];
        loop {
            match f.write_all(&chunk) {
                Ok(()) => {}
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(28), "{e}");
                    break;
                }
            }
        }
    }
    // The run goes on to its end, listed done with all its intervals.
    let r = common::wait::until("the run to end", T, || {
        let r = ui.runs()[&id].clone();
        (state(&r) != "running").then_some(r)
    });
    assert_eq!(state(&r), "done", "{r}");
    assert!(intervals(&r) >= 15, "{r}");
    // One line, on standard error and on the page.
    let said = common::wait::stderr_has(&ui.p, "the disk is full", T);
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("history:")).collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].starts_with(&format!("wirespeed: history: cannot write to {db}: the disk is full")),
        "{said}"
    );
    let h = ui.get("/api/history");
    assert!(h["trouble"].as_str().unwrap_or("").contains("the disk is full"), "{h}");
    let listed = intervals(&r);
    // The file stays whole, and what it holds is there.
    let stored = check_disk_file(&there, &dir.join("copy"), id);
    assert!(stored < listed, "{stored} of {listed} intervals stored on a full disk");
    // Room again: the end that could not be written is (before the next
    // run starts), and the next run is recorded whole.
    std::fs::remove_file(there.join("fill")).unwrap();
    let next = ui.post_run(&json!({"host": "127.0.0.1", "port": sport.to_string(), "time": "0.6",
                                   "interval": "0.1", "bitrate": "20M"}));
    let r = common::wait::until("the next run to end", T, || {
        let r = ui.runs()[&next].clone();
        (state(&r) != "running").then_some(r)
    });
    assert_eq!(state(&r), "done", "{r}");
    let exported = ui.get("/api/history.json");
    let row = (exported["runs"].as_array().unwrap().iter())
        .find(|x| x["id"] == next)
        .unwrap()
        .clone();
    assert_eq!(
        (state(&row), row["intervals"].clone()),
        ("done", r["intervals"].clone()),
        "{row}"
    );
    let first = (exported["runs"].as_array().unwrap().iter())
        .find(|x| x["id"] == id)
        .unwrap()
        .clone();
    // It ended; it says what the history missed; it counts what it kept.
    assert_eq!(state(&first), "done", "{first}");
    assert!(first["headline"]["received_bps"].as_f64().unwrap() > 0.0, "{first}");
    assert!(
        first["error"]
            .as_str()
            .unwrap_or("")
            .contains("the history could not store"),
        "{first}"
    );
    assert_eq!(intervals(&first), stored, "{first}");
    eprintln!(
        "ui_crash: full disk: {stored} of {listed} intervals stored; said: {}; the run's error: {}",
        lines[0], first["error"]
    );
    assert_eq!(
        ui.p.err().lines().filter(|l| l.contains("history:")).count(),
        1,
        "{}",
        ui.p.err()
    );
    ui.p.signal(15);
    assert!(ui.p.wait(T).is_some_and(|s| s.success()), "{}", ui.p.err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The full disk's file, copied out of the UI's namespace with its log
/// (SQLite resolves `/proc/PID/root`, a link to `/`, into this
/// namespace's file system): whole, and run `id`'s first events in it;
/// the intervals it holds of run `id`.
fn check_disk_file(there: &std::path::Path, copy: &std::path::Path, id: u64) -> u64 {
    std::fs::create_dir_all(copy).unwrap();
    for f in ["h.db", "h.db-wal"] {
        std::fs::copy(there.join(f), copy.join(f)).unwrap();
    }
    let c = rusqlite::Connection::open(copy.join("h.db")).unwrap();
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let n: i64 = c
        .query_row("SELECT count(*) FROM events WHERE run = ?1", [id as i64], |r| r.get(0))
        .unwrap();
    assert!(n >= 3, "{n} events stored");
    c.query_row(
        "SELECT count(*) FROM events WHERE run = ?1 AND json_extract(line, '$.event') = 'interval'",
        [id as i64],
        |r| r.get::<_, i64>(0),
    )
    .unwrap() as u64
}
