//! The iperf 2 client, TCP and UDP alike: its banner, its `-P` flows
//! (made by the transport), the one test loop, and for `-d`/`-r` the
//! server's connect-back, received by an instance of the one server
//! listening on `-L` (2.1.8 prints it as a server: `Server listening on
//! ... port 16012`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::runner::{Flow, RunOpts, run_flows};
use crate::server::{Mode, Server};
use wirespeed_core::config::{Direction, EndCondition, Protocol, TestConfig, TestParams};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{BannerNote, Connecting, Event, Side, StartInfo};
use wirespeed_core::net;
use wirespeed_core::units::format_iperf2;
use wirespeed_report::{Gate, GateKey, Output, Reporter};

pub use super::tcp_client::{bb_mode, build_header};
use super::transport::{ClientTransport, settings};

/// Runs an iperf 2 client test against `host`. Every outcome, failures
/// included, reaches `reporter` (ending with `Event::Done`).
pub fn run(cfg: &TestConfig, host: &str, reporter: &mut Reporter, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    if let Some(seed) = cfg.iperf2.rand_seed {
        wirespeed_core::util::seed_generators(seed);
    }
    let r = match cfg.params.protocol {
        _ if cfg.iperf2.connect_only.is_some() => {
            resolve(host, cfg).and_then(|addrs| super::connect_only::run(cfg, host, &addrs, reporter, signal))
        }
        Protocol::Udp => {
            super::udp_client::transport(cfg, host).and_then(|mut t| test(cfg, host, &mut *t, reporter, signal, true))
        }
        _ => test(cfg, host, &mut Tcp::default(), reporter, signal, true),
    };
    if let Err(e) = &r {
        reporter.emit(Event::Error(e.clone()));
    }
    reporter.emit(Event::Done);
    r
}

/// The test itself (`banner`: print the client's settings banner first).
fn test(
    cfg: &TestConfig,
    host: &str,
    t: &mut dyn ClientTransport,
    reporter: &mut Reporter,
    signal: &Arc<AtomicUsize>,
    banner: bool,
) -> Result<(), Error> {
    let p = &cfg.params;
    let addrs = resolve(host, cfg)?;
    if let (Some(cca), Some(_)) = (&cfg.iperf2.load_cca, cfg.iperf2.working_load) {
        load_cca_usable(cca, addrs[0])?;
    }
    // The connect-back's reports go to the same reporter (its -d thread
    // runs beside ours): the reporter is shared while the test runs.
    let shared = Arc::new(Mutex::new(std::mem::take(reporter)));
    let mut local = Reporter::forwarding(shared.clone());
    let back = connect_back_server(cfg, &mut local, shared.clone());
    if banner {
        let (window, notes) = t.banner(cfg, addrs[0]);
        local.emit(Event::Connecting(Box::new(Connecting {
            host: host.to_string(),
            port: cfg.port,
            direction: p.direction,
            settings: settings(cfg, window, notes),
            control: None,
        })));
    }
    let mut load = None;
    let r = t.connect(cfg, &addrs, &mut local).and_then(|flows| {
        // A working load: TCP flows of their own beside ours, once ours
        // are connected.
        load = cfg.iperf2.working_load.map(|(dir, n)| {
            let lc = load_config(cfg, dir, n);
            let (host, signal) = (host.to_string(), signal.clone());
            let mut rep = Reporter::forwarding(shared.clone());
            std::thread::spawn(move || {
                if let Err(e) = test(&lc, &host, &mut Tcp::default(), &mut rep, &signal, false) {
                    rep.emit(Event::Warning(format!("working load: {}", e.text())));
                }
            })
        });
        let ids: Vec<u32> = flows.iter().map(|f| f.ds.id).collect();
        if let Some(at) = cfg.iperf2.txstart {
            wait_for_start(at, &ids, &mut local, signal);
        }
        let txdelay = cfg.iperf2.bounceback.as_ref().map_or(Duration::ZERO, |b| b.txdelay);
        if !txdelay.is_zero() {
            let at = wirespeed_core::clock::wall_clock_after(txdelay);
            wait_for_start(at, &ids, &mut local, signal);
        }
        // --fq-rate-step: the pacing grows from when the flows send.
        let _stepper = super::pacing_step::Stepper::start(cfg, &flows);
        run_all(cfg, host, t, flows, back, &mut local, signal)
    });
    if let Some(l) = load {
        let _ = l.join();
    }
    drop(local);
    if let Ok(m) = Arc::try_unwrap(shared) {
        *reporter = m.into_inner().unwrap_or_default();
    }
    r
}

