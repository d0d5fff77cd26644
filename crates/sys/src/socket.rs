//! Socket options and queries missing from std/socket2: TCP_INFO, pacing,
//! IPv6 flow labels, IPv4 don't-fragment, and the Linux-only options
//! socket2 offers only there (device binding, quick ACKs, user timeout,
//! MPTCP), behind calls that every platform has.

use std::io;
#[cfg(unix)]
use std::mem;
use std::time::Duration;

use socket2::Socket;

use super::{AsSock, RawSock};

#[cfg(not(target_os = "linux"))]
use super::unsupported;

/// The TCP_INFO fields wirespeed reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Total retransmitted segments over the connection's life.
    pub total_retrans: u32,
    /// Congestion window in segments.
    pub snd_cwnd: u32,
    /// Sender MSS in bytes.
    pub snd_mss: u32,
    /// Peer's advertised receive window in bytes (kernel ≥ 5.4; 0 if unknown).
    pub snd_wnd: u32,
    /// Smoothed RTT in microseconds.
    pub rtt: u32,
    /// RTT variance in microseconds.
    pub rttvar: u32,
    /// Path MTU.
    pub pmtu: u32,
    /// Reordering events seen.
    pub reord_seen: u32,
    /// Time (µs) the sender was limited by the receive window.
    pub rwnd_limited_us: u64,
    /// Time (µs) the sender was limited by the send buffer.
    pub sndbuf_limited_us: u64,
    /// Time (µs) the connection was busy sending.
    pub busy_time_us: u64,
    /// Bytes not yet sent from the send queue.
    pub notsent_bytes: u32,
    /// Minimum RTT seen, µs.
    pub min_rtt: u32,
    /// Retransmission timeout, µs.
    pub rto: u32,
    /// The receiver's own estimate of the RTT (µs, 0 until it has one): on
    /// a socket that only receives, the only RTT that follows the path's
    /// queue, since `rtt` then rests on the handshake.
    pub rcv_rtt: u32,
    /// Segments sent and not yet acknowledged.
    pub unacked: u32,
    /// The rate the peer has recently been acknowledging data at, bytes/s.
    pub delivery_rate: u64,
    /// `tcpi_options`: which options the handshake agreed on
    /// ([`TcpInfo::ecn_negotiated`], [`TcpInfo::ecn_seen`]).
    pub options: u8,
    /// `tcpi_delivered_ce` (Linux ≥ 4.18; `None` when the kernel's
    /// TCP_INFO is shorter): segments acknowledged by ACKs that echoed
    /// ECE. Without AccECN an ACK echoes ECE from the first CE mark until
    /// the sender's CWR, so this counts every segment acked under ECE, not
    /// the CE marks.
    pub delivered_ce: Option<u32>,
}

/// `TCPI_OPT_ECN`: ECN was negotiated in the handshake.
pub const TCPI_OPT_ECN: u8 = 8;
/// `TCPI_OPT_ECN_SEEN`: at least one segment arrived with ECT (or CE).
pub const TCPI_OPT_ECN_SEEN: u8 = 16;

impl TcpInfo {
    /// Congestion window in bytes, as iperf3 reports `snd_cwnd`.
    pub fn cwnd_bytes(&self) -> u64 {
        self.snd_cwnd as u64 * self.snd_mss as u64
    }

    /// Whether the handshake negotiated ECN (`TCPI_OPT_ECN`).
    pub fn ecn_negotiated(&self) -> bool {
        self.options & TCPI_OPT_ECN != 0
    }

    /// Whether a segment with ECT or CE arrived from the peer
    /// (`TCPI_OPT_ECN_SEEN`).
    pub fn ecn_seen(&self) -> bool {
        self.options & TCPI_OPT_ECN_SEEN != 0
    }
}

/// Whether this host asks for ECN on the TCP connections it opens: its
/// network namespace's `net.ipv4.tcp_ecn` is 1 (2, the default, only
/// accepts a peer's request; 0 neither asks nor accepts). `None` when it
/// cannot be read (not Linux, no `/proc`).
pub fn tcp_ecn_requested() -> Option<bool> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let v = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_ecn").ok()?;
    Some(v.trim() == "1")
}

