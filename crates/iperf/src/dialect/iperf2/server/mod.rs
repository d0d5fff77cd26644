//! The iperf 2 dialect's server side, under the one acceptor: a client's
//! flows grouped into one test ([`groups`]), its TCP connections
//! ([`tcp`]), its UDP flows ([`udp`]) and bounceback echo streams
//! ([`bounceback`]).
pub(crate) mod bounceback;
pub(crate) mod groups;
pub(crate) mod tcp;
pub(crate) mod udp;

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use crate::server::ServerCtx;

/// The iperf 2 wing's entry points (`crate::server::Iperf2Wing`), with
/// what it keeps for the whole server: the `-P` groups forming.
#[derive(Default)]
pub(crate) struct Wing {
    forming: Arc<groups::Forming>,
}

impl crate::server::Iperf2Wing for Wing {
    fn tcp(&self, ctx: Arc<ServerCtx>, s: TcpStream, peer: SocketAddr, prefix: Vec<u8>) {
        tcp::serve(ctx, &self.forming, s, peer, prefix)
    }

    fn udp(&self, ctx: &Arc<ServerCtx>, local: SocketAddr, from: SocketAddr, d: &[u8], rx_ns: i64, tos: Option<u8>) {
        udp::offer(ctx, &self.forming, local, from, d, rx_ns, tos)
    }

    fn udp_drained(&self, ctx: &ServerCtx) {
        udp::drained(ctx)
    }
}
