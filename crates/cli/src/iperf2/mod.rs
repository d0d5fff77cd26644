//! The iperf 2 personality's command line: iperf 2.1.8's options, their
//! spellings, defaults and environment variables, producing the same
//! [`TestConfig`] the iperf3 side does.
//!
//! Where 2.1.8 silently accepts nonsense (`-f x`, `-l 10X`, an unknown
//! option) this parser refuses it with one line, as wirespeed does
//! everywhere; options whose feature is not built yet are refused the same
//! way rather than ignored.
//!
//! Parsing is a pipeline: the environment's `IPERF_*` variables and then
//! the words, matched by getopt against [`TABLE`], each apply their row's
//! step to a [`ParseState`]; then the cross-option checks complete the
//! configuration.

mod apply;
mod check;
mod env;
mod opt;
mod state;
mod table;
mod usage;

pub use apply::network::{split_bind, tos_value};
pub use env::ENV;
pub use opt::{ApplyFn, InfoOption, Opt, Row, Scope, Step};
pub use state::ParseState;
pub use table::{TABLE, available};
pub use usage::{long_usage, short_usage, version_line};

#[cfg(test)]
use std::path::PathBuf;
#[cfg(test)]
use std::time::Duration;

use crate::getopt::parse;
use wirespeed_core::config::*;

/// iperf2's default port.
pub const DEFAULT_PORT: u16 = 5001;
pub use wirespeed_proto::iperf2::defaults::{
    DEFAULT_UDP_LEN, DEFAULT_UDP_LEN_V6, DEFAULT_UDP_RATE, IPERF2_CATCH_UP_US, MAX_UDP_LEN,
};
/// Smallest `-i` (Debian's fast-sampling build).
pub(crate) const MIN_INTERVAL: f64 = 0.0001;
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

/// Marks a warning that 2.1.8 prints on standard error (the others go to
/// standard output with the report, as 2.1.8 prints them).
pub const TO_STDERR: char = '\u{2}';

