//! The only place with `unsafe`: thin, checked wrappers over the libc calls
//! that std and socket2 do not offer. Each function documents its failure
//! modes as `io::Result`s; callers never see raw pointers.
//!
//! Platforms: Linux has every call. On other targets a call the platform
//! lacks returns [`unsupported`]'s error, which names the feature in one
//! line, and the caller reports it or, for a pure optimisation, goes on
//! without it; nothing the user asked for is dropped silently.

pub mod mem;
pub mod netif;
pub mod process;
pub mod socket;
pub mod term;
pub mod time;
pub mod udp;

/// The error of a call this platform lacks, naming what is missing.
pub fn unsupported(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} is not supported on this platform"),
    )
}
