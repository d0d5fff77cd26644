//! The `-J` document and `--json-stream` lines, for both dialects.
//!
//! An iperf3 test's document is iperf3's own ([`keys`]). An iperf 2 test's
//! has the same keys where the meaning is the same, and iperf 2's extras
//! — read counts, burst and datagram latency, histograms, bounceback round
//! trips, its UDP server's report — in keys of their own ([`enhanced`];
//! `docs/json-iperf2.md`). The document is valid JSON on every path: an
//! error adds an `"error"` key and nothing is printed outside the
//! document.

mod enhanced;
mod keys;

use serde_json::{Map, Value};

pub use keys::{end_json, interval_json, start_json};

use crate::config::{Dialect, TestConfig};
use crate::events::*;
use crate::json::{to_compact, to_formatted};
use crate::report::{Output, Sink};
use keys::obj;

/// Builds the `-J` document and prints it when the test is done.
pub struct JsonSink {
    out: Output,
    side: Side,
    dialect: Dialect,
    doc: Map<String, Value>,
    intervals: Vec<Value>,
    title: Option<String>,
    extra_data: Option<String>,
    /// Stream ids of the `end` so far, in order (peer reports find theirs).
    end_ids: Vec<u32>,
    /// A test's `start` came (a second one is an iperf 2 connect-back).
    started: bool,
}

impl JsonSink {
    /// A JSON sink for `cfg`.
    pub fn new(cfg: &TestConfig, out: Output, side: Side) -> JsonSink {
        let mut s = JsonSink {
            out,
            side,
            dialect: cfg.dialect,
            doc: obj(),
            intervals: Vec::new(),
            title: cfg.params.title.clone(),
            extra_data: cfg.params.extra_data.clone(),
            end_ids: Vec::new(),
            started: false,
        };
        s.reset();
        s
    }

    fn reset(&mut self) {
        self.doc = obj();
        let mut start = obj();
        start.insert("connected".into(), Value::Array(Vec::new()));
        start.insert("version".into(), Value::from(crate::version_string()));
        start.insert("system_info".into(), Value::from(crate::sys::process::system_info()));
        self.doc.insert("start".into(), Value::Object(start));
        self.doc.insert("intervals".into(), Value::Array(Vec::new()));
        self.doc.insert("end".into(), Value::Object(obj()));
        self.intervals.clear();
        self.end_ids.clear();
        self.started = false;
    }

    /// A test's `start`; a second one (an iperf 2 connect-back, part of
    /// the same test) adds its streams to the first's.
    fn start(&mut self, s: &StartInfo) {
        if self.side == Side::Server {
            self.title = s.title.clone();
            self.extra_data = s.extra_data.clone();
        }
        let v = start_json(s, self.side);
        if !self.started {
            self.started = true;
            self.doc.insert("start".into(), v);
            return;
        }
        let more = v
            .get("connected")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(Value::Array(c)) = self.doc.get_mut("start").and_then(|s| s.get_mut("connected")) {
            c.extend(more);
        }
    }

    /// The test's `end`; a second one (a connect-back) is merged.
    fn end(&mut self, s: &Summary) {
        let v = dialect_end(s, self.dialect, self.side);
        let ids = s.streams.iter().map(|x| x.id);
        let first = self
            .doc
            .get("end")
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty());
        match (first, v, self.doc.get_mut("end")) {
            (true, Value::Object(second), Some(Value::Object(e))) => enhanced::merge_end(e, second),
            (_, v, _) => {
                self.end_ids.clear();
                self.doc.insert("end".into(), v);
            }
        }
        self.end_ids.extend(ids);
    }

    /// The document so far (what `--get-server-output` returns).
    pub fn document(&self) -> Value {
        let mut d = self.doc.clone();
        d.insert("intervals".into(), Value::Array(self.intervals.clone()));
        if let Some(t) = &self.title {
            d.insert("title".into(), Value::from(t.clone()));
        }
        if let Some(x) = &self.extra_data {
            d.insert("extra_data".into(), Value::from(x.clone()));
        }
        Value::Object(d)
    }
}

