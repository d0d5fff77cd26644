//! The runs a UI shows: tests it started (each a child process of this
//! binary reporting as a JSON stream) or, on a server with `--ui`, the
//! server's own tests (fed by [`BoardSink`]). Each run keeps its events as
//! the `--json-stream` lines they would print; pages render from those.
//! Every run is recorded in the [`History`] as it goes (its number is its
//! row's); the board holds the recent ones in memory, and brings an older
//! one back from the history when a page asks for it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::form::Plan;
use super::history::{Headline, History, NewRun, Stored};
use wirespeed_core::config::Dialect;
use wirespeed_core::events::{Event, Side};
use wirespeed_report::Sink;
use wirespeed_report::document::StreamEvent;

/// Runs kept in memory; the oldest finished ones go first (the history
/// keeps them all).
const MAX_RUNS: usize = 100;
/// Events kept per run (an `end` is always kept).
const MAX_EVENTS: usize = 100_000;
/// Longest line read from a child.
const MAX_LINE: usize = 64 * 1024 * 1024;
/// Standard error kept per run.
const MAX_STDERR: usize = 16 * 1024;
/// Time a run may take beyond its `-t` before it is ended.
const GRACE: Duration = Duration::from_secs(60);

/// Where a run stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Running.
    Running,
    /// Ended with a result.
    Done,
    /// Ended with an error.
    Failed(String),
    /// Stopped by the user (its summary, if it printed one, is kept).
    Stopped,
    /// The process recording it ended before it did (from the history).
    Interrupted(String),
    /// Running in another process that shares the history.
    Elsewhere,
}

impl State {
    /// The word the page shows.
    pub fn word(&self) -> &'static str {
        match self {
            State::Running => "running",
            State::Done => "done",
            State::Failed(_) => "failed",
            State::Stopped => "stopped",
            State::Interrupted(_) => "interrupted",
            State::Elsewhere => "running elsewhere",
        }
    }

    /// Why it did not end well, if it did not.
    pub fn why(&self) -> Option<&str> {
        match self {
            State::Failed(e) | State::Interrupted(e) => Some(e),
            _ => None,
        }
    }

    fn of_stored(r: &Stored) -> State {
        let why = || r.error.clone().unwrap_or_default();
        match r.state.as_str() {
            "done" => State::Done,
            "stopped" => State::Stopped,
            "failed" => State::Failed(why()),
            "interrupted" => State::Interrupted(why()),
            _ => State::Elsewhere,
        }
    }
}

/// One test.
pub struct Run {
    /// Its number on this board, from 1.
    pub id: u64,
    /// The command line, or who the server is serving.
    pub title: String,
    /// Dialect.
    pub dialect: Dialect,
    /// Epoch seconds at its start.
    pub started: i64,
    /// State.
    pub state: State,
    /// Its `--json-stream` lines, parsed.
    pub events: Vec<Value>,
    /// What the child printed on standard error (capped).
    pub stderr: String,
    child: Option<Arc<Mutex<Child>>>,
    stop_asked: bool,
    /// Events the history could not store (a full disk).
    unstored: usize,
}

impl Run {
    /// Intervals so far.
    pub fn intervals(&self) -> usize {
        self.events
            .iter()
            .filter(|e| StreamEvent::name_of(e) == Some("interval"))
            .count()
    }

    /// What the page lists and shows of the run.
    pub fn summary(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "title": self.title,
            "state": self.state.word(),
            "error": self.state.why(),
            "started": self.started,
            "intervals": self.intervals(),
            "stderr": self.stderr,
        })
    }

    /// The run as documents to draw: one, or one per direction of a
    /// standard responsiveness test (`--rpm=URL`, whose stream starts
    /// each direction with its own `rpm_start`); the last has the error.
    pub fn documents(&self) -> Vec<Value> {
        let starts: Vec<usize> = (self.events.iter().enumerate())
            .filter(|(_, e)| StreamEvent::name_of(e) == Some("rpm_start"))
            .map(|(i, _)| i)
            .collect();
        if starts.len() < 2 {
            return vec![self.document()];
        }
        let mut docs: Vec<Value> = (starts.iter().enumerate())
            .map(|(k, &from)| {
                let to = starts.get(k + 1).copied().unwrap_or(self.events.len());
                wirespeed_report::html::model::from_stream_events(&self.events[from..to]).unwrap_or(Value::Null)
            })
            .collect();
        if let (State::Failed(why), Some(m)) = (&self.state, docs.last_mut().and_then(Value::as_object_mut))
            && !m.contains_key("error")
        {
            m.insert("error".into(), Value::from(why.clone()));
        }
        docs
    }

    /// The run as a `-J` document (start, intervals, end), with its error.
    pub fn document(&self) -> Value {
        let mut doc = wirespeed_report::html::model::from_stream_events(&self.events).unwrap_or(Value::Null);
        if let (State::Failed(why), Some(m)) = (&self.state, doc.as_object_mut())
            && !m.contains_key("error")
        {
            m.insert("error".into(), Value::from(why.clone()));
        }
        doc
    }
}

