//! The UI's memory: every run it starts or watches, and its schedules, in
//! one SQLite file (`--db`). A run is a row from the moment it starts; each
//! event it reports is a row of its own, written as it arrives (each write
//! its own transaction, so a crash leaves whole events, never half of
//! one); its end writes its state and headline numbers in one more. A
//! process that dies mid-run leaves its rows marked `running`; the next
//! process to open the file marks them `interrupted`, once the process
//! that owned them is gone (its pid no longer exists, or it has not shown
//! a sign of life for [`STALE_OWNER`]). Several processes (a `wirespeed
//! ui` and a `wirespeed -s --ui`) may share one file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use wirespeed_report::document::{Document, End, Rtt};

/// The schema's version, in SQLite's `user_version`.
const SCHEMA_VERSION: i64 = 1;
/// An owner silent this long is taken for dead.
pub(crate) const STALE_OWNER: Duration = Duration::from_secs(60);
/// How often a process shows it is alive.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// How long a write waits for another process's lock.
const BUSY_WAIT: Duration = Duration::from_secs(3);
/// Most rows one listing returns.
pub(crate) const MAX_LIST: usize = 5_000;
/// The intervals a run (`runs.id`) stored: its row's count is always
/// what its events hold, whatever its process counted.
macro_rules! stored_intervals {
    () => {
        "(SELECT count(*) FROM events WHERE events.run = runs.id \
         AND CASE WHEN json_valid(line) THEN json_extract(line, '$.event') END = 'interval')"
    };
}
/// Marks owner ?1's running runs interrupted at ?2 (unless they had an
/// end), with the intervals they stored.
const INTERRUPT: &str = concat!(
    "UPDATE runs SET state = 'interrupted', ended_ms = COALESCE(ended_ms, ?2), \
     error = 'the process recording it ended before the run did', intervals = ",
    stored_intervals!(),
    " WHERE owner = ?1 AND state = 'running'"
);
/// Writes run ?1's end: its state, error, end time and numbers, and the
/// intervals it stored.
const FINISH: &str = concat!(
    "UPDATE runs SET state = ?2, error = ?3, ended_ms = ?4, sent_bps = ?5, received_bps = ?6, \
     retransmits = ?7, rtt_ms = ?8, jitter_ms = ?9, lost_percent = ?10, idle_ms = ?11, loaded_ms = ?12, \
     rpm = ?13, intervals = ",
    stored_intervals!(),
    " WHERE id = ?1"
);

