//! Helpers shared by the integration tests: bounded child processes (ended
//! by pid), free ports, and the real iperf peers.
#![allow(dead_code)]

pub mod login;
pub mod netns;
pub mod pathemu;
pub mod wait;
pub mod webdriver;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The wirespeed binary under test.
pub fn wirespeed() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wirespeed"))
}

/// Whether this process runs as root (namespaces, TUN devices, qdiscs).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// Tests that build namespaces or an emulated path take turns within a
/// test binary: at most two at once (`WIRESPEED_PATHS_AT_ONCE` sets
/// another number; 1 runs them one by one), as each path's emulator and
/// endpoints load the CPUs. Each path has namespaces, devices and
/// addresses of its own, so two never meet. The thread that holds a turn
/// may take it again (a test that starts a second path before its first
/// is gone).
///
/// A test whose subject is time on its path takes [`path_turn_alone`]:
/// no other path runs beside it.
pub struct PathTurn(());

/// Who holds a turn: the thread, how many times, whether alone.
static TURN: Mutex<Vec<(std::thread::ThreadId, usize, bool)>> = Mutex::new(Vec::new());
static TURN_FREED: std::sync::Condvar = std::sync::Condvar::new();

fn paths_at_once() -> usize {
    std::env::var("WIRESPEED_PATHS_AT_ONCE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(2)
}

/// Waits for this thread's turn to build a path (see [`PathTurn`]).
pub fn path_turn() -> PathTurn {
    take_turn(false)
}

/// Waits until no other path runs, and keeps it so until dropped.
pub fn path_turn_alone() -> PathTurn {
    take_turn(true)
}

fn take_turn(alone: bool) -> PathTurn {
    let me = std::thread::current().id();
    let at_once = if alone { 1 } else { paths_at_once() };
    let mut t = TURN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(held) = t.iter_mut().find(|(id, _, _)| *id == me) {
            held.1 += 1;
            break;
        }
        let someone_alone = t.iter().any(|(_, _, a)| *a);
        if !someone_alone && t.len() < at_once {
            t.push((me, 1, alone));
            break;
        }
        t = TURN_FREED.wait(t).unwrap_or_else(|e| e.into_inner());
    }
    PathTurn(())
}

impl Drop for PathTurn {
    fn drop(&mut self) {
        let me = std::thread::current().id();
        let mut t = TURN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = t.iter().position(|(id, _, _)| *id == me) {
            t[i].1 = t[i].1.saturating_sub(1);
            if t[i].1 == 0 {
                t.remove(i);
                TURN_FREED.notify_all();
            }
        }
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = l.local_addr().unwrap().port();
    drop(l);
    p
}

/// A real peer program (`iperf3`, `iperf`), or `None` with a visible notice.
/// With `WIRESPEED_REQUIRE_PEERS=1` (CI) a missing peer fails the test.
pub fn peer(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var("WIRESPEED_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("{name} is required (WIRESPEED_REQUIRE_PEERS=1) but not installed");
        }
        eprintln!("NOTICE: {name} not installed; skipping interop test");
    }
    found
}

/// A child process that is killed (by pid) and reaped when dropped, and
/// whose output is collected in the background.
pub struct Proc {
    child: Child,
    pub stdout: Arc<Mutex<String>>,
    pub stderr: Arc<Mutex<String>>,
    lines: mpsc::Receiver<String>,
    /// Output readers that reached end of file (0, 1 or 2).
    drained: Arc<std::sync::atomic::AtomicUsize>,
}

impl Proc {
    /// Starts `prog args`.
    pub fn spawn(prog: &PathBuf, args: &[&str]) -> Proc {
        Proc::spawn_env(prog, args, &[])
    }

