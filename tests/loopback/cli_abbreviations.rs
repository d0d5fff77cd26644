//! Long options and their abbreviations mean what they mean in the real
//! programs: every long option of iperf 2.1.8 and of iperf3 3.21 parses in
//! full, every prefix that was unique among that program's own long
//! options picks the same option here, every prefix that was ambiguous
//! there is ambiguous here, and wirespeed's additions (which only count
//! where no native option matches) never change that.

use std::collections::BTreeSet;
use std::process::Command;

use wirespeed::cli::getopt::{ArgKind, OptionRow, Parsed, Tier, parse};
use wirespeed::cli::{iperf2, iperf3};

/// iperf 2.1.8's long options: its `long_options[]` table (Settings.cpp),
/// in order, checked one by one against the installed 2.1.8 (each is
/// recognised, and `strings` finds no other).
#[rustfmt::skip]
const IPERF2_LONG: &[&str] = &[
    "singleclient", "bandwidth", "client", "dualtest", "enhanced", "format", "help", "interval", "len",
    "print_mss", "num", "output", "port", "tradeoff", "server", "time", "udp", "version", "window",
    "reportexclude", "reportstyle", "realtime", "awdl", "bind", "bounceback", "bounceback-congest",
    "bounceback-txdelay", "bounceback-hold", "bounceback-no-quickack", "bounceback-period", "compatibility",
    "daemon", "file_input", "ssm-host", "stdin_input", "mss", "nodelay", "listenport", "parallel", "reverse",
    "tos", "ttl", "single_udp", "ipv6_domain", "suggest_win_size", "peer-detect", "tcp-congestion",
    "histograms", "hide-ips", "udp-histograms", "l2checks", "incr-dstip", "incr-srcip", "incr-dstport",
    "incr-srcport", "sum-dstip", "txstart-time", "txdelay-time", "fq-rate", "trip-times", "no-udp-fin",
    "connect-only", "connect-retries", "no-connect-sync", "full-duplex", "ipg", "isochronous", "sum-only",
    "local-only", "near-congestion", "permit-key", "permit-key-timeout", "burst-size", "burst-period",
    "tos-override", "tcp-rx-window-clamp", "tcp-quickack", "tcp-write-prefetch", "tcp-write-times", "tap-dev",
    "tun-dev", "NUM_REPORT_STRUCTS",
];

/// The long options `iperf --help` (2.1.8) lists. Three are not the
/// table's names (docs/protocols.md, Option names): `--stdin` and `--udp-histogram` work
/// in 2.1.8 as abbreviations of `--stdin_input` and `--udp-histograms`;
/// `--fileinput` is refused by 2.1.8 (the option is `--file_input`), so it
/// is refused here too.
#[rustfmt::skip]
const IPERF2_HELP: &[&str] = &[
    "bandwidth", "bind", "bounceback", "bounceback-congest", "bounceback-hold", "bounceback-no-quickack",
    "bounceback-period", "client", "compatibility", "connect-only", "connect-retries", "daemon", "dualtest",
    "enhanced", "fileinput", "format", "fq-rate", "full-duplex", "help", "hide-ips", "histograms", "incr-dstip",
    "incr-dstport", "incr-srcip", "incr-srcport", "interval", "ipg", "ipv6_domain", "isochronous", "len",
    "listenport", "local-only", "mss", "near-congestion", "no-connect-sync", "no-udp-fin", "nodelay", "num",
    "output", "parallel", "peer-detect", "permit-key", "permit-key-timeout", "port", "print_mss", "realtime",
    "reportexclude", "reportstyle", "reverse", "server", "single_udp", "singleclient", "ssm-host", "stdin",
    "sum-dstip", "sum-only", "tap-dev", "tcp-congestion", "tcp-quickack", "tcp-rx-window-clamp",
    "tcp-write-prefetch", "tcp-write-times", "time", "tos", "tradeoff", "trip-times", "ttl", "txdelay-time",
    "txstart-time", "udp", "udp-histogram", "version", "window",
];

/// Names 2.1.8's own documents give that 2.1.8 refuses: its help's
/// `--fileinput`, its man page's `--peerdetect`.
const IPERF2_REFUSED: &[&str] = &["fileinput", "peerdetect"];

