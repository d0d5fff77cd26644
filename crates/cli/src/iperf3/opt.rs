//! The iperf3 dialect's option identifiers and what a row of its table
//! holds: where an option applies and what it does. Apart from the table
//! itself, so the steps (`apply/`) and the rules between options
//! (`check.rs`) name options without depending on the table that names
//! them.

use super::state::ParseState;
pub use crate::getopt::InfoOption;
use crate::getopt::Occurrence;
use wirespeed_core::error::Error;

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
    Ecn,
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
    Rpm,
    Cacert,
    Insecure,
    Latency,
    MaxLoss,
    Metrics,
    Ui,
    Db,
    RpmListen,
    TlsCert,
    TlsKey,
    QuicPerf,
    QuicPerfListen,
    Quic,
    Allow,
    Deny,
    Csv,
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
    InfoOption(InfoOption),
    /// A feature not built yet (or missing from this kernel): the option is
    /// refused with this error, never ignored.
    Refuse(fn() -> Error),
}

/// One option of the table.
pub type Row = crate::getopt::Row<Opt, RoleMark, Step>;
