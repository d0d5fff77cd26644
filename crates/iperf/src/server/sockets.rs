//! A server's listening sockets, as its mode and configuration ask, with
//! the options that must be set before clients arrive (accepted sockets
//! inherit them), and its settings banner.

use std::net::{IpAddr, Ipv4Addr, TcpListener, UdpSocket};

use socket2::SockRef;

use super::{BACKLOG, Mode};
use wirespeed_core::config::{Protocol, TestConfig};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{BannerNote, Listening, Settings};
use wirespeed_core::net;
use wirespeed_core::stats::histogram::HistogramSpec;

/// The sockets a server listens on.
pub(super) struct Sockets {
    /// TCP listeners (one per port of a range).
    pub tcp: Vec<TcpListener>,
    /// UDP ports.
    pub udp: Vec<UdpSocket>,
    /// The first port.
    pub port: u16,
    /// Why UDP tests cannot run (the shared port's UDP side failed to open).
    pub udp_error: Option<Error>,
    /// The UDP port joined a multicast group.
    pub multicast: bool,
    /// The banner's settings.
    pub settings: Settings,
}

impl Sockets {
    /// Opens what `mode` listens on.
    pub fn open(cfg: &TestConfig, mode: Mode) -> Result<Sockets, Error> {
        match mode {
            Mode::Shared => shared(cfg),
            Mode::Iperf2 if cfg.params.protocol == Protocol::Udp => iperf2_udp(cfg, cfg.port),
            Mode::Iperf2 => iperf2_tcp(cfg),
            Mode::ConnectBack { .. } => {
                let port = cfg.iperf2.listen_port.unwrap_or(cfg.port);
                if cfg.params.protocol == Protocol::Udp {
                    iperf2_udp(cfg, port)
                } else {
                    let l = net::listen_tcp(cfg.net.bind.as_deref(), port, cfg.net.family, false, 128)
                        .map_err(bind_failed)?;
                    if let Some(w) = cfg.params.window {
                        // The server's flows arrive here: their window is
                        // offered in the handshake, as 2.1.8's listener does.
                        net::set_buffers(&SockRef::from(&l), w as usize, &mut Vec::new())?;
                    }
                    Ok(Sockets::tcp_only(cfg, vec![l]))
                }
            }
        }
    }

    fn tcp_only(cfg: &TestConfig, tcp: Vec<TcpListener>) -> Sockets {
        let window = tcp
            .first()
            .and_then(|l| SockRef::from(l).recv_buffer_size().ok())
            .unwrap_or(0) as u64;
        let port = tcp
            .first()
            .and_then(|l| l.local_addr().ok())
            .map_or(cfg.port, |a| a.port());
        Sockets {
            tcp,
            udp: Vec::new(),
            port,
            udp_error: None,
            multicast: false,
            settings: settings(cfg, Protocol::Tcp, window, banner_notes(cfg, None)),
        }
    }

    /// The banner a listener of these sockets prints.
    pub fn listening(&self, cfg: &TestConfig, test_no: u64) -> Listening {
        Listening {
            port: self.port,
            port_last: cfg.iperf2.port_last,
            test_no,
            // Asked now, not when the sockets were bound: a daemon (-D)
            // forks in between, and the banner names the serving process.
            settings: Settings {
                pid: std::process::id(),
                ..self.settings.clone()
            },
        }
    }
}

/// The iperf3 dialect's port: TCP, and UDP on the same number (without
/// it TCP tests still run; UDP tests are refused with the reason).
fn shared(cfg: &TestConfig) -> Result<Sockets, Error> {
    let listener = net::listen_tcp(
        cfg.net.bind.as_deref(),
        cfg.port,
        cfg.net.family,
        cfg.params.mptcp,
        BACKLOG,
    )?;
    if let Some(dev) = &cfg.net.bind_dev {
        wirespeed_sys::socket::bind_device(&SockRef::from(&listener), dev).map_err(|e| Error::io(Code::BINDDEV, &e))?;
    }
    let port = listener.local_addr().map_err(|e| Error::io(Code::LISTEN, &e))?.port();
    let (udp, udp_error) = match net::listen_udp(cfg.net.bind.as_deref(), port, cfg.net.family) {
        Ok(u) => {
            if let Some(dev) = &cfg.net.bind_dev {
                let _ = wirespeed_sys::socket::bind_device(&SockRef::from(&u), dev);
            }
            (vec![u], None)
        }
        Err(e) => (Vec::new(), Some(e)),
    };
    Ok(Sockets {
        tcp: vec![listener],
        udp,
        port,
        udp_error,
        multicast: false,
        settings: Settings::default(),
    })
}

