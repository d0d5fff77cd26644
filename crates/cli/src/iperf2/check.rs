//! Checks that involve several options, run once every row has applied,
//! in a fixed order (so the first problem reported is always the same),
//! completing the configuration.

use std::time::Duration;

use super::opt::Opt;
use super::state::ParseState;
use super::table::TABLE;
use super::{CliError, Command, DEFAULT_UDP_LEN, DEFAULT_UDP_LEN_V6, DEFAULT_UDP_RATE, MAX_UDP_LEN, TO_STDERR};
use crate::getopt::Occurrence;
use wirespeed_core::config::*;

type Result<T = ()> = std::result::Result<T, CliError>;

/// Runs every check; the answer is the test to run, or the short usage
/// when neither `-s` nor `-c` was given.
pub(super) fn all(mut s: ParseState, opts: &[Occurrence<Opt>]) -> Result<Command> {
    bounceback_settings(&mut s)?;
    if !mode(&mut s) {
        return Ok(Command::Usage);
    }
    one_stdout_format(&s.common.cfg)?;
    udp_search(&mut s)?;
    direction(&mut s)?;
    udp_exclusions(&s, opts)?;
    server_only_settings(&mut s)?;
    if s.server {
        server_role(&mut s, opts)?;
    } else {
        client_role(&mut s)?;
    }
    if s.rate_pps && s.common.cfg.params.protocol == Protocol::Tcp {
        return Err(CliError::err("units of pps not supported with TCP"));
    }
    if let Some(cca) = s.tcp_cca.take() {
        if s.common.cfg.params.congestion.is_some() {
            s.common
                .warnings
                .push("Option --tcp-cca ignored because --tcp-congestion or -Z set".into());
        } else {
            s.common.cfg.params.congestion = Some(cca);
        }
    }
    bounceback_test(&mut s)?;
    iperf22_options(&mut s)?;
    block_length(&mut s)?;
    isochronous(&mut s)?;
    periodic_bursts(&mut s)?;
    udp_l4s(&s, opts)?;
    tcp_and_file(&mut s)?;
    if s.common.cfg.search.is_some() {
        search_limits(&s)?;
    }
    if s.common.cfg.rpm {
        let c = &s.common.cfg;
        let clash = if c.latency.is_some() {
            Some("--latency (--rpm probes already)")
        } else if c.iperf2.bounceback.is_some() {
            Some("--bounceback")
        } else if c.iperf2.connect_only.is_some() {
            Some("--connect-only")
        } else if c.search.is_some() {
            Some("--udp-search")
        } else if !matches!(c.params.end, EndCondition::Time(_)) {
            Some("-n (it runs for a time)")
        } else if c.output.csv {
            Some("-y C")
        } else {
            None
        };
        if let Some(what) = clash {
            return Err(CliError::err(format!("--rpm cannot be used with {what}")));
        }
    }
    if s.common.cfg.latency.is_some() {
        if s.common.cfg.search.is_some() {
            return Err(CliError::err("--latency cannot be used with --udp-search"));
        }
        if s.common.cfg.iperf2.bounceback.is_some() {
            return Err(CliError::err(
                "--latency cannot be used with --bounceback (a bounceback test measures round trips itself)",
            ));
        }
    }
    Ok(Command::Run(Box::new(s.common.cfg), s.common.warnings))
}

/// `-T`, and the bounceback settings (which need `--bounceback` on a client).
fn bounceback_settings(s: &mut ParseState) -> Result {
    s.common.cfg.net.ttl = s.ttl;
    if let Some(b) = &mut s.bounceback {
        b.period = s.bb_period;
        b.hold_us = s.bb_hold;
        b.quickack = s.bb_quickack;
        b.txdelay = s.bb_txdelay;
        // 2.2's request size stands for -l unless -l is given (which wins,
        // with 2.2's warning when it is smaller).
        if let Some(r) = s.bb_request {
            match s.len {
                Some(l) if l < f64::from(r) => s
                    .common
                    .warnings
                    .push("WARN: bounceback request will use -l length and not --bounceback-request value".into()),
                Some(_) => {}
                None => s.len = Some(f64::from(r)),
            }
        }
        b.reply = s.bb_reply;
    } else if let (false, Some(o)) = (s.server, s.bb_opts.first()) {
        return Err(CliError::err(format!("option {o} needs --bounceback")));
    }
    Ok(())
}