/// Reads TCP_INFO from a TCP socket.
pub fn tcp_info(fd: &impl AsSock) -> io::Result<TcpInfo> {
    tcp_info_raw(fd.raw_sock())
}

/// Reads TCP_INFO from a raw descriptor (used by the reporter, which holds
/// only the fd of a socket a data thread owns). Linux only.
#[cfg(not(target_os = "linux"))]
pub fn tcp_info_raw(_fd: RawSock) -> io::Result<TcpInfo> {
    Err(unsupported("TCP_INFO"))
}

/// Reads TCP_INFO from a raw descriptor (used by the reporter, which holds
/// only the fd of a socket a data thread owns).
#[cfg(target_os = "linux")]
pub fn tcp_info_raw(fd: RawSock) -> io::Result<TcpInfo> {
    // SAFETY: `info` is a plain-old-data struct; zeroed is a valid value.
    let mut info: libc::tcp_info = unsafe { mem::zeroed() };
    let mut len = mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: we pass a valid pointer to `info` and its exact size in `len`;
    // the kernel writes at most `len` bytes and updates `len`. A stale fd
    // yields EBADF/ENOTSOCK, which we return as an error.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(tcp_info_of(&info, len as usize))
}

/// The fields of a `tcp_info` of which the kernel wrote the first `len`
/// bytes. Older kernels write a shorter struct: the fields past `len` stay
/// zero, and the one that cannot be told from a zero by its value,
/// `tcpi_delivered_ce`, is `None`.
#[cfg(target_os = "linux")]
fn tcp_info_of(info: &libc::tcp_info, len: usize) -> TcpInfo {
    let has = |end: usize| len >= end;
    let delivered_ce_end = mem::offset_of!(libc::tcp_info, tcpi_delivered_ce) + mem::size_of::<u32>();
    TcpInfo {
        total_retrans: info.tcpi_total_retrans,
        snd_cwnd: info.tcpi_snd_cwnd,
        snd_mss: info.tcpi_snd_mss,
        snd_wnd: info.tcpi_snd_wnd,
        rtt: info.tcpi_rtt,
        rttvar: info.tcpi_rttvar,
        pmtu: info.tcpi_pmtu,
        reord_seen: info.tcpi_reord_seen,
        rwnd_limited_us: info.tcpi_rwnd_limited,
        sndbuf_limited_us: info.tcpi_sndbuf_limited,
        busy_time_us: info.tcpi_busy_time,
        notsent_bytes: info.tcpi_notsent_bytes,
        min_rtt: info.tcpi_min_rtt,
        rto: info.tcpi_rto,
        rcv_rtt: info.tcpi_rcv_rtt,
        unacked: info.tcpi_unacked,
        delivery_rate: info.tcpi_delivery_rate,
        options: info.tcpi_options,
        delivered_ce: has(delivered_ce_end).then_some(info.tcpi_delivered_ce),
    }
}

