//! Checks that involve several options, run once every row has applied,
//! in iperf3's order (so the first problem reported is iperf3's first).

use super::opt::{Opt, RoleMark};
use super::state::ParseState;
use super::table::TABLE;
use crate::getopt::Occurrence;
use wirespeed_core::config::*;
use wirespeed_core::error::{Code, Error};

type Result = std::result::Result<(), Error>;

fn perr(code: Code) -> Error {
    Error::param(code)
}

/// Runs every check and completes the configuration.
pub(super) fn all(s: &mut ParseState, opts: &[Occurrence<Opt>]) -> Result {
    let given = |k: Opt| opts.iter().any(|o| o.key == k);
    nq_rules(s, opts)?;
    quic_rules(s, opts)?;
    quic_data_rules(s, opts)?;
    role(s, opts)?;
    one_stdout_format(&s.common.cfg)?;
    direction_and_end(s)?;
    protocol_and_length(s, given(Opt::Bitrate))?;
    client_file(s)?;
    auth_pairs(&s.common.cfg)?;
    if s.common.cfg.search.is_some() {
        wirespeed_iperf::modes::search::check_config(&s.common.cfg, given(Opt::Interval))?;
    }
    if s.common.cfg.rpm {
        rpm_rules(&s.common.cfg)?;
    }
    if s.common.cfg.latency.is_some() && s.common.cfg.search.is_some() {
        return Err(Error::param_msg(
            Code::UNIMP,
            "--latency cannot be used with --udp-search",
        ));
    }
    auth_settings(&s.common.cfg, opts, s.is_server)?;
    json_warnings(s);
    Ok(())
}

/// `--rpm` runs its own TCP load and probes: what would change that is
/// refused.
fn rpm_rules(cfg: &wirespeed_core::config::TestConfig) -> Result {
    let clash = if cfg.search.is_some() {
        Some("--udp-search")
    } else if cfg.latency.is_some() {
        Some("--latency (--rpm probes already)")
    } else if cfg.params.protocol != wirespeed_core::config::Protocol::Tcp {
        Some("-u (its load is TCP)")
    } else if !matches!(cfg.params.end, EndCondition::Time(_)) {
        Some("-n or -k (it runs for a time)")
    } else {
        None
    };
    match clash {
        Some(what) => Err(Error::param_msg(
            Code::UNIMP,
            format!("--rpm cannot be used with {what}"),
        )),
        None => Ok(()),
    }
}

/// The options the standard responsiveness test (`--rpm=URL`) honours;
/// any other is refused, never ignored.
const NQ_OPTIONS: &[Opt] = &[
    Opt::Rpm,
    Opt::Cacert,
    Opt::Insecure,
    Opt::Time,
    Opt::Reverse,
    Opt::Parallel,
    Opt::Format,
    Opt::Json,
    Opt::Logfile,
    Opt::ForceFlush,
    Opt::Timestamps,
    Opt::JsonStream,
    Opt::Report,
    Opt::Metrics,
];

/// `--rpm=URL` (with `--cacert`, `--insecure`): it names its own server,
/// so no `-c`, and takes only [`NQ_OPTIONS`].
fn nq_rules(s: &mut ParseState, opts: &[Occurrence<Opt>]) -> Result {
    let refuse = |m: String| Err(Error::param_msg(Code::NONE, m));
    if s.nq.url.is_empty() {
        if s.nq.cacert.is_some() || s.nq.insecure {
            return refuse("--cacert and --insecure go with --rpm=URL (the standard responsiveness test)".into());
        }
        return Ok(());
    }
    if s.common.cfg.rpm {
        return refuse("give --rpm or --rpm=URL, not both".into());
    }
    if s.is_server || s.common.client.is_some() {
        return refuse("--rpm=URL names its server: do not give -c or -s".into());
    }
    if s.nq.cacert.is_some() && s.nq.insecure {
        return refuse("give --cacert or --insecure, not both".into());
    }
    if let Some(o) = opts.iter().find(|o| !NQ_OPTIONS.contains(&o.key)) {
        return refuse(format!("--rpm=URL cannot be used with {}", o.spelled));
    }
    let mut nq = std::mem::take(&mut s.nq);
    nq.download_only = s.common.reverse;
    nq.time = s.time.unwrap_or(wirespeed_core::config::nq::DEFAULT_TIME);
    nq.max_flows = wirespeed_core::config::nq::MAX_FLOWS;
    if opts.iter().any(|o| o.key == Opt::Parallel) {
        nq.max_flows = s.common.cfg.params.streams;
        if nq.max_flows > wirespeed_core::config::nq::MOST_FLOWS {
            return refuse(format!(
                "--rpm=URL opens at most {} connections per direction (-P)",
                wirespeed_core::config::nq::MOST_FLOWS
            ));
        }
    }
    s.common.client = Some(nq.url.clone());
    s.common.cfg.nq = Some(nq);
    Ok(())
}