/// `--working-load-cca`: refused before the test when this host cannot
/// give a socket that algorithm (2.2 finds out in its load thread and runs
/// without the load).
fn load_cca_usable(cca: &str, remote: SocketAddr) -> Result<(), Error> {
    let s = socket2::Socket::new(socket2::Domain::for_address(remote), socket2::Type::STREAM, None)
        .map_err(|e| Error::io(Code::NONE, &e))?;
    wirespeed_sys::socket::set_congestion(&s, cca).map_err(|e| {
        Error::msg(
            Code::NONE,
            format!("--working-load-cca {cca}: this host cannot use it ({e})"),
        )
    })
}

/// A working load: plain TCP flows in `dir` (`n` of them) for the test's
/// time (and a bounceback's transmit delay), without its request size,
/// rate, TOS or bursts. (2.1.8's load flows keep a bounceback's 100-byte
/// writes and quick acks, which makes them a weak load; these write the
/// TCP default.)
fn load_config(cfg: &TestConfig, dir: Direction, n: u32) -> TestConfig {
    let mut lc = cfg.clone();
    let txdelay = lc.iperf2.bounceback.take().map_or(Duration::ZERO, |b| b.txdelay);
    lc.iperf2.working_load = None;
    // --working-load-cca: the load's own algorithm instead of -Z's.
    if let Some(cca) = lc.iperf2.load_cca.take() {
        lc.params.congestion = Some(cca);
    }
    lc.params.protocol = Protocol::Tcp;
    lc.params.rate = 0;
    lc.params.rate_stdev = None;
    lc.params.pps = None;
    lc.params.periodic_burst = None;
    lc.params.trip_times = false;
    lc.iperf2.txstart = None;
    lc.params.direction = dir;
    lc.params.streams = n;
    if let wirespeed_core::config::EndCondition::Time(t) = lc.params.end {
        lc.params.end = wirespeed_core::config::EndCondition::Time(t + txdelay);
    }
    lc.params.block_len = None;
    lc.iperf2.len_given = false;
    lc.params.nodelay = false;
    lc.params.tos = 0;
    lc.iperf2.quickack = false;
    lc.latency = None;
    lc.output.html_report = None;
    lc
}

/// `--txstart-time`: says when the flows will start (or that the time has
/// passed) and waits for it; a signal ends the wait.
fn wait_for_start(at: (u32, u32), ids: &[u32], reporter: &mut Reporter, signal: &AtomicUsize) {
    let start = f64::from(at.0) + f64::from(at.1) / 1e6;
    let now = wirespeed_sys::time::epoch_now();
    let date = |t: f64| wirespeed_sys::time::strftime("%Y-%m-%d %H:%M:%S", t.floor() as i64, false);
    let zone = wirespeed_sys::time::strftime("%Z", now.floor() as i64, false);
    let mut seen = std::collections::BTreeSet::new();
    for id in ids.iter().filter(|id| seen.insert(**id)) {
        reporter.emit(Event::Notice(if start > now {
            format!(
                "[{id:>3}] Client traffic to start in {} seconds at {} current time is {} ({zone})",
                (start - now) as u64,
                date(start),
                date(now)
            )
        } else {
            format!(
                "[{id:>3}] WARNING: --txstart-time ({}.{}) {} is before now {} ({zone})",
                at.0,
                at.1,
                date(start),
                date(now)
            )
        }));
    }
    loop {
        let left = start - wirespeed_sys::time::epoch_now();
        if left <= 0.0 || signal.load(std::sync::atomic::Ordering::Relaxed) != 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs_f64(left.min(0.05)));
    }
}

