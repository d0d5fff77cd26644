//! The iperf 2 dialect's option table: each row is an option's spellings,
//! where it means something, and what it does to the configuration.

use super::apply::{bounceback, network, output, server, traffic};
use super::opt::{InfoOption, Opt, Row, Scope, Step};

/// What `row!` calls the place an option applies.
type Place = Scope;

use crate::apply as shared;
use crate::getopt::row;
use Step::{Apply as F, InfoOption as A, NotBuilt as No};

/// What 2.1.8 does with an option wirespeed has not built: "this option".
const NOT_YET: &str = "this option";

/// 2.1.8's option table (short string `146b:c:def:hi:l:mn:o:p:rst:uvw:x:y:zAB:CDF:H:IL:M:NP:RS:T:UVWXZ:`
/// and its long options, with their real spellings: its help's `--fileinput`
/// and `--udp-histogram` are not its options' names, `--stdin` and
/// `--udp-histogram` work as abbreviations), then wirespeed's.
#[rustfmt::skip]
pub const TABLE: &[Row] = &[
    //   tier key                   short long                     value     scope      step
    // -4 and -6 have no long form (2.1.8 has `v4`/`v6` under `#if 0`)
    row!(N, V4,                   '4', -,                        None,     Any,       F(network::v4)),
    row!(N, V6,                   '6', -,                        None,     Any,       F(network::v6)),
    // 2.1.8's long options, in its table's order
    row!(N, SingleClient,         '1', "singleclient",           None,     Any,       F(server::single_client)),
    row!(N, Bandwidth,            'b', "bandwidth",              Required, Any,       F(traffic::bandwidth)),
    row!(N, Client,               'c', "client",                 Required, Any,       F(network::client)),
    row!(N, Dual,                 'd', "dualtest",               None,     Client,    F(traffic::dual)),
    row!(N, Enhanced,             'e', "enhanced",               None,     Any,       F(output::enhanced)),
    row!(N, Format,               'f', "format",                 Required, Any,       F(output::format)),
    row!(N, Help,                 'h', "help",                   None,     Any,       A(InfoOption::Help)),
    row!(N, Interval,             'i', "interval",               Required, Any,       F(output::interval)),
    row!(N, Len,                  'l', "len",                    Required, Any,       F(traffic::len)),
    row!(N, PrintMss,             'm', "print_mss",              None,     Any,       F(output::print_mss)),
    row!(N, Num,                  'n', "num",                    Required, Client,    F(traffic::num)),
    row!(N, Output,               'o', "output",                 Required, Any,       F(output::output)),
    row!(N, Port,                 'p', "port",                   Required, Any,       F(network::port)),
    row!(N, Tradeoff,             'r', "tradeoff",               None,     Client,    F(traffic::tradeoff)),
    row!(N, Server,               's', "server",                 None,     Any,       F(server::server)),
    row!(N, Time,                 't', "time",                   Required, Any,       F(traffic::time)),
    row!(N, Udp,                  'u', "udp",                    None,     Any,       F(shared::udp)),
    row!(N, Version,              'v', "version",                None,     Any,       A(InfoOption::Version)),
    row!(N, Window,               'w', "window",                 Required, Any,       F(traffic::window)),
    row!(N, ReportExclude,        'x', "reportexclude",          Required, Any,       F(output::report_exclude)),
    row!(N, ReportStyle,          'y', "reportstyle",            Required, Any,       F(output::report_style)),
    row!(N, Realtime,             'z', "realtime",               None,     Any,       F(traffic::realtime)),
    row!(N, Awdl,                 'A', "awdl",                   None,     Any,       No(NOT_YET)),
    row!(N, Bind,                 'B', "bind",                   Required, Any,       F(network::bind)),
    row!(N, Bounceback,           -,   "bounceback",             Optional, Client,    F(bounceback::bounceback)),
    row!(N, BouncebackCongest,    -,   "bounceback-congest",     Optional, TcpClient, F(bounceback::working_load)),
    row!(N, BouncebackTxDelay,    -,   "bounceback-txdelay",     Required, TcpClient, F(bounceback::txdelay)),
    row!(N, BouncebackHold,       -,   "bounceback-hold",        Required, Client,    F(bounceback::hold)),
    row!(N, BouncebackNoQuickack, -,   "bounceback-no-quickack", None,     Client,    F(bounceback::no_quickack)),
    row!(N, BouncebackPeriod,     -,   "bounceback-period",      Required, Client,    F(bounceback::period)),
    row!(N, Compat,               'C', "compatibility",          None,     Any,       F(traffic::compat)),
    row!(N, Daemon,               'D', "daemon",                 None,     Any,       F(shared::daemon)),
    row!(N, FileInput,            'F', "file_input",             Required, Client,    F(traffic::file_input)),
    row!(N, SsmHost,              'H', "ssm-host",               Required, Any,       F(server::ssm_host)),
    row!(N, StdinInput,           'I', "stdin_input",            None,     Client,    F(traffic::stdin_input)),
    row!(N, Mss,                  'M', "mss",                    Required, Tcp,       F(traffic::mss)),
    row!(N, NoDelay,              'N', "nodelay",                None,     Tcp,       F(traffic::nodelay)),
    row!(N, ListenPort,           'L', "listenport",             Required, Client,    F(network::listen_port)),
    row!(N, Parallel,             'P', "parallel",               Required, Any,       F(traffic::parallel)),
    row!(N, Reverse,              'R', "reverse",                None,     Client,    F(shared::reverse)),
    row!(N, Tos,                  'S', "tos",                    Required, Any,       F(network::tos)),
    row!(N, Ttl,                  'T', "ttl",                    Required, Client,    F(network::ttl)),
    row!(N, SingleUdp,            'U', "single_udp",             None,     Any,       F(traffic::single_udp)),
    row!(N, Ipv6Domain,           'V', "ipv6_domain",            None,     Any,       F(network::v6)),
    row!(N, SuggestWin,           'W', "suggest_win_size",       None,     Tcp,       F(output::suggest_window)),
    row!(N, PeerDetect,           'X', "peer-detect",            None,     Client,    F(traffic::peer_detect)),
    row!(N, Congestion,           'Z', "tcp-congestion",         Required, Tcp,       F(shared::congestion)),
    row!(N, Histograms,           -,   "histograms",             Optional, Any,       F(output::histograms)),
    row!(N, HideIps,              -,   "hide-ips",               None,     Any,       F(output::hide_ips)),
    row!(N, Histograms,           -,   "udp-histograms",         Optional, Any,       F(output::histograms)),
    row!(N, L2Checks,             -,   "l2checks",               None,     Any,       No("layer 2 length checks")),
    row!(N, IncrDstip,            -,   "incr-dstip",             None,     Any,       No(NOT_YET)),
    row!(N, IncrSrcip,            -,   "incr-srcip",             None,     Any,       No(NOT_YET)),
    row!(N, IncrDstport,          -,   "incr-dstport",           None,     Client,    F(network::incr_dstport)),
    row!(N, IncrSrcport,          -,   "incr-srcport",           None,     Any,       No(NOT_YET)),
    row!(N, SumDstip,             -,   "sum-dstip",              None,     Any,       No(NOT_YET)),
    row!(N, TxStart,              -,   "txstart-time",           Required, Client,    F(traffic::txstart_time)),
    row!(N, TxDelay,              -,   "txdelay-time",           Required, Any,       No("scheduled starts")),
    row!(N, FqRate,               -,   "fq-rate",                Required, Client,    F(traffic::fq_rate)),
    row!(N, TripTimes,            -,   "trip-times",             None,     Client,    F(traffic::trip_times)),
    row!(N, NoUdpFin,             -,   "no-udp-fin",             None,     Client,    F(traffic::no_udp_fin)),
    row!(N, ConnectOnly,          -,   "connect-only",           Optional, TcpClient, F(network::connect_only)),
    row!(N, ConnectRetries,       -,   "connect-retries",        Required, TcpClient, F(network::connect_retries)),
    row!(N, NoConnectSync,        -,   "no-connect-sync",        None,     Any,       No(NOT_YET)),
    row!(N, FullDuplex,           -,   "full-duplex",            None,     Client,    F(traffic::full_duplex)),
    row!(N, Ipg,                  -,   "ipg",                    Required, Client,    F(traffic::ipg)),
    row!(N, Isochronous,          -,   "isochronous",            Optional, Client,    F(traffic::isochronous)),
    row!(N, SumOnly,              -,   "sum-only",               None,     Any,       F(output::sum_only)),
    row!(N, LocalOnly,            -,   "local-only",             Optional, Client,    F(network::local_only)),
    row!(N, NearCongestion,       -,   "near-congestion",        Optional, Any,       No(NOT_YET)),
    row!(N, PermitKey,            -,   "permit-key",             Optional, Any,       F(traffic::permit_key)),
    row!(N, PermitKeyTimeout,     -,   "permit-key-timeout",     Required, Any,       No(NOT_YET)),
    row!(N, BurstSize,            -,   "burst-size",             Required, TcpClient, F(traffic::burst_size)),
    row!(N, BurstPeriod,          -,   "burst-period",           Required, TcpClient, F(traffic::burst_period)),
    row!(N, TosOverride,          -,   "tos-override",           Required, Tcp,       F(server::tos_override)),
    row!(N, TcpRxWindowClamp,     -,   "tcp-rx-window-clamp",    Required, Tcp,       F(server::tcp_rx_window_clamp)),
    row!(N, TcpQuickack,          -,   "tcp-quickack",           None,     TcpClient, F(traffic::tcp_quickack)),
    row!(N, TcpWritePrefetch,     -,   "tcp-write-prefetch",     Required, TcpClient, F(traffic::tcp_write_prefetch)),
    row!(N, TcpWriteTimes,        -,   "tcp-write-times",        None,     Any,       No(NOT_YET)),
    row!(N, TapDev,               -,   "tap-dev",                Optional, Any,       No(NOT_YET)),
    row!(N, TunDev,               -,   "tun-dev",                Optional, Any,       No("tun devices")),
    row!(N, NumReportStructs,     -,   "NUM_REPORT_STRUCTS",     Required, Any,       No(NOT_YET)),
    // wirespeed additions: aliases, the access policy, output and the UDP search
    row!(X, Enhanced,             -,   "enhancedreports",        None,     Any,       F(output::enhanced)),
    row!(X, Congestion,           -,   "linux-congestion",       Required, Tcp,       F(shared::congestion)),
    // iperf 2.2's: --dscp (the TOS's upper six bits), --tcp-cca (-Z's other name)
    row!(X, Dscp,                 -,   "dscp",                   Required, Any,       F(network::dscp)),
    row!(X, TcpCca,               -,   "tcp-cca",                Required, Tcp,       F(traffic::tcp_cca)),
    row!(X, SyncTransferId,       -,   "sync-transfer-id",       None,     Client,    F(traffic::sync_transfer_id)),
    // iperf 2.2.1's (built with --enable-udp-l4s)
    row!(X, UdpL4s,               -,   "udp-l4s",                None,     Client,    F(traffic::udp_l4s)),
    row!(X, Ecn,                  -,   "ecn",                    Required, Client,    F(shared::ecn)),
    row!(X, WorkingLoad,          -,   "working-load",           Optional, Client,    F(bounceback::working_load)),
    row!(X, WorkingLoadCca,       -,   "working-load-cca",       Required, Client,    F(bounceback::working_load_cca)),
    row!(X, TcpTxDelay,           -,   "tcp-tx-delay",           Required, TcpClient, F(traffic::send_delay)),
    row!(X, FqRateStep,           -,   "fq-rate-step",           Required, TcpClient, F(traffic::fq_rate_step)),
    row!(X, FqRateStepInterval,   -,   "fq-rate-step-interval",  Required, TcpClient, F(traffic::fq_rate_step_interval)),
    // iperf 2 master's (2.2.n): --send-delay (--tcp-tx-delay's new name), --omit, --set-rand-seed
    row!(X, SendDelay,            -,   "send-delay",             Required, Client,    F(traffic::send_delay)),
    row!(X, Omit,                 -,   "omit",                   Required, Client,    F(traffic::omit)),
    row!(X, SetRandSeed,          -,   "set-rand-seed",          Required, Client,    F(traffic::set_rand_seed)),
    row!(X, BouncebackRequest,    -,   "bounceback-request",     Required, TcpClient, F(bounceback::request)),
    row!(X, BouncebackReply,      -,   "bounceback-reply",       Required, TcpClient, F(bounceback::reply)),
    row!(X, Allow,                -,   "allow",                  Required, Any,       F(shared::allow)),
    row!(X, Deny,                 -,   "deny",                   Required, Any,       F(shared::deny)),
    row!(X, MaxTests,             -,   "max-tests",              Required, Any,       F(server::max_tests)),
    // the iperf3 server's limits, which its guards hold iperf 2 clients to
    row!(X, ServerBitrateLimit,   -,   "server-bitrate-limit",   Required, Any,       F(server::bitrate_limit)),
    row!(X, ServerMaxDuration,    -,   "server-max-duration",    Required, Any,       F(server::max_duration)),
    row!(X, RcvTimeout,           -,   "rcv-timeout",            Required, Any,       F(server::rcv_timeout)),
    row!(X, Ui,                   -,   "ui",                     Required, Any,       F(shared::ui)),
    row!(X, Db,                   -,   "db",                     Required, Any,       F(shared::db)),
    row!(X, RpmListen,            -,   "rpm-listen",             Required, Any,       F(shared::rpm_listen)),
    row!(X, TlsCert,              -,   "tls-cert",               Required, Any,       F(shared::tls_cert)),
    row!(X, TlsKey,               -,   "tls-key",                Required, Any,       F(shared::tls_key)),
    row!(X, Json,                 'J', "json",                   None,     Any,       F(shared::json)),
    row!(X, JsonStream,           -,   "json-stream",            None,     Any,       F(shared::json_stream)),
    row!(X, Report,               -,   "report",                 Required, Any,       F(shared::report)),
    row!(X, Live,                 -,   "live",                   None,     Client,    F(shared::live)),
    row!(X, UdpSearch,            -,   "udp-search",             None,     Client,    F(shared::udp_search)),
    row!(X, MaxLoss,              -,   "max-loss",               Required, Client,    F(shared::max_loss)),
    row!(X, Latency,              -,   "latency",                Optional, Client,    F(shared::latency)),
    row!(X, Rpm,                  -,   "rpm",                    Optional, TcpClient, F(traffic::rpm)),
];

/// Whether an option of [`TABLE`] works (rather than being refused as not
/// built yet): what `--help`, the man page and the completions cover.
pub fn available(o: Opt) -> bool {
    TABLE
        .iter()
        .filter(|r| r.key == o)
        .all(|r| !matches!(r.step, Step::NotBuilt(_)))
}
