//! The iperf 2 client's UDP flows: `-P` flows of paced datagrams that
//! carry the test settings, ended by a FIN retried until the server's
//! report comes back (`Server Report:`); `-R` and `--full-duplex` on the
//! same socket; multicast groups as destinations.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::hooks::{FrameTracker, UdpRecvHook, wall_clock};
use super::runner::Flow;
use super::transport::ClientTransport;
use super::udp::{FinOutcome, Iperf2Format, client_datagram, relayed_line, send_fin};
use wirespeed_core::config::{Direction, EndCondition, TestConfig};
use wirespeed_core::engine::{DataSock, DataStream, StreamExtras};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{BannerNote, Event, PeerReport, StreamSample};
use wirespeed_core::net::{self, ConnectOpts};
use wirespeed_core::stats::{DetailCounters, FrameCounters, StreamMeta, StreamRole};
use wirespeed_proto::iperf2::{ClientHeader, flags};
use wirespeed_report::Reporter;

/// How many times a `-R` client sends its settings before giving up on
/// the server's traffic (2.1.8: 100, 0-20 ms apart).
const HELLO_TRIES: u32 = 100;

/// The settings every datagram of this test carries.
pub(crate) fn udp_header(cfg: &TestConfig, start: (u32, u32)) -> ClientHeader {
    let p = &cfg.params;
    let mut h = super::tcp_client::build_header(cfg, start);
    let len = p.block_len_or_default() as u64;
    let server_sends = p.direction != Direction::Forward;
    let rate = match (p.pps, p.rate) {
        // 2.1.8 sends a packet rate as is, and converts it to bits/s when
        // the server is to send (it never sets the pps flag).
        (Some(pps), _) if server_sends => pps * 8 * len,
        (Some(pps), _) => pps,
        (None, r) => r,
    };
    if cfg.iperf2.udp_l4s {
        // 2.2.1's --udp-l4s: UDPTESTS and the upper flag (docs/protocols.md).
        h.flags |= flags::UDPTESTS | flags::EXTEND;
    }
    if let Some(e) = h.ext.as_mut() {
        e.rate = rate;
        if cfg.iperf2.udp_l4s {
            e.upper |= flags::upper::UDPL4S;
        }
        // The server sends the frames: the settings block says which.
        if p.frames.is_some() && server_sends {
            e.upper |= flags::upper::ISOCH_SETTINGS;
        }
        // 2.1.8's full-duplex client asks for no FIN exchange too.
        if cfg.iperf2.no_udp_fin || p.direction == Direction::FullDuplex {
            e.upper |= flags::upper::NOUDPFIN;
        }
    }
    h
}

/// The gap between datagrams the banner announces, µs.
fn ipg_us(cfg: &TestConfig) -> f64 {
    let p = &cfg.params;
    match (p.pps, p.rate) {
        // The acks set an L4S sender's rate (2.2.1 announces no gap).
        _ if cfg.iperf2.udp_l4s => 0.0,
        (Some(pps), _) if pps > 0 => 1e6 / pps as f64,
        (_, r) if r > 0 => p.block_len_or_default() as f64 * 8.0 / r as f64 * 1e6,
        _ => 0.0,
    }
}

/// Socket options every client flow gets before connect.
fn prepare(s: &socket2::Socket, cfg: &TestConfig, remote: SocketAddr) -> Result<(), Error> {
    let mut w = Vec::new();
    net::apply_data_options(s, &cfg.params, false, Some(remote), &mut w)?;
    if cfg.iperf2.local_only {
        net::set_dont_route(s)?;
    }
    let set = |r: std::io::Result<()>| r.map_err(|e| Error::io(Code::SETTOS, &e));
    if remote.ip().is_multicast() {
        // 2.1.8's multicast default TTL is 1.
        let ttl = cfg.net.ttl.unwrap_or(1);
        if remote.is_ipv4() {
            set(s.set_multicast_ttl_v4(ttl))?;
        } else {
            set(s.set_multicast_hops_v6(ttl))?;
        }
    } else if let Some(t) = cfg.net.ttl {
        if remote.is_ipv4() {
            set(s.set_ttl_v4(t))?;
        } else {
            set(s.set_unicast_hops_v6(t))?;
        }
    }
    Ok(())
}

/// `-R`: sends the settings until the server's traffic arrives (a lost
/// first datagram must not leave the test waiting).
fn hello(sock: &UdpSocket, fmt: &Iperf2Format, datagram: &[u8], stop: &dyn Fn() -> bool) {
    let mut d = datagram.to_vec();
    let mut peek = [0u8; 16];
    for _ in 0..HELLO_TRIES {
        fmt.stamp_now(&mut d, 1);
        let _ = sock.send(&d);
        let wait = Duration::from_micros(1000 + wirespeed_core::util::random_u64() % 20_000);
        let _ = sock.set_read_timeout(Some(wait));
        match sock.peek(&mut peek) {
            Ok(_) => return,
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => std::thread::sleep(wait),
            Err(_) => {}
        }
        if stop() {
            return;
        }
    }
}

