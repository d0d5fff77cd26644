//! Socket setup shared by client and server: name resolution, listeners,
//! connects with deadlines, and the per-test socket options.

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol as SockProto, SockRef, Socket, TcpKeepalive, Type};

use crate::config::{Family, KeepAlive, TestParams};
use crate::error::{Code, Error};

/// Resolves `host:port`, honouring `-4`/`-6`.
pub fn resolve(host: &str, port: u16, family: Family) -> Result<Vec<SocketAddr>, Error> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| {
            Error::msg(
                Code::CONNECT,
                format!("{}: {}", Code::CONNECT.message().unwrap_or(""), resolve_words(&e)),
            )
        })?
        .filter(|a| match family {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        })
        .collect();
    if addrs.is_empty() {
        return Err(Error::msg(
            Code::CONNECT,
            format!("{}: Name or service not known", Code::CONNECT.message().unwrap_or("")),
        ));
    }
    Ok(addrs)
}

fn resolve_words(e: &io::Error) -> String {
    let s = e.to_string();
    // std words resolver failures as "failed to lookup address information: X".
    match s.strip_prefix("failed to lookup address information: ") {
        Some(rest) => rest.to_string(),
        None => s,
    }
}

/// Opens a listening TCP socket. With no bind address and `Family::Any`,
/// listens dual-stack on `::` (IPv4 clients appear as mapped addresses).
pub fn listen_tcp(
    bind: Option<&str>,
    port: u16,
    family: Family,
    mptcp: bool,
    backlog: i32,
) -> Result<TcpListener, Error> {
    let addr = listen_addr(bind, port, family)?;
    let proto = wirespeed_sys::socket::stream_protocol(mptcp).map_err(|e| Error::io(Code::LISTEN, &e))?;
    let sock =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(proto)).map_err(|e| Error::io(Code::LISTEN, &e))?;
    sock.set_reuse_address(true)
        .map_err(|e| Error::io(Code::REUSEADDR, &e))?;
    if addr.is_ipv6() {
        let v6only = family == Family::V6 || bind.is_some();
        sock.set_only_v6(v6only).map_err(|e| Error::io(Code::V6ONLY, &e))?;
    }
    sock.bind(&addr.into()).map_err(|e| Error::io(Code::LISTEN, &e))?;
    sock.listen(backlog).map_err(|e| Error::io(Code::LISTEN, &e))?;
    Ok(sock.into())
}

/// Opens the server's UDP socket on the test port, where new UDP streams
/// say hello. It shares the port with every test's connected stream
/// sockets (SO_REUSEADDR + SO_REUSEPORT; a connected socket wins the
/// kernel's lookup for its peer), so many UDP tests can run at once.
pub fn listen_udp(bind: Option<&str>, port: u16, family: Family) -> Result<UdpSocket, Error> {
    let addr = listen_addr(bind, port, family)?;
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(SockProto::UDP))
        .map_err(|e| Error::io(Code::STREAMLISTEN, &e))?;
    sock.set_reuse_address(true)
        .map_err(|e| Error::io(Code::REUSEADDR, &e))?;
    wirespeed_sys::socket::set_reuse_port(&sock).map_err(|e| Error::io(Code::REUSEADDR, &e))?;
    if addr.is_ipv6() {
        let v6only = family == Family::V6 || bind.is_some();
        sock.set_only_v6(v6only).map_err(|e| Error::io(Code::V6ONLY, &e))?;
    }
    sock.bind(&addr.into()).map_err(|e| Error::io(Code::STREAMLISTEN, &e))?;
    sock.set_nonblocking(true)
        .map_err(|e| Error::io(Code::NONBLOCKING, &e))?;
    Ok(sock.into())
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, a dual-stack socket's
/// view of an IPv4 peer) as the IPv4 address it carries.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// A socket address with its IPv4-mapped address made plain IPv4 (what a
/// UDP socket of the stream's family should bind and connect to).
pub fn canonical(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(canonical_ip(a.ip()), a.port())
}

