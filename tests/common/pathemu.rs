//! The path emulator (`tools/pathemu`, see docs/pathemu.md) for tests:
//! two namespaces joined by an emulated WAN path with delay, rate, queue,
//! loss, jitter and outages, and exact counts of every packet's fate.
//!
//! `Path::start` returns `None`, with a notice, where it cannot run (not
//! root, or the example not built: `cargo test --release` builds examples,
//! `cargo test --release --test X` alone does not, so run
//! `cargo build --release --example pathemu` first). With
//! `WIRESPEED_REQUIRE_PEERS=1` it panics instead. Dropping a `Path` quits
//! the emulator (by pid if it does not go) and removes the namespaces.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path as FsPath, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Proc, Ran, run};

/// How to start an emulator: its command-line settings.
#[derive(Debug, Clone)]
pub struct PathSpec {
    /// `--both`: settings of both directions, e.g. `delay=50ms,rate=20M`.
    pub both: Option<String>,
    /// `--a2b`: A to B only, applied after `both`.
    pub a2b: Option<String>,
    /// `--b2a`: B to A only, applied after `both`.
    pub b2a: Option<String>,
    /// `--outage` values, e.g. `1s+500ms` or `a2b:2s+1s`.
    pub outages: Vec<String>,
    /// `--seed`, for reproducible loss and jitter.
    pub seed: Option<u64>,
    /// `--lifetime` in seconds: the emulator ends itself after this long.
    pub lifetime_s: u64,
    /// Further arguments.
    pub extra: Vec<String>,
    /// Run the programs started in the namespaces with realtime
    /// scheduling (`chrt -r 5`, below the emulator's own threads), where
    /// `chrt` exists: on a busy machine a starved endpoint would otherwise
    /// show up as the path's delay or rate. Only for light traffic: a
    /// realtime sender at full speed starves everything else.
    pub realtime_endpoints: bool,
    /// Take a turn (`PathTurn`) for the path's life, as a busy path does;
    /// a test that mostly waits (on a path that is down) runs beside the
    /// others instead.
    pub takes_turn: bool,
}

impl Default for PathSpec {
    fn default() -> Self {
        PathSpec {
            both: None,
            a2b: None,
            b2a: None,
            outages: Vec::new(),
            seed: None,
            lifetime_s: 120,
            extra: Vec::new(),
            realtime_endpoints: false,
            takes_turn: true,
        }
    }
}

impl PathSpec {
    /// A path with no delay, no rate limit and no loss.
    pub fn new() -> PathSpec {
        PathSpec::default()
    }
    /// Sets `--both`.
    pub fn both(mut self, s: &str) -> Self {
        self.both = Some(s.into());
        self
    }
    /// Sets `--a2b`.
    pub fn a2b(mut self, s: &str) -> Self {
        self.a2b = Some(s.into());
        self
    }
    /// Sets `--b2a`.
    pub fn b2a(mut self, s: &str) -> Self {
        self.b2a = Some(s.into());
        self
    }
    /// Adds an `--outage`.
    pub fn outage(mut self, s: &str) -> Self {
        self.outages.push(s.into());
        self
    }
    /// Sets `--seed`.
    pub fn seed(mut self, n: u64) -> Self {
        self.seed = Some(n);
        self
    }
    /// Sets `--lifetime`.
    pub fn lifetime(mut self, secs: u64) -> Self {
        self.lifetime_s = secs;
        self
    }
    /// Runs beside the other path tests, without a turn: for a test that
    /// mostly waits, with little or no traffic on its path.
    pub fn mostly_waiting(mut self) -> Self {
        self.takes_turn = false;
        self
    }
    /// Runs the programs in the namespaces with realtime scheduling.
    pub fn realtime_endpoints(mut self) -> Self {
        self.realtime_endpoints = true;
        self
    }

    fn args(&self) -> Vec<String> {
        let mut a = vec!["--lifetime".to_string(), self.lifetime_s.to_string()];
        for (flag, v) in [("--both", &self.both), ("--a2b", &self.a2b), ("--b2a", &self.b2a)] {
            if let Some(v) = v {
                a.extend([flag.to_string(), v.clone()]);
            }
        }
        for o in &self.outages {
            a.extend(["--outage".to_string(), o.clone()]);
        }
        if let Some(s) = self.seed {
            a.extend(["--seed".to_string(), s.to_string()]);
        }
        a.extend(self.extra.iter().cloned());
        a
    }
}

/// The emulator binary: cargo builds examples into `examples/` beside the
/// profile's binaries.
pub fn pathemu_exe() -> PathBuf {
    let ws = PathBuf::from(env!("CARGO_BIN_EXE_wirespeed"));
    ws.parent().unwrap_or(FsPath::new(".")).join("examples").join("pathemu")
}

