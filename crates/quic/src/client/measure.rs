//! The perf client's test: the connection, its streams on a
//! current-thread tokio runtime, and the events told from their counters.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::VarInt;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{sleep_until, timeout};

use super::json::{QuicDoc, WithQuic};
use crate::tls;
use crate::wire::{ENDLESS, REQUEST_LEN, request, share};
use wirespeed_core::config::{Direction, EndCondition, Protocol, TestConfig};
use wirespeed_core::error::{Code, Error, Kind};
use wirespeed_core::events::*;
use wirespeed_core::stats::{StreamCounters, StreamRole, StreamStats, TestStats};
use wirespeed_iperf::dialect::iperf3::quic::{Controller, Tuning};
use wirespeed_report::{Output, Reporter};

/// What a stream writes at a time, unless `-l` says.
const BLOCK: usize = 64 * 1024;
/// The largest `-l` (what one write is cut from).
const MAX_BLOCK: usize = 1 << 20;
static ZEROS: [u8; MAX_BLOCK] = [0; MAX_BLOCK];
/// The handshake's deadline unless `--connect-timeout` says.
const CONNECT: Duration = Duration::from_secs(10);
/// How long, after the data stopped, streams may take to end (the
/// server's FIN after an upload).
const DRAIN: Duration = Duration::from_secs(10);
/// A stream on which nothing arrives for this long has failed.
const STALL: Duration = Duration::from_secs(10);
/// QUIC's idle timeout.
const IDLE: Duration = Duration::from_secs(15);
/// What the client lets the server send ahead of its reads, per stream and
/// in all: enough for a fast loopback path.
const STREAM_WINDOW: u32 = 16 << 20;
const CONNECTION_WINDOW: u32 = 32 << 20;
/// How often the main loop looks at the signal cell and the connection.
const POLL: Duration = Duration::from_millis(100);

/// The application error code of our close and stream stops.
const DONE: u32 = 0;

/// Runs the test; see [`super::run`].
pub(crate) fn run(cfg: &TestConfig, target: &str, out: &Output, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    let quic: QuicDoc = Arc::new(Mutex::new(None));
    let mut reporter = reporter(cfg, out, quic.clone());
    let r = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))
        .and_then(|rt| rt.block_on(measure(cfg, target, &mut reporter, signal, &quic)));
    if let Err(e) = &r {
        reporter.emit(Event::Error(e.clone()));
    }
    reporter.emit(Event::Done);
    let finished = reporter.finish();
    match r {
        // Interrupted clients exit 0, as iperf3 3.19+ does.
        Err(e) if e.kind == Kind::Interrupt => finished,
        Err(e) => Err(e),
        Ok(()) => finished,
    }
}

/// The outputs `cfg` asks for; `-J`'s document gets the `quic` object.
fn reporter(cfg: &TestConfig, out: &Output, quic: QuicDoc) -> Reporter {
    if !cfg.output.json || cfg.output.json_stream {
        return Reporter::for_config(cfg, out.clone(), Side::Client);
    }
    let mut r = Reporter::new();
    r.add(Box::new(WithQuic::new(cfg, out.clone(), quic)));
    if let Some(path) = &cfg.output.html_report {
        r.add(Box::new(wirespeed_report::html::HtmlSink::new(
            cfg,
            out.clone(),
            Side::Client,
            path.clone(),
        )));
    }
    r
}

/// What a stream ends with.
#[derive(Debug, Clone, Copy, Default)]
struct Outcome {
    /// The server's FIN came: it read our whole upload (it answers only
    /// after our FIN), or sent the whole download.
    finished: bool,
}

/// The test's plan, from the configuration.
struct Plan {
    streams: u32,
    download: bool,
    /// `-n`, shared among the streams; `None`: until `-t`.
    bytes: Option<u64>,
    /// `-t`; `None` with no `-n` either: until interrupted (`-t 0`).
    time: Option<Duration>,
    block: usize,
    interval: Option<Duration>,
}

