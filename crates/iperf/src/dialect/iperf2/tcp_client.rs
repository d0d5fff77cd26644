//! The iperf 2 client's TCP flows: `-P` connections, each opened with the
//! 2.1 header (and the version ack with `-X`), carrying what the header
//! asks — send, receive (`-R`), both (`--full-duplex`), or bounceback
//! round trips.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::conn_line;
use super::hooks::{BurstStamp, RecvHook, wall_clock};
use super::runner::Flow;
use crate::dialect::iperf2::bounceback::BouncebackSpec;
use wirespeed_core::config::{Direction, EndCondition, TestConfig, TestParams};
use wirespeed_core::engine::StreamKind;
use wirespeed_core::engine::{DataStream, StreamExtras};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{ClockCheck, ConnectTimes, Event};
use wirespeed_core::net::{self, ConnectOpts};
use wirespeed_core::stats::{BouncebackCounters, DetailCounters, StreamMeta, StreamRole, Welford};
use wirespeed_proto::iperf2::header::{Amount, ClientHeader, HeaderExt};
use wirespeed_proto::iperf2::{BurstTracker, ClientAck, VERSION_L, VERSION_U, flags, join_secs};

/// The header a 2.1.8 client sends for this configuration.
pub fn build_header(cfg: &TestConfig, start: (u32, u32)) -> ClientHeader {
    let p = &cfg.params;
    let mut base = 0;
    let mut upper = 0u16;
    match p.direction {
        Direction::Dual => base |= flags::VERSION1 | flags::RUN_NOW,
        Direction::Tradeoff => base |= flags::VERSION1,
        Direction::Reverse => {
            base |= flags::VERSION2;
            upper |= flags::upper::REVERSE;
        }
        Direction::FullDuplex => {
            base |= flags::VERSION2;
            upper |= flags::upper::FULLDUPLEX;
        }
        _ => {}
    }
    if cfg.iperf2.peer_detect {
        base |= flags::VERSION2 | flags::V2PEERDETECT;
    }
    if p.trip_times {
        upper |= flags::upper::TRIPTIME;
    }
    if cfg.iperf2.txstart.is_some() {
        upper |= flags::upper::EPOCH_START;
    }
    if p.frames.is_some() {
        upper |= flags::upper::ISOCH;
    }
    // Periodic bursts: the settings block says how often and how much;
    // an isochronous client whose server sends says which frames.
    let server_sends = matches!(p.direction, Direction::Reverse | Direction::FullDuplex);
    let settings = p
        .periodic_burst
        .map(|(size, period)| {
            upper |= flags::upper::PERIODICBURST;
            wirespeed_proto::iperf2::header::burst_settings(period, size)
        })
        .or_else(|| {
            let f = p.frames.filter(|_| server_sends)?;
            Some(wirespeed_proto::iperf2::header::isoch_settings(
                f.fps,
                f.mean,
                f.stdev,
                f.ipg.as_secs_f64() * 1e3,
            ))
        });
    if p.fq_rate > 0 {
        // The server paces its own sending (-R, --full-duplex) with it.
        upper |= flags::upper::FQRATESET;
    }
    // With -R / --full-duplex the server's writes take the watermark too.
    let prefetch = cfg
        .iperf2
        .write_prefetch
        .filter(|_| matches!(p.direction, Direction::Reverse | Direction::FullDuplex));
    if prefetch.is_some() {
        upper |= flags::upper::WRITEPREFETCH;
    }
    // Asked of the server only where it reads (2.1.8 leaves it out of -R).
    if cfg.iperf2.quickack && p.direction != Direction::Reverse {
        upper |= flags::upper::TCPQUICKACK;
    }
    let amount = match p.end {
        EndCondition::Bytes(n) => Amount::Bytes(n.min(0x7FFF_FFFF) as u32),
        // The server sends (-R) or reads through the omitted start too.
        EndCondition::Time(d) => Amount::from_secs((d + p.omit).as_secs_f64()),
        EndCondition::Blocks(_) => Amount::from_secs(10.0),
    };
    ClientHeader {
        flags: base,
        num_threads: p.streams,
        transfer_id: None,
        port: cfg.iperf2.listen_port.unwrap_or(cfg.port) as u32,
        buf_len: if cfg.iperf2.len_given {
            p.block_len_or_default()
        } else {
            0
        },
        win_band: 0,
        amount: Some(amount),
        ext: Some(HeaderExt {
            upper,
            version_u: VERSION_U,
            version_l: VERSION_L,
            tos: p.tos as u16,
            rate: p.rate,
            write_prefetch: prefetch.unwrap_or(0),
            ..HeaderExt::default()
        }),
        // A scheduled start is the start the server is told of.
        start: (p.trip_times || p.fq_rate > 0 || cfg.iperf2.txstart.is_some()).then(|| {
            let (sec, usec) = cfg.iperf2.txstart.unwrap_or(start);
            wirespeed_proto::iperf2::StartTime {
                sec,
                usec,
                fq_rate: p.fq_rate / 8,
            }
        }),
        isoch: settings,
        key: cfg.iperf2.permit_key.as_ref().map(|k| k.as_bytes().to_vec()),
    }
}