/// Whether a namespace of this name exists.
pub fn netns_exists(name: &str) -> bool {
    FsPath::new("/run/netns").join(name).exists()
}

/// A running emulator.
pub struct Path {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
    /// The ready line.
    pub ready: Value,
    /// Namespace A (the client side by convention).
    pub ns_a: String,
    /// Namespace B.
    pub ns_b: String,
    /// A's IPv4 address (10.77.0.1).
    pub addr_a: String,
    /// B's IPv4 address (10.77.0.2).
    pub addr_b: String,
    /// A's IPv6 address (fd77::1).
    pub addr6_a: String,
    /// B's IPv6 address (fd77::2).
    pub addr6_b: String,
    final_stats: Option<Value>,
    /// The signal sent with [`Path::signal`], if any.
    signalled: Option<i32>,
    /// `chrt` and its arguments, put before programs run in the namespaces.
    prefix: Vec<String>,
    /// Held while the path exists (declared last: dropped after the
    /// emulator is gone).
    _turn: Option<super::PathTurn>,
}

impl Path {
    /// Starts an emulator and waits for its ready line; `None` (with a
    /// notice) where it cannot run, unless WIRESPEED_REQUIRE_PEERS=1.
    pub fn start(spec: &PathSpec) -> Option<Path> {
        let exe = pathemu_exe();
        let why = if !super::is_root() {
            Some("the path emulator needs root".to_string())
        } else if !exe.is_file() {
            Some(format!(
                "{} is not built (cargo build --release --example pathemu)",
                exe.display()
            ))
        } else {
            None
        };
        if let Some(why) = why {
            if std::env::var("WIRESPEED_REQUIRE_PEERS").as_deref() == Ok("1") {
                panic!("{why} (WIRESPEED_REQUIRE_PEERS=1)");
            }
            eprintln!("NOTICE: {why}; skipping");
            return None;
        }
        let mut path = Path::spawn(&exe, &spec.args(), spec.takes_turn);
        if spec.realtime_endpoints {
            match super::peer("chrt") {
                Some(chrt) => path.prefix = vec![chrt.to_string_lossy().into_owned(), "-r".into(), "5".into()],
                None => eprintln!("NOTICE: no chrt; the endpoints run with normal scheduling"),
            }
        }
        Some(path)
    }

    fn spawn(exe: &FsPath, args: &[String], takes_turn: bool) -> Path {
        let turn = takes_turn.then(super::path_turn);
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {exe:?}: {e}"));
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let se = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                se.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut p = Path {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            ready: Value::Null,
            ns_a: String::new(),
            ns_b: String::new(),
            addr_a: String::new(),
            addr_b: String::new(),
            addr6_a: String::new(),
            addr6_b: String::new(),
            final_stats: None,
            signalled: None,
            prefix: Vec::new(),
            _turn: turn,
        };
        let ready = p
            .expect(&["ready"], Duration::from_secs(20))
            .unwrap_or_else(|| panic!("pathemu did not get ready; stderr: {}", p.err()));
        let field = |k: &str| ready[k].as_str().unwrap_or_default().to_string();
        p.ns_a = field("ns_a");
        p.ns_b = field("ns_b");
        p.addr_a = field("addr_a");
        p.addr_b = field("addr_b");
        p.addr6_a = field("addr6_a");
        p.addr6_b = field("addr6_b");
        p.ready = ready;
        p
    }

    /// The emulator's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the emulator wrote to stderr so far.
    pub fn err(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The next stdout line whose `event` is one of `events`.
    fn expect(&self, events: &[&str], timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let line = self.lines.recv_timeout(left).ok()?;
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["event"].as_str().is_some_and(|e| events.contains(&e))
            {
                return Some(v);
            }
        }
        None
    }

