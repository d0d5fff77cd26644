//! `--connect-only[=n]`: iperf 2's three-way-handshake test. Each flow
//! connects and closes, sending nothing: `n` times back to back (10 by
//! default), or with `-i` once per interval until `-t`. Every connect
//! prints its connection line with the connect time (`(ct=… ms)`); with
//! `-e` and more than one connect, the `[ CT]` line ends the test with
//! their distribution and the failures (`docs/protocols.md`, iperf 2:
//! `--connect-only`).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::tcp_client::connect_one;
use super::transport::settings;
use wirespeed_core::config::TestConfig;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{BannerNote, ConnectTimes, Connecting, Event};
use wirespeed_core::net;
use wirespeed_core::stats::counters::Welford;
use wirespeed_report::Reporter;

/// What the banner says instead of the window size.
const BANNER: &str = "TCP three-way-handshake (3WHS) only";

/// The connect times of all flows and the connects that failed.
#[derive(Default)]
struct Tally {
    times: Welford,
    errors: u64,
}

/// Runs the handshakes of every flow (a thread each) to the end, or until
/// a signal; then the `[ CT]` line.
pub(super) fn run(
    cfg: &TestConfig,
    host: &str,
    addrs: &[std::net::SocketAddr],
    reporter: &mut Reporter,
    signal: &Arc<AtomicUsize>,
) -> Result<(), Error> {
    let p = &cfg.params;
    reporter.emit(Event::Connecting(Box::new(Connecting {
        host: host.to_string(),
        port: cfg.port,
        direction: p.direction,
        settings: settings(cfg, 0, vec![BannerNote::InsteadOfWindow(BANNER.into())]),
        control: None,
    })));
    let shared = Arc::new(Mutex::new(std::mem::take(reporter)));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for i in 0..p.streams {
            let (shared, tally) = (shared.clone(), tally.clone());
            // `-p m-n` and --incr-dstport: flow i goes to port m + i.
            let to = super::flow_addrs(cfg, addrs, i);
            scope.spawn(move || flow(cfg, &to, started, &shared, &tally, signal));
        }
    });
    if let Ok(m) = Arc::try_unwrap(shared) {
        *reporter = m.into_inner().unwrap_or_default();
    }
    let tally = tally.lock().map(|t| (t.times, t.errors)).unwrap_or_default();
    if cfg.output.enhanced && tally.0.count > 1 {
        reporter.emit(Event::ConnectTimes(Box::new(ConnectTimes {
            ms: tally.0.stats().unwrap_or_default(),
            errors: tally.1,
        })));
    }
    // Every connect failing is a failed test (2.1.8 exits 0 even then).
    if tally.0.count == 0 && tally.1 > 0 {
        return Err(Error::msg(
            Code::CONNECT,
            format!("ERROR: none of {} connects succeeded", tally.1),
        ));
    }
    Ok(())
}

/// One flow's handshakes: connect, print, close; `n` times, or once per
/// interval until the test's time with `-i`.
fn flow(
    cfg: &TestConfig,
    addrs: &[std::net::SocketAddr],
    started: Instant,
    shared: &Arc<Mutex<Reporter>>,
    tally: &Mutex<Tally>,
    signal: &AtomicUsize,
) {
    let id = super::next_id();
    let n = cfg.iperf2.connect_only.unwrap_or(10);
    let period = cfg.output.interval.filter(|i| !i.is_zero());
    let until = started + cfg.params.duration().unwrap_or(Duration::from_secs(10));
    let mut k: u32 = 0;
    loop {
        if signal.load(Relaxed) != 0 {
            return;
        }
        match period {
            // One per interval, at its start, while the test lasts.
            Some(i) => {
                let at = started + i.saturating_mul(k);
                if at >= until {
                    return;
                }
                while Instant::now() < at {
                    if signal.load(Relaxed) != 0 {
                        return;
                    }
                    std::thread::sleep((at - Instant::now()).min(Duration::from_millis(50)));
                }
            }
            None if k >= n => return,
            None => {}
        }
        k += 1;
        let event = match connect_one(cfg, addrs) {
            Ok(c) => {
                let mut line = super::conn_line(id, &c.sock, c.local, c.remote);
                line.connect_ms = Some(c.connect_ms);
                line.mss = Some(net::mss_of(&c.sock));
                line.times_always = true;
                if let Ok(mut t) = tally.lock() {
                    t.times.add(c.connect_ms, 0);
                }
                // Closed at once: nothing is sent.
                drop(c.sock);
                Event::StreamConnected(Box::new(line))
            }
            Err(e) => {
                if let Ok(mut t) = tally.lock() {
                    t.errors += 1;
                }
                Event::Warning(e.why())
            }
        };
        if let Ok(mut r) = shared.lock() {
            r.emit(event);
        }
    }
}
