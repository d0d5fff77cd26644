//! The application: which dialect a command line speaks, and running what
//! it asks for — a client, a server (with its daemon, pidfile, metrics
//! endpoint and signals), or a client against a server in this process
//! (`--loopback`) — the same way for both dialects.

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use wirespeed_cli as cli;
use wirespeed_core::config::{Dialect, Role, TestConfig};
use wirespeed_core::debug;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{Event, Side};
use wirespeed_iperf::modes::search;
use wirespeed_iperf::server;
use wirespeed_proto::json;
use wirespeed_report::metrics;
use wirespeed_report::{Output, Reporter};
use wirespeed_sys as sys;

pub use crate::signals::{Hangup, hangup_for, install_signals, interrupt};
pub use wirespeed_core::version::{CLIENT_VERSION, IPERF3_VERSION, VERSION, version_string};

fn program_name(args: &[OsString]) -> String {
    args.first()
        .and_then(|a| {
            std::path::Path::new(a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "wirespeed".into())
}

/// Runs the program with `args` (argv, program name first); returns the
/// exit code.
pub fn run(args: Vec<OsString>) -> i32 {
    #[cfg(windows)]
    if crate::service::started_by_manager(&args) {
        return crate::service::run(args, run);
    }
    let prog = program_name(&args);
    let rest: Vec<String> = args.iter().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    // iperf3's `--quic` tests carry their data over wirespeed-quic's QUIC.
    wirespeed_quic::install_iperf3();
    if prog == "iperf" || prog == "iperf2" {
        return run_iperf2(&rest, &prog);
    }
    if rest.first().is_some_and(|a| a == "--iperf2") {
        return run_iperf2(&rest[1..], "iperf");
    }
    // wirespeed's own commands, which no iperf command line can start with.
    match rest.first().map(String::as_str) {
        Some("report") => return cli::report::run(&rest[1..], &prog),
        Some("ui") => return wirespeed_web::ui::run(&rest[1..], &prog),
        Some("exporter") => return wirespeed_web::exporter::run(&rest[1..], &prog),
        Some("--completions") => return cli::completions::run(&rest[1..], &prog),
        _ => {}
    }
    run_iperf3(&rest, &prog)
}

/// The iperf3 dialect's command line.
fn run_iperf3(rest: &[String], prog: &str) -> i32 {
    let wants_json = rest.iter().any(|a| a == "-J" || a == "--json" || a == "--json-stream");
    let cmd = match cli::iperf3::parse_args(rest) {
        Ok(c) => c,
        Err(e) => {
            if wants_json {
                print_json_error(&e);
            } else if e.code == Code::NOROLE {
                // Neither -c nor -s (a bare `wirespeed`): as iperf3, the
                // line and a blank one on stderr, the usage on stdout.
                eprintln!("{prog}: {}\n", e.line());
                print!("{}", cli::iperf3::long_usage(prog));
            } else {
                eprintln!("{prog}: {}", e.line());
            }
            return 1;
        }
    };
    match cmd {
        cli::iperf3::Command::Help => {
            print!("{}", cli::iperf3::long_usage(prog));
            0
        }
        cli::iperf3::Command::Version => {
            // Run as `iperf3`, it reports the iperf3 release whose behaviour
            // it implements, where tools read it (the second word:
            // perfSONAR's pScheduler picks the RSA padding by it), and says
            // which wirespeed it is.
            if prog == "iperf3" {
                println!("iperf {IPERF3_VERSION} ({})", version_string());
            } else {
                println!(
                    "{} (iperf3 {IPERF3_VERSION} and iperf 2.1.8 compatible)",
                    version_string()
                );
            }
            println!("{}", sys::process::system_info());
            println!("Optional features available: {}", optional_features().join(", "));
            0
        }
        cli::iperf3::Command::Run(cfg, warnings) => run_config(*cfg, prog, &warnings),
    }
}

/// iperf3's `-v` list of optional features, as this build on this
/// platform has them (each is also an option the command line refuses
/// where it is missing).
fn optional_features() -> Vec<&'static str> {
    let mut f = Vec::new();
    let has = |long: &str| sys::lacks(long).is_none();
    for (long, words) in [
        ("affinity", "CPU affinity setting"),
        ("flowlabel", "IPv6 flow label"),
        ("congestion", "TCP congestion algorithm setting"),
        ("zerocopy", "sendfile / zerocopy"),
        ("fq-rate", "socket pacing"),
    ] {
        if has(long) {
            f.push(words);
        }
    }
    if cfg!(feature = "rsa") {
        f.push("authentication");
    }
    for (long, words) in [
        ("bind-dev", "bind to device"),
        ("mptcp", "MPTCP"),
        ("skip-rx-copy", "skip rx copy"),
    ] {
        if has(long) {
            f.push(words);
        }
    }
    f.push("multiple concurrent tests");
    f
}

/// The iperf 2 dialect's command line.
fn run_iperf2(args: &[String], prog: &str) -> i32 {
    use cli::iperf2::Command;
    let cmd = match cli::iperf2::parse_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{}", e.line(prog));
            return 1;
        }
    };
    match cmd {
        Command::Help => {
            eprint!("{}", cli::iperf2::long_usage(prog));
            1
        }
        Command::Version => {
            eprint!("{}", cli::iperf2::version_line());
            1
        }
        Command::Usage => {
            eprint!("{}", cli::iperf2::short_usage(prog));
            0
        }
        Command::Run(cfg, warnings) => {
            if let Some(f) = &cfg.output.logfile {
                println!(
                    "Output from stdout and stderr will be redirected to file {}",
                    f.display()
                );
            }
            run_config(*cfg, prog, &warnings)
        }
    }
}

