//! The iperf3 personality's command line: iperf3's options, spellings,
//! defaults and checks, plus wirespeed's additions, producing a
//! [`TestConfig`].

use std::path::PathBuf;
use std::time::Duration;

use super::getopt::{ArgKind, Occurrence, OptSpec, parse};
use super::units::{parse_bitrate_iperf3, parse_int, parse_rate_iperf3, parse_seconds, parse_size_iperf3};
use crate::config::*;
use crate::error::{Code, Error};

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Run a test (client, server or loopback).
    Run(Box<TestConfig>, Vec<String>),
    /// Print the long usage and exit 0.
    Help,
    /// Print the version and exit 0.
    Version,
}

/// Option identifiers.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Port,
    Format,
    Interval,
    Pidfile,
    File,
    Affinity,
    Bind,
    BindDev,
    Verbose,
    Json,
    JsonStream,
    JsonStreamFull,
    Logfile,
    ForceFlush,
    Timestamps,
    RcvTimeout,
    SndTimeout,
    CntlKa,
    Mptcp,
    Debug,
    Version,
    Help,
    Server,
    Daemon,
    OneOff,
    ServerBitrateLimit,
    IdleTimeout,
    ServerMaxDuration,
    RsaPrivateKey,
    AuthorizedUsers,
    TimeSkew,
    UsePkcs1,
    MaxTests,
    MaxStreams,
    Client,
    Sctp,
    Xbind,
    Nstreams,
    Udp,
    ConnectTimeout,
    Bitrate,
    PacingTimer,
    FqRate,
    NoFqSocketPacing,
    Time,
    Bytes,
    Blockcount,
    Length,
    Cport,
    Parallel,
    Reverse,
    Bidir,
    Window,
    Congestion,
    SetMss,
    NoDelay,
    Version4,
    Version6,
    Tos,
    Dscp,
    Flowlabel,
    Zerocopy,
    SkipRxCopy,
    Omit,
    Title,
    ExtraData,
    GetServerOutput,
    UdpCounters64,
    Gsro,
    RepeatingPayload,
    DontFragment,
    Username,
    RsaPublicKey,
    Loopback,
    Live,
    Report,
    UdpSearch,
    MaxLoss,
    Metrics,
    Allow,
    Deny,
}

/// Where an option may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoleMark {
    Both,
    Client,
    Server,
}

macro_rules! o {
    ($k:ident, $s:expr, $l:expr, $a:ident) => {
        OptSpec {
            key: Opt::$k,
            short: $s,
            long: $l,
            arg: ArgKind::$a,
        }
    };
}

/// The option table (iperf3 master's, in its order, then wirespeed's).
pub const TABLE: &[OptSpec<Opt>] = &[
    o!(Port, Some('p'), Some("port"), Required),
    o!(Format, Some('f'), Some("format"), Required),
    o!(Interval, Some('i'), Some("interval"), Required),
    o!(Pidfile, Some('I'), Some("pidfile"), Required),
    o!(File, Some('F'), Some("file"), Required),
    o!(Affinity, Some('A'), Some("affinity"), Required),
    o!(Bind, Some('B'), Some("bind"), Required),
    o!(BindDev, None, Some("bind-dev"), Required),
    o!(Verbose, Some('V'), Some("verbose"), None),
    o!(Json, Some('J'), Some("json"), None),
    o!(JsonStream, None, Some("json-stream"), None),
    o!(JsonStreamFull, None, Some("json-stream-full-output"), None),
    o!(Logfile, None, Some("logfile"), Required),
    o!(ForceFlush, None, Some("forceflush"), None),
    o!(Timestamps, None, Some("timestamps"), Optional),
    o!(RcvTimeout, None, Some("rcv-timeout"), Required),
    o!(SndTimeout, None, Some("snd-timeout"), Required),
    o!(CntlKa, None, Some("cntl-ka"), Optional),
    o!(Mptcp, Some('m'), Some("mptcp"), None),
    o!(Debug, Some('d'), Some("debug"), Optional),
    o!(Version, Some('v'), Some("version"), None),
    o!(Help, Some('h'), Some("help"), None),
    o!(Server, Some('s'), Some("server"), None),
    o!(Daemon, Some('D'), Some("daemon"), None),
    o!(OneOff, Some('1'), Some("one-off"), None),
    o!(ServerBitrateLimit, None, Some("server-bitrate-limit"), Required),
    o!(IdleTimeout, None, Some("idle-timeout"), Required),
    o!(ServerMaxDuration, None, Some("server-max-duration"), Required),
    o!(RsaPrivateKey, None, Some("rsa-private-key-path"), Required),
    o!(AuthorizedUsers, None, Some("authorized-users-path"), Required),
    o!(TimeSkew, None, Some("time-skew-threshold"), Required),
    o!(UsePkcs1, None, Some("use-pkcs1-padding"), None),
    o!(MaxTests, None, Some("max-tests"), Required),
    o!(MaxStreams, None, Some("max-streams"), Required),
    o!(Client, Some('c'), Some("client"), Required),
    o!(Sctp, None, Some("sctp"), None),
    o!(Xbind, Some('X'), Some("xbind"), Required),
    o!(Nstreams, None, Some("nstreams"), Required),
    o!(Udp, Some('u'), Some("udp"), None),
    o!(ConnectTimeout, None, Some("connect-timeout"), Required),
    o!(Bitrate, Some('b'), Some("bitrate"), Required),
    o!(Bitrate, None, Some("bandwidth"), Required),
    o!(PacingTimer, None, Some("pacing-timer"), Required),
    o!(FqRate, None, Some("fq-rate"), Required),
    o!(NoFqSocketPacing, None, Some("no-fq-socket-pacing"), None),
    o!(Time, Some('t'), Some("time"), Required),
    o!(Bytes, Some('n'), Some("bytes"), Required),
    o!(Blockcount, Some('k'), Some("blockcount"), Required),
    o!(Length, Some('l'), Some("length"), Required),
    o!(Cport, None, Some("cport"), Required),
    o!(Parallel, Some('P'), Some("parallel"), Required),
    o!(Reverse, Some('R'), Some("reverse"), None),
    o!(Bidir, None, Some("bidir"), None),
    o!(Window, Some('w'), Some("window"), Required),
    o!(Congestion, Some('C'), Some("congestion"), Required),
    o!(Congestion, None, Some("linux-congestion"), Required),
    o!(SetMss, Some('M'), Some("set-mss"), Required),
    o!(NoDelay, Some('N'), Some("no-delay"), None),
    o!(Version4, Some('4'), Some("version4"), None),
    o!(Version6, Some('6'), Some("version6"), None),
    o!(Tos, Some('S'), Some("tos"), Required),
    o!(Dscp, None, Some("dscp"), Required),
    o!(Flowlabel, Some('L'), Some("flowlabel"), Required),
    o!(Zerocopy, Some('Z'), Some("zerocopy"), None),
    o!(SkipRxCopy, None, Some("skip-rx-copy"), None),
    o!(Omit, Some('O'), Some("omit"), Required),
    o!(Title, Some('T'), Some("title"), Required),
    o!(ExtraData, None, Some("extra-data"), Required),
    o!(GetServerOutput, None, Some("get-server-output"), None),
    o!(UdpCounters64, None, Some("udp-counters-64bit"), None),
    o!(Gsro, None, Some("gsro"), None),
    o!(RepeatingPayload, None, Some("repeating-payload"), None),
    o!(DontFragment, None, Some("dont-fragment"), None),
    o!(Username, None, Some("username"), Required),
    o!(RsaPublicKey, None, Some("rsa-public-key-path"), Required),
    o!(Loopback, None, Some("loopback"), None),
    o!(Live, None, Some("live"), None),
    o!(Report, None, Some("report"), Required),
    o!(UdpSearch, None, Some("udp-search"), None),
    o!(MaxLoss, None, Some("max-loss"), Required),
    o!(Metrics, None, Some("metrics"), Required),
    o!(Allow, None, Some("allow"), Required),
    o!(Deny, None, Some("deny"), Required),
];

