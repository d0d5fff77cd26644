//! `TestConfig`: the one model both command lines produce and both protocols read.
//!
//! [`TestParams`] is the part a client and server agree on (it travels in the
//! iperf3 parameter JSON or the iperf2 header); everything else is local to one
//! end (how to print, where to bind, server limits).

use std::path::PathBuf;
use std::time::Duration;

pub use wirespeed_proto::params::{
    DEFAULT_TCP_BLOCK, DEFAULT_UDP_BLOCK, DEFAULT_UDP_RATE, Direction, EndCondition, FrameSpec, MAX_TCP_BLOCK,
    MAX_UDP_BLOCK, MIN_UDP_BLOCK, Protocol, TestParams,
};

/// Which iperf generation's command line, output and wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// iperf3: control connection, JSON, `-p 5201`.
    #[default]
    Iperf3,
    /// iperf 2.x: in-band headers, CSV, `-p 5001`.
    Iperf2,
}

/// Address family restriction (`-4`/`-6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    /// Whatever the name resolves to; servers listen dual-stack.
    #[default]
    Any,
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

/// Control-connection keepalive (`--cntl-ka[=idle/intvl/count]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeepAlive {
    /// TCP_KEEPIDLE seconds.
    pub idle: Option<u32>,
    /// TCP_KEEPINTVL seconds.
    pub interval: Option<u32>,
    /// TCP_KEEPCNT probes.
    pub count: Option<u32>,
}

/// Local socket and connection options.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetOptions {
    /// Address family.
    pub family: Family,
    /// Local address to bind (`-B`).
    pub bind: Option<String>,
    /// Device to bind (`--bind-dev`, or `%dev`).
    pub bind_dev: Option<String>,
    /// Client data-stream source port (`--cport`).
    pub cport: Option<u16>,
    /// Control connect timeout.
    pub connect_timeout: Option<Duration>,
    /// Receive idle timeout during a test (default 120 s).
    pub rcv_timeout: Option<Duration>,
    /// TCP_USER_TIMEOUT.
    pub snd_timeout: Option<Duration>,
    /// Control-connection keepalive.
    pub cntl_ka: Option<KeepAlive>,
    /// CPU to pin this process's data threads to (`-A n`).
    pub affinity: Option<usize>,
    /// iperf2 `-T`: IP TTL / multicast hops.
    pub ttl: Option<u32>,
}

/// How and where results are printed.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputOptions {
    /// `-f` letter (`a` adaptive bits by default).
    pub format: char,
    /// Reporting interval; `None` disables periodic reports.
    pub interval: Option<Duration>,
    /// `-J`.
    pub json: bool,
    /// `--json-stream`.
    pub json_stream: bool,
    /// `--json-stream-full-output`.
    pub json_stream_full: bool,
    /// `-V`.
    pub verbose: bool,
    /// Print the window advice for TCP senders (iperf3 `-V`, iperf 2 `-W`,
    /// the suggest-window-size option of iperf 2).
    pub window_advice: bool,
    /// `-d` level (0 = off).
    pub debug: u8,
    /// `--logfile` (iperf3 appends) or iperf2 `-o` (truncates).
    pub logfile: Option<PathBuf>,
    /// Truncate rather than append the log file (iperf2 `-o`).
    pub logfile_truncate: bool,
    /// `--forceflush`.
    pub forceflush: bool,
    /// `--timestamps[=fmt]`: strftime format prefixed to each line.
    pub timestamps: Option<String>,
    /// `-T` title prefix (iperf3 client text).
    pub title: Option<String>,
    /// iperf2 `-e`.
    pub enhanced: bool,
    /// iperf2 `-y C`.
    pub csv: bool,
    /// iperf2 `-x` report exclusions (letters).
    pub exclude: String,
    /// iperf2 `--sum-only`.
    pub sum_only: bool,
    /// iperf2 `-m`: print the MSS.
    pub print_mss: bool,
    /// iperf2 `--histograms`.
    pub histograms: Option<String>,
    /// `--live` status line on a terminal.
    pub live: bool,
    /// `--report FILE.html`.
    pub html_report: Option<PathBuf>,
}

