//! The iperf 2 dialect's drivers: the TCP client and server, speaking
//! 2.1.8's wire protocol (`proto::iperf2`) over the shared engine and
//! session, and printing through the iperf 2 sinks.
//!
//! iperf 2 has no control connection: each TCP connection opens with a
//! header (test settings); the receiver prints its own report, the sender
//! its own. `-d`/`-r` make the server connect back to the client.

mod bounceback;
pub mod client;
mod hooks;
mod runner;
pub mod server;
pub mod udp;
mod udp_client;
pub mod udp_server;

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::cli::iperf2::{Command, long_usage, parse_args, short_usage, version_line};
use crate::config::{Role, TestConfig};
use crate::events::{BannerNote, ConnInfo, Event, Side};
use crate::report::iperf2_text::{HeaderState, header_state};
use crate::report::{Output, Reporter};

/// What every flow of one process shares: where output goes, the column
/// header state, and the transfer-id counter (`[  1]`, `[  2]`, ...).
pub struct Ctx {
    /// The process's configuration.
    pub cfg: TestConfig,
    /// Output.
    pub out: Output,
    header: HeaderState,
    ids: AtomicU32,
    /// `--metrics` of the iperf3 server whose port this context serves.
    metrics: std::sync::OnceLock<Arc<crate::metrics::Metrics>>,
}

impl Ctx {
    /// A context printing to `out`.
    pub fn new(cfg: TestConfig, out: Output) -> Ctx {
        Ctx {
            cfg,
            out,
            header: header_state(),
            ids: AtomicU32::new(1),
            metrics: std::sync::OnceLock::new(),
        }
    }

    /// Counts this context's server tests into `m` (`--metrics`).
    pub fn set_metrics(&self, m: Arc<crate::metrics::Metrics>) {
        let _ = self.metrics.set(m);
    }

    /// A server test's reporter: `reporter_for`, plus the metrics sink
    /// when the server has `--metrics`. The test counts as started now and
    /// as ended when the reporter is dropped.
    pub fn test_reporter(
        &self,
        cfg: &TestConfig,
        protocol: crate::config::Protocol,
        client: std::net::IpAddr,
        flows: usize,
    ) -> Reporter {
        let mut r = self.reporter_for(cfg, Side::Server);
        let _ = flows;
        if let Some(m) = self.metrics.get() {
            let labels = crate::metrics::labels(crate::config::Dialect::Iperf2, protocol);
            r.add(Box::new(crate::metrics::MetricsSink::new(
                m.clone(),
                labels,
                crate::util::host_string(client),
            )));
        }
        r
    }

    /// The next transfer id.
    pub fn next_id(&self) -> u32 {
        self.ids.fetch_add(1, Relaxed)
    }

    /// A reporter with this process's iperf 2 sink.
    pub fn reporter(&self, side: Side) -> Reporter {
        self.reporter_for(&self.cfg, side)
    }

    /// A reporter for a flow whose settings differ from the process's
    /// (a server flow the client asked to be enhanced).
    pub fn reporter_for(&self, cfg: &TestConfig, side: Side) -> Reporter {
        let mut r = Reporter::new();
        r.add_iperf2(cfg, self.out.clone(), side, self.header.clone());
        r
    }
}

/// TCP_INFO right after connect, as iperf 2 prints it: (initial cwnd in
/// KBytes, send MSS, RTT µs).
pub fn tcp_init(s: &TcpStream) -> Option<(u32, u32, u32)> {
    let i = crate::sys::socket::tcp_info(s).ok()?;
    Some(((i.cwnd_bytes() / 1024) as u32, i.snd_mss, i.rtt))
}

/// A connection line's common fields.
pub fn conn_line(id: u32, s: &TcpStream, local: SocketAddr, remote: SocketAddr) -> ConnInfo {
    ConnInfo {
        tcp_init: tcp_init(s),
        ..flow_conn(id, s.as_raw_fd(), local, remote)
    }
}

/// A UDP flow's connection line.
pub fn udp_conn_line(id: u32, s: &std::net::UdpSocket, local: SocketAddr, remote: SocketAddr) -> ConnInfo {
    flow_conn(id, s.as_raw_fd(), local, remote)
}

fn flow_conn(id: u32, socket: i32, local: SocketAddr, remote: SocketAddr) -> ConnInfo {
    ConnInfo {
        local_dev: crate::sys::netif::interface_of(local.ip()),
        when: Some(crate::clock::epoch_now() as i64),
        ..ConnInfo::new(id, socket, local, remote)
    }
}

/// Runs the iperf 2 personality with `args` (without the program name);
/// returns the exit code.
pub fn run(args: &[String], prog: &str) -> i32 {
    let cmd = match parse_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{}", e.line(prog));
            return 1;
        }
    };
    let (cfg, warnings) = match cmd {
        Command::Help => {
            eprint!("{}", long_usage(prog));
            return 1;
        }
        Command::Version => {
            eprint!("{}", version_line());
            return 1;
        }
        Command::Usage => {
            eprint!("{}", short_usage(prog));
            return 0;
        }
        Command::Run(c, w) => (*c, w),
    };
    if let Some(f) = &cfg.output.logfile {
        println!(
            "Output from stdout and stderr will be redirected to file {}",
            f.display()
        );
    }
    let out = match Output::for_config(&cfg, prog) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ERROR: unable to open output file: {}", e.text());
            return 1;
        }
    };
    for w in &warnings {
        match w.strip_prefix(crate::cli::iperf2::TO_STDERR) {
            Some(w) => out.write_err(&format!("{w}\n")),
            None => out.write(&format!("{w}\n")),
        }
    }
    if cfg.iperf2.realtime
        && let Err(e) = crate::sys::netif::set_realtime()
    {
        out.write_err(&format!("WARNING: realtime scheduling not set: {e}\n"));
    }
    let signal = match cfg.role {
        Role::Server => crate::install_signals_for(crate::hangup_for_server(&cfg)),
        _ => crate::install_signals(),
    };
    let ctx = Arc::new(Ctx::new(cfg.clone(), out.clone()));
    let udp = cfg.params.protocol == crate::config::Protocol::Udp;
    let r = match &cfg.role {
        Role::Client(host) if udp => udp_client::run(&ctx, host, &signal),
        Role::Client(host) => client::run(&ctx, host, &signal),
        _ if udp => crate::policy::AccessPolicy::from_config(&cfg)
            .and_then(|policy| udp_server::run(ctx.clone(), signal, policy)),
        _ => server::run(ctx.clone(), signal),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            let mut rep = ctx.reporter(Side::Client);
            rep.emit(Event::Error(e));
            1
        }
    }
}

/// The banner line a client with `--fq-rate` prints (2.1.8: right after
/// the first line, always in adaptive bits).
pub(crate) fn pacing_note(p: &crate::config::TestParams) -> Option<BannerNote> {
    (p.fq_rate > 0).then(|| {
        BannerNote::Early(format!(
            "fair-queue socket pacing set to {}/s",
            crate::cli::units::format_iperf2(p.fq_rate as f64 / 8.0, 'a')
        ))
    })
}