/// A sender flow's FIN, after the session.
struct Fin {
    sock: UdpSocket,
    id: u32,
    line: Arc<Mutex<Option<StreamSample>>>,
}

/// The UDP client.
pub(super) struct Udp {
    /// The datagram every one of ours starts from (settings included).
    template: Vec<u8>,
    fmt: Iperf2Format,
    fins: Vec<Fin>,
    /// `-R`: sockets that say hello until the server's traffic comes.
    hellos: Vec<UdpSocket>,
    /// Our senders' FINs expect the receiver's report.
    expect_report: bool,
    /// `--udp-l4s`: what each sender learned from its acks.
    l4s: Vec<(u32, Arc<wirespeed_core::stats::L4sLog>)>,
}

/// The UDP client for `cfg`, or why the test cannot run (multicast
/// limits).
pub(super) fn transport(cfg: &TestConfig, host: &str) -> Result<Box<dyn ClientTransport>, Error> {
    let p = &cfg.params;
    let multicast = net::resolve(host, cfg.port, cfg.net.family).is_ok_and(|a| a[0].ip().is_multicast());
    if multicast && p.direction != Direction::Forward {
        return Err(Error::msg(
            Code::CONNECT,
            "ERROR: multicast tests cannot use -d, -r, -R or --full-duplex",
        ));
    }
    if multicast && p.streams > 1 {
        return Err(Error::msg(
            Code::CONNECT,
            "ERROR: multicast tests cannot use -P (every flow would go to the same group and port)",
        ));
    }
    let len = p.block_len_or_default() as usize;
    let template = if cfg.iperf2.compat {
        let mut d = vec![0u8; len];
        wirespeed_core::engine::Payload::Repeating.fill(&mut d);
        d
    } else {
        client_datagram(&udp_header(cfg, wall_clock()), len)
    };
    let fmt = Iperf2Format::sender((!cfg.iperf2.compat).then_some(&template[..]));
    let no_fin = cfg.iperf2.no_udp_fin || multicast || p.direction == Direction::FullDuplex;
    Ok(Box::new(Udp {
        template,
        fmt,
        fins: Vec::new(),
        hellos: Vec::new(),
        expect_report: !no_fin,
        l4s: Vec::new(),
    }))
}

