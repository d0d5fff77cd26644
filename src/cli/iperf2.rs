//! The iperf 2 personality's command line: iperf 2.1.8's options, their
//! spellings, defaults and environment variables, producing the same
//! [`TestConfig`] the iperf3 side does.
//!
//! Where 2.1.8 silently accepts nonsense (`-f x`, `-l 10X`, an unknown
//! option) this parser refuses it with one line, as wirespeed does
//! everywhere; options whose feature is not built yet are refused the same
//! way rather than ignored.

use std::path::PathBuf;
use std::time::Duration;

use super::getopt::{ArgKind, Occurrence, OptSpec, parse};
use super::units::{parse_int, parse_iperf2, parse_seconds};
use crate::config::*;

/// iperf2's default port.
pub const DEFAULT_PORT: u16 = 5001;
/// iperf2's default UDP datagram size (IPv4).
pub const DEFAULT_UDP_LEN: u32 = 1470;
/// iperf2's default UDP datagram size from an IPv6 client.
pub const DEFAULT_UDP_LEN_V6: u32 = 1450;
/// The largest UDP payload over IPv4.
pub const MAX_UDP_LEN: u32 = 65507;
/// iperf2's default UDP rate: 1 Mbit/s in binary units.
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// How far behind a paced sender may catch up at once, µs.
pub const IPERF2_CATCH_UP_US: u32 = 100_000;
/// Smallest `-i` (Debian's fast-sampling build).
pub const MIN_INTERVAL: f64 = 0.0001;
/// Most flows `-P` asks for: iperf 2 flows run a thread each.
pub const MAX_FLOWS: u32 = 10_000;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Run a test; warnings to print first.
    Run(Box<TestConfig>, Vec<String>),
    /// `-h`: the long usage (stderr, exit 1, as 2.1.8).
    Help,
    /// `-v`: the version line (stderr, exit 1, as 2.1.8).
    Version,
    /// Neither `-s` nor `-c`: the short usage (stderr, exit 0).
    Usage,
}

/// A command-line error: one line, printed after `prog: ` when it came from
/// getopt, else on its own (iperf2 prints `ERROR: ...` lines bare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// The line.
    pub text: String,
    /// Prefix the line with the program name (getopt's errors).
    pub with_prog: bool,
}

impl CliError {
    fn err(text: impl Into<String>) -> CliError {
        CliError {
            text: format!("ERROR: {}", text.into()),
            with_prog: false,
        }
    }

    fn getopt(text: impl Into<String>) -> CliError {
        CliError {
            text: text.into(),
            with_prog: true,
        }
    }

    /// The line as printed by a program called `prog`.
    pub fn line(&self, prog: &str) -> String {
        if self.with_prog {
            format!("{prog}: {}", self.text)
        } else {
            self.text.clone()
        }
    }
}

/// Option identifiers.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    V4,
    V6,
    SingleClient,
    Bandwidth,
    Client,
    Dual,
    Enhanced,
    Format,
    Help,
    Interval,
    Len,
    PrintMss,
    Num,
    Output,
    Port,
    Tradeoff,
    Server,
    Time,
    Udp,
    Version,
    Window,
    ReportExclude,
    ReportStyle,
    Realtime,
    Affinity,
    Bind,
    Compat,
    Daemon,
    FileInput,
    SsmHost,
    StdinInput,
    ListenPort,
    Mss,
    NoDelay,
    Parallel,
    Reverse,
    Tos,
    Ttl,
    SingleUdp,
    Ipv6Domain,
    SuggestWin,
    PeerDetect,
    Congestion,
    FullDuplex,
    SumOnly,
    HideIps,
    PermitKey,
    PermitKeyTimeout,
    TripTimes,
    Histograms,
    ConnectRetries,
    Allow,
    Deny,
    Bounceback,
    BouncebackHold,
    BouncebackPeriod,
    BouncebackNoQuickack,
    // Recognised, but their features are not built yet.
    BouncebackCongest,
    BouncebackTxDelay,
    TcpRxWindowClamp,
    TapDev,
    SumDstip,
    TosOverride,
    ConnectOnly,
    FqRate,
    Ipg,
    Isochronous,
    Incr,
    IncrDstport,
    LocalOnly,
    NearCongestion,
    NoConnectSync,
    NoUdpFin,
    TcpQuickack,
    TcpWritePrefetch,
    TcpWriteTimes,
    TxDelay,
    TxStart,
    Burst,
    L2Checks,
    NumReportStructs,
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

/// 2.1.8's option table (short string `146b:c:def:hi:l:mn:o:p:rst:uvw:x:y:zAB:CDF:H:IL:M:NP:RS:T:UVWXZ:`
/// and its long options, with their real spellings).
pub const TABLE: &[OptSpec<Opt>] = &[
    o!(SingleClient, Some('1'), Some("singleclient"), None),
    o!(V4, Some('4'), None, None),
    o!(V6, Some('6'), None, None),
    o!(Bandwidth, Some('b'), Some("bandwidth"), Required),
    o!(Client, Some('c'), Some("client"), Required),
    o!(Dual, Some('d'), Some("dualtest"), None),
    o!(Enhanced, Some('e'), Some("enhanced"), None),
    o!(Enhanced, None, Some("enhancedreports"), None),
    o!(Format, Some('f'), Some("format"), Required),
    o!(Help, Some('h'), Some("help"), None),
    o!(Interval, Some('i'), Some("interval"), Required),
    o!(Len, Some('l'), Some("len"), Required),
    o!(PrintMss, Some('m'), Some("print_mss"), None),
    o!(Num, Some('n'), Some("num"), Required),
    o!(Output, Some('o'), Some("output"), Required),
    o!(Port, Some('p'), Some("port"), Required),
    o!(Tradeoff, Some('r'), Some("tradeoff"), None),
    o!(Server, Some('s'), Some("server"), None),
    o!(Time, Some('t'), Some("time"), Required),
    o!(Udp, Some('u'), Some("udp"), None),
    o!(Version, Some('v'), Some("version"), None),
    o!(Window, Some('w'), Some("window"), Required),
    o!(ReportExclude, Some('x'), Some("reportexclude"), Required),
    o!(ReportStyle, Some('y'), Some("reportstyle"), Required),
    o!(Realtime, Some('z'), Some("realtime"), None),
    o!(Affinity, Some('A'), None, None),
    o!(Bind, Some('B'), Some("bind"), Required),
    o!(Compat, Some('C'), Some("compatibility"), None),
    o!(Daemon, Some('D'), Some("daemon"), None),
    o!(FileInput, Some('F'), Some("file_input"), Required),
    o!(SsmHost, Some('H'), Some("ssm-host"), Required),
    o!(StdinInput, Some('I'), Some("stdin_input"), None),
    o!(ListenPort, Some('L'), Some("listenport"), Required),
    o!(Mss, Some('M'), Some("mss"), Required),
    o!(NoDelay, Some('N'), Some("nodelay"), None),
    o!(Parallel, Some('P'), Some("parallel"), Required),
    o!(Reverse, Some('R'), Some("reverse"), None),
    o!(Tos, Some('S'), Some("tos"), Required),
    o!(Ttl, Some('T'), Some("ttl"), Required),
    o!(SingleUdp, Some('U'), Some("single_udp"), None),
    o!(Ipv6Domain, Some('V'), Some("ipv6_domain"), None),
    o!(SuggestWin, Some('W'), Some("suggest_win_size"), None),
    o!(PeerDetect, Some('X'), Some("peer-detect"), None),
    o!(Congestion, Some('Z'), Some("tcp-congestion"), Required),
    o!(Congestion, None, Some("linux-congestion"), Required),
    o!(FullDuplex, None, Some("full-duplex"), None),
    o!(SumOnly, None, Some("sum-only"), None),
    o!(HideIps, None, Some("hide-ips"), None),
    o!(PermitKey, None, Some("permit-key"), Optional),
    o!(PermitKeyTimeout, None, Some("permit-key-timeout"), Required),
    o!(TripTimes, None, Some("trip-times"), None),
    o!(Histograms, None, Some("histograms"), Optional),
    o!(Histograms, None, Some("udp-histograms"), Optional),
    o!(ConnectRetries, None, Some("connect-retries"), Required),
    // wirespeed additions (2.1.8 has no such options): access policy.
    o!(Allow, None, Some("allow"), Required),
    o!(Deny, None, Some("deny"), Required),
    o!(Bounceback, None, Some("bounceback"), Optional),
    o!(BouncebackCongest, None, Some("bounceback-congest"), Optional),
    o!(BouncebackHold, None, Some("bounceback-hold"), Required),
    o!(BouncebackPeriod, None, Some("bounceback-period"), Required),
    o!(BouncebackNoQuickack, None, Some("bounceback-no-quickack"), None),
    o!(BouncebackTxDelay, None, Some("bounceback-txdelay"), Required),
    o!(TcpRxWindowClamp, None, Some("tcp-rx-window-clamp"), Required),
    o!(TapDev, None, Some("tap-dev"), Optional),
    o!(SumDstip, None, Some("sum-dstip"), None),
    o!(TosOverride, None, Some("tos-override"), Required),
    o!(ConnectOnly, None, Some("connect-only"), Optional),
    o!(FqRate, None, Some("fq-rate"), Required),
    o!(Ipg, None, Some("ipg"), Required),
    o!(Isochronous, None, Some("isochronous"), Optional),
    o!(Incr, None, Some("incr-dstip"), None),
    o!(IncrDstport, None, Some("incr-dstport"), None),
    o!(Incr, None, Some("incr-srcip"), None),
    o!(Incr, None, Some("incr-srcport"), None),
    o!(LocalOnly, None, Some("local-only"), Optional),
    o!(NearCongestion, None, Some("near-congestion"), Optional),
    o!(NoConnectSync, None, Some("no-connect-sync"), None),
    o!(NoUdpFin, None, Some("no-udp-fin"), None),
    o!(TcpQuickack, None, Some("tcp-quickack"), None),
    o!(TcpWritePrefetch, None, Some("tcp-write-prefetch"), Required),
    o!(TcpWriteTimes, None, Some("tcp-write-times"), None),
    o!(TxDelay, None, Some("txdelay-time"), Required),
    o!(TxStart, None, Some("txstart-time"), Required),
    o!(Burst, None, Some("burst-size"), Required),
    o!(Burst, None, Some("burst-period"), Required),
    o!(L2Checks, None, Some("l2checks"), None),
    o!(NumReportStructs, None, Some("NUM_REPORT_STRUCTS"), Required),
];

