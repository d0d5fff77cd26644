//! A wing per dialect: what only iperf3 speaks ([`iperf3`]: its client,
//! control connection, server test and datagram header) and what only
//! iperf 2 speaks ([`iperf2`]: its clients, per-block hooks, UDP end of
//! test and its server's flow groups, TCP, UDP and bounceback). Both run
//! their streams through the one engine and report through the one event
//! vocabulary; the shared server rooms (acceptor, registry, access,
//! sockets) are in `server`.
pub mod iperf2;
pub mod iperf3;

/// Where a server hands each client: both wings' entry points.
pub fn wings() -> crate::server::Wings {
    crate::server::Wings {
        iperf3_test: iperf3::server::start,
        iperf3_udp_hello: iperf3::server::udp_hello,
        iperf2_tcp: iperf2::server::tcp::serve,
        iperf2_udp: iperf2::server::udp::offer,
        iperf2_udp_drained: iperf2::server::udp::drained,
    }
}