    /// Starts `prog args` with `env` added to the environment.
    pub fn spawn_env(prog: &PathBuf, args: &[&str], env: &[(&str, &str)]) -> Proc {
        let mut child = Command::new(prog)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {prog:?}: {e}"));
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let drained = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let out = child.stdout.take().unwrap();
        let so = stdout.clone();
        let d1 = drained.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                so.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx.send(line);
            }
            d1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        let mut err = child.stderr.take().unwrap();
        let se = stderr.clone();
        let d2 = drained.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                se.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            d2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        Proc {
            child,
            stdout,
            stderr,
            lines: rx,
            drained,
        }
    }

    /// Waits until a stdout line contains `needle`.
    pub fn wait_for_line(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal to this process (by pid, with kill(1)).
    pub fn signal(&self, sig: i32) {
        let _ = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status();
    }

    /// Waits for exit up to `timeout`; kills on expiry.
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let Some(s) = wait::within(timeout, || self.child.try_wait().ok().flatten()) else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return None;
        };
        // Let the reader threads catch the tail of the output: until both
        // pipes reach end of file (a loaded machine can take a while), or
        // 2 s if something else holds them open.
        let drained = &self.drained;
        wait::within(Duration::from_secs(2), || {
            (drained.load(std::sync::atomic::Ordering::SeqCst) >= 2).then_some(())
        });
        Some(s)
    }

    /// Everything printed to stdout so far.
    pub fn out(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// Everything printed to stderr so far.
    pub fn err(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A finished command.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `prog args` to completion within `timeout` (killed otherwise).
pub fn run(prog: &PathBuf, args: &[&str], timeout: Duration) -> Ran {
    let mut p = Proc::spawn(prog, args);
    let status = p.wait(timeout);
    Ran {
        code: status.and_then(|s| s.code()),
        stdout: p.out(),
        stderr: p.err(),
    }
}

/// Starts `wirespeed -s -p <port> extra...` and waits until it listens.
pub fn wirespeed_server(port: u16, extra: &[&str]) -> Proc {
    let p = port.to_string();
    let mut args = vec!["-s", "-p", &p];
    args.extend_from_slice(extra);
    let proc_ = Proc::spawn(&wirespeed(), &args);
    if !extra.contains(&"-J") {
        assert!(
            proc_.wait_for_line("Server listening", Duration::from_secs(10)),
            "server did not start"
        );
    } else {
        wait_listening(port);
    }
    proc_
}

/// Waits until an iperf3-dialect server (ours without `-J`, or the real
/// iperf3 with `--forceflush`) is done with its `n`th test: it printed
/// everything about it and the banner for the next one.
pub fn wait_test_done(srv: &Proc, n: usize) {
    wait::stdout_has_n(srv, "Server listening on", n + 1, wait::LONG);
}

/// Starts `iperf3 -s -p <port>` and waits until it listens.
pub fn iperf3_server(iperf3: &PathBuf, port: u16, extra: &[&str]) -> Proc {
    let p = port.to_string();
    // iperf3 block-buffers a piped stdout; --forceflush makes its lines
    // visible as they are printed.
    let mut args = vec!["-s", "-p", &p, "--forceflush"];
    args.extend_from_slice(extra);
    let proc_ = Proc::spawn(iperf3, &args);
    wait_listening(port);
    proc_
}

/// Waits until something listens on TCP `port` (by reading /proc, so no
/// probe connection disturbs the server).
pub fn wait_listening(port: u16) {
    wait::tcp_listening(port, wait::LONG)
}

/// A newer iperf3 than the installed one (e.g. 3.21, built from its
/// sources): the path in `WIRESPEED_IPERF3_NEW`, or `None` with a visible
/// notice (CI has only Debian's 3.12).
pub fn newer_iperf3() -> Option<PathBuf> {
    match std::env::var_os("WIRESPEED_IPERF3_NEW") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "WIRESPEED_IPERF3_NEW={p:?} is not a file");
            Some(p)
        }
        _ => {
            eprintln!("NOTICE: WIRESPEED_IPERF3_NEW not set; skipping the newer iperf3's part");
            None
        }
    }
}

/// The JSON documents printed one after another (none for empty output);
/// panics on anything else.
pub fn json_docs(s: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(s)
        .into_iter::<serde_json::Value>()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("not JSON documents ({e}):\n{s}"))
}

/// Parses a JSON document printed by a client.
pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{s}"))
}

