//! The runs a UI shows: tests it started (each a child process of this
//! binary reporting as a JSON stream) or, on a server with `--ui`, the
//! server's own tests (fed by [`BoardSink`]). Each run keeps its events as
//! the `--json-stream` lines they would print; pages render from those.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::form::Plan;
use crate::config::Dialect;
use crate::events::{Event, Side};
use crate::report::Sink;

/// Runs kept; the oldest finished ones go first.
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
}

impl State {
    /// The word the page shows.
    pub fn word(&self) -> &'static str {
        match self {
            State::Running => "running",
            State::Done => "done",
            State::Failed(_) => "failed",
            State::Stopped => "stopped",
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
}

impl Run {
    /// Intervals so far.
    pub fn intervals(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e.get("event").and_then(Value::as_str) == Some("interval"))
            .count()
    }

    /// What the page lists and shows of the run.
    pub fn summary(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "title": self.title,
            "state": self.state.word(),
            "error": match &self.state { State::Failed(e) => Some(e.clone()), _ => None },
            "started": self.started,
            "intervals": self.intervals(),
            "stderr": self.stderr,
        })
    }

    /// The run as a `-J` document (start, intervals, end), with its error.
    pub fn document(&self) -> Value {
        let mut doc = crate::report::html::model::from_stream_events(&self.events).unwrap_or(Value::Null);
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
    runs: Mutex<Vec<Run>>,
    next: Mutex<u64>,
    changed: Condvar,
}

impl Board {
    /// An empty board.
    pub fn new(mode: Mode) -> Arc<Board> {
        Arc::new(Board {
            mode,
            runs: Mutex::new(Vec::new()),
            next: Mutex::new(0),
            changed: Condvar::new(),
        })
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

    fn open(&self, title: String, dialect: Dialect, child: Option<Arc<Mutex<Child>>>) -> u64 {
        let mut runs = self.runs();
        self.open_in(&mut runs, title, dialect, child)
    }

    /// Adds a run to `runs` (the board's, locked by the caller).
    fn open_in(&self, runs: &mut Vec<Run>, title: String, dialect: Dialect, child: Option<Arc<Mutex<Child>>>) -> u64 {
        let id = {
            let mut n = self.next.lock().unwrap_or_else(|p| p.into_inner());
            *n += 1;
            *n
        };
        while runs.len() >= MAX_RUNS {
            match runs.iter().position(|r| r.state != State::Running) {
                Some(i) => {
                    runs.remove(i);
                }
                None => break,
            }
        }
        runs.push(Run {
            id,
            title,
            dialect,
            started: crate::clock::wall_ns() / 1_000_000_000,
            state: State::Running,
            events: Vec::new(),
            stderr: String::new(),
            child,
            stop_asked: false,
        });
        self.changed.notify_all();
        id
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut Run)) {
        let mut runs = self.runs();
        if let Some(r) = runs.iter_mut().find(|r| r.id == id) {
            f(r);
        }
        self.changed.notify_all();
    }

    fn push(&self, id: u64, ev: Value) {
        self.update(id, |r| {
            let name = ev.get("event").and_then(Value::as_str).unwrap_or("");
            if r.events.len() < MAX_EVENTS || matches!(name, "end" | "error") {
                r.events.push(ev);
            }
        });
    }

    /// Starts `plan` as a child of this binary; its number, or why not.
    pub fn launch(self: &Arc<Board>, plan: &Plan) -> Result<u64, String> {
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
        let id = self.open_in(&mut runs, plan.command_line(), plan.dialect, Some(child.clone()));
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
                            && v.get("event").is_some()
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
                .find(|e| e.get("event").and_then(Value::as_str) == Some("error"))
                .and_then(|e| e.get("data").and_then(Value::as_str))
                .map(String::from);
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
            if crate::sys::process::interrupt_child(c.id()).is_err() {
                let _ = c.kill();
            }
        }
        drop(c);
        r.stop_asked = true;
        self.changed.notify_all();
        true
    }

    /// Opens a run for a test the server is serving.
    pub fn serve(self: &Arc<Board>, title: String, dialect: Dialect) -> BoardSink {
        let id = self.open(title, dialect, None);
        BoardSink {
            board: self.clone(),
            id,
            dialect,
            ended: false,
        }
    }
}

impl crate::report::Watcher for Arc<Board> {
    fn sink(&self, title: String, dialect: Dialect) -> Box<dyn crate::report::Sink> {
        Box::new(self.serve(title, dialect))
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
        let Some(v) = crate::report::json::stream_event(ev, Side::Server, self.dialect) else {
            return;
        };
        // The error's words, as the JSON stream has them.
        let why = matches!(ev, Event::Error(_)).then(|| v["data"].as_str().unwrap_or("").to_string());
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
