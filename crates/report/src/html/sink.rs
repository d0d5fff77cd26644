//! `--report FILE.html`: a sink that builds the `-J` document from the event
//! stream (with the JSON sink itself, so the numbers are the ones `-J`
//! prints) and renders it once the test is done. A test without periodic
//! reports is sampled every second for the charts ([`Event::Sample`]):
//! those samples are the document's intervals.

use std::path::PathBuf;

use super::{render_documents, write_atomic};
use crate::json::JsonSink;
use crate::mode::ModeDoc;
use crate::{Output, Sink};
use wirespeed_core::config::TestConfig;
use wirespeed_core::error::Error;
use wirespeed_core::events::{Event, Side};

/// Writes the HTML report of a test when it ends.
pub struct HtmlSink {
    json: JsonSink,
    path: PathBuf,
    out: Output,
    side: Side,
    started: bool,
    /// The test is sampled for the charts alone ([`Event::Sample`]): the
    /// charts draw those samples rather than the one whole-test interval.
    sampled: bool,
    failure: Option<Error>,
    /// A mode's document (`--rpm`, `--udp-search`), written when it ends.
    mode: ModeDoc,
    /// The mode's documents so far (`--rpm=URL` has one per direction):
    /// each is written beside the ones before it.
    mode_docs: Vec<serde_json::Value>,
}

impl HtmlSink {
    /// A sink writing to `path`; failures go to `out`'s diagnostics on a
    /// server (which keeps serving) and to [`Sink::finish`] on a client.
    pub fn new(cfg: &TestConfig, out: Output, side: Side, path: PathBuf) -> HtmlSink {
        HtmlSink {
            json: JsonSink::new(cfg, Output::discard(), side),
            path,
            out,
            side,
            started: false,
            sampled: false,
            failure: None,
            mode: ModeDoc::default(),
            mode_docs: Vec::new(),
        }
    }

    fn write(&mut self) {
        let doc = self.json.document();
        self.write_doc(doc);
    }

    fn write_doc(&mut self, doc: serde_json::Value) {
        self.write_docs(std::slice::from_ref(&doc));
    }

    fn write_docs(&mut self, docs: &[serde_json::Value]) {
        let who = match self.side {
            Side::Client => "client",
            Side::Server => "server",
        };
        let source = format!("Written by the {who} when the test ended");
        let html = render_documents(docs, &source);
        if let Err(e) = write_atomic(&self.path, &html) {
            if self.side == Side::Server {
                self.out.write_err(&format!("{}: {}\n", self.out.program(), e.line()));
            }
            self.failure = Some(e);
        }
    }
}

impl Sink for HtmlSink {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Mode(m) => {
                if let Some(doc) = self.mode.event(m) {
                    let mut docs = std::mem::take(&mut self.mode_docs);
                    docs.push(doc);
                    self.write_docs(&docs);
                    self.mode_docs = docs;
                }
                return;
            }
            Event::Start(_) => self.started = true,
            // A test that never started has nothing to draw: its error
            // already reaches the user through the other outputs.
            Event::Done if self.started => {
                self.started = false;
                self.sampled = false;
                self.write();
            }
            Event::Sample(r) => {
                self.sampled = true;
                self.json.event(&Event::Interval(r.clone()));
                return;
            }
            Event::Interval(_) if self.sampled => return,
            _ => {}
        }
        self.json.event(ev);
    }

    fn finish(&mut self) -> Result<(), Error> {
        match self.failure.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
