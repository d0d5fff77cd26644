//! The iperf3 dialect's option table: each row is an option's spellings,
//! where it may be used, and what it does to the configuration.

use super::apply::{auth, extras, network, output, server, test};
use super::opt::{InfoOption, Opt, RoleMark, Row, Step};

/// What `row!` calls the place an option applies.
type Place = RoleMark;

use crate::apply as shared;
use crate::getopt::row;
use Step::{Apply as F, InfoOption as A, Refuse as R};

/// The option table: iperf3 3.21's options, then wirespeed's.
#[rustfmt::skip]
pub const TABLE: &[Row] = &[
    //   tier key                short long                       value     role    step
    // iperf3 3.21's options, in its table's order (the order glibc lists an
    // ambiguous abbreviation's possibilities in)
    row!(N, Port,               'p', "port",                    Required, Both,   F(network::port)),
    row!(N, Format,             'f', "format",                  Required, Both,   F(output::format)),
    row!(N, Interval,           'i', "interval",                Required, Both,   F(output::interval)),
    row!(N, Daemon,             'D', "daemon",                  None,     Server, F(shared::daemon)),
    row!(N, OneOff,             '1', "one-off",                 None,     Server, F(server::one_off)),
    row!(N, Verbose,            'V', "verbose",                 None,     Both,   F(output::verbose)),
    row!(N, Json,               'J', "json",                    None,     Both,   F(shared::json)),
    row!(N, JsonStream,         -,   "json-stream",             None,     Both,   F(shared::json_stream)),
    row!(N, JsonStreamFull,     -,   "json-stream-full-output", None,     Both,   F(output::json_stream_full)),
    row!(N, Version,            'v', "version",                 None,     Both,   A(InfoOption::Version)),
    row!(N, Server,             's', "server",                  None,     Server, F(server::server)),
    row!(N, Client,             'c', "client",                  Required, Client, F(network::client)),
    row!(N, Udp,                'u', "udp",                     None,     Client, F(shared::udp)),
    row!(N, Bitrate,            'b', "bitrate",                 Required, Client, F(test::bitrate)),
    row!(N, Bitrate,            -,   "bandwidth",               Required, Client, F(test::bitrate)),
    row!(N, ServerBitrateLimit, -,   "server-bitrate-limit",    Required, Server, F(server::bitrate_limit)),
    row!(N, ServerMaxDuration,  -,   "server-max-duration",     Required, Server, F(server::max_duration)),
    row!(N, Time,               't', "time",                    Required, Client, F(test::time)),
    row!(N, Bytes,              'n', "bytes",                   Required, Client, F(test::bytes)),
    row!(N, Blockcount,         'k', "blockcount",              Required, Client, F(test::blockcount)),
    row!(N, Length,             'l', "length",                  Required, Client, F(test::length)),
    row!(N, Parallel,           'P', "parallel",                Required, Client, F(test::parallel)),
    row!(N, Reverse,            'R', "reverse",                 None,     Client, F(shared::reverse)),
    row!(N, Bidir,              -,   "bidir",                   None,     Client, F(test::bidir)),
    row!(N, Window,             'w', "window",                  Required, Client, F(test::window)),
    row!(N, Bind,               'B', "bind",                    Required, Both,   F(network::bind)),
    row!(N, BindDev,            -,   "bind-dev",                Required, Both,   F(network::bind_dev)),
    row!(N, Cport,              -,   "cport",                   Required, Both,   F(network::cport)),
    row!(N, SetMss,             'M', "set-mss",                 Required, Client, F(test::set_mss)),
    row!(N, NoDelay,            'N', "no-delay",                None,     Client, F(test::no_delay)),
    row!(N, Version4,           '4', "version4",                None,     Both,   F(network::version4)),
    row!(N, Version6,           '6', "version6",                None,     Both,   F(network::version6)),
    row!(N, Tos,                'S', "tos",                     Required, Client, F(test::tos)),
    row!(N, Dscp,               -,   "dscp",                    Required, Client, F(test::dscp)),
    row!(N, ExtraData,          -,   "extra-data",              Required, Client, F(test::extra_data)),
    row!(N, Flowlabel,          'L', "flowlabel",               Required, Client, F(test::flowlabel)),
    row!(N, Zerocopy,           'Z', "zerocopy",                None,     Client, F(test::zerocopy)),
    row!(N, Omit,               'O', "omit",                    Required, Client, F(test::omit)),
    row!(N, File,               'F', "file",                    Required, Both,   F(test::file)),
    row!(N, RepeatingPayload,   -,   "repeating-payload",       None,     Client, F(test::repeating_payload)),
    row!(N, Timestamps,         -,   "timestamps",              Optional, Both,   F(output::timestamps)),
    row!(N, Affinity,           'A', "affinity",                Required, Both,   F(network::affinity)),
    row!(N, Title,              'T', "title",                   Required, Client, F(output::title)),
    row!(N, Congestion,         'C', "congestion",              Required, Client, F(shared::congestion)),
    row!(N, Congestion,         -,   "linux-congestion",        Required, Client, F(shared::congestion)),
    row!(N, Sctp,               -,   "sctp",                    None,     Client, R(wirespeed_core::net::sctp_unavailable)),
    row!(N, Nstreams,           -,   "nstreams",                Required, Client, R(wirespeed_core::net::sctp_unavailable)),
    row!(N, Xbind,              'X', "xbind",                   Required, Both,   R(wirespeed_core::net::sctp_unavailable)),
    row!(N, Pidfile,            'I', "pidfile",                 Required, Both,   F(server::pidfile)),
    row!(N, Logfile,            -,   "logfile",                 Required, Both,   F(output::logfile)),
    row!(N, ForceFlush,         -,   "forceflush",              None,     Both,   F(output::forceflush)),
    row!(N, GetServerOutput,    -,   "get-server-output",       None,     Client, F(test::get_server_output)),
    row!(N, UdpCounters64,      -,   "udp-counters-64bit",      None,     Client, F(test::udp_counters_64bit)),
    row!(N, NoFqSocketPacing,   -,   "no-fq-socket-pacing",     None,     Client, F(test::no_fq_socket_pacing)),
    row!(N, DontFragment,       -,   "dont-fragment",           None,     Client, F(test::dont_fragment)),
    row!(N, SkipRxCopy,         -,   "skip-rx-copy",            None,     Client, F(test::skip_rx_copy)),
    row!(N, Username,           -,   "username",                Required, Client, F(auth::username)),
    row!(N, RsaPublicKey,       -,   "rsa-public-key-path",     Required, Client, F(auth::rsa_public_key)),
    row!(N, RsaPrivateKey,      -,   "rsa-private-key-path",    Required, Server, F(auth::rsa_private_key)),
    row!(N, AuthorizedUsers,    -,   "authorized-users-path",   Required, Server, F(auth::authorized_users)),
    row!(N, TimeSkew,           -,   "time-skew-threshold",     Required, Server, F(auth::time_skew)),
    row!(N, UsePkcs1,           -,   "use-pkcs1-padding",       None,     Both,   F(auth::use_pkcs1)),
    row!(N, FqRate,             -,   "fq-rate",                 Required, Client, F(test::fq_rate)),
    row!(N, PacingTimer,        -,   "pacing-timer",            Required, Client, F(test::pacing_timer)),
    row!(N, ConnectTimeout,     -,   "connect-timeout",         Required, Client, F(network::connect_timeout)),
    row!(N, IdleTimeout,        -,   "idle-timeout",            Required, Server, F(server::idle_timeout)),
    row!(N, RcvTimeout,         -,   "rcv-timeout",             Required, Both,   F(network::rcv_timeout)),
    row!(N, SndTimeout,         -,   "snd-timeout",             Required, Both,   F(network::snd_timeout)),
    row!(N, CntlKa,             -,   "cntl-ka",                 Optional, Both,   F(network::cntl_ka)),
    row!(N, Mptcp,              'm', "mptcp",                   None,     Both,   F(test::mptcp)),
    row!(N, Gsro,               -,   "gsro",                    None,     Client, F(test::gsro)),
    row!(N, Debug,              'd', "debug",                   Optional, Both,   F(output::debug)),
    row!(N, Help,               'h', "help",                    None,     Both,   A(InfoOption::Help)),
    // wirespeed additions
    row!(X, MaxTests,           -,   "max-tests",               Required, Server, F(server::max_tests)),
    row!(X, MaxStreams,         -,   "max-streams",             Required, Server, F(server::max_streams)),
    row!(X, Loopback,           -,   "loopback",                None,     Client, F(extras::loopback)),
    row!(X, Live,               -,   "live",                    None,     Client, F(shared::live)),
    row!(X, Report,             -,   "report",                  Required, Both,   F(shared::report)),
    row!(X, UdpSearch,          -,   "udp-search",              None,     Client, F(shared::udp_search)),
    row!(X, Latency,            -,   "latency",                 Optional, Client, F(shared::latency)),
    row!(X, Rpm,                -,   "rpm",                     Optional, Client, F(extras::rpm)),
    row!(X, Cacert,             -,   "cacert",                  Required, Client, F(extras::cacert)),
    row!(X, Insecure,           -,   "insecure",                None,     Client, F(extras::insecure)),
    row!(X, MaxLoss,            -,   "max-loss",                Required, Client, F(shared::max_loss)),
    row!(X, Metrics,            -,   "metrics",                 Required, Server, F(extras::metrics)),
    row!(X, Ui,                 -,   "ui",                      Required, Server, F(shared::ui)),
    row!(X, Db,                 -,   "db",                      Required, Server, F(shared::db)),
    row!(X, RpmListen,          -,   "rpm-listen",              Required, Server, F(shared::rpm_listen)),
    row!(X, TlsCert,            -,   "tls-cert",                Required, Server, F(shared::tls_cert)),
    row!(X, TlsKey,             -,   "tls-key",                 Required, Server, F(shared::tls_key)),
    row!(X, QuicPerf,           -,   "quic-perf",               Required, Client, F(extras::quic_perf)),
    row!(X, QuicPerfListen,     -,   "quic-perf-listen",        Required, Server, F(extras::quic_perf_listen)),
    row!(X, Quic,               'q', "quic",                    None,     Client, F(test::quic)),
    row!(X, Allow,              -,   "allow",                   Required, Server, F(shared::allow)),
    row!(X, Deny,               -,   "deny",                    Required, Server, F(shared::deny)),
    row!(X, Csv,                -,   "csv",                     None,     Both,   F(extras::csv)),
    row!(X, Ecn,                -,   "ecn",                     Required, Client, F(shared::ecn)),
];

/// Whether an option of [`TABLE`] works (rather than being refused as not
/// built yet): what `--help`, the man page and the completions must cover.
pub fn available(o: Opt) -> bool {
    TABLE
        .iter()
        .filter(|r| r.key == o)
        .all(|r| !matches!(r.step, Step::Refuse(_)))
}