/// An address as iperf prints it: IPv4-mapped IPv6 without `::ffff:`.
pub fn host_string(ip: IpAddr) -> String {
    canonical_ip(ip).to_string()
}

/// `(host, port)` of a socket address, iperf-style.
pub fn split_addr(a: &SocketAddr) -> (String, u16) {
    (host_string(a.ip()), a.port())
}

/// The server's socket for one UDP stream: bound to the address and port
/// the client sent its hello to, connected to the client's stream socket.
pub fn udp_stream_socket(local: SocketAddr, peer: SocketAddr) -> io::Result<UdpSocket> {
    let (local, peer) = (canonical(local), canonical(peer));
    let sock = Socket::new(Domain::for_address(peer), Type::DGRAM, Some(SockProto::UDP))?;
    sock.set_reuse_address(true)?;
    wirespeed_sys::socket::set_reuse_port(&sock)?;
    sock.bind(&local.into())?;
    sock.connect(&peer.into())?;
    Ok(sock.into())
}

/// A client's UDP stream socket: bound as asked (`-B`, `--cport`,
/// `--bind-dev`), options applied by `apply`, connected to the server.
pub fn connect_udp(
    addr: SocketAddr,
    opts: &ConnectOpts,
    apply: impl FnOnce(&Socket) -> Result<(), Error>,
) -> Result<UdpSocket, Error> {
    let code = Code::STREAMCONNECT;
    let sock = client_socket(addr, opts, Type::DGRAM, SockProto::UDP, code)?;
    apply(&sock)?;
    sock.connect(&addr.into()).map_err(|e| Error::io(code, &e))?;
    Ok(sock.into())
}

/// Why `--sctp` cannot run here: the kernel has no SCTP (one line for the
/// user), or it has but wirespeed's SCTP data path is not built yet.
pub fn sctp_unavailable() -> Error {
    #[cfg(unix)]
    match Socket::new(Domain::IPV4, Type::STREAM, Some(SockProto::from(libc::IPPROTO_SCTP))) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPROTONOSUPPORT | libc::ESOCKTNOSUPPORT)) => {
            Error::msg(Code::NOSCTP, "SCTP is not supported by this kernel")
        }
        _ => Error::param_msg(Code::UNIMP, "SCTP tests are not implemented yet"),
    }
    #[cfg(not(unix))]
    Error::msg(Code::NOSCTP, "SCTP is not supported on this platform")
}

/// Receive buffer a UDP stream gets unless `-w` says otherwise: large enough
/// to ride out a scheduling stall of the receiving thread at Gbit/s rates.
pub(crate) const UDP_DEFAULT_RCVBUF: usize = 8 << 20;

/// The address a listener binds.
pub(crate) fn listen_addr(bind: Option<&str>, port: u16, family: Family) -> Result<SocketAddr, Error> {
    match bind {
        Some(b) => {
            let mut addrs = resolve(b, port, family).map_err(|e| Error {
                code: Code::LISTEN,
                ..e
            })?;
            Ok(addrs.remove(0))
        }
        None => Ok(match family {
            Family::V4 => SocketAddr::new(IpAddr::from([0, 0, 0, 0]), port),
            _ => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
        }),
    }
}

/// How a client socket is prepared before connecting.
#[derive(Debug, Clone, Default)]
pub struct ConnectOpts<'a> {
    /// Local address to bind.
    pub bind: Option<&'a str>,
    /// Local port to bind.
    pub port: Option<u16>,
    /// SO_BINDTODEVICE.
    pub device: Option<&'a str>,
    /// Connect deadline.
    pub timeout: Option<Duration>,
    /// Use MPTCP.
    pub mptcp: bool,
}

