//! TUN devices (Linux): attaching a descriptor to a layer-3 virtual
//! interface, and waiting for it to become readable with a nanosecond
//! deadline. The path emulator (`examples/pathemu.rs`) forwards packets
//! between two of them; nothing in the library uses them.
//!
//! The descriptor is opened non-blocking, so a read with nothing queued
//! returns `WouldBlock` and the caller sleeps in [`wait_readable`] instead.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

/// Options for [`open`] beyond IFF_TUN | IFF_NO_PI.
#[derive(Debug, Clone, Copy, Default)]
pub struct TunOptions {
    /// IFF_NAPI: the kernel hands written packets to the stack through a
    /// NAPI context (and GRO) instead of straight into the receive path.
    pub napi: bool,
}

/// Creates the TUN device `name` (or attaches to it, if a persistent one
/// of that name exists and this process may use it) and returns its
/// descriptor, non-blocking. Each read returns one IP packet with no
/// prefix; each write injects one. The device lives while the descriptor
/// is open (it is not made persistent).
///
/// Fails with the kernel's error: `ENOENT` when `/dev/net/tun` is absent,
/// `EPERM` without CAP_NET_ADMIN, `EINVAL` for a name longer than 15 bytes.
pub fn open(name: &str, opts: TunOptions) -> io::Result<File> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['\0', '/', ' ']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?} (1 to 15 bytes, no '/' or space)"),
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    // SAFETY: ifreq is plain data (a name array and a union of integers and
    // addresses); all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    let mut flags = libc::IFF_TUN | libc::IFF_NO_PI;
    if opts.napi {
        flags |= libc::IFF_NAPI;
    }
    req.ifr_ifru.ifru_flags = flags as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `req` is, alive
    // and exclusively borrowed for the call; the name is NUL-terminated
    // because it is shorter than IFNAMSIZ and the rest is zero.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Waits until `fd` is readable or `timeout` has passed (`None`: no
/// limit), with the precision of a high-resolution timer rather than
/// poll's milliseconds (set the thread's timer slack low for it to show).
/// Returns whether the descriptor is readable; an interrupted wait
/// returns `Ok(false)` so the caller re-checks its clock.
pub fn wait_readable(fd: &impl AsFd, timeout: Option<Duration>) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as _,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one live pollfd and its count; `tsp` is null or points at a
    // timespec that outlives the call; a null signal mask leaves the mask
    // unchanged.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    if rc > 0 && pfd.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
        return Err(io::Error::other(format!("poll reports revents {:#x}", pfd.revents)));
    }
    Ok(rc > 0 && pfd.revents & libc::POLLIN != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_are_refused_before_the_kernel_sees_them() {
        for bad in ["", "a-name-longer-than-15", "a/b", "a b"] {
            let e = open(bad, TunOptions::default()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn a_device_lives_while_its_descriptor_is_open() {
        let name = format!("wst{}", std::process::id());
        let f = match open(&name, TunOptions::default()) {
            Ok(f) => f,
            // Not root, or no TUN support here: nothing to check.
            Err(e) if matches!(e.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound) => return,
            Err(e) => panic!("open {name}: {e}"),
        };
        let sys = std::path::Path::new("/sys/class/net").join(&name);
        assert!(sys.exists());
        // Never brought up, so nothing is queued: a read does not block.
        let mut buf = [0u8; 64];
        let e = std::io::Read::read(&mut &f, &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        drop(f);
        assert!(!sys.exists());
    }

    #[test]
    fn a_wait_times_out_on_an_idle_descriptor() {
        let (r, _w) = std::os::unix::net::UnixStream::pair().unwrap();
        let t0 = std::time::Instant::now();
        assert!(!wait_readable(&r, Some(Duration::from_micros(2_000))).unwrap());
        assert!(t0.elapsed() >= Duration::from_micros(2_000));
    }

    #[test]
    fn a_wait_sees_pending_data() {
        use std::io::Write;
        let (r, mut w) = std::os::unix::net::UnixStream::pair().unwrap();
        w.write_all(b"x").unwrap();
        assert!(wait_readable(&r, Some(Duration::from_secs(1))).unwrap());
    }
}
