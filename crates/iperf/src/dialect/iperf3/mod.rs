//! The iperf3 dialect: its client ([`client`]), the control connection
//! both ends drive ([`ctrl`]), one test on the server ([`server`]), the
//! UDP datagram header its streams carry ([`udp`]) and what a `--quic`
//! test needs of QUIC ([`quic`]).
pub mod client;
pub mod ctrl;
pub mod quic;
pub(crate) mod server;
pub mod udp;
