//! Running a case: fresh ports, a server that listens before its client
//! starts, and stopped (by pid) once it is done with the test.

use super::*;

// ---------------------------------------------------------------------------
// Running a case.

/// How long a client may run.
pub(super) const CLIENT_LIMIT: Duration = Duration::from_secs(30);
/// How long a server may take to listen, or to exit once told to.
pub(super) const SERVER_LIMIT: Duration = Duration::from_secs(10);
/// How long a server's output must stay unchanged before it is stopped.
pub(super) const QUIET: Duration = Duration::from_millis(400);
/// The same for a server with no banner that marks the end of a test.
pub(super) const QUIET_IPERF2: Duration = Duration::from_millis(1500);
/// The longest wait for that quiet.
pub(super) const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// What one run of a case printed.
#[derive(Debug, Default, Clone)]
pub(super) struct Captured {
    pub(super) client_out: String,
    pub(super) client_err: String,
    pub(super) client_exit: String,
    pub(super) server: Option<(String, String, String)>,
}

/// Ports handed out in this process, so that concurrent cases never share one.
pub(super) static PORTS: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

pub(super) fn fresh_port() -> u16 {
    loop {
        let p = free_port();
        let mut g = PORTS.lock().unwrap();
        if g.get_or_insert_with(HashSet::new).insert(p) {
            return p;
        }
    }
}

pub(super) struct Ports {
    pub(super) port: u16,
    pub(super) lport: u16,
    pub(super) closed: u16,
}

pub(super) fn fill(template: &str, p: &Ports) -> Vec<String> {
    template
        .split_whitespace()
        .map(|w| {
            w.replace("{port}", &p.port.to_string())
                .replace("{lport}", &p.lport.to_string())
                .replace("{closed}", &p.closed.to_string())
        })
        .collect()
}

/// The program for `prog` (the binary under test for wirespeed).
pub(super) fn program(prog: Prog, bin: &Path) -> Option<PathBuf> {
    match prog {
        Prog::Ws => Some(bin.to_path_buf()),
        Prog::Iperf3 => which("iperf3"),
        Prog::Iperf => which("iperf"),
    }
}

/// A program on PATH (quietly; `peer()` reports missing peers up front).
pub(super) fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether something is bound to `port`: a TCP listener, or (`udp`) any
/// UDP socket (read from /proc, so no probe disturbs the server).
pub(super) fn bound(port: u16, udp: bool) -> bool {
    let files: &[&str] = if udp {
        &["/proc/net/udp", "/proc/net/udp6"]
    } else {
        &["/proc/net/tcp", "/proc/net/tcp6"]
    };
    let tail = format!(":{port:04X}");
    files.iter().any(|f| {
        std::fs::read_to_string(f).unwrap_or_default().lines().any(|l| {
            let mut w = l.split_whitespace();
            let local = w.nth(1).unwrap_or("");
            let state = w.nth(1).unwrap_or("");
            local.ends_with(&tail) && (udp || state == "0A")
        })
    })
}

pub(super) fn exit_text(s: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match s {
        None => "did not exit in time (killed)".to_string(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => c.to_string(),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "unknown".to_string(),
        },
    }
}

/// How many sockets process `pid` holds open.
pub(super) fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:")))
                .count()
        })
        .unwrap_or(0)
}

/// Waits (at most `SETTLE_LIMIT`) until a server is done with the test: it
/// holds no more sockets than it did idle (`idle`), `marker` (if given)
/// was printed `count` times, and then its output stayed unchanged for
/// `quiet`. Returns whether that happened in time.
pub(super) fn settle(p: &mut Proc, idle: usize, marker: Option<(&str, usize)>, quiet: Duration) -> bool {
    let mut last = (usize::MAX, usize::MAX);
    let mut since = Instant::now();
    wait::within(SETTLE_LIMIT, || {
        if !p.running() {
            return Some(());
        }
        let (o, e) = (p.out(), p.err());
        let now = (o.len(), e.len());
        let done = sockets(p.pid()) <= idle && marker.is_none_or(|(m, n)| o.matches(m).count() >= n);
        if now != last || !done {
            last = now;
            since = Instant::now();
        }
        (since.elapsed() >= quiet).then_some(())
    })
    .is_some()
}