impl Sink for JsonSink {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Start(s) => self.start(s),
            Event::Interval(r) => self.intervals.push(dialect_interval(r, self.dialect, self.side)),
            Event::End(s) => self.end(s),
            Event::PeerReport(p) => {
                if let Some(Value::Object(e)) = self.doc.get_mut("end") {
                    enhanced::peer_report(e, &self.end_ids, p, self.side);
                    enhanced::sum_peer_reports(e);
                }
            }
            Event::ServerOutput(ServerOutput::Json(j)) => {
                self.doc.insert("server_output_json".into(), j.clone());
            }
            Event::ServerOutput(ServerOutput::Text(t)) => {
                self.doc.insert("server_output_text".into(), Value::from(t.clone()));
            }
            Event::Error(e) => {
                self.doc
                    .insert("error".into(), Value::from(error_text(e, self.side, self.dialect)));
            }
            // iperf3 puts what it would print after its name on stderr
            // (a test cut short by its client) in the document's error.
            Event::Notice(n) if self.dialect == Dialect::Iperf3 => {
                self.doc.insert("error".into(), Value::from(n.clone()));
            }
            Event::Warning(w) => {
                // Never print outside the document: warnings become JSON.
                let list = self.doc.entry("warnings").or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(a) = list {
                    a.push(Value::from(w.clone()));
                }
            }
            Event::Done => {
                let text = to_formatted(&self.document());
                self.out.write(&format!("{text}\n"));
                self.reset();
            }
            _ => {}
        }
    }
}

/// The `"error"` value, worded as iperf3 words it: a client's failure
/// bare, an interrupt with `interrupt - `, a server's failure with
/// `error - ` (its main loop's prefix). iperf 2 tests: the bare text.
fn error_text(e: &crate::error::Error, side: Side, dialect: Dialect) -> String {
    match (dialect, e.kind, side) {
        (Dialect::Iperf2, ..) => e.text(),
        (_, crate::error::Kind::Interrupt, _) => e.line(),
        (_, _, Side::Server) => format!("error - {}", e.text()),
        _ => e.text(),
    }
}

/// An `intervals[]` element, with iperf 2's extras in its dialect.
fn dialect_interval(r: &IntervalReport, dialect: Dialect, side: Side) -> Value {
    let mut v = interval_json(r);
    if dialect == Dialect::Iperf2 {
        enhanced::interval(&mut v, r, side);
    }
    v
}

/// The `end` object, with iperf 2's extras in its dialect.
fn dialect_end(s: &Summary, dialect: Dialect, side: Side) -> Value {
    let mut v = end_json(s);
    if dialect == Dialect::Iperf2 {
        enhanced::end(&mut v, s, side);
    }
    v
}

/// `--json-stream`: one `{"event":..,"data":..}` line per event.
pub struct JsonStreamSink {
    out: Output,
    side: Side,
    dialect: Dialect,
}

impl JsonStreamSink {
    /// A JSON-stream sink.
    pub fn new(cfg: &TestConfig, out: Output, side: Side) -> JsonStreamSink {
        JsonStreamSink {
            out,
            side,
            dialect: cfg.dialect,
        }
    }
}

/// The `--json-stream` line (`{"event": .., "data": ..}`) an event makes,
/// if it makes one: what the stream prints, and what the web UI keeps.
pub fn stream_event(ev: &Event, side: Side, dialect: Dialect) -> Option<Value> {
    let (name, data) = match ev {
        Event::Start(s) => ("start", start_json(s, side)),
        Event::Interval(r) => ("interval", dialect_interval(r, dialect, side)),
        Event::End(s) => ("end", dialect_end(s, dialect, side)),
        Event::PeerReport(PeerReport::Report(l)) => (
            "peer_report",
            enhanced::sample(l, Some(enhanced::server_to_client(side, true))),
        ),
        Event::ServerOutput(ServerOutput::Json(j)) => ("server_output_json", j.clone()),
        Event::ServerOutput(ServerOutput::Text(t)) => ("server_output_text", Value::from(t.clone())),
        Event::Error(e) => ("error", Value::from(error_text(e, side, dialect))),
        Event::Notice(n) if dialect == Dialect::Iperf3 => ("error", Value::from(n.clone())),
        Event::Warning(w) => ("warning", Value::from(w.clone())),
        _ => return None,
    };
    let mut m = obj();
    m.insert("event".into(), Value::from(name));
    m.insert("data".into(), data);
    Some(Value::Object(m))
}

impl Sink for JsonStreamSink {
    fn event(&mut self, ev: &Event) {
        if let Some(v) = stream_event(ev, self.side, self.dialect) {
            self.out.write(&format!("{}\n", to_compact(&v)));
        }
    }
}