/// The options the QUIC perf client (`--quic-perf`) honours; any other is
/// refused, never ignored.
const QUIC_OPTIONS: &[Opt] = &[
    Opt::QuicPerf,
    Opt::Congestion,
    Opt::Time,
    Opt::Bytes,
    Opt::Reverse,
    Opt::Parallel,
    Opt::Length,
    Opt::Interval,
    Opt::Format,
    Opt::Json,
    Opt::JsonStream,
    Opt::Logfile,
    Opt::ForceFlush,
    Opt::Timestamps,
    Opt::ConnectTimeout,
    Opt::Version4,
    Opt::Version6,
];

/// The most streams `-P` may ask of `--quic-perf`.
const QUIC_MOST_STREAMS: u32 = 100;

/// `--quic-perf HOST:PORT`: it names its own server, so no `-c`, and
/// takes only [`QUIC_OPTIONS`].
fn quic_rules(s: &mut ParseState, opts: &[Occurrence<Opt>]) -> Result {
    let Some(target) = s.common.cfg.quic_perf.clone() else {
        return Ok(());
    };
    let refuse = |m: String| Err(Error::param_msg(Code::NONE, m));
    if s.is_server || s.common.client.is_some() || s.loopback {
        return refuse("--quic-perf names its server: do not give -c, -s or --loopback".into());
    }
    if let Some(o) = opts.iter().find(|o| !QUIC_OPTIONS.contains(&o.key)) {
        return refuse(format!("--quic-perf cannot be used with {}", o.spelled));
    }
    if let Some(name) = s.common.cfg.params.congestion.as_deref()
        && wirespeed_iperf::dialect::iperf3::quic::Controller::parse(name).is_none()
    {
        return Err(wirespeed_iperf::dialect::iperf3::quic::unknown_controller(
            "--quic-perf",
            name,
        ));
    }
    // Servers let a client open about this many streams at once (quic-go's
    // 100 by default); more would wait for ever.
    if s.common.cfg.params.streams > QUIC_MOST_STREAMS {
        return refuse(format!(
            "--quic-perf opens at most {QUIC_MOST_STREAMS} streams (-P): servers allow about that many at once"
        ));
    }
    s.common.client = Some(target);
    Ok(())
}

/// The options an iperf3 test over QUIC (`-q`/`--quic`) honours (`-C`
/// picks QUIC's congestion controller, `-w` its flow-control windows;
/// `--latency`'s probes run on their own connection, as for any test);
/// any other (`-u`, `-Z`, `-M`, `-N`, `-S`, `-F`, `--rpm`, ...: socket and
/// TCP settings a QUIC stream has no place for, and modes of their own)
/// is refused, never ignored.
const QUIC_DATA_OPTIONS: &[Opt] = &[
    Opt::Quic,
    Opt::Client,
    Opt::Port,
    Opt::Time,
    Opt::Bytes,
    Opt::Blockcount,
    Opt::Length,
    Opt::Parallel,
    Opt::Reverse,
    Opt::Bidir,
    Opt::Bitrate,
    Opt::Omit,
    Opt::Interval,
    Opt::Congestion,
    Opt::Window,
    Opt::Latency,
    Opt::Format,
    Opt::Verbose,
    Opt::Json,
    Opt::JsonStream,
    Opt::JsonStreamFull,
    Opt::Logfile,
    Opt::ForceFlush,
    Opt::Timestamps,
    Opt::Debug,
    Opt::Title,
    Opt::ExtraData,
    Opt::GetServerOutput,
    Opt::RepeatingPayload,
    Opt::ConnectTimeout,
    Opt::CntlKa,
    Opt::Version4,
    Opt::Version6,
];