/// Runs a case once. `Err` means the setup failed in a way worth a retry
/// with other ports (a port taken meanwhile, a server that did not start).
pub(super) fn run_once(c: &Case, bin: &Path) -> Result<Captured, String> {
    let ports = Ports {
        port: fresh_port(),
        lport: fresh_port(),
        closed: fresh_port(),
    };
    let mut server = None;
    if let Some((prog, template)) = c.server {
        let exe = program(prog, bin).ok_or("server program missing")?;
        let args = fill(template, &ports);
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let mut p = Proc::spawn(&exe, &a);
        let iperf2_dialect = prog == Prog::Iperf || a.contains(&"--iperf2");
        let udp_only = iperf2_dialect && a.contains(&"-u");
        let listening = wait::within(SERVER_LIMIT, || {
            if bound(ports.port, udp_only) {
                Some(true)
            } else {
                (!p.running()).then_some(false)
            }
        });
        if listening != Some(true) {
            p.signal(15);
            p.wait(SERVER_LIMIT);
            return Err(format!("server did not listen:\n{}{}", p.out(), p.err()));
        }
        if prog == Prog::Ws && !iperf2_dialect {
            // The iperf3-dialect server also takes iperf 2 UDP clients on the
            // same port; let that socket be bound too (a no-op otherwise).
            wait::within(Duration::from_secs(2), || bound(ports.port, true).then_some(()));
        }
        // Done setting up (every thread waits for a client) before its idle
        // sockets are counted.
        wait::blocked(&p, SERVER_LIMIT);
        let idle = sockets(p.pid());
        server = Some((p, prog, a.contains(&"-1"), idle));
    }
    let (cprog, ctemplate) = c.client;
    let exe = program(cprog, bin).ok_or("client program missing")?;
    let args = fill(ctemplate, &ports);
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let ran = run(&exe, &a, CLIENT_LIMIT);
    let mut cap = Captured {
        client_out: ran.stdout,
        client_err: ran.stderr,
        client_exit: match ran.code {
            Some(c) => c.to_string(),
            None => "did not exit in time (killed)".to_string(),
        },
        server: None,
    };
    if let Some((mut p, prog, one_off, idle)) = server {
        let status = if one_off {
            p.wait(SERVER_LIMIT)
        } else {
            // An iperf3 server announces it is ready for the next test once
            // it has printed everything about this one.
            // (Not after an iperf 2 client, which it serves without a new banner.)
            let sargs = c.server.map(|s| s.1).unwrap_or("");
            let iperf3_server = prog == Prog::Iperf3 || (prog == Prog::Ws && !sargs.contains("--iperf2"));
            let iperf3_client =
                c.client.0 == Prog::Iperf3 || (c.client.0 == Prog::Ws && !c.client.1.contains("--iperf2"));
            let iperf3_banner = iperf3_server && iperf3_client && !sargs.contains("-J");
            let marker = (iperf3_banner && ran.code == Some(0)).then_some(("Server listening on", 2));
            // Without the banner, only quiet tells that the last report is
            // out: longer than a `-i 1` interval and than the stalls a
            // loaded machine shows.
            let quiet = if marker.is_some() { QUIET } else { QUIET_IPERF2 };
            if !settle(&mut p, idle, marker, quiet) {
                eprintln!("golden {}: the server did not settle in {SETTLE_LIMIT:?}", c.name);
            }
            p.signal(15);
            p.wait(SERVER_LIMIT)
        };
        cap.server = Some((p.out(), p.err(), exit_text(status)));
    }
    let all = format!(
        "{}{}{}",
        cap.client_out,
        cap.client_err,
        cap.server
            .as_ref()
            .map(|s| format!("{}{}", s.0, s.1))
            .unwrap_or_default()
    );
    if all.contains("Address already in use") {
        return Err(format!("a port was taken meanwhile:\n{all}"));
    }
    Ok(cap)
}

pub(super) fn run_case(c: &Case, bin: &Path) -> Captured {
    let mut last = String::new();
    for _ in 0..3 {
        match run_once(c, bin) {
            Ok(cap) => return cap,
            Err(e) => {
                eprintln!("golden {}: retrying: {e}", c.name);
                last = e;
            }
        }
    }
    Captured {
        client_out: format!("SETUP FAILED THREE TIMES: {last}"),
        ..Captured::default()
    }
}