impl OutputOptions {
    /// How often a test is sampled for its HTML report's charts alone:
    /// every second when it has a report but no periodic reports to draw.
    pub fn chart_samples(&self) -> Option<Duration> {
        (self.html_report.is_some() && self.interval.is_none()).then(|| Duration::from_secs(1))
    }
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            format: 'a',
            interval: Some(Duration::from_secs(1)),
            json: false,
            json_stream: false,
            json_stream_full: false,
            verbose: false,
            window_advice: false,
            debug: 0,
            logfile: None,
            logfile_truncate: false,
            forceflush: false,
            timestamps: None,
            title: None,
            enhanced: false,
            csv: false,
            exclude: String::new(),
            sum_only: false,
            print_mss: false,
            histograms: None,
            live: false,
            html_report: None,
        }
    }
}

/// Server-only settings and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    /// `-1`: serve one test, then exit.
    pub one_off: bool,
    /// `-D`.
    pub daemon: bool,
    /// iperf 2's `-s -R` on Windows: stop and remove the service.
    pub remove_service: bool,
    /// `-I`.
    pub pidfile: Option<PathBuf>,
    /// `--idle-timeout`.
    pub idle_timeout: Option<Duration>,
    /// Concurrent tests (`--max-tests`, default 16).
    pub max_tests: u32,
    /// Streams per test the server accepts (`--max-streams`).
    pub max_streams: u32,
    /// `--server-max-duration` (time + omit), `None` = unlimited.
    pub max_duration: Option<Duration>,
    /// `--server-bitrate-limit` in bit/s (0 = none).
    pub bitrate_limit: u64,
    /// Averaging window for the bitrate limit.
    pub bitrate_limit_window: Duration,
    /// `--rsa-private-key-path`.
    pub rsa_private_key: Option<PathBuf>,
    /// `--authorized-users-path`.
    pub authorized_users: Option<PathBuf>,
    /// `--time-skew-threshold`.
    pub time_skew_threshold: Duration,
    /// `--use-pkcs1-padding`: also accept tokens encrypted with PKCS#1
    /// v1.5 (iperf3 3.16 and older clients), besides OAEP.
    pub use_pkcs1_padding: bool,
    /// Clients allowed (empty = any), iperf2 `-s -c host` included.
    pub allow: Vec<String>,
    /// Clients refused.
    pub deny: Vec<String>,
    /// `--metrics ADDR:PORT`.
    pub metrics: Option<String>,
    /// `--ui ADDR:PORT`: the web page watching this server's tests.
    pub ui: Option<String>,
    /// `--db PATH`: where `--ui` keeps its history.
    pub db: Option<String>,
    /// `--rpm-listen ADDR:PORT`: the networkQuality (responsiveness) server.
    pub rpm_listen: Option<String>,
    /// `--quic-perf-listen ADDR:PORT`: the QUIC perf server (ALPN `perf`).
    pub quic_perf_listen: Option<String>,
    /// `--tls-cert FILE`: the certificate chain (PEM) of the RPM and QUIC
    /// perf servers; self-signed without.
    pub tls_cert: Option<std::path::PathBuf>,
    /// `--tls-key FILE`: the certificate's private key (PEM).
    pub tls_key: Option<std::path::PathBuf>,
    /// iperf2 `-P n` on a server: exit after n connections.
    pub max_connections: Option<u32>,
    /// iperf2 `-t` on a server: stop listening after this long.
    pub listen_time: Option<Duration>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            one_off: false,
            daemon: false,
            remove_service: false,
            pidfile: None,
            idle_timeout: None,
            max_tests: 16,
            max_streams: 10_000,
            max_duration: None,
            bitrate_limit: 0,
            bitrate_limit_window: Duration::from_secs(5),
            rsa_private_key: None,
            authorized_users: None,
            time_skew_threshold: Duration::from_secs(10),
            use_pkcs1_padding: false,
            allow: Vec::new(),
            deny: Vec::new(),
            metrics: None,
            ui: None,
            db: None,
            rpm_listen: None,
            quic_perf_listen: None,
            tls_cert: None,
            tls_key: None,
            max_connections: None,
            listen_time: None,
        }
    }
}

/// Client authentication (iperf3 `--username` / `--rsa-public-key-path`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientAuth {
    /// User name.
    pub username: Option<String>,
    /// PEM public key path.
    pub public_key: Option<PathBuf>,
    /// `--use-pkcs1-padding`: encrypt the token with PKCS#1 v1.5 (what
    /// iperf3 3.16 and older servers expect) instead of OAEP.
    pub use_pkcs1_padding: bool,
    /// The password, once known (a search asks once for all its probes);
    /// `None`: from `IPERF3_PASSWORD` or the terminal when needed.
    pub password: Option<Secret>,
}

