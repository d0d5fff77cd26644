//! Output: sinks of one event stream.
//!
//! Each format (iperf3 text, JSON, JSON stream, and the later ones) turns
//! [`Event`]s into text on an [`Output`]. A [`Reporter`] fans events out to
//! the sinks a configuration asks for.

pub mod document;
pub mod ecn;
pub mod html;
pub mod iperf2;
pub mod iperf3;
pub mod json;
pub mod latency;
pub mod live;
pub mod metrics;
pub mod mode;

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

pub use wirespeed_core::events::Event;

use wirespeed_core::config::{Dialect, TestConfig};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::Side;

/// Something that watches every test a server runs (the web UI's board):
/// it gives each test a sink of its own.
pub trait Watcher: Send + Sync {
    /// The sink of a test called `title`, of `dialect`, run for `client`.
    fn sink(&self, title: String, client: &str, dialect: wirespeed_core::config::Dialect) -> Box<dyn Sink>;
}

/// A consumer of measurement events.
pub trait Sink: Send {
    /// Handles one event.
    fn event(&mut self, ev: &Event);

    /// After the last event: a failure of the sink's own output (a report
    /// file that could not be written), which decides the exit code.
    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// Where a sink's text goes: stdout or a log file, with iperf3's optional
/// timestamp prefix and flushing, optionally copied into a capture buffer
/// (`--get-server-output`).
#[derive(Clone)]
pub struct Output {
    target: Target,
    timestamps: Option<String>,
    forceflush: bool,
    capture: Option<Arc<Mutex<String>>>,
    program: String,
}

#[derive(Clone)]
enum Target {
    Stdout,
    File(Arc<LogFile>),
    Buffer(Arc<Mutex<String>>),
}

/// A log file (`--logfile`, iperf 2's `-o`), reopened by name after
/// SIGHUP so log rotation works: the next write after the signal goes to
/// a fresh file of that name (appended to if it exists).
struct LogFile {
    path: std::path::PathBuf,
    file: Mutex<std::fs::File>,
}

/// Raised (by the SIGHUP handler) to have every log file reopened before
/// its next write.
pub fn log_reopen_flag() -> Arc<std::sync::atomic::AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<std::sync::atomic::AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| Arc::new(std::sync::atomic::AtomicBool::new(false)))
        .clone()
}

impl LogFile {
    fn write(&self, text: &str) {
        let Ok(mut f) = self.file.lock() else { return };
        if log_reopen_flag().swap(false, std::sync::atomic::Ordering::Relaxed)
            && let Ok(fresh) = OpenOptions::new().create(true).append(true).open(&self.path)
        {
            *f = fresh;
        }
        let _ = f.write_all(text.as_bytes());
    }
}

impl Output {
    /// Output for a configuration: the log file if one was given, else stdout.
    pub fn for_config(cfg: &TestConfig, program: &str) -> Result<Output, Error> {
        let target = match &cfg.output.logfile {
            Some(path) => {
                let mut oo = OpenOptions::new();
                oo.create(true);
                if cfg.output.logfile_truncate {
                    oo.write(true).truncate(true);
                } else {
                    oo.append(true);
                }
                let f = oo.open(path).map_err(|e| Error::io(Code::LOGFILE, &e))?;
                Target::File(Arc::new(LogFile {
                    path: path.clone(),
                    file: Mutex::new(f),
                }))
            }
            None => Target::Stdout,
        };
        Ok(Output {
            target,
            timestamps: cfg.output.timestamps.clone(),
            forceflush: cfg.output.forceflush,
            capture: None,
            program: program.to_string(),
        })
    }

    /// Output into a shared string (tests, the in-process loopback server).
    pub fn buffer(buf: Arc<Mutex<String>>) -> Output {
        Output {
            target: Target::Buffer(buf),
            timestamps: None,
            forceflush: false,
            capture: None,
            program: "wirespeed".into(),
        }
    }

