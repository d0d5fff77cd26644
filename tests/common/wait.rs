//! Waiting on events, not on the clock. Every wait here has a deadline,
//! looks again every [`POLL`], and fails naming what it waited for (and
//! what it last saw), so a test never sleeps a fixed time hoping that
//! something happened meanwhile.
//!
//! The only sleeps of the tests' synchronisation are the one in [`within`]
//! (between two looks) and the one in [`pause`] (for the few tests whose
//! subject is time itself: a pacing, an outage of a given length).

use std::fmt::Display;
use std::path::Path;
use std::time::{Duration, Instant};

use super::Proc;

/// Between two looks.
pub const POLL: Duration = Duration::from_millis(20);

/// The usual deadline: ample for a loaded 2-core machine, short enough
/// that a wait that cannot succeed fails the test soon.
pub const LONG: Duration = Duration::from_secs(10);

/// `look` until it gives a value, or `None` once `timeout` has passed. For
/// the waits whose expiry is itself a result; [`until`] otherwise.
pub fn within<T>(timeout: Duration, mut look: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = look() {
            return Some(v);
        }
        let left = deadline.checked_duration_since(Instant::now())?;
        std::thread::sleep(POLL.min(left));
    }
}

/// `look` until it gives a value; panics naming `what` once `timeout` has
/// passed.
pub fn until<T>(what: impl Display, timeout: Duration, look: impl FnMut() -> Option<T>) -> T {
    within(timeout, look).unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}"))
}

/// Waits until `cond` holds; panics naming `what` once `timeout` has
/// passed.
pub fn condition(what: impl Display, timeout: Duration, mut cond: impl FnMut() -> bool) {
    until(what, timeout, || cond().then_some(()))
}

/// Reads `read` until `test` accepts the text, and returns that text;
/// panics naming `what` with the text last read once `timeout` has passed.
pub fn text(
    what: impl Display,
    timeout: Duration,
    mut read: impl FnMut() -> String,
    test: impl Fn(&str) -> bool,
) -> String {
    let mut last = String::new();
    let found = within(timeout, || {
        last = read();
        test(&last).then(|| last.clone())
    });
    found.unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}; last read:\n{last}"))
}

/// Waits until a child's stdout (everything printed so far, not only the
/// lines [`Proc::wait_for_line`] has not consumed yet) contains `needle`;
/// returns that stdout.
pub fn stdout_has(p: &Proc, needle: &str, timeout: Duration) -> String {
    stdout_has_n(p, needle, 1, timeout)
}

/// Waits until a child's stdout contains `needle` at least `n` times.
pub fn stdout_has_n(p: &Proc, needle: &str, n: usize, timeout: Duration) -> String {
    text(
        format_args!("{n} x {needle:?} on stdout of pid {}", p.pid()),
        timeout,
        || p.out(),
        |t| t.matches(needle).count() >= n,
    )
}

/// Waits until a child's stderr contains `needle`; returns that stderr.
pub fn stderr_has(p: &Proc, needle: &str, timeout: Duration) -> String {
    text(
        format_args!("{needle:?} on stderr of pid {}", p.pid()),
        timeout,
        || p.err(),
        |t| t.contains(needle),
    )
}

/// Whether a child's stdout or stderr shows `needle` within `timeout` (for
/// tests that report the absence themselves).
pub fn shows(p: &Proc, needle: &str, timeout: Duration) -> bool {
    within(timeout, || {
        (p.out().contains(needle) || p.err().contains(needle)).then_some(())
    })
    .is_some()
}

/// Waits until `path` exists.
pub fn file_exists(path: &Path, timeout: Duration) {
    condition(format_args!("{} to exist", path.display()), timeout, || path.exists())
}

/// Waits until the file at `path` contains `needle`; returns its text.
pub fn file_has(path: &Path, needle: &str, timeout: Duration) -> String {
    text(
        format_args!("{needle:?} in {}", path.display()),
        timeout,
        || std::fs::read_to_string(path).unwrap_or_default(),
        |t| t.contains(needle),
    )
}

/// Whether something listens on TCP `port` (any local address), read from
/// /proc so that no probe connection disturbs the listener.
pub fn tcp_listens(port: u16) -> bool {
    listens_in("/proc/net", port, false)
}

/// Whether a UDP socket is bound to `port` (any local address), from /proc.
pub fn udp_bound(port: u16) -> bool {
    listens_in("/proc/net", port, true)
}

/// Whether a TCP listener (or, `udp`, any UDP socket) has local `port` in
/// the tables under `net` (`/proc/net`, or `/proc/PID/net` for the network
/// namespace of process PID).
pub fn listens_in(net: &str, port: u16, udp: bool) -> bool {
    let tail = format!(":{port:04X}");
    let files = if udp { ["udp", "udp6"] } else { ["tcp", "tcp6"] };
    files.iter().any(|f| {
        std::fs::read_to_string(format!("{net}/{f}")).is_ok_and(|s| {
            s.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                // State 0A = LISTEN.
                cols.len() > 3 && cols[1].ends_with(&tail) && (udp || cols[3] == "0A")
            })
        })
    })
}

/// Waits until child `p` listens on TCP `port` (or, `udp`, has a UDP
/// socket bound to it) in its own network namespace.
pub fn child_listening(p: &Proc, port: u16, udp: bool, timeout: Duration) {
    let net = format!("/proc/{}/net", p.pid());
    let what = if udp { "a UDP socket" } else { "a TCP listener" };
    condition(
        format_args!("{what} on port {port} of pid {}", p.pid()),
        timeout,
        || listens_in(&net, port, udp),
    )
}

/// Waits until something listens on TCP `port`.
pub fn tcp_listening(port: u16, timeout: Duration) {
    condition(format_args!("a TCP listener on port {port}"), timeout, || {
        tcp_listens(port)
    })
}

/// Waits until nothing listens on TCP `port` any more.
pub fn tcp_closed(port: u16, timeout: Duration) {
    condition(format_args!("no TCP listener on port {port}"), timeout, || {
        !tcp_listens(port)
    })
}

/// Waits until a UDP socket is bound to `port`.
pub fn udp_listening(port: u16, timeout: Duration) {
    condition(format_args!("a UDP socket on port {port}"), timeout, || udp_bound(port))
}

/// Whether process `pid` is gone (reaped, or never there).
pub fn pid_gone(pid: u32) -> bool {
    // A zombie still has its /proc entry: its state is Z.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}

/// Waits until process `pid` has exited.
pub fn exited(pid: u32, timeout: Duration) {
    condition(format_args!("pid {pid} to exit"), timeout, || pid_gone(pid))
}

/// Whether every thread of process `pid` sleeps (state S: blocked in a
/// system call, such as a server waiting for its next client).
pub fn all_waiting(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let mut any = false;
    for t in tasks.flatten() {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        match stat.rsplit_once(") ") {
            Some((_, rest)) if rest.starts_with('S') => any = true,
            // Gone meanwhile (a thread that ended): not in the way.
            None => {}
            Some(_) => return false,
        }
    }
    any
}

/// Waits until every thread of a child waits in a system call: it is done
/// setting up (or with what it was doing) and blocks for what comes next.
pub fn blocked(p: &Proc, timeout: Duration) {
    let pid = p.pid();
    condition(format_args!("every thread of pid {pid} to block"), timeout, || {
        all_waiting(pid)
    })
}

/// Sleeps `d` where time itself is what a test is about (a pacing, an
/// outage of a given length, a span to measure over) — never to let
/// something else happen meanwhile.
pub fn pause(d: Duration) {
    std::thread::sleep(d);
}