/// 2.1.8's words when a port cannot be had.
fn bind_failed(e: Error) -> Error {
    Error::msg(Code::LISTEN, format!("listener bind failed: {}", e.why()))
}

/// iperf 2's TCP listeners: one per port of `-p m-n`.
fn iperf2_tcp(cfg: &TestConfig) -> Result<Sockets, Error> {
    let last = cfg.iperf2.port_last.unwrap_or(cfg.port);
    let tcp = (cfg.port..=last)
        .map(|port| open_listener(cfg, port))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Sockets::tcp_only(cfg, tcp))
}

/// One TCP listener of an iperf 2 server, with its socket options.
fn open_listener(cfg: &TestConfig, port: u16) -> Result<TcpListener, Error> {
    let listener =
        net::listen_tcp(cfg.net.bind.as_deref(), port, cfg.net.family, false, BACKLOG).map_err(bind_failed)?;
    let sref = SockRef::from(&listener);
    if let Some(dev) = &cfg.net.bind_dev {
        wirespeed_sys::socket::bind_device(&sref, dev).map_err(|e| Error::io(Code::BINDDEV, &e))?;
    }
    if let Some(w) = cfg.params.window {
        let mut warn = Vec::new();
        net::set_buffers(&sref, w as usize, &mut warn)?;
    }
    if let Some(c) = cfg.iperf2.rx_window_clamp {
        // On the listener, as 2.1.8 does: accepted sockets inherit it, and
        // the SYN-ACK already advertises no more.
        wirespeed_sys::socket::set_window_clamp(&SockRef::from(&listener), c)
            .map_err(|e| Error::msg(Code::LISTEN, format!("unable to set TCP_WINDOW_CLAMP: {e}")))?;
    }
    if let Some(tos) = cfg.iperf2.tos_override {
        // On the listener, so every accepted socket carries it, as 2.1.8's.
        let v6 = listener.local_addr().is_ok_and(|a| a.is_ipv6());
        let r = if v6 {
            // A dual-stack socket carrying IPv4 needs IP_TOS too.
            let _ = sref.set_tos_v4(u32::from(tos));
            wirespeed_sys::socket::set_tclass(&sref, u32::from(tos))
        } else {
            sref.set_tos_v4(u32::from(tos))
        };
        r.map_err(|e| Error::msg(Code::LISTEN, format!("unable to set the TOS override: {e}")))?;
    }
    Ok(listener)
}

/// iperf 2's UDP port (joined to a multicast group with `-B group`).
/// iperf 2's UDP ports: one, or one per port of `-p m-n`.
fn iperf2_udp(cfg: &TestConfig, port: u16) -> Result<Sockets, Error> {
    let join = multicast_join(cfg)?;
    let udp = open_udp(cfg, port, join.as_ref())?;
    let window = SockRef::from(&udp).recv_buffer_size().unwrap_or(0) as u64;
    let port = udp.local_addr().map_or(port, |a| a.port());
    let mut all = vec![udp];
    if join.is_none() && port == cfg.port {
        for p in cfg.port.saturating_add(1)..=cfg.iperf2.port_last.unwrap_or(cfg.port) {
            all.push(open_udp(cfg, p, None)?);
        }
    }
    Ok(Sockets {
        port,
        tcp: Vec::new(),
        udp: all,
        udp_error: None,
        multicast: join.is_some(),
        settings: settings(cfg, Protocol::Udp, window, banner_notes(cfg, join.as_ref())),
    })
}

/// Opens (or, for `-U`, opens again) an iperf 2 UDP port.
pub(super) fn open_udp(cfg: &TestConfig, port: u16, join: Option<&Join>) -> Result<UdpSocket, Error> {
    let l = net::listen_udp(cfg.net.bind.as_deref(), port, cfg.net.family).map_err(bind_failed)?;
    let s = SockRef::from(&l);
    if let (Some(dev), None) = (&cfg.net.bind_dev, join) {
        wirespeed_sys::socket::bind_device(&s, dev).map_err(|e| Error::io(Code::BINDDEV, &e))?;
    }
    let mut w = Vec::new();
    net::apply_data_options(&s, &cfg.params, false, None, &mut w)?;
    if let Some(j) = join {
        j.apply(&l)?;
    }
    Ok(l)
}

/// The settings an iperf 2 listener's banner shows.
fn settings(cfg: &TestConfig, protocol: Protocol, window: u64, notes: Vec<BannerNote>) -> Settings {
    Settings {
        protocol,
        pid: 0,
        flows: 1,
        block_len: cfg.params.block_len_or_default(),
        tos: cfg.params.tos,
        nodelay: protocol == Protocol::Tcp && cfg.params.nodelay,
        window,
        window_requested: cfg.params.window.map(u64::from),
        notes,
    }
}

