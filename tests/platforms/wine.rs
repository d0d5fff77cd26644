//! wirespeed.exe under Wine: the Windows build as server for Linux
//! `iperf3` and `iperf` clients and as client of Linux servers, both
//! dialects, TCP and UDP, `-J` parsed; iperf 2's Windows service options
//! (`-s -D` installs and starts it, `-s -R` removes it) through Wine's
//! service manager; options Windows lacks refused in one line; a server's
//! `--ui` history in SQLite at Windows' default place.
//!
//! Runs when `WIRESPEED_WINE_EXE` names a cross-built `wirespeed.exe`
//! (`.ci/run` builds one beside the earlier test tiers and moves it there
//! when done: with `WIRESPEED_WINE_EXE_WAIT=SECS` the test waits that long
//! for it, or for `<exe>.failed`, which says the build failed); skips with
//! a notice otherwise, and fails then if `WIRESPEED_REQUIRE_WINE=1`. Debian 12's Wine 8.0 lacks `ProcessPrng`,
//! which Rust's standard library imports: the test builds the stand-in in
//! `tests/wine/bcryptprimitives.c` with MinGW and puts it beside its copy
//! of the `.exe`. Everything runs in a Wine prefix of the test's own, whose
//! processes (`wineserver -k` for that prefix) are ended at the end.

use crate::common;
use crate::common::login;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(60);

/// The test's Wine set-up: a folder with the `.exe` and the shim, a prefix.
struct Wine {
    dir: PathBuf,
    wine: PathBuf,
}

impl Wine {
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("WINEPREFIX", self.dir.join("prefix").display().to_string()),
            ("WINEDEBUG", "-all".into()),
            ("WINEDLLOVERRIDES", "mscoree,mshtml=".into()),
        ]
    }

    /// Starts `wine wirespeed.exe args` in the test's folder.
    fn spawn(&self, args: &[&str]) -> Proc {
        self.spawn_env(args, &[])
    }

    /// Starts it with `extra` added to the environment (Wine hands the
    /// Unix environment to Windows programs).
    fn spawn_env(&self, args: &[&str], extra: &[(&str, &str)]) -> Proc {
        let exe = self.dir.join("wirespeed.exe").display().to_string();
        let mut a = vec![exe.as_str()];
        a.extend_from_slice(args);
        let env = self.env();
        let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        env.extend_from_slice(extra);
        Proc::spawn_env(&self.wine, &a, &env)
    }

    /// Runs `wine wirespeed.exe args` to completion.
    fn run(&self, args: &[&str]) -> Ran {
        self.run_env(args, &[])
    }

    /// Runs it with `extra` in the environment.
    fn run_env(&self, args: &[&str], extra: &[(&str, &str)]) -> Ran {
        let mut p = self.spawn_env(args, extra);
        let status = p.wait(T);
        Ran {
            code: status.and_then(|s| s.code()),
            stdout: p.out(),
            stderr: p.err(),
        }
    }
}