    /// Output that goes nowhere.
    pub fn discard() -> Output {
        Output::buffer(Arc::new(Mutex::new(String::new())))
    }

    /// Also copy every line into `buf`.
    pub fn with_capture(mut self, buf: Arc<Mutex<String>>) -> Output {
        self.capture = Some(buf);
        self
    }

    /// The program name used in `prog: error - ...` lines.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Writes one chunk of text to the report stream (stdout or the log
    /// file). Like iperf3, `--timestamps` prefixes each chunk, not each line.
    pub fn write(&self, text: &str) {
        let text = match &self.timestamps {
            Some(fmt) if !text.is_empty() => {
                let now = wirespeed_sys::time::epoch_now() as i64;
                let ts = wirespeed_sys::time::strftime(fmt, now, false);
                format!("{ts}{text}")
            }
            _ => text.to_string(),
        };
        if let Some(c) = &self.capture
            && let Ok(mut c) = c.lock()
        {
            c.push_str(&text);
        }
        match &self.target {
            Target::Stdout => {
                let mut out = io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                if self.forceflush || text.ends_with('\n') {
                    let _ = out.flush();
                }
            }
            Target::File(f) => f.write(&text),
            Target::Buffer(b) => {
                if let Ok(mut b) = b.lock() {
                    b.push_str(&text);
                }
            }
        }
    }

    /// Writes a diagnostic (errors, warnings) to stderr, or to the log file
    /// when there is one (as iperf3 does).
    pub fn write_err(&self, text: &str) {
        match &self.target {
            Target::Stdout => {
                let mut e = io::stderr().lock();
                let _ = e.write_all(text.as_bytes());
                let _ = e.flush();
            }
            _ => self.write(text),
        }
    }

    /// Whether output goes to a terminal.
    pub(crate) fn is_terminal(&self) -> bool {
        use std::io::IsTerminal;
        matches!(self.target, Target::Stdout) && io::stdout().is_terminal()
    }
}

/// What fills in events before the sinks see them (the latency probes).
pub type Stage = Box<dyn FnMut(&mut Event) + Send>;

/// Fans events out to every sink.
#[derive(Default)]
pub struct Reporter {
    sinks: Vec<Box<dyn Sink>>,
    stage: Option<Stage>,
}

impl Reporter {
    /// A reporter with no sinks.
    pub fn new() -> Reporter {
        Reporter::default()
    }

    /// Adds a sink.
    pub fn add(&mut self, sink: Box<dyn Sink>) {
        self.sinks.push(sink);
    }

    /// Lets `stage` add to every event before the sinks see it.
    pub fn set_stage(&mut self, stage: Stage) {
        self.stage = Some(stage);
    }

    /// Delivers an event to every sink.
    pub fn emit(&mut self, mut ev: Event) {
        if let Some(st) = self.stage.as_mut() {
            st(&mut ev);
        }
        for s in &mut self.sinks {
            s.event(&ev);
        }
    }