fn role_mark(o: Opt) -> RoleMark {
    use Opt::*;
    match o {
        Server | Daemon | OneOff | ServerBitrateLimit | IdleTimeout | ServerMaxDuration | RsaPrivateKey
        | AuthorizedUsers | TimeSkew | MaxTests | MaxStreams | Metrics | Allow | Deny => RoleMark::Server,
        Client | Sctp | Nstreams | Udp | ConnectTimeout | Bitrate | PacingTimer | FqRate | NoFqSocketPacing | Time
        | Bytes | Blockcount | Length | Parallel | Reverse | Bidir | Window | Congestion | SetMss | NoDelay | Tos
        | Dscp | Flowlabel | Zerocopy | SkipRxCopy | Omit | Title | ExtraData | GetServerOutput | UdpCounters64
        | Gsro | RepeatingPayload | DontFragment | Username | RsaPublicKey | Loopback | Live | UdpSearch | MaxLoss => {
            RoleMark::Client
        }
        _ => RoleMark::Both,
    }
}

/// Options whose feature is not built yet: rejected, never ignored.
fn unimplemented(o: Opt) -> Option<Error> {
    use Opt::*;
    match o {
        Sctp | Xbind | Nstreams => Some(crate::net::sctp_unavailable()),
        _ => None,
    }
}

/// Whether an option of [`TABLE`] works (rather than being rejected as not
/// built yet): what `--help`, the man page and the completions must cover.
pub fn available(o: Opt) -> bool {
    unimplemented(o).is_none()
}

fn perr(code: Code) -> Error {
    Error::param(code)
}

fn unit_err(arg: &str) -> Error {
    Error::param_msg(Code::UNITVAL, format!("invalid unit value or suffix: '{arg}'"))
}

fn int_arg(o: &Occurrence<Opt>, code: Code) -> Result<i64, Error> {
    let v = o.value.as_deref().unwrap_or("");
    // iperf3 uses atoi for these: a trailing suffix is ignored, garbage is 0.
    // We are stricter: garbage is an error naming the option's rule.
    parse_int(v, false).ok_or_else(|| perr(code))
}

/// DSCP names iperf3 accepts, and their code points.
fn dscp_value(s: &str) -> Option<u8> {
    let n = s.to_ascii_lowercase();
    let named = match n.as_str() {
        "cs0" => 0,
        "cs1" => 8,
        "cs2" => 16,
        "cs3" => 24,
        "cs4" => 32,
        "cs5" => 40,
        "cs6" => 48,
        "cs7" => 56,
        "af11" => 10,
        "af12" => 12,
        "af13" => 14,
        "af21" => 18,
        "af22" => 20,
        "af23" => 22,
        "af31" => 26,
        "af32" => 28,
        "af33" => 30,
        "af41" => 34,
        "af42" => 36,
        "af43" => 38,
        "ef" => 46,
        "va" => 44,
        "lowdelay" => 4,
        "throughput" => 2,
        "reliability" => 1,
        _ => {
            let v = parse_int(s, true)?;
            return (0..=63).contains(&v).then_some(v as u8);
        }
    };
    Some(named)
}

fn split_dev(s: &str) -> (String, Option<String>) {
    match s.split_once('%') {
        Some((h, d)) if !d.is_empty() => (h.to_string(), Some(d.to_string())),
        _ => (s.to_string(), None),
    }
}

