//! The only place with `unsafe`: thin, checked wrappers over the libc calls
//! that std and socket2 do not offer. Each function documents its failure
//! modes as `io::Result`s; callers never see raw pointers.
//!
//! Platforms: Linux has every call. On other targets a call the platform
//! lacks returns [`unsupported`]'s error, which names the feature in one
//! line, and the caller reports it or, for a pure optimisation, goes on
//! without it; nothing the user asked for is dropped silently.
//!
//! The Unix half is the modules' own files; where Windows differs wholly
//! (processes, the terminal, interfaces, clocks) its half is in
//! `windows/`, with the same functions. Sockets and UDP keep one file, with
//! the few calls that differ side by side.
//!
//! This is its own crate so that the compiler keeps the fence: the tool
//! above it forbids `unsafe` outright.
#![warn(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod mem;
#[cfg(unix)]
pub mod netif;
#[cfg(windows)]
#[path = "windows/netif.rs"]
pub mod netif;
#[cfg(unix)]
pub mod process;
#[cfg(windows)]
#[path = "windows/process.rs"]
pub mod process;
#[cfg(windows)]
#[path = "windows/service.rs"]
pub mod service;
pub mod socket;
#[cfg(unix)]
pub mod term;
#[cfg(windows)]
#[path = "windows/term.rs"]
pub mod term;
#[cfg(unix)]
pub mod time;
#[cfg(windows)]
#[path = "windows/time.rs"]
pub mod time;
#[cfg(target_os = "linux")]
pub mod tun;
pub mod udp;

use socket2::SockRef;

/// A socket's raw handle: a file descriptor on Unix, a `SOCKET` on Windows.
#[cfg(unix)]
pub type RawSock = std::os::fd::RawFd;
/// A socket's raw handle: a file descriptor on Unix, a `SOCKET` on Windows.
#[cfg(windows)]
pub type RawSock = std::os::windows::io::RawSocket;

/// Anything that owns a socket (std's, socket2's, mio's): its raw handle,
/// and a borrowed socket2 view for the calls socket2 has.
pub trait AsSock {
    /// The raw handle, for identifying the socket while its owner lives.
    fn raw_sock(&self) -> RawSock;
    /// The number iperf prints for the socket (`[  5]`): the descriptor on
    /// Unix, the handle's low bits on Windows.
    fn sock_num(&self) -> i32 {
        #[cfg(unix)]
        return self.raw_sock();
        #[cfg(windows)]
        return self.raw_sock() as i32;
    }
    /// A socket2 view of the socket.
    fn sock_ref(&self) -> SockRef<'_>;
}

#[cfg(unix)]
impl<T: std::os::fd::AsFd> AsSock for T {
    fn raw_sock(&self) -> RawSock {
        use std::os::fd::AsRawFd;
        self.as_fd().as_raw_fd()
    }
    fn sock_ref(&self) -> SockRef<'_> {
        SockRef::from(self)
    }
}

#[cfg(windows)]
impl<T: std::os::windows::io::AsSocket> AsSock for T {
    fn raw_sock(&self) -> RawSock {
        use std::os::windows::io::AsRawSocket;
        self.as_socket().as_raw_socket()
    }
    fn sock_ref(&self) -> SockRef<'_> {
        SockRef::from(self)
    }
}

/// Seconds since the epoch, now (the same on every platform).
pub fn epoch_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Fills `buf` from the system's random source: `/dev/urandom`, or
/// Windows' preferred generator.
pub fn os_random(buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::io::Read;
        std::fs::File::open("/dev/urandom")?.read_exact(buf)
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::Security::Cryptography::{BCRYPT_USE_SYSTEM_PREFERRED_RNG, BCryptGenRandom};
        for chunk in buf.chunks_mut(u32::MAX as usize) {
            // SAFETY: `chunk` is a live writable buffer of the length passed;
            // a null algorithm handle with the system-preferred flag is allowed.
            let status = unsafe {
                BCryptGenRandom(
                    std::ptr::null_mut(),
                    chunk.as_mut_ptr(),
                    chunk.len() as u32,
                    BCRYPT_USE_SYSTEM_PREFERRED_RNG,
                )
            };
            if status != 0 {
                return Err(std::io::Error::other(format!("BCryptGenRandom failed: {status:#x}")));
            }
        }
        Ok(())
    }
}