/// Runs the flows, and the connect-back beside them (`-d`) or after (`-r`,
/// whose server connects back when our flows are done).
fn run_all(
    cfg: &TestConfig,
    host: &str,
    t: &mut dyn ClientTransport,
    flows: Vec<Flow>,
    back: Option<(Server, Option<GateKey>)>,
    reporter: &mut Reporter,
    signal: &Arc<AtomicUsize>,
) -> Result<(), Error> {
    let p = &cfg.params;
    t.before_run(signal);
    // Reverse traffic ends when the server closes; everything else when
    // we stop sending.
    let reverse_only = p.direction == Direction::Reverse;
    let opts = RunOpts {
        interval: cfg.output.interval,
        decides_end: !reverse_only,
        watchdog: p.duration().map(|d| Instant::now() + d + Duration::from_secs(30)),
        drain: t.drain(),
        idle_limit: if reverse_only { t.reverse_idle() } else { None },
        stop: Arc::new(AtomicBool::new(false)),
        file: match (&cfg.file, cfg.iperf2.stdin) {
            (Some(f), _) => Some(f.clone()),
            (None, true) => Some("/dev/stdin".into()),
            _ => None,
        },
        signal: signal.clone(),
        samples: cfg.output.chart_samples(),
        start: StartInfo {
            connecting_to: Some((host.to_string(), cfg.port)),
            ..StartInfo::default()
        },
    };
    let params = run_params(p);
    match (p.direction, back) {
        // The connect-back listener accepts from the start, for -r too:
        // the server may connect (and send) the moment our flows end,
        // before we are done with them.
        (Direction::Dual | Direction::Tradeoff, Some((server, gate))) => {
            let signal2 = signal.clone();
            let listen = std::thread::Builder::new()
                .name("ws-iperf2-listen".into())
                .spawn(move || server.run(signal2))
                .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
            let r = run_flows(&params, Side::Client, flows, &opts, reporter);
            t.after_run(reporter, signal);
            // -r: what the connect-back printed meanwhile follows our report.
            if let Some(g) = gate {
                g.open();
            }
            let r2 = listen.join().unwrap_or(Ok(()));
            r.and(r2)
        }
        _ => {
            let r = run_flows(&params, Side::Client, flows, &opts, reporter);
            t.after_run(reporter, signal);
            r
        }
    }
}

/// The test parameters the client's session runs with: a reverse-only
/// test's rate limits the server's sending (or our reads, in the hooks),
/// not a sender here; `-n` is per flow (each stream has its own budget),
/// so the session itself only waits for the streams.
fn run_params(p: &TestParams) -> TestParams {
    let mut params = p.clone();
    if p.direction == Direction::Reverse {
        params.rate = 0;
        params.pps = None;
    }
    if let EndCondition::Bytes(_) = params.end {
        params.end = EndCondition::Time(Duration::ZERO);
    }
    params
}

/// `host` resolved, or 2.1.8's words for why not.
fn resolve(host: &str, cfg: &TestConfig) -> Result<Vec<SocketAddr>, Error> {
    net::resolve(host, cfg.port, cfg.net.family).map_err(|e| {
        let text = e.text();
        let why = text.rsplit(": ").next().unwrap_or(&text).to_string();
        Error::msg(Code::CONNECT, format!("ERROR: failed to find host {host}: {why}"))
    })
}

/// For `-d`/`-r`: the server that receives the connect-back on `-L`, its
/// banner printed now (before the client's, as 2.1.8 prints them). It
/// waits for the server's flows up to the test's length and a little
/// more. With `-r` its reports are held until ours are out (the gate's
/// key).
fn connect_back_server(
    cfg: &TestConfig,
    reporter: &mut Reporter,
    shared: Arc<Mutex<Reporter>>,
) -> Option<(Server, Option<GateKey>)> {
    let p = &cfg.params;
    if !matches!(p.direction, Direction::Dual | Direction::Tradeoff) {
        return None;
    }
    let mut bcfg = cfg.clone();
    let extra = if p.direction == Direction::Dual { 2 } else { 3 };
    let wait = (p.duration().unwrap_or(Duration::ZERO) + Duration::from_secs(extra)).max(Duration::from_secs(3));
    bcfg.server.listen_time = Some(wait);
    bcfg.output.enhanced = false;
    match Server::bind_mode(
        &bcfg,
        Output::discard(),
        Mode::ConnectBack { expect: p.streams },
        crate::dialect::wings(),
    ) {
        Ok(s) => {
            reporter.emit(Event::Listening(Box::new(s.listening())));
            if p.direction == Direction::Tradeoff {
                let (gate, key) = Gate::new(shared);
                let mut held = Reporter::new();
                held.add(Box::new(gate));
                Some((s.forwarding_to(Arc::new(Mutex::new(held))), Some(key)))
            } else {
                Some((s.forwarding_to(shared), None))
            }
        }
        Err(e) => {
            reporter.emit(Event::Warning(e.text()));
            None
        }
    }
}

