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

/// Pins the calling thread to one CPU.
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

/// Detaches from the terminal (fork, setsid, stdio to /dev/null). Must run
/// before any thread is started: only the calling thread survives a fork.
pub fn daemonize() -> io::Result<()> {
    // SAFETY: daemon(3) forks; the caller guarantees no other threads exist
    // yet, so no lock can be held by a thread that vanishes in the child.
    // nochdir=1 keeps relative paths (pidfile, logfile) meaningful.
    let rc = unsafe { libc::daemon(1, 0) };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
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
    Ok((rl.rlim_cur, rl.rlim_max))
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
            return Ok(new.rlim_cur);
        }
    }
    Ok(rl.rlim_cur)
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
        let bytes: Vec<u8> = f.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

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