/// Socket options every client flow gets, before connect.
fn prepare(s: &socket2::Socket, cfg: &TestConfig, remote: SocketAddr) -> Result<(), Error> {
    let mut w = Vec::new();
    net::apply_data_options(s, &cfg.params, true, Some(remote), &mut w)?;
    if cfg.iperf2.local_only {
        net::set_dont_route(s)?;
    }
    if let Some(n) = cfg.iperf2.write_prefetch {
        net::set_notsent_lowat(s, n)?;
    }
    if let Some(us) = cfg.iperf2.tx_delay_us {
        wirespeed_sys::socket::set_tcp_tx_delay(s, us).map_err(|e| {
            Error::msg(
                Code::NONE,
                format!("the kernel refused TCP_TX_DELAY of {us} us (--tcp-tx-delay, --send-delay): {e}"),
            )
        })?;
    }
    if let Some(t) = cfg.net.ttl {
        if remote.is_ipv4() {
            s.set_ttl_v4(t).map_err(|e| Error::io(Code::SETTOS, &e))?;
        } else {
            s.set_unicast_hops_v6(t).map_err(|e| Error::io(Code::SETTOS, &e))?;
        }
    }
    Ok(())
}

/// The send buffer a fresh socket with our options gets (the banner's
/// "TCP window size").
pub(super) fn probe_window(cfg: &TestConfig, remote: SocketAddr) -> u64 {
    let Ok(s) = socket2::Socket::new(socket2::Domain::for_address(remote), socket2::Type::STREAM, None) else {
        return 0;
    };
    let _ = prepare(&s, cfg, remote);
    s.send_buffer_size().unwrap_or(0) as u64
}

/// TCP_TX_DELAY as a fresh socket with our options holds it, in µs (the
/// banner's line says what the kernel took, not what was asked).
pub(super) fn probe_tx_delay(cfg: &TestConfig, remote: SocketAddr) -> Option<u32> {
    cfg.iperf2.tx_delay_us?;
    let s = socket2::Socket::new(socket2::Domain::for_address(remote), socket2::Type::STREAM, None).ok()?;
    prepare(&s, cfg, remote).ok()?;
    wirespeed_sys::socket::tcp_tx_delay(&s).ok()
}

pub(super) struct Connected {
    pub(super) sock: TcpStream,
    pub(super) local: SocketAddr,
    pub(super) remote: SocketAddr,
    pub(super) connect_ms: f64,
}