#[cfg(unix)]
fn setsockopt_int(fd: RawSock, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the option value is a live c_int and we pass its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// SO_MAX_PACING_RATE (Linux only).
#[cfg(not(target_os = "linux"))]
pub fn set_max_pacing_rate(_fd: &impl AsSock, _bytes_per_sec: u64) -> io::Result<()> {
    Err(unsupported("SO_MAX_PACING_RATE (--fq-rate)"))
}

/// SO_MAX_PACING_RATE in bytes per second (kernel fq pacing).
#[cfg(target_os = "linux")]
pub fn set_max_pacing_rate(fd: &impl AsSock, bytes_per_sec: u64) -> io::Result<()> {
    let v: u64 = bytes_per_sec;
    // SAFETY: the kernel accepts a u32 or u64 value for SO_MAX_PACING_RATE;
    // we pass a live u64 and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.raw_sock(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&v as *const u64).cast(),
            mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Generic integer socket option.
#[cfg(unix)]
pub fn set_int_option(fd: &impl AsSock, level: i32, name: i32, value: i32) -> io::Result<()> {
    setsockopt_int(fd.raw_sock(), level, name, value)
}

/// Reads an integer socket option.
#[cfg(unix)]
pub fn get_int_option(fd: &impl AsSock, level: i32, name: i32) -> io::Result<i32> {
    getsockopt_int(fd.raw_sock(), level, name)
}

#[cfg(unix)]
fn getsockopt_int(fd: RawSock, level: i32, name: i32) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` is a live c_int and `len` its size; the kernel writes at most that.
    let rc = unsafe { libc::getsockopt(fd, level, name, (&mut v as *mut libc::c_int).cast(), &mut len) };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(v)
    }
}

/// `struct in6_flowlabel_req` (linux/in6.h); not in the libc crate.
#[cfg(target_os = "linux")]
#[repr(C)]
struct In6FlowlabelReq {
    flr_dst: libc::in6_addr,
    flr_label: u32,
    flr_action: u8,
    flr_share: u8,
    flr_flags: u16,
    flr_expires: u16,
    flr_linger: u16,
    flr_pad: u32,
}

#[cfg(target_os = "linux")]
const IPV6_FLOWLABEL_MGR: libc::c_int = 32;
#[cfg(target_os = "linux")]
const IPV6_FLOWINFO_SEND: libc::c_int = 33;
#[cfg(target_os = "linux")]
const IPV6_FL_A_GET: u8 = 0;
#[cfg(target_os = "linux")]
const IPV6_FL_S_ANY: u8 = 255;
#[cfg(target_os = "linux")]
const IPV6_FL_F_CREATE: u16 = 1;

/// IPv6 flow labels (Linux only).
#[cfg(not(target_os = "linux"))]
pub fn set_flowlabel(_fd: &impl AsSock, _dst: &std::net::Ipv6Addr, _label: u32) -> io::Result<()> {
    Err(unsupported("setting an IPv6 flow label (-L)"))
}

/// Sets an IPv6 flow label for traffic to `dst` (must precede connect).
#[cfg(target_os = "linux")]
pub fn set_flowlabel(fd: &impl AsSock, dst: &std::net::Ipv6Addr, label: u32) -> io::Result<()> {
    let req = In6FlowlabelReq {
        flr_dst: libc::in6_addr { s6_addr: dst.octets() },
        flr_label: (label & 0xFFFFF).to_be(),
        flr_action: IPV6_FL_A_GET,
        flr_share: IPV6_FL_S_ANY,
        flr_flags: IPV6_FL_F_CREATE,
        flr_expires: 0,
        flr_linger: 0,
        flr_pad: 0,
    };
    // SAFETY: `req` is a repr(C) struct matching the kernel's layout and we
    // pass its exact size.
    let rc = unsafe {
        libc::setsockopt(
            fd.raw_sock(),
            libc::IPPROTO_IPV6,
            IPV6_FLOWLABEL_MGR,
            (&req as *const In6FlowlabelReq).cast(),
            mem::size_of::<In6FlowlabelReq>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    setsockopt_int(fd.raw_sock(), libc::IPPROTO_IPV6, IPV6_FLOWINFO_SEND, 1)
}

/// `sendfile(2)` (Linux's form only).
#[cfg(not(target_os = "linux"))]
pub fn sendfile(_sock: &impl AsSock, _file: &std::fs::File, _offset: u64, _count: usize) -> io::Result<usize> {
    Err(unsupported("zero-copy sending (-Z)"))
}

/// `sendfile(2)`: sends `count` bytes of `file` from `offset` on `sock`
/// without copying through user space. Returns bytes sent.
#[cfg(target_os = "linux")]
pub fn sendfile(sock: &impl AsSock, file: &std::fs::File, offset: u64, count: usize) -> io::Result<usize> {
    let mut off: libc::off_t = offset as libc::off_t;
    // SAFETY: both descriptors are live for the call; `off` is a valid
    // pointer the kernel updates.
    let n = unsafe { libc::sendfile(sock.raw_sock(), std::os::fd::AsRawFd::as_raw_fd(file), &mut off, count) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Discarding receives (Linux's MSG_TRUNC on TCP only).
#[cfg(not(target_os = "linux"))]
pub fn recv_discard(_sock: &impl AsSock, _scratch: &mut [u8], _len: usize) -> io::Result<usize> {
    Err(unsupported("receiving without copying (--skip-rx-copy)"))
}

/// Receives up to `len` bytes and discards them in the kernel (MSG_TRUNC),
/// so the receiver measures the network, not memcpy. At most
/// `scratch.len()` bytes are taken; TCP copies nothing into `scratch`.
#[cfg(target_os = "linux")]
pub fn recv_discard(sock: &impl AsSock, scratch: &mut [u8], len: usize) -> io::Result<usize> {
    // SAFETY: `scratch` is a live writable buffer and the length passed never
    // exceeds it, so even a protocol that does copy stays in bounds.
    let n = unsafe {
        libc::recv(
            sock.raw_sock(),
            scratch.as_mut_ptr().cast(),
            len.min(scratch.len()),
            libc::MSG_TRUNC,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// SO_SNDBUF of a socket known by its raw handle (the reporter's view of
/// a socket a data thread owns), as the system reports it.
pub fn send_buffer_raw(raw: RawSock) -> io::Result<u64> {
    #[cfg(unix)]
    return getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_SNDBUF).map(|b| b.max(0) as u64);
    #[cfg(not(unix))]
    {
        let _ = raw;
        Err(unsupported("reading a socket's buffer by its handle"))
    }
}

/// SO_DONTROUTE: reach only hosts on directly connected networks.
pub fn set_dont_route(s: &Socket) -> io::Result<()> {
    #[cfg(unix)]
    return set_int_option(s, libc::SOL_SOCKET, libc::SO_DONTROUTE, 1);
    #[cfg(not(unix))]
    {
        let _ = s;
        Err(unsupported("SO_DONTROUTE (--local-only)"))
    }
}

/// Binds the socket to a network device (`--bind-dev`, iperf 2's `%dev`).
pub fn bind_device(s: &Socket, dev: &str) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return s.bind_device(Some(dev.as_bytes()));
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, dev);
        Err(unsupported("binding to a device (SO_BINDTODEVICE)"))
    }
}

/// Asks for immediate ACKs (TCP_QUICKACK, which Linux clears again after
/// some reads). Elsewhere ACKs are the stack's own business: `Ok`, since
/// only a latency optimisation is missing.
pub fn set_quickack(s: &Socket) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return s.set_tcp_quickack(true);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = s;
        Ok(())
    }
}

/// TCP_USER_TIMEOUT: how long sent data may stay unacknowledged before the
/// connection is dropped (`--snd-timeout`).
pub fn set_user_timeout(s: &Socket, t: Duration) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return s.set_tcp_user_timeout(Some(t));
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, t);
        Err(unsupported("TCP_USER_TIMEOUT (--snd-timeout)"))
    }
}

/// Linux's TCP_TX_DELAY (since 5.4; the libc crate does not name it).
#[cfg(target_os = "linux")]
const TCP_TX_DELAY: libc::c_int = 37;

/// TCP_TX_DELAY: the kernel holds every segment of this socket `usec`
/// microseconds before it leaves (a simulated path delay on the sender;
/// iperf 2.2's `--tcp-tx-delay`, master's `--send-delay`).
pub fn set_tcp_tx_delay(s: &Socket, usec: u32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return set_int_option(s, libc::IPPROTO_TCP, TCP_TX_DELAY, usec.min(i32::MAX as u32) as i32);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, usec);
        Err(unsupported("TCP_TX_DELAY (--tcp-tx-delay)"))
    }
}

/// TCP_TX_DELAY as set on the socket, in microseconds.
pub fn tcp_tx_delay(s: &Socket) -> io::Result<u32> {
    #[cfg(target_os = "linux")]
    return get_int_option(s, libc::IPPROTO_TCP, TCP_TX_DELAY).map(|v| v.max(0) as u32);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = s;
        Err(unsupported("TCP_TX_DELAY (--tcp-tx-delay)"))
    }
}

/// TCP_NOTSENT_LOWAT: wake the writer only when fewer bytes than this wait
/// unsent.
pub fn set_notsent_lowat(s: &Socket, bytes: u32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return set_int_option(
        s,
        libc::IPPROTO_TCP,
        libc::TCP_NOTSENT_LOWAT,
        bytes.min(i32::MAX as u32) as i32,
    );
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, bytes);
        Err(unsupported("TCP_NOTSENT_LOWAT"))
    }
}

/// TCP_NOTSENT_LOWAT as set on the socket (`None` where the platform has
/// no such option). The kernel's default, when nobody set one, is `u32::MAX`.
pub fn notsent_lowat(s: &Socket) -> Option<u32> {
    #[cfg(target_os = "linux")]
    return get_int_option(s, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT)
        .ok()
        .map(|v| v as u32);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = s;
        None
    }
}

/// TCP_WINDOW_CLAMP: the most receive window the socket advertises.
pub fn set_window_clamp(s: &Socket, bytes: u32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return set_int_option(
        s,
        libc::IPPROTO_TCP,
        libc::TCP_WINDOW_CLAMP,
        bytes.min(i32::MAX as u32) as i32,
    );
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, bytes);
        Err(unsupported("TCP_WINDOW_CLAMP"))
    }
}

/// Sets a socket buffer past the system's maximum where the process may
/// (Linux's SO_RCVBUFFORCE/SO_SNDBUFFORCE, needing CAP_NET_ADMIN); else
/// the ordinary option, which the system caps.
pub fn set_buffer_forced(s: &Socket, receive: bool, bytes: usize) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let name = if receive {
            libc::SO_RCVBUFFORCE
        } else {
            libc::SO_SNDBUFFORCE
        };
        if set_int_option(s, libc::SOL_SOCKET, name, bytes.min(i32::MAX as usize) as i32).is_ok() {
            return Ok(());
        }
    }
    if receive {
        s.set_recv_buffer_size(bytes)
    } else {
        s.set_send_buffer_size(bytes)
    }
}

/// Stops a multicast receiver from getting every group joined on the host
/// (Linux's IP_MULTICAST_ALL defaults on); other systems deliver only the
/// joined groups already.
pub fn multicast_only_joined(s: &Socket, v6: bool) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return if v6 {
        s.set_multicast_all_v6(false)
    } else {
        s.set_multicast_all_v4(false)
    };
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (s, v6);
        Ok(())
    }
}

/// Sets the congestion control algorithm (`-C`); Linux and FreeBSD.
pub fn set_congestion(s: &Socket, name: &str) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "freebsd"))]
    return s.set_tcp_congestion(name.as_bytes());
    #[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
    {
        let _ = (s, name);
        Err(unsupported("setting the congestion control algorithm (-C)"))
    }
}

/// The congestion control algorithm's name, NUL-padded; Linux and FreeBSD.
pub fn congestion(s: &Socket) -> io::Result<Vec<u8>> {
    #[cfg(any(target_os = "linux", target_os = "freebsd"))]
    return s.tcp_congestion();
    #[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
    {
        let _ = s;
        Err(unsupported("reading the congestion control algorithm"))
    }
}

/// SO_REUSEPORT where there is one: lets a connected UDP stream socket
/// share the listener's port. Windows' SO_REUSEADDR already shares it.
pub fn set_reuse_port(s: &Socket) -> io::Result<()> {
    #[cfg(unix)]
    return s.set_reuse_port(true);
    #[cfg(not(unix))]
    {
        let _ = s;
        Ok(())
    }
}

/// The IPv6 traffic class (`-S` on an IPv6 socket).
pub fn set_tclass(s: &Socket, tclass: u32) -> io::Result<()> {
    #[cfg(unix)]
    return s.set_tclass_v6(tclass);
    #[cfg(not(unix))]
    {
        let _ = (s, tclass);
        Err(unsupported("setting the IPv6 traffic class"))
    }
}

/// Sets TCP_MAXSEG (`-M`).
pub fn set_mss(s: &Socket, mss: u32) -> io::Result<()> {
    #[cfg(unix)]
    return s.set_tcp_mss(mss);
    #[cfg(not(unix))]
    {
        let _ = (s, mss);
        Err(unsupported("setting the TCP maximum segment size (-M)"))
    }
}

/// TCP_MAXSEG of a connected socket.
pub fn mss(s: &Socket) -> io::Result<u32> {
    #[cfg(unix)]
    return s.tcp_mss();
    #[cfg(not(unix))]
    {
        let _ = s;
        Err(unsupported("reading the TCP maximum segment size"))
    }
}

/// The protocol for a TCP socket, or MPTCP's where asked (`-m`/`--mptcp`).
pub fn stream_protocol(mptcp: bool) -> io::Result<socket2::Protocol> {
    if !mptcp {
        return Ok(socket2::Protocol::TCP);
    }
    #[cfg(target_os = "linux")]
    return Ok(socket2::Protocol::MPTCP);
    #[cfg(not(target_os = "linux"))]
    Err(unsupported("MPTCP"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn tcp_info_on_a_loopback_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let info = tcp_info(&c).unwrap();
        assert!(info.snd_mss > 0);
        assert!(info.cwnd_bytes() > 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tcp_tx_delay_reads_back_what_was_set() {
        let s = Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        assert_eq!(tcp_tx_delay(&s).unwrap(), 0);
        set_tcp_tx_delay(&s, 10_000).unwrap();
        assert_eq!(tcp_tx_delay(&s).unwrap(), 10_000);
    }

    #[test]
    fn tcp_info_on_a_non_socket_fails_cleanly() {
        let f = std::fs::File::open("/dev/null").unwrap();
        assert!(tcp_info(&f).is_err());
    }

    /// A `tcp_info` as a kernel of each age writes it: the first `len`
    /// bytes hold what it knows, the rest stay zero.
    #[cfg(target_os = "linux")]
    fn written(len: usize) -> libc::tcp_info {
        // SAFETY: plain old data; zeroed is a valid value.
        let mut full: libc::tcp_info = unsafe { mem::zeroed() };
        full.tcpi_options = TCPI_OPT_ECN | TCPI_OPT_ECN_SEEN | 7;
        full.tcpi_rtt = 1500;
        full.tcpi_delivered_ce = 179;
        full.tcpi_reord_seen = 3;
        // SAFETY: as above.
        let mut out: libc::tcp_info = unsafe { mem::zeroed() };
        // SAFETY: both are live `tcp_info`s and `len` is at most their size.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&full as *const libc::tcp_info).cast::<u8>(),
                (&mut out as *mut libc::tcp_info).cast::<u8>(),
                len.min(mem::size_of::<libc::tcp_info>()),
            )
        };
        out
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn delivered_ce_only_where_the_kernel_wrote_it() {
        let end = mem::offset_of!(libc::tcp_info, tcpi_delivered_ce) + 4;
        // Linux 4.18 and later (this libc's struct is longer still).
        let i = tcp_info_of(&written(end), end);
        assert_eq!(i.delivered_ce, Some(179));
        assert!(i.ecn_negotiated() && i.ecn_seen());
        assert_eq!(i.rtt, 1500);
        let full = mem::size_of::<libc::tcp_info>();
        assert_eq!(tcp_info_of(&written(full), full).delivered_ce, Some(179));
        // One byte short, and the 104 bytes of the oldest kernels: the
        // options are there, the counter is not (not a zero).
        let i = tcp_info_of(&written(end - 1), end - 1);
        assert_eq!(i.delivered_ce, None);
        let old = tcp_info_of(&written(104), 104);
        assert_eq!(old.delivered_ce, None);
        assert!(old.ecn_negotiated() && old.ecn_seen());
        assert_eq!(old.rtt, 1500);
        assert_eq!(old.reord_seen, 0);
        // Nothing written at all.
        let none = tcp_info_of(&written(0), 0);
        assert_eq!(none.delivered_ce, None);
        assert!(!none.ecn_negotiated());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_kernel_reports_delivered_ce() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let info = tcp_info(&c).unwrap();
        assert_eq!(info.delivered_ce, Some(0));
        // Negotiated or not as this namespace's sysctl says: only a host
        // that asks (1) gets it on a connection to itself.
        assert_eq!(info.ecn_negotiated(), tcp_ecn_requested() == Some(true));
    }
}