/// iperf3 3.21's long options: its `longopts[]` table (iperf_api.c), in
/// order; src/cli/iperf3/table.rs starts with the same set (docs/protocols.md,
/// Option names).
#[rustfmt::skip]
const IPERF3_LONG: &[&str] = &[
    "port", "format", "interval", "daemon", "one-off", "verbose", "json", "json-stream",
    "json-stream-full-output", "version", "server", "client", "udp", "bitrate", "bandwidth",
    "server-bitrate-limit", "server-max-duration", "time", "bytes", "blockcount", "length", "parallel",
    "reverse", "bidir", "window", "bind", "bind-dev", "cport", "set-mss", "no-delay", "version4", "version6",
    "tos", "dscp", "extra-data", "flowlabel", "zerocopy", "omit", "file", "repeating-payload", "timestamps",
    "affinity", "title", "congestion", "linux-congestion", "sctp", "nstreams", "xbind", "pidfile", "logfile",
    "forceflush", "get-server-output", "udp-counters-64bit", "no-fq-socket-pacing", "dont-fragment",
    "skip-rx-copy", "username", "rsa-public-key-path", "rsa-private-key-path", "authorized-users-path",
    "time-skew-threshold", "use-pkcs1-padding", "fq-rate", "pacing-timer", "connect-timeout", "idle-timeout",
    "rcv-timeout", "snd-timeout", "cntl-ka", "mptcp", "gsro", "debug", "help",
];

/// iperf3's aliases: the same option under two names (glibc does not call
/// a prefix of both ambiguous).
const IPERF3_ALIASES: &[(&str, &str)] = &[("bitrate", "bandwidth"), ("congestion", "linux-congestion")];

/// The long options `iperf3 --help` (3.12, the installed one) lists; all are
/// 3.21 options.
#[rustfmt::skip]
const IPERF3_312_HELP: &[&str] = &[
    "affinity", "authorized-users-path", "bidir", "bind", "bind-dev", "bitrate", "blockcount", "bytes",
    "client", "congestion", "connect-timeout", "cport", "daemon", "debug", "dont-fragment", "dscp",
    "extra-data", "file", "flowlabel", "forceflush", "format", "fq-rate", "get-server-output", "help",
    "idle-timeout", "interval", "json", "length", "logfile", "no-delay", "nstreams", "omit", "one-off",
    "pacing-timer", "parallel", "pidfile", "port", "rcv-timeout", "repeating-payload", "reverse",
    "rsa-private-key-path", "rsa-public-key-path", "sctp", "server", "server-bitrate-limit", "set-mss",
    "snd-timeout", "time", "time-skew-threshold", "timestamps", "title", "tos", "udp", "udp-counters-64bit",
    "username", "verbose", "version", "version4", "version6", "window", "xbind", "zerocopy",
];

/// wirespeed's own long options in the iperf 2 dialect.
#[rustfmt::skip]
const IPERF2_EXTRAS: &[&str] = &[
    "enhancedreports", "linux-congestion", "allow", "deny", "json", "json-stream", "report", "live", "udp-search",
    "latency",    "max-loss", "max-tests", "dscp", "tcp-cca", "working-load", "rpm", "bounceback-request",
    "bounceback-reply", "sync-transfer-id", "ui", "server-bitrate-limit", "server-max-duration", "rcv-timeout",
    "db", "rpm-listen", "tls-cert", "tls-key", "ecn",
    // iperf 2.2's and master's.
    "tcp-tx-delay", "send-delay", "fq-rate-step", "fq-rate-step-interval", "working-load-cca", "omit",
    "set-rand-seed", "udp-l4s",
];

/// wirespeed's own long options in the iperf3 dialect.
#[rustfmt::skip]
const IPERF3_EXTRAS: &[&str] = &[
    "max-tests", "max-streams", "loopback", "live", "report", "udp-search", "latency", "max-loss", "metrics", "allow",
    "deny", "csv", "rpm", "ui", "db", "rpm-listen", "tls-cert", "tls-key", "cacert", "insecure",
    "quic-perf", "quic-perf-listen", "ecn", "quic",
];

