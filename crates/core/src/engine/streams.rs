//! A test's data streams before they run: their sockets, ids, roles, and
//! what a dialect adds to each.

use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;

use crate::config::Direction;
use crate::events::{ConnInfo, Side};
use crate::stats::{StreamMeta, StreamRole};
use wirespeed_sys::AsSock;

/// A data stream's socket: a TCP connection, a connected UDP socket, or
/// a stream of a transport above the engine (QUIC).
#[derive(Debug)]
pub enum DataSock {
    /// TCP (and MPTCP).
    Tcp(TcpStream),
    /// UDP, connected to the peer's stream socket.
    Udp(UdpSocket),
    /// A byte stream another layer carries (`engine::pipe`).
    Pipe(crate::engine::pipe::PipeSock),
}

impl DataSock {
    /// A second handle on the same socket.
    pub fn try_clone(&self) -> std::io::Result<DataSock> {
        Ok(match self {
            DataSock::Tcp(s) => DataSock::Tcp(s.try_clone()?),
            DataSock::Udp(s) => DataSock::Udp(s.try_clone()?),
            DataSock::Pipe(p) => DataSock::Pipe(p.try_clone()?),
        })
    }

    /// The local address.
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSock::Tcp(s) => s.local_addr(),
            DataSock::Udp(s) => s.local_addr(),
            DataSock::Pipe(p) => p.sock.local_addr(),
        }
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            DataSock::Tcp(s) => s.peer_addr(),
            DataSock::Udp(s) => s.peer_addr(),
            DataSock::Pipe(p) => Ok(p.peer),
        }
    }
}

#[cfg(unix)]
impl std::os::fd::AsFd for DataSock {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            DataSock::Tcp(s) => s.as_fd(),
            DataSock::Udp(s) => s.as_fd(),
            DataSock::Pipe(p) => p.sock.as_fd(),
        }
    }
}

#[cfg(windows)]
impl std::os::windows::io::AsSocket for DataSock {
    fn as_socket(&self) -> std::os::windows::io::BorrowedSocket<'_> {
        match self {
            DataSock::Tcp(s) => s.as_socket(),
            DataSock::Udp(s) => s.as_socket(),
            DataSock::Pipe(p) => p.sock.as_socket(),
        }
    }
}

/// A connected data stream before its thread starts.
pub struct DataStream {
    /// Stream id (1, 3, 4, ...).
    pub id: u32,
    /// Send or receive, from this host's view.
    pub role: StreamRole,
    /// The socket.
    pub sock: DataSock,
    /// Addresses, as printed.
    pub info: ConnInfo,
}

impl DataStream {
    /// A stream of `sock` (TCP or UDP) between `local` and `peer`.
    pub fn new(id: u32, role: StreamRole, sock: DataSock, local: SocketAddr, peer: SocketAddr) -> DataStream {
        DataStream {
            id,
            role,
            info: ConnInfo::new(id, sock.sock_num(), local, peer),
            sock,
        }
    }
}

/// What a dialect adds to a stream beyond the common engine: a per-block
/// hook and the counters the hook feeds (iperf 2's enhanced reports).
#[derive(Default)]
pub struct StreamExtras {
    /// Runs in the stream's hot loop.
    pub hook: Option<Box<dyn crate::engine::StreamHook>>,
    /// Bytes of the stream already read before the session (counted as
    /// received: an iperf 2 header, a prefix read to tell dialects apart).
    pub initial_bytes: u64,
    /// A byte budget of this stream alone (iperf 2's `-n` is per flow),
    /// instead of the test's shared one.
    pub budget: Option<u64>,
    /// UDP: the dialect's datagram layout (a UDP stream needs one).
    pub udp_format: Option<Arc<dyn crate::engine::udp::UdpStart>>,
    /// UDP: datagrams of the stream a listener read before the stream had
    /// a socket, with their arrival times (wall clock, ns).
    pub udp_prefeed: Vec<(Vec<u8>, i64, Option<u8>)>,
    /// What the reporter knows of the stream besides its counters (its
    /// addresses are filled in from the stream's).
    pub meta: StreamMeta,
    /// What the stream does instead of moving bulk data.
    pub kind: crate::engine::StreamKind,
}

/// Stream ids in creation order: 1, then 3, 4, 5, ... (2 is skipped, as iperf3 does).
pub fn stream_id(index: usize) -> u32 {
    if index == 0 { 1 } else { index as u32 + 2 }
}

/// Roles of the streams in creation order, for one side.
pub fn stream_roles(direction: Direction, parallel: u32, side: Side) -> Vec<StreamRole> {
    let p = parallel as usize;
    let (client_send, client_recv) = match direction {
        Direction::Reverse => (0, p),
        Direction::Bidir | Direction::FullDuplex | Direction::Dual => (p, p),
        _ => (p, 0),
    };
    let mut roles = Vec::with_capacity(client_send + client_recv);
    // The client opens its senders first; the server classifies arrivals in
    // the same order, so the client's senders are the server's receivers.
    for _ in 0..client_send {
        roles.push(if side == Side::Client {
            StreamRole::Send
        } else {
            StreamRole::Recv
        });
    }
    for _ in 0..client_recv {
        roles.push(if side == Side::Client {
            StreamRole::Recv
        } else {
            StreamRole::Send
        });
    }
    roles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_skip_two() {
        let ids: Vec<u32> = (0..5).map(stream_id).collect();
        assert_eq!(ids, vec![1, 3, 4, 5, 6]);
    }

    #[test]
    fn bidir_roles_mirror_each_other() {
        let c = stream_roles(Direction::Bidir, 2, Side::Client);
        let s = stream_roles(Direction::Bidir, 2, Side::Server);
        assert_eq!(
            c,
            vec![StreamRole::Send, StreamRole::Send, StreamRole::Recv, StreamRole::Recv]
        );
        assert_eq!(
            s,
            vec![StreamRole::Recv, StreamRole::Recv, StreamRole::Send, StreamRole::Send]
        );
        assert_eq!(
            stream_roles(Direction::Reverse, 3, Side::Client),
            vec![StreamRole::Recv; 3]
        );
    }
}