pub(super) fn connect_one(cfg: &TestConfig, addrs: &[SocketAddr]) -> Result<Connected, Error> {
    let opts = ConnectOpts {
        bind: cfg.net.bind.as_deref(),
        port: cfg.net.cport,
        device: cfg.net.bind_dev.as_deref(),
        timeout: Some(Duration::from_secs(10)),
        mptcp: false,
    };
    let mut tries = cfg.iperf2.connect_retries + 1;
    loop {
        tries -= 1;
        let t0 = Instant::now();
        let mut last = None;
        for a in addrs {
            match net::connect_tcp(*a, &opts, |s| prepare(s, cfg, *a), Code::CONNECT) {
                Ok(sock) => {
                    let connect_ms = t0.elapsed().as_secs_f64() * 1e3;
                    let local = sock.local_addr().map_err(|e| Error::io(Code::CONNECT, &e))?;
                    let remote = sock.peer_addr().map_err(|e| Error::io(Code::CONNECT, &e))?;
                    return Ok(Connected {
                        sock,
                        local,
                        remote,
                        connect_ms,
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.unwrap_or_else(|| Error::new(Code::CONNECT));
        if e.code != Code::CONNECT {
            // A socket option the kernel refused: retrying cannot help.
            return Err(e);
        }
        if tries == 0 {
            let why = e.errno.map(wirespeed_core::error::strerror).unwrap_or_else(|| e.text());
            return Err(Error::msg(Code::CONNECT, format!("tcp connect failed: {why}")));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Sends the header; with `-X`, waits for the server's ack and returns it.
fn send_header(s: &TcpStream, hdr: &[u8], peer_detect: bool) -> Result<Option<ClientAck>, Error> {
    let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
    if peer_detect {
        let _ = s.set_nodelay(true);
    }
    (&*s).write_all(hdr).map_err(|e| Error::io(Code::SENDPARAMS, &e))?;
    let _ = s.set_write_timeout(None);
    if !peer_detect {
        return Ok(None);
    }
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = vec![0u8; 0];
    let mut want = ClientAck::needed(&buf);
    let mut tmp = [0u8; 52];
    while buf.len() < want {
        match (&*s).read(&mut tmp[..want - buf.len()]) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.extend_from_slice(&tmp[..n]);
                want = ClientAck::needed(&buf);
            }
        }
    }
    let _ = s.set_read_timeout(None);
    let _ = s.set_nodelay(false);
    Ok(ClientAck::decode(&buf))
}

/// The one-shot clock check of `-X --trip-times`, in ms.
fn clock_check(ack: &ClientAck, start: (u32, u32), received: (u32, u32)) -> Option<ClockCheck> {
    let t = ack.times?;
    let j = |p: (u32, u32)| join_secs(p.0, p.1);
    let send = (j(t[1]) - j(start)) * 1e3;
    let back = (j(received) - j(t[2])) * 1e3;
    Some(ClockCheck {
        rtt: send + back,
        send,
        back,
    })
}

/// A receiving flow's hook and counters.
fn reader(
    counters_for: &TestParams,
    trip_times: bool,
    rate: u64,
    quickack: Option<std::net::TcpStream>,
    reversed: bool,
) -> StreamExtras {
    let bl = counters_for.block_len_or_default() as usize;
    let counters = DetailCounters::new(bl, trip_times);
    // A server sending --trip-times bursts first sends its own header.
    let bursts = trip_times.then(BurstTracker::after_header);
    let hook = RecvHook::new(counters.clone(), bursts, rate, bl).with_quickack(quickack);
    StreamExtras {
        hook: Some(Box::new(hook)),
        meta: StreamMeta {
            detail: Some(counters),
            reversed,
            ..StreamMeta::default()
        },
        ..StreamExtras::default()
    }
}

/// A bounceback connection's mode: `bb w/quickack len/hold=100/0`
/// (with --trip-times 2.1.8 adds `(trip-times)` after it).
pub fn bb_mode(quickack: bool, size: u32, hold_us: u32, synced: bool) -> String {
    let q = if quickack { " w/quickack" } else { "" };
    let t = if synced { ") (trip-times" } else { "" };
    format!("bb{q} len/hold={size}/{hold_us}{t}")
}

/// Connects the `-P` flows, sends each its header, and prints their
/// connection lines: the flows to run, and the sockets to keep open until
/// the test is over (each connection keeps the descriptor its `(sock=N)`
/// showed).
pub(super) fn connect_flows(
    cfg: &TestConfig,
    addrs: &[SocketAddr],
    start: (u32, u32),
    reporter: &mut wirespeed_report::Reporter,
) -> Result<(Vec<Flow>, Vec<TcpStream>), Error> {
    let p = &cfg.params;
    let bb = cfg.iperf2.bounceback.as_ref();
    let mut flows = Vec::new();
    let mut keep = Vec::new();
    let mut connect_times = Welford::default();
    for i in 0..p.streams {
        // `-p m-n` and --incr-dstport: flow i goes to port m + i.
        let c = connect_one(cfg, &super::flow_addrs(cfg, addrs, i))?;
        let id = super::next_id();
        // TCP_INFO before the header goes out, as 2.1.8 reads it.
        let mut line = conn_line(id, &c.sock, c.local, c.remote);
        // --sync-transfer-id: each flow's header carries its id.
        let header = (!cfg.iperf2.compat && bb.is_none()).then(|| {
            let h = build_header(cfg, start);
            if cfg.iperf2.sync_transfer_id {
                h.with_transfer_id(id, true).encode_tcp()
            } else {
                h.encode_tcp()
            }
        });
        let ack = match header.as_ref() {
            Some(h) => send_header(&c.sock, h, cfg.iperf2.peer_detect)?,
            None => None,
        };
        line.connect_ms = Some(c.connect_ms);
        line.mss = Some(net::mss_of(&c.sock));
        line.epoch_start = cfg.iperf2.txstart.is_some();
        line.isoch = p.frames.is_some();
        match bb {
            Some(b) => {
                let _ = c.sock.set_nodelay(true);
                line.mode = Some(bb_mode(b.quickack, p.block_len_or_default(), b.hold_us, p.trip_times));
            }
            None => {
                line.prefetch = cfg.iperf2.write_prefetch;
                line.qack = cfg.iperf2.quickack;
                line.mode = match p.direction {
                    Direction::Reverse => Some("reverse".into()),
                    Direction::FullDuplex => Some("full-duplex".into()),
                    _ if p.trip_times => Some("trip-times".into()),
                    _ => None,
                };
            }
        }
        if let Some(a) = ack.as_ref().filter(|_| p.trip_times) {
            line.clock = clock_check(a, start, wall_clock());
        }
        reporter.emit(Event::StreamConnected(Box::new(line)));
        connect_times.add(c.connect_ms, 0);
        let hdr_len = header.as_ref().map_or(0, |h| h.len() as u64);
        flows.extend(flows_of(cfg, id, &c, hdr_len, start)?);
        keep.push(c.sock);
    }
    if cfg.output.enhanced && connect_times.count > 1 {
        reporter.emit(Event::ConnectTimes(Box::new(ConnectTimes {
            ms: connect_times.stats().unwrap_or_default(),
            errors: 0,
        })));
    }
    Ok((flows, keep))
}

/// The flows one connection carries: a receiving one (-R, --full-duplex),
/// a sending one, or a bounceback one.
fn flows_of(cfg: &TestConfig, id: u32, c: &Connected, hdr_len: u64, start: (u32, u32)) -> Result<Vec<Flow>, Error> {
    let p = &cfg.params;
    let take = || c.sock.try_clone().map_err(|e| Error::io(Code::INITSTREAM, &e));
    if let Some(b) = &cfg.iperf2.bounceback {
        let counters = BouncebackCounters::new(cfg.output.interval, p.trip_times);
        let spec = BouncebackSpec {
            size: p.block_len_or_default(),
            count: b.count,
            period: b.period,
            hold_us: b.hold_us,
            quickack: b.quickack,
            tos: p.tos,
            synced: p.trip_times,
            reply: b.reply,
            counters: counters.clone(),
        };
        let extras = StreamExtras {
            kind: StreamKind::Exchange(std::sync::Arc::new(spec)),
            meta: StreamMeta {
                bounceback: Some(counters),
                ..StreamMeta::default()
            },
            ..StreamExtras::default()
        };
        return Ok(vec![Flow::new(data_stream(id, StreamRole::Send, take()?, c), extras)]);
    }
    let sends = p.direction != Direction::Reverse;
    let receives = matches!(p.direction, Direction::Reverse | Direction::FullDuplex);
    let mut flows = Vec::new();
    if receives {
        let qack = if cfg.iperf2.quickack { Some(take()?) } else { None };
        let extras = reader(p, p.trip_times, p.rate, qack, true);
        flows.push(Flow::new(data_stream(id, StreamRole::Recv, take()?, c), extras));
    }
    if sends {
        let stamp = match p.periodic_burst {
            _ if p.frames.is_some() => Some(BurstStamp::frames(start)),
            Some((size, _)) => Some(BurstStamp::periodic(
                start,
                size / p.block_len_or_default().max(1),
                Some(size),
            )),
            None => p.trip_times.then(|| BurstStamp::per_block(start)),
        };
        let hook = stamp.map(|s| Box::new(s) as Box<dyn wirespeed_core::engine::StreamHook>);
        let mut f = Flow::new(
            data_stream(id, StreamRole::Send, take()?, c),
            // Like 2.1.8, the header counts as sent bytes.
            StreamExtras {
                hook,
                initial_bytes: hdr_len,
                // The header is part of what `-n` counts (2.1.8 sends n
                // bytes in all).
                budget: match p.end {
                    EndCondition::Bytes(n) => Some(n.saturating_sub(hdr_len)),
                    _ => None,
                },
                ..StreamExtras::default()
            },
        );
        f.await_close = if receives { None } else { Some(take()?) };
        flows.push(f);
    }
    Ok(flows)
}

fn data_stream(id: u32, role: StreamRole, sock: TcpStream, c: &Connected) -> DataStream {
    DataStream::new(id, role, wirespeed_core::engine::DataSock::Tcp(sock), c.local, c.remote)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::iperf2::test_config as cfg;

    fn first_words(h: &ClientHeader) -> Vec<u32> {
        h.encode_tcp()
            .chunks(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    #[test]
    fn headers_match_what_2_1_8_sends() {
        let w = first_words(&build_header(&cfg("-c h -p 15030 -t 0.3 -l 1K"), (0, 0)));
        assert_eq!(&w[..6], &[0x4001_0078, 1, 15030, 1024, 0, 0xffff_ffe2]);
        assert_eq!(&w[6..11], &[0, 0, 0, 0x0002_0001, 0x0008_0003]);
        let w = first_words(&build_header(&cfg("-c h -t 0.3 -d -L 17000"), (0, 0)));
        assert_eq!(&w[..4], &[0xc001_0079, 1, 17000, 0]);
        let w = first_words(&build_header(&cfg("-c h -t 0.3 -r -L 17001"), (0, 0)));
        assert_eq!(&w[..3], &[0xc001_0078, 1, 17001]);
        let w = first_words(&build_header(&cfg("-c h -t 0.3 -R"), (0, 0)));
        assert_eq!((w[0], w[8]), (0x4401_0078, 0x0400_0000));
        let w = first_words(&build_header(&cfg("-c h -t 0.3 --full-duplex"), (0, 0)));
        assert_eq!((w[0], w[8]), (0x4401_0078, 0x0800_0000));
        let w = first_words(&build_header(&cfg("-c h -t 0.3 --trip-times"), (7, 9)));
        assert_eq!((w[0], w[8], w.len()), (0x4001_00a0, 0x0010_0000, 20));
        assert_eq!(&w[15..18], &[0, 7, 9]);
        let w = first_words(&build_header(&cfg("-c h -b 50m"), (0, 0)));
        assert_eq!((w[5], w[12]), (0xffff_fc18, 50_000_000));
        let w = first_words(&build_header(&cfg("-c h -n 100K"), (0, 0)));
        assert_eq!(w[5], 102400);
        let w = first_words(&build_header(&cfg("-c h -S 0x10"), (0, 0)));
        assert_eq!(w[11], 0x10);
        let w = first_words(&build_header(&cfg("-c h -X"), (0, 0)));
        assert_eq!(w[0] & 0xFF00_0000, 0x4600_0000);
    }

    #[test]
    fn clock_check_arithmetic() {
        let ack = ClientAck {
            version_u: VERSION_U,
            version_l: VERSION_L,
            times: Some([(10, 0), (10, 1000), (10, 1500)]),
        };
        let k = clock_check(&ack, (10, 0), (10, 2500)).unwrap();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(near(k.rtt, 2.0) && near(k.send, 1.0) && near(k.back, 1.0), "{k:?}");
    }
}
