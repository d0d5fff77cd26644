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
        iperf3: std::sync::Arc::new(iperf3::server::Wing),
        iperf2: std::sync::Arc::new(iperf2::server::Wing::default()),
    }
}