/// Server or client; false when neither was asked for.
fn mode(s: &mut ParseState) -> bool {
    if s.server && s.common.client.is_some() {
        // -s -c host: the server serves only that client (2.1.8 accepts
        // the option and does nothing; its documentation promises this).
        let host = s.common.client.take().unwrap_or_default();
        s.common.cfg.server.allow.push(host);
    }
    s.server || s.common.client.is_some()
}

/// JSON (`-J`, `--json-stream`) and CSV (`-y C`) would share standard
/// output, and a reader could parse neither.
fn one_stdout_format(cfg: &TestConfig) -> Result {
    if cfg.output.json && cfg.output.csv {
        return Err(CliError::err(
            "-J/--json-stream and -y C cannot be used together: JSON and CSV rows would share standard output",
        ));
    }
    Ok(())
}

/// A client's `--udp-search` (with `--max-loss`): a UDP measurement, as in
/// the iperf3 dialect. (A server warns about both and drops them.)
fn udp_search(s: &mut ParseState) -> Result {
    if s.server {
        return Ok(());
    }
    let search = s.common.search.resolve().map_err(CliError::err)?;
    if search.is_some() {
        // The search is a UDP measurement: -u is implied.
        s.common.udp = true;
    }
    s.common.cfg.search = search;
    Ok(())
}

/// The protocol and the one test direction.
fn direction(s: &mut ParseState) -> Result {
    let cfg = &mut s.common.cfg;
    if s.common.udp {
        cfg.params.protocol = Protocol::Udp;
    }
    let modes = [s.dual, s.tradeoff, s.common.reverse, s.full_duplex]
        .iter()
        .filter(|m| **m)
        .count();
    if modes > 1 {
        return Err(CliError::err(
            "options of --full-duplex, --reverse, -d and -r are mutually exclusive",
        ));
    }
    cfg.params.direction = if s.dual {
        Direction::Dual
    } else if s.tradeoff {
        Direction::Tradeoff
    } else if s.common.reverse {
        Direction::Reverse
    } else if s.full_duplex {
        Direction::FullDuplex
    } else {
        Direction::Forward
    };
    if cfg.iperf2.compat && (cfg.output.enhanced || cfg.params.direction != Direction::Forward || cfg.params.trip_times)
    {
        return Err(CliError::err(
            "compatibility mode not supported with the requested with options",
        ));
    }
    if cfg.file.is_some() && cfg.iperf2.stdin {
        return Err(CliError::err("options -F and -I are mutually exclusive"));
    }
    Ok(())
}

/// iperf 2.2's and master's additions: what they need of the rest.
fn iperf22_options(s: &mut ParseState) -> Result {
    if s.server {
        // Client options, already warned about ("not valid for server
        // mode"): a server takes none of them.
        (s.send_delay, s.fq_step, s.fq_step_interval, s.omit) = (None, None, None, None);
        let o = &mut s.common.cfg.iperf2;
        (o.tx_delay_us, o.load_cca, o.rand_seed) = (None, None, None);
        return Ok(());
    }
    let udp = s.common.udp;
    if let (true, Some(sp)) = (udp, &s.send_delay) {
        return Err(CliError::err(format!(
            "{sp} over UDP needs a send time on each datagram (SO_TXTIME; iperf 2 master's, with --udp-l4s), which wirespeed has not built"
        )));
    }
    if let Some(step) = s.fq_step {
        if s.common.cfg.params.direction == Direction::Reverse {
            return Err(CliError::err(
                "option --fq-rate-step steps this client's sending, and with -R the server sends",
            ));
        }
        // 2.2: without --fq-rate the pacing starts at one step.
        if s.common.cfg.params.fq_rate == 0 {
            s.common.cfg.params.fq_rate = step;
        }
        let every = Duration::from_secs_f64(s.fq_step_interval.unwrap_or(1.0));
        s.common.cfg.iperf2.fq_rate_step = Some((step, every));
    } else if s.fq_step_interval.is_some() {
        return Err(CliError::err("option --fq-rate-step-interval needs --fq-rate-step"));
    }
    if s.common.cfg.iperf2.load_cca.is_some() && s.common.cfg.iperf2.working_load.is_none() {
        return Err(CliError::err("option --working-load-cca needs --working-load"));
    }
    if let Some(omit) = s.omit {
        if udp {
            return Err(CliError::err("option of --omit not supported with -u UDP"));
        }
        let c = &s.common.cfg;
        let clash = if c.iperf2.bounceback.is_some() {
            Some("--bounceback")
        } else if c.iperf2.connect_only.is_some() {
            Some("--connect-only")
        } else if s.dual || s.tradeoff {
            Some("-d or -r (the server's connect-back does not omit)")
        } else {
            None
        };
        if let Some(what) = clash {
            return Err(CliError::err(format!("option --omit cannot be used with {what}")));
        }
        let omit_d = Duration::from_secs_f64(omit);
        // The test's time includes the omitted start, as in iperf 2 master.
        if let EndCondition::Time(t) = s.common.cfg.params.end {
            if t <= omit_d {
                return Err(CliError::err(format!(
                    "--omit of {omit} secs leaves nothing of the {} sec test",
                    t.as_secs_f64()
                )));
            }
            s.common.cfg.params.end = EndCondition::Time(t - omit_d);
        }
        s.common.cfg.params.omit = omit_d;
    }
    Ok(())
}