/// `-q`/`--quic`: a client's option, with [`QUIC_DATA_OPTIONS`] only.
fn quic_data_rules(s: &mut ParseState, opts: &[Occurrence<Opt>]) -> Result {
    if !opts.iter().any(|o| o.key == Opt::Quic) {
        return Ok(());
    }
    if s.is_server {
        // The server takes a QUIC test when its client asks: no option.
        return Err(perr(Code::CLIENTONLY));
    }
    if let Some(o) = opts.iter().find(|o| !QUIC_DATA_OPTIONS.contains(&o.key)) {
        return Err(Error::param_msg(
            Code::NONE,
            format!("--quic cannot be used with {}", o.spelled),
        ));
    }
    if let Some(name) = s.common.cfg.params.congestion.as_deref()
        && wirespeed_iperf::dialect::iperf3::quic::Controller::parse(name).is_none()
    {
        return Err(wirespeed_iperf::dialect::iperf3::quic::unknown_controller(
            "--quic", name,
        ));
    }
    Ok(())
}

/// Client, server or loopback, and the options that role may not take
/// (iperf3 checks these after parsing).
fn role(s: &mut ParseState, opts: &[Occurrence<Opt>]) -> Result {
    let is_client = s.common.client.is_some() || s.loopback;
    if s.is_server && is_client {
        return Err(perr(Code::SERVCLIENT));
    }
    if !s.is_server && !is_client {
        return Err(perr(Code::NOROLE));
    }
    // A mode's client (`--rpm`, `--udp-search`) serves its own metrics.
    let mode_client =
        s.common.client.is_some() && (s.common.cfg.rpm || s.common.search.search || s.common.cfg.nq.is_some());
    for o in opts {
        match (TABLE[o.row].place, s.is_server) {
            (RoleMark::Client, true) => return Err(perr(Code::CLIENTONLY)),
            (RoleMark::Server, false) if o.key == Opt::Metrics && mode_client => {}
            (RoleMark::Server, false) => return Err(perr(Code::SERVERONLY)),
            _ => {}
        }
    }
    if s.loopback {
        if s.common.client.is_some() {
            return Err(Error::param_msg(
                Code::SERVCLIENT,
                "--loopback runs its own server; do not give -c",
            ));
        }
        s.common.cfg.role = Role::Loopback;
    } else if let Some(h) = s.common.client.take() {
        s.common.cfg.role = Role::Client(h);
    } else {
        s.common.cfg.role = Role::Server;
    }
    Ok(())
}

/// CSV (`--csv`) and JSON (`-J`, `--json-stream`) would share standard
/// output, and a reader could parse neither.
fn one_stdout_format(cfg: &TestConfig) -> Result {
    if cfg.output.csv && cfg.output.json {
        return Err(Error::param_msg(
            Code::NONE,
            "--csv and -J/--json-stream cannot be used together: CSV rows and JSON would share standard output",
        ));
    }
    Ok(())
}

/// `-R`/`--bidir`, the one end condition, and a UDP search's defaults.
fn direction_and_end(s: &mut ParseState) -> Result {
    if s.common.reverse && s.bidir {
        return Err(perr(Code::REVERSEBIDIR));
    }
    s.common.cfg.params.direction = if s.bidir {
        Direction::Bidir
    } else if s.common.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    if s.end_conditions > 1 {
        return Err(perr(Code::ENDCONDITIONS));
    }
    if let Some(t) = s.time {
        s.common.cfg.params.end = EndCondition::Time(t);
    }
    let search = s
        .common
        .search
        .resolve()
        .map_err(|m| Error::param_msg(Code::UNIMP, m))?;
    if let Some(so) = search {
        s.common.cfg.search = Some(so);
        if s.end_conditions == 0 {
            // Probes are short unless -t says otherwise.
            s.common.cfg.params.end = EndCondition::Time(wirespeed_iperf::modes::search::DEFAULT_PROBE);
        }
        // The search is a UDP measurement: -u is implied.
        s.common.udp = true;
    }
    Ok(())
}

