//! UDP batching and offloads: `sendmmsg`, `recvmmsg` with control messages
//! (GRO segment size, kernel receive timestamps, the TOS / traffic class
//! byte each datagram arrived with), UDP GSO/GRO, don't-fragment,
//! and the timer slack that lets a pacing thread sleep precisely.
//!
//! Elsewhere (no `sendmmsg`/`recvmmsg`, GSO or GRO) the same types send
//! and receive one datagram per call, and the offload switches return
//! [`super::unsupported`]'s error.
//!
//! The batch types own every buffer the kernel writes into and build the
//! `mmsghdr` arrays per call on the stack, so no raw pointer outlives the
//! call that uses it.

use super::AsSock;
use std::io;
use std::mem;

#[cfg(target_os = "linux")]
use super::socket::set_int_option;

// Linux UAPI constants the libc crate does not export for every target.
/// `SOL_UDP` option: segment sends into datagrams of this size (GSO).
#[cfg(target_os = "linux")]
const UDP_SEGMENT: libc::c_int = 103;
/// `SOL_UDP` option: accept coalesced datagrams (GRO).
#[cfg(target_os = "linux")]
const UDP_GRO: libc::c_int = 104;
/// `SO_TIMESTAMPNS` (the "old", native-time_t variant on 64-bit targets).
#[cfg(target_os = "linux")]
const SO_TIMESTAMPNS: libc::c_int = 35;
#[cfg(target_os = "linux")]
const PR_SET_TIMERSLACK: libc::c_int = 29;

/// Most datagrams one GSO send may carry (UDP_MAX_SEGMENTS is 64 before
/// Linux 6.x's 128; 64 works everywhere).
pub const GSO_MAX_SEGMENTS: usize = 64;
/// Most bytes one UDP send or GRO receive can carry.
pub const MAX_UDP_PAYLOAD: usize = 65507;
/// Most messages per `sendmmsg`/`recvmmsg` call handled here.
pub const MAX_BATCH: usize = 64;

#[cfg(target_os = "linux")]
fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// UDP GSO is Linux's.
#[cfg(not(target_os = "linux"))]
pub fn set_gso(_sock: &impl AsSock, _segment: u16) -> io::Result<()> {
    Err(super::unsupported("UDP GSO"))
}

/// Turns on UDP GSO: every send is cut by the kernel into datagrams of
/// `segment` bytes (the last may be shorter; wirespeed always sends whole
/// multiples). Fails on kernels before 4.18.
#[cfg(target_os = "linux")]
pub fn set_gso(sock: &impl AsSock, segment: u16) -> io::Result<()> {
    set_int_option(sock, libc::SOL_UDP, UDP_SEGMENT, segment as libc::c_int)
}

/// UDP GSO is Linux's.
#[cfg(not(target_os = "linux"))]
pub fn clear_gso(_sock: &impl AsSock) -> io::Result<()> {
    Err(super::unsupported("UDP GSO"))
}

/// Turns off UDP GSO (after the path refused it, e.g. a datagram over the MTU).
#[cfg(target_os = "linux")]
pub fn clear_gso(sock: &impl AsSock) -> io::Result<()> {
    set_int_option(sock, libc::SOL_UDP, UDP_SEGMENT, 0)
}

/// UDP GRO is Linux's.
#[cfg(not(target_os = "linux"))]
pub fn set_gro(_sock: &impl AsSock) -> io::Result<()> {
    Err(super::unsupported("UDP GRO"))
}

/// Turns on UDP GRO: the kernel may hand over several same-sized datagrams
/// of one flow as one buffer, with their size in a control message.
#[cfg(target_os = "linux")]
pub fn set_gro(sock: &impl AsSock) -> io::Result<()> {
    set_int_option(sock, libc::SOL_UDP, UDP_GRO, 1)
}

/// Kernel receive timestamps are taken on Linux only.
#[cfg(not(target_os = "linux"))]
pub fn set_rx_timestamps(_sock: &impl AsSock) -> io::Result<()> {
    Err(super::unsupported("kernel receive timestamps (SO_TIMESTAMPNS)"))
}

