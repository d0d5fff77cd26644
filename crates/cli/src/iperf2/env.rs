//! The environment variables 2.1.8 reads before its command line.

use super::opt::Opt;
use super::table::TABLE;
use crate::getopt::{ArgKind, Occurrence};

/// Environment variables 2.1.8 honours, read before the command line:
/// `(variable, option)`. A flag variable takes effect when set to anything.
pub const ENV: &[(&str, Opt)] = &[
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

/// The occurrences the environment gives, in [`ENV`]'s order, each
/// spelled `$VARIABLE` for messages; `env` looks a variable up.
pub(crate) fn occurrences(env: &dyn Fn(&str) -> Option<String>) -> Vec<Occurrence<Opt>> {
    let mut opts = Vec::new();
    for (var, key) in ENV {
        if let Some(v) = env(var) {
            let row = TABLE
                .iter()
                .position(|s| s.key == *key)
                .expect("env options are in the table");
            opts.push(Occurrence {
                key: *key,
                row,
                value: (TABLE[row].arg != ArgKind::None).then_some(v),
                spelled: format!("${var}"),
            });
        }
    }
    opts
}