/// What a peer program does with `--prefix`.
#[derive(Debug, PartialEq)]
enum Meaning<'a> {
    /// The option with this (full) name.
    Option(&'a str),
    /// Ambiguous between these.
    Ambiguous(Vec<&'a str>),
}

/// glibc's resolution of `prefix` among `names` (in table order), with
/// `aliases` naming the same option.
fn glibc_meaning<'a>(names: &[&'a str], aliases: &[(&str, &str)], prefix: &str) -> Option<Meaning<'a>> {
    if let Some(exact) = names.iter().find(|n| **n == prefix) {
        return Some(Meaning::Option(exact));
    }
    let same = |a: &str, b: &str| a == b || aliases.iter().any(|(x, y)| (a, b) == (x, y) || (a, b) == (y, x));
    let hits: Vec<&str> = names.iter().copied().filter(|n| n.starts_with(prefix)).collect();
    let first = *hits.first()?;
    let others: Vec<&str> = hits[1..].iter().copied().filter(|n| !same(first, n)).collect();
    if others.is_empty() {
        Some(Meaning::Option(first))
    } else {
        Some(Meaning::Ambiguous(std::iter::once(first).chain(others).collect()))
    }
}

/// Parses `--word` alone (with a value when the option needs one).
fn parse_long<R: OptionRow>(table: &[R], word: &str, arg: ArgKind) -> Result<Parsed<R::Key>, String> {
    let mut args = vec![format!("--{word}")];
    if arg == ArgKind::Required {
        args.push("1".into());
    }
    parse(table, &args)
}

fn row_named<'a, R: OptionRow>(table: &'a [R], name: &str) -> &'a R {
    table
        .iter()
        .find(|r| r.long() == Some(name))
        .unwrap_or_else(|| panic!("no row --{name}"))
}

/// Every prefix of every native name resolves as glibc resolves it among
/// the peer's own names: to the same option, or ambiguous between the same
/// options, listed in the same order (unless it is an addition's full name).
fn check_prefixes<R: OptionRow>(table: &[R], names: &[&str], aliases: &[(&str, &str)]) -> usize
where
    R::Key: std::fmt::Debug,
{
    let mut checked = 0;
    let prefixes: BTreeSet<&str> = names.iter().flat_map(|n| (1..=n.len()).map(move |i| &n[..i])).collect();
    for prefix in prefixes {
        let meaning = glibc_meaning(names, aliases, prefix).expect("a prefix of a name");
        match meaning {
            Meaning::Option(name) => {
                let want = row_named(table, name);
                let got = parse_long(table, prefix, want.arg())
                    .unwrap_or_else(|e| panic!("--{prefix} should be --{name}: {e}"));
                assert_eq!(got.opts[0].key, want.key(), "--{prefix} should be --{name}");
            }
            // An addition's full name is that addition, even where it is an
            // ambiguous abbreviation in the peer (which refused it): iperf
            // 2's `--report`, short for `--reportexclude` or `--reportstyle`.
            Meaning::Ambiguous(_) if extra_names(table).contains(prefix) => {
                let got = parse_long(table, prefix, row_named(table, prefix).arg()).unwrap();
                assert_eq!(got.opts[0].key, row_named(table, prefix).key());
            }
            Meaning::Ambiguous(list) => {
                let listed: Vec<String> = list.iter().map(|n| format!("'--{n}'")).collect();
                let want = format!("option '--{prefix}' is ambiguous; possibilities: {}", listed.join(" "));
                assert_eq!(parse_long(table, prefix, ArgKind::None).unwrap_err(), want);
            }
        }
        checked += 1;
    }
    checked
}

fn native_names<R: OptionRow>(table: &[R]) -> BTreeSet<&'static str> {
    table
        .iter()
        .filter(|r| r.tier() == Tier::Native)
        .filter_map(|r| r.long())
        .collect()
}

fn extra_names<R: OptionRow>(table: &[R]) -> BTreeSet<&'static str> {
    table
        .iter()
        .filter(|r| r.tier() == Tier::Extra)
        .filter_map(|r| r.long())
        .collect()
}

#[test]
fn the_iperf2_tables_native_rows_are_exactly_2_1_8s_long_options() {
    assert_eq!(IPERF2_LONG.len(), 82);
    assert_eq!(native_names(iperf2::TABLE), IPERF2_LONG.iter().copied().collect());
    assert_eq!(extra_names(iperf2::TABLE), IPERF2_EXTRAS.iter().copied().collect());
}

#[test]
fn every_iperf2_long_option_parses_in_full() {
    for name in IPERF2_LONG {
        let row = row_named(iperf2::TABLE, name);
        let p = parse_long(iperf2::TABLE, name, row.arg()).unwrap();
        assert_eq!(p.opts[0].key, row.key, "--{name}");
        assert_eq!(p.opts[0].spelled, format!("--{name}"));
    }
}