/// Environment variables 2.1.8 honours, read before the command line:
/// `(variable, option)`. A flag variable takes effect when set to anything.
const ENV: &[(&str, Opt)] = &[
    ("IPERF_IPV6_DOMAIN", Opt::Ipv6Domain),
    ("IPERF_SINGLECLIENT", Opt::SingleClient),
    ("IPERF_BANDWIDTH", Opt::Bandwidth),
    ("IPERF_CLIENT", Opt::Client),
    ("IPERF_DUALTEST", Opt::Dual),
    ("IPERF_ENHANCEDREPORTS", Opt::Enhanced),
    ("IPERF_FORMAT", Opt::Format),
    ("IPERF_INTERVAL", Opt::Interval),
    ("IPERF_LEN", Opt::Len),
    ("IPERF_PRINT_MSS", Opt::PrintMss),
    ("IPERF_NUM", Opt::Num),
    ("IPERF_PORT", Opt::Port),
    ("IPERF_TRADEOFF", Opt::Tradeoff),
    ("IPERF_SERVER", Opt::Server),
    ("IPERF_TIME", Opt::Time),
    ("IPERF_UDP", Opt::Udp),
    ("TCP_WINDOW_SIZE", Opt::Window),
    ("IPERF_REPORTEXCLUDE", Opt::ReportExclude),
    ("IPERF_REPORTSTYLE", Opt::ReportStyle),
    ("IPERF_BIND", Opt::Bind),
    ("IPERF_COMPAT", Opt::Compat),
    ("IPERF_DAEMON", Opt::Daemon),
    ("IPERF_FILE_INPUT", Opt::FileInput),
    ("IPERF_STDIN_INPUT", Opt::StdinInput),
    ("IPERF_MSS", Opt::Mss),
    ("IPERF_NODELAY", Opt::NoDelay),
    ("IPERF_LISTENPORT", Opt::ListenPort),
    ("IPERF_PARALLEL", Opt::Parallel),
    ("IPERF_TOS", Opt::Tos),
    ("IPERF_TTL", Opt::Ttl),
    ("IPERF_SINGLE_UDP", Opt::SingleUdp),
    ("IPERF_SUGGEST_WIN_SIZE", Opt::SuggestWin),
    ("IPERF_PEER_DETECT", Opt::PeerDetect),
    ("IPERF_CONGESTION_CONTROL", Opt::Congestion),
];

/// Marks a warning that 2.1.8 prints on standard error (the others go to
/// standard output with the report, as 2.1.8 prints them).
pub const TO_STDERR: char = '\u{2}';

/// The most ports one `-p m-n` range may span.
const MAX_PORT_RANGE: u16 = 1024;

/// Options whose feature is not built yet: refused, never ignored.
fn unimplemented(o: &Occurrence<Opt>) -> Option<CliError> {
    use Opt::*;
    let what = match o.key {
        Ipg => "inter-packet gaps for isochronous bursts",
        L2Checks => "layer 2 length checks",
        BouncebackCongest => "bounceback with a congesting flow",
        BouncebackTxDelay => "bounceback transmit delays",
        Isochronous => "isochronous traffic",
        ConnectOnly => "connect-only tests",
        Burst => "periodic bursts",
        TxDelay | TxStart => "scheduled starts",
        Affinity | SuggestWin | TapDev | SumDstip | Incr | NearCongestion | NoConnectSync | TcpWriteTimes
        | NumReportStructs | PermitKeyTimeout => "this option",
        _ => return None,
    };
    Some(CliError::err(format!(
        "{} is not implemented yet ({})",
        what, o.spelled
    )))
}

fn unit_value(opt: &str, v: &str) -> Result<f64, CliError> {
    parse_iperf2(v)
        .ok()
        .filter(|x| *x >= 0.0)
        .ok_or_else(|| CliError::err(format!("{opt} value of '{v}' not recognized")))
}

fn int_value(opt: &str, v: &str) -> Result<i64, CliError> {
    parse_int(v, false).ok_or_else(|| CliError::err(format!("{opt} value of '{v}' not recognized")))
}

/// `-S` names (TOS byte values). 2.1.8 puts the bare DSCP number in the TOS
/// byte for `le`, `nqb` and `nqb2`; wirespeed shifts it into the DSCP field
/// as the names promise.
pub fn tos_value(s: &str) -> Option<u8> {
    let v = match s.to_ascii_lowercase().as_str() {
        "af11" => 0x28,
        "af12" => 0x30,
        "af13" => 0x38,
        "af21" => 0x48,
        "af22" => 0x50,
        "af23" => 0x58,
        "af31" => 0x68,
        "af32" => 0x70,
        "af33" => 0x78,
        "af41" => 0x88,
        "af42" => 0x90,
        "af43" => 0x98,
        "cs0" | "ac_be" => 0x00,
        "cs1" | "ac_bk" => 0x20,
        "cs2" => 0x40,
        "cs3" => 0x60,
        "cs4" | "ac_vi" => 0x80,
        "cs5" => 0xa0,
        "cs6" => 0xc0,
        "cs7" => 0xe0,
        "ef" | "ac_vo" => 0xb8,
        "le" => 1 << 2,
        "nqb" => 45 << 2,
        "nqb2" => 5 << 2,
        "lowdelay" => 0x10,
        "throughput" => 0x08,
        "reliability" => 0x04,
        _ => {
            let v = parse_int(s, true)?;
            return (0..=255).contains(&v).then_some(v as u8);
        }
    };
    Some(v)
}

/// Splits `host[:port][%dev]` (IPv6 hosts in brackets when a port follows).
pub fn split_bind(s: &str) -> Result<(String, Option<u16>, Option<String>), CliError> {
    let (rest, dev) = match s.split_once('%') {
        Some((h, d)) if !d.is_empty() => (h, Some(d.to_string())),
        Some((h, _)) => (h, None),
        None => (s, None),
    };
    let bad = || CliError::err(format!("bind address '{s}' not recognized"));
    let port = |p: &str| -> Result<u16, CliError> { p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad) };
    if let Some(r) = rest.strip_prefix('[') {
        let (h, tail) = r.split_once(']').ok_or_else(bad)?;
        let p = match tail.strip_prefix(':') {
            Some(p) => Some(port(p)?),
            None if tail.is_empty() => None,
            None => return Err(bad()),
        };
        return Ok((h.to_string(), p, dev));
    }
    match rest.matches(':').count() {
        1 => {
            let (h, p) = rest.split_once(':').ok_or_else(bad)?;
            Ok((h.to_string(), Some(port(p)?), dev))
        }
        _ => Ok((rest.to_string(), None, dev)),
    }
}