/// A JSON document with only the error, for a command line that cannot
/// even be parsed.
fn print_json_error(e: &Error) {
    let mut start = serde_json::Map::new();
    start.insert("connected".into(), serde_json::Value::Array(Vec::new()));
    start.insert("version".into(), version_string().into());
    start.insert("system_info".into(), sys::process::system_info().into());
    let mut doc = serde_json::Map::new();
    doc.insert("start".into(), serde_json::Value::Object(start));
    doc.insert("intervals".into(), serde_json::Value::Array(Vec::new()));
    doc.insert("end".into(), serde_json::Value::Object(serde_json::Map::new()));
    doc.insert("error".into(), e.text().into());
    println!("{}", json::to_formatted(&serde_json::Value::Object(doc)));
}

/// Prints warnings the command line raised, in the dialect's way.
fn print_warnings(cfg: &TestConfig, out: &Output, warnings: &[String]) {
    if cfg.output.json {
        return;
    }
    for w in warnings {
        match cfg.dialect {
            Dialect::Iperf3 => out.write_err(&format!("warning: {w}\n")),
            Dialect::Iperf2 => match w.strip_prefix(cli::iperf2::TO_STDERR) {
                Some(w) => out.write_err(&format!("{w}\n")),
                None => out.write(&format!("{w}\n")),
            },
        }
    }
}

/// A failure before any test could run, in the dialect's words.
fn print_failure(cfg: &TestConfig, out: &Output, e: &Error) {
    if cfg.output.json {
        print_json_error(e);
        return;
    }
    let prog = out.program();
    match cfg.dialect {
        Dialect::Iperf3 => out.write_err(&format!("{prog}: {}\n", e.line())),
        Dialect::Iperf2 => out.write_err(&format!("{}\n", e.text())),
    }
}

