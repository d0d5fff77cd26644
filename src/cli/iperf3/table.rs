//! The iperf3 dialect's option table: each row is an option's spellings,
//! where it may be used, and what it does to the configuration.

use super::apply::{auth, extras, network, output, server, test};
use super::state::ParseState;
use crate::cli::getopt::{ArgKind, Occurrence, OptionRow};
use crate::error::Error;

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

/// Where an option may be used; iperf3 checks this after all options are
/// read ("some option you are trying to set is client only").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleMark {
    /// Client and server.
    Both,
    /// Client only.
    Client,
    /// Server only.
    Server,
}

/// Applies one occurrence of an option to the configuration being built.
pub type ApplyFn = fn(&mut ParseState, &Occurrence<Opt>) -> Result<(), Error>;

/// What an option does.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// Sets something in the configuration.
    Apply(ApplyFn),
    /// Ends parsing with this answer, whatever else is given (`-h`, `-v`).
    Answer(Answer),
    /// A feature not built yet (or missing from this kernel): the option is
    /// refused with this error, never ignored.
    Refuse(fn() -> Error),
}

/// An option that answers the command line on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `-h`: the long usage.
    Help,
    /// `-v`: the version.
    Version,
}

/// One option of the table.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The option's identity (aliases share it).
    pub key: Opt,
    /// Short letter, if any.
    pub short: Option<char>,
    /// Long name without the leading dashes, if any.
    pub long: Option<&'static str>,
    /// Value rule.
    pub arg: ArgKind,
    /// Where it may be used.
    pub role: RoleMark,
    /// What it does.
    pub step: Step,
}

impl OptionRow for Row {
    type Key = Opt;
    fn key(&self) -> Opt {
        self.key
    }
    fn short(&self) -> Option<char> {
        self.short
    }
    fn long(&self) -> Option<&'static str> {
        self.long
    }
    fn arg(&self) -> ArgKind {
        self.arg
    }
}

macro_rules! row {
    ($k:ident, $s:tt, $l:tt, $a:ident, $r:ident, $step:expr) => {
        Row {
            key: Opt::$k,
            short: row!(@opt $s),
            long: row!(@opt $l),
            arg: ArgKind::$a,
            role: RoleMark::$r,
            step: $step,
        }
    };
    (@opt -) => {
        None
    };
    (@opt $v:literal) => {
        Some($v)
    };
}

use Step::{Answer as A, Apply as F, Refuse as R};

