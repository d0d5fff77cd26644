//! The UDP socket under either role's QUIC endpoint.

use std::net::{SocketAddr, UdpSocket};

/// What the kernel is asked to buffer for the socket each way (it grants
/// at most its `rmem_max`/`wmem_max`): a fast sender's bursts overflow the
/// default and are lost before QUIC reads them.
const SOCKET_BUFFER: usize = 4 << 20;

/// A UDP socket bound to `addr`; on `[::]` with `dual`, IPv4 too.
pub(crate) fn bind_udp(addr: SocketAddr, dual: bool) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        s.set_only_v6(!dual)?;
    }
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.bind(&addr.into())?;
    Ok(s.into())
}
