//! Recurring tests: each schedule is a form of the page and a period; when
//! its turn comes, the scheduler starts it as if it were submitted, and
//! its run goes into the history marked with the schedule's number. A turn
//! that cannot run is recorded too, as a failed run with the reason: the
//! form no longer passes (`form::plan`), or the UI's `--max-running` tests
//! were busy for all of [`BUSY_WAIT`]. A target that is down fails the way
//! any run does, with the client's own error. Turns missed while no UI ran
//! are not made up: the next turn is the first one still ahead.
//!
//! The schedules live in the history's file, so a UI restarted on the same
//! `--db` carries on with them; several UIs sharing the file take each turn
//! once (the first to move the schedule's next time on runs it).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::board::{Board, dialect_word};
use super::form;
use super::history::{History, NewRun, Schedule};

/// How often the scheduler looks at the clock.
const TICK: Duration = Duration::from_millis(250);
/// How long a turn waits for a place among the running tests.
pub(crate) const BUSY_WAIT: Duration = Duration::from_secs(60);
/// Shortest period (seconds).
pub(crate) const MIN_EVERY_S: i64 = 60;
/// Longest period (seconds): a week.
pub(crate) const MAX_EVERY_S: i64 = 7 * 24 * 3600;
/// Most schedules.
pub(crate) const MAX_SCHEDULES: usize = 100;

/// The running scheduler; stops when dropped.
pub(crate) struct Scheduler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A turn waiting for a place.
struct Waiting {
    schedule: Schedule,
    plan: form::Plan,
    since: Instant,
}

impl Scheduler {
    /// Starts the scheduler of `board` (a `wirespeed ui` board).
    pub fn start(board: Arc<Board>) -> Scheduler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ws-schedule".into())
            .spawn(move || run(&board, &s))
            .ok();
        Scheduler { stop, thread }
    }
}

fn now_ms() -> i64 {
    wirespeed_core::clock::wall_ns() / 1_000_000
}

/// The first turn after `now` of a schedule due at `due` every `every_s`.
pub(crate) fn next_turn(due: i64, every_s: i64, now: i64) -> i64 {
    let every = every_s.max(1) * 1000;
    if due > now {
        return due;
    }
    due + ((now - due) / every + 1) * every
}

fn new_run(s: &Schedule) -> NewRun<'_> {
    NewRun {
        kind: "scheduled",
        schedule: Some(s.id),
        title: &s.title,
        target: &s.target,
        dialect: &s.dialect,
    }
}

fn run(board: &Arc<Board>, stop: &AtomicBool) {
    let h = &board.history;
    let mut waiting: Vec<Waiting> = Vec::new();
    while !stop.load(Relaxed) {
        std::thread::sleep(TICK);
        let now = now_ms();
        for s in h.schedules() {
            if s.next_ms > now || waiting.iter().any(|w| w.schedule.id == s.id) {
                continue;
            }
            if !h.take_turn(s.id, s.next_ms, next_turn(s.next_ms, s.every_s, now)) {
                continue;
            }
            match form::plan(&s.form) {
                Ok(plan) => waiting.push(Waiting {
                    schedule: s,
                    plan,
                    since: Instant::now(),
                }),
                Err(e) => {
                    let _ = h.missed(&new_run(&s), &format!("the schedule's test is refused: {e}"));
                }
            }
        }
        // Each waiting turn, oldest first, takes a place if there is one.
        waiting.retain(|w| match board.launch_for(&w.plan, Some(w.schedule.id)) {
            Ok(_) => false,
            Err(e) if w.since.elapsed() >= BUSY_WAIT => {
                let why = format!("skipped: no place to run for {} s ({e})", BUSY_WAIT.as_secs());
                let _ = h.missed(&new_run(&w.schedule), &why);
                false
            }
            Err(_) => true,
        });
    }
}