/// Quotes one argument the way the Windows C runtime splits a command
/// line (for the service's command line).
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn quote_windows_arg(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '\t', '"']) {
        return arg.to_string();
    }
    let mut out = String::from('"');
    let mut slashes = 0;
    for c in arg.chars() {
        match c {
            '\\' => slashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', slashes * 2 + 1));
                out.push('"');
                slashes = 0;
            }
            _ => {
                out.extend(std::iter::repeat_n('\\', slashes));
                slashes = 0;
                out.push(c);
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', slashes * 2));
    out.push('"');
    out
}

/// Options (long names, of either dialect) whose feature this platform
/// lacks, with the feature in words: the command line refuses them at
/// once rather than failing mid-test or doing nothing.
#[cfg(target_os = "linux")]
const LACKING: &[(&str, &str)] = &[];

#[cfg(not(target_os = "linux"))]
const LACKING: &[(&str, &str)] = &[
    ("bind-dev", "binding to a device"),
    ("flowlabel", "IPv6 flow labels"),
    ("zerocopy", "zero-copy sending"),
    ("dont-fragment", "setting don't-fragment"),
    ("skip-rx-copy", "receiving without copying"),
    ("fq-rate", "socket pacing"),
    ("snd-timeout", "TCP_USER_TIMEOUT"),
    ("mptcp", "MPTCP"),
    ("gsro", "UDP GSO/GRO"),
    ("tcp-quickack", "TCP_QUICKACK"),
    ("tcp-write-prefetch", "TCP_NOTSENT_LOWAT"),
    ("tcp-tx-delay", "TCP_TX_DELAY"),
    ("send-delay", "TCP_TX_DELAY"),
    ("fq-rate-step", "socket pacing"),
    ("fq-rate-step-interval", "socket pacing"),
    ("tcp-rx-window-clamp", "TCP_WINDOW_CLAMP"),
    ("near-congestion", "TCP_INFO round-trip times"),
    ("tap-dev", "tap devices"),
    ("tun-dev", "tun devices"),
    #[cfg(not(target_os = "freebsd"))]
    ("congestion", "setting the congestion control algorithm"),
    #[cfg(not(target_os = "freebsd"))]
    ("linux-congestion", "setting the congestion control algorithm"),
    #[cfg(not(target_os = "freebsd"))]
    ("tcp-congestion", "setting the congestion control algorithm"),
    #[cfg(not(target_os = "freebsd"))]
    ("tcp-cca", "setting the congestion control algorithm"),
    #[cfg(unix)]
    ("affinity", "CPU affinity"),
    #[cfg(windows)]
    ("local-only", "SO_DONTROUTE"),
    #[cfg(windows)]
    ("set-mss", "setting the TCP maximum segment size"),
    #[cfg(windows)]
    ("mss", "setting the TCP maximum segment size"),
];

/// What this platform lacks for the option spelled `long` (without
/// dashes), if anything.
pub fn lacks(long: &str) -> Option<&'static str> {
    LACKING.iter().find(|(o, _)| *o == long).map(|(_, what)| *what)
}

/// The error of a call this platform lacks, naming what is missing.
pub fn unsupported(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} is not supported on this platform"),
    )
}

#[cfg(test)]
mod tests {
    use super::quote_windows_arg as quote;

    #[test]
    fn arguments_are_quoted_as_the_windows_crt_splits_them() {
        assert_eq!(quote("-s"), "-s");
        assert_eq!(quote("C:\\Program Files\\w.exe"), "\"C:\\Program Files\\w.exe\"");
        assert_eq!(quote("a\"b"), "\"a\\\"b\"");
        assert_eq!(quote("dir x\\"), "\"dir x\\\\\"");
        assert_eq!(quote("a\\\"b"), "\"a\\\\\\\"b\"");
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn the_random_source_gives_bytes() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        super::os_random(&mut a).unwrap();
        super::os_random(&mut b).unwrap();
        assert_ne!(a, b);
    }
}