#[test]
fn every_iperf2_abbreviation_means_what_it_meant_in_2_1_8() {
    let n = check_prefixes(iperf2::TABLE, IPERF2_LONG, &[]);
    assert!(n > 500, "{n} prefixes");
    // The real program's words for an ambiguous one (2.1.8's bundled
    // getopt lists no possibilities; wirespeed adds them).
    let err = iperf2::parse_args_with_env(&["--re".to_string()], &|_| None).unwrap_err();
    assert!(
        err.line("iperf").starts_with("iperf: option `--re' is ambiguous"),
        "{}",
        err.line("iperf")
    );
}

#[test]
fn the_names_iperf2_help_lists_parse_as_they_do_in_2_1_8() {
    for name in IPERF2_HELP {
        let err = IPERF2_REFUSED.contains(name);
        let resolved = parse(iperf2::TABLE, &[format!("--{name}"), "1".into()]);
        match resolved {
            Ok(p) => {
                assert!(!err, "--{name} should be refused, as 2.1.8 refuses it");
                let want = glibc_meaning(IPERF2_LONG, &[], name);
                let Some(Meaning::Option(full)) = want else {
                    panic!("--{name}: {want:?}")
                };
                assert_eq!(p.opts[0].key, row_named(iperf2::TABLE, full).key, "--{name}");
            }
            Err(e) => assert_eq!(e, format!("unrecognized option '--{name}'"), "--{name}"),
        }
    }
    for name in IPERF2_REFUSED {
        let e = iperf2::parse_args_with_env(&["-c".into(), "h".into(), format!("--{name}")], &|_| None).unwrap_err();
        assert_eq!(e.line("iperf"), format!("iperf: unrecognized option `--{name}'"));
    }
    // -4 and -6 have no long form in 2.1.8.
    assert!(parse(iperf2::TABLE, &["--v4".to_string()]).is_err());
}

#[test]
fn the_iperf3_tables_native_rows_are_exactly_3_21s_long_options() {
    assert_eq!(IPERF3_LONG.len(), 73);
    assert_eq!(native_names(iperf3::TABLE), IPERF3_LONG.iter().copied().collect());
    assert_eq!(extra_names(iperf3::TABLE), IPERF3_EXTRAS.iter().copied().collect());
    for name in IPERF3_312_HELP {
        assert!(IPERF3_LONG.contains(name), "3.12's --{name} is not a 3.21 option");
    }
}

#[test]
fn every_iperf3_long_option_parses_in_full() {
    for name in IPERF3_LONG {
        let row = row_named(iperf3::TABLE, name);
        let p = parse_long(iperf3::TABLE, name, row.arg()).unwrap();
        assert_eq!(p.opts[0].key, row.key, "--{name}");
    }
}

#[test]
fn every_iperf3_abbreviation_means_what_it_means_in_3_21() {
    let n = check_prefixes(iperf3::TABLE, IPERF3_LONG, IPERF3_ALIASES);
    assert!(n > 500, "{n} prefixes");
    // Through the whole parser, in iperf3's words.
    let args: Vec<String> = ["-c", "h", "--b", "1"].iter().map(|s| s.to_string()).collect();
    assert_eq!(
        iperf3::parse_args(&args).unwrap_err().line(),
        "parameter error - option '--b' is ambiguous; possibilities: '--bitrate' '--bytes' '--blockcount' \
         '--bidir' '--bind' '--bind-dev'"
    );
}

#[test]
fn every_wirespeed_addition_parses_in_full() {
    for name in IPERF2_EXTRAS {
        let row = row_named(iperf2::TABLE, name);
        assert_eq!(row.tier, Tier::Extra);
        let p = parse_long(iperf2::TABLE, name, row.arg()).unwrap();
        assert_eq!(p.opts[0].key, row.key, "--{name}");
    }
    for name in IPERF3_EXTRAS {
        let row = row_named(iperf3::TABLE, name);
        assert_eq!(row.tier, Tier::Extra);
        let p = parse_long(iperf3::TABLE, name, row.arg()).unwrap();
        assert_eq!(p.opts[0].key, row.key, "--{name}");
    }
}