/// Checks a request to schedule the page's `form` every `every` minutes;
/// the schedule to add (its first turn now).
pub fn check(form: &Value, every_min: &str) -> Result<Schedule, String> {
    let minutes: f64 = every_min
        .trim()
        .parse()
        .ok()
        .filter(|m: &f64| m.is_finite())
        .ok_or_else(|| format!("every: '{every_min}' is not a number of minutes"))?;
    let every_s = (minutes * 60.0).round() as i64;
    if !(MIN_EVERY_S..=MAX_EVERY_S).contains(&every_s) {
        return Err(format!(
            "every: {minutes} minutes is outside 1 to {} (a week)",
            MAX_EVERY_S / 60
        ));
    }
    let plan = form::plan(form)?;
    if plan.time > every_s as f64 {
        return Err(format!(
            "every: a {} s test does not fit in {minutes} minutes",
            plan.time
        ));
    }
    Ok(Schedule {
        id: 0,
        form: form.clone(),
        title: plan.command_line(),
        target: plan.host.clone(),
        dialect: dialect_word(plan.dialect).to_string(),
        every_s,
        next_ms: now_ms(),
    })
}

/// Adds a schedule unless there are [`MAX_SCHEDULES`] already.
pub fn add(h: &History, s: &Schedule) -> Result<u64, String> {
    if h.schedules().len() >= MAX_SCHEDULES {
        return Err(format!("there are {MAX_SCHEDULES} schedules already: remove one first"));
    }
    h.add_schedule(s)
}

/// The schedules as the page lists them, each with its newest result.
pub fn listing(h: &History) -> Value {
    Value::Array(
        h.schedules()
            .iter()
            .map(|s| {
                let mut v = s.json();
                let counts: serde_json::Map<String, Value> = h
                    .schedule_counts(s.id)
                    .into_iter()
                    .map(|(k, n)| (k, Value::from(n)))
                    .collect();
                v["runs"] = Value::Object(counts);
                v["last"] = h.latest_of(s.id).map_or(Value::Null, |r| r.json());
                v
            })
            .collect(),
    )
}

/// A schedule, its newest ended run and its counts of runs by outcome.
type Latest = (Schedule, Option<super::history::Stored>, Vec<(String, i64)>);