/// Parses iperf3-style arguments (without the program name).
pub fn parse_args(args: &[String]) -> Result<Command, Error> {
    let parsed = parse(TABLE, args).map_err(|m| Error::param_msg(Code::NONE, m))?;
    let mut cfg = TestConfig::default();
    let mut is_server = false;
    let mut client: Option<String> = None;
    let mut loopback = false;
    let mut ends = 0;
    let mut time: Option<Duration> = None;
    let mut length: Option<f64> = None;
    let mut warnings = Vec::new();
    let mut rcv_timeout_given = false;
    let mut format_given = false;
    let mut reverse = false;
    let mut bidir = false;
    let mut udp = false;
    let mut search: Option<crate::search::SearchOptions> = None;
    let mut max_loss: Option<f64> = None;
    let mut tos_given = false;

    for o in &parsed.opts {
        match o.key {
            Opt::Help => return Ok(Command::Help),
            Opt::Version => return Ok(Command::Version),
            _ => {}
        }
    }
    for o in &parsed.opts {
        if let Some(e) = unimplemented(o.key) {
            return Err(e);
        }
        let v = o.value.clone().unwrap_or_default();
        match o.key {
            Opt::Port => {
                let p = int_arg(o, Code::BADPORT)?;
                if !(1..=65535).contains(&p) {
                    return Err(perr(Code::BADPORT));
                }
                cfg.port = p as u16;
            }
            Opt::Format => {
                let c = v.chars().next().unwrap_or(' ');
                if v.len() != 1 || !"kmgtKMGT".contains(c) {
                    return Err(perr(Code::BADFORMAT));
                }
                cfg.output.format = c;
                format_given = true;
            }
            Opt::Interval => {
                let i = parse_seconds(&v).ok_or_else(|| perr(Code::INTERVAL))?;
                if i != 0.0 && !(0.1..=60.0).contains(&i) {
                    return Err(perr(Code::INTERVAL));
                }
                cfg.output.interval = (i > 0.0).then(|| Duration::from_secs_f64(i));
            }
            Opt::Pidfile => cfg.server.pidfile = Some(PathBuf::from(v)),
            Opt::File => cfg.file = Some(PathBuf::from(v)),
            Opt::Affinity => {
                let (a, b) = match v.split_once(',') {
                    Some((a, b)) => (a, Some(b)),
                    None => (v.as_str(), None),
                };
                let n = parse_int(a, true)
                    .filter(|n| (0..=1024).contains(n))
                    .ok_or_else(|| perr(Code::AFFINITY))?;
                cfg.net.affinity = Some(n as usize);
                if let Some(b) = b {
                    let m = parse_int(b, true)
                        .filter(|n| (0..=1024).contains(n))
                        .ok_or_else(|| perr(Code::AFFINITY))?;
                    cfg.params.server_affinity = Some(m as usize);
                }
            }
            Opt::Bind => {
                let (h, d) = split_dev(&v);
                cfg.net.bind = Some(h);
                if d.is_some() {
                    cfg.net.bind_dev = d;
                }
            }
            Opt::BindDev => cfg.net.bind_dev = Some(v),
            Opt::Verbose => {
                cfg.output.verbose = true;
                cfg.output.window_advice = true;
            }
            Opt::Json => cfg.output.json = true,
            Opt::JsonStream => {
                cfg.output.json = true;
                cfg.output.json_stream = true;
            }
            Opt::JsonStreamFull => cfg.output.json_stream_full = true,
            Opt::Logfile => cfg.output.logfile = Some(PathBuf::from(v)),
            Opt::ForceFlush => cfg.output.forceflush = true,
            Opt::Timestamps => cfg.output.timestamps = Some(o.value.clone().unwrap_or_else(|| "%c ".to_string())),
            Opt::RcvTimeout => {
                let ms = int_arg(o, Code::RCVTIMEOUT)?;
                if !(100..=86_400_000).contains(&ms) {
                    return Err(perr(Code::RCVTIMEOUT));
                }
                cfg.net.rcv_timeout = Some(Duration::from_millis(ms as u64));
                rcv_timeout_given = true;
            }
            Opt::SndTimeout => {
                let ms = int_arg(o, Code::SNDTIMEOUT)?;
                if !(0..=86_400_000).contains(&ms) {
                    return Err(perr(Code::SNDTIMEOUT));
                }
                cfg.net.snd_timeout = Some(Duration::from_millis(ms as u64));
            }
            Opt::CntlKa => {
                let mut ka = KeepAlive::default();
                if let Some(spec) = &o.value {
                    let parts: Vec<&str> = spec.split('/').collect();
                    if parts.len() > 3 {
                        return Err(perr(Code::CNTLKA));
                    }
                    let field = |i: usize| -> Result<Option<u32>, Error> {
                        match parts.get(i).map(|s| s.trim()).filter(|s| !s.is_empty()) {
                            None => Ok(None),
                            Some(s) => parse_int(s, false)
                                .filter(|v| *v > 0 && *v <= u32::MAX as i64)
                                .map(|v| Some(v as u32))
                                .ok_or_else(|| perr(Code::CNTLKA)),
                        }
                    };
                    ka.idle = field(0)?;
                    ka.interval = field(1)?;
                    ka.count = field(2)?;
                    if let (Some(i), Some(n), Some(c)) = (ka.idle, ka.interval, ka.count)
                        && i <= n * c
                    {
                        return Err(perr(Code::CNTLKA));
                    }
                }
                cfg.net.cntl_ka = Some(ka);
            }
            Opt::Mptcp => cfg.params.mptcp = true,
            Opt::Debug => {
                let lvl = match &o.value {
                    None => 4,
                    Some(s) => parse_int(s, false).filter(|l| (1..=4).contains(l)).ok_or_else(|| {
                        Error::param_msg(Code::NONE, format!("invalid debug level '{s}' (valid levels are 1-4)"))
                    })? as u8,
                };
                cfg.output.debug = lvl;
            }
            Opt::Server => is_server = true,
            Opt::Daemon => cfg.server.daemon = true,
            Opt::OneOff => cfg.server.one_off = true,
            Opt::ServerBitrateLimit => {
                let (r, w) = match v.split_once('/') {
                    Some((r, w)) => (r, Some(w)),
                    None => (v.as_str(), None),
                };
                let rate = parse_rate_iperf3(r).map_err(|_| unit_err(&v))?;
                if rate < 0.0 {
                    return Err(unit_err(&v));
                }
                cfg.server.bitrate_limit = rate as u64;
                if let Some(w) = w {
                    let secs = parse_seconds(w)
                        .filter(|s| (0.1..=60.0).contains(s))
                        .ok_or_else(|| perr(Code::TOTALINTERVAL))?;
                    cfg.server.bitrate_limit_window = Duration::from_secs_f64(secs);
                }
            }
            Opt::IdleTimeout => {
                let s = int_arg(o, Code::IDLETIMEOUT)?;
                if !(1..=86400).contains(&s) {
                    return Err(perr(Code::IDLETIMEOUT));
                }
                cfg.server.idle_timeout = Some(Duration::from_secs(s as u64));
            }
            Opt::ServerMaxDuration => {
                let s = int_arg(o, Code::DURATION)?;
                if !(0..=86400).contains(&s) {
                    return Err(perr(Code::DURATION));
                }
                cfg.server.max_duration = (s > 0).then(|| Duration::from_secs(s as u64));
            }
            Opt::RsaPrivateKey => cfg.server.rsa_private_key = Some(PathBuf::from(v)),
            Opt::AuthorizedUsers => cfg.server.authorized_users = Some(PathBuf::from(v)),
            Opt::TimeSkew => {
                let s = int_arg(o, Code::SKEWTHRESHOLD)?;
                if s <= 0 {
                    return Err(perr(Code::SKEWTHRESHOLD));
                }
                cfg.server.time_skew_threshold = Duration::from_secs(s as u64);
            }
            Opt::UsePkcs1 => {
                // iperf3 3.17+: the client pads its token with PKCS#1 v1.5,
                // the server accepts such tokens.
                cfg.auth.use_pkcs1_padding = true;
                cfg.server.use_pkcs1_padding = true;
            }
            Opt::MaxTests => {
                let n = int_arg(o, Code::NONE)
                    .ok()
                    .filter(|n| *n >= 1 && *n <= 100_000)
                    .ok_or_else(|| Error::param_msg(Code::NONE, "--max-tests must be between 1 and 100000"))?;
                cfg.server.max_tests = n as u32;
            }
            Opt::MaxStreams => {
                let n = int_arg(o, Code::NONE)
                    .ok()
                    .filter(|n| *n >= 1 && *n <= 1_000_000)
                    .ok_or_else(|| Error::param_msg(Code::NONE, "--max-streams must be between 1 and 1000000"))?;
                cfg.server.max_streams = n as u32;
            }
            Opt::Client => {
                let (h, d) = split_dev(&v);
                client = Some(h);
                if d.is_some() {
                    cfg.net.bind_dev = d;
                }
            }
            Opt::Udp => udp = true,
            Opt::ConnectTimeout => {
                let ms = parse_size_iperf3(&v).map_err(|_| unit_err(&v))?;
                if ms < 0.0 {
                    return Err(unit_err(&v));
                }
                cfg.net.connect_timeout = Some(Duration::from_millis(ms as u64));
            }
            Opt::Bitrate => {
                let r = parse_bitrate_iperf3(&v).map_err(|_| unit_err(&v))?;
                if r.burst > 1000 {
                    return Err(perr(Code::BURST));
                }
                cfg.params.rate = r.bits_per_sec;
                cfg.params.pps = r.pps;
                cfg.params.burst = r.burst;
            }
            Opt::PacingTimer => {
                let us = parse_size_iperf3(&v).map_err(|_| unit_err(&v))?;
                if !(0.0..=u32::MAX as f64).contains(&us) {
                    return Err(unit_err(&v));
                }
                cfg.params.pacing_timer = us as u32;
            }
            Opt::FqRate => {
                let r = parse_rate_iperf3(&v).map_err(|_| unit_err(&v))?;
                if r < 0.0 {
                    return Err(unit_err(&v));
                }
                cfg.params.fq_rate = r as u64;
            }
            Opt::NoFqSocketPacing => warnings.push("--no-fq-socket-pacing is deprecated".to_string()),
            Opt::Time => {
                let t = parse_seconds(&v).ok_or_else(|| perr(Code::DURATION))?;
                if !(0.0..=86400.0).contains(&t) {
                    return Err(perr(Code::DURATION));
                }
                time = Some(Duration::from_secs_f64(t));
                ends += 1;
            }
            Opt::Bytes => {
                let n = parse_size_iperf3(&v).map_err(|_| unit_err(&v))?;
                if n < 0.0 {
                    return Err(unit_err(&v));
                }
                cfg.params.end = EndCondition::Bytes(n as u64);
                ends += 1;
            }
            Opt::Blockcount => {
                let n = parse_size_iperf3(&v).map_err(|_| unit_err(&v))?;
                if n < 0.0 {
                    return Err(unit_err(&v));
                }
                cfg.params.end = EndCondition::Blocks(n as u64);
                ends += 1;
            }
            Opt::Length => {
                let n = parse_size_iperf3(&v).map_err(|_| unit_err(&v))?;
                if n < 0.0 {
                    return Err(unit_err(&v));
                }
                length = Some(n);
            }
            Opt::Cport => {
                let p = int_arg(o, Code::BADPORT)?;
                if !(1..=65535).contains(&p) {
                    return Err(perr(Code::BADPORT));
                }
                cfg.net.cport = Some(p as u16);
            }
            Opt::Parallel => {
                let p = int_arg(o, Code::NUMSTREAMS)?;
                if p < 1 || p > MAX_PARALLEL as i64 {
                    return Err(Error::param_msg(
                        Code::NUMSTREAMS,
                        format!("invalid number of parallel streams (min = 1, max = {MAX_PARALLEL})"),
                    ));
                }
                cfg.params.streams = p as u32;
            }
            Opt::Reverse => reverse = true,
            Opt::Bidir => bidir = true,
            Opt::Window => {
                let w = parse_size_iperf3(&v).map_err(|_| unit_err(&v))?;
                if !(0.0..=512.0 * 1024.0 * 1024.0).contains(&w) {
                    return Err(perr(Code::BUFSIZE));
                }
                cfg.params.window = (w >= 1.0).then_some(w as u32);
            }
            Opt::Congestion => cfg.params.congestion = Some(v),
            Opt::SetMss => {
                let m = int_arg(o, Code::MSS)?;
                if !(0..=32767).contains(&m) {
                    return Err(perr(Code::MSS));
                }
                cfg.params.mss = (m > 0).then_some(m as u32);
            }
            Opt::NoDelay => cfg.params.nodelay = true,
            Opt::Version4 => cfg.net.family = Family::V4,
            Opt::Version6 => cfg.net.family = Family::V6,
            Opt::Tos => {
                let t = parse_int(&v, true)
                    .filter(|t| (0..=255).contains(t))
                    .ok_or_else(|| perr(Code::BADTOS))?;
                cfg.params.tos = t as u8;
                tos_given = true;
            }
            Opt::Dscp => {
                let d = dscp_value(&v).ok_or_else(|| perr(Code::BADDSCP))?;
                cfg.params.tos = d << 2;
                tos_given = true;
            }
            Opt::Flowlabel => {
                let f = parse_int(&v, true)
                    .filter(|f| (1..=0xFFFFF).contains(f))
                    .ok_or_else(|| perr(Code::SETFLOW))?;
                cfg.params.flowlabel = Some(f as u32);
            }
            Opt::Zerocopy => cfg.params.zerocopy = true,
            Opt::SkipRxCopy => cfg.params.skip_rx_copy = true,
            Opt::Omit => {
                let s = parse_seconds(&v).ok_or_else(|| perr(Code::OMIT))?;
                if !(0.0..=600.0).contains(&s) {
                    return Err(perr(Code::OMIT));
                }
                cfg.params.omit = Duration::from_secs_f64(s);
            }
            Opt::Title => {
                cfg.output.title = Some(v.clone());
                cfg.params.title = Some(v);
            }
            Opt::ExtraData => cfg.params.extra_data = Some(v),
            Opt::GetServerOutput => cfg.params.get_server_output = true,
            Opt::UdpCounters64 => cfg.params.udp_counters_64bit = true,
            Opt::Gsro => cfg.params.gsro = true,
            Opt::RepeatingPayload => cfg.params.repeating_payload = true,
            Opt::DontFragment => cfg.params.dont_fragment = true,
            Opt::Username => cfg.auth.username = Some(v),
            Opt::RsaPublicKey => cfg.auth.public_key = Some(PathBuf::from(v)),
            Opt::Loopback => loopback = true,
            Opt::Live => cfg.output.live = true,
            Opt::Report => cfg.output.html_report = Some(PathBuf::from(v)),
            Opt::Metrics => cfg.server.metrics = Some(v),
            Opt::Allow => cfg
                .server
                .allow
                .extend(crate::policy::split_list("--allow", &v).map_err(|m| Error::param_msg(Code::NONE, m))?),
            Opt::Deny => cfg
                .server
                .deny
                .extend(crate::policy::split_list("--deny", &v).map_err(|m| Error::param_msg(Code::NONE, m))?),
            Opt::UdpSearch => search = Some(search.unwrap_or_default()),
            Opt::MaxLoss => {
                let p = crate::search::parse_max_loss(&v).ok_or_else(|| {
                    Error::param_msg(
                        Code::UNITVAL,
                        format!("invalid --max-loss '{v}': a percentage from 0 up to (not including) 100"),
                    )
                })?;
                max_loss = Some(p);
            }
            Opt::Help | Opt::Version | Opt::Sctp | Opt::Xbind | Opt::Nstreams => {}
        }
    }

    // Roles, then role-specific options (iperf3 checks these after parsing).
    let is_client = client.is_some() || loopback;
    if is_server && is_client {
        return Err(perr(Code::SERVCLIENT));
    }
    if !is_server && !is_client {
        return Err(perr(Code::NOROLE));
    }
    for o in &parsed.opts {
        match (role_mark(o.key), is_server) {
            (RoleMark::Client, true) => return Err(perr(Code::CLIENTONLY)),
            (RoleMark::Server, false) => return Err(perr(Code::SERVERONLY)),
            _ => {}
        }
    }
    if loopback {
        if client.is_some() {
            return Err(Error::param_msg(
                Code::SERVCLIENT,
                "--loopback runs its own server; do not give -c",
            ));
        }
        cfg.role = Role::Loopback;
    } else if let Some(h) = client {
        cfg.role = Role::Client(h);
    } else {
        cfg.role = Role::Server;
    }

    if reverse && bidir {
        return Err(perr(Code::REVERSEBIDIR));
    }
    cfg.params.direction = if bidir {
        Direction::Bidir
    } else if reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    if ends > 1 {
        return Err(perr(Code::ENDCONDITIONS));
    }
    if let Some(t) = time {
        cfg.params.end = EndCondition::Time(t);
    }
    if max_loss.is_some() && search.is_none() {
        return Err(Error::param_msg(Code::UNIMP, "--max-loss is a setting of --udp-search"));
    }
    if let Some(mut so) = search {
        if let Some(p) = max_loss {
            so.max_loss_percent = p;
        }
        cfg.search = Some(so);
        if ends == 0 {
            // Probes are short unless -t says otherwise.
            cfg.params.end = EndCondition::Time(crate::search::DEFAULT_PROBE);
        }
        // The search is a UDP measurement: -u is implied.
        udp = true;
    }
    if udp {
        cfg.params.protocol = Protocol::Udp;
        if cfg.file.is_some() {
            return Err(perr(Code::UDPFILETRANSFER));
        }
    }
    if let Some(l) = length {
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
    if udp
        && cfg.search.is_none()
        && cfg.params.rate == 0
        && cfg.params.pps.is_none()
        && !parsed.opts.iter().any(|o| o.key == Opt::Bitrate)
    {
        cfg.params.rate = DEFAULT_UDP_RATE;
    }
    if rcv_timeout_given && is_client && cfg.params.direction == Direction::Forward {
        return Err(perr(Code::RVRSONLYRCVTIMEOUT));
    }
    if let (Some(f), true) = (&cfg.file, is_client)
        && cfg.params.direction.client_sends()
    {
        let meta = std::fs::metadata(f).map_err(|e| Error {
            kind: crate::error::Kind::Parameter,
            ..Error::io(Code::FILE, &e)
        })?;
        if ends == 0 {
            cfg.params.end = EndCondition::Bytes(meta.len());
        }
    }
    if cfg.auth.username.is_some() != cfg.auth.public_key.is_some() {
        return Err(perr(Code::SETCLIENTAUTH));
    }
    if cfg.server.rsa_private_key.is_some() != cfg.server.authorized_users.is_some() {
        return Err(perr(Code::SETSERVERAUTH));
    }
    if cfg.search.is_some() {
        crate::search::check_config(&cfg, parsed.opts.iter().any(|o| o.key == Opt::Interval))?;
    }
    check_auth(&cfg, &parsed.opts, is_server)?;
    let _ = tos_given;
    if cfg.output.json {
        if format_given {
            warnings.push("Report format (-f) flag ignored with JSON output (-J)".into());
        }
        if cfg.output.verbose {
            warnings.push("Verbose output (-v) may interfere with JSON output (-J)".into());
        }
        if cfg.output.debug > 0 {
            warnings.push("Debug output (-d) may interfere with JSON output (-J)".into());
        }
    }
    Ok(Command::Run(Box::new(cfg), warnings))
}

/// Authentication options: the options that only mean something with
/// authentication need it configured (rather than being ignored), and the
/// key and users files are checked now, as iperf3 checks them while
/// parsing, so a bad file is a parameter error before anything starts.
fn check_auth(cfg: &TestConfig, opts: &[Occurrence<Opt>], is_server: bool) -> Result<(), Error> {
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
        crate::auth::PublicKey::load(key)?;
    }
    if let (Some(key), Some(users)) = (&cfg.server.rsa_private_key, &cfg.server.authorized_users) {
        crate::auth::PrivateKey::load(key)?;
        crate::auth::check_users_file(users)?;
    }
    Ok(())
}