impl ClientTransport for Udp {
    fn banner(&self, cfg: &TestConfig, addr: SocketAddr) -> (u64, Vec<BannerNote>) {
        let p = &cfg.params;
        let probe = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::DGRAM, None)
            .ok()
            .map(|s| {
                let _ = prepare(&s, cfg, addr);
                s.send_buffer_size().unwrap_or(0) as u64
            })
            .unwrap_or(0);
        // An isochronous client announces its frames instead of a gap.
        let datagrams = BannerNote::Datagrams {
            len: p.block_len_or_default(),
            ipg_us: ipg_us(cfg),
        };
        let notes = super::isoch_note(p)
            .into_iter()
            .chain(super::pacing_note(cfg))
            .chain(p.frames.is_none().then_some(datagrams))
            .collect();
        (probe, notes)
    }

    fn connect(&mut self, cfg: &TestConfig, addrs: &[SocketAddr], reporter: &mut Reporter) -> Result<Vec<Flow>, Error> {
        let p = &cfg.params;
        let addr = addrs[0];
        let len = p.block_len_or_default();
        let opts = ConnectOpts {
            bind: cfg.net.bind.as_deref(),
            port: cfg.net.cport,
            device: cfg.net.bind_dev.as_deref(),
            timeout: None,
            mptcp: false,
        };
        let shared: Arc<dyn wirespeed_core::engine::udp::UdpStart> = Arc::new(self.fmt.clone());
        let sends = p.direction != Direction::Reverse;
        let receives = matches!(p.direction, Direction::Reverse | Direction::FullDuplex);
        let mut flows = Vec::new();
        for i in 0..p.streams {
            // `-p m-n` and --incr-dstport: flow i goes to port m + i.
            let addr = super::flow_addrs(cfg, &[addr], i)[0];
            let sock = net::connect_udp(addr, &opts, |s| prepare(s, cfg, addr))
                .map_err(|e| Error::msg(Code::CONNECT, format!("udp connect failed: {}", e.why())))?;
            let local = sock.local_addr().map_err(|e| Error::io(Code::CONNECT, &e))?;
            let remote = sock.peer_addr().map_err(|e| Error::io(Code::CONNECT, &e))?;
            let id = super::next_id();
            let mut line = super::udp_conn_line(id, &sock, local, remote);
            line.epoch_start = cfg.iperf2.txstart.is_some();
            line.isoch = p.frames.is_some();
            line.mode = match p.direction {
                Direction::Reverse => Some("reverse".into()),
                Direction::FullDuplex => Some("full-duplex".into()),
                _ if p.trip_times => Some("trip-times".into()),
                _ => None,
            };
            line.no_udp_fin = p.direction == Direction::FullDuplex || cfg.iperf2.no_udp_fin;
            line.l4s = cfg.iperf2.udp_l4s;
            reporter.emit(Event::StreamConnected(Box::new(line)));
            let take = || sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e));
            if receives {
                let counters = DetailCounters::new(len as usize, cfg.output.enhanced);
                let mut hook = UdpRecvHook::new(counters.clone());
                // The server sends our frames: follow them.
                let frames = p.frames.map(|_| Arc::new(FrameCounters::default()));
                if let (Some(f), Some(spec)) = (&frames, p.frames) {
                    let period = spec.period().as_micros() as u32;
                    hook = hook.with_frames(FrameTracker::finding(period, p.trip_times, f.clone()));
                }
                flows.push(Flow::new(
                    DataStream::new(id, StreamRole::Recv, DataSock::Udp(take()?), local, remote),
                    StreamExtras {
                        hook: Some(Box::new(hook)),
                        udp_format: Some(Arc::new(Iperf2Format::receiver(true))),
                        meta: StreamMeta {
                            detail: Some(counters),
                            reversed: true,
                            frames,
                            ..StreamMeta::default()
                        },
                        ..StreamExtras::default()
                    },
                ));
            }
            if !sends {
                self.hellos.push(take()?);
                continue;
            }
            // --sync-transfer-id: this flow's datagrams carry its id.
            let format = if cfg.iperf2.sync_transfer_id && !cfg.iperf2.compat {
                let h = udp_header(cfg, wall_clock()).with_transfer_id(id, false);
                let d = client_datagram(&h, len as usize);
                Arc::new(Iperf2Format::sender(Some(&d))) as Arc<dyn wirespeed_core::engine::udp::UdpStart>
            } else {
                shared.clone()
            };
            // --udp-l4s: a sender of our own, paced by the acks.
            let l4s_log = cfg
                .iperf2
                .udp_l4s
                .then(|| Arc::new(wirespeed_core::stats::L4sLog::default()));
            let format = if let Some(log) = &l4s_log {
                let log = log.clone();
                self.l4s.push((id, log.clone()));
                let max_rate = match (p.pps, p.rate) {
                    (None, r) if r > 0 => r as f64 / 8.0,
                    _ => 12.5e9,
                };
                Arc::new(super::l4s::L4sSender {
                    fmt: self.fmt.clone(),
                    template: self.template.clone(),
                    max_rate,
                    dscp: p.tos & !3,
                    log,
                }) as Arc<dyn wirespeed_core::engine::udp::UdpStart>
            } else {
                format
            };
            let slot = Arc::new(Mutex::new(None));
            let s2 = slot.clone();
            let mut f = Flow::new(
                DataStream::new(id, StreamRole::Send, DataSock::Udp(take()?), local, remote),
                StreamExtras {
                    udp_format: Some(format),
                    budget: match p.end {
                        EndCondition::Bytes(n) => Some(n),
                        _ => None,
                    },
                    meta: StreamMeta {
                        l4s: l4s_log.is_some(),
                        l4s_log,
                        ..StreamMeta::default()
                    },
                    ..StreamExtras::default()
                },
            );
            f.on_end = Some(Box::new(move |l: &StreamSample| {
                if let Ok(mut g) = s2.lock() {
                    *g = Some(l.clone());
                }
            }));
            flows.push(f);
            self.fins.push(Fin {
                sock: take()?,
                id,
                line: slot,
            });
        }
        Ok(flows)
    }

    fn before_run(&mut self, signal: &Arc<AtomicUsize>) {
        for h in &self.hellos {
            let sig = signal.clone();
            hello(h, &self.fmt, &self.template, &move || sig.load(Relaxed) != 0);
        }
    }

    fn after_run(&mut self, reporter: &mut Reporter, signal: &Arc<AtomicUsize>) {
        for (id, log) in std::mem::take(&mut self.l4s) {
            super::l4s::say(id, &log, reporter);
        }
        let fins = std::mem::take(&mut self.fins);
        finish(
            fins,
            self.template.len(),
            &self.fmt,
            self.expect_report,
            signal,
            reporter,
        );
    }

    fn drain(&self) -> Duration {
        Duration::from_secs(3)
    }

    fn reverse_idle(&self) -> Option<Duration> {
        Some(Duration::from_secs(3))
    }
}

