//! Process-level calls on Windows: CPU usage, affinity, the system line.
//! There is no fork: `-D` as iperf3's daemon is refused here (iperf 2's
//! Windows service is the service module's), and there is no per-process
//! descriptor limit to raise.

use std::io;
use std::time::Duration;

use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetCurrentThread, GetProcessAffinityMask, GetProcessTimes, SetThreadAffinityMask,
};

fn filetime(t: FILETIME) -> Duration {
    let ticks = ((t.dwHighDateTime as u64) << 32) | t.dwLowDateTime as u64;
    Duration::from_nanos(ticks.saturating_mul(100))
}

/// User and system CPU time consumed by this process so far.
pub fn cpu_times() -> (Duration, Duration) {
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: the pseudo-handle of this process and four live FILETIMEs.
    let ok = unsafe { GetProcessTimes(GetCurrentProcess(), &mut created, &mut exited, &mut kernel, &mut user) };
    if ok == 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    (filetime(user), filetime(kernel))
}

/// Pins the calling thread to one CPU (of the first 64).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= usize::BITS as usize {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: the pseudo-handle of this thread; no pointers.
    let old = unsafe { SetThreadAffinityMask(GetCurrentThread(), 1usize << cpu) };
    if old == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The CPUs this process may run on (of the first 64).
pub fn current_affinity() -> io::Result<Vec<usize>> {
    let (mut process, mut system) = (0usize, 0usize);
    // SAFETY: the pseudo-handle of this process and two live usizes.
    let ok = unsafe { GetProcessAffinityMask(GetCurrentProcess(), &mut process, &mut system) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..usize::BITS as usize).filter(|c| process & (1 << c) != 0).collect())
}

/// The CPUs the system has (of the first 64), to say which exist when a
/// pin fails.
pub fn cpus_online() -> Option<Vec<usize>> {
    let (mut process, mut system) = (0usize, 0usize);
    // SAFETY: the pseudo-handle of this process and two live usizes.
    let ok = unsafe { GetProcessAffinityMask(GetCurrentProcess(), &mut process, &mut system) };
    (ok != 0 && system != 0).then(|| (0..usize::BITS as usize).filter(|c| system & (1 << c) != 0).collect())
}

/// A detached daemon: none can exist on Windows.
pub enum Detached {}

impl Detached {
    /// Never called: no daemon exists.
    pub fn ready(self) {
        match self {}
    }

    /// Never called: no daemon exists.
    pub fn failed(self, _why: &str) {
        match self {}
    }
}

/// Running in the background as iperf3's `-D` does: Windows has no fork.
pub fn detach() -> io::Result<Detached> {
    Err(super::unsupported(
        "running as a daemon (-D); start wirespeed in the background or as a service",
    ))
}

/// The (soft, hard) limits on open files: Windows sets none for sockets.
pub fn nofile_limits() -> io::Result<(u64, u64)> {
    Ok((u64::MAX, u64::MAX))
}

/// How many descriptors this process has open: not counted on Windows.
pub fn open_fds() -> io::Result<u64> {
    Err(super::unsupported("counting open handles"))
}

/// Nothing to raise on Windows; the limit is the (absent) soft limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    Ok(u64::MAX)
}

/// The system line iperf3 prints from `uname`: on Windows the system's
/// name, the computer's name and the architecture.
pub fn system_info() -> String {
    let host = std::env::var("COMPUTERNAME").unwrap_or_default();
    format!("Windows {host} {}", std::env::consts::ARCH)
}

/// Windows has no SIGINT for another console's process: the caller ends
/// the child instead.
pub fn interrupt_child(_pid: u32) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Whether process `pid` exists: not checked on Windows (always true), so
/// callers rely on their own signs of life there.
pub fn alive(_pid: u32) -> bool {
    true
}