impl Plan {
    fn of(cfg: &TestConfig) -> Plan {
        let p = &cfg.params;
        let (bytes, time) = match p.end {
            EndCondition::Bytes(b) => (Some(b), None),
            // `-t 0`, as iperf3's: until interrupted.
            EndCondition::Time(t) => (None, (!t.is_zero()).then_some(t)),
            _ => (None, Some(Duration::from_secs(10))),
        };
        Plan {
            streams: p.streams.max(1),
            download: p.direction == Direction::Reverse,
            bytes,
            time,
            block: p.block_len.map_or(BLOCK, |l| (l as usize).clamp(1, MAX_BLOCK)),
            interval: cfg.output.interval,
        }
    }
}

async fn measure(
    cfg: &TestConfig,
    target: &str,
    reporter: &mut Reporter,
    signal: &Arc<AtomicUsize>,
    quic: &QuicDoc,
) -> Result<(), Error> {
    let (host, port) = crate::split_target(target, "--quic-perf")?;
    let plan = Plan::of(cfg);
    let remote = wirespeed_core::net::resolve(&host, port, cfg.net.family)?[0];
    let local_ip = local_ip_for(remote);
    let failed = |e: &dyn std::fmt::Display| {
        Error::msg(
            Code::CONNECT,
            format!("unable to connect to the QUIC perf server {host} port {port}: {e}"),
        )
    };
    let socket = crate::net::bind_udp(SocketAddr::new(local_ip, 0), false).map_err(|e| Error::io(Code::CONNECT, &e))?;
    let mut endpoint = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(|e| Error::io(Code::CONNECT, &e))?;
    let mut client = quinn::ClientConfig::new(Arc::new(tls::client_crypto()?));
    let controller = Tuning::of(&cfg.params)?.controller;
    client.transport_config(Arc::new(transport(controller)));
    endpoint.set_default_client_config(client);
    let timestamp = wirespeed_core::clock::timestamp_now();
    reporter.emit(Event::Connecting(Box::new(connecting(
        cfg,
        &host,
        port,
        &plan,
        timestamp.clone(),
    ))));
    // SNI: the name as given; an address (which rustls takes as one) sends
    // none.
    let connecting = endpoint.connect(remote, &host).map_err(|e| failed(&e))?;
    let wait = cfg.net.connect_timeout.unwrap_or(CONNECT);
    let conn = match timeout(wait, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(failed(&e)),
        Err(_) => return Err(failed(&"no handshake within the connect timeout")),
    };
    let local = SocketAddr::new(local_ip, endpoint.local_addr().map(|a| a.port()).unwrap_or(0));
    let result = test(
        cfg,
        &plan,
        &conn,
        (&host, port),
        (local, remote),
        timestamp,
        reporter,
        signal,
        quic,
    )
    .await;
    conn.close(VarInt::from_u32(DONE), b"done");
    let _ = timeout(crate::net::CLOSE_SENT, endpoint.wait_idle()).await;
    result
}

/// The address this host sends to `remote` from (what the report shows
/// as local), found by connecting a UDP socket (which sends nothing).
fn local_ip_for(remote: SocketAddr) -> IpAddr {
    let any = match remote {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    UdpSocket::bind(SocketAddr::new(any, 0))
        .and_then(|s| s.connect(remote).and_then(|_| s.local_addr()))
        .map(|a| a.ip())
        .unwrap_or(any)
}

/// The controller `-C` names (checked when the options were read).
fn controller_of(cfg: &TestConfig) -> Controller {
    Tuning::of(&cfg.params).map(|t| t.controller).unwrap_or_default()
}

/// The client's transport (see the constants), running `controller`.
fn transport(controller: Controller) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.congestion_controller_factory(crate::net::controller(controller));
    t.max_concurrent_bidi_streams(VarInt::from_u32(0));
    t.max_concurrent_uni_streams(VarInt::from_u32(0));
    t.max_idle_timeout(Some(IDLE.try_into().expect("idle timeout fits")));
    t.keep_alive_interval(Some(Duration::from_secs(2)));
    t.stream_receive_window(VarInt::from_u32(STREAM_WINDOW));
    t.receive_window(VarInt::from_u32(CONNECTION_WINDOW));
    t.send_window(crate::net::SEND_WINDOW);
    t.datagram_receive_buffer_size(None);
    t
}