/// `--udp-l4s`: a UDP client that sends, paced by the server's acks, its
/// datagrams ECT(1).
fn udp_l4s(s: &ParseState, opts: &[Occurrence<Opt>]) -> Result {
    let c = &s.common.cfg;
    if !c.iperf2.udp_l4s || s.server {
        return Ok(());
    }
    if !s.common.udp {
        // 2.2.1's words.
        return Err(CliError::err("UDP L4S not supported with TCP"));
    }
    if c.params.direction != Direction::Forward {
        return Err(CliError::err(
            "--udp-l4s cannot be used with -R, --full-duplex, -d or -r (the client sends, paced by the server's acks)",
        ));
    }
    let clash = if c.params.frames.is_some() {
        Some("--isochronous")
    } else if opts.iter().any(|o| o.spelled == "--ecn") {
        Some("--ecn (L4S sends ECT(1))")
    } else if c.search.is_some() {
        Some("--udp-search")
    } else if c.iperf2.compat {
        Some("-C (the acks need the settings in each datagram)")
    } else {
        None
    };
    if let Some(what) = clash {
        return Err(CliError::err(format!("--udp-l4s cannot be used with {what}")));
    }
    Ok(())
}

/// What UDP cannot do (and what only UDP does).
fn udp_exclusions(s: &ParseState, opts: &[Occurrence<Opt>]) -> Result {
    let (cfg, udp) = (&s.common.cfg, s.common.udp);
    if cfg.iperf2.no_udp_fin && !udp {
        return Err(CliError::err("option --no-udp-fin requires -u UDP"));
    }
    if udp && opts.iter().any(|o| o.spelled == "--connect-only") {
        return Err(CliError::err("option of --connect-only not supported with -u UDP"));
    }
    let tcp_only = opts.iter().find(|o| TABLE[o.row].place.tcp_only());
    if let (true, Some(o)) = (udp, tcp_only) {
        return Err(CliError::err(format!(
            "option {} is for TCP, not with -u UDP",
            o.spelled
        )));
    }
    if udp && cfg.iperf2.peer_detect {
        return Err(CliError::err("option of -X or --peer-detect not supported with -u UDP"));
    }
    if udp && (cfg.file.is_some() || cfg.iperf2.stdin) {
        return Err(CliError::err(
            "-F and -I (data from a file or stdin) are not implemented for UDP yet",
        ));
    }
    if udp && cfg.iperf2.permit_key.is_some() {
        return Err(CliError::err("option --permit-key is not supported with -u UDP"));
    }
    Ok(())
}