/// Parses an iperf 2 command line (without the program name), with the
/// environment variables given by `env` applied first.
pub fn parse_args_with_env(args: &[String], env: &dyn Fn(&str) -> Option<String>) -> Result<Command, CliError> {
    let parsed = parse(TABLE, args).map_err(|m| CliError::getopt(iperf2_getopt_words(&m)))?;
    let mut opts = env::occurrences(env);
    opts.extend(parsed.opts);
    // -h and -v answer whatever else is given.
    for o in &opts {
        if let Step::InfoOption(a) = TABLE[o.row].step {
            return Ok(match a {
                InfoOption::Help => Command::Help,
                InfoOption::Version => Command::Version,
            });
        }
    }
    if let Some(x) = parsed.operands.first() {
        return Err(CliError::getopt(format!("ignoring extra argument -- {x}")));
    }
    let mut state = ParseState::new();
    for o in &opts {
        if let Some(what) = TABLE[o.row].long.and_then(wirespeed_sys::lacks) {
            return Err(CliError::err(format!(
                "{}: {what} is not supported on this platform",
                o.spelled
            )));
        }
        match TABLE[o.row].step {
            Step::Apply(apply) => apply(&mut state, o)?,
            Step::NotBuilt(what) => {
                return Err(CliError::err(format!("{what} is not implemented yet ({})", o.spelled)));
            }
            Step::InfoOption(_) => {}
        }
    }
    state.common.settle_ecn().map_err(CliError::err)?;
    check::all(state, &opts)
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
    fn rpm_with_a_url_is_the_iperf3_dialects() {
        assert!(run("-c h --rpm").rpm);
        for spelled in ["-c h --rpm=https://h/config", "-c h --rpm https://h/config"] {
            let e = err(spelled);
            assert!(
                e.starts_with("ERROR: --rpm=https://h/config ") && !e.contains('\n'),
                "{e}"
            );
        }
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
        assert!(err("-c h -u --l2checks").contains("not implemented yet"));
    }

    #[test]
    fn isochronous_reads_as_2_1_8_does() {
        let c = run("-c h --isochronous");
        let f = c.params.frames.unwrap();
        assert_eq!((f.fps, f.mean, f.stdev), (60.0, 20e6, 0.0));
        assert!(c.output.enhanced, "isochronous implies -e");
        let c = run("-c h -u --isochronous=30:4M,1m --ipg 0.5");
        let f = c.params.frames.unwrap();
        assert_eq!((f.fps, f.mean, f.stdev), (30.0, 32e6, 1e6));
        assert_eq!(f.ipg, Duration::from_micros(500));
        assert_eq!(c.params.rate, 0, "the frames set the pace, not -b's default");
        assert_eq!(f.period(), Duration::from_micros(33_333));
        // Packets per frame (UDP): 5 × 1000 bytes × 10 frames/s.
        let f = run("-c h -u -l 1000 --isochronous=10:5p,0").params.frames.unwrap();
        assert_eq!(f.mean, 400_000.0);
        assert_eq!(run("-c h --isochronous=24").params.frames.unwrap().fps, 24.0);
        // --ipg alone paces plain UDP: 1470 bytes every 2 ms.
        let c = run("-c h -u --ipg 2");
        assert!(c.params.frames.is_none());
        assert_eq!(c.params.rate, 5_880_000);
        assert_eq!(
            err("-c h --isochronous=10:5p"),
            "ERROR: Invalid --isochronous units of 'p' with TCP must be bytes"
        );
        assert_eq!(
            err("-c h --isochronous=60:0"),
            "ERROR: Invalid --isochronous mean value, must be greater than zero"
        );
        assert!(err("-c h --isochronous=x:1m").contains("format is <fps>:<mean>,<variance>"));
        assert_eq!(
            err("-c h -u -b 1m --isochronous"),
            "ERROR: options of --b and --isochronous cannot be applied together"
        );
        assert_eq!(err("-c h --ipg 1"), "ERROR: option --ipg requires -u UDP");
        assert!(err("-c h -u --ipg -1").contains("non-negative"));
        assert!(err("-c h --isochronous --burst-period 1").contains("cannot be applied together"));
        assert!(err("-c h -d --isochronous").contains("-R or --full-duplex"));
        assert!(run("-c h -u -R --isochronous").params.frames.is_some());
        assert!(err("-c h -l 50 --isochronous").contains("at least 92"));
        let (c, warnings) = run_env("-s --isochronous", &[]).unwrap();
        assert!(c.params.frames.is_none());
        assert!(warnings.iter().any(|w| w.contains("--isochronous")), "{warnings:?}");
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
        // --udp-l4s (2.2.1's): a UDP client that sends.
        assert!(run("-c h -u --udp-l4s").iperf2.udp_l4s);
        assert_eq!(err("-c h --udp-l4s"), "ERROR: UDP L4S not supported with TCP");
        for clash in ["-R", "--full-duplex", "-d", "-r"] {
            assert!(
                err(&format!("-c h -u --udp-l4s {clash}")).contains("the client sends"),
                "{clash}"
            );
        }
        assert!(err("-c h -u --udp-l4s --ecn ect0").contains("--ecn"));
        assert!(err("-c h -u --udp-l4s --isochronous=60:10m").contains("--isochronous"));
        assert!(err("-c h -u --udp-l4s -C").contains("-C"));
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
        assert_eq!(run("-s -u -p 6000-6001").iperf2.port_last, Some(6001));
    }

    #[test]
    fn iperf_2_2_dscp_and_tcp_cca() {
        assert_eq!(run("-c h --dscp 46").params.tos, 0xb8);
        assert_eq!(run("-c h --dscp ef").params.tos, 0xb8);
        assert_eq!(run("-c h -S 0x10 --dscp 10").params.tos, 40);
        assert!(err("-c h --dscp 64").contains("not recognized"));
        assert_eq!(run("-c h --tcp-cca reno").params.congestion.as_deref(), Some("reno"));
        let (c, w) = run_env("-c h -Z cubic --tcp-cca reno", &[]).unwrap();
        assert_eq!(c.params.congestion.as_deref(), Some("cubic"));
        assert!(w.iter().any(|l| l.contains("--tcp-cca ignored")), "{w:?}");
        assert!(err("-c h -u --tcp-cca reno").contains("not with -u"));
    }

    #[test]
    fn iperf2_2_send_delay_is_tcp_tx_delay_in_microseconds() {
        for o in ["--tcp-tx-delay", "--send-delay"] {
            let c = run(&format!("-c h {o} 10"));
            assert_eq!(c.iperf2.tx_delay_us, Some(10_000));
            assert!(c.output.enhanced);
            assert_eq!(run(&format!("-c h {o} 0.0015")).iperf2.tx_delay_us, Some(2));
            assert!(err(&format!("-c h {o} 0.0005")).contains("one microsecond"));
            assert!(err(&format!("-c h {o} 10x")).contains("Invalid value"));
            assert!(err(&format!("-c h {o} 3000000")).contains("too large"));
        }
        assert!(run("-c h").iperf2.tx_delay_us.is_none());
        // TCP only: --tcp-tx-delay by its table's scope, --send-delay
        // because SO_TXTIME is not built.
        assert!(err("-c h -u --tcp-tx-delay 5").contains("not with -u"));
        let e = err("-c h -u --send-delay 5");
        assert!(e.contains("SO_TXTIME") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn iperf2_2_fq_rate_step_starts_at_one_step_and_steps_each_second() {
        let c = run("-c h --fq-rate-step 10m");
        assert_eq!(c.params.fq_rate, 10_000_000);
        assert_eq!(c.iperf2.fq_rate_step, Some((10_000_000, Duration::from_secs(1))));
        let c = run("-c h --fq-rate 50m --fq-rate-step 5m --fq-rate-step-interval 0.5");
        assert_eq!(c.params.fq_rate, 50_000_000);
        assert_eq!(c.iperf2.fq_rate_step, Some((5_000_000, Duration::from_millis(500))));
        assert!(err("-c h --fq-rate-step-interval 2").contains("needs --fq-rate-step"));
        assert!(err("-c h --fq-rate-step 1m -R").contains("-R"));
        assert!(err("-c h --fq-rate-step 1m --fq-rate-step-interval 0").contains("not recognized"));
        assert!(err("-c h --fq-rate-step x").contains("not recognized"));
        assert!(err("-c h -u --fq-rate-step 1m").contains("not with -u"));
    }

    #[test]
    fn iperf2_2_working_load_cca_needs_a_working_load() {
        let c = run("-c h --working-load --working-load-cca reno -Z cubic");
        assert_eq!(c.iperf2.load_cca.as_deref(), Some("reno"));
        assert_eq!(c.params.congestion.as_deref(), Some("cubic"));
        assert!(err("-c h --working-load-cca reno").contains("needs --working-load"));
        assert!(err("-c h --working-load --working-load-cca a_name_much_too_long").contains("not a congestion"));
    }

    #[test]
    fn iperf2_master_omit_is_within_the_test_time_and_tcp_only() {
        let c = run("-c h --omit 1 -t 3");
        assert_eq!(c.params.omit, Duration::from_secs(1));
        assert_eq!(c.params.end, EndCondition::Time(Duration::from_secs(2)));
        let c = run("-c h --omit 0.5");
        assert_eq!(c.params.end, EndCondition::Time(Duration::from_millis(9500)));
        assert_eq!(run("-c h --omit 0").params.omit, Duration::ZERO);
        assert_eq!(
            err("-c h -u --omit 1"),
            "ERROR: option of --omit not supported with -u UDP"
        );
        assert!(err("-c h --omit 3 -t 3").contains("leaves nothing"));
        assert!(err("-c h --omit 1 -d").contains("-d or -r"));
        assert!(err("-c h --omit 1 --bounceback").contains("--bounceback"));
        assert!(err("-c h --omit abc").contains("not recognized"));
        assert!(err("-c h --omit 0.0000001").contains("Too small"));
    }

    #[test]
    fn a_server_drops_the_newer_client_options_with_a_warning() {
        let (c, w) = run_env(
            "-s --omit 1 --send-delay 5 --tcp-tx-delay 5 --fq-rate-step 1m --set-rand-seed 3",
            &[],
        )
        .unwrap();
        assert_eq!(c.params.omit, Duration::ZERO);
        assert_eq!(c.params.fq_rate, 0);
        assert!(c.iperf2.tx_delay_us.is_none() && c.iperf2.fq_rate_step.is_none());
        assert!(c.iperf2.rand_seed.is_none());
        assert!(
            w.iter().any(|l| l.contains("--omit is not valid for server mode")),
            "{w:?}"
        );
    }

    #[test]
    fn iperf2_master_rand_seed_and_markov_lengths() {
        assert_eq!(run("-c h --set-rand-seed 42").iperf2.rand_seed, Some(42));
        assert_eq!(run("-c h --set-rand-seed -1").iperf2.rand_seed, Some(u32::MAX));
        assert!(run("-c h").iperf2.rand_seed.is_none());
        assert!(err("-c h --set-rand-seed x").contains("not recognized"));
        let e = err("-c h -u -l <1470|0.5,0.5<64|0.5,0.5");
        assert!(e.contains("Markov") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn incr_dstport_is_a_tcp_client_option() {
        assert!(run("-c h -P 3 --incr-dstport").iperf2.incr_dstport);
        assert!(!run("-c h").iperf2.incr_dstport);
        assert!(run("-c h -u -P 2 --incr-dstport").iperf2.incr_dstport);
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
    fn max_tests_is_a_server_option() {
        assert_eq!(run("-s --max-tests 3").server.max_tests, 3);
        assert_eq!(run("-s").server.max_tests, u32::MAX);
        assert!(err("-c h --max-tests 3").contains("option --max-tests is only valid for a server"));
        assert!(err("-s --max-tests 0").contains("between 1 and 100000"));
    }

    #[test]
    fn the_iperf3_servers_limits_are_server_options() {
        let c = run("-s --server-bitrate-limit 100M/2 --server-max-duration 30 --rcv-timeout 1500");
        assert_eq!(c.server.bitrate_limit, 100_000_000);
        assert_eq!(c.server.bitrate_limit_window, Duration::from_secs(2));
        assert_eq!(c.server.max_duration, Some(Duration::from_secs(30)));
        assert_eq!(c.net.rcv_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(
            run("-s --server-bitrate-limit 1G").server.bitrate_limit_window,
            Duration::from_secs(5)
        );
        assert_eq!(run("-s --server-max-duration 0").server.max_duration, None);
        for o in [
            "--server-bitrate-limit 1M",
            "--server-max-duration 5",
            "--rcv-timeout 500",
        ] {
            assert!(err(&format!("-c h {o}")).contains("only valid for a server"), "{o}");
        }
        assert!(err("-s --server-bitrate-limit fast").contains("invalid rate"));
        assert!(err("-s --server-bitrate-limit 1M/100").contains("0.1 to 60"));
        assert!(err("-s --server-max-duration 90000").contains("between 0 and 86400"));
        assert!(err("-s --rcv-timeout 50").contains("between 100"));
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
