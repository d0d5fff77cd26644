//! Network interfaces: which interface holds a local address (iperf 2
//! prints it as `local 127.0.0.1%lo` in enhanced reports).

use std::ffi::CStr;
use std::net::IpAddr;

/// The name of the interface that has `ip` assigned, if any.
pub fn interface_of(ip: IpAddr) -> Option<String> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    let mut found = None;
    each_address(&mut |name, addr| {
        if addr == ip {
            found = Some(name.to_string());
            return false;
        }
        true
    });
    found
}

/// Every address assigned to an interface of this host, in the kernel's
/// order (a listener on every address can be reached at these).
pub fn addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    each_address(&mut |_, addr| {
        out.push(addr);
        true
    });
    out
}

/// Calls `f(interface, address)` for each IP address of each interface,
/// until it returns false.
fn each_address(f: &mut dyn FnMut(&str, IpAddr) -> bool) {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `head` on success; we free
    // it with freeifaddrs below and never use it afterwards.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return;
    }
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive
        // until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points at a sockaddr whose family field says
        // which larger struct it is; we only read the matching type.
        let addr = unsafe {
            match (*ifa.ifa_addr).sa_family as i32 {
                libc::AF_INET => {
                    let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    Some(IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes()))
                }
                libc::AF_INET6 => {
                    let sin6 = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    Some(IpAddr::from(sin6.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        let Some(addr) = addr else { continue };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
        if !f(&name.to_string_lossy(), addr) {
            break;
        }
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
}

/// The index of the network interface called `name` (for joining a
/// multicast group on it).
pub fn index_of(name: &str) -> std::io::Result<u32> {
    let c = std::ffi::CString::new(name).map_err(|_| std::io::Error::from_raw_os_error(libc::ENODEV))?;
    // SAFETY: `c` is a live NUL-terminated string for the duration of the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(i)
    }
}

/// Asks for round-robin realtime scheduling at the highest priority for the
/// calling thread (threads it starts afterwards inherit it).
pub fn set_realtime() -> std::io::Result<()> {
    set_realtime_priority(i32::MAX)
}

/// Asks for round-robin realtime scheduling at `priority` (clamped to the
/// system's range) for the calling thread: ahead of every normal thread,
/// behind realtime threads of higher priority (such as the kernel's own).
pub fn set_realtime_priority(priority: i32) -> std::io::Result<()> {
    // SAFETY: plain calls with no pointers except a live sched_param,
    // which is plain data (zeroed is valid; some systems add fields).
    let rc = unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        let (lo, hi) = (
            libc::sched_get_priority_min(libc::SCHED_RR),
            libc::sched_get_priority_max(libc::SCHED_RR),
        );
        param.sched_priority = priority.clamp(lo, hi.max(lo));
        libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_RR, &param)
    };
    if rc != 0 {
        Err(std::io::Error::from_raw_os_error(rc))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_address_is_on_lo() {
        assert_eq!(interface_of("127.0.0.1".parse().unwrap()).as_deref(), Some("lo"));
        assert_eq!(interface_of("::ffff:127.0.0.1".parse().unwrap()).as_deref(), Some("lo"));
        assert_eq!(interface_of("192.0.2.123".parse().unwrap()), None);
    }

    #[test]
    fn interface_indexes() {
        assert!(index_of("lo").unwrap() > 0);
        assert!(index_of("no-such-if0").is_err());
        assert!(index_of("a\0b").is_err());
    }
}