/// `--histograms`, `-H` and `-U`, which only a server takes as asked.
fn server_only_settings(s: &mut ParseState) -> Result {
    let (cfg, server, udp) = (&mut s.common.cfg, s.server, s.common.udp);
    if let Some(h) = s.histograms.take() {
        if !server {
            return Err(CliError::err(
                "--histograms is a server option here (client write-time histograms are not implemented yet)",
            ));
        }
        // As in 2.1.8, histograms imply enhanced reports.
        cfg.output.enhanced = true;
        cfg.output.histograms = Some(h);
    }
    if cfg.iperf2.ssm_host.is_some() {
        let group = cfg.net.bind.as_deref().and_then(|b| b.parse::<std::net::IpAddr>().ok());
        if !server {
            return Err(CliError::err("option -H (--ssm-host) is only valid for a server"));
        }
        if !udp || !group.is_some_and(|g| g.is_multicast()) {
            return Err(CliError::err(
                "option -H (--ssm-host) needs -u and a multicast group given with -B",
            ));
        }
    }
    if s.single_udp {
        if server {
            cfg.iperf2.single_udp = true;
        } else {
            s.common
                .warnings
                .push("WARN: Client set to UDP per -U (suggest use lower case -u instead)".into());
        }
    }
    Ok(())
}

/// A server: client options are warned about and dropped; `-P`, `-t` and
/// `-b` take their server meanings.
fn server_role(s: &mut ParseState, opts: &[Occurrence<Opt>]) -> Result {
    let cfg = &mut s.common.cfg;
    cfg.role = Role::Server;
    for o in opts.iter().filter(|o| TABLE[o.row].place.client_only()) {
        // On Windows a server's -R removes iperf 2's service.
        if cfg!(windows) && o.spelled == "-R" {
            cfg.server.remove_service = true;
            continue;
        }
        s.common
            .warnings
            .push(format!("WARNING: option {} is not valid for server mode", o.spelled));
    }
    if cfg.params.rate_stdev.take().is_some() {
        s.common
            .warnings
            .push("WARN: option of variance per -b is not supported on the server".into());
    }
    // Client-only settings have no meaning on a server.
    cfg.params.direction = Direction::Forward;
    cfg.params.trip_times = false;
    cfg.params.fq_rate = 0;
    cfg.iperf2.local_only = false;
    cfg.iperf2.incr_dstport = false;
    cfg.iperf2.write_prefetch = None;
    cfg.iperf2.quickack = false;
    cfg.output.live = false;
    cfg.iperf2.rx_window_clamp = s.clamp;
    cfg.iperf2.tos_override = s.tos_override;
    cfg.file = None;
    if let Some(p) = s.parallel {
        cfg.server.max_connections = Some(p);
    }
    if let Some(t) = s.time {
        cfg.server.listen_time = (t > 0.0).then(|| Duration::from_secs_f64(t));
    }
    // `-s -b`: a TCP server reads each flow at most at this rate.
    if s.rate_given && (s.common.udp || s.single_udp) {
        return Err(CliError::err(
            "a UDP server's read-rate limit (-s -u -b) is not implemented yet",
        ));
    }
    Ok(())
}

/// A client: its flows and time, the server options it may not take, and
/// a port range's flow count.
fn client_role(s: &mut ParseState) -> Result {
    let cfg = &mut s.common.cfg;
    cfg.role = Role::Client(s.common.client.take().unwrap_or_default());
    if let Some(p) = s.parallel {
        cfg.params.streams = p;
    }
    if let Some(t) = s.time {
        cfg.params.end = EndCondition::Time(Duration::from_secs_f64(t));
    } else if cfg.search.is_some() && !matches!(cfg.params.end, EndCondition::Bytes(_)) {
        // Probes are short unless -t says otherwise.
        cfg.params.end = EndCondition::Time(wirespeed_iperf::modes::search::DEFAULT_PROBE);
    }
    if cfg.server.daemon {
        return Err(CliError::err("option -D is only valid for a server"));
    }
    if let Some(o) = &s.server_opt {
        return Err(CliError::err(format!("option {o} is only valid for a server")));
    }
    if cfg.iperf2.single_client {
        return Err(CliError::err("option -1 is only valid for a server"));
    }
    if s.clamp.is_some() {
        return Err(CliError::err("option --tcp-rx-window-clamp is only valid for a server"));
    }
    if s.tos_override.is_some() {
        return Err(CliError::err("option --tos-override is only valid for a server"));
    }
    if let Some(last) = cfg.iperf2.port_last {
        let n = u32::from(last - cfg.port) + 1;
        if cfg.params.streams != n {
            s.common.warnings.push(format!(
                "{TO_STDERR}WARNING: port-range and -P mismatch (adjusting -P to {n})"
            ));
            cfg.params.streams = n;
        }
    }
    Ok(())
}