/// The option table (iperf3 master's, in its order, then wirespeed's).
#[rustfmt::skip]
pub const TABLE: &[Row] = &[
    //   key                 short long                       value     role    step
    row!(Port,               'p', "port",                    Required, Both,   F(network::port)),
    row!(Format,             'f', "format",                  Required, Both,   F(output::format)),
    row!(Interval,           'i', "interval",                Required, Both,   F(output::interval)),
    row!(Pidfile,            'I', "pidfile",                 Required, Both,   F(server::pidfile)),
    row!(File,               'F', "file",                    Required, Both,   F(test::file)),
    row!(Affinity,           'A', "affinity",                Required, Both,   F(network::affinity)),
    row!(Bind,               'B', "bind",                    Required, Both,   F(network::bind)),
    row!(BindDev,            -,   "bind-dev",                Required, Both,   F(network::bind_dev)),
    row!(Verbose,            'V', "verbose",                 None,     Both,   F(output::verbose)),
    row!(Json,               'J', "json",                    None,     Both,   F(output::json)),
    row!(JsonStream,         -,   "json-stream",             None,     Both,   F(output::json_stream)),
    row!(JsonStreamFull,     -,   "json-stream-full-output", None,     Both,   F(output::json_stream_full)),
    row!(Logfile,            -,   "logfile",                 Required, Both,   F(output::logfile)),
    row!(ForceFlush,         -,   "forceflush",              None,     Both,   F(output::forceflush)),
    row!(Timestamps,         -,   "timestamps",              Optional, Both,   F(output::timestamps)),
    row!(RcvTimeout,         -,   "rcv-timeout",             Required, Both,   F(network::rcv_timeout)),
    row!(SndTimeout,         -,   "snd-timeout",             Required, Both,   F(network::snd_timeout)),
    row!(CntlKa,             -,   "cntl-ka",                 Optional, Both,   F(network::cntl_ka)),
    row!(Mptcp,              'm', "mptcp",                   None,     Both,   F(test::mptcp)),
    row!(Debug,              'd', "debug",                   Optional, Both,   F(output::debug)),
    row!(Version,            'v', "version",                 None,     Both,   A(Answer::Version)),
    row!(Help,               'h', "help",                    None,     Both,   A(Answer::Help)),
    row!(Server,             's', "server",                  None,     Server, F(server::server)),
    row!(Daemon,             'D', "daemon",                  None,     Server, F(server::daemon)),
    row!(OneOff,             '1', "one-off",                 None,     Server, F(server::one_off)),
    row!(ServerBitrateLimit, -,   "server-bitrate-limit",    Required, Server, F(server::bitrate_limit)),
    row!(IdleTimeout,        -,   "idle-timeout",            Required, Server, F(server::idle_timeout)),
    row!(ServerMaxDuration,  -,   "server-max-duration",     Required, Server, F(server::max_duration)),
    row!(RsaPrivateKey,      -,   "rsa-private-key-path",    Required, Server, F(auth::rsa_private_key)),
    row!(AuthorizedUsers,    -,   "authorized-users-path",   Required, Server, F(auth::authorized_users)),
    row!(TimeSkew,           -,   "time-skew-threshold",     Required, Server, F(auth::time_skew)),
    row!(UsePkcs1,           -,   "use-pkcs1-padding",       None,     Both,   F(auth::use_pkcs1)),
    row!(MaxTests,           -,   "max-tests",               Required, Server, F(server::max_tests)),
    row!(MaxStreams,         -,   "max-streams",             Required, Server, F(server::max_streams)),
    row!(Client,             'c', "client",                  Required, Client, F(network::client)),
    row!(Sctp,               -,   "sctp",                    None,     Client, R(crate::net::sctp_unavailable)),
    row!(Xbind,              'X', "xbind",                   Required, Both,   R(crate::net::sctp_unavailable)),
    row!(Nstreams,           -,   "nstreams",                Required, Client, R(crate::net::sctp_unavailable)),
    row!(Udp,                'u', "udp",                     None,     Client, F(test::udp)),
    row!(ConnectTimeout,     -,   "connect-timeout",         Required, Client, F(network::connect_timeout)),
    row!(Bitrate,            'b', "bitrate",                 Required, Client, F(test::bitrate)),
    row!(Bitrate,            -,   "bandwidth",               Required, Client, F(test::bitrate)),
    row!(PacingTimer,        -,   "pacing-timer",            Required, Client, F(test::pacing_timer)),
    row!(FqRate,             -,   "fq-rate",                 Required, Client, F(test::fq_rate)),
    row!(NoFqSocketPacing,   -,   "no-fq-socket-pacing",     None,     Client, F(test::no_fq_socket_pacing)),
    row!(Time,               't', "time",                    Required, Client, F(test::time)),
    row!(Bytes,              'n', "bytes",                   Required, Client, F(test::bytes)),
    row!(Blockcount,         'k', "blockcount",              Required, Client, F(test::blockcount)),
    row!(Length,             'l', "length",                  Required, Client, F(test::length)),
    row!(Cport,              -,   "cport",                   Required, Both,   F(network::cport)),
    row!(Parallel,           'P', "parallel",                Required, Client, F(test::parallel)),
    row!(Reverse,            'R', "reverse",                 None,     Client, F(test::reverse)),
    row!(Bidir,              -,   "bidir",                   None,     Client, F(test::bidir)),
    row!(Window,             'w', "window",                  Required, Client, F(test::window)),
    row!(Congestion,         'C', "congestion",              Required, Client, F(test::congestion)),
    row!(Congestion,         -,   "linux-congestion",        Required, Client, F(test::congestion)),
    row!(SetMss,             'M', "set-mss",                 Required, Client, F(test::set_mss)),
    row!(NoDelay,            'N', "no-delay",                None,     Client, F(test::no_delay)),
    row!(Version4,           '4', "version4",                None,     Both,   F(network::version4)),
    row!(Version6,           '6', "version6",                None,     Both,   F(network::version6)),
    row!(Tos,                'S', "tos",                     Required, Client, F(test::tos)),
    row!(Dscp,               -,   "dscp",                    Required, Client, F(test::dscp)),
    row!(Flowlabel,          'L', "flowlabel",               Required, Client, F(test::flowlabel)),
    row!(Zerocopy,           'Z', "zerocopy",                None,     Client, F(test::zerocopy)),
    row!(SkipRxCopy,         -,   "skip-rx-copy",            None,     Client, F(test::skip_rx_copy)),
    row!(Omit,               'O', "omit",                    Required, Client, F(test::omit)),
    row!(Title,              'T', "title",                   Required, Client, F(output::title)),
    row!(ExtraData,          -,   "extra-data",              Required, Client, F(test::extra_data)),
    row!(GetServerOutput,    -,   "get-server-output",       None,     Client, F(test::get_server_output)),
    row!(UdpCounters64,      -,   "udp-counters-64bit",      None,     Client, F(test::udp_counters_64bit)),
    row!(Gsro,               -,   "gsro",                    None,     Client, F(test::gsro)),
    row!(RepeatingPayload,   -,   "repeating-payload",       None,     Client, F(test::repeating_payload)),
    row!(DontFragment,       -,   "dont-fragment",           None,     Client, F(test::dont_fragment)),
    row!(Username,           -,   "username",                Required, Client, F(auth::username)),
    row!(RsaPublicKey,       -,   "rsa-public-key-path",     Required, Client, F(auth::rsa_public_key)),
    // wirespeed additions
    row!(Loopback,           -,   "loopback",                None,     Client, F(extras::loopback)),
    row!(Live,               -,   "live",                    None,     Client, F(extras::live)),
    row!(Report,             -,   "report",                  Required, Both,   F(extras::report)),
    row!(UdpSearch,          -,   "udp-search",              None,     Client, F(extras::udp_search)),
    row!(MaxLoss,            -,   "max-loss",                Required, Client, F(extras::max_loss)),
    row!(Metrics,            -,   "metrics",                 Required, Server, F(extras::metrics)),
    row!(Allow,              -,   "allow",                   Required, Server, F(extras::allow)),
    row!(Deny,               -,   "deny",                    Required, Server, F(extras::deny)),
];

/// Whether an option of [`TABLE`] works (rather than being refused as not
/// built yet): what `--help`, the man page and the completions must cover.
pub fn available(o: Opt) -> bool {
    TABLE
        .iter()
        .filter(|r| r.key == o)
        .all(|r| !matches!(r.step, Step::Refuse(_)))
}