/// A string that `Debug` does not print.
#[derive(Clone, PartialEq, Default)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Settings only the iperf 2 dialect has (its wire header and CLI carry
/// them; the iperf3 side never reads them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Iperf2Options {
    /// `-L`: port the client listens on for the server's -d/-r connect-back
    /// (`None` = the `-p` port).
    pub listen_port: Option<u16>,
    /// `--local-only`: SO_DONTROUTE on the client's flows (reach only
    /// directly connected hosts).
    pub local_only: bool,
    /// `-p m-n`: the last port of a range starting at the `-p` port (a
    /// server listens on each, a client sends one flow to each).
    pub port_last: Option<u16>,
    /// `--incr-dstport`: flow i of a client goes to the `-p` port + i.
    pub incr_dstport: bool,
    /// `--tcp-write-prefetch`: TCP_NOTSENT_LOWAT on the sending sockets
    /// (the client's, and the server's for -R / --full-duplex).
    pub write_prefetch: Option<u32>,
    /// `--tcp-quickack`: TCP_QUICKACK after every read, on the client's
    /// receiving flows and (through the header) the server's.
    pub quickack: bool,
    /// iperf 2.2's `--sync-transfer-id`: each flow's header carries its
    /// transfer id, so the server numbers flows as the client does.
    pub sync_transfer_id: bool,
    /// `--tcp-rx-window-clamp`: TCP_WINDOW_CLAMP on a server's listener
    /// (the largest receive window it advertises).
    pub rx_window_clamp: Option<u32>,
    /// `--tos-override`: the TOS byte a server's sockets carry (what it
    /// sends back for -R / --full-duplex, and its acks).
    pub tos_override: Option<u8>,
    /// `-X`: ask for and print the server's version.
    pub peer_detect: bool,
    /// `-C`: send no header (talk to very old iperf 2 servers).
    pub compat: bool,
    /// `-I`: send what stdin provides.
    pub stdin: bool,
    /// `-z`: realtime scheduling for the data threads.
    pub realtime: bool,
    /// `--hide-ips`: print addresses masked.
    pub hide_ips: bool,
    /// `-1`: serve one client at a time (a server option; not iperf3's `-1`).
    pub single_client: bool,
    /// `-l` was given (its value travels in the header's buffer-length word).
    pub len_given: bool,
    /// `--permit-key`: the shared key a client sends / a server requires.
    pub permit_key: Option<String>,
    /// `--connect-retries`: extra TCP connect attempts.
    pub connect_retries: u32,
    /// `--connect-only[=n]`: time TCP handshakes only, `n` per flow (one
    /// per interval until `-t` with `-i`).
    pub connect_only: Option<u32>,
    /// `--txstart-time`: when (wall clock: seconds, µs) the flows start
    /// sending, after connecting at once.
    pub txstart: Option<(u32, u32)>,
    /// `--working-load[=up|down|bidir][,n]` (2.1.8's
    /// `--bounceback-congest`): n TCP load flows beside the test.
    pub working_load: Option<(Direction, u32)>,
    /// `-U`: a UDP server serving one client at a time, refusing others.
    pub single_udp: bool,
    /// `--no-udp-fin`: end a UDP test without the FIN/report exchange.
    pub no_udp_fin: bool,
    /// iperf 2.2.1's `--udp-l4s`: a UDP sender paced by the receiver's L4S
    /// acks, its datagrams ECT(1).
    pub udp_l4s: bool,
    /// `-H`: the source of a source-specific multicast join.
    pub ssm_host: Option<String>,
    /// `--bounceback`: a request/response (echo) test instead of a transfer.
    pub bounceback: Option<Bounceback>,
    /// iperf 2.2's `--tcp-tx-delay` (master's `--send-delay`): TCP_TX_DELAY
    /// on the client's TCP sockets, in µs.
    pub tx_delay_us: Option<u32>,
    /// iperf 2.2's `--fq-rate-step`/`--fq-rate-step-interval`: every
    /// interval the sending sockets' pacing rate (`--fq-rate`) grows by this
    /// many bits/s.
    pub fq_rate_step: Option<(u64, Duration)>,
    /// iperf 2.2's `--working-load-cca`: the working load's congestion
    /// control.
    pub load_cca: Option<String>,
    /// iperf 2 master's `--set-rand-seed`: the seed of the generators the
    /// client draws from (`-b mean,stdev`, `--isochronous` frame sizes).
    pub rand_seed: Option<u32>,
}