impl Drop for Wine {
    /// Ends every process of this test's prefix (its wineserver, the
    /// service manager and any service it started).
    fn drop(&mut self) {
        let env = self.env();
        let _ = Command::new("wineserver").arg("-k").envs(env).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn setup() -> Option<Wine> {
    let exe = match std::env::var_os("WIRESPEED_WINE_EXE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            if std::env::var("WIRESPEED_REQUIRE_WINE").as_deref() == Ok("1") {
                panic!("WIRESPEED_WINE_EXE is required (WIRESPEED_REQUIRE_WINE=1) but not set");
            }
            eprintln!("NOTICE: WIRESPEED_WINE_EXE not set; skipping the Windows build under Wine");
            return None;
        }
    };
    let wait = std::env::var("WIRESPEED_WINE_EXE_WAIT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0);
    let failed = PathBuf::from(format!("{}.failed", exe.display()));
    let ready = common::wait::within(Duration::from_secs(wait), || {
        (exe.is_file() || failed.exists()).then_some(())
    });
    assert!(!failed.exists(), "the build of {exe:?} failed: {failed:?} says so");
    assert!(
        ready.is_some() && exe.is_file(),
        "WIRESPEED_WINE_EXE={exe:?} is not a file (waited {wait} s)"
    );
    let wine = peer("wine")?;
    let dir = std::env::temp_dir().join(format!("wirespeed-wine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&exe, dir.join("wirespeed.exe")).unwrap();
    let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wine/bcryptprimitives.c");
    let built = Command::new("x86_64-w64-mingw32-gcc")
        .args(["-shared", "-O2", "-o"])
        .arg(dir.join("bcryptprimitives.dll"))
        .arg(&shim)
        .arg("-ladvapi32")
        .status()
        .expect("x86_64-w64-mingw32-gcc (Debian's gcc-mingw-w64-x86-64) is needed for the Wine tests");
    assert!(built.success(), "building the ProcessPrng stand-in failed");
    let w = Wine { dir, wine };
    // The first run makes the prefix (tens of seconds on a cold machine).
    let v = w.run(&["--version"]);
    assert_eq!(
        v.code,
        Some(0),
        "wirespeed.exe --version under Wine: {} {}",
        v.stdout,
        v.stderr
    );
    assert!(v.stdout.contains("Windows"), "system line: {}", v.stdout);
    Some(w)
}

/// A Unix path as a Windows program under Wine names it (drive Z: is /).
fn windows_path(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

fn listening(port: u16) -> bool {
    let hex = format!(":{port:04X} ");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).unwrap_or_default().lines().any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|a| format!("{a} ").ends_with(&hex))
                && l.split_whitespace().nth(3) == Some("0A")
        })
    })
}

/// The bytes an iperf3 `-J` document says were received.
fn received(doc: &serde_json::Value) -> u64 {
    doc["end"]["sum_received"]["bytes"]
        .as_u64()
        .or_else(|| doc["end"]["sum"]["bytes"].as_u64())
        .unwrap_or(0)
}

