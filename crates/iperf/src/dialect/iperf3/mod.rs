//! The iperf3 dialect: its client ([`client`]), the control connection
//! both ends drive ([`ctrl`]), one test on the server ([`server`]) and the
//! UDP datagram header its streams carry ([`udp`]).
pub mod client;
pub mod ctrl;
pub(crate) mod server;
pub mod udp;
