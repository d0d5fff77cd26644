//! wirespeed's own options in each dialect: what configuration they give,
//! and what they refuse. iperf 2: `-J`, `--json-stream`, `--report`,
//! `--live`, `-W`, `--udp-search`, `--max-loss`; iperf3: `--csv`.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{json, run, wirespeed};
use wirespeed::cli::{iperf2, iperf3};
use wirespeed::config::{EndCondition, Family, Protocol, TestConfig};

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// An iperf 2 command line with `env` as the environment: the
/// configuration and the warnings, or the error line.
fn iperf2_env(s: &str, env: &[(&str, &str)]) -> Result<(TestConfig, Vec<String>), String> {
    let lookup = |k: &str| env.iter().find(|(a, _)| *a == k).map(|(_, b)| b.to_string());
    match iperf2::parse_args_with_env(&words(s), &lookup) {
        Ok(iperf2::Command::Run(c, w)) => Ok((*c, w)),
        Ok(other) => panic!("{s}: {other:?}"),
        Err(e) => Err(e.line("iperf")),
    }
}

fn iperf2(s: &str) -> TestConfig {
    iperf2_env(s, &[]).unwrap_or_else(|e| panic!("{s}: {e}")).0
}

fn iperf2_err(s: &str) -> String {
    iperf2_env(s, &[]).map(|_| ()).unwrap_err()
}

fn iperf3(s: &str) -> Result<TestConfig, String> {
    match iperf3::parse_args(&words(s)) {
        Ok(iperf3::Command::Run(c, _)) => Ok(*c),
        Ok(other) => panic!("{s}: {other:?}"),
        Err(e) => Err(e.line()),
    }
}

#[test]
fn iperf2_json_prints_one_document() {
    for cmd in ["-c h -J", "-c h --json", "-s -J"] {
        let c = iperf2(cmd);
        assert!(c.output.json && !c.output.json_stream, "{cmd}");
    }
    assert!(!iperf2("-c h").output.json);
}

#[test]
fn iperf2_json_stream_implies_json() {
    let c = iperf2("-c h --json-stream");
    assert!(c.output.json && c.output.json_stream);
}

#[test]
fn iperf2_json_and_csv_cannot_share_standard_output() {
    let line =
        "ERROR: -J/--json-stream and -y C cannot be used together: JSON and CSV rows would share standard output";
    assert_eq!(iperf2_err("-c h -J -y C"), line);
    assert_eq!(iperf2_err("-s --json-stream -y c"), line);
    assert_eq!(iperf2_env("-c h -J", &[("IPERF_REPORTSTYLE", "C")]).unwrap_err(), line);
    assert!(iperf2("-c h -y C").output.csv);
}

#[test]
fn iperf2_report_names_the_html_file() {
    assert_eq!(
        iperf2("-c h --report run.html").output.html_report,
        Some(PathBuf::from("run.html"))
    );
    assert_eq!(
        iperf2("-s --report srv.html").output.html_report,
        Some(PathBuf::from("srv.html"))
    );
    assert_eq!(iperf2("-c h").output.html_report, None);
}

#[test]
fn iperf2_live_is_a_client_option() {
    assert!(iperf2("-c h --live").output.live);
    let (c, w) = iperf2_env("-s --live", &[]).unwrap();
    assert!(!c.output.live);
    assert_eq!(
        w,
        vec!["WARNING: option --live is not valid for server mode".to_string()]
    );
}

#[test]
fn iperf2_capital_w_asks_for_the_window_advice() {
    assert!(iperf2("-c h -W").output.window_advice);
    assert!(iperf2("-c h --suggest_win_size").output.window_advice);
    assert!(iperf2("-s -W").output.window_advice);
    let (c, _) = iperf2_env("-c h", &[("IPERF_SUGGEST_WIN_SIZE", "0")]).unwrap();
    assert!(c.output.window_advice, "set to anything");
    assert!(!iperf2("-c h").output.window_advice);
    // -V stays 2.1.8's IPv6 domain, not iperf3's verbose.
    let c = iperf2("-c h -V");
    assert_eq!(c.net.family, Family::V6);
    assert!(!c.output.window_advice && !c.output.verbose);
}

#[test]
fn iperf2_udp_search_is_the_iperf3_dialects_search() {
    let c = iperf2("-c h --udp-search");
    let search = c.search.expect("a search");
    assert_eq!(search.max_loss_percent, wirespeed::modes::search::DEFAULT_MAX_LOSS);
    assert_eq!(c.params.protocol, Protocol::Udp, "-u is implied");
    assert_eq!(
        c.params.end,
        EndCondition::Time(wirespeed::modes::search::DEFAULT_PROBE)
    );
    assert_eq!(c.params.rate, 0, "without -b the search starts at its own rate");
    assert_eq!(c.params.block_len, Some(iperf2::DEFAULT_UDP_LEN));
    let c = iperf2("-c h --udp-search --max-loss 1.5% -t 5 -b 10m -P 2");
    assert_eq!(c.search.unwrap().max_loss_percent, 1.5);
    assert_eq!(c.params.end, EndCondition::Time(Duration::from_secs(5)));
    assert_eq!((c.params.rate, c.params.streams), (10_000_000, 2));
    assert!(iperf2("-c h --udp-search -R").search.is_some());
    assert_eq!(iperf2("-c h").search, None);
}