/// `--bounceback` settings (iperf 2 client).
#[derive(Debug, Clone, PartialEq)]
pub struct Bounceback {
    /// Writes per burst (`--bounceback=n`, default 10).
    pub count: u32,
    /// Time between burst starts (`--bounceback-period`, default 1 s;
    /// zero: back to back, no bursts).
    pub period: Duration,
    /// `--bounceback-hold`: the server waits this long before replying, µs.
    pub hold_us: u32,
    /// TCP_QUICKACK on both ends (off with `--bounceback-no-quickack`).
    pub quickack: bool,
    /// `--bounceback-txdelay`: the bounceback flow waits this long after
    /// connecting (the load already runs).
    pub txdelay: Duration,
    /// iperf 2.2's `--bounceback-reply`: the server's reply size, when it
    /// differs from the request's (`-l`, or `--bounceback-request`).
    pub reply: Option<u32>,
}

/// What this process is asked to be.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Role {
    /// Connect to this host.
    Client(String),
    /// Listen for clients.
    #[default]
    Server,
    /// Run a client against an in-process server on 127.0.0.1.
    Loopback,
}

/// Everything one run needs: produced by `cli`, read by client/server/report.
#[derive(Debug, Clone, PartialEq)]
pub struct TestConfig {
    /// Command-line / output / wire dialect.
    pub dialect: Dialect,
    /// Client, server or loopback.
    pub role: Role,
    /// Server port.
    pub port: u16,
    /// Negotiated parameters (the client's request, or the server's defaults).
    pub params: TestParams,
    /// Local network options.
    pub net: NetOptions,
    /// Output options.
    pub output: OutputOptions,
    /// Server options.
    pub server: ServerOptions,
    /// Client authentication.
    pub auth: ClientAuth,
    /// `-F` file to send from / write to.
    pub file: Option<PathBuf>,
    /// iperf 2 dialect settings.
    pub iperf2: Iperf2Options,
    /// `--udp-search`: search for the highest rate with acceptable loss.
    pub search: Option<SearchOptions>,
    /// `--latency[=N]`: round-trip probes per second beside the load.
    pub latency: Option<u32>,
    /// `--rpm`: the responsiveness test instead of one test.
    pub rpm: bool,
    /// `--rpm=URL`: the standard responsiveness test against a
    /// networkQuality server (HTTP/2 over TLS) instead.
    pub nq: Option<NqOptions>,
    /// `--quic-perf HOST:PORT`: a QUIC perf client (ALPN `perf`) instead
    /// of an iperf test.
    pub quic_perf: Option<String>,
}

/// The standard responsiveness test (`--rpm=URL [--cacert FILE]
/// [--insecure]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NqOptions {
    /// The networkQuality configuration URL.
    pub url: String,
    /// `--cacert FILE`: trust the PEM certificates in it.
    pub cacert: Option<PathBuf>,
    /// `--insecure`: no certificate verification.
    pub insecure: bool,
    /// `-R`: download only (both directions, one after the other, without).
    pub download_only: bool,
    /// `-t`: the most each direction runs.
    pub time: std::time::Duration,
    /// `-P`: the most load-generating connections per direction.
    pub max_flows: u32,
}

/// The standard responsiveness test's limits, which the command line
/// applies and the client (`wirespeed-rpm-http`) follows.
pub mod nq {
    use std::time::Duration;

    /// The most each direction runs unless `-t` says.
    pub const DEFAULT_TIME: Duration = Duration::from_secs(20);
    /// Load-generating connections per direction unless `-P` says (MNP).
    pub const MAX_FLOWS: u32 = 16;
    /// The most `-P` may ask for.
    pub const MOST_FLOWS: u32 = 64;
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            dialect: Dialect::Iperf3,
            role: Role::Server,
            port: 5201,
            params: TestParams::default(),
            net: NetOptions::default(),
            output: OutputOptions::default(),
            server: ServerOptions::default(),
            auth: ClientAuth::default(),
            file: None,
            iperf2: Iperf2Options::default(),
            search: None,
            latency: None,
            rpm: false,
            nq: None,
            quic_perf: None,
        }
    }
}

/// Search settings (`--udp-search [--max-loss P%]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchOptions {
    /// Highest acceptable loss, percent of the datagrams sent.
    pub max_loss_percent: f64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            max_loss_percent: DEFAULT_MAX_LOSS,
        }
    }
}

/// `--max-loss` when not given, percent.
pub const DEFAULT_MAX_LOSS: f64 = 0.1;