#[test]
fn additions_abbreviate_only_where_no_native_option_matches() {
    let key = |table: &[iperf3::Row], w: &str| parse(table, &[format!("--{w}"), "1".into()]).map(|p| p.opts[0].key);
    // iperf3: --lo is --logfile (not --loopback), --m is --mptcp, --rep is
    // --repeating-payload (not --report), --li is --linux-congestion.
    assert_eq!(key(iperf3::TABLE, "lo"), Ok(iperf3::Opt::Logfile));
    assert_eq!(key(iperf3::TABLE, "rep"), Ok(iperf3::Opt::RepeatingPayload));
    assert_eq!(key(iperf3::TABLE, "li"), Ok(iperf3::Opt::Congestion));
    assert_eq!(key(iperf3::TABLE, "loop"), Ok(iperf3::Opt::Loopback));
    assert_eq!(key(iperf3::TABLE, "repo"), Ok(iperf3::Opt::Report));
    assert_eq!(key(iperf3::TABLE, "liv"), Ok(iperf3::Opt::Live));
    assert_eq!(key(iperf3::TABLE, "udp-s"), Ok(iperf3::Opt::UdpSearch));
    let key2 = |w: &str| parse(iperf2::TABLE, &[format!("--{w}"), "1".into()]).map(|p| p.opts[0].key);
    // iperf 2: --a is --awdl, --e is --enhanced, --li is --listenport.
    assert_eq!(key2("a"), Ok(iperf2::Opt::Awdl));
    assert_eq!(key2("e"), Ok(iperf2::Opt::Enhanced));
    assert_eq!(key2("li"), Ok(iperf2::Opt::ListenPort));
    assert_eq!(key2("al"), Ok(iperf2::Opt::Allow));
    assert_eq!(key2("de"), Ok(iperf2::Opt::Deny));
    assert_eq!(key2("lin"), Ok(iperf2::Opt::Congestion));
}

/// The long names an installed program's `--help` lists, if it is installed.
fn help_names(program: &str) -> Option<BTreeSet<String>> {
    let out = Command::new(program).arg("--help").output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names = BTreeSet::new();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        if let Some(n) = word.strip_prefix("--")
            && !n.is_empty()
        {
            names.insert(n.to_string());
        }
    }
    Some(names)
}

#[test]
fn the_help_lists_above_are_the_installed_peers_help() {
    for (program, version, list) in [("iperf", "2.1.8", IPERF2_HELP), ("iperf3", "3.12", IPERF3_312_HELP)] {
        let Some(names) = help_names(program) else {
            eprintln!("NOTICE: {program} not installed; its --help is not compared");
            continue;
        };
        let v = Command::new(program).arg("-v").output().unwrap();
        let v = format!(
            "{}{}",
            String::from_utf8_lossy(&v.stdout),
            String::from_utf8_lossy(&v.stderr)
        );
        if !v.contains(version) {
            eprintln!("NOTICE: {program} is not {version}; its --help is not compared");
            continue;
        }
        let want: BTreeSet<String> = list.iter().map(|s| s.to_string()).collect();
        assert_eq!(names, want, "{program} --help");
    }
}

/// Where the installed iperf3 (3.12) and 3.21 agree on a prefix's
/// candidates, wirespeed's ambiguity line is the installed program's.
#[test]
fn ambiguous_abbreviations_read_as_the_installed_iperf3s() {
    let Some(names) = help_names("iperf3") else {
        eprintln!("NOTICE: iperf3 not installed; its ambiguity messages are not compared");
        return;
    };
    if !names.contains("bidir") {
        return;
    }
    let mut compared = 0;
    for prefix in ["re", "b", "bi", "f", "s", "c", "u", "r", "d", "t", "rsa-", "no", "p"] {
        let out = Command::new("iperf3").arg(format!("--{prefix}")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let Some(line) = stderr.lines().next().and_then(|l| l.strip_prefix("iperf3: ")) else {
            continue;
        };
        let ours = parse(iperf3::TABLE, &[format!("--{prefix}")]).unwrap_err();
        // 3.21 has options 3.12 lacks; compare where the lists agree.
        let theirs: BTreeSet<&str> = line.split('\'').filter(|w| w.starts_with("--")).collect();
        let mine: BTreeSet<&str> = ours.split('\'').filter(|w| w.starts_with("--")).collect();
        if theirs == mine {
            assert_eq!(ours, line, "--{prefix}");
            compared += 1;
        }
    }
    assert!(compared >= 5, "only {compared} compared");
}