/// UDP, `-l` within the protocol's range, and UDP's default rate.
fn protocol_and_length(s: &mut ParseState, bitrate_given: bool) -> Result {
    let cfg = &mut s.common.cfg;
    if s.common.udp {
        cfg.params.protocol = Protocol::Udp;
        if cfg.file.is_some() {
            return Err(perr(Code::UDPFILETRANSFER));
        }
    }
    if let Some(l) = s.length {
        let l = l as u64;
        match cfg.params.protocol {
            Protocol::Udp => {
                if !(MIN_UDP_BLOCK as u64..=MAX_UDP_BLOCK as u64).contains(&l) {
                    return Err(perr(Code::UDPBLOCKSIZE));
                }
            }
            _ => {
                if l == 0 || l > MAX_TCP_BLOCK as u64 {
                    return Err(perr(Code::BLOCKSIZE));
                }
            }
        }
        cfg.params.block_len = Some(l as u32);
    }
    if s.common.udp && cfg.search.is_none() && cfg.params.rate == 0 && cfg.params.pps.is_none() && !bitrate_given {
        cfg.params.rate = DEFAULT_UDP_RATE;
    }
    let is_client = !matches!(cfg.role, Role::Server);
    if s.rcv_timeout_given && is_client && cfg.params.direction == Direction::Forward {
        return Err(perr(Code::RVRSONLYRCVTIMEOUT));
    }
    Ok(())
}

/// A client sending `-F file`: the file must exist, and without `-t`/`-n`/
/// `-k` its size is the amount to send.
fn client_file(s: &mut ParseState) -> Result {
    let is_client = !matches!(s.common.cfg.role, Role::Server);
    if let (Some(f), true) = (&s.common.cfg.file, is_client)
        && s.common.cfg.params.direction.client_sends()
    {
        let meta = std::fs::metadata(f).map_err(|e| Error {
            kind: wirespeed_core::error::Kind::Parameter,
            ..Error::io(Code::FILE, &e)
        })?;
        if s.end_conditions == 0 {
            s.common.cfg.params.end = EndCondition::Bytes(meta.len());
        }
    }
    Ok(())
}

/// Authentication takes both of its client options, or both server ones.
fn auth_pairs(cfg: &TestConfig) -> Result {
    if cfg.auth.username.is_some() != cfg.auth.public_key.is_some() {
        return Err(perr(Code::SETCLIENTAUTH));
    }
    if cfg.server.rsa_private_key.is_some() != cfg.server.authorized_users.is_some() {
        return Err(perr(Code::SETSERVERAUTH));
    }
    Ok(())
}

/// Authentication options: the options that only mean something with
/// authentication need it configured (rather than being ignored), and the
/// key and users files are checked now, as iperf3 checks them while
/// parsing, so a bad file is a parameter error before anything starts.
fn auth_settings(cfg: &TestConfig, opts: &[Occurrence<Opt>], is_server: bool) -> Result {
    let given = |k: Opt| opts.iter().any(|o| o.key == k);
    let (configured, how) = if is_server {
        (
            cfg.server.rsa_private_key.is_some(),
            "--rsa-private-key-path and --authorized-users-path",
        )
    } else {
        (cfg.auth.username.is_some(), "--username and --rsa-public-key-path")
    };
    for (opt, name) in [
        (Opt::UsePkcs1, "--use-pkcs1-padding"),
        (Opt::TimeSkew, "--time-skew-threshold"),
    ] {
        if given(opt) && !configured {
            return Err(Error::param_msg(
                Code::NONE,
                format!("{name} needs authentication: give {how} too"),
            ));
        }
    }
    if let Some(key) = &cfg.auth.public_key {
        wirespeed_iperf::auth::PublicKey::load(key)?;
    }
    if let (Some(key), Some(users)) = (&cfg.server.rsa_private_key, &cfg.server.authorized_users) {
        wirespeed_iperf::auth::PrivateKey::load(key)?;
        wirespeed_iperf::auth::check_users_file(users)?;
    }
    Ok(())
}

/// iperf3's warnings about options that `-J` ignores or that disturb it.
fn json_warnings(s: &mut ParseState) {
    if !s.common.cfg.output.json {
        return;
    }
    if s.format_given {
        s.common
            .warnings
            .push("Report format (-f) flag ignored with JSON output (-J)".into());
    }
    if s.common.cfg.output.verbose {
        s.common
            .warnings
            .push("Verbose output (-v) may interfere with JSON output (-J)".into());
    }
    if s.common.cfg.output.debug > 0 {
        s.common
            .warnings
            .push("Debug output (-d) may interfere with JSON output (-J)".into());
    }
}