/// A bounceback client: what it cannot be combined with, and its message
/// length.
fn bounceback_test(s: &mut ParseState) -> Result {
    if s.bounceback.is_none() || s.server {
        return Ok(());
    }
    let cfg = &mut s.common.cfg;
    let bad = if s.common.udp {
        Some("-u UDP")
    } else if cfg.params.direction != Direction::Forward {
        Some("-d, -r, -R or --full-duplex")
    } else if matches!(cfg.params.end, EndCondition::Bytes(_)) {
        Some("-n (a bounceback test runs for -t seconds)")
    } else if cfg.file.is_some() || cfg.iperf2.stdin {
        Some("-F or -I")
    } else if cfg.iperf2.compat {
        Some("-C")
    } else if cfg.iperf2.peer_detect {
        Some("-X")
    } else if cfg.iperf2.permit_key.is_some() {
        Some("--permit-key")
    } else if s.rate_given {
        Some("-b")
    } else {
        None
    };
    if let Some(what) = bad {
        return Err(CliError::err(format!(
            "option --bounceback is not supported with {what}"
        )));
    }
    use wirespeed_proto::iperf2::bounceback::{BB_DEFAULT_SIZE, BB_MAX_SIZE, BB_MIN_SIZE};
    let size = s.len.map_or(BB_DEFAULT_SIZE as f64, |l| l);
    if size < BB_MIN_SIZE as f64 || size > BB_MAX_SIZE as f64 {
        return Err(CliError::err(format!(
            "bounceback length (-l) of {} must be between {BB_MIN_SIZE} and {BB_MAX_SIZE} bytes",
            size as u64
        )));
    }
    s.len = Some(size);
    // As in 2.1.8: enhanced reports, and Nagle off.
    cfg.output.enhanced = true;
    cfg.params.nodelay = true;
    cfg.iperf2.bounceback = s.bounceback.take();
    Ok(())
}

/// `-l` (or the protocol's default) within what the test can use, and
/// what UDP cannot do yet.
fn block_length(s: &mut ParseState) -> Result {
    let cfg = &mut s.common.cfg;
    let block = match s.len {
        Some(l) => l as u64,
        None => match cfg.params.protocol {
            // 2.1.8's IPv6 client sends 1450-byte datagrams.
            Protocol::Udp if cfg.net.family == Family::V6 && !s.server => DEFAULT_UDP_LEN_V6 as u64,
            Protocol::Udp => DEFAULT_UDP_LEN as u64,
            _ => DEFAULT_TCP_BLOCK as u64,
        },
    };
    if cfg.iperf2.incr_dstport && u32::from(cfg.port) + cfg.params.streams - 1 > 65535 {
        return Err(CliError::err("--incr-dstport: the last flow's port would pass 65535"));
    }
    if cfg.params.protocol == Protocol::Udp {
        if s.rate_given && cfg.params.rate == 0 && cfg.params.pps.is_none_or(|p| p == 0) {
            return Err(CliError::err("-b 0 is not a rate for UDP (give the rate to send at)"));
        }
        // A search without -b starts at its own rate (for all flows).
        if !s.rate_given && cfg.search.is_none() {
            cfg.params.rate = DEFAULT_UDP_RATE;
        }
        let need = if cfg.iperf2.compat {
            wirespeed_proto::iperf2::udp::DATAGRAM_HEADER_LEN as u64
        } else if cfg.params.trip_times {
            wirespeed_proto::iperf2::udp::MIN_DATAGRAM_TRIP_TIMES as u64
        } else {
            wirespeed_proto::iperf2::udp::MIN_DATAGRAM as u64
        };
        if !s.server && block < need {
            return Err(CliError::err(format!(
                "-l of {block} is too small for UDP: iperf 2's datagram header needs {need} bytes"
            )));
        }
        if block > MAX_UDP_LEN as u64 {
            return Err(CliError::err(format!(
                "-l of {block} is too large for UDP (at most {MAX_UDP_LEN} bytes)"
            )));
        }
    }
    if block == 0 || block > i32::MAX as u64 {
        return Err(CliError::err(format!("-l value of {block} is out of range")));
    }
    if cfg.params.protocol == Protocol::Tcp && block > 64 * 1024 * 1024 {
        return Err(CliError::err("-l above 64 MBytes is not supported"));
    }
    cfg.params.block_len = Some(block as u32);
    Ok(())
}