/// What the board serves for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `wirespeed ui`: the user runs tests; at most this many at once.
    Client {
        /// Runs at once.
        max_running: usize,
    },
    /// `wirespeed -s --ui`: the server's tests, watched.
    Server,
}

/// The runs, and a signal for every change.
pub struct Board {
    /// What it is for.
    pub mode: Mode,
    /// Where every run is recorded.
    pub history: Arc<History>,
    runs: Mutex<Vec<Run>>,
    /// Numbers for runs the history could not record (it failed).
    unrecorded: Mutex<u64>,
    changed: Condvar,
}

impl Board {
    /// An empty board recording into `history`.
    pub fn new(mode: Mode, history: Arc<History>) -> Arc<Board> {
        Arc::new(Board {
            mode,
            history,
            runs: Mutex::new(Vec::new()),
            unrecorded: Mutex::new(1 << 48),
            changed: Condvar::new(),
        })
    }

    /// Brings run `id` into memory from the history if it is not there;
    /// whether the board has it now.
    pub(crate) fn recall(&self, id: u64) -> bool {
        if self.runs().iter().any(|r| r.id == id) {
            return true;
        }
        let Some(stored) = self.history.get(id) else {
            return false;
        };
        let events = self.history.events(id);
        let mut runs = self.runs();
        if runs.iter().any(|r| r.id == id) {
            return true;
        }
        Self::make_room(&mut runs);
        runs.push(Run {
            id,
            title: stored.title.clone(),
            dialect: if stored.dialect == "iperf2" {
                Dialect::Iperf2
            } else {
                Dialect::Iperf3
            },
            started: stored.started_ms / 1000,
            state: State::of_stored(&stored),
            events,
            stderr: stored.stderr.clone(),
            child: None,
            stop_asked: false,
            unstored: 0,
        });
        true
    }

    fn make_room(runs: &mut Vec<Run>) {
        while runs.len() >= MAX_RUNS {
            match runs.iter().position(|r| r.state != State::Running) {
                Some(i) => {
                    runs.remove(i);
                }
                None => break,
            }
        }
    }

