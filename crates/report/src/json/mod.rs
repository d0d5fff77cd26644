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

use crate::document::{self as doc, StreamEvent};
use crate::{Output, Sink};
use keys::to_map;
use wirespeed_core::config::{Dialect, TestConfig};
use wirespeed_core::events::*;
use wirespeed_proto::json::{to_compact, to_formatted};

/// The entries of `part`, a document with some of its parts set: what a
/// sink adds to the document it keeps in order. With `value`, the one
/// entry's value is that JSON instead (a part kept as JSON: the merged
/// `end`, the server's own document), under the model's key.
fn entries(part: &doc::TestDoc, value: Option<Value>) -> Map<String, Value> {
    let mut m = to_map(part);
    if let (Some(v), Some((_, slot))) = (value, m.iter_mut().next()) {
        *slot = v;
    }
    m
}

/// Builds the `-J` document and prints it when the test is done.
pub struct JsonSink {
    out: Output,
    side: Side,
    dialect: Dialect,
    start: doc::Start,
    intervals: Vec<doc::Interval>,
    /// The `end` so far, as JSON: iperf 2's connect-back and peer reports
    /// merge into it in the order they come (see [`enhanced::merge_end`]).
    end: Map<String, Value>,
    /// What came after (`error`, `warnings`, `server_output_*`), in the
    /// order it first came.
    tail: Map<String, Value>,
    warnings: Vec<String>,
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
            start: doc::Start::default(),
            intervals: Vec::new(),
            end: Map::new(),
            tail: Map::new(),
            warnings: Vec::new(),
            title: cfg.params.title.clone(),
            extra_data: cfg.params.extra_data.clone(),
            end_ids: Vec::new(),
            started: false,
        };
        s.reset();
        s
    }

    fn reset(&mut self) {
        self.start = doc::Start {
            connected: Some(Vec::new()),
            version: Some(wirespeed_core::version::version_string()),
            system_info: Some(wirespeed_sys::process::system_info()),
            ..doc::Start::default()
        };
        self.intervals.clear();
        self.end = Map::new();
        self.tail = Map::new();
        self.warnings.clear();
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
        let v = keys::start(s, self.side);
        if !self.started {
            self.started = true;
            self.start = v;
            return;
        }
        if let Some(c) = self.start.connected.as_mut() {
            c.extend(v.connected.unwrap_or_default());
        }
    }

    /// The test's `end`; a second one (a connect-back) is merged.
    fn end(&mut self, s: &Summary) {
        let v = to_map(&dialect_end(s, self.dialect, self.side));
        let ids = s.streams.iter().map(|x| x.id);
        if self.end.is_empty() {
            self.end_ids.clear();
            self.end = v;
        } else {
            enhanced::merge_end(&mut self.end, v);
        }
        self.end_ids.extend(ids);
    }

    /// Adds (or replaces in place) what `part` sets after the `end`.
    fn add(&mut self, part: doc::TestDoc, value: Option<Value>) {
        self.tail.extend(entries(&part, value));
    }

    /// The document so far (what `--get-server-output` returns).
    pub fn document(&self) -> Value {
        let mut d = to_map(&doc::TestDoc {
            start: Some(self.start.clone()),
            intervals: Some(self.intervals.clone()),
            ..doc::TestDoc::default()
        });
        let end = doc::TestDoc {
            end: Some(doc::End::default()),
            ..doc::TestDoc::default()
        };
        d.extend(entries(&end, Some(Value::Object(self.end.clone()))));
        d.extend(self.tail.clone());
        d.extend(to_map(&doc::TestDoc {
            title: self.title.clone(),
            extra_data: self.extra_data.clone(),
            ..doc::TestDoc::default()
        }));
        Value::Object(d)
    }
}