/// The lines iperf 2 adds to a server's banner.
fn banner_notes(cfg: &TestConfig, join: Option<&Join>) -> Vec<BannerNote> {
    let mut notes = Vec::new();
    if let Some(tos) = cfg.iperf2.tos_override {
        notes.push(BannerNote::Early(format!("Reflected TOS will be set to 0x{tos:x}")));
    }
    if let Some(j) = join {
        notes.push(BannerNote::Early(j.banner_line()));
        notes.push(BannerNote::Late(
            "Server set to single client traffic mode (per multicast receive)".into(),
        ));
    }
    if cfg.iperf2.single_udp {
        notes.push(BannerNote::Early(
            "WARN: Suggested to use lower case -u instead of -U (to avoid serialize & bypass of reporter thread)"
                .into(),
        ));
    }
    if let Some(h) = &cfg.output.histograms {
        notes.push(BannerNote::Late(
            HistogramSpec::parse(Some(h)).unwrap_or_default().banner(),
        ));
    }
    notes
}

/// A multicast group to join on the listening socket: `-B group[%dev]`,
/// with `-H source` for source-specific multicast.
#[derive(Debug, Clone)]
pub struct Join {
    /// The group.
    pub group: IpAddr,
    /// Interface name (`%dev`).
    pub dev: Option<String>,
    /// SSM source (`-H`).
    pub source: Option<IpAddr>,
}

impl Join {
    /// Joins on `sock`; a group that cannot be joined is one line.
    pub fn apply(&self, sock: &UdpSocket) -> Result<(), Error> {
        let s = SockRef::from(sock);
        let fail = |e: std::io::Error| {
            Error::msg(
                Code::LISTEN,
                format!("mcast join failed: {}", wirespeed_core::error::errno_text(&e)),
            )
        };
        let index = match &self.dev {
            Some(d) => Some(wirespeed_sys::netif::index_of(d).map_err(fail)?),
            None => None,
        };
        match (self.group, self.source) {
            (IpAddr::V4(g), Some(IpAddr::V4(src))) => {
                s.join_ssm_v4(&src, &g, &Ipv4Addr::UNSPECIFIED).map_err(fail)?;
            }
            (IpAddr::V4(g), None) => {
                match index {
                    Some(i) => s.join_multicast_v4_n(&g, &socket2::InterfaceIndexOrAddress::Index(i)),
                    None => s.join_multicast_v4(&g, &Ipv4Addr::UNSPECIFIED),
                }
                .map_err(fail)?;
                let _ = wirespeed_sys::socket::multicast_only_joined(&s, false);
            }
            (IpAddr::V6(g), None) => {
                s.join_multicast_v6(&g, index.unwrap_or(0)).map_err(fail)?;
                let _ = wirespeed_sys::socket::multicast_only_joined(&s, true);
            }
            _ => {
                return Err(Error::msg(
                    Code::LISTEN,
                    "mcast join failed: source-specific joins (-H) need an IPv4 group and source",
                ));
            }
        }
        Ok(())
    }

    /// The banner's line for the join.
    pub(crate) fn banner_line(&self) -> String {
        match (&self.source, &self.dev) {
            (Some(src), Some(d)) => format!("Joining multicast (S,G)={src},{} w/iface {d}", self.group),
            (Some(src), None) => format!("Joining multicast (S,G)={src},{}", self.group),
            (None, Some(d)) => format!("Joining multicast (*,G)=*,{} w/iface {d}", self.group),
            (None, None) => format!("Joining multicast group  {}", self.group),
        }
    }
}

/// The multicast group a server's `-B` names, if it is one.
pub(super) fn multicast_join(cfg: &TestConfig) -> Result<Option<Join>, Error> {
    let Some(b) = &cfg.net.bind else { return Ok(None) };
    let Ok(ip) = b.parse::<IpAddr>() else {
        return Ok(None);
    };
    if !ip.is_multicast() {
        return Ok(None);
    }
    let source = match &cfg.iperf2.ssm_host {
        Some(h) => Some(
            net::resolve(h, 0, cfg.net.family)
                .map_err(|e| Error::msg(Code::LISTEN, format!("mcast join failed: {}", e.text())))?[0]
                .ip(),
        ),
        None => None,
    };
    Ok(Some(Join {
        group: ip,
        dev: cfg.net.bind_dev.clone(),
        source,
    }))
}
