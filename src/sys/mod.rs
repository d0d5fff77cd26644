//! The only place with `unsafe`: thin, checked wrappers over the libc calls
//! that std and socket2 do not offer. Each function documents its failure
//! modes as `io::Result`s; callers never see raw pointers.

pub mod mem;
pub mod netif;
pub mod process;
pub mod socket;
pub mod term;
pub mod time;
pub mod udp;