/// The schedules' newest results in Prometheus's text format (the UI's
/// `/metrics`).
pub fn metrics(h: &History) -> String {
    use wirespeed_report::metrics::{esc, head, number};
    let schedules = h.schedules();
    let rows: Vec<Latest> = schedules
        .into_iter()
        .map(|s| {
            let last = h.latest_of(s.id);
            let counts = h.schedule_counts(s.id);
            (s, last, counts)
        })
        .collect();
    let labels = |s: &Schedule| {
        format!(
            "schedule=\"{}\",target=\"{}\",dialect=\"{}\"",
            s.id,
            esc(&s.target),
            esc(&s.dialect)
        )
    };
    let mut o = String::new();
    head(
        &mut o,
        "wirespeed_schedules",
        "gauge",
        "Schedules of this UI's history.",
    );
    let _ = writeln!(o, "wirespeed_schedules {}", rows.len());
    head(
        &mut o,
        "wirespeed_schedule_runs_total",
        "counter",
        "Runs of each schedule by how they ended (done, failed, stopped, interrupted, running).",
    );
    for (s, _, counts) in &rows {
        for (state, n) in counts {
            let _ = writeln!(
                o,
                "wirespeed_schedule_runs_total{{{},outcome=\"{}\"}} {n}",
                labels(s),
                esc(state)
            );
        }
    }
    // The newest ended run's numbers: one family per number, a sample per
    // schedule that has it.
    type Pick = fn(&super::history::Stored) -> Option<f64>;
    let families: [(&str, &str, Pick); 11] = [
        (
            "up",
            "Whether the newest run ended with a result (1) or not (0).",
            |r| {
                Some(if r.state == "done" || r.state == "stopped" {
                    1.0
                } else {
                    0.0
                })
            },
        ),
        (
            "last_run_timestamp_seconds",
            "When the newest ended run started.",
            |r| Some(r.started_ms as f64 / 1000.0),
        ),
        ("sent_bits_per_second", "The newest run's sending rate.", |r| {
            r.headline.sent_bps
        }),
        ("received_bits_per_second", "The newest run's receiving rate.", |r| {
            r.headline.received_bps
        }),
        ("retransmits", "The newest run's TCP retransmits.", |r| {
            r.headline.retransmits.map(|n| n as f64)
        }),
        ("rtt_seconds", "The newest run's mean smoothed TCP RTT.", |r| {
            r.headline.rtt_ms.map(|m| m / 1000.0)
        }),
        ("jitter_seconds", "The newest run's UDP jitter.", |r| {
            r.headline.jitter_ms.map(|m| m / 1000.0)
        }),
        ("lost_percent", "The newest run's UDP loss.", |r| {
            r.headline.lost_percent
        }),
        (
            "latency_idle_seconds",
            "The newest run's idle median round trip (--latency).",
            |r| r.headline.idle_ms.map(|m| m / 1000.0),
        ),
        (
            "latency_loaded_seconds",
            "The newest run's loaded median round trip (--latency).",
            |r| r.headline.loaded_ms.map(|m| m / 1000.0),
        ),
        (
            "rpm",
            "The newest run's responsiveness, round trips per minute (--rpm).",
            |r| r.headline.rpm,
        ),
    ];
    for (name, help, pick) in families {
        let samples: Vec<String> = rows
            .iter()
            .filter_map(|(s, last, _)| {
                let v = pick(last.as_ref()?)?;
                Some(format!("wirespeed_schedule_{name}{{{}}} {}", labels(s), number(v)))
            })
            .collect();
        if samples.is_empty() {
            continue;
        }
        head(&mut o, &format!("wirespeed_schedule_{name}"), "gauge", help);
        for line in samples {
            let _ = writeln!(o, "{line}");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_turn_is_the_first_still_ahead() {
        assert_eq!(next_turn(10_000, 60, 5_000), 10_000);
        assert_eq!(next_turn(10_000, 60, 10_000), 70_000);
        assert_eq!(next_turn(10_000, 60, 200_000), 250_000);
    }

    #[test]
    fn a_schedule_is_checked_like_a_run_and_its_period_bounded() {
        let form = serde_json::json!({"host": "127.0.0.1", "time": "5"});
        let s = check(&form, "5").unwrap();
        assert_eq!(
            (s.every_s, s.target.as_str(), s.dialect.as_str()),
            (300, "127.0.0.1", "iperf3")
        );
        assert!(s.title.starts_with("wirespeed -c 127.0.0.1"));
        assert!(check(&form, "0.5").unwrap_err().contains("outside"));
        assert!(check(&form, "soon").unwrap_err().contains("not a number"));
        assert!(check(&form, "NaN").is_err());
        assert!(
            check(&serde_json::json!({"host": "x", "time": "120"}), "1")
                .unwrap_err()
                .contains("does not fit")
        );
        assert!(check(&serde_json::json!({"host": "x", "bogus": "1"}), "5").is_err());
    }

    #[test]
    fn metrics_carry_the_newest_result_of_each_schedule() {
        let h = History::open(":memory:").unwrap();
        let s = check(&serde_json::json!({"host": "10.0.0.1", "time": "5"}), "5").unwrap();
        let id = add(&h, &s).unwrap();
        let s = Schedule { id, ..s };
        let run = h.begin(&new_run(&s)).unwrap();
        let hl = super::super::history::Headline {
            sent_bps: Some(1e9),
            rtt_ms: Some(2.0),
            ..Default::default()
        };
        h.finish(run, "done", None, &hl);
        h.missed(&new_run(&s), "target down").unwrap();
        let text = metrics(&h);
        let l = format!("schedule=\"{id}\",target=\"10.0.0.1\",dialect=\"iperf3\"");
        assert!(text.contains(&format!("wirespeed_schedule_up{{{l}}} 0\n")), "{text}");
        assert!(
            text.contains(&format!("wirespeed_schedule_runs_total{{{l},outcome=\"done\"}} 1")),
            "{text}"
        );
        assert!(
            text.contains(&format!("wirespeed_schedule_runs_total{{{l},outcome=\"failed\"}} 1")),
            "{text}"
        );
        // The newest run is the failure: it has no rate.
        assert!(!text.contains("wirespeed_schedule_sent_bits_per_second{"), "{text}");
        assert!(text.contains("# TYPE wirespeed_schedule_up gauge"), "{text}");
    }
}
