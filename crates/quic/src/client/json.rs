//! `-J` with a `quic` object: the document the JSON sink makes, with the
//! connection's statistics added to its `end` before it is printed.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use wirespeed_core::events::Event;
use wirespeed_report::json::JsonSink;
use wirespeed_report::{Output, Sink};

/// The connection's statistics, filled in before `End`.
pub(crate) type QuicDoc = Arc<Mutex<Option<Value>>>;

/// The JSON sink, writing into a buffer, and the document passed on with
/// `end.quic` added.
pub(crate) struct WithQuic {
    inner: JsonSink,
    buf: Arc<Mutex<String>>,
    out: Output,
    quic: QuicDoc,
}

impl WithQuic {
    pub(crate) fn new(cfg: &wirespeed_core::config::TestConfig, out: Output, quic: QuicDoc) -> WithQuic {
        let buf = Arc::new(Mutex::new(String::new()));
        let side = wirespeed_core::events::Side::Client;
        WithQuic {
            inner: JsonSink::new(cfg, Output::buffer(buf.clone()), side),
            buf,
            out,
            quic,
        }
    }
}

impl Sink for WithQuic {
    fn event(&mut self, ev: &Event) {
        self.inner.event(ev);
        if !matches!(ev, Event::Done) {
            return;
        }
        let text = std::mem::take(&mut *self.buf.lock().unwrap_or_else(|p| p.into_inner()));
        let quic = self.quic.lock().unwrap_or_else(|p| p.into_inner()).take();
        match (serde_json::from_str::<Value>(&text), quic) {
            (Ok(mut doc), Some(q)) => {
                if let Some(Value::Object(end)) = doc.get_mut("end") {
                    end.insert("quic".into(), q);
                }
                let text = wirespeed_proto::json::to_formatted(&doc);
                self.out.write(&format!("{text}\n"));
            }
            _ => self.out.write(&text),
        }
    }

    fn finish(&mut self) -> Result<(), wirespeed_core::error::Error> {
        self.inner.finish()
    }
}
