//! `--live`: a status line on a terminal, nothing at all otherwise.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{run, wirespeed};

const T: Duration = Duration::from_secs(60);

#[test]
fn live_is_silent_when_output_is_piped() {
    let r = run(&wirespeed(), &["--loopback", "-t", "1", "--live"], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stdout.contains('\r') && !r.stdout.contains('\x1b'), "{:?}", r.stdout);
    assert!(!r.stdout.contains("[live]"));
    assert!(
        r.stdout.contains(" sender\n") && r.stdout.ends_with("iperf Done.\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn live_draws_a_status_line_on_a_terminal_and_erases_it() {
    // script(1) runs the client on a pseudo-terminal.
    let script = PathBuf::from("/usr/bin/script");
    if !script.exists() {
        eprintln!("NOTICE: script(1) not installed; skipping the terminal test");
        return;
    }
    let cmd = format!("{} --loopback -t 3 --live", wirespeed().display());
    let r = run(&script, &["-qefc", &cmd, "/dev/null"], T);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let out = r.stdout;
    assert!(out.contains("[live]"), "{out:?}");
    assert!(out.contains("now ") && out.contains(" avg "), "{out:?}");
    assert!(out.contains("/3 s"), "elapsed over the duration: {out:?}");
    // Erased before each printed line, and for good at the end.
    assert!(out.contains("\r\x1b[2K"));
    let tail = &out[out.rfind("[live]").unwrap()..];
    assert!(tail.contains("\r\x1b[2K"), "the last status line is erased: {tail:?}");
    assert!(out.trim_end().ends_with("iperf Done."), "{out:?}");
}

#[test]
fn iperf2_live_draws_the_same_status_line() {
    let script = PathBuf::from("/usr/bin/script");
    if !script.exists() {
        eprintln!("NOTICE: script(1) not installed; skipping the terminal test");
        return;
    }
    let port = common::free_port();
    let server = common::iperf2_server(common::Iperf2::Ours, port, &[]).unwrap();
    let cmd = format!(
        "{} --iperf2 -c 127.0.0.1 -p {port} -t 3 -i 1 --live",
        wirespeed().display()
    );
    let r = run(&script, &["-qefc", &cmd, "/dev/null"], T);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let out = r.stdout;
    assert!(out.contains("[live]") && out.contains("/3 s"), "{out:?}");
    let tail = &out[out.rfind("[live]").unwrap()..];
    assert!(tail.contains("\r\x1b[2K"), "the last status line is erased: {tail:?}");
    // iperf 2's own lines are all there, between the status lines.
    assert!(out.contains("0.0000-3.0"), "{out:?}");
    drop(server);
}