    /// Sends one command and returns its answer; panics on an error answer
    /// or none.
    pub fn command(&self, line: &str) -> Value {
        let mut stdin = self.stdin.as_ref().expect("the emulator's stdin is closed");
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("pathemu {line:?}: {e}"));
        let v = self
            .expect(&["ok", "error", "stats"], Duration::from_secs(10))
            .unwrap_or_else(|| panic!("pathemu did not answer {line:?}; stderr: {}", self.err()));
        assert_ne!(v["event"], "error", "pathemu {line:?}: {v}");
        v
    }

    /// All counters (see docs/pathemu.md for their shape).
    pub fn stats(&self) -> Value {
        self.command("stats")
    }

    /// Takes `dirs` (`a2b`, `b2a` or `both`) down: arrivals are dropped.
    pub fn down(&self, dirs: &str) {
        self.command(&format!("down {dirs}"));
    }

    /// Brings `dirs` back up.
    pub fn up(&self, dirs: &str) {
        self.command(&format!("up {dirs}"));
    }

    /// Changes settings live, e.g. `set("a2b", "delay=10ms,loss=1%")`.
    pub fn set(&self, dirs: &str, settings: &str) {
        self.command(&format!("set {dirs} {settings}"));
    }

    /// Starts `prog args` in namespace A (`ip netns exec` execs it, so the
    /// pid is the program's).
    pub fn spawn_a(&self, prog: &FsPath, args: &[&str]) -> Proc {
        self.spawn_in(&self.ns_a, prog, args)
    }

    /// Starts `prog args` in namespace B.
    pub fn spawn_b(&self, prog: &FsPath, args: &[&str]) -> Proc {
        self.spawn_in(&self.ns_b, prog, args)
    }

    /// Runs `prog args` in namespace A to completion within `timeout`.
    pub fn run_a(&self, prog: &FsPath, args: &[&str], timeout: Duration) -> Ran {
        let all = self.ns_args(&self.ns_a, prog, args);
        run(
            &PathBuf::from("ip"),
            &all.iter().map(String::as_str).collect::<Vec<_>>(),
            timeout,
        )
    }

    /// Runs `prog args` in namespace B to completion within `timeout`.
    pub fn run_b(&self, prog: &FsPath, args: &[&str], timeout: Duration) -> Ran {
        let all = self.ns_args(&self.ns_b, prog, args);
        run(
            &PathBuf::from("ip"),
            &all.iter().map(String::as_str).collect::<Vec<_>>(),
            timeout,
        )
    }

    /// Sets `key=value` with sysctl in namespace A or B (`side` "a" or
    /// "b"); it goes with the namespace when the path ends.
    pub fn sysctl(&self, side: &str, key: &str, value: &str) {
        let ns = if side == "a" { &self.ns_a } else { &self.ns_b };
        let setting = format!("{key}={value}");
        let r = run(
            &PathBuf::from("ip"),
            &["netns", "exec", ns, "sysctl", "-q", "-w", &setting],
            Duration::from_secs(10),
        );
        assert_eq!(r.code, Some(0), "sysctl {setting} in {ns}: {}", r.stderr);
    }

    /// `ip` arguments that run `prog args` in `ns` (with the realtime
    /// prefix, if asked for; `chrt` execs the program, so its pid stays).
    fn ns_args(&self, ns: &str, prog: &FsPath, args: &[&str]) -> Vec<String> {
        let mut all: Vec<String> = ["netns", "exec", ns].iter().map(|s| s.to_string()).collect();
        all.extend(self.prefix.iter().cloned());
        all.push(prog.to_string_lossy().into_owned());
        all.extend(args.iter().map(|s| s.to_string()));
        all
    }

    fn spawn_in(&self, ns: &str, prog: &FsPath, args: &[&str]) -> Proc {
        let all = self.ns_args(ns, prog, args);
        Proc::spawn(
            &PathBuf::from("ip"),
            &all.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    }

    /// Sends `sig` to the emulator (by pid).
    pub fn signal(&mut self, sig: i32) {
        self.signalled = Some(sig);
        let _ = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status();
    }

    /// Quits (or, after [`Path::signal`], waits for the end) and returns
    /// the final counters and the exit code.
    pub fn finish(&mut self) -> (Option<Value>, Option<i32>) {
        // Closing stdin ends it too, so keep it open until a signal has
        // been seen: the final line then says why it stopped.
        let stdin = self.stdin.take();
        if let (Some(mut stdin), None) = (stdin.as_ref(), self.signalled) {
            let _ = stdin.write_all(b"quit\n");
        }
        if self.final_stats.is_none() && self.signalled != Some(9) {
            self.final_stats = self.expect(&["final"], Duration::from_secs(10));
        }
        let child = &mut self.child;
        let code = match super::wait::within(Duration::from_secs(10), || child.try_wait().ok().flatten()) {
            Some(s) => s.code(),
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                None
            }
        };
        drop(stdin);
        (self.final_stats.clone(), code)
    }
}

impl Drop for Path {
    fn drop(&mut self) {
        self.finish();
        // An emulator killed by force leaves its namespaces behind.
        for ns in [&self.ns_a, &self.ns_b] {
            if !ns.is_empty() && netns_exists(ns) {
                let _ = Command::new("ip")
                    .args(["netns", "del", ns])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

/// A counter from a stats document: `count(&s, "a2b", "ipv4.icmp", "loss")`
/// is the packets of IPv4 ICMP that A-to-B loss dropped.
pub fn count(stats: &Value, dir: &str, class: &str, fate: &str) -> u64 {
    let mut v = &stats[dir];
    for k in class.split('.') {
        v = &v[k];
    }
    v[fate]["packets"]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {dir}.{class}.{fate} in {stats}"))
}