    /// The runs, locked.
    pub fn runs(&self) -> MutexGuard<'_, Vec<Run>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits up to `timeout` for a change; returns the runs.
    pub fn wait<'a>(&self, guard: MutexGuard<'a, Vec<Run>>, timeout: Duration) -> MutexGuard<'a, Vec<Run>> {
        match self.changed.wait_timeout(guard, timeout) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        }
    }

    fn open(&self, title: String, new: &NewRun, dialect: Dialect, child: Option<Arc<Mutex<Child>>>) -> u64 {
        let mut runs = self.runs();
        self.open_in(&mut runs, title, new, dialect, child)
    }

    /// Adds a run to `runs` (the board's, locked by the caller) and to the
    /// history.
    fn open_in(
        &self,
        runs: &mut Vec<Run>,
        title: String,
        new: &NewRun,
        dialect: Dialect,
        child: Option<Arc<Mutex<Child>>>,
    ) -> u64 {
        // A run the history cannot take still runs and shows (the page
        // says why the history is failing); its number is out of the
        // history's range.
        let id = self.history.begin(new).unwrap_or_else(|e| {
            self.history.complain(e);
            let mut n = self.unrecorded.lock().unwrap_or_else(|p| p.into_inner());
            *n += 1;
            *n
        });
        Self::make_room(runs);
        runs.push(Run {
            id,
            title,
            dialect,
            started: wirespeed_core::clock::wall_ns() / 1_000_000_000,
            state: State::Running,
            events: Vec::new(),
            stderr: String::new(),
            child,
            stop_asked: false,
            unstored: 0,
        });
        self.changed.notify_all();
        id
    }

    /// Changes run `id`; a run that has ended (or ends now) has its end
    /// recorded.
    fn update(&self, id: u64, f: impl FnOnce(&mut Run)) {
        let mut runs = self.runs();
        if let Some(r) = runs.iter_mut().find(|r| r.id == id) {
            let was = r.state.clone();
            f(r);
            if r.state != State::Running && r.state != was {
                let stored = match &r.state {
                    State::Done => "done",
                    State::Stopped => "stopped",
                    _ => "failed",
                };
                let doc = r.document();
                // A run the history missed events of says so.
                let missed = (r.unstored > 0).then(|| {
                    format!(
                        "the history could not store {} of its {} events",
                        r.unstored,
                        r.events.len()
                    )
                });
                let error = match (r.state.why(), missed) {
                    (Some(why), Some(m)) => Some(format!("{why}; {m}")),
                    (why, m) => why.map(String::from).or(m),
                };
                self.history.finish(id, stored, error.as_deref(), &Headline::of(&doc));
            }
        }
        self.changed.notify_all();
    }

    fn push(&self, id: u64, ev: Value) {
        self.update(id, |r| {
            let name = StreamEvent::name_of(&ev).unwrap_or("");
            if r.events.len() < MAX_EVENTS || matches!(name, "end" | "error") {
                if !self.history.event(id, r.events.len(), &ev) {
                    r.unstored += 1;
                }
                r.events.push(ev);
            }
        });
    }

    /// Starts `plan` as a child of this binary; its number, or why not.
    pub fn launch(self: &Arc<Board>, plan: &Plan) -> Result<u64, String> {
        self.launch_for(plan, None)
    }

    /// [`Board::launch`], for schedule `schedule` when there is one.
    pub(crate) fn launch_for(self: &Arc<Board>, plan: &Plan, schedule: Option<u64>) -> Result<u64, String> {
        let Mode::Client { max_running } = self.mode else {
            return Err("this page watches a server; it runs no tests".into());
        };
        // Held while spawning and adding the run, so two requests cannot
        // both take the last place.
        let mut runs = self.runs();
        let running = runs.iter().filter(|r| r.state == State::Running).count();
        if running >= max_running {
            return Err(format!(
                "{running} test{} already running (at most {max_running} at once): stop it or wait",
                if running == 1 { " is" } else { "s are" }
            ));
        }
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
        let mut child = Command::new(exe)
            .args(plan.process_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the test: {e}"))?;
        let out = child.stdout.take();
        let err = child.stderr.take();
        let child = Arc::new(Mutex::new(child));
        let title = plan.command_line();
        let new = NewRun {
            kind: if schedule.is_some() { "scheduled" } else { "client" },
            schedule,
            title: &title,
            target: &plan.host,
            dialect: dialect_word(plan.dialect),
        };
        let id = self.open_in(&mut runs, title.clone(), &new, plan.dialect, Some(child.clone()));
        drop(runs);
        let deadline = Instant::now() + Duration::from_secs_f64(plan.time) + GRACE;
        if let Some(err) = err {
            let b = self.clone();
            std::thread::spawn(move || b.read_stderr(id, err));
        }
        let b = self.clone();
        std::thread::spawn(move || b.follow(id, child, out, deadline));
        Ok(id)
    }

    fn read_stderr(&self, id: u64, err: impl Read) {
        let mut text = String::new();
        let _ = err.take(MAX_STDERR as u64).read_to_string(&mut text);
        self.history.stderr(id, &text);
        self.update(id, |r| r.stderr = text);
    }

    /// Reads a child's JSON lines until it ends, then records how it
    /// ended. A child past its deadline is killed (a watchdog thread).
    fn follow(self: Arc<Board>, id: u64, child: Arc<Mutex<Child>>, out: Option<impl Read>, deadline: Instant) {
        let watch = child.clone();
        std::thread::spawn(move || {
            while Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(200));
                let mut c = watch.lock().unwrap_or_else(|p| p.into_inner());
                if !matches!(c.try_wait(), Ok(None)) {
                    return;
                }
            }
            let mut c = watch.lock().unwrap_or_else(|p| p.into_inner());
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
        });
        if let Some(out) = out {
            let mut r = BufReader::new(out);
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut r).take(MAX_LINE as u64).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if let Ok(v) = serde_json::from_slice::<Value>(&line)
                            && StreamEvent::name_of(&v).is_some()
                        {
                            self.push(id, v);
                        }
                    }
                }
            }
        }
        // Standard output closed: the child is ending; reap it.
        let status = loop {
            let mut c = child.lock().unwrap_or_else(|p| p.into_inner());
            match c.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) => {}
                Err(_) => break None,
            }
            drop(c);
            std::thread::sleep(Duration::from_millis(20));
        };
        self.update(id, |r| {
            let error = r
                .events
                .iter()
                .rev()
                .find(|e| StreamEvent::name_of(e) == Some("error"))
                .and_then(StreamEvent::error_of);
            r.state = if r.stop_asked {
                State::Stopped
            } else if let Some(e) = error {
                State::Failed(e)
            } else if status.is_some_and(|s| s.success()) {
                State::Done
            } else {
                let why = r.stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
                State::Failed(if why.is_empty() {
                    "the test ended without a result".into()
                } else {
                    why.to_string()
                })
            };
            r.child = None;
        });
    }

    /// Asks run `id` to stop; false when it is not running.
    pub fn stop(&self, id: u64) -> bool {
        let mut runs = self.runs();
        let Some(r) = runs.iter_mut().find(|r| r.id == id && r.state == State::Running) else {
            return false;
        };
        let Some(child) = &r.child else { return false };
        let mut c = child.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(c.try_wait(), Ok(None)) {
            // Ctrl-C: it ends the test and prints the summary so far.
            if wirespeed_sys::process::interrupt_child(c.id()).is_err() {
                let _ = c.kill();
            }
        }
        drop(c);
        r.stop_asked = true;
        self.changed.notify_all();
        true
    }

    /// Opens a run for a test the server is serving (for `client`).
    pub fn serve(self: &Arc<Board>, title: String, client: &str, dialect: Dialect) -> BoardSink {
        let new = NewRun {
            kind: "server",
            schedule: None,
            title: &title,
            target: client,
            dialect: dialect_word(dialect),
        };
        let id = self.open(title.clone(), &new, dialect, None);
        BoardSink {
            board: self.clone(),
            id,
            dialect,
            ended: false,
        }
    }
}

