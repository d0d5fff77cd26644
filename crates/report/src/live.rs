//! `--live`: one status line that updates in place while a test runs —
//! elapsed time, the current and average rate, and a sparkline of recent
//! intervals — drawn around the normal text output, which stays as it is.
//!
//! The status line is erased before every line the text sink prints and
//! drawn again after it, so it always sits at the bottom; when the test
//! ends it is erased for good and what remains on the screen is exactly
//! the normal report. Only used when stdout is a terminal (never with
//! `-J`, a log file or a pipe).

use std::collections::VecDeque;
use std::io::Write;

use super::Sink;
use wirespeed_core::events::{Event, StreamSample};
use wirespeed_core::units::format_iperf3;

/// Intervals the sparkline shows.
const SPARK_LEN: usize = 24;
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
const ASCII: [char; 8] = ['_', '.', ':', '-', '=', '+', '*', '#'];

/// Where the status line is drawn.
pub(crate) trait StatusOut: Send {
    /// Writes raw text (including control sequences) and flushes.
    fn put(&mut self, s: &str);
    /// Usable columns.
    fn width(&self) -> usize;
    /// Whether block characters can be shown.
    fn utf8(&self) -> bool;
}

/// The process's terminal (stdout).
pub(crate) struct Terminal {
    utf8: bool,
}

impl Terminal {
    /// Stdout, with UTF-8 decided from the locale variables.
    pub fn stdout() -> Terminal {
        let utf8 = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .filter_map(|k| std::env::var(k).ok())
            .find(|v| !v.is_empty())
            .is_some_and(|v| {
                let v = v.to_ascii_lowercase();
                v.contains("utf-8") || v.contains("utf8")
            });
        Terminal { utf8 }
    }
}

impl StatusOut for Terminal {
    fn put(&mut self, s: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }

    fn width(&self) -> usize {
        wirespeed_sys::term::columns(1).unwrap_or(80)
    }

    fn utf8(&self) -> bool {
        self.utf8
    }
}

/// Rate history of one direction.
#[derive(Default)]
struct Direction {
    now: f64,
    bytes: u64,
    seconds: f64,
    recent: VecDeque<f64>,
}

impl Direction {
    fn add(&mut self, s: &StreamSample) {
        self.now = s.bits_per_second;
        if !s.omitted {
            self.bytes += s.bytes;
            self.seconds += s.seconds;
        }
        self.recent.push_back(s.bits_per_second);
        while self.recent.len() > SPARK_LEN {
            self.recent.pop_front();
        }
    }

    fn average(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.bytes as f64 * 8.0 / self.seconds)
    }
}

/// The `--live` sink: wraps the text sink and keeps a status line under it.
pub(crate) struct LiveSink<T: StatusOut> {
    inner: Box<dyn Sink>,
    term: T,
    shown: bool,
    running: bool,
    warming_up: bool,
    elapsed: f64,
    duration: Option<f64>,
    forward: Direction,
    reverse: Option<Direction>,
}

fn rate(bps: f64) -> String {
    format!("{}s/sec", format_iperf3(bps / 8.0, 'a'))
        .trim_start()
        .to_string()
}

/// A sparkline of `values`, scaled to their maximum.
pub fn sparkline(values: &[f64], utf8: bool) -> String {
    let glyphs = if utf8 { &BLOCKS } else { &ASCII };
    let max = values.iter().cloned().fold(0.0, f64::max);
    values
        .iter()
        .map(|v| {
            if max <= 0.0 {
                glyphs[0]
            } else {
                let i = ((v / max) * (glyphs.len() - 1) as f64).round() as usize;
                glyphs[i.min(glyphs.len() - 1)]
            }
        })
        .collect()
}

impl<T: StatusOut> LiveSink<T> {
    /// Draws around `inner` on `term`.
    pub fn new(inner: Box<dyn Sink>, term: T) -> LiveSink<T> {
        LiveSink {
            inner,
            term,
            shown: false,
            running: false,
            warming_up: false,
            elapsed: 0.0,
            duration: None,
            forward: Direction::default(),
            reverse: None,
        }
    }

    fn part(&self, d: &Direction, arrow: &str) -> String {
        let recent: Vec<f64> = d.recent.iter().copied().collect();
        let avg = d.average().map(rate).unwrap_or_else(|| "-".into());
        format!(
            "{arrow}{}  now {}  avg {}",
            sparkline(&recent, self.term.utf8()),
            rate(d.now),
            avg
        )
    }