#[test]
fn iperf2_udp_search_refuses_what_it_cannot_honour() {
    let no = |cmd: &str, what: &str| {
        assert_eq!(
            iperf2_err(cmd),
            format!("ERROR: --udp-search cannot be used with {what}"),
            "{cmd}"
        );
    };
    no("-c h --udp-search -i 1", "-i (it prints one line per probe)");
    no("-c h --udp-search -n 10M", "-n (each probe runs for -t seconds)");
    no(
        "-c h --udp-search -b 100pps",
        "a packet rate (-b Npps); give the start rate in bits/s",
    );
    // The search's HTML report charts its probes.
    assert!(iperf2("-c h --udp-search --report r.html").output.html_report.is_some());
    no("-c h --udp-search --live", "--live");
    no(
        "-c h --udp-search -d",
        "-d, -r or --full-duplex (it measures one direction)",
    );
    no(
        "-c h --udp-search --full-duplex",
        "-d, -r or --full-duplex (it measures one direction)",
    );
    no(
        "-c h --udp-search --no-udp-fin",
        "--no-udp-fin (each probe needs the server's report)",
    );
    assert_eq!(
        iperf2_err("-c h --max-loss 1"),
        "ERROR: --max-loss is a setting of --udp-search"
    );
    assert_eq!(
        iperf2_err("-c h --udp-search --max-loss 100"),
        "ERROR: invalid --max-loss '100': a percentage from 0 up to (not including) 100"
    );
    // A TCP option with the (implied) UDP, as with -u.
    assert_eq!(
        iperf2_err("-c h --udp-search -N"),
        "ERROR: option -N is for TCP, not with -u UDP"
    );
}

#[test]
fn iperf2_udp_search_on_a_server_is_warned_about_and_dropped() {
    let (c, w) = iperf2_env("-s --udp-search --max-loss 1", &[]).unwrap();
    assert_eq!(c.search, None);
    assert_eq!(c.params.protocol, Protocol::Tcp);
    assert_eq!(
        w,
        vec![
            "WARNING: option --udp-search is not valid for server mode".to_string(),
            "WARNING: option --max-loss is not valid for server mode".to_string(),
        ]
    );
}

#[test]
fn iperf2_additions_abbreviate_where_2_1_8_has_nothing() {
    assert!(iperf2("-c h --json-s").output.json_stream);
    assert!(iperf2("-c h --liv").output.live);
    assert_eq!(
        iperf2_err("-c h --j"),
        "iperf: option `--j' is ambiguous; possibilities: `--json' `--json-stream'"
    );
    // 2.1.8's own abbreviations are untouched: --rep, --li.
    assert!(iperf2_err("-c h --rep x").contains("ambiguous; possibilities: `--reportexclude' `--reportstyle'"));
    assert_eq!(iperf2("-c h -r --li 6000").iperf2.listen_port, Some(6000));
}

#[test]
fn iperf3_csv_asks_for_iperf2_rows() {
    assert!(iperf3("-c h --csv").unwrap().output.csv);
    assert!(iperf3("-s --csv").unwrap().output.csv);
    assert!(iperf3("-c h --cs").unwrap().output.csv);
    assert!(!iperf3("-c h").unwrap().output.csv);
}

#[test]
fn iperf3_csv_and_json_cannot_share_standard_output() {
    let line = "parameter error - --csv and -J/--json-stream cannot be used together: CSV rows and JSON would \
                share standard output";
    assert_eq!(iperf3("-c h --csv -J").unwrap_err(), line);
    assert_eq!(iperf3("-s --json-stream --csv").unwrap_err(), line);
}

#[test]
fn the_refusals_are_one_line_and_exit_1() {
    let t = Duration::from_secs(30);
    let r = run(&wirespeed(), &["--iperf2", "-c", "127.0.0.1", "-J", "-y", "C"], t);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stdout, "");
    assert_eq!(
        r.stderr,
        "ERROR: -J/--json-stream and -y C cannot be used together: JSON and CSV rows would share standard output\n"
    );
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "--csv", "-t", "1", "--json"], t);
    assert_eq!(r.code, Some(1));
    // With -J the one line is the JSON document's "error", as for every
    // refusal of a -J command line.
    assert!(
        json(&r.stdout)["error"]
            .as_str()
            .unwrap()
            .starts_with("--csv and -J/--json-stream cannot be used together")
    );
}

#[test]
fn the_help_texts_list_the_additions() {
    let h2 = iperf2::long_usage("iperf");
    for opt in [
        "-J, --json",
        "--json-stream",
        "--report",
        "--live",
        "--udp-search",
        "--max-loss",
        "-W, --suggest_win_size",
    ] {
        assert!(h2.contains(opt), "iperf 2 help lacks {opt}");
    }
    assert!(h2.contains("wirespeed additions:"));
    assert!(iperf3::long_usage("wirespeed").contains("  --csv "));
}

/// The manual's iperf 2 section documents every option that dialect
/// accepts (tests/loopback/manual.rs does the same for the iperf3 options).
#[test]
fn the_manual_documents_every_iperf2_option() {
    let page =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man/wirespeed.1")).unwrap();
    let start = page.find(".SH IPERF 2 PERSONALITY").unwrap();
    let end = page[start..].find(".SH SIGNALS AND LIMITS").unwrap() + start;
    let section = &page[start..end];
    for o in iperf2::TABLE.iter().filter(|o| iperf2::available(o.key)) {
        if let Some(l) = o.long {
            let roff = format!("\\-\\-{}", l.replace('-', "\\-"));
            assert!(section.contains(&roff), "the iperf 2 section lacks --{l}");
        }
        if let Some(c) = o.short {
            assert!(section.contains(&format!("\\-{c}")), "the iperf 2 section lacks -{c}");
        }
    }
    assert!(page.contains("\\-\\-csv"));
}