/// Runs a parsed configuration of either dialect; returns the exit code.
pub fn run_config(cfg: TestConfig, prog: &str, warnings: &[String]) -> i32 {
    let out = match Output::for_config(&cfg, prog) {
        Ok(o) => o,
        Err(e) => {
            match cfg.dialect {
                Dialect::Iperf3 => eprintln!("{prog}: {}", e.line()),
                Dialect::Iperf2 => eprintln!("ERROR: unable to open output file: {}", e.text()),
            }
            return 1;
        }
    };
    print_warnings(&cfg, &out, warnings);
    // iperf 2's Windows service: -s -D installs and starts it, -s -R
    // removes it; the service itself serves.
    #[cfg(windows)]
    if cfg.dialect == Dialect::Iperf2 && cfg.role == Role::Server && !crate::service::is_service() {
        if cfg.server.remove_service {
            return crate::service::remove();
        }
        if cfg.server.daemon {
            return crate::service::install();
        }
    }
    debug::set_level(cfg.output.debug);
    if cfg.iperf2.realtime
        && let Err(e) = sys::netif::set_realtime()
    {
        out.write_err(&format!("WARNING: realtime scheduling not set: {e}\n"));
    }
    if let Err(e) = check_report_path(&cfg) {
        print_failure(&cfg, &out, &e);
        return 1;
    }
    // Bind the metrics endpoint before anything else, so a busy address is
    // one line and exit 1; it starts serving once the server runs.
    let metrics = match (&cfg.role, &cfg.server.metrics) {
        (Role::Server | Role::Client(_), Some(addr)) => match wirespeed_http::metrics::Endpoint::bind(addr) {
            Ok(ep) => {
                announce_metrics(&cfg, &out, &ep);
                Some(ep)
            }
            Err(e) => {
                print_failure(&cfg, &out, &e);
                return 1;
            }
        },
        _ => None,
    };
    let ui = match (&cfg.role, &cfg.server.ui) {
        (Role::Server, Some(addr)) => {
            match wirespeed_web::ui::Endpoint::bind(addr, None).and_then(|ep| ep.keep_history(cfg.server.db.as_deref()))
            {
                Ok(ep) => Some(ep),
                Err(e) => {
                    print_failure(&cfg, &out, &e);
                    return 1;
                }
            }
        }
        _ if cfg.server.db.is_some() => {
            let e = Error::param_msg(Code::NONE, "--db keeps the history of a server's --ui: give --ui too");
            print_failure(&cfg, &out, &e);
            return 1;
        }
        _ => None,
    };
    // The RPM server's listener and certificate, checked now like the
    // metrics endpoint's; it serves once the server runs.
    if let Err(e) =
        wirespeed_rpm_http::server::check_options(&cfg).and_then(|()| wirespeed_quic::server::check_options(&cfg))
    {
        print_failure(&cfg, &out, &e);
        return 1;
    }
    let rpm = match (&cfg.role, &cfg.server.rpm_listen) {
        (Role::Server, Some(_)) => match wirespeed_rpm_http::server::Endpoint::bind(&cfg) {
            Ok(ep) => {
                let line = ep.announcement();
                if cfg.output.json {
                    eprint!("{line}");
                } else {
                    out.write_err(&line);
                }
                Some(ep)
            }
            Err(e) => {
                print_failure(&cfg, &out, &e);
                return 1;
            }
        },
        _ => None,
    };
    // The QUIC perf server's socket and certificate, likewise.
    let quic = match (&cfg.role, &cfg.server.quic_perf_listen) {
        (Role::Server, Some(_)) => match wirespeed_quic::server::Endpoint::bind(&cfg) {
            Ok(ep) => {
                let line = ep.announcement();
                if cfg.output.json {
                    eprint!("{line}");
                } else {
                    out.write_err(&line);
                }
                Some(ep)
            }
            Err(e) => {
                print_failure(&cfg, &out, &e);
                return 1;
            }
        },
        _ => None,
    };
    let signal = install_signals(hangup_for(&cfg));
    let result = match &cfg.role {
        Role::Client(_) if let Some(target) = &cfg.quic_perf => {
            wirespeed_quic::client::run(&cfg, target, &out, &signal)
        }
        Role::Client(_) if let Some(nq) = &cfg.nq => {
            let r = wirespeed_rpm_http::client::run(&cfg, nq, &out, &signal, metrics);
            // The JSON stream has said it already.
            if let Err(e) = &r
                && !cfg.output.json_stream
            {
                print_failure(&cfg, &out, e);
            }
            r
        }
        Role::Client(host) if wirespeed_report::mode::is_mode(&cfg) => run_mode(&cfg, host, &out, &signal, metrics),
        Role::Client(host) => run_client(&cfg, host, &out, &signal, warnings),
        Role::Loopback => run_loopback(&cfg, out.clone(), &signal),
        Role::Server => run_server(&cfg, out.clone(), signal.clone(), metrics, ui, (rpm, quic)),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            if matches!(cfg.role, Role::Server) {
                match cfg.dialect {
                    Dialect::Iperf3 => {
                        out.write_err(&format!("{prog}: {}\n", e.line()));
                        // As iperf3: a PID file it cannot write ends it
                        // before it serves, in one line.
                        if e.code != Code::PIDFILE {
                            out.write_err(&format!("{prog}: exiting\n"));
                        }
                    }
                    Dialect::Iperf2 => out.write_err(&format!("{}\n", e.text())),
                }
            }
            1
        }
    }
}

/// Where the metrics are, said as the server starts (before a daemon
/// detaches, so its starter shows it), with a warning when they are open
/// to every address. Diagnostics go where the server's go; beside `-J`
/// to stderr, so a JSON log holds JSON only.
fn announce_metrics(cfg: &TestConfig, out: &Output, ep: &wirespeed_http::metrics::Endpoint) {
    let (at, warning) = ep.announcement();
    let warning = warning.map(|w| match cfg.dialect {
        Dialect::Iperf3 => format!("warning: {w}\n"),
        Dialect::Iperf2 => format!("WARNING: {w}\n"),
    });
    let text = at + warning.as_deref().unwrap_or("");
    if cfg.output.json {
        eprint!("{text}");
    } else {
        out.write_err(&text);
    }
}