/// The TCP client.
#[derive(Default)]
struct Tcp {
    /// The connections, held until the test is over, so each keeps the
    /// descriptor its `(sock=N)` showed.
    keep: Vec<std::net::TcpStream>,
}

impl ClientTransport for Tcp {
    fn banner(&self, cfg: &TestConfig, addr: SocketAddr) -> (u64, Vec<BannerNote>) {
        let mut notes = tcp_notes(cfg);
        // 2.2's lines.
        if let Some(us) = super::tcp_client::probe_tx_delay(cfg, addr) {
            notes.push(BannerNote::Early(format!(
                "Socket option of TCP_TX_DELAY set to {:.3} milliseconds",
                f64::from(us) / 1e3
            )));
        }
        if let (Some(cca), Some(_)) = (&cfg.iperf2.load_cca, cfg.iperf2.working_load) {
            notes.push(BannerNote::Early(format!(
                "TCP working load congestion control set to {cca}"
            )));
        }
        (super::tcp_client::probe_window(cfg, addr), notes)
    }

    fn connect(&mut self, cfg: &TestConfig, addrs: &[SocketAddr], reporter: &mut Reporter) -> Result<Vec<Flow>, Error> {
        let start = wirespeed_core::clock::wall_clock();
        let (flows, keep) = super::tcp_client::connect_flows(cfg, addrs, start, reporter)?;
        self.keep = keep;
        Ok(flows)
    }

    fn drain(&self) -> Duration {
        Duration::from_secs(5)
    }
}

/// The banner notes of a TCP client.
fn tcp_notes(cfg: &TestConfig) -> Vec<BannerNote> {
    let p = &cfg.params;
    if let Some(bb) = &cfg.iperf2.bounceback {
        let size = format_iperf2(p.block_len_or_default() as f64, 'B');
        let mut notes = Vec::new();
        if !bb.period.is_zero() {
            notes.push(BannerNote::Early(format!(
                "Bursting: {size} writes {} times every {:.2} second(s)",
                bb.count,
                bb.period.as_secs_f64()
            )));
        }
        // 2.2's words when the reply's size differs from the request's.
        let sizes = match bb.reply.filter(|r| *r != p.block_len_or_default()) {
            Some(r) => format!(
                "req/reply size = {}/{}",
                format_iperf2(p.block_len_or_default() as f64, 'A').trim(),
                format_iperf2(f64::from(r), 'A').trim()
            ),
            None => format!("size={size}"),
        };
        notes.push(BannerNote::Early(format!(
            "Bounce-back test ({sizes}) (server hold req={} usecs{})",
            bb.hold_us,
            if bb.quickack { " & tcp_quickack" } else { "" }
        )));
        return notes;
    }
    let bursts = p.periodic_burst.map(|(size, period)| {
        BannerNote::Early(format!(
            "Bursting: {} every {:.2} second(s)",
            format_iperf2(f64::from(size), 'A'),
            period.as_secs_f64()
        ))
    });
    bursts
        .into_iter()
        .chain(super::isoch_note(p))
        .chain(super::pacing_note(cfg))
        .chain(
            cfg.iperf2
                .write_prefetch
                .map(|n| BannerNote::AfterWindow(format!("Event based writes (pending queue watermark at {n} bytes)"))),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_working_load_takes_its_own_congestion_control() {
        let cfg = super::super::test_config("-c h -Z cubic --working-load --working-load-cca reno");
        assert_eq!(cfg.params.congestion.as_deref(), Some("cubic"));
        let lc = load_config(&cfg, Direction::FullDuplex, 1);
        assert_eq!(lc.params.congestion.as_deref(), Some("reno"));
        assert!(lc.iperf2.load_cca.is_none() && lc.iperf2.working_load.is_none());
        // Without it the load keeps -Z's, as before.
        let cfg = super::super::test_config("-c h -Z cubic --working-load");
        assert_eq!(
            load_config(&cfg, Direction::FullDuplex, 1).params.congestion.as_deref(),
            Some("cubic")
        );
    }
}