impl Sink for JsonSink {
    fn event(&mut self, ev: &Event) {
        let part = |f: fn(&mut doc::TestDoc)| {
            let mut d = doc::TestDoc::default();
            f(&mut d);
            d
        };
        match ev {
            Event::Start(s) => self.start(s),
            Event::Interval(r) => self.intervals.push(dialect_interval(r, self.dialect, self.side)),
            Event::End(s) => self.end(s),
            Event::PeerReport(p) => {
                enhanced::peer_report(&mut self.end, &self.end_ids, p, self.side);
                enhanced::sum_peer_reports(&mut self.end);
            }
            Event::ServerOutput(ServerOutput::Json(j)) => {
                // The server's document as it sent it.
                let at = part(|d| d.server_output_json = Some(Box::default()));
                self.add(at, Some(j.clone()));
            }
            Event::ServerOutput(ServerOutput::Text(t)) => self.add(
                doc::TestDoc {
                    server_output_text: Some(t.clone()),
                    ..doc::TestDoc::default()
                },
                None,
            ),
            Event::Error(e) => self.add(
                doc::TestDoc {
                    error: Some(error_text(e, self.side, self.dialect)),
                    ..doc::TestDoc::default()
                },
                None,
            ),
            // iperf3 puts what it would print after its name on stderr
            // (a test cut short by its client) in the document's error.
            Event::Notice(n) if self.dialect == Dialect::Iperf3 => self.add(
                doc::TestDoc {
                    error: Some(n.clone()),
                    ..doc::TestDoc::default()
                },
                None,
            ),
            Event::Warning(w) => {
                // Never print outside the document: warnings become JSON.
                self.warnings.push(w.clone());
                let all = doc::TestDoc {
                    warnings: Some(self.warnings.clone()),
                    ..doc::TestDoc::default()
                };
                self.add(all, None);
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
fn error_text(e: &wirespeed_core::error::Error, side: Side, dialect: Dialect) -> String {
    match (dialect, e.kind, side) {
        (Dialect::Iperf2, ..) => e.text(),
        (_, wirespeed_core::error::Kind::Interrupt, _) => e.line(),
        (_, _, Side::Server) => format!("error - {}", e.text()),
        _ => e.text(),
    }
}

/// An `intervals[]` element, with iperf 2's extras in its dialect.
fn dialect_interval(r: &IntervalReport, dialect: Dialect, side: Side) -> doc::Interval {
    let mut v = keys::interval(r);
    if dialect == Dialect::Iperf2 {
        enhanced::interval(&mut v, r, side);
    }
    v
}

/// The `end` object, with iperf 2's extras in its dialect.
fn dialect_end(s: &Summary, dialect: Dialect, side: Side) -> doc::End {
    let mut v = keys::end(s);
    if dialect == Dialect::Iperf2 {
        enhanced::end(&mut v, s, side);
    }
    v
}

/// A `--json-stream` line as JSON.
fn event_line(name: &str, data: Value) -> Value {
    let e = StreamEvent {
        event: name.to_string(),
        data,
    };
    serde_json::to_value(e).unwrap_or(Value::Null)
}

/// A part of the document as JSON.
fn json<T: serde::Serialize>(part: &T) -> Value {
    Value::Object(to_map(part))
}

/// `--json-stream`: one `{"event":..,"data":..}` line per event.
///
/// An iperf 2 UDP sender's `end` waits for its receivers' reports, which
/// come after the test (the FIN exchange): their `peer_report` lines go
/// out as they arrive and the `end` follows with them in its streams and
/// `sum_received` built from them, as `-J` writes it. It goes out when
/// every sending stream has its report (or word that none came), or at
/// the next start, end, error or the test's close, whichever is first.
pub struct JsonStreamSink {
    out: Output,
    side: Side,
    dialect: Dialect,
    held: Option<HeldEnd>,
}

/// An `end` waiting for its peer reports.
struct HeldEnd {
    end: Map<String, Value>,
    /// The end's stream ids, in order.
    ids: Vec<u32>,
    /// Sending UDP streams whose report has not come.
    awaiting: Vec<u32>,
}

impl JsonStreamSink {
    /// A JSON-stream sink.
    pub fn new(cfg: &TestConfig, out: Output, side: Side) -> JsonStreamSink {
        JsonStreamSink {
            out,
            side,
            dialect: cfg.dialect,
            held: None,
        }
    }

    fn line(&self, name: &str, data: Value) {
        self.out.write(&format!("{}\n", to_compact(&event_line(name, data))));
    }

    /// Writes the held `end`, if any.
    fn flush(&mut self) {
        if let Some(h) = self.held.take() {
            self.line("end", Value::Object(h.end));
        }
    }

    /// Holds an iperf 2 `end` with UDP streams this host sent (their
    /// receivers' reports are still to come); false if there are none.
    fn hold(&mut self, s: &Summary) -> bool {
        let awaiting: Vec<u32> = s.streams.iter().filter(|st| st.local_sender).map(|st| st.id).collect();
        if self.dialect != Dialect::Iperf2 || s.protocol != wirespeed_core::config::Protocol::Udp || awaiting.is_empty()
        {
            return false;
        }
        let end = to_map(&dialect_end(s, self.dialect, self.side));
        self.held = Some(HeldEnd {
            end,
            ids: s.streams.iter().map(|st| st.id).collect(),
            awaiting,
        });
        true
    }

    /// A peer report: into the held `end`, which goes out once complete.
    fn peer_report(&mut self, p: &PeerReport) {
        let Some(h) = self.held.as_mut() else { return };
        enhanced::peer_report(&mut h.end, &h.ids, p, self.side);
        enhanced::sum_peer_reports(&mut h.end);
        let id = match p {
            PeerReport::Report(l) => l.id,
            PeerReport::Missing { id, .. } | PeerReport::Undelivered { id } => *id,
        };
        h.awaiting.retain(|x| *x != id);
        if h.awaiting.is_empty() {
            self.flush();
        }
    }
}

impl Drop for JsonStreamSink {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The `--json-stream` line (`{"event": .., "data": ..}`) an event makes,
/// if it makes one: what the stream prints, and what the web UI keeps.
pub fn stream_event(ev: &Event, side: Side, dialect: Dialect) -> Option<Value> {
    let (name, data) = match ev {
        Event::Start(s) => ("start", start_json(s, side)),
        Event::Interval(r) => ("interval", json(&dialect_interval(r, dialect, side))),
        Event::End(s) => ("end", json(&dialect_end(s, dialect, side))),
        Event::PeerReport(PeerReport::Report(l)) => ("peer_report", json(&enhanced::report_sample(l, side))),
        Event::ServerOutput(ServerOutput::Json(j)) => ("server_output_json", j.clone()),
        Event::ServerOutput(ServerOutput::Text(t)) => ("server_output_text", Value::from(t.clone())),
        Event::Error(e) => ("error", Value::from(error_text(e, side, dialect))),
        Event::Notice(n) if dialect == Dialect::Iperf3 => ("error", Value::from(n.clone())),
        Event::Warning(w) => ("warning", Value::from(w.clone())),
        Event::Mode(m) => super::mode::stream_line(m),
        _ => return None,
    };
    Some(event_line(name, data))
}

impl Sink for JsonStreamSink {
    fn event(&mut self, ev: &Event) {
        if let Event::Mode(m) = ev {
            self.out.write(&super::mode::stream_text(m));
            return;
        }
        match ev {
            // Another test's lines (a -d connect-back runs beside) pass a
            // held end; a new test, an end, an error or the close do not.
            Event::Interval(_) | Event::Warning(_) => {}
            Event::PeerReport(p) => {
                if let Some(v) = stream_event(ev, self.side, self.dialect) {
                    self.out.write(&format!("{}\n", to_compact(&v)));
                }
                self.peer_report(p);
                return;
            }
            _ => self.flush(),
        }
        if let Event::End(s) = ev
            && self.hold(s)
        {
            return;
        }
        if let Some(v) = stream_event(ev, self.side, self.dialect) {
            self.out.write(&format!("{}\n", to_compact(&v)));
        }
    }
}

/// Rebuilds the `-J` document from `--json-stream` lines (`{"event": ..,
/// "data": ..}` objects), as [`JsonSink`] builds it from the events: the
/// first `start` (a later one, an iperf 2 connect-back's, adds its
/// `connected`), every `interval`, the `end`s merged (a connect-back's
/// sums are its `*_bidir_reverse`), and `peer_report`s written into the
/// streams they report on (with `sum_received` from them) where the
/// `end` lacks them. `None` if a line is not such an event. A mode's
/// lines (`--rpm`, `--udp-search`) make that mode's document.
///
/// JSON, not the model: each line's data goes into the document as it
/// came (a foreign or damaged line's keys too), so the assembly names the
/// document's top-level keys itself.
pub(crate) fn document_from_stream(events: &[Value]) -> Option<Value> {
    if let Some(d) = super::mode::document_from_stream(events) {
        return Some(d);
    }
    let mut doc = Map::new();
    let mut intervals = Vec::new();
    let mut reports = Vec::new();
    for e in events {
        let StreamEvent { event, data } = StreamEvent::from_value(e)?;
        let name = event.as_str();
        match (name, doc.get_mut(name)) {
            ("interval", _) => intervals.push(data),
            ("peer_report", _) => reports.push(data),
            ("start", Some(Value::Object(first))) => {
                let more = data
                    .get("connected")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if let Some(Value::Array(c)) = first.get_mut("connected") {
                    c.extend(more);
                }
            }
            ("end", Some(Value::Object(first))) => {
                if let Value::Object(second) = data {
                    enhanced::merge_end(first, second);
                }
            }
            ("start" | "end" | "error" | "server_output_json" | "server_output_text", _) => {
                doc.insert(name.to_string(), data);
            }
            _ => {}
        }
    }
    let mut end = match doc.shift_remove("end") {
        Some(Value::Object(e)) => e,
        _ => Map::new(),
    };
    if !reports.is_empty() {
        enhanced::peer_reports_by_id(&mut end, &reports);
        enhanced::sum_peer_reports(&mut end);
    }
    // In the document's order: start, intervals, end, then the rest.
    let mut out = Map::new();
    out.insert(
        "start".into(),
        doc.shift_remove("start").unwrap_or_else(|| Value::Object(Map::new())),
    );
    out.insert("intervals".into(), Value::Array(intervals));
    out.insert("end".into(), Value::Object(end));
    out.extend(doc);
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use wirespeed_core::config::Protocol;

    /// An iperf 2 UDP client's end: one stream it sent.
    fn udp_sender_end() -> Summary {
        let line = StreamSample {
            id: 1,
            sender: true,
            bytes: 1000,
            ..StreamSample::default()
        };
        Summary {
            protocol: Protocol::Udp,
            streams: vec![StreamSummary {
                id: 1,
                local_sender: true,
                udp: Some(UdpTotals::default()),
                ..StreamSummary::default()
            }],
            forward: DirectionSums {
                udp: Some(UdpTotals::default()),
                ..DirectionSums::default()
            },
            local: LocalTotals {
                streams: vec![line.clone()],
                sum: line,
                pairs: Vec::new(),
            },
            ..Summary::default()
        }
    }

    fn report() -> PeerReport {
        PeerReport::Report(Box::new(StreamSample {
            id: 1,
            bytes: 990,
            end: 2.0,
            bits_per_second: 3960.0,
            udp: Some(UdpSample {
                jitter_ms: 0.25,
                lost: 3,
                packets: 100,
                ..UdpSample::default()
            }),
            ..StreamSample::default()
        }))
    }

    fn stream_lines(events: &[Event]) -> Vec<Value> {
        let buf = Arc::new(Mutex::new(String::new()));
        let cfg = TestConfig {
            dialect: Dialect::Iperf2,
            ..TestConfig::default()
        };
        let mut sink = JsonStreamSink::new(&cfg, Output::buffer(buf.clone()), Side::Client);
        for e in events {
            sink.event(e);
        }
        drop(sink);
        let text = buf.lock().unwrap().clone();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn an_iperf2_udp_senders_end_waits_for_its_receivers_report() {
        let lines = stream_lines(&[
            Event::End(Box::new(udp_sender_end())),
            Event::PeerReport(report()),
            Event::Done,
        ]);
        let names: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
        assert_eq!(names, ["peer_report", "end"]);
        let end = &lines[1]["data"];
        assert_eq!(end["sum_received"]["bytes"], 990, "{end}");
        assert_eq!(end["sum_received"]["jitter_ms"], 0.25, "{end}");
        assert_eq!(end["sum_received"]["lost_packets"], 3, "{end}");
        assert_eq!(end["sum_received"]["from_peer_report"], true, "{end}");
        assert_eq!(end["streams"][0]["peer_report"]["bytes"], 990, "{end}");
    }

    #[test]
    fn a_held_end_goes_out_without_a_report_at_the_close() {
        let lines = stream_lines(&[Event::End(Box::new(udp_sender_end())), Event::Done]);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["event"], "end");
        assert!(lines[0]["data"].get("sum_received").is_none(), "{}", lines[0]);
    }

    #[test]
    fn a_stream_with_the_report_after_its_end_still_makes_the_document() {
        // What --json-stream wrote before the end waited for the report.
        let end = dialect_end(&udp_sender_end(), Dialect::Iperf2, Side::Client);
        let report = stream_event(&Event::PeerReport(report()), Side::Client, Dialect::Iperf2).unwrap();
        let events = vec![
            serde_json::json!({"event": "start", "data": {"connected": [1]}}),
            serde_json::json!({"event": "end", "data": end}),
            report,
        ];
        let doc = document_from_stream(&events).unwrap();
        assert_eq!(doc["end"]["sum_received"]["jitter_ms"], 0.25, "{doc}");
        assert_eq!(doc["end"]["streams"][0]["peer_report"]["bytes"], 990, "{doc}");
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["start", "intervals", "end"]);
    }

    #[test]
    fn a_connect_backs_end_and_start_join_the_document() {
        let events = vec![
            serde_json::json!({"event": "start", "data": {"connected": [1]}}),
            serde_json::json!({"event": "start", "data": {"connected": [2]}}),
            serde_json::json!({"event": "end", "data": {"streams": [{"a": 2}], "sum_received_bidir_reverse": {"bytes": 5}}}),
            serde_json::json!({"event": "end", "data": {"streams": [{"a": 1}], "sum_sent": {"bytes": 7}}}),
        ];
        let doc = document_from_stream(&events).unwrap();
        assert_eq!(doc["start"]["connected"], serde_json::json!([1, 2]));
        assert_eq!(doc["end"]["streams"].as_array().unwrap().len(), 2);
        assert_eq!(doc["end"]["sum_sent"]["bytes"], 7);
        assert_eq!(doc["end"]["sum_received_bidir_reverse"]["bytes"], 5);
    }
}