/// `--report`: find out now, not after the test, that it cannot be written.
fn check_report_path(cfg: &TestConfig) -> Result<(), Error> {
    let Some(path) = &cfg.output.html_report else {
        return Ok(());
    };
    let first = match cfg.role {
        Role::Server => wirespeed_report::html::numbered_path(path, 1),
        _ => path.clone(),
    };
    wirespeed_report::html::check_writable(&first)
}

/// A client of either dialect (or a UDP search of rates) against `host`.
fn run_client(
    cfg: &TestConfig,
    host: &str,
    out: &Output,
    signal: &Arc<AtomicUsize>,
    warnings: &[String],
) -> Result<(), Error> {
    let client = |c: &TestConfig, r: &mut Reporter| match c.dialect {
        Dialect::Iperf3 => wirespeed_iperf::dialect::iperf3::client::run(c, host, c.port, r, signal),
        Dialect::Iperf2 => wirespeed_iperf::dialect::iperf2::client::run(c, host, r, signal),
    };
    if wirespeed_report::mode::is_mode(cfg) {
        return run_mode(cfg, host, out, signal, None);
    }
    let mut reporter = Reporter::for_config(cfg, out.clone(), Side::Client);
    if cfg.output.json {
        for w in warnings {
            reporter.emit(Event::Warning(w.clone()));
        }
    }
    // Idle round trips first, before the test's own connections (a
    // `--quic` test's ride its own connection: the client starts them).
    if let Some(rate) = cfg
        .latency
        .filter(|_| cfg.params.protocol != wirespeed_core::config::Protocol::Quic)
    {
        match wirespeed_iperf::latency::Prober::connect(cfg, host, rate) {
            Ok(p) => reporter.set_stage(Box::new(p.stage())),
            Err(e) => {
                reporter.emit(Event::Error(e.clone()));
                reporter.emit(Event::Done);
                return Err(e);
            }
        }
    }
    let r = client(cfg, &mut reporter);
    finish(r, &mut reporter, out)
}

/// A mode that runs many tests to answer one question (`--rpm`,
/// `--udp-search`), with its metrics served while it runs (`--metrics`).
fn run_mode(
    cfg: &TestConfig,
    host: &str,
    out: &Output,
    signal: &Arc<AtomicUsize>,
    metrics: Option<wirespeed_http::metrics::Endpoint>,
) -> Result<(), Error> {
    let client = |c: &TestConfig, r: &mut Reporter| match c.dialect {
        Dialect::Iperf3 => wirespeed_iperf::dialect::iperf3::client::run(c, host, c.port, r, signal),
        Dialect::Iperf2 => wirespeed_iperf::dialect::iperf2::client::run(c, host, r, signal),
    };
    let mut reporter = Reporter::for_config(cfg, out.clone(), Side::Client);
    let _serving = match metrics {
        Some(ep) => {
            let registry = Arc::new(metrics::Metrics::new());
            reporter.add(Box::new(metrics::ModeMetrics::new(registry.clone())));
            Some(ep.serve(registry)?)
        }
        None => None,
    };
    let r = match cfg.search {
        Some(opts) => search::run(cfg, opts, &mut reporter, signal, &mut |pc, r| client(pc, r)),
        None => wirespeed_iperf::modes::rpm::run(cfg, host, &mut reporter, signal),
    };
    finish(r, &mut reporter, out)
}