/// Asks for a kernel receive timestamp (CLOCK_REALTIME, ns) on every datagram.
#[cfg(target_os = "linux")]
pub fn set_rx_timestamps(sock: &impl AsSock) -> io::Result<()> {
    set_int_option(sock, libc::SOL_SOCKET, SO_TIMESTAMPNS, 1)
}

/// The arriving TOS byte is read on Linux only.
#[cfg(not(target_os = "linux"))]
pub fn set_recv_tos(_sock: &impl AsSock, _ipv6_socket: bool) -> io::Result<()> {
    Err(super::unsupported("reading the arriving TOS byte (IP_RECVTOS)"))
}

/// Asks for the TOS byte (IPv4, `IP_RECVTOS`) or traffic class (IPv6,
/// `IPV6_RECVTCLASS`) every datagram arrived with, as a control message:
/// its low two bits are the ECN field. An IPv6 socket asks for both, as a
/// dual-stack one carries IPv4 too (an IPv6-only one refuses the IPv4
/// option, which is fine).
#[cfg(target_os = "linux")]
pub fn set_recv_tos(sock: &impl AsSock, ipv6_socket: bool) -> io::Result<()> {
    if ipv6_socket {
        set_int_option(sock, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
        let _ = set_int_option(sock, libc::IPPROTO_IP, libc::IP_RECVTOS, 1);
        Ok(())
    } else {
        set_int_option(sock, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)
    }
}

/// The TOS byte a socket sends with is read on Linux only.
#[cfg(not(target_os = "linux"))]
pub fn sending_tos(_sock: &impl AsSock, _ipv6_socket: bool) -> Option<u8> {
    None
}

/// The TOS byte (IPv4) or traffic class (IPv6) the socket sends with.
#[cfg(target_os = "linux")]
pub fn sending_tos(sock: &impl AsSock, ipv6_socket: bool) -> Option<u8> {
    let v = if ipv6_socket {
        super::socket::get_int_option(sock, libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
    } else {
        super::socket::get_int_option(sock, libc::IPPROTO_IP, libc::IP_TOS)
    };
    // An unset traffic class reads as -1 on some kernels: none set.
    v.ok().map(|v| v.max(0) as u8)
}

/// Don't-fragment (Linux only here).
#[cfg(not(target_os = "linux"))]
pub fn set_dont_fragment(_sock: &impl AsSock, _ipv6_socket: bool) -> io::Result<()> {
    Err(super::unsupported("setting don't-fragment (--dont-fragment)"))
}

/// Sets don't-fragment on the socket's datagrams (path MTU discovery "do"):
/// IPv4 DF, and for an IPv6 socket also its IPv6 equivalent.
#[cfg(target_os = "linux")]
pub fn set_dont_fragment(sock: &impl AsSock, ipv6_socket: bool) -> io::Result<()> {
    if ipv6_socket {
        set_int_option(
            sock,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )?;
        // A dual-stack socket carrying IPv4 needs the IPv4 option too; an
        // IPv6-only one refuses it, which is fine.
        let _ = set_int_option(sock, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, libc::IP_PMTUDISC_DO);
        Ok(())
    } else {
        set_int_option(sock, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, libc::IP_PMTUDISC_DO)
    }
}

/// Timer slack is Linux's; elsewhere sleeps keep the system's precision.
#[cfg(not(target_os = "linux"))]
pub fn set_thread_timer_slack(_ns: u64) -> io::Result<()> {
    Ok(())
}

/// Sets the calling thread's timer slack, so sleeps end within `ns` of
/// their deadline instead of the default 50 µs (a pacing thread needs this).
#[cfg(target_os = "linux")]
pub fn set_thread_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes its value by value; no pointers.
    let rc = unsafe { libc::prctl(PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0) };
    check(rc).map(|_| ())
}

/// Sends each slice as one datagram, one `send` each (no `sendmmsg`
/// here). Returns how many went; an error after the first is left for the
/// next call to meet.
#[cfg(not(target_os = "linux"))]
pub fn send_batch(sock: &impl AsSock, msgs: &[&[u8]]) -> io::Result<usize> {
    let s = sock.sock_ref();
    let mut sent = 0;
    for m in msgs.iter().take(MAX_BATCH) {
        match s.send(m) {
            Ok(_) => sent += 1,
            Err(e) if sent == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(sent)
}

/// Sends each slice as one message on a connected socket with one
/// `sendmmsg` call. Returns how many messages went (possibly fewer than
/// asked, as `sendmmsg` does). At most [`MAX_BATCH`] messages are sent.
#[cfg(target_os = "linux")]
pub fn send_batch(sock: &impl AsSock, msgs: &[&[u8]]) -> io::Result<usize> {
    let n = msgs.len().min(MAX_BATCH);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: iovec and mmsghdr are plain data; zeroed is valid for both.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    for i in 0..n {
        iov[i] = libc::iovec {
            iov_base: msgs[i].as_ptr() as *mut libc::c_void,
            iov_len: msgs[i].len(),
        };
        hdrs[i].msg_hdr.msg_iov = &mut iov[i];
        hdrs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `hdrs[..n]` point at `iov[..n]`, which point at the caller's
    // live slices; the kernel only reads them (sendmmsg does not write
    // through msg_iov) and writes `msg_len` inside `hdrs`. Everything
    // outlives the call. No address is given: the socket is connected.
    let rc = unsafe { libc::sendmmsg(sock.raw_sock(), hdrs.as_mut_ptr(), n as libc::c_uint, 0) };
    check(rc).map(|r| r as usize)
}

/// The flag of a message cut to its slot.
#[cfg(unix)]
const TRUNCATED: i32 = libc::MSG_TRUNC;
/// The flag of a message cut to its slot.
#[cfg(not(unix))]
const TRUNCATED: i32 = 0x20;

/// Room for the control messages one datagram may carry: a GRO segment
/// size (int), a receive timestamp (timespec) and the TOS byte or traffic
/// class (int), each with its header, 8-byte aligned (24 + 32 + 24).
const CMSG_ROOM: usize = 96;

/// One received message, as [`RecvBatch::message`] shows it.
#[derive(Debug, Clone, Copy)]
pub struct Received<'a> {
    /// The payload (several datagrams back to back when `segment` is set).
    pub data: &'a [u8],
    /// GRO: the size of each coalesced datagram (the last may be shorter).
    pub segment: Option<usize>,
    /// Kernel receive time, CLOCK_REALTIME nanoseconds.
    pub rx_time_ns: Option<i64>,
    /// The TOS byte (IPv4) or traffic class (IPv6) the datagram arrived
    /// with, when asked for ([`set_recv_tos`]); its low two bits are the
    /// ECN field. With GRO, every coalesced datagram arrived with it (the
    /// kernel only coalesces datagrams whose headers match).
    pub tos: Option<u8>,
    /// The payload did not fit the slot and was cut.
    pub truncated: bool,
}

/// Buffers for receiving up to [`MAX_BATCH`] messages per `recvmmsg`.
pub struct RecvBatch {
    slot: usize,
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    slots: usize,
    data: Vec<u8>,
    control: Vec<u64>,
    lens: [u32; MAX_BATCH],
    ctl_lens: [usize; MAX_BATCH],
    flags: [i32; MAX_BATCH],
    got: usize,
}

impl RecvBatch {
    /// Buffers for `slots` messages (capped at [`MAX_BATCH`]) of up to
    /// `slot` bytes each.
    pub fn new(slot: usize, slots: usize) -> RecvBatch {
        let slots = slots.clamp(1, MAX_BATCH);
        let slot = slot.max(1);
        RecvBatch {
            slot,
            slots,
            data: vec![0u8; slot * slots],
            // u64 words keep each control area aligned for cmsghdr.
            control: vec![0u64; slots * CMSG_ROOM / 8],
            lens: [0; MAX_BATCH],
            ctl_lens: [0; MAX_BATCH],
            flags: [0; MAX_BATCH],
            got: 0,
        }
    }

    /// Receives one datagram (no `recvmmsg` here): blocks up to the
    /// socket's receive timeout. Returns the number of messages, 1.
    #[cfg(not(target_os = "linux"))]
    pub fn recv(&mut self, sock: &impl AsSock) -> io::Result<usize> {
        self.got = 0;
        let slot = &mut self.data[..self.slot];
        // SAFETY: an initialised byte buffer may be viewed as maybe-uninit
        // bytes; the receive only writes initialised bytes into it.
        let uninit = unsafe { &mut *(slot as *mut [u8] as *mut [mem::MaybeUninit<u8>]) };
        let mut bufs = [socket2::MaybeUninitSlice::new(uninit)];
        let (n, flags) = sock.sock_ref().recv_vectored(&mut bufs)?;
        self.lens[0] = n.min(self.slot) as u32;
        self.ctl_lens[0] = 0;
        self.flags[0] = if flags.is_truncated() { TRUNCATED } else { 0 };
        self.got = 1;
        Ok(1)
    }

    /// Receives what is queued: blocks (up to the socket's receive timeout)
    /// for the first message, then takes whatever else is already there.
    /// Returns the number of messages.
    #[cfg(target_os = "linux")]
    pub fn recv(&mut self, sock: &impl AsSock) -> io::Result<usize> {
        self.got = 0;
        // SAFETY: plain data; zeroed is valid.
        let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
        // SAFETY: plain data; zeroed is valid.
        let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
        let data = self.data.as_mut_ptr();
        let control = self.control.as_mut_ptr().cast::<u8>();
        for i in 0..self.slots {
            iov[i] = libc::iovec {
                // SAFETY: i * slot + slot <= data.len(), so the offset stays inside the buffer.
                iov_base: unsafe { data.add(i * self.slot) }.cast(),
                iov_len: self.slot,
            };
            let h = &mut hdrs[i].msg_hdr;
            h.msg_iov = &mut iov[i];
            h.msg_iovlen = 1;
            // SAFETY: i * CMSG_ROOM + CMSG_ROOM <= control.len() * 8, so the offset stays inside.
            h.msg_control = unsafe { control.add(i * CMSG_ROOM) }.cast();
            h.msg_controllen = CMSG_ROOM as _;
        }
        // SAFETY: every header points at its own disjoint slot of `data`
        // and `control`, both owned by `self` and alive for the call; the
        // kernel writes at most `iov_len` / `msg_controllen` bytes there and
        // updates fields inside `hdrs`. No timeout pointer (the socket's
        // SO_RCVTIMEO bounds the wait for the first message).
        let rc = unsafe {
            libc::recvmmsg(
                sock.raw_sock(),
                hdrs.as_mut_ptr(),
                self.slots as libc::c_uint,
                // c_int with glibc, c_uint with musl.
                libc::MSG_WAITFORONE as _,
                std::ptr::null_mut(),
            )
        };
        let n = check(rc)? as usize;
        // msg_controllen is size_t with glibc but u32 with musl.
        #[allow(clippy::unnecessary_cast)]
        for (i, h) in hdrs.iter().enumerate().take(n) {
            self.lens[i] = h.msg_len;
            self.ctl_lens[i] = (h.msg_hdr.msg_controllen as usize).min(CMSG_ROOM);
            self.flags[i] = h.msg_hdr.msg_flags;
        }
        self.got = n;
        Ok(n)
    }

    /// Messages from the last [`RecvBatch::recv`].
    pub fn len(&self) -> usize {
        self.got
    }

    /// Whether the last receive got nothing.
    pub fn is_empty(&self) -> bool {
        self.got == 0
    }

    /// The `i`-th message of the last receive.
    pub fn message(&self, i: usize) -> Received<'_> {
        let len = (self.lens[i] as usize).min(self.slot);
        let data = &self.data[i * self.slot..i * self.slot + len];
        let base = i * CMSG_ROOM / 8;
        let c = parse_control(&self.control[base..base + CMSG_ROOM / 8], self.ctl_lens[i]);
        Received {
            data,
            segment: c.segment,
            rx_time_ns: c.rx_time_ns,
            tos: c.tos,
            truncated: self.flags[i] & TRUNCATED != 0,
        }
    }
}

/// Receives one datagram on an unconnected socket: its length, where it
/// came from, and the TOS byte it arrived with when asked for
/// ([`set_recv_tos`]). Elsewhere the TOS byte is never known.
#[cfg(not(target_os = "linux"))]
pub fn recv_from_tos(sock: &impl AsSock, buf: &mut [u8]) -> io::Result<(usize, std::net::SocketAddr, Option<u8>)> {
    // SAFETY: an initialised byte buffer may be viewed as maybe-uninit
    // bytes; the receive only writes initialised bytes into it.
    let uninit = unsafe { &mut *(buf as *mut [u8] as *mut [mem::MaybeUninit<u8>]) };
    let (n, from) = sock.sock_ref().recv_from(uninit)?;
    let from = from
        .as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP source"))?;
    Ok((n, from, None))
}

/// Receives one datagram on an unconnected socket: its length, where it
/// came from, and the TOS byte it arrived with when asked for
/// ([`set_recv_tos`]).
#[cfg(target_os = "linux")]
pub fn recv_from_tos(sock: &impl AsSock, buf: &mut [u8]) -> io::Result<(usize, std::net::SocketAddr, Option<u8>)> {
    let mut control = [0u64; CMSG_ROOM / 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let fd = sock.raw_sock();
    // SAFETY: try_init hands a zeroed sockaddr_storage and its length for
    // recvmsg to fill; the header points at it, at `iov` (the caller's
    // live buffer, `iov_len` bytes) and at `control` (CMSG_ROOM bytes),
    // all alive for the call; the kernel writes at most those lengths.
    let ((n, ctl_len), from) = unsafe {
        socket2::SockAddr::try_init(|storage, len| {
            // SAFETY: plain data; zeroed is valid.
            let mut h: libc::msghdr = mem::zeroed();
            h.msg_name = storage.cast();
            h.msg_namelen = *len;
            h.msg_iov = &mut iov;
            h.msg_iovlen = 1;
            h.msg_control = control.as_mut_ptr().cast();
            h.msg_controllen = CMSG_ROOM as _;
            let rc = libc::recvmsg(fd, &mut h, 0);
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            *len = h.msg_namelen;
            // msg_controllen is size_t with glibc but u32 with musl.
            #[allow(clippy::unnecessary_cast)]
            Ok((rc as usize, (h.msg_controllen as usize).min(CMSG_ROOM)))
        })?
    };
    let from = from
        .as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP source"))?;
    Ok((n.min(buf.len()), from, parse_control(&control, ctl_len).tos))
}

/// What one message's control messages said.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Control {
    segment: Option<usize>,
    rx_time_ns: Option<i64>,
    tos: Option<u8>,
}

/// The GRO segment size, receive time and TOS byte in one message's
/// control area (`ctl_bytes` of it filled by the kernel).
#[cfg(target_os = "linux")]
fn parse_control(area: &[u64], ctl_bytes: usize) -> Control {
    let mut segment = None;
    let mut rx_time_ns = None;
    let mut tos = None;
    // Walk the control messages by hand: each is a cmsghdr followed by
    // its data, padded to 8 bytes. Lengths come from the kernel but are
    // checked against the area before use.
    // SAFETY: viewing initialised u64 words as bytes is always valid.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(area.as_ptr().cast::<u8>(), area.len() * 8) };
    let hdr_len = mem::size_of::<libc::cmsghdr>();
    let mut off = 0;
    while off + hdr_len <= ctl_bytes {
        // SAFETY: `off` is 8-aligned inside an 8-aligned buffer and
        // `off + hdr_len` is in bounds, so reading a cmsghdr is valid.
        let h: libc::cmsghdr = unsafe { std::ptr::read(bytes.as_ptr().add(off).cast()) };
        let clen = h.cmsg_len as usize;
        if clen < hdr_len || off + clen > ctl_bytes {
            break;
        }
        let payload = &bytes[off + hdr_len..off + clen];
        match (h.cmsg_level, h.cmsg_type) {
            (libc::SOL_UDP, UDP_GRO) if payload.len() >= 4 => {
                let v = i32::from_ne_bytes([payload[0], payload[1], payload[2], payload[3]]);
                if v > 0 {
                    segment = Some(v as usize);
                }
            }
            (libc::SOL_SOCKET, SO_TIMESTAMPNS) if payload.len() >= 16 => {
                let mut s = [0u8; 8];
                let mut n = [0u8; 8];
                s.copy_from_slice(&payload[0..8]);
                n.copy_from_slice(&payload[8..16]);
                let (s, n) = (i64::from_ne_bytes(s), i64::from_ne_bytes(n));
                rx_time_ns = Some(s.saturating_mul(1_000_000_000).saturating_add(n));
            }
            // IPv4's IP_TOS carries one byte; IPv6's IPV6_TCLASS an int.
            (libc::IPPROTO_IP, libc::IP_TOS) if !payload.is_empty() => tos = Some(payload[0]),
            (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) if payload.len() >= 4 => {
                let v = i32::from_ne_bytes([payload[0], payload[1], payload[2], payload[3]]);
                tos = Some((v & 0xff) as u8);
            }
            _ => {}
        }
        off += (clen + 7) & !7;
    }
    Control {
        segment,
        rx_time_ns,
        tos,
    }
}

/// No control messages are asked for here.
#[cfg(not(target_os = "linux"))]
fn parse_control(_area: &[u64], _ctl_bytes: usize) -> Control {
    Control::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Duration;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        (a, b)
    }

    #[test]
    fn batches_go_out_and_come_back_as_separate_datagrams() {
        let (a, b) = pair();
        let d: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 100 + i as usize]).collect();
        let refs: Vec<&[u8]> = d.iter().map(|v| v.as_slice()).collect();
        assert_eq!(send_batch(&a, &refs).unwrap(), 10);
        set_rx_timestamps(&b).unwrap();
        let mut rb = RecvBatch::new(2048, 16);
        let mut got = Vec::new();
        while got.len() < 10 {
            let n = rb.recv(&b).unwrap();
            for i in 0..n {
                let m = rb.message(i);
                assert!(m.rx_time_ns.is_some());
                assert_eq!(m.segment, None);
                got.push(m.data.to_vec());
            }
        }
        assert_eq!(got, d);
    }

    #[test]
    fn gso_send_arrives_as_a_gro_buffer_or_as_datagrams() {
        let (a, b) = pair();
        if set_gso(&a, 100).is_err() {
            eprintln!("NOTICE: no UDP GSO in this kernel");
            return;
        }
        // With GRO the datagrams come as one buffer, without as ten: the
        // same datagrams either way.
        let _ = set_gro(&b);
        let buf: Vec<u8> = (0..1000).map(|i| (i / 100) as u8).collect();
        assert_eq!(a.send(&buf).unwrap(), 1000);
        let mut rb = RecvBatch::new(MAX_UDP_PAYLOAD, 4);
        let mut datagrams = Vec::new();
        while datagrams.len() < 10 {
            let n = rb.recv(&b).unwrap();
            for i in 0..n {
                let m = rb.message(i);
                let seg = m.segment.unwrap_or(m.data.len());
                datagrams.extend(m.data.chunks(seg).map(|c| c.to_vec()));
            }
        }
        assert_eq!(datagrams.len(), 10);
        for (k, d) in datagrams.iter().enumerate() {
            assert_eq!(d, &vec![k as u8; 100]);
        }
        clear_gso(&a).unwrap();
    }

    /// A control area as the kernel lays it out: each message a cmsghdr
    /// and its data, padded to 8 bytes.
    #[cfg(target_os = "linux")]
    fn area(msgs: &[(i32, i32, &[u8])]) -> (Vec<u64>, usize) {
        // cmsghdr on 64-bit Linux: an 8-byte length (glibc's size_t; musl's
        // u32 and padding, the same bytes little-endian), level, type.
        assert_eq!(mem::size_of::<libc::cmsghdr>(), 16);
        let mut bytes = Vec::new();
        for (level, kind, data) in msgs {
            bytes.extend_from_slice(&((16 + data.len()) as u64).to_ne_bytes());
            bytes.extend_from_slice(&level.to_ne_bytes());
            bytes.extend_from_slice(&kind.to_ne_bytes());
            bytes.extend_from_slice(data);
            bytes.resize(bytes.len().next_multiple_of(8), 0);
        }
        let filled = bytes.len();
        bytes.resize(CMSG_ROOM, 0);
        let words = bytes
            .chunks(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        (words, filled)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn control_messages_give_segment_time_and_tos() {
        let ts: Vec<u8> = [3i64.to_ne_bytes(), 5i64.to_ne_bytes()].concat();
        let (a, n) = area(&[
            (libc::SOL_UDP, UDP_GRO, &1200i32.to_ne_bytes()),
            (libc::SOL_SOCKET, SO_TIMESTAMPNS, &ts),
            (libc::IPPROTO_IP, libc::IP_TOS, &[0xb9]),
        ]);
        assert_eq!(n, 80, "the three fit the room");
        let c = parse_control(&a, n);
        assert_eq!(c.segment, Some(1200));
        assert_eq!(c.rx_time_ns, Some(3_000_000_005));
        assert_eq!(c.tos, Some(0xb9));
        // IPv6's traffic class is an int.
        let (a, n) = area(&[(libc::IPPROTO_IPV6, libc::IPV6_TCLASS, &0x03i32.to_ne_bytes())]);
        assert_eq!(parse_control(&a, n).tos, Some(3));
        // Nothing asked for, nothing found; a length past the filled bytes
        // stops the walk rather than reading beyond it.
        assert_eq!(parse_control(&a, 0), Control::default());
        let (a, n) = area(&[(libc::IPPROTO_IP, libc::IP_TOS, &[1])]);
        assert_eq!(parse_control(&a, n - 8).tos, None);
    }

    /// The TOS byte a sender set comes back with every datagram, and with
    /// a GRO buffer too.
    #[cfg(target_os = "linux")]
    #[test]
    fn arriving_tos_is_read() {
        let (a, b) = pair();
        crate::socket::set_int_option(&a, libc::IPPROTO_IP, libc::IP_TOS, 0xb9).unwrap();
        set_recv_tos(&b, false).unwrap();
        let _ = set_gro(&b);
        set_rx_timestamps(&b).unwrap();
        let d: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 200]).collect();
        let refs: Vec<&[u8]> = d.iter().map(|v| v.as_slice()).collect();
        assert_eq!(send_batch(&a, &refs).unwrap(), 8);
        let mut rb = RecvBatch::new(MAX_UDP_PAYLOAD, 8);
        let mut got = 0;
        while got < 8 {
            let n = rb.recv(&b).unwrap();
            for i in 0..n {
                let m = rb.message(i);
                assert_eq!(m.tos, Some(0xb9));
                assert!(m.rx_time_ns.is_some());
                got += m.data.len() / 200;
            }
        }
    }

    /// A listener's single receive tells the source and the TOS byte.
    #[test]
    fn a_listener_reads_source_and_tos() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        #[cfg(target_os = "linux")]
        {
            crate::socket::set_int_option(&a, libc::IPPROTO_IP, libc::IP_TOS, 0x02).unwrap();
            set_recv_tos(&b, false).unwrap();
        }
        a.send_to(&[5u8; 300], b.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 2048];
        let (n, from, tos) = recv_from_tos(&b, &mut buf).unwrap();
        assert_eq!((n, from), (300, a.local_addr().unwrap()));
        assert_eq!(&buf[..n], &[5u8; 300][..]);
        #[cfg(target_os = "linux")]
        assert_eq!(tos, Some(0x02));
        #[cfg(not(target_os = "linux"))]
        assert_eq!(tos, None);
    }

    #[test]
    fn truncation_is_flagged() {
        let (a, b) = pair();
        a.send(&[7u8; 300]).unwrap();
        let mut rb = RecvBatch::new(100, 1);
        assert_eq!(rb.recv(&b).unwrap(), 1);
        let m = rb.message(0);
        assert!(m.truncated);
        assert_eq!(m.data.len(), 100);
    }

    #[test]
    fn timer_slack_and_dont_fragment_are_accepted() {
        set_thread_timer_slack(1000).unwrap();
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_dont_fragment(&s, false).unwrap();
        let v = crate::socket::get_int_option(&s, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER).unwrap();
        assert_eq!(v, libc::IP_PMTUDISC_DO);
    }
}
