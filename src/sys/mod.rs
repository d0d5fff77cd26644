//! The only place with `unsafe`: thin, checked wrappers over the libc calls
//! that std and socket2 do not offer. Each function documents its failure
//! modes as `io::Result`s; callers never see raw pointers.
//!
//! Platforms: Linux has every call. On other targets a call the platform
//! lacks returns [`unsupported`]'s error, which names the feature in one
//! line, and the caller reports it or, for a pure optimisation, goes on
//! without it; nothing the user asked for is dropped silently.

//! The Unix half is the modules' own files; where Windows differs wholly
//! (processes, the terminal, interfaces, clocks) its half is in
//! `windows/`, with the same functions. Sockets and UDP keep one file, with
//! the few calls that differ side by side.

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

/// The error of a call this platform lacks, naming what is missing.
pub fn unsupported(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} is not supported on this platform"),
    )
}