/// Most streams per direction a client may ask for (iperf3 stops at 128).
/// What a test can really open is bounded further by the open-file limit
/// (checked before connecting, with a clear message), the client's
/// ephemeral ports towards one server address (about 28,000 by default),
/// and the server's `--max-streams` (10,000 by default).
pub const MAX_PARALLEL: u32 = 100_000;

/// The short usage printed after a parameter error.
pub fn short_usage(prog: &str) -> String {
    format!("Usage: {prog} [-s|-c host] [options]\nTry `{prog} --help' for more information.\n")
}

/// The long usage, in iperf3's layout.
pub fn long_usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [-s|-c host] [options]
       {prog} [-h|--help] [-v|--version]
       {prog} --loopback [client options]     (test against a built-in server on 127.0.0.1)
       {prog} --iperf2 [iperf 2 options]      (iperf 2.x command line, output and protocol)

Server or Client:
  -p, --port      #         server port to listen on/connect to
  -f, --format   [kmgtKMGT] format to report: Kbits, Mbits, Gbits, Tbits
  -i, --interval  #         seconds between periodic throughput reports
  -I, --pidfile file        write PID file
  -F, --file name           xmit/recv the specified file
  -A, --affinity n/n,m      set CPU affinity
  -B, --bind <host>[%<dev>] bind to the interface associated with the address <host>
                            (optional <dev> equivalent to `--bind-dev <dev>`)
  --bind-dev <dev>          bind to the network interface with SO_BINDTODEVICE
  -V, --verbose             more detailed output
  -J, --json                output in JSON format
  --json-stream             output in line-delimited JSON format
  --json-stream-full-output output in JSON format with JSON streams enabled
  --logfile f               send output to a log file
  --forceflush              force flushing output at every interval
  --timestamps<=format>     emit a timestamp at the start of each output line
                            (optional \"=\" and format string as per strftime(3))
  --rcv-timeout #           idle timeout for receiving data (default 120000 ms)
  --snd-timeout #           timeout for unacknowledged TCP data
                            (in ms, default is system settings)
  --cntl-ka[=#/#/#]         use control connection TCP keepalive - KEEPIDLE/KEEPINTV/KEEPCNT
                            each value is optional with system settings default
  -m, --mptcp               use MPTCP rather than plain TCP
  --use-pkcs1-padding       authentication with PKCS#1 v1.5 padding, as iperf3 3.16
                            and older use (less secure; the default is OAEP)
  -d, --debug[=#]           emit debugging output
                            (optional optional \"=\" and debug level: 1-4. Default is 4 - all messages)
  -v, --version             show version information and quit
  -h, --help                show this message and quit
Server specific:
  -s, --server              run in server mode
  -D, --daemon              run the server as a daemon
  -1, --one-off             handle one client connection then exit
  --server-bitrate-limit #[KMG][/#]   server's total bit rate limit (default 0 = no limit)
                            (optional slash and number of secs interval for averaging
                            total data rate.  Default is 5 seconds)
  --idle-timeout #          restart idle server after # seconds in case it
                            got stuck (default - no timeout)
  --server-max-duration #   max. time (in seconds) a client may ask for (default 0 = no limit)
  --max-tests #             tests served at once (default 16); more get \"server is busy\"
  --max-streams #           streams a test may open (default 10000)
  --allow <list>            serve only these clients: addresses, CIDR networks, host names
                            (comma-separated; repeatable; names resolved at start)
  --deny <list>             refuse these clients (deny wins over --allow); iperf3 clients
                            are told \"access denied\" (which iperf3 words as busy)
  --rsa-private-key-path    path to the RSA private key used to decrypt
                            authentication credentials
  --authorized-users-path   path to the configuration file containing user
                            credentials
  --time-skew-threshold     time skew threshold (in seconds) between the server
                            and client during the authentication process (default 10)
Client specific:
  -c, --client <host>[%<dev>] run in client mode, connecting to <host>
                              (option <dev> equivalent to `--bind-dev <dev>`)
  --sctp                    use SCTP rather than TCP
  -X, --xbind <name>        bind SCTP association to links
  --nstreams      #         number of SCTP streams
  -u, --udp                 use UDP rather than TCP
  --connect-timeout #       timeout for control connection setup (ms)
  -b, --bitrate #[KMG][/#]  target bitrate in bits/sec (0 for unlimited)
                            (default 1 Mbit/sec for UDP, unlimited for TCP)
                            (optional slash and packet count for burst mode)
                            (#pps gives a rate in packets per second)
  --pacing-timer #[KMG]     set the timing for pacing, in microseconds (default 1000):
                            a UDP sender that fell behind catches up at most this much at once
  --fq-rate #[KMG]          enable fair-queuing based socket pacing in
                            bits/sec (Linux only)
  --no-fq-socket-pacing     deprecated: accepted with a warning, as iperf3 does
  -t, --time      #         time in seconds to transmit for (default 10 secs)
  -n, --bytes     #[KMG]    number of bytes to transmit (instead of -t)
  -k, --blockcount #[KMG]   number of blocks (packets) to transmit (instead of -t or -n)
  -l, --length    #[KMG]    length of buffer to read or write
                            (default 128 KB for TCP, dynamic or 1460 for UDP)
                            (UDP: each datagram is exactly this long, 16..65507)
  --cport         <port>    bind to a specific client port (TCP and UDP, default: ephemeral port)
  -P, --parallel  #         number of parallel client streams to run
  -R, --reverse             run in reverse mode (server sends, client receives)
  --bidir                   run in bidirectional mode.
                            Client and server send and receive data.
  -w, --window    #[KMG]    set send/receive socket buffer sizes
                            (indirectly sets TCP window size)
  -C, --congestion <algo>   set TCP congestion control algorithm (Linux and FreeBSD only)
  -M, --set-mss   #         set TCP/SCTP maximum segment size (MTU - 40 bytes)
  -N, --no-delay            set TCP/SCTP no delay, disabling Nagle's Algorithm
  -4, --version4            only use IPv4
  -6, --version6            only use IPv6
  -S, --tos N               set the IP type of service, 0-255.
                            The usual prefixes for octal and hex can be used,
                            i.e. 52, 064 and 0x34 all specify the same value.
  --dscp N or --dscp val    set the IP dscp value, either 0-63 or symbolic.
                            Numeric values can be specified in decimal,
                            octal and hex (see --tos above).
  -L, --flowlabel N         set the IPv6 flow label (only supported on Linux)
  -Z, --zerocopy            use a 'zero copy' method of sending data
  --skip-rx-copy            ignore received messages using MSG_TRUNC option
  -O, --omit N              perform pre-test for N seconds and omit the pre-test statistics
  -T, --title str           prefix every output line with this string
  --extra-data str          data string to include in client and server JSON
  --get-server-output       get results from server
  --udp-counters-64bit      use 64-bit counters in UDP test packets
  --repeating-payload       use repeating pattern in payload, instead of
                            randomized payload (like in iperf2)
  --dont-fragment           set IPv4 Don't Fragment flag
  --gsro                    ask the server for UDP GSO/GRO too (wirespeed uses them
                            whenever the kernel has them)
  --username                username for authentication (the password comes from
                            $IPERF3_PASSWORD, or is asked on the terminal)
  --rsa-public-key-path     path to the RSA public key used to encrypt
                            authentication credentials
wirespeed additions:
  --loopback                run a client against a built-in server on 127.0.0.1
  --report file.html        write a self-contained HTML report with plots when the test
                            ends (a server writes file-N.html for its test number N)
  --live                    client on a terminal: show a live status line with the
                            current and average rate and a sparkline
  --udp-search              client: find the highest UDP rate with acceptable loss
                            (probes of -t secs, default 2, starting at -b)
  --max-loss #[%]           loss the search accepts (default 0.1%)
  --metrics <addr>:<port>   server: serve Prometheus metrics over HTTP at <addr>:<port>
  {prog} report RESULT.json [-o FILE.html]
                            render saved -J output (ours or iperf3's) as an HTML report
  {prog} --completions bash|zsh|fish
                            print a shell completion script

[KMG] indicates options that support a K/M/G suffix for kilo-, mega-, or giga-

wirespeed speaks iperf3 and iperf 2.x; see `{prog} --iperf2 --help` for the iperf 2 options.
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> Result<TestConfig, Error> {
        let args: Vec<String> = s.split_whitespace().map(String::from).collect();
        match parse_args(&args)? {
            Command::Run(c, _) => Ok(*c),
            other => panic!("{other:?}"),
        }
    }

    fn code(s: &str) -> Code {
        run(s).unwrap_err().code
    }

    #[test]
    fn client_defaults_match_iperf3() {
        let c = run("-c host").unwrap();
        assert_eq!(c.role, Role::Client("host".into()));
        assert_eq!(c.port, 5201);
        assert_eq!(c.params.end, EndCondition::Time(Duration::from_secs(10)));
        assert_eq!(c.params.streams, 1);
        assert_eq!(c.output.interval, Some(Duration::from_secs(1)));
        assert_eq!(c.params.block_len_or_default(), 131072);
        assert_eq!(c.output.format, 'a');
    }

    #[test]
    fn units_follow_iperf3() {
        let c = run("-c h -l 128K -w 4M -n 1G -P4").unwrap();
        assert_eq!(c.params.block_len, Some(131072));
        assert_eq!(c.params.window, Some(4 << 20));
        assert_eq!(c.params.end, EndCondition::Bytes(1 << 30));
        assert_eq!(c.params.streams, 4);
        let c = run("-c h -t 0.5 -b 10M/5").unwrap();
        assert_eq!(c.params.end, EndCondition::Time(Duration::from_millis(500)));
        assert_eq!(c.params.rate, 10_000_000);
        assert_eq!(c.params.burst, 5);
    }

    #[test]
    fn role_checks() {
        assert_eq!(code("-s -c h"), Code::SERVCLIENT);
        assert_eq!(code("-p 5"), Code::NOROLE);
        assert_eq!(code("-s -P 2"), Code::CLIENTONLY);
        assert_eq!(code("-c h -1"), Code::SERVERONLY);
        assert_eq!(code("-c h -R --bidir"), Code::REVERSEBIDIR);
        assert_eq!(code("-c h -t 1 -n 1M"), Code::ENDCONDITIONS);
    }

    #[test]
    fn ranges_are_checked() {
        assert_eq!(code("-c h -p 0"), Code::BADPORT);
        assert_eq!(code("-c h -p 70000"), Code::BADPORT);
        assert_eq!(code("-c h -f x"), Code::BADFORMAT);
        assert_eq!(code("-c h -i 0.05"), Code::INTERVAL);
        assert_eq!(code("-c h -t 90000"), Code::DURATION);
        assert_eq!(code("-c h -l 2M"), Code::BLOCKSIZE);
        assert_eq!(code("-c h -w 1G"), Code::BUFSIZE);
        assert_eq!(code("-c h -M 40000"), Code::MSS);
        assert_eq!(code("-c h -O 601"), Code::OMIT);
        assert_eq!(code("-c h -S 300"), Code::BADTOS);
        assert_eq!(code("-c h --dscp bogus"), Code::BADDSCP);
        assert_eq!(code("-c h -b 1M/2000"), Code::BURST);
        assert_eq!(code("-c h -P 0"), Code::NUMSTREAMS);
        assert_eq!(code("-c h -l 10X"), Code::UNITVAL);
        assert_eq!(code("-c h --rcv-timeout 5000"), Code::RVRSONLYRCVTIMEOUT);
        assert_eq!(code("-c h --cntl-ka=5/2/3"), Code::CNTLKA);
        assert_eq!(run("-c h -i 0").unwrap().output.interval, None);
        assert!(run("-c h -R --rcv-timeout 5000").is_ok());
    }

    #[test]
    fn tos_and_dscp() {
        assert_eq!(run("-c h -S 0x34").unwrap().params.tos, 52);
        assert_eq!(run("-c h -S 064").unwrap().params.tos, 52);
        assert_eq!(run("-c h --dscp ef").unwrap().params.tos, 46 << 2);
        assert_eq!(run("-c h --dscp 10").unwrap().params.tos, 40);
    }

    #[test]
    fn getopt_errors_are_parameter_errors() {
        let e = run("-c").unwrap_err();
        assert_eq!(e.line(), "parameter error - option requires an argument -- 'c'");
        let e = run("-c h --foo").unwrap_err();
        assert_eq!(e.line(), "parameter error - unrecognized option '--foo'");
    }

    #[test]
    fn bind_with_device_and_affinity() {
        let c = run("-c fe80::1%eth0 -A 1,0").unwrap();
        assert_eq!(c.role, Role::Client("fe80::1".into()));
        assert_eq!(c.net.bind_dev.as_deref(), Some("eth0"));
        assert_eq!(c.net.affinity, Some(1));
        assert_eq!(c.params.server_affinity, Some(0));
    }

    #[test]
    fn loopback_is_a_client() {
        let c = run("--loopback -t 1").unwrap();
        assert_eq!(c.role, Role::Loopback);
        assert_eq!(code("--loopback -c h"), Code::SERVCLIENT);
    }

    #[test]
    fn udp_options_follow_iperf3() {
        let c = run("-c h -u").unwrap();
        assert_eq!(c.params.protocol, Protocol::Udp);
        assert_eq!(c.params.rate, DEFAULT_UDP_RATE);
        // The datagram size is left for the client to take from the MSS.
        assert_eq!(c.params.block_len, None);
        let c = run("-c h -u -b 0").unwrap();
        assert_eq!(c.params.rate, 0);
        let c = run("-c h -u -l 16 --udp-counters-64bit --gsro --dont-fragment --repeating-payload").unwrap();
        assert_eq!(c.params.block_len, Some(16));
        assert!(c.params.udp_counters_64bit && c.params.gsro && c.params.dont_fragment && c.params.repeating_payload);
        let c = run("-c h -u -b 2kpps/8").unwrap();
        assert_eq!((c.params.pps, c.params.burst), (Some(2000), 8));
        assert_eq!(code("-c h -u -l 15"), Code::UDPBLOCKSIZE);
        assert_eq!(code("-c h -u -l 65508"), Code::UDPBLOCKSIZE);
        assert!(run("-c h -u -l 65507").is_ok());
        assert_eq!(code("-s -u"), Code::CLIENTONLY);
    }

    #[test]
    fn json_with_format_warns() {
        let args: Vec<String> = "-c h -J -f m".split_whitespace().map(String::from).collect();
        match parse_args(&args).unwrap() {
            Command::Run(_, w) => assert_eq!(w.len(), 1),
            _ => panic!(),
        }
    }
}
