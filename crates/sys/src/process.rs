//! Process-level calls: CPU usage, affinity, daemonising, resource limits,
//! the `uname` line.

use std::io;
use std::mem;
use std::time::Duration;

/// User and system CPU time consumed by this process so far.
pub fn cpu_times() -> (Duration, Duration) {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { mem::zeroed() };
    // SAFETY: we pass a valid pointer to a live rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.clamp(0, 999_999) as u32) * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Pins the calling thread to one CPU (Linux only).
#[cfg(not(target_os = "linux"))]
pub fn pin_current_thread(_cpu: usize) -> io::Result<()> {
    Err(super::unsupported("CPU affinity (-A)"))
}

/// The CPUs the calling thread may run on (Linux only).
#[cfg(not(target_os = "linux"))]
pub fn current_affinity() -> io::Result<Vec<usize>> {
    Err(super::unsupported("CPU affinity"))
}

/// The CPUs this host has online (Linux only), to say which exist when a
/// pin fails.
#[cfg(not(target_os = "linux"))]
pub fn cpus_online() -> Option<Vec<usize>> {
    None
}

/// The CPUs this host has online, from the kernel's list (`0-3,6`).
#[cfg(target_os = "linux")]
pub fn cpus_online() -> Option<Vec<usize>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
        if b < a || b >= libc::CPU_SETSIZE as usize {
            return None;
        }
        cpus.extend(a..=b);
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// Pins the calling thread to one CPU.
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so CPU_SET stays in bounds.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 = calling thread; we pass the set and its exact size.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The CPUs the calling thread may run on.
#[cfg(target_os = "linux")]
pub fn current_affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: pid 0 = calling thread; the kernel fills at most the size we pass.
    let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: every index is below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|c| unsafe { libc::CPU_ISSET(*c, &set) })
        .collect())
}

/// The detached daemon's end of the pipe its starting process waits on:
/// say [`Detached::ready`] once serving (listening, pidfile written), or
/// [`Detached::failed`] with the reason. Dropped unsaid, the starter reports
/// that the daemon did not start.
pub struct Detached {
    fd: std::os::fd::OwnedFd,
}

impl Detached {
    /// Tells the starter the daemon is up; it exits 0.
    pub fn ready(self) {
        self.say(b"1");
    }

    /// Tells the starter why the daemon could not start; it prints `why`
    /// on its stderr and exits 1.
    pub fn failed(self, why: &str) {
        let mut m = b"0".to_vec();
        m.extend_from_slice(why.as_bytes());
        self.say(&m);
    }

    fn say(self, msg: &[u8]) {
        use std::io::Write;
        let mut f = std::fs::File::from(self.fd);
        let _ = f.write_all(msg);
    }
}

/// Detaches from the terminal: forks twice (the daemon is not a session
/// leader, so it can never get a controlling terminal back), starts a new
/// session, and points stdin, stdout and stderr at /dev/null. The working
/// directory is kept, so relative paths (pidfile, log) stay meaningful.
///
/// The calling process does not return: it waits until the daemon says it
/// is ready (exit 0) or failed, or exits without a word (exit 1, with the
/// daemon's reason on stderr). Must run before any thread is started: only
/// the calling thread survives a fork.
pub fn detach() -> io::Result<Detached> {
    use std::os::fd::OwnedFd;
    let (rd, wr) = io::pipe()?;
    let (rd, wr) = (OwnedFd::from(rd), OwnedFd::from(wr));
    // SAFETY: the caller guarantees no other thread exists, so the child
    // inherits no lock held by a vanished thread.
    match unsafe { libc::fork() } {
        -1 => return Err(io::Error::last_os_error()),
        0 => {}
        _ => {
            drop(wr);
            wait_for_daemon(rd);
        }
    }
    drop(rd);
    // SAFETY: plain syscall in the (single-threaded) child.
    if unsafe { libc::setsid() } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; the intermediate child only exits.
    match unsafe { libc::fork() } {
        -1 => return Err(io::Error::last_os_error()),
        0 => {}
        // SAFETY: _exit ends the intermediate child at once, running no
        // destructors or atexit handlers that belong to the daemon.
        _ => unsafe { libc::_exit(0) },
    }
    let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null")?;
    for target in [libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: both descriptors are open; dup2 replaces `target` atomically.
        if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), target) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(Detached { fd: wr })
}

