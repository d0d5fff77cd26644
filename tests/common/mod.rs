//! Helpers shared by the integration tests: bounded child processes (ended
//! by pid), free ports, and the real iperf peers.
#![allow(dead_code)]

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
        let mut child = Command::new(prog)
            .args(args)
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
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                // Let the reader threads catch the tail of the output: until
                // both pipes reach end of file (a loaded machine can take a
                // while), or 2 s if something else holds them open.
                let until = Instant::now() + Duration::from_secs(2);
                while self.drained.load(std::sync::atomic::Ordering::SeqCst) < 2 && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return Some(s);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
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

/// Waits until something listens on 127.0.0.1:port (by reading /proc, so
/// no probe connection disturbs the server).
pub fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let hex = format!(":{port:04X} ");
    while Instant::now() < deadline {
        for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
            if let Ok(s) = std::fs::read_to_string(f) {
                // State 0A = LISTEN.
                if s.lines()
                    .any(|l| l.contains(&hex) && l.split_whitespace().nth(3) == Some("0A"))
                {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on port {port}");
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