/// The board as the server's watcher: each test the server runs gets a
/// [`BoardSink`] of its own.
pub struct Watch(pub Arc<Board>);

impl wirespeed_report::Watcher for Watch {
    fn sink(&self, title: String, client: &str, dialect: Dialect) -> Box<dyn wirespeed_report::Sink> {
        Box::new(self.0.serve(title, client, dialect))
    }
}

/// The history's word for a dialect.
pub(crate) fn dialect_word(d: Dialect) -> &'static str {
    match d {
        Dialect::Iperf3 => "iperf3",
        Dialect::Iperf2 => "iperf2",
    }
}

/// A server test's events, onto the board.
pub struct BoardSink {
    board: Arc<Board>,
    id: u64,
    dialect: Dialect,
    ended: bool,
}

impl Sink for BoardSink {
    fn event(&mut self, ev: &Event) {
        let Some(v) = wirespeed_report::json::stream_event(ev, Side::Server, self.dialect) else {
            return;
        };
        // The error's words, as the JSON stream has them.
        let why = matches!(ev, Event::Error(_)).then(|| StreamEvent::error_of(&v).unwrap_or_default());
        self.board.push(self.id, v);
        if let Some(why) = why {
            self.board.update(self.id, |r| r.state = State::Failed(why));
        } else if matches!(ev, Event::End(_)) {
            self.ended = true;
            self.board.update(self.id, |r| {
                if r.state == State::Running {
                    r.state = State::Done;
                }
            });
        }
    }
}

impl Drop for BoardSink {
    fn drop(&mut self) {
        if !self.ended {
            self.board.update(self.id, |r| {
                if r.state == State::Running {
                    r.state = State::Done;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_standard_rpm_run_is_drawn_one_direction_each() {
        let ev = |name: &str, data: Value| json!({"event": name, "data": data});
        let way = |w: &str, rpm: f64| {
            vec![
                ev(
                    "rpm_start",
                    json!({"method": format!("RPM over HTTP/2, {w}"), "host": "h", "port": 443}),
                ),
                ev("rpm_interval", json!({"seconds": 1.0, "rpm": rpm, "flows": 1})),
                ev("rpm_end", json!({"rpm": rpm, "direction": w})),
            ]
        };
        let mut run = Run {
            id: 1,
            title: "t".into(),
            dialect: Dialect::Iperf3,
            started: 0,
            state: State::Failed("cut short".into()),
            events: way("download", 100.0),
            stderr: String::new(),
            child: None,
            stop_asked: false,
            unstored: 0,
        };
        // One direction: the one document.
        assert_eq!(run.documents(), vec![run.document()]);
        run.events.extend(way("upload", 200.0));
        let docs = run.documents();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["end"]["direction"], "download");
        assert_eq!(docs[0]["intervals"].as_array().map(Vec::len), Some(1));
        assert_eq!(docs[1]["end"]["direction"], "upload");
        assert_eq!(docs[1]["error"], "cut short");
        assert!(docs[0].get("error").is_none());
    }
}