/// All key paths of a JSON value (array indices collapsed to `[]`).
pub fn key_paths(v: &serde_json::Value) -> std::collections::BTreeSet<String> {
    fn walk(v: &serde_json::Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let p = format!("{prefix}.{k}");
                    out.insert(p.clone());
                    walk(x, &p, out);
                }
            }
            serde_json::Value::Array(a) => {
                for x in a {
                    walk(x, &format!("{prefix}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(v, "", &mut out);
    out
}

/// Which program plays a role in an iperf 2 test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iperf2 {
    /// The real iperf 2.x.
    Real,
    /// `wirespeed --iperf2`.
    Ours,
}

impl Iperf2 {
    /// Program and leading arguments, or `None` (with a notice) when the
    /// real iperf is missing.
    pub fn command(self) -> Option<(PathBuf, Vec<String>)> {
        match self {
            Iperf2::Real => peer("iperf").map(|p| (p, Vec::new())),
            Iperf2::Ours => Some((wirespeed(), vec!["--iperf2".to_string()])),
        }
    }
}

/// Starts an iperf 2 server (`-s -p port extra...`) and waits until it
/// listens. `None` when the real iperf is asked for and missing.
pub fn iperf2_server(who: Iperf2, port: u16, extra: &[&str]) -> Option<Proc> {
    let (prog, mut args) = who.command()?;
    args.extend(["-s".to_string(), "-p".to_string(), port.to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let p = Proc::spawn(&prog, &a);
    if extra.contains(&"-u") {
        wait_bound_udp(port);
    } else {
        wait_listening(port);
    }
    Some(p)
}

/// Waits until a UDP socket is bound to `port` (read from /proc).
pub fn wait_bound_udp(port: u16) {
    wait::udp_listening(port, wait::LONG)
}

/// Runs an iperf 2 client (`-c 127.0.0.1 -p port args...`) to completion.
pub fn iperf2_client(who: Iperf2, port: u16, args: &str, timeout: Duration) -> Option<Ran> {
    let (prog, mut a) = who.command()?;
    a.extend(["-c", "127.0.0.1", "-p"].iter().map(|s| s.to_string()));
    a.push(port.to_string());
    a.extend(args.split_whitespace().map(String::from));
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    Some(run(&prog, &a, timeout))
}

/// Stops a server with SIGTERM (it flushes and prints what it has) and
/// returns its stdout.
pub fn stop_server(mut p: Proc) -> String {
    p.signal(15);
    p.wait(Duration::from_secs(10));
    p.out()
}

/// An in-process wirespeed server on 127.0.0.1 (ephemeral port), stopped
/// and joined when dropped.
pub struct InprocServer {
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    join: Option<std::thread::JoinHandle<Result<(), wirespeed::error::Error>>>,
}

impl InprocServer {
    pub fn start() -> InprocServer {
        use wirespeed::config::{Role, TestConfig};
        let mut scfg = TestConfig {
            role: Role::Server,
            port: 0,
            ..TestConfig::default()
        };
        scfg.net.bind = Some("127.0.0.1".into());
        let server =
            wirespeed::server::Server::bind(&scfg, wirespeed::report::Output::discard(), wirespeed::dialect::wings())
                .unwrap();
        let port = server.port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let s2 = stop.clone();
        let join = Some(std::thread::spawn(move || server.run(s2)));
        InprocServer { port, stop, join }
    }

    /// Runs a client with iperf3 `args` against this server; every event it emitted.
    pub fn client(&self, args: &str) -> Result<Vec<wirespeed::events::Event>, String> {
        use wirespeed::cli::iperf3::{Command, parse_args};
        let argv: Vec<String> = format!("-c 127.0.0.1 -p {} {args}", self.port)
            .split_whitespace()
            .map(String::from)
            .collect();
        let Command::Run(cfg, _) = parse_args(&argv).map_err(|e| e.line())? else {
            return Err("not a test".into());
        };
        let rec = wirespeed::report::Recorder::default();
        let mut reporter = wirespeed::report::Reporter::new();
        reporter.add(Box::new(rec.clone()));
        let sig = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let r = wirespeed::dialect::iperf3::client::run(&cfg, "127.0.0.1", self.port, &mut reporter, &sig);
        r.map_err(|e| e.line())?;
        let events = rec.events.lock().unwrap().clone();
        Ok(events)
    }
}

impl Drop for InprocServer {
    fn drop(&mut self) {
        self.stop.store(15, std::sync::atomic::Ordering::Relaxed);
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

/// The final summary among a client's events.
pub fn summary_of(events: &[wirespeed::events::Event]) -> &wirespeed::events::Summary {
    events
        .iter()
        .find_map(|e| match e {
            wirespeed::events::Event::End(s) => Some(&**s),
            _ => None,
        })
        .expect("no summary event")
}

/// Status line and body of `GET path` with `headers` from 127.0.0.1:`port`
/// (HTTP/1.1, the server closing after its answer), within 30 s.
pub fn http_get(port: u16, path: &str, headers: &[&str]) -> (String, String) {
    let (head, body) = http_get_head(port, path, headers);
    (head.lines().next().unwrap_or("").to_string(), body)
}

/// The head (status line and headers) and body of `GET path` with
/// `headers`, from 127.0.0.1:`port`.
pub fn http_get_head(port: u16, path: &str, headers: &[&str]) -> (String, String) {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_string(), body.to_string())
}

/// Seconds since the epoch, now.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A self-signed certificate for `localhost` and 127.0.0.1 (EC P-256, two
/// days), made by openssl as `cert.pem` and `key.pem` in `dir`: their
/// paths, or None when openssl cannot make one.
#[allow(dead_code)]
pub fn self_signed_cert(dir: &std::path::Path) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
        .args(["-days", "2", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    made.is_ok_and(|s| s.success()).then_some((cert, key))
}
