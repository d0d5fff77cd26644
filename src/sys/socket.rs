//! Socket options and queries missing from std/socket2: TCP_INFO, pacing,
//! IPv6 flow labels, IPv4 don't-fragment.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, RawFd};

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
}

impl TcpInfo {
    /// Congestion window in bytes, as iperf3 reports `snd_cwnd`.
    pub fn cwnd_bytes(&self) -> u64 {
        self.snd_cwnd as u64 * self.snd_mss as u64
    }
}

/// Reads TCP_INFO from a TCP socket.
pub fn tcp_info(fd: &impl AsRawFd) -> io::Result<TcpInfo> {
    tcp_info_raw(fd.as_raw_fd())
}

/// Reads TCP_INFO from a raw descriptor (used by the reporter, which holds
/// only the fd of a socket a data thread owns).
pub fn tcp_info_raw(fd: RawFd) -> io::Result<TcpInfo> {
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
    // Older kernels return a shorter struct; fields past `len` stay zero.
    Ok(TcpInfo {
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
    })
}

fn setsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
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

/// SO_MAX_PACING_RATE in bytes per second (kernel fq pacing).
pub fn set_max_pacing_rate(fd: &impl AsRawFd, bytes_per_sec: u64) -> io::Result<()> {
    let v: u64 = bytes_per_sec;
    // SAFETY: the kernel accepts a u32 or u64 value for SO_MAX_PACING_RATE;
    // we pass a live u64 and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
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

/// IPv4 don't-fragment (IP_MTU_DISCOVER = IP_PMTUDISC_DO).
pub fn set_dont_fragment_v4(fd: &impl AsRawFd) -> io::Result<()> {
    setsockopt_int(
        fd.as_raw_fd(),
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO,
    )
}

/// Generic integer socket option.
pub fn set_int_option(fd: &impl AsRawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    setsockopt_int(fd.as_raw_fd(), level, name, value)
}

/// Reads an integer socket option.
pub fn get_int_option(fd: &impl AsRawFd, level: i32, name: i32) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` is a live c_int and `len` its size; the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(v)
    }
}

/// `struct in6_flowlabel_req` (linux/in6.h); not in the libc crate.
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

const IPV6_FLOWLABEL_MGR: libc::c_int = 32;
const IPV6_FLOWINFO_SEND: libc::c_int = 33;
const IPV6_FL_A_GET: u8 = 0;
const IPV6_FL_S_ANY: u8 = 255;
const IPV6_FL_F_CREATE: u16 = 1;

/// Sets an IPv6 flow label for traffic to `dst` (must precede connect).
pub fn set_flowlabel(fd: &impl AsRawFd, dst: &std::net::Ipv6Addr, label: u32) -> io::Result<()> {
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
            fd.as_raw_fd(),
            libc::IPPROTO_IPV6,
            IPV6_FLOWLABEL_MGR,
            (&req as *const In6FlowlabelReq).cast(),
            mem::size_of::<In6FlowlabelReq>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    setsockopt_int(fd.as_raw_fd(), libc::IPPROTO_IPV6, IPV6_FLOWINFO_SEND, 1)
}

/// Shuts a socket down by descriptor, to wake a thread blocked on it.
pub fn shutdown_raw(fd: RawFd, how: std::net::Shutdown) -> io::Result<()> {
    let how = match how {
        std::net::Shutdown::Read => libc::SHUT_RD,
        std::net::Shutdown::Write => libc::SHUT_WR,
        std::net::Shutdown::Both => libc::SHUT_RDWR,
    };
    // SAFETY: shutdown takes no pointers; a stale fd yields EBADF.
    let rc = unsafe { libc::shutdown(fd, how) };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `sendfile(2)`: sends `count` bytes of `file` from `offset` on `sock`
/// without copying through user space. Returns bytes sent.
pub fn sendfile(sock: &impl AsRawFd, file: &impl AsRawFd, offset: u64, count: usize) -> io::Result<usize> {
    let mut off: libc::off_t = offset as libc::off_t;
    // SAFETY: both descriptors are live for the call; `off` is a valid
    // pointer the kernel updates.
    let n = unsafe { libc::sendfile(sock.as_raw_fd(), file.as_raw_fd(), &mut off, count) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Receives up to `len` bytes and discards them in the kernel (MSG_TRUNC),
/// so the receiver measures the network, not memcpy. At most
/// `scratch.len()` bytes are taken; TCP copies nothing into `scratch`.
pub fn recv_discard(sock: &impl AsRawFd, scratch: &mut [u8], len: usize) -> io::Result<usize> {
    // SAFETY: `scratch` is a live writable buffer and the length passed never
    // exceeds it, so even a protocol that does copy stays in bounds.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
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

/// Turns on MSG_ZEROCOPY sends for a socket (SO_ZEROCOPY).
pub fn set_zerocopy(sock: &impl AsRawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: a live descriptor and a pointer to a c_int with its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ZEROCOPY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Sends `buf` with MSG_ZEROCOPY: the kernel pins its pages instead of
/// copying them, so `buf` must not change until the send is reported
/// complete by [`reap_zerocopy`].
pub fn send_zerocopy(sock: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is live and readable for its length during the call;
    // the caller keeps it unchanged while the kernel holds its pages.
    let n = unsafe {
        libc::send(
            sock.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_ZEROCOPY | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// Reads MSG_ZEROCOPY completions from the socket's error queue without
/// waiting: (sends completed, of which the kernel copied after all).
pub fn reap_zerocopy(sock: &impl AsRawFd) -> io::Result<(u64, u64)> {
    let (mut done, mut copied) = (0u64, 0u64);
    loop {
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: `msg` points at a live control buffer of the stated size
        // and no data buffers.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok((done, copied));
            }
            return Err(e);
        }
        // SAFETY: the kernel filled `msg`; the CMSG macros walk within
        // msg_controllen of our buffer.
        let mut cm = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cm.is_null() {
            // SAFETY: `cm` is a header inside the control buffer.
            let (level, ty) = unsafe { ((*cm).cmsg_level, (*cm).cmsg_type) };
            let recverr = (level == libc::SOL_IP && ty == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && ty == libc::IPV6_RECVERR);
            if recverr {
                // SAFETY: an IP(V6)_RECVERR message carries a sock_extended_err;
                // read_unaligned because the data need not be aligned.
                let ee: libc::sock_extended_err = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast()) };
                if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY && ee.ee_errno == 0 {
                    let n = u64::from(ee.ee_data.wrapping_sub(ee.ee_info)) + 1;
                    done += n;
                    if ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0 {
                        copied += n;
                    }
                }
            }
            // SAFETY: as above.
            cm = unsafe { libc::CMSG_NXTHDR(&msg, cm) };
        }
    }
}

/// The kernel's `struct tcp_zerocopy_receive` (linux/tcp.h).
#[repr(C)]
#[derive(Default)]
struct TcpZerocopyReceive {
    address: u64,
    length: u32,
    recv_skip_hint: u32,
    inq: u32,
    err: i32,
    copybuf_address: u64,
    copybuf_len: i32,
    flags: u32,
    msg_control: u64,
    msg_controllen: u64,
    msg_flags: u32,
    reserved: u32,
}

const TCP_ZEROCOPY_RECEIVE: libc::c_int = 35;

/// A read-only mapping of a TCP socket's receive queue for
/// TCP_ZEROCOPY_RECEIVE: received pages are mapped here instead of copied.
pub struct ZerocopyRx {
    addr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is only used through &mut self by one thread at a time.
unsafe impl Send for ZerocopyRx {}

impl ZerocopyRx {
    /// Maps `len` bytes (a multiple of the page size) of `sock`.
    pub fn map(sock: &impl AsRawFd, len: usize) -> io::Result<ZerocopyRx> {
        // SAFETY: a fresh shared read-only mapping of the socket; the kernel
        // checks the descriptor is a TCP socket.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                sock.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(ZerocopyRx { addr, len })
    }

    /// Takes what is queued: maps whole pages, copies a short tail into
    /// `copybuf`. Returns (bytes mapped, bytes copied, bytes the kernel
    /// could not map and that must be read normally). Never waits.
    pub fn receive(&mut self, sock: &impl AsRawFd, copybuf: &mut [u8]) -> io::Result<(usize, usize, usize)> {
        let mut zc = TcpZerocopyReceive {
            address: self.addr as u64,
            length: self.len as u32,
            copybuf_address: copybuf.as_mut_ptr() as u64,
            copybuf_len: copybuf.len().min(i32::MAX as usize) as i32,
            ..TcpZerocopyReceive::default()
        };
        let mut optlen = std::mem::size_of::<TcpZerocopyReceive>() as libc::socklen_t;
        // SAFETY: `zc` is a live struct of the size passed; the addresses in
        // it are our own mapping and a live writable buffer of the stated length.
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::IPPROTO_TCP,
                TCP_ZEROCOPY_RECEIVE,
                (&mut zc as *mut TcpZerocopyReceive).cast(),
                &mut optlen,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if zc.err != 0 {
            return Err(io::Error::from_raw_os_error(zc.err));
        }
        Ok((
            zc.length as usize,
            zc.copybuf_len.max(0) as usize,
            zc.recv_skip_hint as usize,
        ))
    }
}

impl Drop for ZerocopyRx {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe { libc::munmap(self.addr, self.len) };
    }
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

    #[test]
    fn tcp_info_on_a_non_socket_fails_cleanly() {
        let f = std::fs::File::open("/dev/null").unwrap();
        assert!(tcp_info(&f).is_err());
    }
}