/// Most points one chart draws.
pub(crate) const MAX_POINTS: usize = 20_000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS owners(
  id INTEGER PRIMARY KEY,
  pid INTEGER NOT NULL,
  seen_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  owner INTEGER NOT NULL,
  kind TEXT NOT NULL,
  schedule INTEGER,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER,
  title TEXT NOT NULL,
  target TEXT NOT NULL,
  dialect TEXT NOT NULL,
  state TEXT NOT NULL,
  error TEXT,
  intervals INTEGER NOT NULL DEFAULT 0,
  stderr TEXT NOT NULL DEFAULT '',
  sent_bps REAL,
  received_bps REAL,
  retransmits INTEGER,
  rtt_ms REAL,
  jitter_ms REAL,
  lost_percent REAL,
  idle_ms REAL,
  loaded_ms REAL,
  rpm REAL
);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs(started_ms);
CREATE INDEX IF NOT EXISTS runs_by_target ON runs(target, started_ms);
CREATE INDEX IF NOT EXISTS runs_by_schedule ON runs(schedule, started_ms);
CREATE TABLE IF NOT EXISTS events(
  run INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  line TEXT NOT NULL,
  PRIMARY KEY(run, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS schedules(
  id INTEGER PRIMARY KEY,
  form TEXT NOT NULL,
  title TEXT NOT NULL,
  target TEXT NOT NULL,
  dialect TEXT NOT NULL,
  every_s INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  next_ms INTEGER NOT NULL
);
";

/// The numbers a run is listed and charted by, from its `-J` document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headline {
    /// What the sender sent, bit/s.
    pub sent_bps: Option<f64>,
    /// What the receiver received, bit/s.
    pub received_bps: Option<f64>,
    /// TCP retransmits.
    pub retransmits: Option<i64>,
    /// The senders' mean smoothed RTT (TCP), ms.
    pub rtt_ms: Option<f64>,
    /// UDP jitter, ms.
    pub jitter_ms: Option<f64>,
    /// UDP loss, percent.
    pub lost_percent: Option<f64>,
    /// `--latency`: the idle median round trip, ms.
    pub idle_ms: Option<f64>,
    /// `--latency`: the loaded median round trip, ms.
    pub loaded_ms: Option<f64>,
    /// `--rpm`: round trips per minute.
    pub rpm: Option<f64>,
}

impl Headline {
    /// Reads the numbers out of a run's document (any that are missing
    /// stay unknown).
    pub fn of(doc: &Value) -> Headline {
        match Document::from_value(doc) {
            Ok(Document::Test(t)) => Headline::of_test(&t.end.unwrap_or_default()),
            Ok(Document::Rpm(r)) => {
                let end = r.end.unwrap_or_default();
                Headline {
                    sent_bps: end.goodput_bits_per_second,
                    rpm: end.rpm,
                    ..Headline::default()
                }
            }
            _ => Headline::default(),
        }
    }

    fn of_test(end: &End) -> Headline {
        let sum = if end.sum.is_some() { &end.sum } else { &end.sum_received };
        // Mean RTT over the streams whose sender is this end's or the
        // peer's (iperf3 reports it in microseconds).
        let rtts: Vec<f64> = (end.streams.iter())
            .filter_map(|s| s.sender.as_ref().and_then(|x| x.mean_rtt))
            .filter(|r| *r > 0.0)
            .collect();
        let p50 = |r: Option<&Rtt>| r.and_then(|r| r.p50_ms);
        let latency = end.latency.as_ref();
        Headline {
            sent_bps: end.sum_sent.as_ref().and_then(|s| s.bits_per_second),
            received_bps: end.sum_received.as_ref().and_then(|s| s.bits_per_second),
            retransmits: end.sum_sent.as_ref().and_then(|s| s.retransmits),
            rtt_ms: (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64 / 1000.0),
            jitter_ms: sum.as_ref().and_then(|s| s.jitter_ms),
            lost_percent: sum.as_ref().and_then(|s| s.lost_percent),
            idle_ms: p50(latency.and_then(|l| l.idle.as_ref())),
            loaded_ms: p50(latency.and_then(|l| l.loaded.as_ref())),
            rpm: None,
        }
    }

    fn json(&self) -> Value {
        serde_json::json!({
            "sent_bps": self.sent_bps,
            "received_bps": self.received_bps,
            "retransmits": self.retransmits,
            "rtt_ms": self.rtt_ms,
            "jitter_ms": self.jitter_ms,
            "lost_percent": self.lost_percent,
            "latency_idle_ms": self.idle_ms,
            "latency_loaded_ms": self.loaded_ms,
            "rpm": self.rpm,
        })
    }
}

/// A run as it starts.
pub struct NewRun<'a> {
    /// `client` (started on the page), `scheduled` or `server` (watched).
    pub kind: &'a str,
    /// The schedule that started it.
    pub schedule: Option<u64>,
    /// Its command line, or who the server is serving.
    pub title: &'a str,
    /// The host it measured against (the server, or a server's client).
    pub target: &'a str,
    /// `iperf3` or `iperf2`.
    pub dialect: &'a str,
}

/// A stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Its number.
    pub id: u64,
    /// How it started (see [`NewRun::kind`]).
    pub kind: String,
    /// Its schedule.
    pub schedule: Option<u64>,
    /// Epoch ms at its start.
    pub started_ms: i64,
    /// Epoch ms at its end.
    pub ended_ms: Option<i64>,
    /// Its command line or description.
    pub title: String,
    /// Its target.
    pub target: String,
    /// Its dialect.
    pub dialect: String,
    /// running, done, failed, stopped or interrupted.
    pub state: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Intervals it reported.
    pub intervals: i64,
    /// What its process printed on standard error.
    pub stderr: String,
    /// Its numbers.
    pub headline: Headline,
}