fn run_server(
    cfg: &TestConfig,
    out: Output,
    signal: Arc<AtomicUsize>,
    metrics: Option<wirespeed_http::metrics::Endpoint>,
    ui: Option<wirespeed_web::ui::Endpoint>,
    (rpm, quic): (
        Option<wirespeed_rpm_http::server::Endpoint>,
        Option<wirespeed_quic::server::Endpoint>,
    ),
) -> Result<(), Error> {
    wirespeed_core::engine::MuxMode::from_env()?;
    // -A n: the server and every thread it starts run on CPU n (a test
    // whose client sent -A x,m runs its own threads on m instead).
    if let Some(cpu) = cfg.net.affinity {
        wirespeed_core::engine::pin(cpu)?;
    }
    // Many clients, many streams: as many descriptors as we may have.
    let _ = sys::process::raise_nofile_limit();
    let mut server = server::Server::bind(cfg, out.clone(), wirespeed_iperf::dialect::wings())?;
    // The starting process waits until the daemon serves, and exits 1 with
    // the reason if it cannot (a pidfile that cannot be written, ...).
    // The Windows service is already in the background (its options still
    // carry the -D that installed it).
    #[cfg(windows)]
    let in_service = crate::service::is_service();
    #[cfg(not(windows))]
    let in_service = false;
    let detached = if cfg.server.daemon && !in_service {
        Some(sys::process::detach().map_err(|e| Error::io(Code::DAEMON, &e))?)
    } else {
        None
    };
    // Threads do not survive the daemon's fork: serve metrics after it.
    let registry = metrics.as_ref().map(|_| Arc::new(metrics::Metrics::new()));
    let served = Arc::new(wirespeed_rpm_http::server::Served::default());
    let quic_served = Arc::new(wirespeed_quic::server::Served::default());
    if let Some(r) = &registry {
        server = server.with_metrics(r.clone());
        if rpm.is_some() {
            r.add_collector(served.clone());
        }
        if quic.is_some() {
            r.add_collector(quic_served.clone());
        }
    }
    let board = ui
        .as_ref()
        .map(|ep| ep.board(wirespeed_web::ui::board::Mode::Server))
        .transpose()?;
    if let Some(b) = &board {
        server = server.watched_by(Box::new(wirespeed_web::ui::board::Watch(b.clone())));
    }
    let started = (|| -> Result<_, Error> {
        let serving = match (metrics, registry) {
            (Some(ep), Some(r)) => Some(ep.serve(r)?),
            _ => None,
        };
        let page = match (ui, board) {
            (Some(ep), Some(b)) => {
                let db = ep.db().to_string();
                let s = ep.serve(b)?;
                if !cfg.output.json {
                    out.write_err(&s.say("Watch the tests at "));
                    out.write_err(&format!("History in {db}\n"));
                }
                Some(s)
            }
            _ => None,
        };
        let rpm = rpm.map(|ep| ep.serve(served)).transpose()?;
        let quic = quic.map(|ep| ep.serve(quic_served)).transpose()?;
        let pid = match &cfg.server.pidfile {
            Some(p) => Some(PidFile::create(p)?),
            None => None,
        };
        Ok((serving, page, rpm, quic, pid))
    })();
    let _running = match (started, detached) {
        (Ok(r), Some(d)) => {
            d.ready();
            r
        }
        (Ok(r), None) => r,
        (Err(e), Some(d)) => {
            d.failed(&format!("{}: {}", out.program(), e.line()));
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    server.run(signal)
}

/// Runs a client against an in-process server on 127.0.0.1.
fn run_loopback(cfg: &TestConfig, out: Output, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    let mut scfg = TestConfig {
        role: Role::Server,
        port: 0,
        ..TestConfig::default()
    };
    scfg.net.bind = Some("127.0.0.1".into());
    scfg.net.family = wirespeed_core::config::Family::V4;
    scfg.output.interval = cfg.output.interval;
    let server = server::Server::bind(&scfg, Output::discard(), wirespeed_iperf::dialect::wings())?;
    let port = server.port();
    let stop = Arc::new(AtomicUsize::new(0));
    let stop2 = stop.clone();
    let t = std::thread::Builder::new()
        .name("ws-loopback-server".into())
        .spawn(move || server.run(stop2))
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
    let mut ccfg = cfg.clone();
    ccfg.port = port;
    let r = run_client(&ccfg, "127.0.0.1", &out, signal, &[]);
    stop.store(libc::SIGTERM as usize, Relaxed);
    let _ = t.join();
    r
}

/// A client's outcome, made a failure when an output of its own (the HTML
/// report) could not be written. The test's errors were already printed by
/// the sinks; this one is printed here.
fn finish(r: Result<(), Error>, reporter: &mut Reporter, out: &Output) -> Result<(), Error> {
    match (r, reporter.finish()) {
        (Ok(()), Err(e)) => {
            out.write_err(&format!("{}: {}\n", out.program(), e.line()));
            Err(e)
        }
        (r, _) => r,
    }
}

/// A PID file that is removed when dropped.
pub struct PidFile(std::path::PathBuf);

impl PidFile {
    /// Writes our PID (no newline, as iperf3), refusing if the file names a
    /// live process. A failure names the file (iperf3's words do not, which
    /// leaves a daemon's user guessing which path was wrong).
    pub fn create(path: &std::path::Path) -> Result<PidFile, Error> {
        let failed = |why: String| {
            let words = Code::PIDFILE.message().unwrap_or("unable to write PID file");
            Error::msg(Code::PIDFILE, format!("{words} {}: {why}", path.display()))
        };
        if let Ok(old) = std::fs::read_to_string(path)
            && let Ok(pid) = old.trim().parse::<u32>()
            && pid != std::process::id()
            && std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            return Err(failed(format!("process {pid} is running")));
        }
        // Write then rename, so a reader never sees a half-written file.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let io = |e: std::io::Error| failed(wirespeed_core::error::errno_text(&e));
        std::fs::write(&tmp, std::process::id().to_string()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(e)
        })?;
        Ok(PidFile(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
