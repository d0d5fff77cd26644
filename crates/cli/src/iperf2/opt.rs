//! The iperf2 dialect's option identifiers and what a row of its table
//! holds: where an option applies and what it does. Apart from the table
//! itself, so the steps (`apply/`) and the rules between options
//! (`check.rs`) name options without depending on the table that names
//! them.

use super::CliError;
use super::state::ParseState;
pub use crate::getopt::InfoOption;
use crate::getopt::Occurrence;

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
    Dscp,
    Ecn,
    TcpCca,
    SyncTransferId,
    UdpL4s,
    Rpm,
    WorkingLoad,
    BouncebackRequest,
    BouncebackReply,
    Ttl,
    SingleUdp,
    Ipv6Domain,
    PeerDetect,
    Congestion,
    FullDuplex,
    SumOnly,
    HideIps,
    PermitKey,
    TripTimes,
    Histograms,
    ConnectRetries,
    Allow,
    Deny,
    MaxTests,
    ServerBitrateLimit,
    ServerMaxDuration,
    RcvTimeout,
    Ui,
    Db,
    RpmListen,
    TlsCert,
    TlsKey,
    Bounceback,
    BouncebackHold,
    BouncebackPeriod,
    BouncebackNoQuickack,
    TcpRxWindowClamp,
    TosOverride,
    FqRate,
    IncrDstport,
    LocalOnly,
    NoUdpFin,
    TcpQuickack,
    TcpWritePrefetch,
    /// iperf 2.2's `--tcp-tx-delay` and master's `--send-delay`.
    TcpTxDelay,
    SendDelay,
    FqRateStep,
    FqRateStepInterval,
    WorkingLoadCca,
    /// iperf 2 master's `--omit`.
    Omit,
    SetRandSeed,
    /// `-W`: 2.1.8's "suggest window size", wirespeed's window advice.
    SuggestWin,
    // wirespeed additions.
    Json,
    JsonStream,
    Report,
    Live,
    UdpSearch,
    MaxLoss,
    Latency,
    // Recognised, but their features are not built yet.
    /// `-A`, `--awdl`: Apple Wireless Direct Link (macOS).
    Awdl,
    TunDev,
    PermitKeyTimeout,
    BouncebackCongest,
    BouncebackTxDelay,
    TapDev,
    SumDstip,
    ConnectOnly,
    Ipg,
    Isochronous,
    IncrDstip,
    IncrSrcip,
    IncrSrcport,
    NearCongestion,
    NoConnectSync,
    TcpWriteTimes,
    TxDelay,
    TxStart,
    BurstSize,
    BurstPeriod,
    L2Checks,
    NumReportStructs,
}

/// Where an option means something. 2.1.8 warns about a client option on
/// a server ("option -d is not valid for server mode") and wirespeed
/// drops it there; a TCP option with `-u` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Anywhere (or the option checks its own place).
    Any,
    /// A client's option.
    Client,
    /// A TCP option, client or server.
    Tcp,
    /// A TCP client's option.
    TcpClient,
}

impl Scope {
    /// Warned about and dropped on a server.
    pub fn client_only(self) -> bool {
        matches!(self, Scope::Client | Scope::TcpClient)
    }

    /// Refused with `-u`.
    pub fn tcp_only(self) -> bool {
        matches!(self, Scope::Tcp | Scope::TcpClient)
    }
}

/// Applies one occurrence of an option to the configuration being built.
pub type ApplyFn = fn(&mut ParseState, &Occurrence<Opt>) -> Result<(), CliError>;

/// What an option does.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// Sets something in the configuration.
    Apply(ApplyFn),
    /// Ends parsing with this answer, whatever else is given (`-h`, `-v`).
    InfoOption(InfoOption),
    /// A feature not built yet: refused ("... is not implemented yet")
    /// naming what is missing, never ignored.
    NotBuilt(&'static str),
}

/// One option of the table.
pub type Row = crate::getopt::Row<Opt, Scope, Step>;