/// A client socket of type `ty` for talking to `addr`, bound as `opts`
/// asks (device, address, port).
fn client_socket(
    addr: SocketAddr,
    opts: &ConnectOpts,
    ty: Type,
    proto: SockProto,
    code: Code,
) -> Result<Socket, Error> {
    let sock = Socket::new(Domain::for_address(addr), ty, Some(proto)).map_err(|e| Error::io(code, &e))?;
    if let Some(dev) = opts.device {
        wirespeed_sys::socket::bind_device(&SockRef::from(&sock), dev).map_err(|e| Error::io(Code::BINDDEV, &e))?;
    }
    if opts.bind.is_some() || opts.port.is_some() {
        let ip = match opts.bind {
            Some(b) => {
                let fam = if addr.is_ipv4() { Family::V4 } else { Family::V6 };
                resolve(b, 0, fam).map_err(|e| Error { code, ..e })?[0].ip()
            }
            None if addr.is_ipv4() => IpAddr::from([0, 0, 0, 0]),
            None => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        if opts.port.is_some() {
            let _ = sock.set_reuse_address(true);
        }
        sock.bind(&SocketAddr::new(ip, opts.port.unwrap_or(0)).into())
            .map_err(|e| Error::io(code, &e))?;
    }
    Ok(sock)
}

/// Connects a TCP socket, applying `apply` to it before the connect.
pub fn connect_tcp(
    addr: SocketAddr,
    opts: &ConnectOpts,
    apply: impl FnOnce(&Socket) -> Result<(), Error>,
    code: Code,
) -> Result<TcpStream, Error> {
    let proto = wirespeed_sys::socket::stream_protocol(opts.mptcp).map_err(|e| Error::io(code, &e))?;
    let sock = client_socket(addr, opts, Type::STREAM, proto, code)?;
    apply(&sock)?;
    let r = match opts.timeout {
        Some(t) => sock.connect_timeout(&addr.into(), t),
        None => sock.connect(&addr.into()),
    };
    r.map_err(|e| Error::io(code, &e))?;
    Ok(sock.into())
}

/// Handshakes a client keeps in flight at once when it opens many streams.
pub const CONNECTS_AT_ONCE: usize = 64;

/// Connects `n` TCP sockets to `addr` (a batch: a client sends each its
/// cookie before the next batch), socket `i` bound as `opts(i)` asks and
/// set up by `apply` before its connect. Up to [`CONNECTS_AT_ONCE`]
/// handshakes run at once (a thread each), so a long path costs a round trip
/// for a batch, not one per stream. `stop` is looked at before each connect.
/// The results come in order.
pub fn connect_tcp_many<'a>(
    addr: SocketAddr,
    n: usize,
    opts: &(dyn Fn(usize) -> ConnectOpts<'a> + Sync),
    apply: &(dyn Fn(&Socket) -> Result<(), Error> + Sync),
    code: Code,
    stop: &(dyn Fn() -> bool + Sync),
) -> Vec<Result<TcpStream, Error>> {
    let one = |i: usize| {
        if stop() {
            return Err(Error::new(code));
        }
        connect_tcp(addr, &opts(i), apply, code)
    };
    let workers = n.min(CONNECTS_AT_ONCE);
    if workers <= 1 {
        return (0..n).map(one).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::with_capacity(n));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let r = one(i);
                    if let Ok(mut d) = done.lock() {
                        d.push((i, r));
                    }
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_default();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Connects a client's control-like connection to `host` port `port`: the
/// configuration's family, `-B` address and device, and connect timeout.
pub fn connect_client(net: &crate::config::NetOptions, host: &str, port: u16) -> Result<TcpStream, Error> {
    let addrs = resolve(host, port, net.family)?;
    let opts = ConnectOpts {
        bind: net.bind.as_deref(),
        port: None,
        device: net.bind_dev.as_deref(),
        timeout: net.connect_timeout,
        mptcp: false,
    };
    connect_any(&addrs, &opts, &|_| Ok(()), Code::CONNECT)
}

/// Connects to the first address that answers.
pub(crate) fn connect_any(
    addrs: &[SocketAddr],
    opts: &ConnectOpts,
    apply: &dyn Fn(&Socket) -> Result<(), Error>,
    code: Code,
) -> Result<TcpStream, Error> {
    let mut last = Error::new(code);
    for a in addrs {
        match connect_tcp(*a, opts, apply, code) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Control-connection options: NODELAY, keepalive, TCP_USER_TIMEOUT.
pub fn setup_control(s: &TcpStream, ka: Option<KeepAlive>, user_timeout: Option<Duration>) -> Result<(), Error> {
    s.set_nodelay(true).map_err(|e| Error::io(Code::SETNODELAY, &e))?;
    let r = SockRef::from(s);
    if let Some(ka) = ka {
        r.set_keepalive(true).map_err(|e| Error::io(Code::SETCNTLKA, &e))?;
        let mut k = TcpKeepalive::new();
        if let Some(i) = ka.idle {
            k = k.with_time(Duration::from_secs(i as u64));
        }
        if let Some(i) = ka.interval {
            k = k.with_interval(Duration::from_secs(i as u64));
        }
        if let Some(c) = ka.count {
            k = k.with_retries(c);
        }
        r.set_tcp_keepalive(&k).map_err(|e| Error::io(Code::SETCNTLKA, &e))?;
    }
    if let Some(t) = user_timeout {
        wirespeed_sys::socket::set_user_timeout(&r, t).map_err(|e| Error::io(Code::SETUSERTIMEOUT, &e))?;
    }
    Ok(())
}

/// Warnings produced while applying options (e.g. a clamped buffer).
pub type Warnings = Vec<String>;

/// SO_DONTROUTE: reach only hosts on directly connected networks
/// (iperf 2's `--local-only`).
pub fn set_dont_route(s: &Socket) -> Result<(), Error> {
    wirespeed_sys::socket::set_dont_route(s)
        .map_err(|e| Error::msg(Code::SETTOS, format!("unable to set SO_DONTROUTE: {e}")))
}

/// TCP_NOTSENT_LOWAT: writes wait until less than `bytes` are queued
/// unsent (iperf 2's `--tcp-write-prefetch`).
pub fn set_notsent_lowat(s: &Socket, bytes: u32) -> Result<(), Error> {
    wirespeed_sys::socket::set_notsent_lowat(&SockRef::from(s), bytes)
        .map_err(|e| Error::msg(Code::SETBUF, format!("unable to set TCP_NOTSENT_LOWAT: {e}")))
}

/// Applies a test's data-socket options. Window sizes the kernel clamps
/// produce a warning, as iperf2 does, rather than failing.
pub fn apply_data_options(
    s: &Socket,
    p: &TestParams,
    tcp: bool,
    remote: Option<SocketAddr>,
    warn: &mut Warnings,
) -> Result<(), Error> {
    if let Some(w) = p.window {
        set_buffers(s, w as usize, warn)?;
        if tcp && s.peer_addr().is_ok() {
            // Accepted already (a server's stream): the kernel fixed this
            // socket's window clamp at the handshake, from the listener's
            // buffer, and a larger SO_RCVBUF now would not lift it (a 4M
            // window would stay at 64K). The clamp says `w` itself, as the
            // clamp of a socket whose buffer was set before its handshake.
            let _ = wirespeed_sys::socket::set_window_clamp(&SockRef::from(s), w);
        }
    } else if !tcp {
        // Not asked for, so no warning when the kernel clamps it.
        let _ = wirespeed_sys::socket::set_buffer_forced(&SockRef::from(s), true, UDP_DEFAULT_RCVBUF);
    }
    if !tcp && p.dont_fragment {
        let v6 = s
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .is_some_and(|a| a.is_ipv6());
        wirespeed_sys::udp::set_dont_fragment(s, v6).map_err(|_| Error::new(Code::SETDONTFRAGMENT))?;
    }
    if tcp {
        if p.nodelay {
            s.set_tcp_nodelay(true).map_err(|e| Error::io(Code::SETNODELAY, &e))?;
        }
        if let Some(m) = p.mss {
            wirespeed_sys::socket::set_mss(s, m).map_err(|e| Error::io(Code::SETMSS, &e))?;
        }
        if let Some(c) = &p.congestion
            && let Err(e) = wirespeed_sys::socket::set_congestion(s, c)
        {
            return Err(if e.raw_os_error() == Some(libc::ENOENT) {
                Error::new(Code::SETCONGESTION)
            } else {
                Error::io(Code::SETCONGESTION, &e)
            });
        }
    }
    if p.tos > 0 {
        let v6 = s
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .is_some_and(|a| a.is_ipv6());
        if v6 {
            wirespeed_sys::socket::set_tclass(s, p.tos as u32).map_err(|e| Error::io(Code::SETCOS, &e))?;
            // Dual-stack sockets carrying IPv4 need IP_TOS too.
            let _ = s.set_tos_v4(p.tos as u32);
        } else {
            s.set_tos_v4(p.tos as u32).map_err(|e| Error::io(Code::SETTOS, &e))?;
        }
    }
    if let (Some(fl), Some(SocketAddr::V6(dst))) = (p.flowlabel, remote) {
        wirespeed_sys::socket::set_flowlabel(s, dst.ip(), fl).map_err(|_| Error::new(Code::SETFLOW))?;
    }
    if p.fq_rate > 0 {
        wirespeed_sys::socket::set_max_pacing_rate(s, p.fq_rate / 8).map_err(|e| Error::io(Code::SETPACING, &e))?;
    }
    Ok(())
}

/// Sets SO_SNDBUF and SO_RCVBUF, forcing past the sysctl limits when
/// privileged, warning when the kernel still gives less.
pub fn set_buffers(s: &Socket, bytes: usize, warn: &mut Warnings) -> Result<(), Error> {
    use wirespeed_sys::socket::set_buffer_forced;
    set_buffer_forced(&SockRef::from(s), false, bytes).map_err(|e| Error::io(Code::SETBUF, &e))?;
    set_buffer_forced(&SockRef::from(s), true, bytes).map_err(|e| Error::io(Code::SETBUF, &e))?;
    // Linux reports twice the value set (bookkeeping overhead).
    let reported = if cfg!(target_os = "linux") { 2 } else { 1 };
    let snd = s.send_buffer_size().unwrap_or(0) / reported;
    let rcv = s.recv_buffer_size().unwrap_or(0) / reported;
    if snd < bytes || rcv < bytes {
        warn.push(format!(
            "requested socket buffer size {bytes} but the kernel gave {}",
            snd.min(rcv)
        ));
    }
    Ok(())
}

/// The congestion control algorithm a TCP socket uses.
pub(crate) fn congestion_of(s: &TcpStream) -> Option<String> {
    let v = wirespeed_sys::socket::congestion(&SockRef::from(s)).ok()?;
    let end = v.iter().position(|b| *b == 0).unwrap_or(v.len());
    Some(String::from_utf8_lossy(&v[..end]).into_owned())
}

/// TCP_MAXSEG of a connected socket.
pub fn mss_of(s: &TcpStream) -> u32 {
    wirespeed_sys::socket::mss(&SockRef::from(s)).unwrap_or(0)
}

/// (SO_SNDBUF, SO_RCVBUF) as the kernel reports them.
pub(crate) fn buffers_of(s: &impl wirespeed_sys::AsSock) -> (u64, u64) {
    let r = s.sock_ref();
    (
        r.send_buffer_size().unwrap_or(0) as u64,
        r.recv_buffer_size().unwrap_or(0) as u64,
    )
}

/// An `io::Error` that only means "try again" for a socket with a timeout.
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// How long a blocked read in [`read_exact_by`] waits before it looks at
/// the stop flag again.
pub const POLL_STOP: Duration = Duration::from_millis(100);

/// Reads exactly `buf.len()` bytes from `s` by `deadline`: false on EOF,
/// an error, the deadline or `stop`. Each read waits at most
/// [`POLL_STOP`]. `armed`: the socket's read timeout is already
/// `POLL_STOP` (a hot loop sets it once), so it is changed only near the
/// deadline, and set back after.
pub fn read_exact_by(
    s: &TcpStream,
    buf: &mut [u8],
    deadline: std::time::Instant,
    stop: &std::sync::atomic::AtomicBool,
    armed: bool,
) -> bool {
    use std::io::Read;
    let mut got = 0;
    let mut shortened = false;
    let done = loop {
        if got == buf.len() {
            break true;
        }
        let now = std::time::Instant::now();
        if now >= deadline || stop.load(std::sync::atomic::Ordering::Relaxed) {
            break false;
        }
        let left = deadline - now;
        if !armed || left < POLL_STOP {
            let _ = s.set_read_timeout(Some(left.min(POLL_STOP)));
            shortened = armed;
        }
        match (&*s).read(&mut buf[got..]) {
            Ok(0) => break false,
            Ok(n) => got += n,
            Err(e) if is_timeout(&e) => {}
            Err(_) => break false,
        }
    };
    if shortened {
        let _ = s.set_read_timeout(Some(POLL_STOP));
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_print_as_ipv4() {
        let a: SocketAddr = "[::ffff:127.0.0.1]:5201".parse().unwrap();
        assert_eq!(split_addr(&a), ("127.0.0.1".to_string(), 5201));
        assert_eq!(canonical(a), "127.0.0.1:5201".parse::<SocketAddr>().unwrap());
        let b: SocketAddr = "[::1]:5201".parse().unwrap();
        assert_eq!(split_addr(&b).0, "::1");
    }

    #[test]
    fn resolves_loopback_with_family_filters() {
        assert!(resolve("127.0.0.1", 5201, Family::Any).unwrap()[0].is_ipv4());
        assert!(resolve("::1", 5201, Family::V6).unwrap()[0].is_ipv6());
        assert!(resolve("127.0.0.1", 5201, Family::V6).is_err());
        let e = resolve("no-such-host.invalid", 1, Family::Any).unwrap_err();
        assert_eq!(e.code, Code::CONNECT);
    }

    #[test]
    fn dual_stack_listener_takes_ipv4() {
        let l = listen_tcp(None, 0, Family::Any, false, 16).unwrap();
        let port = l.local_addr().unwrap().port();
        let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (s, peer) = l.accept().unwrap();
        assert_eq!(crate::net::host_string(peer.ip()), "127.0.0.1");
        drop((c, s));
    }

    #[test]
    fn data_options_are_applied_to_the_socket() {
        use wirespeed_sys::socket::get_int_option;
        let p = TestParams {
            nodelay: true,
            mss: Some(1200),
            tos: 0x28,
            congestion: Some("reno".into()),
            window: Some(1 << 20),
            ..TestParams::default()
        };
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        let mut w = Vec::new();
        apply_data_options(&s, &p, true, None, &mut w).unwrap();
        assert!(s.tcp_nodelay().unwrap());
        assert_eq!(s.tcp_mss().unwrap(), 1200);
        assert_eq!(get_int_option(&s, libc::IPPROTO_IP, libc::IP_TOS).unwrap(), 0x28);
        assert_eq!(&s.tcp_congestion().unwrap()[..4], b"reno");
        assert!(s.recv_buffer_size().unwrap() >= 1 << 20);
    }

    #[test]
    fn refused_connect_reports_errno() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let e = connect_tcp(addr, &ConnectOpts::default(), |_| Ok(()), Code::CONNECT).unwrap_err();
        assert_eq!(e.errno, Some(libc::ECONNREFUSED));
        assert!(e.text().ends_with("Connection refused"));
    }
}
