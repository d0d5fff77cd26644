//! `-D`: a daemon that is ready when its starter exits, one that cannot
//! start, iperf 2's, and the systemd unit.

use super::*;

/// Whether SIGHUP is pending for process `pid` (its or its threads' set).
fn hup_pending(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .any(|mask| mask & 1 != 0)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ws-hostile-{name}-{}", free_port()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn wait_gone(pid: u32) {
    wait::exited(pid, wait::LONG);
}

/// Ends a daemon by the pid in its pidfile (it is not our child).
struct Daemon(u32);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg(self.0.to_string()).status();
        wait_gone(self.0);
    }
}

#[test]
fn a_daemon_is_ready_when_its_starter_exits_and_reopens_its_log_on_sighup() {
    let dir = scratch("daemon");
    let (pidfile, log) = (dir.join("ws.pid"), dir.join("ws.log"));
    let port = free_port();
    let p = port.to_string();
    let r = run(
        &wirespeed(),
        &[
            "-s",
            "-D",
            "-p",
            &p,
            "-I",
            pidfile.to_str().unwrap(),
            "--logfile",
            log.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The starter exits only once the daemon serves: no polling needed.
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let daemon = Daemon(pid);
    assert_ne!(pid, std::process::id());
    // Detached: its own session, not a session leader, no terminal.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    let (sid, tty) = (fields[3].parse::<u32>().unwrap(), fields[4]);
    assert_ne!(sid, pid, "not a session leader");
    assert_eq!(tty, "0", "no controlling terminal");
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-n", "1M"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Rotate: rename the log, HUP the daemon, the next test's lines land
    // in a fresh file of the old name.
    let rotated = dir.join("ws.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status();
    // Delivered: no longer pending.
    wait::condition("SIGHUP to be delivered", wait::LONG, || !hup_pending(pid));
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "SIGHUP does not end it"
    );
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-n", "1M", "-R"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    wait::file_has(&log, "sender", Duration::from_secs(5));
    let old = std::fs::read_to_string(&rotated).unwrap();
    let new = std::fs::read_to_string(&log).unwrap();
    assert!(old.contains("Server listening") && old.contains("receiver"), "{old}");
    assert_eq!(old.matches("Accepted connection").count(), 1, "{old}");
    assert_eq!(new.matches("Accepted connection").count(), 1, "{new}");
    assert!(new.contains("sender"), "{new}");
    drop(daemon);
    assert!(!pidfile.exists(), "pidfile removed at exit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_daemon_that_cannot_start_fails_its_starter() {
    let dir = scratch("daemon-fail");
    let pidfile = dir.join("no-such-dir").join("ws.pid");
    let port = free_port();
    let r = run(
        &wirespeed(),
        &["-s", "-D", "-p", &port.to_string(), "-I", pidfile.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    // One line that names the file it could not write.
    assert_eq!(
        r.stderr,
        format!(
            "wirespeed: error - unable to write PID file {}: No such file or directory\n",
            pidfile.display()
        )
    );
    // Nothing is left listening.
    wait::tcp_closed(port, wait::LONG);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    // Without -D, the same one line (iperf3 prints no "exiting" here).
    let r = run(
        &wirespeed(),
        &["-s", "-p", &port.to_string(), "-I", pidfile.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "wirespeed: error - unable to write PID file {}: No such file or directory\n",
            pidfile.display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_iperf2_daemon_detaches_and_serves() {
    let Some(iperf) = peer("iperf") else { return };
    let dir = scratch("daemon2");
    let log = dir.join("ws2.log");
    let port = free_port();
    let r = run(
        &wirespeed(),
        &[
            "--iperf2",
            "-s",
            "-e",
            "-D",
            "-p",
            &port.to_string(),
            "-o",
            log.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The banner names the daemon's pid: the process that serves, after
    // the fork, so that this test (and an operator) can stop it by pid.
    let read_log = |until: &str| wait::file_has(&log, until, Duration::from_secs(5));
    let text = read_log("with pid");
    let pid: u32 = text
        .lines()
        .find_map(|l| l.split("with pid ").nth(1))
        .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|v| v.parse().ok())
        .expect("pid in the banner");
    let _daemon = Daemon(pid);
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&cmdline).contains(&port.to_string()),
        "the banner's pid {pid} is not the serving daemon"
    );
    let c = run(&iperf, &["-c", "127.0.0.1", "-p", &port.to_string(), "-n", "1M"], T);
    assert_eq!(c.code, Some(0), "{}", c.stderr);
    let text = read_log("Bytes");
    assert!(text.contains("Server listening"), "{text}");
    assert!(text.contains("Bytes"), "{text}");
    drop(_daemon);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_systemd_unit_is_valid() {
    let unit = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/systemd/wirespeed.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    // Structure: the three sections, a server ExecStart, restart policy.
    for needle in [
        "[Unit]",
        "[Service]",
        "[Install]",
        "ExecStart=/usr/bin/wirespeed -s",
        "Restart=",
        "WantedBy=",
    ] {
        assert!(text.contains(needle), "unit lacks {needle}");
    }
    // Every option on the ExecStart line is one the server accepts.
    let exec = text.lines().find_map(|l| l.strip_prefix("ExecStart=")).unwrap();
    let args: Vec<String> = exec.split_whitespace().skip(1).map(String::from).collect();
    assert!(
        matches!(
            wirespeed::cli::iperf3::parse_args(&args),
            Ok(wirespeed::cli::iperf3::Command::Run(..))
        ),
        "{exec}"
    );
    // systemd's own check, with the binary under test in place of /usr/bin.
    let Some(analyze) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("systemd-analyze"))
            .find(|p| p.is_file())
    }) else {
        eprintln!("NOTICE: systemd-analyze not installed; the unit is checked structurally only");
        return;
    };
    let dir = scratch("unit");
    let copy = dir.join("wirespeed.service");
    std::fs::write(&copy, text.replace("/usr/bin/wirespeed", wirespeed().to_str().unwrap())).unwrap();
    let r = run(&analyze, &["verify", copy.to_str().unwrap()], T);
    let complaints: Vec<&str> = r
        .stderr
        .lines()
        .chain(r.stdout.lines())
        .filter(|l| l.contains("wirespeed.service"))
        .collect();
    assert!(
        complaints.is_empty(),
        "systemd-analyze verify:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}