/// Parses an iperf 2 command line (without the program name), with the
/// environment variables given by `env` applied first.
pub fn parse_args_with_env(args: &[String], env: &dyn Fn(&str) -> Option<String>) -> Result<Command, CliError> {
    let parsed = parse(TABLE, args).map_err(|m| CliError::getopt(iperf2_getopt_words(&m)))?;
    let mut opts: Vec<Occurrence<Opt>> = Vec::new();
    for (var, key) in ENV {
        if let Some(v) = env(var) {
            let row = TABLE
                .iter()
                .position(|s| s.key == *key)
                .expect("env options are in the table");
            let spec = &TABLE[row];
            opts.push(Occurrence {
                key: *key,
                row,
                value: (spec.arg != ArgKind::None).then_some(v),
                spelled: format!("${var}"),
            });
        }
    }
    opts.extend(parsed.opts);
    for o in &opts {
        match o.key {
            Opt::Help => return Ok(Command::Help),
            Opt::Version => return Ok(Command::Version),
            _ => {}
        }
    }
    let mut warnings = Vec::new();
    if let Some(x) = parsed.operands.first() {
        return Err(CliError::getopt(format!("ignoring extra argument -- {x}")));
    }
    let mut cfg = TestConfig {
        dialect: Dialect::Iperf2,
        port: DEFAULT_PORT,
        ..TestConfig::default()
    };
    cfg.output.interval = None;
    cfg.params.repeating_payload = true;
    // A paced UDP sender that fell behind (a busy machine) catches up on up
    // to 100 ms of datagrams at once, as 2.1.8's delay accumulator does,
    // so the average rate holds.
    cfg.params.pacing_timer = IPERF2_CATCH_UP_US;
    let mut server = false;
    let mut client: Option<String> = None;
    let mut udp = false;
    let mut single_udp = false;
    // TCP-only options given, refused with -u rather than ignored.
    let mut tcp_only: Vec<String> = Vec::new();
    let mut histograms: Option<String> = None;
    let (mut dual, mut tradeoff, mut reverse, mut full_duplex) = (false, false, false, false);
    let mut len: Option<f64> = None;
    let mut time: Option<f64> = None;
    let mut parallel: Option<u32> = None;
    let mut rate_pps = false;
    let mut rate_given = false;
    let mut client_only: Vec<String> = Vec::new();
    let mut ttl: Option<u32> = None;
    let mut policy_opt: Option<String> = None;
    let mut clamp: Option<u32> = None;
    let mut tos_override: Option<u8> = None;
    let mut bounceback: Option<crate::config::Bounceback> = None;
    let mut bb_opts: Vec<String> = Vec::new();
    let (mut bb_hold, mut bb_period, mut bb_quickack) = (0u32, Duration::from_secs(1), true);

    for o in &opts {
        if let Some(e) = unimplemented(o) {
            return Err(e);
        }
        let v = o.value.clone().unwrap_or_default();
        let sp = o.spelled.as_str();
        match o.key {
            Opt::V4 => cfg.net.family = Family::V4,
            Opt::V6 | Opt::Ipv6Domain => cfg.net.family = Family::V6,
            Opt::SingleClient => cfg.iperf2.single_client = true,
            Opt::Bandwidth => {
                rate_given = true;
                // `pps` (any case, or a bare `p`) means packets/s; the
                // number keeps its own suffix case (1Kpps = 1024/s).
                let lower = v.to_ascii_lowercase();
                let pps_at = lower.find('p');
                if let Some(at) = pps_at.filter(|at| matches!(&lower[*at..], "pps" | "p")) {
                    rate_pps = true;
                    cfg.params.pps = Some(unit_value(sp, &v[..at])?.round() as u64);
                } else if v.contains(',') {
                    return Err(CliError::err(format!(
                        "variable load (-b mean,stdev) is not implemented yet ({sp})"
                    )));
                } else {
                    cfg.params.rate = unit_value(sp, &v)? as u64;
                }
            }
            Opt::Client => {
                let (h, d) = match v.split_once('%') {
                    Some((h, d)) if !d.is_empty() => (h.to_string(), Some(d.to_string())),
                    _ => (v.clone(), None),
                };
                if h.is_empty() {
                    return Err(CliError::err("option -c needs a host"));
                }
                client = Some(h);
                if d.is_some() {
                    cfg.net.bind_dev = d;
                }
            }
            Opt::Dual => {
                dual = true;
                client_only.push(sp.into());
            }
            Opt::Tradeoff => {
                tradeoff = true;
                client_only.push(sp.into());
            }
            Opt::Reverse => {
                reverse = true;
                client_only.push(sp.into());
            }
            Opt::FullDuplex => {
                full_duplex = true;
                client_only.push(sp.into());
            }
            Opt::Enhanced => cfg.output.enhanced = true,
            Opt::Format => {
                let c = v.chars().next().unwrap_or(' ');
                if v.chars().count() != 1 || !"abkmgtAKBMGT".contains(c) {
                    return Err(CliError::err(format!(
                        "format '{v}' not recognized (use one of a b k m g A B K M G)"
                    )));
                }
                cfg.output.format = c;
            }
            Opt::Interval => {
                if v == "f" {
                    return Err(CliError::err("per-frame intervals (-i f) are not implemented yet"));
                }
                let mut i = parse_seconds(&v)
                    .filter(|i| *i >= 0.0 && *i <= 86400.0)
                    .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized")))?;
                if i > 0.0 && i < MIN_INTERVAL {
                    warnings.push(format!(
                        "WARNING: interval too small, increasing to {:.4} milliseconds.",
                        MIN_INTERVAL * 1e3
                    ));
                    i = MIN_INTERVAL;
                }
                // Rounded up to a whole microsecond, as 2.1.8 does.
                let us = (i * 1e6).ceil() as u64;
                cfg.output.interval = (us > 0).then(|| Duration::from_micros(us));
            }
            Opt::Len => {
                len = Some(unit_value(sp, &v)?);
                cfg.iperf2.len_given = true;
            }
            Opt::PrintMss => {
                cfg.output.print_mss = true;
                tcp_only.push(sp.into());
            }
            Opt::Num => {
                let n = unit_value(sp, &v)?;
                cfg.params.end = EndCondition::Bytes(n as u64);
                time = None;
                client_only.push(sp.into());
            }
            Opt::Output => {
                cfg.output.logfile = Some(PathBuf::from(&v));
                cfg.output.logfile_truncate = true;
            }
            Opt::Port => {
                let port = |s: &str| {
                    int_value(sp, s).and_then(|p| {
                        u16::try_from(p)
                            .ok()
                            .filter(|p| *p >= 1)
                            .ok_or_else(|| CliError::err(format!("port {s} is out of range (1-65535)")))
                    })
                };
                // `m-n`: a server listens on every port, a client sends one
                // flow to each.
                match v.split_once('-').filter(|(a, _)| !a.is_empty()) {
                    Some((a, b)) => {
                        let (lo, hi) = (port(a)?, port(b)?);
                        if hi < lo || hi - lo >= MAX_PORT_RANGE {
                            return Err(CliError::err(format!(
                                "port range {v} must be ascending and span at most {MAX_PORT_RANGE} ports"
                            )));
                        }
                        cfg.port = lo;
                        cfg.iperf2.port_last = (hi > lo).then_some(hi);
                    }
                    None => {
                        cfg.port = port(&v)?;
                        cfg.iperf2.port_last = None;
                    }
                }
            }
            Opt::Server => server = true,
            Opt::Time => {
                let t = parse_seconds(&v)
                    .filter(|t| *t >= 0.0 && *t <= 21_474_836.0)
                    .ok_or_else(|| CliError::err(format!("-t value of '{v}' not recognized")))?;
                time = Some(t);
            }
            Opt::Window => {
                let w = unit_value(sp, &v)?;
                if w > i32::MAX as f64 {
                    return Err(CliError::err(format!("window size {v} is too large")));
                }
                if (1.0..2048.0).contains(&w) {
                    warnings.push(format!(
                        "WARNING: TCP window size set to {} bytes. A small window size\nwill give poor performance. See the Iperf documentation.",
                        w as u64
                    ));
                }
                cfg.params.window = (w >= 1.0).then_some(w as u32);
            }
            Opt::ReportExclude => {
                if v.is_empty() || v.chars().any(|c| !"CDMSVcdmsv".contains(c)) {
                    return Err(CliError::err(format!(
                        "report exclusion '{v}' not recognized (use letters of CDMSV)"
                    )));
                }
                cfg.output.exclude = v.to_ascii_uppercase();
            }
            Opt::ReportStyle => {
                if !v.eq_ignore_ascii_case("c") {
                    return Err(CliError::err(format!("report style '{v}' not recognized (only C)")));
                }
                cfg.output.csv = true;
            }
            Opt::Realtime => cfg.iperf2.realtime = true,
            Opt::Bind => {
                let (h, p, d) = split_bind(&v)?;
                if !h.is_empty() {
                    cfg.net.bind = Some(h);
                }
                cfg.net.cport = p;
                if d.is_some() {
                    cfg.net.bind_dev = d;
                }
            }
            Opt::Compat => cfg.iperf2.compat = true,
            Opt::Daemon => cfg.server.daemon = true,
            Opt::FileInput => {
                cfg.file = Some(PathBuf::from(&v));
                client_only.push(sp.into());
            }
            Opt::StdinInput => {
                cfg.iperf2.stdin = true;
                client_only.push(sp.into());
            }
            Opt::ListenPort => {
                let p = int_value(sp, &v)?;
                if !(1..=65535).contains(&p) {
                    return Err(CliError::err(format!("port {v} is out of range (1-65535)")));
                }
                cfg.iperf2.listen_port = Some(p as u16);
                client_only.push(sp.into());
            }
            Opt::Mss => {
                tcp_only.push(sp.into());
                let m = unit_value(sp, &v)?;
                if !(0.0..=65535.0).contains(&m) {
                    return Err(CliError::err(format!("MSS {v} is out of range")));
                }
                cfg.params.mss = (m >= 1.0).then_some(m as u32);
                cfg.output.print_mss = true;
            }
            Opt::NoDelay => {
                cfg.params.nodelay = true;
                tcp_only.push(sp.into());
            }
            Opt::Parallel => {
                let p = int_value(sp, &v)?;
                if !(1..=MAX_FLOWS as i64).contains(&p) {
                    return Err(CliError::err(format!(
                        "-P value of '{v}' must be between 1 and {MAX_FLOWS}"
                    )));
                }
                parallel = Some(p as u32);
            }
            Opt::Tos => {
                cfg.params.tos =
                    tos_value(&v).ok_or_else(|| CliError::err(format!("-S value of '{v}' not recognized")))?;
            }
            Opt::Ttl => {
                let t = int_value(sp, &v)?;
                if !(0..255).contains(&t) {
                    return Err(CliError::err("option of -ttl (-T) must be less than 255"));
                }
                ttl = Some(t as u32);
                client_only.push(sp.into());
            }
            Opt::PeerDetect => {
                cfg.iperf2.peer_detect = true;
                client_only.push(sp.into());
            }
            Opt::Congestion => {
                cfg.params.congestion = Some(v);
                tcp_only.push(sp.into());
            }
            Opt::SumOnly => cfg.output.sum_only = true,
            Opt::HideIps => cfg.iperf2.hide_ips = true,
            Opt::PermitKey => {
                if let Some(k) = &o.value {
                    if !(4..=128).contains(&k.len()) {
                        return Err(CliError::err("permit key must be 4 to 128 characters"));
                    }
                    cfg.iperf2.permit_key = Some(k.clone());
                } else {
                    return Err(CliError::err(
                        "--permit-key needs a value (generated keys are not implemented yet)",
                    ));
                }
            }
            Opt::TripTimes => {
                cfg.params.trip_times = true;
                client_only.push(sp.into());
            }
            Opt::TcpRxWindowClamp => {
                tcp_only.push(sp.into());
                let c = unit_value(sp, &v)?;
                if !(1.0..=i32::MAX as f64).contains(&c) {
                    return Err(CliError::err(format!("{sp} value of '{v}' is out of range")));
                }
                clamp = Some(c as u32);
            }
            Opt::TosOverride => {
                tcp_only.push(sp.into());
                tos_override =
                    Some(tos_value(&v).ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized")))?);
            }
            Opt::TcpQuickack => {
                tcp_only.push(sp.into());
                client_only.push(sp.into());
                cfg.iperf2.quickack = true;
            }
            Opt::TcpWritePrefetch => {
                tcp_only.push(sp.into());
                client_only.push(sp.into());
                let n = unit_value(sp, &v)?;
                if !(1.0..=i32::MAX as f64).contains(&n) {
                    return Err(CliError::err(format!("{sp} value of '{v}' is out of range")));
                }
                cfg.iperf2.write_prefetch = Some(n as u32);
                // As 2.1.8: it implies enhanced reports.
                cfg.output.enhanced = true;
            }
            Opt::IncrDstport => {
                cfg.iperf2.incr_dstport = true;
                client_only.push(sp.into());
            }
            Opt::FqRate => {
                // 2.1.8 sets SO_MAX_PACING_RATE on its flows (and the server
                // on its sending side of -R / --full-duplex); 0 sets nothing.
                let bits = crate::cli::units::parse_iperf2_bit_or_byte(&v)
                    .ok()
                    .filter(|b| *b <= 8.0 * u64::MAX as f64 / 16.0)
                    .ok_or_else(|| CliError::err(format!("--fq-rate value of '{v}' not recognized")))?;
                cfg.params.fq_rate = bits as u64;
                client_only.push(sp.into());
            }
            Opt::LocalOnly => {
                cfg.iperf2.local_only = match o.value.as_deref() {
                    None | Some("1") => true,
                    Some("0") => false,
                    Some(x) => {
                        return Err(CliError::err(format!(
                            "--local-only value of '{x}' not recognized (1 or 0)"
                        )));
                    }
                };
                client_only.push(sp.into());
            }
            Opt::ConnectRetries => {
                tcp_only.push(sp.into());
                let n = int_value(sp, &v)?;
                if !(0..=10_000).contains(&n) {
                    return Err(CliError::err(format!(
                        "--connect-retries value of '{v}' is out of range"
                    )));
                }
                cfg.iperf2.connect_retries = n as u32;
                client_only.push(sp.into());
            }
            Opt::Allow | Opt::Deny => {
                let name = if o.key == Opt::Allow { "--allow" } else { "--deny" };
                let list = crate::policy::split_list(name, &v).map_err(CliError::err)?;
                if o.key == Opt::Allow {
                    cfg.server.allow.extend(list);
                } else {
                    cfg.server.deny.extend(list);
                }
                policy_opt = Some(name.into());
            }
            Opt::Udp => udp = true,
            Opt::SingleUdp => {
                udp = true;
                single_udp = true;
            }
            Opt::NoUdpFin => {
                cfg.iperf2.no_udp_fin = true;
                client_only.push(sp.into());
            }
            Opt::SsmHost => cfg.iperf2.ssm_host = Some(v),
            Opt::Histograms => {
                crate::stats::histogram::HistogramSpec::parse(o.value.as_deref()).map_err(CliError::err)?;
                histograms = Some(o.value.clone().unwrap_or_default());
            }
            Opt::Bounceback => {
                let count = match &o.value {
                    Some(n) => int_value(sp, n)?,
                    None => 10,
                };
                if !(1..=1_000_000).contains(&count) {
                    return Err(CliError::err(format!(
                        "--bounceback count of {count} is out of range (1-1000000)"
                    )));
                }
                bounceback = Some(crate::config::Bounceback {
                    count: count as u32,
                    period: Duration::ZERO,
                    hold_us: 0,
                    quickack: true,
                });
                client_only.push(sp.into());
            }
            Opt::BouncebackHold => {
                let ms = parse_seconds(&v)
                    .filter(|ms| (0.0..=60_000.0).contains(ms))
                    .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized (0-60000 ms)")))?;
                bb_hold = (ms * 1e3).round() as u32;
                bb_opts.push(sp.into());
                client_only.push(sp.into());
            }
            Opt::BouncebackPeriod => {
                let secs = parse_seconds(&v)
                    .filter(|s| *s >= 0.0)
                    .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized")))?;
                // wirespeed's server gives up on a bounceback client that is
                // silent for 120 s.
                if secs > 60.0 {
                    return Err(CliError::err(format!("{sp} of {v} s is too long (at most 60 s)")));
                }
                bb_period = Duration::from_secs_f64(secs);
                bb_opts.push(sp.into());
                client_only.push(sp.into());
            }
            Opt::BouncebackNoQuickack => {
                bb_quickack = false;
                bb_opts.push(sp.into());
                client_only.push(sp.into());
            }
            Opt::Help | Opt::Version => {}
            _ => unreachable!("refused above"),
        }
    }

    cfg.net.ttl = ttl;
    if let Some(b) = &mut bounceback {
        b.period = bb_period;
        b.hold_us = bb_hold;
        b.quickack = bb_quickack;
    } else if let (false, Some(o)) = (server, bb_opts.first()) {
        return Err(CliError::err(format!("option {o} needs --bounceback")));
    }
    if server && client.is_some() {
        // -s -c host: the server serves only that client (2.1.8 accepts
        // the option and does nothing; its documentation promises this).
        let host = client.take().unwrap_or_default();
        cfg.server.allow.push(host);
    }
    if !server && client.is_none() {
        return Ok(Command::Usage);
    }
    if udp {
        cfg.params.protocol = Protocol::Udp;
    }
    let modes = [dual, tradeoff, reverse, full_duplex].iter().filter(|m| **m).count();
    if modes > 1 {
        return Err(CliError::err(
            "options of --full-duplex, --reverse, -d and -r are mutually exclusive",
        ));
    }
    cfg.params.direction = if dual {
        Direction::Dual
    } else if tradeoff {
        Direction::Tradeoff
    } else if reverse {
        Direction::Reverse
    } else if full_duplex {
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
    if cfg.iperf2.no_udp_fin && !udp {
        return Err(CliError::err("option --no-udp-fin requires -u UDP"));
    }
    if let (true, Some(o)) = (udp, tcp_only.first()) {
        return Err(CliError::err(format!("option {o} is for TCP, not with -u UDP")));
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
    if let Some(h) = histograms {
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
    if single_udp {
        if server {
            cfg.iperf2.single_udp = true;
        } else {
            warnings.push("WARN: Client set to UDP per -U (suggest use lower case -u instead)".into());
        }
    }
    if server {
        cfg.role = Role::Server;
        for o in &client_only {
            warnings.push(format!("WARNING: option {o} is not valid for server mode"));
        }
        // Client-only settings have no meaning on a server.
        cfg.params.direction = Direction::Forward;
        cfg.params.trip_times = false;
        cfg.params.fq_rate = 0;
        cfg.iperf2.local_only = false;
        cfg.iperf2.incr_dstport = false;
        cfg.iperf2.write_prefetch = None;
        cfg.iperf2.quickack = false;
        cfg.iperf2.rx_window_clamp = clamp;
        cfg.iperf2.tos_override = tos_override;
        cfg.file = None;
        if let Some(p) = parallel {
            cfg.server.max_connections = Some(p);
        }
        if let Some(t) = time {
            cfg.server.listen_time = (t > 0.0).then(|| Duration::from_secs_f64(t));
        }
        // `-s -b`: a TCP server reads each flow at most at this rate.
        if rate_given && (udp || single_udp) {
            return Err(CliError::err(
                "a UDP server's read-rate limit (-s -u -b) is not implemented yet",
            ));
        }
    } else {
        cfg.role = Role::Client(client.unwrap_or_default());
        if let Some(p) = parallel {
            cfg.params.streams = p;
        }
        if let Some(t) = time {
            cfg.params.end = EndCondition::Time(Duration::from_secs_f64(t));
        }
        if cfg.server.daemon {
            return Err(CliError::err("option -D is only valid for a server"));
        }
        if let Some(o) = policy_opt {
            return Err(CliError::err(format!("option {o} is only valid for a server")));
        }
        if cfg.iperf2.single_client {
            return Err(CliError::err("option -1 is only valid for a server"));
        }
        if clamp.is_some() {
            return Err(CliError::err("option --tcp-rx-window-clamp is only valid for a server"));
        }
        if tos_override.is_some() {
            return Err(CliError::err("option --tos-override is only valid for a server"));
        }
        if let Some(last) = cfg.iperf2.port_last {
            let n = u32::from(last - cfg.port) + 1;
            if cfg.params.streams != n {
                warnings.push(format!(
                    "{TO_STDERR}WARNING: port-range and -P mismatch (adjusting -P to {n})"
                ));
                cfg.params.streams = n;
            }
        }
    }
    if rate_pps && cfg.params.protocol == Protocol::Tcp {
        return Err(CliError::err("units of pps not supported with TCP"));
    }
    if let (Some(_), false) = (&bounceback, server) {
        let bad = if udp {
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
        } else if rate_given {
            Some("-b")
        } else {
            None
        };
        if let Some(what) = bad {
            return Err(CliError::err(format!(
                "option --bounceback is not supported with {what}"
            )));
        }
        use crate::proto::iperf2::bounceback::{BB_DEFAULT_SIZE, BB_MAX_SIZE, BB_MIN_SIZE};
        let size = len.map_or(BB_DEFAULT_SIZE as f64, |l| l);
        if size < BB_MIN_SIZE as f64 || size > BB_MAX_SIZE as f64 {
            return Err(CliError::err(format!(
                "bounceback length (-l) of {} must be between {BB_MIN_SIZE} and {BB_MAX_SIZE} bytes",
                size as u64
            )));
        }
        len = Some(size);
        // As in 2.1.8: enhanced reports, and Nagle off.
        cfg.output.enhanced = true;
        cfg.params.nodelay = true;
        cfg.iperf2.bounceback = bounceback.take();
    }
    let block = match len {
        Some(l) => l as u64,
        None => match cfg.params.protocol {
            // 2.1.8's IPv6 client sends 1450-byte datagrams.
            Protocol::Udp if cfg.net.family == Family::V6 && !server => DEFAULT_UDP_LEN_V6 as u64,
            Protocol::Udp => DEFAULT_UDP_LEN as u64,
            _ => DEFAULT_TCP_BLOCK as u64,
        },
    };
    if cfg.params.protocol == Protocol::Udp && cfg.iperf2.port_last.is_some() {
        return Err(CliError::err("port ranges (-p m-n) are not implemented for UDP yet"));
    }
    if cfg.params.protocol == Protocol::Udp && cfg.iperf2.incr_dstport {
        return Err(CliError::err("--incr-dstport is not implemented for UDP yet"));
    }
    if cfg.iperf2.incr_dstport && u32::from(cfg.port) + cfg.params.streams - 1 > 65535 {
        return Err(CliError::err("--incr-dstport: the last flow's port would pass 65535"));
    }
    if cfg.params.protocol == Protocol::Udp {
        if rate_given && cfg.params.rate == 0 && cfg.params.pps.is_none_or(|p| p == 0) {
            return Err(CliError::err("-b 0 is not a rate for UDP (give the rate to send at)"));
        }
        if !rate_given {
            cfg.params.rate = DEFAULT_UDP_RATE;
        }
        let need = if cfg.iperf2.compat {
            crate::proto::iperf2::udp::DATAGRAM_HEADER_LEN as u64
        } else if cfg.params.trip_times {
            crate::iperf2::udp::MIN_DATAGRAM_TRIP_TIMES as u64
        } else {
            crate::iperf2::udp::MIN_DATAGRAM as u64
        };
        if !server && block < need {
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
            crate::error::strerror(e.raw_os_error().unwrap_or(libc::ENOENT))
        )));
    }
    // The client's own report turns enhanced only when it receives too.
    if cfg.params.trip_times && cfg.params.direction != Direction::Forward {
        cfg.output.enhanced = true;
    }
    Ok(Command::Run(Box::new(cfg), warnings))
}

/// Parses an iperf 2 command line with the process environment.
pub fn parse_args(args: &[String]) -> Result<Command, CliError> {
    parse_args_with_env(args, &|k| std::env::var(k).ok())
}

/// glibc's wording as 2.1.8's bundled getopt prints it (backquotes, no
/// quotes around a short option).
fn iperf2_getopt_words(m: &str) -> String {
    if let Some(rest) = m.strip_prefix("unrecognized option '") {
        return format!("unrecognized option `{}", rest);
    }
    if let Some(c) = m.strip_prefix("invalid option -- '") {
        return format!("invalid option -- {}", c.trim_end_matches('\''));
    }
    if let Some(c) = m.strip_prefix("option requires an argument -- '") {
        return format!("option requires an argument -- {}", c.trim_end_matches('\''));
    }
    m.replace("'--", "`--")
}

/// The version line (`-v`).
pub fn version_line() -> String {
    format!("iperf version 2.1.8 (wirespeed {}) pthreads\n", crate::VERSION)
}

/// The short usage (no `-s`/`-c`).
pub fn short_usage(prog: &str) -> String {
    format!("Usage: {prog} [-s|-c host] [options]\nTry `{prog} --help' for more information.\n")
}

/// The long usage (`-h`), in iperf 2's layout, listing what wirespeed's
/// iperf 2 dialect accepts.
pub fn long_usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [-s|-c host] [options]
       {prog} [-h|--help] [-v|--version]

Client/Server:
  -b, --bandwidth #[kmgKMG | pps]  bandwidth to send at in bits/sec or packets per second (UDP default 1 Mbit/sec; TCP: a rate limit)
  -e, --enhanced    use enhanced reporting giving more tcp/udp and traffic information
  -f, --format    [abkmgABKMG]  format to report: adaptive, bits, Kbits, Mbits, Gbits (upper case: bytes)
      --hide-ips           hide ip addresses and host names within outputs
  -i, --interval  #        seconds between periodic bandwidth reports (fractions allowed)
  -l, --len       #[kmKM]    length of buffer in bytes to read or write (Defaults: TCP=128K, v4 UDP=1470, v6 UDP=1450)
  -m, --print_mss          print TCP maximum segment size
  -o, --output    <filename> output the report or error message to this specified file
  -p, --port      #[-#]    client/server port to listen on/send on and to connect
                           (a range n-m: one listener, or one client flow, per port; TCP)
      --permit-key=<key>   permit key a client must send (TCP only)
      --sum-only           output sum only reports
  -u, --udp                use UDP rather than TCP
  -w, --window    #[KM]    TCP window size (socket buffer size)
  -z, --realtime           request realtime scheduler
  -B, --bind <host>[:<port>][%<dev>] bind to <host>, ip addr and optional port and device
  -C, --compatibility      for use with older versions: send no header
  -M, --mss       #        set TCP maximum segment size using TCP_MAXSEG
  -N, --nodelay            set TCP no delay, disabling Nagle's Algorithm
  -S, --tos       #        set the socket's IP_TOS (byte) field
  -Z, --tcp-congestion <algo>  set TCP congestion control algorithm (Linux only)

Server specific:
  -s, --server             run in server mode
  -1, --singleclient       run one server at a time
  -t, --time      #        time in seconds to listen for new connections as well as to receive traffic (default not set)
  -B, --bind <ip>[%<dev>]  bind to this address and optional device
  -D, --daemon             run the server as a daemon
  -H, --ssm-host <ip>      set the SSM source, use with -B for (S,G)
  -U, --single_udp         run in single threaded UDP mode (one client at a time)
      --tcp-rx-window-clamp #[KM]  cap the TCP receive window the server offers (TCP_WINDOW_CLAMP)
      --tos-override <val> TOS of the server's sockets, for what it sends back (-R, --full-duplex)
      --histograms[=binwidth[u|m],bins,ci_lower,ci_upper]  latency histograms (needs the client's --trip-times)
  -P, --parallel  #        exit after this many connections have been served
  -b, --bandwidth #[kmgKMG]  read each TCP flow at most at this rate
  -c, --client    <host>   serve only this client
      --allow <list>       serve only these clients: addresses, CIDR networks, host names
                           (comma-separated, repeatable; a wirespeed addition)
      --deny <list>        refuse these clients (wins over --allow and -c)
  -V, --ipv6_domain        Enable IPv6 reception by setting the domain and socket to AF_INET6 (Can receive on both IPv4 and IPv6)

Client specific:
  -c, --client    <host>   run in client mode, connecting to <host>
      --bounceback[=n]     request/response test: bursts of n (default 10) -l byte writes (default 100) echoed back
      --bounceback-hold #  server holds each message # ms before replying
      --bounceback-no-quickack  do not set TCP_QUICKACK on bounceback sockets
      --bounceback-period #  seconds between bounceback bursts (default 1; 0 = back to back)
      --connect-retries #  number of times to retry tcp connect
  -d, --dualtest           Do a bidirectional test simultaneously (multiple sockets)
      --full-duplex        run full duplex test using same socket
      --fq-rate #[kmgKMG]  fair-queue socket pacing (lower case bits, upper case bytes per second)
      --local-only[=1|0]   SO_DONTROUTE: reach only directly connected networks
      --incr-dstport       send parallel flow i to the -p port + i (TCP)
      --tcp-quickack       TCP_QUICKACK after every read (the server's reads too, through the header)
      --tcp-write-prefetch #[KM]  write only when less than this is queued unsent (TCP_NOTSENT_LOWAT; implies -e)
  -n, --num       #[kmgKMG]    number of bytes to transmit (instead of -t)
      --no-udp-fin         no UDP FIN/report exchange at the end of the test
  -r, --tradeoff           Do a bidirectional test individually
  -t, --time      #        time in seconds to transmit for (default 10 secs)
      --trip-times         enable end to end measurements (requires client and server clock sync)
  -B, --bind [<ip> | <ip:port>] bind ip (and optional port) from which to source traffic
  -F, --file_input <name>  input the data to be transmitted from a file
  -I, --stdin_input        input the data to be transmitted from stdin
  -L, --listenport #       port to receive bidirectional tests back on
  -P, --parallel  #        number of parallel client threads to run
  -R, --reverse            reverse the test (client receives, server sends)
  -S, --tos                IP DSCP or tos settings
  -T, --ttl       #        time-to-live, for multicast (default 1)
  -V, --ipv6_domain        Set the domain to IPv6 (send packets over IPv6)
  -X, --peer-detect        perform server version detection and version exchange

Miscellaneous:
  -x, --reportexclude [CDMSV]   exclude C(connection) D(data) M(multicast) S(settings) V(server) reports
  -y, --reportstyle C      report as a Comma-Separated Values
  -h, --help               print this message and quit
  -v, --version            print version information and quit

[kmgKMG] Indicates options that support a k,m,g,K,M or G suffix
Lowercase format characters are 10^3 based and uppercase are 2^n based
(e.g. 1k = 1000, 1K = 1024, 1m = 1,000,000 and 1M = 1,048,576)

Accepted tos values are: af11, af12, af13, af21, af22, af23, af31, af32, af33, af41, af42, af43,
cs0, cs1, cs2, cs3, cs4, cs5, cs6, cs7, ef, le, nqb, nqb2, ac_be, ac_bk, ac_vi, ac_vo, lowdelay, throughput,
reliability, or a numeric value.

The TCP window size option can be set by the environment variable
TCP_WINDOW_SIZE. Most other options can be set by an environment variable
IPERF_<long option name>, such as IPERF_BANDWIDTH.

wirespeed speaks iperf 2.x and iperf3; run it without --iperf2 for the iperf3 options.
"
    )
}

/// The configuration an iperf 2 command line (no environment) gives; for
/// unit tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn test_config(cmdline: &str) -> TestConfig {
    let args: Vec<String> = cmdline.split_whitespace().map(String::from).collect();
    match parse_args_with_env(&args, &|_| None) {
        Ok(Command::Run(c, _)) => *c,
        other => panic!("{cmdline}: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_env(s: &str, env: &[(&str, &str)]) -> Result<(TestConfig, Vec<String>), CliError> {
        let args: Vec<String> = s.split_whitespace().map(String::from).collect();
        let env: Vec<(String, String)> = env.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let lookup = move |k: &str| env.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone());
        match parse_args_with_env(&args, &lookup)? {
            Command::Run(c, w) => Ok((*c, w)),
            other => panic!("{other:?}"),
        }
    }

    fn run(s: &str) -> TestConfig {
        run_env(s, &[]).unwrap().0
    }

    fn err(s: &str) -> String {
        run_env(s, &[]).unwrap_err().line("iperf")
    }

    #[test]
    fn client_defaults_are_iperf2s() {
        let c = run("-c host");
        assert_eq!(c.dialect, Dialect::Iperf2);
        assert_eq!(c.role, Role::Client("host".into()));
        assert_eq!(c.port, 5001);
        assert_eq!(c.params.end, EndCondition::Time(Duration::from_secs(10)));
        assert_eq!(c.params.block_len, Some(131072));
        assert_eq!(c.output.interval, None);
        assert_eq!(c.output.format, 'a');
        assert!(c.params.repeating_payload);
        assert!(!c.iperf2.len_given);
    }

    #[test]
    fn suffix_case_decides_the_base() {
        let c = run("-c h -b 10m -l 100K");
        assert_eq!(c.params.rate, 10_000_000);
        assert_eq!(c.params.block_len, Some(102400));
        assert!(c.iperf2.len_given);
        let c = run("-c h -b 10M -n 1k");
        assert_eq!(c.params.rate, 10 * 1024 * 1024);
        assert_eq!(c.params.end, EndCondition::Bytes(1000));
        assert_eq!(run("-c h -w 4M").params.window, Some(4 << 20));
    }

    #[test]
    fn directions_and_their_exclusions() {
        assert_eq!(run("-c h -d").params.direction, Direction::Dual);
        assert_eq!(run("-c h -r -L 6000").params.direction, Direction::Tradeoff);
        assert_eq!(run("-c h -r -L 6000").iperf2.listen_port, Some(6000));
        assert_eq!(run("-c h -R").params.direction, Direction::Reverse);
        assert_eq!(run("-c h --full-duplex").params.direction, Direction::FullDuplex);
        assert_eq!(
            err("-c h -d -R"),
            "ERROR: options of --full-duplex, --reverse, -d and -r are mutually exclusive"
        );
        assert_eq!(
            err("-c h -C -e"),
            "ERROR: compatibility mode not supported with the requested with options"
        );
    }

    #[test]
    fn intervals_are_fractional_with_a_floor() {
        assert_eq!(run("-c h -i 0.25").output.interval, Some(Duration::from_millis(250)));
        let (c, w) = run_env("-c h -i 0.00001", &[]).unwrap();
        assert_eq!(c.output.interval, Some(Duration::from_micros(100)));
        assert_eq!(w[0], "WARNING: interval too small, increasing to 0.1000 milliseconds.");
        assert_eq!(run("-c h -i 0").output.interval, None);
    }

    #[test]
    fn server_reuses_client_letters_for_its_own_meanings() {
        let c = run("-s -P 2 -t 30 -1 -D");
        assert_eq!(c.role, Role::Server);
        assert_eq!(c.server.max_connections, Some(2));
        assert_eq!(c.server.listen_time, Some(Duration::from_secs(30)));
        assert!(c.iperf2.single_client);
        assert!(c.server.daemon);
        let c = run("-s -c 10.0.0.1");
        assert_eq!(c.role, Role::Server);
        assert_eq!(c.server.allow, vec!["10.0.0.1".to_string()]);
        let (_, w) = run_env("-s -d", &[]).unwrap();
        assert_eq!(w, vec!["WARNING: option -d is not valid for server mode".to_string()]);
    }

    #[test]
    fn environment_comes_before_the_command_line() {
        let (c, _) = run_env("-c h", &[("IPERF_PORT", "6001"), ("IPERF_ENHANCEDREPORTS", "0")]).unwrap();
        assert_eq!(c.port, 6001);
        assert!(c.output.enhanced, "flag variables act when set to anything");
        let (c, _) = run_env("-c h -p 7001", &[("IPERF_PORT", "6001")]).unwrap();
        assert_eq!(c.port, 7001);
        let (c, _) = run_env("-c h", &[("TCP_WINDOW_SIZE", "64K")]).unwrap();
        assert_eq!(c.params.window, Some(65536));
        let (c, _) = run_env("", &[("IPERF_CLIENT", "h2"), ("IPERF_TIME", "3")]).unwrap();
        assert_eq!(c.role, Role::Client("h2".into()));
        assert_eq!(c.params.end, EndCondition::Time(Duration::from_secs(3)));
    }

    #[test]
    fn errors_read_like_iperf2() {
        assert_eq!(err("-c h --bogus"), "iperf: unrecognized option `--bogus'");
        assert_eq!(err("-c h -Q"), "iperf: invalid option -- Q");
        assert_eq!(err("-c h extra"), "iperf: ignoring extra argument -- extra");
        assert_eq!(err("-c h -t abc"), "ERROR: -t value of 'abc' not recognized");
        assert_eq!(err("-c h -b 10pps"), "ERROR: units of pps not supported with TCP");
        assert_eq!(
            err("-c h -b 1k -l 128K"),
            "ERROR: option -b and -l of 131072 are incompatible, consider setting -l to 125 or lower"
        );
        assert_eq!(err("-c h -T 300"), "ERROR: option of -ttl (-T) must be less than 255");
        assert!(err("-c h -l 10X").contains("not recognized"));
        assert!(err("-c h -f x").contains("format 'x' not recognized"));
        assert!(err("-c h --isochronous").contains("not implemented yet"));
        assert!(err("-c h -u --ipg 0.1").contains("not implemented yet"));
        assert!(err("-c h -u --l2checks").contains("not implemented yet"));
    }

    #[test]
    fn udp_defaults_are_iperf2s() {
        let c = run("-c h -u");
        assert_eq!(c.params.protocol, Protocol::Udp);
        assert_eq!(c.params.block_len, Some(1470));
        assert_eq!(c.params.rate, 1_048_576);
        assert_eq!(c.params.pps, None);
        assert_eq!(run("-c h -u -V").params.block_len, Some(1450));
        assert_eq!(run("-s -u").params.block_len, Some(1470));
        // Lower-case suffixes are decimal, upper-case binary, for rates too.
        assert_eq!(run("-c h -u -b 10m").params.rate, 10_000_000);
        assert_eq!(run("-c h -u -b 10M").params.rate, 10 * 1024 * 1024);
        assert_eq!(run("-c h -u -b 2k").params.rate, 2000);
        let c = run("-c h -u -b 100pps");
        assert_eq!((c.params.pps, c.params.rate), (Some(100), 0));
        assert_eq!(run("-c h -u -b 1kpps").params.pps, Some(1000));
        assert_eq!(run("-c h -u -b 1Kpps").params.pps, Some(1024));
        assert_eq!(run("-c h -u -b 100PPS").params.pps, Some(100));
        assert_eq!(run("-c h -u -b 5p").params.pps, Some(5));
        assert!(err("-c h -u -b 5ppx").contains("not recognized"));
        assert!(run_env("-c h", &[("IPERF_UDP", "")]).unwrap().0.params.protocol == Protocol::Udp);
    }

    #[test]
    fn udp_options_and_their_errors() {
        assert_eq!(
            err("-c h -u -l 40"),
            "ERROR: -l of 40 is too small for UDP: iperf 2's datagram header needs 76 bytes"
        );
        assert!(err("-c h -u -l 100 --trip-times").contains("needs 128 bytes"));
        assert_eq!(run("-c h -u -l 76").params.block_len, Some(76));
        assert_eq!(run("-c h -u -C -l 16").params.block_len, Some(16));
        assert!(err("-c h -u -l 65508").contains("too large for UDP"));
        assert_eq!(err("-c h --no-udp-fin"), "ERROR: option --no-udp-fin requires -u UDP");
        assert!(run("-c h -u --no-udp-fin").iperf2.no_udp_fin);
        assert_eq!(
            err("-c h -u -X"),
            "ERROR: option of -X or --peer-detect not supported with -u UDP"
        );
        assert!(err("-c h -u -F /dev/null").contains("not implemented for UDP"));
        assert!(err("-c h -u -b 0").contains("-b 0"));
        assert_eq!(err("-c h -u -N"), "ERROR: option -N is for TCP, not with -u UDP");
        assert!(err("-s -u -M 1000").contains("option -M is for TCP"));
        assert!(err("-c h -u --connect-retries 2").contains("for TCP"));
        // -U: a one-client-at-a-time UDP server; on a client, just UDP.
        let s = run("-s -U");
        assert_eq!(s.params.protocol, Protocol::Udp);
        assert!(s.iperf2.single_udp);
        let (c, w) = run_env("-c h -U", &[]).unwrap();
        assert_eq!(c.params.protocol, Protocol::Udp);
        assert!(w[0].contains("-U"));
        // Multicast: -H needs a server joining a group.
        assert_eq!(
            run("-s -u -B 232.1.1.1 -H 10.0.0.1").iperf2.ssm_host.as_deref(),
            Some("10.0.0.1")
        );
        assert!(err("-s -u -B 10.0.0.2 -H 10.0.0.1").contains("multicast group"));
        assert!(err("-c h -u -H 10.0.0.1").contains("only valid for a server"));
        assert_eq!(run("-c 239.1.1.1 -u -T 4").net.ttl, Some(4));
    }

    #[test]
    fn histograms_are_a_server_option_that_implies_enhanced() {
        let s = run("-s --histograms");
        assert!(s.output.enhanced);
        assert_eq!(s.output.histograms.as_deref(), Some(""));
        assert_eq!(
            run("-s -u --histograms=1m,20").output.histograms.as_deref(),
            Some("1m,20")
        );
        assert_eq!(
            run("-s -u --udp-histograms=10u").output.histograms.as_deref(),
            Some("10u")
        );
        assert!(err("-s --histograms=x").contains("not recognized"));
        assert!(err("-c h --histograms").contains("server option"));
    }

    #[test]
    fn help_version_and_usage() {
        let p = |s: &str| parse_args_with_env(&[s.to_string()], &|_| None).unwrap();
        assert_eq!(p("-h"), Command::Help);
        assert_eq!(p("-v"), Command::Version);
        assert_eq!(parse_args_with_env(&[], &|_| None).unwrap(), Command::Usage);
        assert!(long_usage("iperf").starts_with("Usage: iperf [-s|-c host] [options]\n"));
    }

    #[test]
    fn long_option_spellings_and_prefixes() {
        let c = run("-c h --file_input /dev/null --dual --peer-detect --tcp-congestion reno");
        assert_eq!(c.file, Some(PathBuf::from("/dev/null")));
        assert_eq!(c.params.direction, Direction::Dual);
        assert!(c.iperf2.peer_detect);
        assert_eq!(c.params.congestion.as_deref(), Some("reno"));
        assert!(run("-c h --stdin").iperf2.stdin);
        assert!(err("-c h --fileinput x").contains("unrecognized option `--fileinput'"));
    }

    #[test]
    fn tos_names_and_numbers() {
        assert_eq!(run("-c h -S af11").params.tos, 0x28);
        assert_eq!(run("-c h -S ef").params.tos, 0xb8);
        assert_eq!(run("-c h -S 0x10").params.tos, 0x10);
        assert_eq!(run("-c h -S 020").params.tos, 0x10);
        assert_eq!(run("-c h -S le").params.tos, 0x04);
        assert!(err("-c h -S bogus").contains("not recognized"));
    }

    #[test]
    fn bind_forms() {
        assert_eq!(split_bind("10.0.0.1").unwrap(), ("10.0.0.1".into(), None, None));
        assert_eq!(
            split_bind("10.0.0.1:6000").unwrap(),
            ("10.0.0.1".into(), Some(6000), None)
        );
        assert_eq!(
            split_bind("10.0.0.1%eth0").unwrap(),
            ("10.0.0.1".into(), None, Some("eth0".into()))
        );
        assert_eq!(split_bind("[::1]:7000").unwrap(), ("::1".into(), Some(7000), None));
        assert_eq!(
            split_bind("fe80::1%eth0").unwrap(),
            ("fe80::1".into(), None, Some("eth0".into()))
        );
        assert!(split_bind("1.2.3.4:x").is_err());
        let c = run("-c h -B 127.0.0.1:6000");
        assert_eq!(c.net.bind.as_deref(), Some("127.0.0.1"));
        assert_eq!(c.net.cport, Some(6000));
    }

    #[test]
    fn trip_times_implies_enhanced_only_when_receiving() {
        let c = run("-c h --trip-times");
        assert!(c.params.trip_times && !c.output.enhanced);
        assert!(run("-c h --trip-times -R").output.enhanced);
        assert!(err("-c h --trip-times -l 50").contains("at least 92"));
    }

    #[test]
    fn fq_rate_counts_bits_in_lower_case_and_bytes_in_upper_case() {
        // As 2.1.8 hands them to SO_MAX_PACING_RATE (strace): 10m is
        // 1,250,000 bytes/s, 10M 10,000,000, 1000 is 125.
        assert_eq!(run("-c h --fq-rate 10m").params.fq_rate, 10_000_000);
        assert_eq!(run("-c h --fq-rate 10M").params.fq_rate, 80_000_000);
        assert_eq!(run("-c h --fq-rate 1000").params.fq_rate, 1000);
        assert_eq!(run("-c h --fq-rate 2.5m").params.fq_rate, 2_500_000);
        assert_eq!(run("-c h").params.fq_rate, 0);
        assert!(err("-c h --fq-rate fast").contains("--fq-rate value of 'fast' not recognized"));
        // A client option on a server: warned about and not applied.
        let (c, w) = run_env("-s --fq-rate 10m --local-only", &[]).unwrap();
        assert_eq!((c.params.fq_rate, c.iperf2.local_only), (0, false));
        assert!(w.iter().any(|l| l.contains("--fq-rate")), "{w:?}");
    }

    #[test]
    fn rx_window_clamp_is_a_tcp_server_option() {
        assert_eq!(
            run("-s --tcp-rx-window-clamp 100K").iperf2.rx_window_clamp,
            Some(102_400)
        );
        assert_eq!(run("-s").iperf2.rx_window_clamp, None);
        assert!(err("-c h --tcp-rx-window-clamp 64K").contains("only valid for a server"));
        assert!(err("-s -u --tcp-rx-window-clamp 64K").contains("not with -u"));
        assert!(err("-s --tcp-rx-window-clamp 0").contains("out of range"));
    }

    #[test]
    fn a_port_range_sets_the_flows_of_a_client() {
        let (c, w) = run_env("-c h -p 5001-5004", &[]).unwrap();
        assert_eq!((c.port, c.iperf2.port_last, c.params.streams), (5001, Some(5004), 4));
        assert!(w.iter().any(|l| l.ends_with("(adjusting -P to 4)")), "{w:?}");
        let (c, w) = run_env("-c h -p 5001-5002 -P 2", &[]).unwrap();
        assert_eq!(c.params.streams, 2);
        assert!(w.is_empty(), "{w:?}");
        let c = run("-s -p 6000-6001");
        assert_eq!((c.port, c.iperf2.port_last), (6000, Some(6001)));
        assert_eq!(run("-s -p 6000-6000").iperf2.port_last, None);
        assert_eq!(
            run_env("-s", &[("IPERF_PORT", "7000-7002")])
                .unwrap()
                .0
                .iperf2
                .port_last,
            Some(7002)
        );
        assert!(err("-s -p 6001-6000").contains("ascending"));
        assert!(err("-s -p 1-2000").contains("at most 1024"));
        assert!(err("-s -p 6000-x").contains("not recognized"));
        assert!(err("-s -u -p 6000-6001").contains("not implemented for UDP"));
    }

    #[test]
    fn incr_dstport_is_a_tcp_client_option() {
        assert!(run("-c h -P 3 --incr-dstport").iperf2.incr_dstport);
        assert!(!run("-c h").iperf2.incr_dstport);
        assert!(err("-c h -u --incr-dstport").contains("not implemented for UDP"));
        assert!(err("-c h -p 65535 -P 2 --incr-dstport").contains("65535"));
        assert!(err("-c h --incr-srcport").contains("not implemented yet"));
    }

    #[test]
    fn write_prefetch_is_a_tcp_client_option_that_implies_enhanced() {
        let c = run("-c h --tcp-write-prefetch 64K");
        assert_eq!(c.iperf2.write_prefetch, Some(65536));
        assert!(c.output.enhanced);
        assert!(err("-c h -u --tcp-write-prefetch 64K").contains("not with -u"));
        assert!(err("-c h --tcp-write-prefetch 0").contains("out of range"));
        assert_eq!(run("-s --tcp-write-prefetch 64K").iperf2.write_prefetch, None);
    }

    #[test]
    fn tcp_quickack_is_a_tcp_client_option() {
        assert!(run("-c h --tcp-quickack").iperf2.quickack);
        assert!(!run("-c h").iperf2.quickack);
        assert!(err("-c h -u --tcp-quickack").contains("not with -u"));
        assert!(!run("-s --tcp-quickack").iperf2.quickack);
    }

    #[test]
    fn tos_override_is_a_tcp_server_option() {
        assert_eq!(run("-s --tos-override 0x48").iperf2.tos_override, Some(0x48));
        assert_eq!(run("-s --tos-override af41").iperf2.tos_override, Some(0x88));
        assert!(err("-c h --tos-override 0x48").contains("only valid for a server"));
        assert!(err("-s -u --tos-override 0x48").contains("not with -u"));
        assert!(err("-s --tos-override bogus").contains("not recognized"));
    }

    #[test]
    fn a_tcp_server_takes_a_read_rate() {
        let (c, w) = run_env("-s -b 100m", &[]).unwrap();
        assert_eq!(c.params.rate, 100_000_000);
        assert!(w.is_empty(), "{w:?}");
        assert!(err("-s -u -b 1m").contains("not implemented"));
    }

    #[test]
    fn local_only_takes_an_optional_one_or_zero() {
        assert!(run("-c h --local-only").iperf2.local_only);
        assert!(run("-c h --local-only=1").iperf2.local_only);
        assert!(!run("-c h --local-only=0").iperf2.local_only);
        assert!(!run("-c h").iperf2.local_only);
        assert!(err("-c h --local-only=yes").contains("--local-only value of 'yes'"));
    }
}