/// Sends every sender's FIN (in parallel) and prints the reports.
fn finish(
    fins: Vec<Fin>,
    len: usize,
    fmt: &Iperf2Format,
    expect_report: bool,
    signal: &Arc<AtomicUsize>,
    reporter: &mut Reporter,
) {
    let mut datagram = vec![0u8; len];
    wirespeed_core::engine::Payload::Repeating.fill(&mut datagram);
    let jobs: Vec<_> = fins
        .into_iter()
        .filter_map(|f| {
            let next = f.line.lock().ok()?.as_ref()?.udp?.sent? as u64;
            let fmt = fmt.clone();
            let d = datagram.clone();
            let signal = signal.clone();
            let h = std::thread::spawn(move || {
                send_fin(&f.sock, &fmt, &d, next, expect_report, &|| signal.load(Relaxed) != 0)
            });
            Some((f.id, h))
        })
        .collect();
    for (id, h) in jobs {
        match h.join() {
            Ok(FinOutcome::Report(r)) => {
                let l = relayed_line(id, false, &r);
                reporter.emit(Event::PeerReport(PeerReport::Report(Box::new(l))));
            }
            Ok(FinOutcome::NoReport { refused, tries }) => {
                reporter.emit(Event::PeerReport(PeerReport::Missing { id, tries, refused }));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::iperf2::test_config as cfg;

    /// The 32-bit words of the first datagram this command line sends.
    fn words(s: &str) -> Vec<u32> {
        let c = cfg(s);
        let d = client_datagram(&udp_header(&c, (7, 9)), c.params.block_len_or_default() as usize);
        d.chunks(4)
            .take(40)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    }

    // Golden words captured from the real 2.1.8 client (docs/protocols.md,
    // iperf 2: client header in UDP datagrams), from
    // offset 16 (after the sequence/time prefix).
    #[test]
    fn datagram_settings_match_what_2_1_8_sends() {
        let w = words("-c h -u -p 5001 -t 0.2");
        assert_eq!(&w[4..10], &[0x4801_0098, 1, 5001, 0, 0, 0xffff_ffec]);
        assert_eq!(&w[10..19], &[0, 0, 0, 0x0002_0001, 0x0008_0003, 0, 0x0010_0000, 0, 0]);
        // -d -L 17010: VERSION1 | RUN_NOW and the port to connect back to.
        let w = words("-c h -u -t 0.2 -d -L 17010");
        assert_eq!(&w[4..7], &[0xc801_0099, 1, 17010]);
        // -R: VERSION2 and the reverse flag; UDPTESTS for the upper flags.
        let w = words("-c h -u -t 0.2 -R");
        assert_eq!((w[4], w[12]), (0x6c01_0098, 0x0400_0000));
        // --full-duplex asks for no FIN exchange too (as 2.1.8's client does).
        let w = words("-c h -u -t 0.2 --full-duplex");
        assert_eq!((w[4], w[12]), (0x6c01_0098, 0x0808_0000));
        let w = words("-c h -u -t 0.2 --no-udp-fin");
        assert_eq!((w[4], w[12]), (0x6801_0098, 0x0008_0000));
        // --trip-times: the start block at 108 (LEN covers 16+24+36+32).
        let w = words("-c h -u -t 0.2 --trip-times");
        assert_eq!((w[4], w[12]), (0x6801_00d8, 0x0010_0000));
        assert_eq!(&w[28..30], &[7, 9]);
        // Rates: bits/s, or a packet count sent as is (no pps flag)...
        assert_eq!(words("-c h -u -b 20m")[16], 20_000_000);
        assert_eq!(words("-c h -u -b 100pps")[16], 100);
        // ... converted to bits/s when the server is to send.
        assert_eq!(words("-c h -u -b 100pps -R")[16], 100 * 8 * 1470);
        // -l given: its value travels in the buffer-length word.
        let w = words("-c h -u -l 300");
        assert_eq!(w[7], 300);
    }

    #[test]
    fn the_banner_gap_follows_the_rate() {
        assert_eq!(format!("{:.2}", ipg_us(&cfg("-c h -u"))), "11215.21");
        assert_eq!(format!("{:.2}", ipg_us(&cfg("-c h -u -b 100pps"))), "10000.00");
        assert_eq!(format!("{:.2}", ipg_us(&cfg("-c h -u -b 10m"))), "1176.00");
    }
}
