//! The iperf3 personality's command line: iperf3's options, spellings,
//! defaults and checks, plus wirespeed's additions, producing a
//! [`TestConfig`].
//!
//! Parsing is a pipeline: getopt matches the words against [`TABLE`], each
//! occurrence's row applies its step to a [`ParseState`], then the
//! cross-option checks complete the configuration.

mod apply;
mod check;
mod opt;
mod state;
mod table;
mod usage;

pub use opt::{ApplyFn, InfoOption, Opt, RoleMark, Row, Step};
pub use state::ParseState;
pub use table::{TABLE, available};
pub use usage::{long_usage, short_usage};

#[cfg(test)]
use std::time::Duration;

use crate::getopt::parse;
use wirespeed_core::config::*;
use wirespeed_core::error::{Code, Error};

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

/// Most streams per direction a client may ask for (iperf3 stops at 128).
/// What a test can really open is bounded further by the open-file limit
/// (checked before connecting, with a clear message), the client's
/// ephemeral ports towards one server address (about 28,000 by default),
/// and the server's `--max-streams` (10,000 by default).
pub const MAX_PARALLEL: u32 = 100_000;

/// Parses iperf3-style arguments (without the program name).
pub fn parse_args(args: &[String]) -> Result<Command, Error> {
    let parsed = parse(TABLE, args).map_err(|m| Error::param_msg(Code::NONE, m))?;
    // -h and -v answer whatever else is given.
    for o in &parsed.opts {
        if let Step::InfoOption(a) = TABLE[o.row].step {
            return Ok(match a {
                InfoOption::Help => Command::Help,
                InfoOption::Version => Command::Version,
            });
        }
    }
    let mut state = ParseState::new();
    for o in &parsed.opts {
        if let Some(what) = TABLE[o.row].long.and_then(wirespeed_sys::lacks) {
            return Err(Error::param_msg(
                Code::NONE,
                format!("{}: {what} is not supported on this platform", o.spelled),
            ));
        }
        match TABLE[o.row].step {
            Step::Apply(apply) => apply(&mut state, o)?,
            Step::Refuse(why) => return Err(why()),
            Step::InfoOption(_) => {}
        }
    }
    state.common.settle_ecn().map_err(|m| Error::param_msg(Code::NONE, m))?;
    check::all(&mut state, &parsed.opts)?;
    Ok(Command::Run(Box::new(state.common.cfg), state.common.warnings))
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
    fn rpm_with_a_url_is_the_standard_test() {
        let c = run("--rpm=https://h:4443/config --cacert ca.pem -t 5 -R -P 8 -J").unwrap();
        let nq = c.nq.unwrap();
        assert!(!c.rpm);
        assert_eq!(nq.url, "https://h:4443/config");
        assert_eq!(nq.cacert.as_deref(), Some(std::path::Path::new("ca.pem")));
        assert_eq!(
            (nq.download_only, nq.time, nq.max_flows),
            (true, Duration::from_secs(5), 8)
        );
        let c = run("--rpm=https://h/ --insecure").unwrap();
        let nq = c.nq.unwrap();
        assert!(nq.insecure && !nq.download_only);
        assert_eq!((nq.time, nq.max_flows), (Duration::from_secs(20), 16));
        // The iperf variant is unchanged.
        let c = run("-c h --rpm").unwrap();
        assert!(c.rpm && c.nq.is_none());
        // `--rpm URL` is `--rpm=URL`; `--rpm` before anything else is not.
        for spaced in ["--rpm https://h/config -t 5", "-t 5 --rpm HTTPS://h/config"] {
            let c = run(spaced).unwrap();
            assert!(
                !c.rpm && c.nq.unwrap().url.eq_ignore_ascii_case("https://h/config"),
                "{spaced}"
            );
        }
        let c = run("--rpm -c h").unwrap();
        assert!(c.rpm && c.nq.is_none());
        // An http:// URL is taken too, and refused where every URL is checked.
        assert_eq!(run("--rpm http://h/").unwrap().nq.unwrap().url, "http://h/");
        for bad in [
            "--rpm=https://h/ -c h",
            "--rpm=https://h/ -u",
            "--rpm=https://h/ --bidir",
            "--rpm=https://h/ --cacert a --insecure",
            "--rpm=https://h/ -P 65",
            "-c h --insecure",
            "-s --cacert a",
        ] {
            let e = run(bad).unwrap_err();
            assert!(!e.line().is_empty(), "{bad}");
        }
        assert!(
            run("-c h --rpm https://h/config")
                .unwrap_err()
                .line()
                .contains("--rpm=URL names its server")
        );
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
        // Large interval x count does not overflow: the idle time is shorter.
        assert_eq!(code("-c h --cntl-ka=1/65536/65536"), Code::CNTLKA);
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