fn connecting(cfg: &TestConfig, host: &str, port: u16, plan: &Plan, timestamp: Timestamp) -> Connecting {
    Connecting {
        host: host.to_string(),
        port,
        direction: cfg.params.direction,
        settings: Settings {
            protocol: Protocol::Tcp,
            pid: std::process::id(),
            flows: plan.streams,
            block_len: plan.block as u32,
            ..Settings::default()
        },
        control: Some(ControlInfo {
            timestamp,
            ..ControlInfo::default()
        }),
    }
}

/// The connection's numbers over the test, sampled each poll.
#[derive(Debug, Default)]
struct PathWatch {
    rtt_min: Option<Duration>,
    rtt_max: Duration,
    rtt_sum: Duration,
    rtt_n: u32,
    cwnd_max: u64,
    /// Lost packets at the last interval.
    lost_at_interval: u64,
}

impl PathWatch {
    fn look(&mut self, conn: &quinn::Connection) -> quinn::ConnectionStats {
        let s = conn.stats();
        let rtt = s.path.rtt;
        self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
        self.rtt_max = self.rtt_max.max(rtt);
        self.rtt_sum += rtt;
        self.rtt_n += 1;
        self.cwnd_max = self.cwnd_max.max(s.path.cwnd);
        s
    }

    fn rtt_mean(&self) -> Duration {
        self.rtt_sum.checked_div(self.rtt_n).unwrap_or_default()
    }
}