impl Stored {
    /// The run as the page lists it.
    pub fn json(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "kind": self.kind,
            "schedule": self.schedule,
            "title": self.title,
            "target": self.target,
            "dialect": self.dialect,
            "state": self.state,
            "error": self.error,
            "started": self.started_ms / 1000,
            "started_ms": self.started_ms,
            "ended_ms": self.ended_ms,
            "intervals": self.intervals,
            "stderr": self.stderr,
            "headline": self.headline.json(),
        })
    }
}

/// Which runs a listing wants.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Started at or after (epoch ms).
    pub from_ms: Option<i64>,
    /// Started before (epoch ms).
    pub to_ms: Option<i64>,
    /// Against this target only.
    pub target: Option<String>,
    /// Started by this schedule only.
    pub schedule: Option<u64>,
    /// Older than this run (paging).
    pub before: Option<u64>,
    /// A server's tests only (`true`), or the runs a page started and
    /// its schedules' (`false`).
    pub served: Option<bool>,
    /// At most this many, newest first (capped at [`MAX_POINTS`]).
    pub limit: usize,
}

/// A recurring test.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// Its number.
    pub id: u64,
    /// The page's form it runs.
    pub form: Value,
    /// Its command line.
    pub title: String,
    /// The host it measures against.
    pub target: String,
    /// `iperf3` or `iperf2`.
    pub dialect: String,
    /// Seconds between runs.
    pub every_s: i64,
    /// When it next runs (epoch ms).
    pub next_ms: i64,
}

impl Schedule {
    /// The schedule as the page lists it.
    pub fn json(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "title": self.title,
            "target": self.target,
            "dialect": self.dialect,
            "every_s": self.every_s,
            "next_ms": self.next_ms,
        })
    }
}

/// The database, and this process's row in its `owners`.
pub struct History {
    conn: Mutex<Connection>,
    owner: i64,
    path: String,
    /// The last write that failed, for the page to show.
    trouble: Mutex<Option<String>>,
    /// Ends of runs that could not be written yet (a full disk): written
    /// before the next run's start or end, at each heartbeat, and at exit.
    pending: Mutex<Vec<Ending>>,
}

/// A run's end, as [`FINISH`] writes it.
struct Ending {
    id: u64,
    state: String,
    error: Option<String>,
    ended_ms: i64,
    h: Headline,
}

impl Ending {
    fn write(&self, c: &Connection) -> rusqlite::Result<usize> {
        let h = &self.h;
        c.execute(
            FINISH,
            params![
                self.id as i64,
                self.state,
                self.error,
                self.ended_ms,
                h.sent_bps,
                h.received_bps,
                h.retransmits,
                h.rtt_ms,
                h.jitter_ms,
                h.lost_percent,
                h.idle_ms,
                h.loaded_ms,
                h.rpm
            ],
        )
    }
}

fn now_ms() -> i64 {
    wirespeed_core::clock::wall_ns() / 1_000_000
}

fn text(e: rusqlite::Error) -> String {
    e.to_string()
}

/// Where `--db` is unless told: the user's data directory.
pub(crate) fn default_path() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = if cfg!(windows) {
        env("LOCALAPPDATA")?
    } else {
        env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local").join("share")))?
    };
    Some(base.join("wirespeed").join("history.db"))
}

