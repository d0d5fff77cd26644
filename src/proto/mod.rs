//! Sans-IO protocol cores: bytes in, values and decisions out. No sockets, no
//! clocks; the drivers in `client`/`server` do the I/O.

pub mod iperf2;
pub mod iperf3;
pub mod sniff;
