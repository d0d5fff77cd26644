//! Network interfaces on Windows: by index only.

use std::net::IpAddr;

/// The interface holding `ip`: not looked up on Windows (iperf 2's
/// `%interface` suffix is left off, as when the address has none).
pub fn interface_of(_ip: IpAddr) -> Option<String> {
    None
}

/// The addresses of this host's interfaces: not listed on Windows (a
/// listener on every address is then shown as such).
pub fn addresses() -> Vec<IpAddr> {
    Vec::new()
}

/// The index of the interface called `name`: Windows names interfaces by
/// number for scoped addresses and multicast, so a number is taken as is.
pub fn index_of(name: &str) -> std::io::Result<u32> {
    name.parse::<u32>()
        .map_err(|_| super::unsupported("naming an interface other than by its number"))
}

/// The highest thread priority (time-critical), Windows' nearest to
/// round-robin realtime scheduling; threads started afterwards do not
/// inherit it.
pub fn set_realtime() -> std::io::Result<()> {
    use windows_sys::Win32::System::Threading::{GetCurrentThread, SetThreadPriority, THREAD_PRIORITY_TIME_CRITICAL};
    // SAFETY: GetCurrentThread returns a pseudo-handle valid for the call;
    // no pointers are passed.
    let ok = unsafe { SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_TIME_CRITICAL) };
    if ok == 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}