/// The starting process: relays the daemon's word and exits.
fn wait_for_daemon(rd: std::os::fd::OwnedFd) -> ! {
    use std::io::{Read, Write};
    let mut msg = Vec::new();
    let _ = std::fs::File::from(rd).read_to_end(&mut msg);
    let _ = io::stdout().flush();
    let code = match msg.split_first() {
        Some((b'1', _)) => 0,
        Some((_, why)) if !why.is_empty() => {
            let mut e = io::stderr().lock();
            let _ = e.write_all(why);
            if !why.ends_with(b"\n") {
                let _ = e.write_all(b"\n");
            }
            let _ = e.flush();
            1
        }
        _ => {
            let _ = writeln!(io::stderr(), "the daemon exited before it was ready");
            1
        }
    };
    // SAFETY: ends this process at once; the daemon owns everything that
    // matters now (sockets, files), and nothing here needs cleaning up.
    unsafe { libc::_exit(code) }
}

/// The (soft, hard) limits on open files.
pub fn nofile_limits() -> io::Result<(u64, u64)> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to a live rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // rlim_t is unsigned on Linux and macOS, signed on FreeBSD.
    #[allow(clippy::unnecessary_cast)]
    Ok((rl.rlim_cur as u64, rl.rlim_max as u64))
}

/// How many descriptors this process has open (entries of /proc/self/fd).
pub fn open_fds() -> io::Result<u64> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count() as u64)
}

/// Raises the soft limit on open files to the hard limit; returns the new
/// soft limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to a live rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // An unlimited hard limit still stops at the kernel's fs.nr_open.
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<libc::rlim_t>().ok())
        .unwrap_or(rl.rlim_max);
    let want = rl.rlim_max.min(nr_open);
    if rl.rlim_cur < want {
        let new = libc::rlimit {
            rlim_cur: want,
            rlim_max: rl.rlim_max,
        };
        // SAFETY: valid pointer to a live rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            #[allow(clippy::unnecessary_cast)]
            return Ok(new.rlim_cur as u64);
        }
    }
    #[allow(clippy::unnecessary_cast)]
    Ok(rl.rlim_cur as u64)
}

/// `uname` fields joined as iperf3 prints its system line:
/// sysname nodename release version machine.
pub fn system_info() -> String {
    // SAFETY: utsname is plain data; zeroed is valid.
    let mut u: libc::utsname = unsafe { mem::zeroed() };
    // SAFETY: valid pointer to a live utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f.iter().take_while(|c| **c != 0).map(|c| c.to_ne_bytes()[0]).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {} {} {}",
        field(&u.sysname),
        field(&u.nodename),
        field(&u.release),
        field(&u.version),
        field(&u.machine)
    )
}

/// Asks the child process `pid` to stop as Ctrl-C would (SIGINT), so it
/// ends its test and prints its summary. The caller owns the child and
/// has not reaped it, so the pid is still that child's.
pub fn interrupt_child(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill(2) takes any pid and signal number and only reports
    // errors; a positive pid names one process, never a group.
    if pid <= 0 || unsafe { libc::kill(pid, libc::SIGINT) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether process `pid` exists (it may belong to another user). A pid
/// that does not fit the system's type names no process.
pub fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks that a
    // positive pid names a process, and reports through errno.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(alive(std::process::id()));
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        assert!(!alive(pid));
        assert!(!alive(0) && !alive(u32::MAX));
    }

    #[test]
    fn system_info_has_five_fields() {
        let s = system_info();
        assert!(s.starts_with("Linux "), "{s}");
        assert!(s.split(' ').count() >= 5);
    }

    #[test]
    fn cpu_times_advance() {
        let (u0, s0) = cpu_times();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let (u1, s1) = cpu_times();
        assert!(u1 + s1 >= u0 + s0);
    }

    #[test]
    fn open_files_are_counted_within_the_limits() {
        // Other tests open and close files meanwhile: only bounds hold.
        let _f = std::fs::File::open("/proc/self/status").unwrap();
        let open = open_fds().unwrap();
        let (soft, hard) = nofile_limits().unwrap();
        assert!(open >= 4 && open < soft && soft <= hard, "{open} {soft} {hard}");
    }

    #[test]
    fn affinity_round_trip() {
        let cpus = current_affinity().unwrap();
        assert!(!cpus.is_empty());
        let first = cpus[0];
        std::thread::spawn(move || {
            pin_current_thread(first).unwrap();
            assert_eq!(current_affinity().unwrap(), vec![first]);
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(1 << 20).is_err());
    }
}