#[allow(clippy::too_many_arguments)]
async fn test(
    cfg: &TestConfig,
    plan: &Plan,
    conn: &quinn::Connection,
    (host, port): (&str, u16),
    (local, remote): (SocketAddr, SocketAddr),
    timestamp: Timestamp,
    reporter: &mut Reporter,
    signal: &Arc<AtomicUsize>,
    quic: &QuicDoc,
) -> Result<(), Error> {
    let role = if plan.download {
        StreamRole::Recv
    } else {
        StreamRole::Send
    };
    let mut opened = Vec::new();
    let mut connected = Vec::new();
    for i in 0..plan.streams {
        let (send, recv) = timeout(CONNECT, conn.open_bi())
            .await
            .map_err(|_| {
                Error::msg(
                    Code::STREAMCONNECT,
                    "the server allows no stream within the connect timeout",
                )
            })?
            .map_err(|e| Error::msg(Code::STREAMCONNECT, format!("cannot open a QUIC stream: {e}")))?;
        let id = i + 1;
        let mut info = ConnInfo::new(id, 5 + i as i32, local, remote);
        info.mode = Some(format!("QUIC stream {}", send.id().index() * 4));
        reporter.emit(Event::StreamConnected(Box::new(info.clone())));
        connected.push(info);
        opened.push((send, recv));
    }
    let epoch = Instant::now();
    let counters: Vec<Arc<StreamCounters>> = (0..plan.streams).map(|_| Arc::new(StreamCounters::default())).collect();
    let stats_streams = counters
        .iter()
        .enumerate()
        .map(|(i, c)| StreamStats::new(i as u32 + 1, 5 + i as i32, role, None, c.clone(), None))
        .collect();
    let mut stats = TestStats::new(stats_streams, Protocol::Tcp, plan.streams, false, epoch, epoch);
    reporter.emit(Event::Start(Box::new(start_info(
        cfg, plan, connected, timestamp, host, port,
    ))));

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    for (i, (send, recv)) in opened.into_iter().enumerate() {
        let c = counters[i].clone();
        let stop = stop_rx.clone();
        let quota = plan.bytes.map(|b| share(b, i as u32, plan.streams));
        if plan.download {
            tasks.spawn(download(send, recv, c, epoch, quota.unwrap_or(ENDLESS), stop));
        } else {
            tasks.spawn(upload(conn.clone(), send, recv, c, epoch, quota, plan.block, stop));
        }
    }

    let mut watch = PathWatch::default();
    let mut next_tick = plan.interval.map(|i| epoch + i);
    let mut deadline = plan.time.map(|t| epoch + t);
    // Once the data stops (the deadline, a signal, a failure), no interval
    // is taken but the last.
    let mut stopping = false;
    let mut drain_until: Option<Instant> = None;
    let mut interrupted: Option<usize> = None;
    let mut outcomes = Vec::new();
    let mut failure: Option<Error> = None;
    let far = epoch + Duration::from_secs(365 * 24 * 3600);
    while !tasks.is_empty() {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(Ok(Ok(o))) => outcomes.push(o),
                Some(Ok(Err(e))) => { failure.get_or_insert(e); stopping = true; let _ = stop_tx.send(true); }
                Some(Err(e)) => { failure.get_or_insert(Error::msg(Code::NONE, format!("a stream's task failed: {e}"))); }
                None => break,
            },
            _ = sleep_until(next_tick.unwrap_or(far).into()), if next_tick.is_some() => {
                let now = Instant::now();
                let path = watch.look(conn);
                if !stopping
                    && deadline.is_none_or(|d| now < d)
                    && let Some(mut r) = stats.sample(now, 0.0, false)
                {
                    add_path(&mut r, &path, &mut watch, plan);
                    reporter.emit(Event::Interval(Box::new(r)));
                }
                let i = plan.interval.unwrap_or(Duration::from_secs(1));
                let mut n = next_tick.unwrap_or(now) + i;
                while n <= now { n += i; }
                next_tick = Some(n);
            },
            _ = sleep_until(deadline.unwrap_or(far).into()), if deadline.is_some() => {
                let _ = stop_tx.send(true);
                stopping = true;
                deadline = None;
                drain_until = Some(Instant::now() + DRAIN);
            },
            _ = tokio::time::sleep(POLL) => {
                watch.look(conn);
                let sig = signal.load(Relaxed);
                if sig != 0 && interrupted.is_none() {
                    interrupted = Some(sig);
                    stopping = true;
                    let _ = stop_tx.send(true);
                    drain_until = Some(Instant::now() + Duration::from_secs(1));
                }
                if drain_until.is_some_and(|d| Instant::now() >= d) {
                    tasks.abort_all();
                }
                if let Some(e) = conn.close_reason() && failure.is_none() && !tasks.is_empty() {
                    failure = Some(Error::msg(Code::NONE, format!("the QUIC connection ended: {e}")));
                }
            },
        }
    }
    let now = Instant::now();
    let path = watch.look(conn);
    // The last interval ends when the last stream did.
    let ended = (0..counters.len()).filter_map(|i| stats.ended_at(i)).max();
    let last = ended.map_or(now, |e| e.min(now));
    let min = plan.interval.map_or(0.0, |i| i.as_secs_f64() * 0.1);
    if let Some(mut r) = stats.sample(last, min, true) {
        add_path(&mut r, &path, &mut watch, plan);
        reporter.emit(Event::Interval(Box::new(r)));
    }
    let confirmed = outcomes.iter().filter(|o| o.finished).count() == counters.len() && failure.is_none();
    let peer = peer_results(&stats, last, plan, confirmed);
    let mut summary = stats.summary(last, Some(&peer), None);
    add_path_totals(&mut summary, &path, &watch, plan);
    *quic.lock().unwrap_or_else(|p| p.into_inner()) =
        Some(quic_object(&path, &watch, conn, confirmed, controller_of(cfg)));
    reporter.emit(Event::End(Box::new(summary)));
    if let Some(sig) = interrupted {
        return Err(Error::interrupted(Code::CLIENTTERM, "client", sig));
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn start_info(
    cfg: &TestConfig,
    plan: &Plan,
    connected: Vec<ConnInfo>,
    timestamp: Timestamp,
    host: &str,
    port: u16,
) -> StartInfo {
    StartInfo {
        connected,
        version: wirespeed_core::version::version_string(),
        system_info: wirespeed_sys::process::system_info(),
        timestamp,
        connecting_to: Some((host.to_string(), port)),
        protocol: Protocol::Tcp,
        num_streams: plan.streams,
        blksize: plan.block as u32,
        duration: plan.time.map_or(0, |t| t.as_secs()),
        bytes: plan.bytes.unwrap_or(0),
        direction: cfg.params.direction,
        interval: plan.interval.map_or(0.0, |i| i.as_secs_f64()),
        title: cfg.params.title.clone(),
        ..StartInfo::default()
    }
}

/// The far end's numbers, which QUIC's reliability gives us: what the
/// server read of an upload is everything we sent once its FIN came (it
/// answers only after reading to our FIN); what it sent of a download is
/// what we read.
fn peer_results(stats: &TestStats, now: Instant, plan: &Plan, confirmed: bool) -> wirespeed_proto::iperf3::Results {
    let ours = stats.local_results(now, None);
    let streams = ours
        .streams
        .into_iter()
        .map(|mut s| {
            if !plan.download && !confirmed {
                s.bytes = 0;
            }
            s.retransmits = -1;
            s.ports = None;
            s
        })
        .collect();
    wirespeed_proto::iperf3::Results {
        sender_has_retransmits: if plan.download { 0 } else { -1 },
        streams,
        receiver_drained: true,
        ..Default::default()
    }
}

/// An interval's sending streams get the connection's congestion window
/// and RTT, and its packets lost in the interval as retransmits (on the
/// one stream, or on the sum when streams share the connection).
fn add_path(r: &mut IntervalReport, s: &quinn::ConnectionStats, w: &mut PathWatch, plan: &Plan) {
    let lost = s.path.lost_packets.saturating_sub(w.lost_at_interval) as i64;
    w.lost_at_interval = s.path.lost_packets;
    if plan.download {
        return;
    }
    let one = r.streams.len() == 1;
    for st in r.streams.iter_mut() {
        let retransmits = if one { lost } else { 0 };
        st.tcp = Some(TcpSample {
            retransmits,
            snd_cwnd: s.path.cwnd,
            rtt: s.path.rtt.as_micros() as u64,
            pmtu: u64::from(s.path.current_mtu),
            ..TcpSample::default()
        });
        st.retransmits = Some(retransmits);
    }
    r.sum.retransmits = Some(lost);
}

/// The summary's sending streams get the connection's extremes and its
/// lost packets.
fn add_path_totals(sum: &mut Summary, s: &quinn::ConnectionStats, w: &PathWatch, plan: &Plan) {
    if plan.download {
        return;
    }
    let lost = s.path.lost_packets as i64;
    let one = sum.streams.len() == 1;
    for st in sum.streams.iter_mut() {
        st.sender.retransmits = Some(if one { lost } else { 0 });
        st.tcp = Some(TcpTotals {
            max_snd_cwnd: w.cwnd_max,
            max_snd_wnd: 0,
            max_rtt: w.rtt_max.as_micros() as u64,
            min_rtt: w.rtt_min.unwrap_or_default().as_micros() as u64,
            mean_rtt: w.rtt_mean().as_micros() as u64,
            reorder: 0,
        });
    }
    sum.forward.sent.retransmits = Some(lost);
    sum.has_retransmits = true;
}

/// `end.quic`: what quinn says of the connection.
fn quic_object(
    s: &quinn::ConnectionStats,
    w: &PathWatch,
    conn: &quinn::Connection,
    confirmed: bool,
    controller: Controller,
) -> Value {
    let mut m = Map::new();
    let us = |d: Duration| Value::from(d.as_micros() as u64);
    m.insert("alpn".into(), Value::from("perf"));
    m.insert("remote".into(), Value::from(conn.remote_address().to_string()));
    m.insert("server_confirmed".into(), Value::from(confirmed));
    m.insert("rtt_us".into(), us(s.path.rtt));
    m.insert("min_rtt_us".into(), us(w.rtt_min.unwrap_or_default()));
    m.insert("max_rtt_us".into(), us(w.rtt_max));
    m.insert("mean_rtt_us".into(), us(w.rtt_mean()));
    m.insert("cwnd".into(), Value::from(s.path.cwnd));
    m.insert("max_cwnd".into(), Value::from(w.cwnd_max));
    m.insert("congestion_events".into(), Value::from(s.path.congestion_events));
    m.insert("congestion".into(), Value::from(controller.name()));
    m.insert("sent_packets".into(), Value::from(s.path.sent_packets));
    m.insert("lost_packets".into(), Value::from(s.path.lost_packets));
    m.insert("lost_bytes".into(), Value::from(s.path.lost_bytes));
    m.insert("mtu".into(), Value::from(s.path.current_mtu));
    m.insert("udp_datagrams_sent".into(), Value::from(s.udp_tx.datagrams));
    m.insert("udp_bytes_sent".into(), Value::from(s.udp_tx.bytes));
    m.insert("udp_datagrams_received".into(), Value::from(s.udp_rx.datagrams));
    m.insert("udp_bytes_received".into(), Value::from(s.udp_rx.bytes));
    Value::Object(m)
}

fn stamp_end(c: &StreamCounters, epoch: Instant) {
    let ns = epoch.elapsed().as_nanos().max(1) as u64;
    c.ended_ns.store(ns, Relaxed);
}

/// An upload stream: the request for nothing back, `quota` bytes (or
/// until stopped), our FIN, then the server's FIN. Each write first sizes
/// the connection's send buffer to its window (`net::hold_send_window`):
/// a byte counts as sent when quinn takes it.
#[allow(clippy::too_many_arguments)]
async fn upload(
    conn: quinn::Connection,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    c: Arc<StreamCounters>,
    epoch: Instant,
    quota: Option<u64>,
    block: usize,
    mut stop: watch::Receiver<bool>,
) -> Result<Outcome, Error> {
    let werr = |e: &dyn std::fmt::Display| Error::msg(Code::STREAMWRITE, format!("QUIC stream: {e}"));
    send.write_all(&request(0)).await.map_err(|e| werr(&e))?;
    let mut left = quota.unwrap_or(u64::MAX);
    while left > 0 && !*stop.borrow() {
        let n = left.min(block as u64) as usize;
        crate::net::hold_send_window(&conn, crate::net::SEND_WINDOW);
        tokio::select! {
            biased;
            _ = stop.changed() => break,
            r = send.write_chunk(Bytes::from_static(&ZEROS[..n])) => {
                r.map_err(|e| werr(&e))?;
                left -= n as u64;
                c.bytes.fetch_add(n as u64, Relaxed);
                c.blocks.fetch_add(1, Relaxed);
            }
        }
    }
    send.finish().map_err(|e| werr(&e))?;
    // The server answers after reading to our FIN; its FIN says it has
    // everything.
    let finished = loop {
        match timeout(DRAIN, recv.read_chunk(BLOCK, false)).await {
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => break true,
            Ok(Err(e)) => return Err(Error::msg(Code::STREAMREAD, format!("QUIC stream: {e}"))),
            Err(_) => break false,
        }
    };
    stamp_end(&c, epoch);
    Ok(Outcome { finished })
}

/// A download stream: the request for `ask` bytes, our FIN, then the
/// server's bytes until its FIN (or until stopped).
async fn download(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    c: Arc<StreamCounters>,
    epoch: Instant,
    ask: u64,
    mut stop: watch::Receiver<bool>,
) -> Result<Outcome, Error> {
    let werr = |e: &dyn std::fmt::Display| Error::msg(Code::STREAMWRITE, format!("QUIC stream: {e}"));
    let mut head = [0u8; REQUEST_LEN];
    head.copy_from_slice(&request(ask));
    send.write_all(&head).await.map_err(|e| werr(&e))?;
    send.finish().map_err(|e| werr(&e))?;
    let mut finished = false;
    while !*stop.borrow() {
        tokio::select! {
            biased;
            _ = stop.changed() => break,
            r = timeout(STALL, recv.read_chunk(MAX_BLOCK, false)) => match r {
                Ok(Ok(Some(chunk))) => {
                    c.bytes.fetch_add(chunk.bytes.len() as u64, Relaxed);
                    c.blocks.fetch_add(1, Relaxed);
                    c.last_rx_ns.store(epoch.elapsed().as_nanos().max(1) as u64, Relaxed);
                }
                Ok(Ok(None)) => {
                    finished = true;
                    break;
                }
                Ok(Err(e)) => return Err(Error::msg(Code::STREAMREAD, format!("QUIC stream: {e}"))),
                Err(_) => return Err(Error::msg(Code::STREAMREAD, "QUIC stream: nothing arrived for 10 s")),
            }
        }
    }
    stamp_end(&c, epoch);
    if !finished {
        let _ = recv.stop(VarInt::from_u32(DONE));
    }
    Ok(Outcome { finished })
}