#[test]
fn the_windows_build_under_wine() {
    let Some(w) = setup() else { return };
    let (Some(iperf3), Some(iperf)) = (peer("iperf3"), peer("iperf")) else {
        return;
    };

    // wirespeed.exe as the server: Linux iperf3 and iperf clients, TCP and
    // UDP, on its one port.
    let port = free_port();
    let p = port.to_string();
    let server = w.spawn(&["-s", "-p", &p]);
    wait_listening(port);
    let r = run(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-J"], T);
    assert_eq!(r.code, Some(0), "iperf3 -c → wirespeed.exe: {}", r.stdout);
    assert!(received(&json(&r.stdout)) > 0, "{}", r.stdout);
    let r = run(&iperf3, &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-R", "-J"], T);
    assert_eq!(r.code, Some(0), "iperf3 -c -R → wirespeed.exe: {}", r.stdout);
    assert!(received(&json(&r.stdout)) > 0, "{}", r.stdout);
    let r = run(
        &iperf3,
        &["-c", "127.0.0.1", "-p", &p, "-u", "-b", "20M", "-t", "2", "-J"],
        T,
    );
    assert_eq!(r.code, Some(0), "iperf3 -c -u → wirespeed.exe: {}", r.stdout);
    let d = json(&r.stdout);
    let sum = &d["end"]["sum"];
    assert!(sum["packets"].as_u64().unwrap_or(0) > 100, "{sum}");
    assert_eq!(sum["lost_packets"].as_u64(), Some(0), "{sum}");
    let r = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-t", "2"], T);
    assert_eq!(r.code, Some(0), "iperf -c → wirespeed.exe: {} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("bits/sec"), "{}", r.stdout);
    let r = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-u", "-b", "10M", "-t", "2"], T);
    assert_eq!(
        r.code,
        Some(0),
        "iperf -c -u → wirespeed.exe: {} {}",
        r.stdout,
        r.stderr
    );
    let report = r.stdout.split("Server Report:").nth(1).unwrap_or_default().to_string();
    assert!(report.contains(" 0/"), "iperf -u server report: {}", r.stdout);
    drop(server);

    // wirespeed.exe as the client of Linux servers.
    let port = free_port();
    let p = port.to_string();
    let s3 = iperf3_server(&iperf3, port, &[]);
    for extra in [&[][..], &["-R"][..], &["-u", "-b", "20M"][..]] {
        let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "2", "-J"];
        args.extend_from_slice(extra);
        let r = w.run(&args);
        assert_eq!(
            r.code,
            Some(0),
            "wirespeed.exe {args:?} → iperf3 -s: {} {}",
            r.stdout,
            r.stderr
        );
        let d = json(&r.stdout);
        assert!(d.get("error").is_none(), "{}", r.stdout);
        assert!(received(&d) > 0, "{}", r.stdout);
    }
    // Many flows on mio's Windows backend: the workers forced for -P 4.
    let r = w.run_env(
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-P", "4", "-J"],
        &[("WIRESPEED_MUX", "always")],
    );
    assert_eq!(r.code, Some(0), "-P 4 on the workers: {} {}", r.stdout, r.stderr);
    let d = json(&r.stdout);
    assert_eq!(d["end"]["streams"].as_array().map(Vec::len), Some(4), "{}", r.stdout);
    assert!(received(&d) > 0, "{}", r.stdout);
    // --logfile: the whole output in the file, none on stdout.
    let log = w.dir.join("client.log");
    let r = w.run(&["-c", "127.0.0.1", "-p", &p, "-t", "1", "--logfile", &windows_path(&log)]);
    assert_eq!(r.code, Some(0), "--logfile: {} {}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("iperf Done."), "log file: {text:?}");
    assert!(!r.stdout.contains("iperf Done."), "{}", r.stdout);
    drop(s3);

    // RSA authentication (AWS-LC built for Windows) against iperf3 3.12,
    // which wants PKCS#1 v1.5 padding.
    let login = login::Login::new("wine");
    let port = free_port();
    let p = port.to_string();
    let sargs = login.server_args();
    let sargs: Vec<&str> = sargs.iter().map(String::as_str).collect();
    let _s3a = iperf3_server(&iperf3, port, &sargs);
    let public = windows_path(Path::new(&login.path("public-key")));
    let r = w.run_env(
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "-J",
            "--rsa-public-key-path",
            &public,
            "--username",
            &login.user,
            "--use-pkcs1-padding",
        ],
        &[("IPERF3_PASSWORD", login.password.as_str())],
    );
    assert_eq!(r.code, Some(0), "authenticated client: {} {}", r.stdout, r.stderr);
    assert!(received(&json(&r.stdout)) > 0, "{}", r.stdout);
    let r = w.run_env(
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "--rsa-public-key-path",
            &public,
            "--username",
            &login.user,
            "--use-pkcs1-padding",
        ],
        &[("IPERF3_PASSWORD", "wrong")],
    );
    assert_eq!(r.code, Some(1), "a wrong password: {} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("authorization failed"), "{}", r.stderr);

    let port = free_port();
    let p = port.to_string();
    let _s2 = Proc::spawn(&iperf, &["-s", "-p", &p]);
    wait_listening(port);
    let r = w.run(&["--iperf2", "-c", "127.0.0.1", "-p", &p, "-t", "2"]);
    assert_eq!(
        r.code,
        Some(0),
        "wirespeed.exe --iperf2 → iperf -s: {} {}",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.contains("bits/sec"), "{}", r.stdout);
    // iperf 2's -o: the report goes to the file.
    let out = w.dir.join("iperf2.txt");
    let r = w.run(&[
        "--iperf2",
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "-t",
        "1",
        "-o",
        &windows_path(&out),
    ]);
    assert_eq!(r.code, Some(0), "-o: {} {}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(text.contains("bits/sec"), "-o file: {text:?}");
    let port = free_port();
    let p = port.to_string();
    let _s2u = Proc::spawn(&iperf, &["-s", "-u", "-p", &p]);
    wait_bound_udp(port);
    let r = w.run(&["--iperf2", "-c", "127.0.0.1", "-p", &p, "-u", "-b", "10M", "-t", "2"]);
    assert_eq!(
        r.code,
        Some(0),
        "wirespeed.exe --iperf2 -u → iperf -s -u: {} {}",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.contains("Server Report"), "{}", r.stdout);

    // Options Windows lacks: one line, exit 1, before any traffic.
    let r = w.run(&["-c", "127.0.0.1", "-p", &p, "--skip-rx-copy"]);
    assert_eq!(r.code, Some(1), "{} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("not supported on this platform"), "{}", r.stderr);
    let r = w.run(&["-s", "-D", "-p", &free_port().to_string()]);
    assert_eq!(r.code, Some(1), "iperf3 dialect -D: {} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("daemon"), "{}", r.stderr);

    // iperf 2's service: -s -D installs and starts it, a client tests
    // against it, -s -R stops and removes it. Wine ends services when the
    // last ordinary Windows process of the prefix exits, so a foreground
    // wirespeed.exe stays up meanwhile (real Windows needs no such thing).
    let keeper_port = free_port();
    let _keeper = w.spawn(&["-s", "-p", &keeper_port.to_string()]);
    wait_listening(keeper_port);
    let port = free_port();
    let p = port.to_string();
    let r = w.run(&["--iperf2", "-s", "-D", "-p", &p]);
    assert_eq!(r.code, Some(0), "-s -D: {} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("IPerf Service started."), "{}", r.stdout);
    wait_listening(port);
    let r = run(&iperf, &["-c", "127.0.0.1", "-p", &p, "-t", "2"], T);
    assert_eq!(r.code, Some(0), "iperf -c → the service: {} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("bits/sec"), "{}", r.stdout);
    let r = w.run(&["--iperf2", "-s", "-R"]);
    assert_eq!(r.code, Some(0), "-s -R: {} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("IPerf Service stopped."), "{}", r.stdout);
    assert!(r.stdout.contains("IPerf Service removed."), "{}", r.stdout);
    assert!(!listening(port), "the removed service still listens");
    let r = w.run(&["--iperf2", "-s", "-R"]);
    assert_eq!(r.code, Some(1), "-s -R with no service: {} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("not installed"), "{}", r.stderr);

    // A server's --ui keeps its history in SQLite at Windows' default
    // place (%LOCALAPPDATA%\wirespeed\history.db), and a new server on
    // the same file shows it.
    let ui_history = |ui: u16| {
        let (_, page) = common::http_get(ui, "/", &[]);
        let at = page.find("\"token\":\"").expect("token in page") + 9;
        common::http_get(ui, &format!("/api/runs?token={}", &page[at..at + 32]), &[]).1
    };
    let (port, ui) = (free_port(), free_port());
    let (p, listen) = (port.to_string(), format!("127.0.0.1:{ui}"));
    let server = w.spawn(&["-s", "-p", &p, "--ui", &listen]);
    wait_listening(port);
    wait_listening(ui);
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1"], T);
    assert_eq!(r.code, Some(0), "a test of the watched server: {}", r.stderr);
    common::wait::text(
        "a done run in the history",
        T,
        || ui_history(ui),
        |t| t.contains("\"done\""),
    );
    drop(server);
    let server = w.spawn(&["-s", "-p", &p, "--ui", &listen]);
    wait_listening(ui);
    let runs = ui_history(ui);
    assert!(
        runs.contains("TCP iperf3 test from 127.0.0.1") && runs.contains("\"done\""),
        "{runs}"
    );
    drop(server);
    let users = w.dir.join("prefix/drive_c/users");
    let found = std::fs::read_dir(&users)
        .into_iter()
        .flatten()
        .flatten()
        .any(|u| u.path().join("AppData/Local/wirespeed/history.db").is_file());
    assert!(found, "no history.db under {}", users.display());
}
