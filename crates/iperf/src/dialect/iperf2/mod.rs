//! What only the iperf 2 dialect has: its clients (TCP and UDP, with the
//! server's connect-back for `-d`/`-r` received through the one server),
//! the hooks its streams run (burst stamps, read histograms, UDP
//! latency), its UDP end of test (FIN and report), and how its flows end
//! in the one test loop. Its server side lives in `server`.

pub mod bounceback;
pub mod client;
mod connect_only;
pub mod hooks;
mod l4s;
mod pacing_step;
pub mod runner;
pub mod server;
mod tcp_client;
mod transport;
pub mod udp;
mod udp_client;

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use wirespeed_sys::AsSock;

use wirespeed_core::events::{BannerNote, ConnInfo};

/// The next transfer id (`[  1]`, `[  2]`, ...): one count per process,
/// as 2.1.8 numbers every flow it reports.
pub(crate) fn next_id() -> u32 {
    static IDS: AtomicU32 = AtomicU32::new(1);
    IDS.fetch_add(1, Relaxed)
}

/// Where flow `i` connects: with `-p m-n` or `--incr-dstport`, the same
/// addresses at port m + i; otherwise the addresses themselves.
pub(crate) fn flow_addrs(cfg: &wirespeed_core::config::TestConfig, addrs: &[SocketAddr], i: u32) -> Vec<SocketAddr> {
    if cfg.iperf2.port_last.is_some() || cfg.iperf2.incr_dstport {
        let port = cfg.port.saturating_add(i as u16);
        addrs.iter().map(|a| SocketAddr::new(a.ip(), port)).collect()
    } else {
        addrs.to_vec()
    }
}

/// TCP_INFO right after connect, as iperf 2 prints it: (initial cwnd in
/// KBytes, send MSS, RTT µs).
pub fn tcp_init(s: &TcpStream) -> Option<(u32, u32, u32)> {
    let i = wirespeed_sys::socket::tcp_info(s).ok()?;
    Some(((i.cwnd_bytes() / 1024) as u32, i.snd_mss, i.rtt))
}

/// A connection line's common fields.
pub(crate) fn conn_line(id: u32, s: &TcpStream, local: SocketAddr, remote: SocketAddr) -> ConnInfo {
    ConnInfo {
        tcp_init: tcp_init(s),
        ..flow_conn(id, s.sock_num(), local, remote)
    }
}

/// A UDP flow's connection line.
pub(crate) fn udp_conn_line(id: u32, s: &std::net::UdpSocket, local: SocketAddr, remote: SocketAddr) -> ConnInfo {
    flow_conn(id, s.sock_num(), local, remote)
}

fn flow_conn(id: u32, socket: i32, local: SocketAddr, remote: SocketAddr) -> ConnInfo {
    ConnInfo {
        local_dev: wirespeed_sys::netif::interface_of(local.ip()),
        when: Some(wirespeed_core::clock::epoch_now() as i64),
        ..ConnInfo::new(id, socket, local, remote)
    }
}

/// The banner line a client with `--fq-rate` prints (2.1.8: right after
/// the first line, always in adaptive bits), with 2.2's step
/// (`--fq-rate-step`).
pub(crate) fn pacing_note(cfg: &wirespeed_core::config::TestConfig) -> Option<BannerNote> {
    let p = &cfg.params;
    let rate = |bits: u64| wirespeed_core::units::format_iperf2(bits as f64 / 8.0, 'a');
    (p.fq_rate > 0).then(|| {
        BannerNote::Early(match cfg.iperf2.fq_rate_step {
            Some((step, _)) => format!(
                "fair-queue socket pacing set to {}/s (stepping rate by {}/s)",
                rate(p.fq_rate),
                rate(step)
            ),
            None => format!("fair-queue socket pacing set to {}/s", rate(p.fq_rate)),
        })
    })
}

/// The banner line of an `--isochronous` client (2.1.8's wording).
pub(crate) fn isoch_note(p: &wirespeed_core::config::TestParams) -> Option<BannerNote> {
    let f = p.frames?;
    let bits = |v: f64| wirespeed_core::units::format_iperf2(v / 8.0, 'a');
    Some(BannerNote::Early(format!(
        "Isochronous: {:.2} frames/sec mean={}/s, stddev={}/s, Period/IPG={:.2}/{:.3} ms",
        f.fps,
        bits(f.mean),
        bits(f.stdev),
        1e3 / f.fps,
        f.ipg.as_secs_f64() * 1e3
    )))
}

/// The configuration an iperf 2 command line (no environment) gives, for
/// the wire tests of this wing.
#[cfg(test)]
pub(crate) fn test_config(cmdline: &str) -> wirespeed_core::config::TestConfig {
    use wirespeed_cli::iperf2::{Command, parse_args_with_env};
    let args: Vec<String> = cmdline.split_whitespace().map(String::from).collect();
    match parse_args_with_env(&args, &|_| None) {
        Ok(Command::Run(c, _)) => *c,
        other => panic!("{cmdline}: {other:?}"),
    }
}
