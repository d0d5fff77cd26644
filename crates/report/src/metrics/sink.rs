//! One test's view of the metrics: a sink of its event stream, the same
//! for every kind of test of either dialect.

use std::sync::Arc;

use super::{ClientResult, Metrics, RpmGauges};
use crate::Sink;
use wirespeed_core::events::{Event, ModeEvent, Summary};

/// Feeds a server test's events into the shared [`Metrics`]: a test counts
/// as started at its control connection (iperf3) or its start (iperf 2,
/// which has none), and as ended at `Done` (or when the sink is dropped).
pub struct MetricsSink {
    metrics: Arc<Metrics>,
    labels: (&'static str, &'static str),
    client: String,
    started: bool,
    streams: u64,
    failed: bool,
    done: bool,
    last: Option<ClientResult>,
    /// Bytes already counted, per (stream id, this end sends): the end adds
    /// what the intervals did not show (without `-i` there are none).
    counted: std::collections::HashMap<(u32, bool), u64>,
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
            counted: std::collections::HashMap::new(),
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
            ended_at: wirespeed_sys::time::epoch_now(),
            success: true,
        }
    }

    /// Counts `bytes` more of stream `s`.
    fn count(&mut self, s: &wirespeed_core::events::StreamSample, bytes: u64) {
        *self.counted.entry((s.id, s.sender)).or_insert(0) += bytes;
        if s.both_ways {
            // A bounceback stream's requests and replies.
            self.metrics.bytes(self.labels, true, bytes / 2);
            self.metrics.bytes(self.labels, false, bytes - bytes / 2);
        } else {
            self.metrics.bytes(self.labels, s.sender, bytes);
        }
    }

    fn begin(&mut self) {
        if !self.started {
            self.started = true;
            self.metrics.test_started(self.labels);
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
            Event::Accepted { .. } => self.begin(),
            Event::Start(s) => {
                self.begin();
                self.streams = s.connected.len() as u64;
                self.metrics.streams(true, self.streams);
            }
            Event::Interval(r) => {
                for s in &r.streams {
                    self.count(s, s.bytes);
                }
            }
            Event::End(s) => {
                for l in &s.local.streams {
                    let seen = self.counted.get(&(l.id, l.sender)).copied().unwrap_or(0);
                    self.count(l, l.bytes.saturating_sub(seen));
                }
                self.last = Some(self.result(s));
            }
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

/// Feeds a client mode's events (`--rpm`, `--udp-search`) into the
/// [`Metrics`] its `--metrics` endpoint serves: the latest RPM, goodput
/// and flows; the search's latest probe, its loss floor and its answer.
pub struct ModeMetrics {
    metrics: Arc<Metrics>,
}

impl ModeMetrics {
    /// A sink feeding `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> ModeMetrics {
        ModeMetrics { metrics }
    }
}

impl Sink for ModeMetrics {
    fn event(&mut self, ev: &Event) {
        let Event::Mode(m) = ev else { return };
        match m {
            ModeEvent::RpmInterval(iv) => self.metrics.rpm(RpmGauges {
                rpm: iv.rpm,
                goodput: iv.goodput_avg,
                flows: iv.flows,
                done: false,
            }),
            ModeEvent::RpmEnd(r) => self.metrics.rpm(RpmGauges {
                rpm: r.rpm,
                goodput: r.goodput,
                flows: r.flows,
                done: true,
            }),
            ModeEvent::SearchProbe(p) => self.metrics.search(|g| {
                g.probes = p.n as u64;
                g.probe = (p.probe.rate as f64, p.probe.received_bps, p.probe.lost_percent);
            }),
            ModeEvent::SearchFloor(f) => self.metrics.search(|g| g.loss_floor = Some(100.0 * f.loss)),
            ModeEvent::SearchEnd(e) => self.metrics.search(|g| {
                g.loss_floor = e.floor.map(|f| 100.0 * f.loss);
                g.answer = e.outcome.as_ref().ok().map(|a| a.rate as f64);
            }),
            ModeEvent::RpmStart(_) | ModeEvent::SearchStart(_) => {}
        }
    }
}