/// `--isochronous fps:mean,stdev` and `--ipg` (a client's), as 2.1.8
/// reads them: `fps` alone keeps the default mean (20 Mbit/s); the mean and
/// standard deviation take iperf 2's bit-or-byte units, and for UDP `p`
/// (packets per frame).
fn isochronous(s: &mut ParseState) -> Result {
    let (given, ipg) = (s.isochronous.take(), s.ipg.take());
    if s.server || given.is_none() && ipg.is_none() {
        return Ok(());
    }
    let cfg = &mut s.common.cfg;
    let udp = cfg.params.protocol == Protocol::Udp;
    let len = f64::from(cfg.params.block_len_or_default());
    if ipg.is_some() && !udp {
        return Err(CliError::err("option --ipg requires -u UDP"));
    }
    if s.rate_given {
        let what = if given.is_some() { "--isochronous" } else { "--ipg" };
        return Err(CliError::err(format!(
            "options of --b and {what} cannot be applied together"
        )));
    }
    let Some(given) = given else {
        // --ipg alone paces plain UDP: one datagram per gap.
        let ms = ipg.unwrap_or_default();
        cfg.params.rate = if ms > 0.0 {
            ((len * 8.0 * 1000.0 / ms).round() as u64).max(1)
        } else {
            0
        };
        return Ok(());
    };
    if s.burst_period.is_some() || s.burst_size.is_some() {
        return Err(CliError::err(
            "options of --burst-period and --isochronous cannot be applied together",
        ));
    }
    if matches!(cfg.params.direction, Direction::Dual | Direction::Tradeoff) {
        return Err(CliError::err(
            "--isochronous cannot be used with -d or -r (use -R or --full-duplex for frames from the server)",
        ));
    }
    let mut spec = FrameSpec::DEFAULT;
    spec.ipg = Duration::from_secs_f64(ipg.unwrap_or_default() / 1000.0);
    let bad = || CliError::err("Invalid --isochronous value, format is <fps>:<mean>,<variance> (e.g. 60:18M,1m)");
    if let Some(v) = given.as_deref() {
        let (fps, rest) = match v.split_once(':') {
            Some((f, r)) => (f, Some(r)),
            None => (v, None),
        };
        spec.fps = fps
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| *f > 0.0 && f.is_finite())
            .ok_or_else(bad)?;
        if spec.fps > 1e6 {
            return Err(CliError::err("--isochronous: at most 1000000 frames per second"));
        }
        if let Some(rest) = rest {
            let (mean, stdev) = match rest.split_once(',') {
                Some((m, d)) => (m, Some(d)),
                None => (rest, None),
            };
            // `Np`: N packets (of -l bytes) per frame.
            let rate = |x: &str, what: &str| -> Result<f64> {
                if let Some(n) = x.strip_suffix(['p', 'P']) {
                    if !udp {
                        return Err(CliError::err(
                            "Invalid --isochronous units of 'p' with TCP must be bytes",
                        ));
                    }
                    let n = n.parse::<f64>().ok().filter(|n| *n >= 0.0).ok_or_else(bad)?;
                    return Ok(n * 8.0 * len * spec.fps);
                }
                wirespeed_core::units::parse_iperf2_bit_or_byte(x)
                    .map_err(|_| CliError::err(format!("--isochronous {what} of '{x}' not recognized")))
            };
            spec.mean = rate(mean, "mean")?;
            if spec.mean <= 0.0 {
                return Err(CliError::err(
                    "Invalid --isochronous mean value, must be greater than zero",
                ));
            }
            spec.stdev = stdev.map(|d| rate(d, "variance")).transpose()?.unwrap_or(0.0);
        }
    }
    if !udp && len < wirespeed_proto::iperf2::BURST_HEADER_LEN as f64 {
        return Err(CliError::err(format!(
            "--isochronous over TCP needs -l of at least {} bytes (each frame starts with a burst header)",
            wirespeed_proto::iperf2::BURST_HEADER_LEN
        )));
    }
    // The frames set the pace.
    cfg.params.rate = 0;
    cfg.params.pps = None;
    cfg.params.frames = Some(spec);
    Ok(())
}

