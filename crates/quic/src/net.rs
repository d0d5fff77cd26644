//! The UDP socket under either role's QUIC endpoint, and how much a
//! sender lets quinn hold.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

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

/// What a sender lets quinn hold for a connection (sent and not yet
/// acknowledged, or taken and not yet sent), at most and at least.
pub(crate) const SEND_WINDOW: u64 = 8 << 20;
const SEND_WINDOW_MIN: u64 = 64 << 10;

/// What a sender may hold when the congestion window is `cwnd`: twice it
/// (one window in flight and one ready behind it, so the sender never runs
/// dry and the controller keeps growing the window), within
/// [`SEND_WINDOW_MIN`] and `cap` ([`SEND_WINDOW`], or what `-w` asks). A sender counts bytes as sent
/// when quinn takes them; held so, what a stopped sender has counted
/// crosses in about two round trips, not in the seconds a fixed 8 MiB
/// takes on a slow path (where it also showed a first second of
/// "67 Mbit/s" through a path that carried 0.9).
pub(crate) fn send_window_for(cwnd: u64, cap: u64) -> u64 {
    let cap = cap.max(1);
    cwnd.saturating_mul(2).clamp(SEND_WINDOW_MIN.min(cap), cap)
}

/// Sizes `conn`'s send buffer to its congestion window now, at most `cap`
/// ([`send_window_for`]); a sender calls it before each write.
pub(crate) fn hold_send_window(conn: &quinn::Connection, cap: u64) {
    conn.set_send_window(send_window_for(conn.stats().path.cwnd, cap));
}

/// quinn's factory for the congestion controller `c` (`-C`).
pub(crate) fn controller(
    c: wirespeed_iperf::dialect::iperf3::quic::Controller,
) -> std::sync::Arc<dyn quinn::congestion::ControllerFactory + Send + Sync> {
    use quinn::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
    use wirespeed_iperf::dialect::iperf3::quic::Controller;
    match c {
        Controller::Cubic => std::sync::Arc::new(CubicConfig::default()),
        Controller::NewReno => std::sync::Arc::new(NewRenoConfig::default()),
        Controller::Bbr => std::sync::Arc::new(BbrConfig::default()),
    }
}

/// How long a close lets the endpoint run: long enough for its
/// CONNECTION_CLOSE to be sent (its driver sends it on its next turn), not
/// the draining period (three probe timeouts) that `wait_idle` would see
/// out. Both ends have each other's results by then (the control
/// connection; a perf client has the server's FIN on every stream), so
/// draining guards nothing a test needs, and waiting it out cost each end
/// of an iperf3 `-q` test some 0.1-0.4 s (the server's close also holds up
/// the control connection's, which the client waits for).
pub(crate) const CLOSE_SENT: Duration = Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_send_window_follows_the_congestion_window_within_bounds() {
        // quinn's first window (some 12 kB) keeps the floor.
        assert_eq!(send_window_for(12_000, SEND_WINDOW), SEND_WINDOW_MIN);
        assert_eq!(send_window_for(1 << 20, SEND_WINDOW), 2 << 20);
        assert_eq!(send_window_for(100 << 20, SEND_WINDOW), SEND_WINDOW);
        assert_eq!(send_window_for(u64::MAX, SEND_WINDOW), SEND_WINDOW);
        // -w: its window holds the sender, even under the floor.
        assert_eq!(send_window_for(1 << 20, 256 << 10), 256 << 10);
        assert_eq!(send_window_for(12_000, 16 << 10), 16 << 10);
        assert_eq!(send_window_for(100 << 20, 32 << 20), 32 << 20);
    }
}
