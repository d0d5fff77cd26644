//! One test's view of the metrics: a sink of its event stream.

use std::sync::Arc;

use super::{ClientResult, Metrics};
use crate::report::Sink;
use crate::report::event::{Event, Summary};

/// Feeds a server test's events into the shared [`Metrics`].
pub struct MetricsSink {
    metrics: Arc<Metrics>,
    labels: (&'static str, &'static str),
    client: String,
    started: bool,
    streams: u64,
    failed: bool,
    done: bool,
    last: Option<ClientResult>,
}

impl MetricsSink {
    /// A sink for one test of `client` (its IP address) with these labels.
    pub fn new(metrics: Arc<Metrics>, labels: (&'static str, &'static str), client: String) -> MetricsSink {
        MetricsSink {
            metrics,
            labels,
            client,
            started: false,
            streams: 0,
            failed: false,
            done: false,
            last: None,
        }
    }

    fn result(&self, s: &Summary) -> ClientResult {
        let mut received = None;
        let mut sent = None;
        let mut retr = None;
        let mut bytes = 0;
        for st in &s.streams {
            if st.local_sender {
                *sent.get_or_insert(0.0) += st.sender.bits_per_second;
                bytes += st.sender.bytes;
                if let Some(r) = st.sender.retransmits {
                    *retr.get_or_insert(0) += r;
                }
            } else {
                *received.get_or_insert(0.0) += st.receiver.bits_per_second;
                bytes += st.receiver.bytes;
            }
        }
        ClientResult {
            client: self.client.clone(),
            received_bps: received,
            sent_bps: sent,
            bytes,
            retransmits: retr,
            ended_at: crate::sys::time::epoch_now(),
            success: true,
        }
    }

    fn end(&mut self) {
        if self.done || !self.started {
            return;
        }
        self.done = true;
        self.metrics.test_ended(self.labels, !self.failed);
        self.metrics.streams(false, self.streams);
        if let Some(mut r) = self.last.take() {
            r.success = !self.failed;
            self.metrics.client_result(r);
        }
    }
}

impl Sink for MetricsSink {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Accepted { .. } if !self.started => {
                self.started = true;
                self.metrics.test_started(self.labels);
            }
            Event::Start(s) => {
                self.streams = s.connected.len() as u64;
                self.metrics.streams(true, self.streams);
            }
            Event::Interval(r) => {
                for s in &r.streams {
                    self.metrics.bytes(self.labels, s.sender, s.bytes);
                }
            }
            Event::End(s) => self.last = Some(self.result(s)),
            // Notices are the server's words for a test cut short.
            Event::Error(_) | Event::Notice(_) => self.failed = true,
            Event::Done => self.end(),
            _ => {}
        }
    }
}

impl Drop for MetricsSink {
    /// A test that ends without `Done` (a panic unwinding) still leaves the
    /// active gauges.
    fn drop(&mut self) {
        if self.started && !self.done {
            self.failed = true;
            self.end();
        }
    }
}

/// Feeds an iperf 2 server test's events into the shared [`Metrics`]. An
/// iperf 2 test has no control connection and no `Done`: it starts when
/// its flows are set up (this sink is made) and ends when its reporter is
/// dropped. Bytes count up from interval reports; the final report adds
/// what the intervals did not show (without `-i` there are none).
pub struct Iperf2MetricsSink {
    metrics: Arc<Metrics>,
    labels: (&'static str, &'static str),
    client: String,
    flows: u64,
    failed: bool,
    /// Bytes already counted, per (flow id, this end sends).
    counted: std::collections::HashMap<(u32, bool), u64>,
    last: Option<ClientResult>,
}

impl Iperf2MetricsSink {
    /// A test of `client` with `flows` connections: counted as started.
    pub fn new(metrics: Arc<Metrics>, labels: (&'static str, &'static str), client: String, flows: u64) -> Self {
        metrics.test_started(labels);
        metrics.streams(true, flows);
        Iperf2MetricsSink {
            metrics,
            labels,
            client,
            flows,
            failed: false,
            counted: std::collections::HashMap::new(),
            last: None,
        }
    }

    fn add(&mut self, id: u32, sender: bool, bytes: u64, total: bool) {
        let seen = self.counted.entry((id, sender)).or_insert(0);
        let n = if total { bytes.saturating_sub(*seen) } else { bytes };
        *seen += n;
        if n > 0 {
            self.metrics.bytes(self.labels, sender, n);
        }
    }
}

impl Sink for Iperf2MetricsSink {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Flows(r) if !r.relay => {
                for f in &r.flows {
                    self.add(f.id, f.sender, f.bytes, r.final_report);
                }
                if r.final_report {
                    let mut res = self.last.take().unwrap_or(ClientResult {
                        client: self.client.clone(),
                        received_bps: None,
                        sent_bps: None,
                        bytes: 0,
                        retransmits: None,
                        ended_at: 0.0,
                        success: true,
                    });
                    for f in &r.flows {
                        let rate = if f.sender {
                            &mut res.sent_bps
                        } else {
                            &mut res.received_bps
                        };
                        *rate.get_or_insert(0.0) += f.bits_per_second;
                        res.bytes += f.bytes;
                    }
                    res.ended_at = crate::sys::time::epoch_now();
                    self.last = Some(res);
                }
            }
            Event::Error(_) | Event::Warning(_) => self.failed = true,
            _ => {}
        }
    }
}

impl Drop for Iperf2MetricsSink {
    fn drop(&mut self) {
        self.metrics.test_ended(self.labels, !self.failed);
        self.metrics.streams(false, self.flows);
        if let Some(mut r) = self.last.take() {
            r.success = !self.failed;
            self.metrics.client_result(r);
        }
    }
}