/// `--burst-size`/`--burst-period` (a TCP client's): either enables
/// periodic bursts, 1 MiB every second unless told.
fn periodic_bursts(s: &mut ParseState) -> Result {
    let (size, period) = (s.burst_size.take(), s.burst_period.take());
    if size.is_none() && period.is_none() || s.server {
        return Ok(());
    }
    let cfg = &mut s.common.cfg;
    let period = match period {
        Some(p) if p <= 1e-5 => {
            s.common
                .warnings
                .push("WARN: burst-period too small, must be greater than 10 usecs".into());
            return Ok(());
        }
        Some(p) => p,
        None => {
            s.common
                .warnings
                .push("WARN: option of --burst-size without --burst-period defaults --burst-period to 1 second".into());
            1.0
        }
    };
    let size = size.unwrap_or(1024.0 * 1024.0) as u64;
    let len = u64::from(cfg.params.block_len.unwrap_or_default()).max(1);
    if size < len {
        return Err(CliError::err(format!(
            "option of --burst-size {size} must be equal or larger to write length (-l) {len}"
        )));
    }
    if !size.is_multiple_of(len) {
        return Err(CliError::err(format!(
            "--burst-size {size} must be a whole number of writes (-l {len}) here"
        )));
    }
    if cfg.params.rate > 0 {
        return Err(CliError::err(
            "option --burst-period cannot be used with -b (the bursts set the rate)",
        ));
    }
    if cfg.iperf2.bounceback.is_some() {
        return Err(CliError::err(
            "option --burst-period cannot be used with --bounceback (use --bounceback-period)",
        ));
    }
    if matches!(cfg.params.direction, Direction::Reverse | Direction::FullDuplex) {
        return Err(CliError::err(
            "--burst-period: the client must be the sender here (not -R or --full-duplex)",
        ));
    }
    cfg.params.periodic_burst = Some((size as u32, Duration::from_secs_f64(period)));
    Ok(())
}

/// What a TCP test's length must allow, and the file to send.
fn tcp_and_file(s: &mut ParseState) -> Result {
    let cfg = &mut s.common.cfg;
    let block = u64::from(cfg.params.block_len.unwrap_or_default());
    if cfg.params.protocol == Protocol::Tcp
        && cfg.params.trip_times
        && cfg.iperf2.bounceback.is_none()
        && (block as usize) < 92
    {
        return Err(CliError::err("--trip-times needs -l of at least 92 bytes"));
    }
    if cfg.params.protocol == Protocol::Tcp && cfg.params.rate > 0 && cfg.params.rate / 8 < block {
        return Err(CliError::err(format!(
            "option -b and -l of {block} are incompatible, consider setting -l to {} or lower",
            cfg.params.rate / 8
        )));
    }
    if let Some(f) = &cfg.file
        && let Err(e) = std::fs::metadata(f)
    {
        return Err(CliError::err(format!(
            "unable to open file stream {}: {}",
            f.display(),
            wirespeed_core::error::strerror(e.raw_os_error().unwrap_or(libc::ENOENT))
        )));
    }
    // The client's own report turns enhanced only when it receives too.
    if cfg.params.trip_times && cfg.params.direction != Direction::Forward {
        cfg.output.enhanced = true;
    }
    Ok(())
}

/// What a UDP search cannot honour: the iperf3 dialect's list, and iperf
/// 2's two-way tests and tests without the server's report.
fn search_limits(s: &ParseState) -> Result {
    let cfg = &s.common.cfg;
    let no = |what: &str| Err(CliError::err(format!("--udp-search cannot be used with {what}")));
    if matches!(
        cfg.params.direction,
        Direction::Dual | Direction::Tradeoff | Direction::FullDuplex
    ) {
        return no("-d, -r or --full-duplex (it measures one direction)");
    }
    if cfg.iperf2.no_udp_fin {
        return no("--no-udp-fin (each probe needs the server's report)");
    }
    wirespeed_iperf::modes::search::check_config(cfg, s.interval_given).map_err(|e| CliError::err(e.text()))
}