/// The path `--db` names (`:memory:` keeps nothing), or the default; its
/// directory is made if missing.
pub fn resolve(given: Option<&str>) -> Result<String, String> {
    let path = match given {
        Some("") => return Err("--db wants a file name (or :memory:)".into()),
        Some(p) => PathBuf::from(p),
        None => default_path()
            .ok_or("no data directory (neither HOME nor XDG_DATA_HOME is set): give --db PATH or --db :memory:")?,
    };
    if path.as_os_str() == ":memory:" {
        return Ok(":memory:".into());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    Ok(path.to_string_lossy().into_owned())
}

impl History {
    /// Opens (or makes) the database at `path` (from [`resolve`]), and
    /// marks the runs of owners that are gone as interrupted.
    pub fn open(path: &str) -> Result<History, String> {
        let why = |e: rusqlite::Error| format!("cannot use the history database {path}: {e}");
        let conn = if path == ":memory:" {
            Connection::open_in_memory()
        } else {
            Connection::open(Path::new(path))
        }
        .map_err(why)?;
        conn.busy_timeout(BUSY_WAIT).map_err(why)?;
        // WAL: readers do not wait for the writer, and a commit is one
        // append (NORMAL: durable across a crash of the process; a power
        // cut may lose the last commits, never corrupt the file).
        let _: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(why)?;
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
            .map_err(why)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(why)?;
        if version > SCHEMA_VERSION {
            return Err(format!(
                "the history database {path} is of a newer wirespeed (schema {version}; this one knows {SCHEMA_VERSION})"
            ));
        }
        conn.execute_batch(SCHEMA).map_err(why)?;
        conn.execute_batch(&format!("PRAGMA user_version={SCHEMA_VERSION}"))
            .map_err(why)?;
        conn.execute(
            "INSERT INTO owners(pid, seen_ms) VALUES (?1, ?2)",
            params![std::process::id(), now_ms()],
        )
        .map_err(why)?;
        let owner = conn.last_insert_rowid();
        let h = History {
            conn: Mutex::new(conn),
            owner,
            path: path.to_string(),
            trouble: Mutex::new(None),
            pending: Mutex::new(Vec::new()),
        };
        h.reap()
            .map_err(|e| format!("cannot use the history database {path}: {e}"))?;
        Ok(h)
    }

    /// The file it is kept in.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The last write that failed (it is retried by nothing: the run's
    /// next write may succeed).
    pub(crate) fn trouble(&self) -> Option<String> {
        self.trouble.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records `why` as the history's trouble; the page shows it, and
    /// standard error has it once (not once a failed write: a full disk
    /// fails every event of every run).
    pub(crate) fn complain(&self, why: String) {
        let line = format!("history: {why}");
        let mut t = self.trouble.lock().unwrap_or_else(|p| p.into_inner());
        if t.as_deref() != Some(line.as_str()) {
            eprintln!("wirespeed: {line}");
        }
        *t = Some(line);
    }

    /// What a failed write says: a full disk in plain words.
    pub(crate) fn write_error(&self, e: &rusqlite::Error) -> String {
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
            format!(
                "cannot write to {}: the disk is full (tests still run, but are not recorded until there is room)",
                self.path
            )
        } else {
            format!("cannot write to {}: {e}", self.path)
        }
    }

    fn note<T>(&self, r: rusqlite::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.complain(self.write_error(&e));
                None
            }
        }
    }

    /// Shows this process alive, and marks as interrupted the runs of
    /// owners that are not (call now and then).
    pub fn reap(&self) -> rusqlite::Result<usize> {
        let mut c = self.conn();
        self.write_pending(&c);
        let now = now_ms();
        let tx = c.transaction()?;
        tx.execute("UPDATE owners SET seen_ms = ?1 WHERE id = ?2", params![now, self.owner])?;
        let owners: Vec<(i64, u32, i64)> = {
            let mut q = tx.prepare("SELECT id, pid, seen_ms FROM owners WHERE id != ?1")?;
            q.query_map([self.owner], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()?
        };
        let stale = STALE_OWNER.as_millis() as i64;
        let mut marked = 0;
        for (id, pid, seen) in owners {
            if now - seen > stale || !wirespeed_sys::process::alive(pid) {
                marked += tx.execute(INTERRUPT, params![id, now])?;
                tx.execute("DELETE FROM owners WHERE id = ?1", [id])?;
            }
        }
        tx.commit()?;
        Ok(marked)
    }

    /// Shows this process alive every [`HEARTBEAT`] (and marks dead
    /// owners' runs interrupted) on a thread of its own, for as long as
    /// the history is in use.
    pub fn keep_alive(self: &Arc<History>) {
        let weak = Arc::downgrade(self);
        let _ = std::thread::Builder::new().name("ws-history".into()).spawn(move || {
            loop {
                std::thread::sleep(HEARTBEAT);
                let Some(h) = weak.upgrade() else { return };
                if let Err(e) = h.reap() {
                    h.complain(h.write_error(&e));
                }
            }
        });
    }

    /// Records a run's start; its number.
    pub fn begin(&self, r: &NewRun) -> Result<u64, String> {
        let c = self.conn();
        self.write_pending(&c);
        c.execute(
            "INSERT INTO runs(owner, kind, schedule, started_ms, title, target, dialect, state) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running')",
            params![
                self.owner,
                r.kind,
                r.schedule.map(|s| s as i64),
                now_ms(),
                r.title,
                r.target,
                r.dialect
            ],
        )
        .map_err(|e| self.write_error(&e))?;
        Ok(c.last_insert_rowid() as u64)
    }

    /// Records a run that never ran (a schedule's missed turn).
    pub fn missed(&self, r: &NewRun, why: &str) -> Result<u64, String> {
        let c = self.conn();
        let now = now_ms();
        c.execute(
            "INSERT INTO runs(owner, kind, schedule, started_ms, ended_ms, title, target, dialect, state, error) \
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, 'failed', ?8)",
            params![
                self.owner,
                r.kind,
                r.schedule.map(|s| s as i64),
                now,
                r.title,
                r.target,
                r.dialect,
                why
            ],
        )
        .map_err(text)?;
        Ok(c.last_insert_rowid() as u64)
    }

    /// Appends event number `seq` of run `id`; whether the file took it.
    pub fn event(&self, id: u64, seq: usize, ev: &Value) -> bool {
        let r = self.conn().execute(
            "INSERT OR REPLACE INTO events(run, seq, line) VALUES (?1, ?2, ?3)",
            params![id as i64, seq as i64, ev.to_string()],
        );
        self.note(r).is_some()
    }

    /// Records what run `id`'s process printed on standard error.
    pub fn stderr(&self, id: u64, text: &str) {
        let r = self
            .conn()
            .execute("UPDATE runs SET stderr = ?2 WHERE id = ?1", params![id as i64, text]);
        self.note(r);
    }

    /// Records run `id`'s end (its interval count is what its events
    /// hold). An end the file refuses is kept and written later.
    pub fn finish(&self, id: u64, state: &str, error: Option<&str>, h: &Headline) {
        let end = Ending {
            id,
            state: state.to_string(),
            error: error.map(String::from),
            ended_ms: now_ms(),
            h: h.clone(),
        };
        let c = self.conn();
        self.write_pending(&c);
        if let Err(e) = end.write(&c) {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).push(end);
            drop(c);
            self.complain(self.write_error(&e));
        }
    }

    /// Writes the ends that could not be written before (oldest first),
    /// keeping those that still cannot.
    fn write_pending(&self, c: &Connection) {
        let mut p = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        p.retain(|end| end.write(c).is_err());
    }

    const COLUMNS: &str = "id, kind, schedule, started_ms, ended_ms, title, target, dialect, state, error, \
         intervals, stderr, sent_bps, received_bps, retransmits, rtt_ms, jitter_ms, lost_percent, idle_ms, \
         loaded_ms, rpm";

    fn row(r: &rusqlite::Row) -> rusqlite::Result<Stored> {
        Ok(Stored {
            id: r.get::<_, i64>(0)? as u64,
            kind: r.get(1)?,
            schedule: r.get::<_, Option<i64>>(2)?.map(|s| s as u64),
            started_ms: r.get(3)?,
            ended_ms: r.get(4)?,
            title: r.get(5)?,
            target: r.get(6)?,
            dialect: r.get(7)?,
            state: r.get(8)?,
            error: r.get(9)?,
            intervals: r.get(10)?,
            stderr: r.get(11)?,
            headline: Headline {
                sent_bps: r.get(12)?,
                received_bps: r.get(13)?,
                retransmits: r.get(14)?,
                rtt_ms: r.get(15)?,
                jitter_ms: r.get(16)?,
                lost_percent: r.get(17)?,
                idle_ms: r.get(18)?,
                loaded_ms: r.get(19)?,
                rpm: r.get(20)?,
            },
        })
    }

    /// The runs `q` asks for.
    pub fn list(&self, q: &Query) -> Result<Vec<Stored>, String> {
        let mut sql = format!("SELECT {} FROM runs WHERE 1", Self::COLUMNS);
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        let mut cond = |clause: &str, v: rusqlite::types::Value| {
            args.push(v);
            sql.push_str(&format!(" AND {clause} ?{}", args.len()));
        };
        if let Some(f) = q.from_ms {
            cond("started_ms >=", f.into());
        }
        if let Some(t) = q.to_ms {
            cond("started_ms <", t.into());
        }
        if let Some(t) = &q.target {
            cond("target =", t.clone().into());
        }
        if let Some(s) = q.schedule {
            cond("schedule =", (s as i64).into());
        }
        if let Some(b) = q.before {
            cond("id <", (b as i64).into());
        }
        if let Some(served) = q.served {
            cond(if served { "kind =" } else { "kind !=" }, "server".to_string().into());
        }
        sql.push_str(&format!(
            " ORDER BY started_ms DESC, id DESC LIMIT {}",
            q.limit.clamp(1, MAX_LIST.max(MAX_POINTS))
        ));
        let c = self.conn();
        let mut st = c.prepare(&sql).map_err(text)?;
        st.query_map(rusqlite::params_from_iter(args), Self::row)
            .and_then(|rows| rows.collect())
            .map_err(text)
    }

    /// Run `id`.
    pub fn get(&self, id: u64) -> Option<Stored> {
        let c = self.conn();
        c.query_row(
            &format!("SELECT {} FROM runs WHERE id = ?1", Self::COLUMNS),
            [id as i64],
            Self::row,
        )
        .optional()
        .ok()
        .flatten()
    }

    /// Run `id`'s events, in order.
    pub fn events(&self, id: u64) -> Vec<Value> {
        let c = self.conn();
        let Ok(mut st) = c.prepare("SELECT line FROM events WHERE run = ?1 ORDER BY seq") else {
            return Vec::new();
        };
        st.query_map([id as i64], |r| r.get::<_, String>(0))
            .map(|rows| {
                rows.filter_map(Result::ok)
                    .filter_map(|l| serde_json::from_str(&l).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The targets measured, with how many runs each and the newest.
    pub fn targets(&self) -> Vec<(String, i64, i64)> {
        let c = self.conn();
        let Ok(mut st) =
            c.prepare("SELECT target, COUNT(*), MAX(started_ms) FROM runs GROUP BY target ORDER BY 3 DESC LIMIT 500")
        else {
            return Vec::new();
        };
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map(|rows| rows.filter_map(Result::ok).collect())
            .unwrap_or_default()
    }

    /// Adds a schedule; its number.
    pub(crate) fn add_schedule(&self, s: &Schedule) -> Result<u64, String> {
        let c = self.conn();
        c.execute(
            "INSERT INTO schedules(form, title, target, dialect, every_s, created_ms, next_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                s.form.to_string(),
                s.title,
                s.target,
                s.dialect,
                s.every_s,
                now_ms(),
                s.next_ms
            ],
        )
        .map_err(text)?;
        Ok(c.last_insert_rowid() as u64)
    }

    /// Removes schedule `id`; whether there was one.
    pub(crate) fn remove_schedule(&self, id: u64) -> bool {
        self.conn()
            .execute("DELETE FROM schedules WHERE id = ?1", [id as i64])
            .is_ok_and(|n| n > 0)
    }

    /// The schedules, oldest first.
    pub fn schedules(&self) -> Vec<Schedule> {
        let c = self.conn();
        let Ok(mut st) =
            c.prepare("SELECT id, form, title, target, dialect, every_s, next_ms FROM schedules ORDER BY id")
        else {
            return Vec::new();
        };
        st.query_map([], |r| {
            Ok(Schedule {
                id: r.get::<_, i64>(0)? as u64,
                form: serde_json::from_str(&r.get::<_, String>(1)?).unwrap_or(Value::Null),
                title: r.get(2)?,
                target: r.get(3)?,
                dialect: r.get(4)?,
                every_s: r.get(5)?,
                next_ms: r.get(6)?,
            })
        })
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
    }

    /// Moves schedule `id`'s next run to `next_ms`, if it is still due at
    /// `due_ms` (another process sharing the file may have taken this
    /// turn); whether this process took it.
    pub(crate) fn take_turn(&self, id: u64, due_ms: i64, next_ms: i64) -> bool {
        self.conn()
            .execute(
                "UPDATE schedules SET next_ms = ?3 WHERE id = ?1 AND next_ms = ?2",
                params![id as i64, due_ms, next_ms],
            )
            .is_ok_and(|n| n == 1)
    }

    /// Runs so far by schedule `id` and outcome (`done`, `failed`, ...).
    pub(crate) fn schedule_counts(&self, id: u64) -> Vec<(String, i64)> {
        let c = self.conn();
        let Ok(mut st) = c.prepare("SELECT state, COUNT(*) FROM runs WHERE schedule = ?1 GROUP BY state") else {
            return Vec::new();
        };
        st.query_map([id as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .map(|rows| rows.filter_map(Result::ok).collect())
            .unwrap_or_default()
    }

    /// Schedule `id`'s newest run that has ended.
    pub(crate) fn latest_of(&self, id: u64) -> Option<Stored> {
        let c = self.conn();
        c.query_row(
            &format!(
                "SELECT {} FROM runs WHERE schedule = ?1 AND state != 'running' ORDER BY started_ms DESC, id DESC LIMIT 1",
                Self::COLUMNS
            ),
            [id as i64],
            Self::row,
        )
        .optional()
        .ok()
        .flatten()
    }
}

impl Drop for History {
    fn drop(&mut self) {
        // A clean exit: this owner's rows are no longer anyone's.
        let c = self.conn();
        self.write_pending(&c);
        let _ = c.execute(INTERRUPT, params![self.owner, now_ms()]);
        let _ = c.execute("DELETE FROM owners WHERE id = ?1", [self.owner]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<'a>(target: &'a str) -> NewRun<'a> {
        NewRun {
            kind: "client",
            schedule: None,
            title: "wirespeed -c x",
            target,
            dialect: "iperf3",
        }
    }

    #[test]
    fn a_run_is_stored_as_it_goes_and_listed_by_time_and_target() {
        let h = History::open(":memory:").unwrap();
        let a = h.begin(&run("a")).unwrap();
        let b = h.begin(&run("b")).unwrap();
        h.event(a, 0, &serde_json::json!({"event": "start", "data": {}}));
        h.event(a, 1, &serde_json::json!({"event": "interval", "data": {}}));
        let doc = serde_json::json!({"end": {"sum_sent": {"bits_per_second": 8e6, "retransmits": 3},
            "sum_received": {"bits_per_second": 7e6},
            "streams": [{"sender": {"mean_rtt": 2000}}, {"sender": {"mean_rtt": 4000}}],
            "latency": {"idle": {"p50_ms": 0.5}, "loaded": {"p50_ms": 9.0}}}});
        let hl = Headline::of(&doc);
        assert_eq!(
            (
                hl.sent_bps,
                hl.received_bps,
                hl.retransmits,
                hl.rtt_ms,
                hl.idle_ms,
                hl.loaded_ms
            ),
            (Some(8e6), Some(7e6), Some(3), Some(3.0), Some(0.5), Some(9.0))
        );
        h.finish(a, "done", None, &hl);
        assert_eq!(h.events(a).len(), 2);
        let all = h
            .list(&Query {
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b, a]);
        let only_a = h
            .list(&Query {
                target: Some("a".into()),
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(only_a.len(), 1);
        assert_eq!(
            (only_a[0].state.as_str(), only_a[0].headline.sent_bps),
            ("done", Some(8e6))
        );
        assert_eq!(h.get(b).unwrap().state, "running");
        let later = h
            .list(&Query {
                from_ms: Some(now_ms() + 60_000),
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        assert!(later.is_empty());
    }

    #[test]
    fn runs_of_a_dead_owner_are_interrupted_and_a_live_ones_are_not() {
        let dir = std::env::temp_dir().join(format!("ws-history-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = resolve(Some(dir.join("sub").join("h.db").to_str().unwrap())).unwrap();
        let first = History::open(&path).unwrap();
        let mine = first.begin(&run("a")).unwrap();
        // What it stored before it ended: a start and two intervals.
        for (seq, name) in ["start", "interval", "interval"].iter().enumerate() {
            first.event(mine, seq, &serde_json::json!({"event": name, "data": {}}));
        }
        // A second process sharing the file leaves a live owner's run be.
        let second = History::open(&path).unwrap();
        assert_eq!(second.get(mine).unwrap().state, "running");
        // An owner whose pid is gone: its running rows become interrupted.
        {
            let c = second.conn();
            c.execute("INSERT INTO owners(id, pid, seen_ms) VALUES (999, 0, ?1)", [now_ms()])
                .unwrap();
            c.execute(
                "INSERT INTO runs(owner, kind, started_ms, title, target, dialect, state) \
                 VALUES (999, 'client', 1, 't', 'x', 'iperf3', 'running')",
                [],
            )
            .unwrap();
        }
        assert_eq!(second.reap().unwrap(), 1);
        // So are a live pid's whose owner has been silent too long.
        {
            let c = second.conn();
            let long_ago = now_ms() - STALE_OWNER.as_millis() as i64 - 1000;
            c.execute(
                "INSERT INTO owners(id, pid, seen_ms) VALUES (998, ?1, ?2)",
                params![std::process::id(), long_ago],
            )
            .unwrap();
            c.execute(
                "INSERT INTO runs(owner, kind, started_ms, title, target, dialect, state) \
                 VALUES (998, 'client', 1, 't', 'x', 'iperf3', 'running')",
                [],
            )
            .unwrap();
        }
        assert_eq!(second.reap().unwrap(), 1);
        // The first closing cleanly marks its own.
        drop(first);
        let r = second.get(mine).unwrap();
        assert_eq!(r.state, "interrupted");
        assert!(r.error.unwrap().contains("ended before the run did"));
        // Its row counts the intervals it stored (the list showed 0).
        assert_eq!(r.intervals, 2);
        drop(second);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_schedule_turn_is_taken_once() {
        let h = History::open(":memory:").unwrap();
        let id = h
            .add_schedule(&Schedule {
                id: 0,
                form: serde_json::json!({"host": "x"}),
                title: "t".into(),
                target: "x".into(),
                dialect: "iperf3".into(),
                every_s: 60,
                next_ms: 1000,
            })
            .unwrap();
        assert!(h.take_turn(id, 1000, 61_000));
        assert!(!h.take_turn(id, 1000, 61_000));
        assert_eq!(h.schedules()[0].next_ms, 61_000);
        let new = NewRun {
            schedule: Some(id),
            kind: "scheduled",
            ..run("x")
        };
        h.missed(&new, "busy").unwrap();
        assert_eq!(h.latest_of(id).unwrap().error.as_deref(), Some("busy"));
        assert_eq!(h.schedule_counts(id), vec![("failed".to_string(), 1)]);
        assert!(h.remove_schedule(id) && h.schedules().is_empty());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = std::env::temp_dir().join(format!("ws-history-new-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("h.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA user_version=99").unwrap();
        drop(c);
        let e = History::open(path.to_str().unwrap()).err().unwrap();
        assert!(e.contains("newer wirespeed"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
