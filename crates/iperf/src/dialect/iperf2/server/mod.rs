//! The iperf 2 dialect's server side, under the one acceptor: a client's
//! flows grouped into one test ([`groups`]), its TCP connections
//! ([`tcp`]), its UDP flows ([`udp`]) and bounceback echo streams
//! ([`bounceback`]).
pub(crate) mod bounceback;
pub(crate) mod groups;
pub(crate) mod tcp;
pub(crate) mod udp;