    /// The status line (without control sequences), fitted to `width`.
    pub fn status(&self) -> String {
        let time = match self.duration {
            Some(d) => format!("{:5.1}/{d:.0} s", self.elapsed),
            None => format!("{:5.1} s", self.elapsed),
        };
        let mut line = format!("[live] {time}");
        if self.warming_up {
            line.push_str(" (omitted warm-up)");
        }
        match &self.reverse {
            Some(r) => {
                line.push_str(&format!("  {}", self.part(&self.forward, "TX ")));
                line.push_str(&format!("  {}", self.part(r, "RX ")));
            }
            None => line.push_str(&format!("  {}", self.part(&self.forward, ""))),
        }
        let width = self.term.width().saturating_sub(1).max(10);
        line.chars().take(width).collect()
    }

    fn erase(&mut self) {
        if self.shown {
            self.term.put("\r\x1b[2K");
            self.shown = false;
        }
    }

    fn draw(&mut self) {
        let s = self.status();
        self.term.put(&format!("\r\x1b[2K{s}"));
        self.shown = true;
    }
}

impl<T: StatusOut> Sink for LiveSink<T> {
    fn event(&mut self, ev: &Event) {
        self.erase();
        match ev {
            Event::Start(s) => {
                self.running = true;
                self.warming_up = s.omit > 0;
                self.duration = (s.duration > 0).then_some(s.duration as f64);
                if s.direction == wirespeed_core::config::Direction::Bidir {
                    self.reverse = Some(Direction::default());
                }
            }
            Event::OmitDone => self.warming_up = false,
            Event::Interval(r) => {
                self.elapsed = r.sum.end;
                self.forward.add(&r.sum);
                if let (Some(d), Some(s)) = (self.reverse.as_mut(), &r.sum_bidir_reverse) {
                    d.add(s);
                }
            }
            Event::End(_) | Event::Error(_) | Event::Done => self.running = false,
            _ => {}
        }
        self.inner.event(ev);
        if self.running {
            self.draw();
        }
    }

    fn finish(&mut self) -> Result<(), wirespeed_core::error::Error> {
        self.inner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recorder;
    use std::sync::{Arc, Mutex};
    use wirespeed_core::events::IntervalReport;

    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl StatusOut for Screen {
        fn put(&mut self, s: &str) {
            self.0.lock().unwrap().push_str(s);
        }
        fn width(&self) -> usize {
            200
        }
        fn utf8(&self) -> bool {
            true
        }
    }

    fn sum(end: f64, bytes: u64) -> StreamSample {
        StreamSample {
            sender: true,
            start: end - 1.0,
            end,
            seconds: 1.0,
            bytes,
            bits_per_second: bytes as f64 * 8.0,
            ..StreamSample::default()
        }
    }

    #[test]
    fn sparkline_scales_to_the_maximum() {
        assert_eq!(sparkline(&[0.0, 5.0, 10.0], true), "▁▅█");
        assert_eq!(sparkline(&[0.0, 0.0], false), "__");
    }

    #[test]
    fn status_line_shows_current_and_average_rate_and_goes_away_at_the_end() {
        let screen = Screen::default();
        let rec = Recorder::default();
        let mut live = LiveSink::new(Box::new(rec.clone()), screen.clone());
        for (end, bytes) in [(1.0, 1_000_000u64), (2.0, 3_000_000)] {
            live.event(&Event::Interval(Box::new(IntervalReport {
                streams: vec![],
                sum: sum(end, bytes),
                sum_bidir_reverse: None,
                pairs: Vec::new(),
                latency: None,
            })));
            // The status line is drawn only once the test has started.
            if end == 1.0 {
                assert!(screen.0.lock().unwrap().is_empty());
                live.running = true;
            }
        }
        let status = live.status();
        assert!(status.contains("now 24.0 Mbits/sec"), "{status}");
        assert!(status.contains("avg 16.0 Mbits/sec"), "{status}");
        assert!(status.contains("▃█"), "{status}");
        assert!(screen.0.lock().unwrap().ends_with(&status));
        live.event(&Event::Done);
        // Erased, not redrawn; every event still reached the text sink.
        assert!(screen.0.lock().unwrap().ends_with("\r\x1b[2K"));
        assert_eq!(rec.events.lock().unwrap().len(), 3);
    }
}