    /// The first failure any sink had with its own output.
    pub fn finish(&mut self) -> Result<(), Error> {
        let mut first = Ok(());
        for s in &mut self.sinks {
            if let Err(e) = s.finish()
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }

    /// The sinks a configuration asks for, writing to `out`: one
    /// format (JSON, the JSON stream, CSV, or the dialect's text, with
    /// `--live` drawn around it on a terminal), and the HTML report. A
    /// mode (`--rpm`, `--udp-search`) has its own text and `-J` document
    /// beside them (the JSON stream and the HTML report write its events
    /// themselves).
    pub fn for_config(cfg: &TestConfig, out: Output, side: Side) -> Reporter {
        let mut r = Reporter::new();
        if mode::is_mode(cfg) && !cfg.output.json_stream {
            if cfg.output.json {
                r.add(Box::new(mode::ModeJson::new(out.clone())));
            } else {
                r.add(Box::new(mode::ModeText::new(cfg, out.clone())));
            }
        }
        if cfg.output.json_stream {
            r.add(Box::new(json::JsonStreamSink::new(cfg, out.clone(), side)));
            if cfg.output.json_stream_full {
                r.add(Box::new(json::JsonSink::new(cfg, out.clone(), side)));
            }
        } else if cfg.output.json {
            r.add(Box::new(json::JsonSink::new(cfg, out.clone(), side)));
        } else if cfg.output.csv {
            r.add(Box::new(iperf2::csv::CsvSink::new(cfg, out.clone(), side)));
        } else {
            let text: Box<dyn Sink> = match cfg.dialect {
                Dialect::Iperf3 => Box::new(iperf3::text::TextSink::new(cfg, out.clone(), side)),
                Dialect::Iperf2 => Box::new(iperf2::text::Iperf2Text::new(
                    cfg,
                    out.clone(),
                    side,
                    iperf2::text::process_header(),
                )),
            };
            // --live draws around the text, on a terminal only.
            if cfg.output.live && out.is_terminal() {
                r.add(Box::new(live::LiveSink::new(text, live::Terminal::stdout())));
            } else {
                r.add(text);
            }
        }
        if let Some(path) = &cfg.output.html_report {
            r.add(Box::new(html::HtmlSink::new(cfg, out, side, path.clone())));
        }
        r
    }
}

impl Reporter {
    /// A reporter that hands every event to `shared` (another thread's
    /// reporter: an iperf 2 client's connect-back reports into the
    /// client's).
    pub fn forwarding(shared: Arc<Mutex<Reporter>>) -> Reporter {
        let mut r = Reporter::new();
        r.add(Box::new(Forward(shared)));
        r
    }
}

/// Holds events back until its [`GateKey`] opens it, then hands them, and
/// every later one, to a shared reporter in order (iperf 2's `-r`: the
/// connect-back is reported after the client's own flows).
pub struct Gate {
    state: Arc<Mutex<(bool, Vec<Event>)>>,
    to: Arc<Mutex<Reporter>>,
}

/// Opens a [`Gate`].
pub struct GateKey(Arc<Mutex<(bool, Vec<Event>)>>, Arc<Mutex<Reporter>>);

impl Gate {
    /// A closed gate in front of `to`, and its key.
    pub fn new(to: Arc<Mutex<Reporter>>) -> (Gate, GateKey) {
        let state = Arc::new(Mutex::new((false, Vec::new())));
        (
            Gate {
                state: state.clone(),
                to: to.clone(),
            },
            GateKey(state, to),
        )
    }
}

impl Sink for Gate {
    fn event(&mut self, ev: &Event) {
        let Ok(mut st) = self.state.lock() else { return };
        if st.0 {
            if let Ok(mut r) = self.to.lock() {
                r.emit(ev.clone());
            }
        } else {
            st.1.push(ev.clone());
        }
    }
}

impl GateKey {
    /// Lets the held events through, in order, and every later one.
    pub fn open(&self) {
        let Ok(mut st) = self.0.lock() else { return };
        st.0 = true;
        let held = std::mem::take(&mut st.1);
        if let Ok(mut r) = self.1.lock() {
            for ev in held {
                r.emit(ev);
            }
        }
    }
}

/// Hands events on to a shared reporter.
struct Forward(Arc<Mutex<Reporter>>);

impl Sink for Forward {
    fn event(&mut self, ev: &Event) {
        if let Ok(mut r) = self.0.lock() {
            r.emit(ev.clone());
        }
    }
}

/// A sink that keeps every event (tests, the HTML report, metrics).
#[derive(Clone, Default)]
pub struct Recorder {
    /// Events seen so far.
    pub events: Arc<Mutex<Vec<Event>>>,
}

impl Sink for Recorder {
    fn event(&mut self, ev: &Event) {
        if let Ok(mut e) = self.events.lock() {
            e.push(ev.clone());
        }
    }
}
