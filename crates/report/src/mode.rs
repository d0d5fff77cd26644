//! The outputs of the modes that run many tests to answer one question
//! (`--rpm`, `--udp-search`), from their [`ModeEvent`]s: the text
//! ([`ModeText`]), the `-J` document ([`ModeJson`], which the HTML report
//! renders too), the `--json-stream` lines ([`stream_line`]) and the
//! document rebuilt from those lines ([`document_from_stream`], the web
//! UI's). They format numbers; the modes compute them.

use serde_json::{Map, Value, json};

use super::{Output, Sink};
use crate::document::{self, StreamEvent};
use wirespeed_core::config::TestConfig;
use wirespeed_core::events::{
    Event, LossFloor, ModeEvent, Probe, RpmEnd, RpmInterval, RpmStart, SearchEnd, SearchStart,
};

/// A rate as the modes print it: iperf3's units and `/sec`.
pub fn rate_text(bps: f64, fmt: char) -> String {
    format!("{}s/sec", wirespeed_core::units::format_iperf3(bps / 8.0, fmt))
}

/// A loss for the search's own lines: two significant digits like
/// iperf's, but never "1e+02".
pub fn percent(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        wirespeed_proto::json::format_g(v, 2)
    }
}

/// A number without trailing zeros (at most four decimals).
pub fn trim_num(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Whether the configuration runs a mode whose outputs this module makes.
pub fn is_mode(cfg: &TestConfig) -> bool {
    cfg.rpm || cfg.search.is_some()
}

fn rpm_start(s: &RpmStart) -> document::RpmStart {
    document::RpmStart {
        host: Some(s.host.clone()),
        port: Some(i64::from(s.port)),
        method: Some(s.method.clone()),
        interval_seconds: Some(s.interval_seconds),
        mad: Some(s.mad as f64),
        sdt: Some(s.sdt),
        max_flows: Some(i64::from(s.max_flows)),
        probes_per_second: Some(f64::from(s.probes_per_second)),
        trimmed_mean_keep: Some(s.trimmed_mean_keep),
        time_limit_seconds: Some(s.time_limit_seconds),
        ..document::RpmStart::default()
    }
}

fn rpm_interval(iv: &RpmInterval) -> document::RpmInterval {
    document::RpmInterval {
        seconds: Some(iv.at),
        flows: Some(i64::from(iv.flows)),
        goodput_bits_per_second: Some(iv.goodput),
        goodput_moving_average: Some(iv.goodput_avg),
        saturated: Some(iv.saturated),
        rpm: iv.rpm,
        foreign_rpm: iv.foreign,
        loaded_rpm: iv.loaded,
        ..document::RpmInterval::default()
    }
}

fn rpm_end(r: &RpmEnd) -> document::RpmEnd {
    document::RpmEnd {
        rpm: r.rpm,
        class: r.class.clone(),
        confidence: Some(r.confidence.clone()),
        direction: Some(r.direction.clone()),
        goodput_bits_per_second: Some(r.goodput),
        flows: Some(i64::from(r.flows)),
        idle_rpm: r.idle_rpm,
        idle: r.idle_ms.map(|(t, rr)| document::RpmProbes {
            tcp_handshake_ms: Some(t),
            round_trip_ms: Some(rr),
            ..document::RpmProbes::default()
        }),
        loaded: Some(document::RpmProbes {
            tcp_handshake_ms: r.tm_ms.0,
            round_trip_ms: r.tm_ms.1,
            tcp_info_rtt_ms: Some(r.tm_ms.2),
            round_trip_p90_ms: Some(r.p90_ms),
            self_probe_ms: r.self_probe_ms,
            ..document::RpmProbes::default()
        }),
        probe_failures: Some(i64::try_from(r.failures).unwrap_or(i64::MAX)),
        ..document::RpmEnd::default()
    }
}

fn search_head(s: &SearchStart) -> document::Search {
    document::Search {
        max_loss_percent: Some(s.max_loss_percent),
        probe_seconds: Some(s.probe_seconds),
        streams: Some(i64::from(s.streams)),
        blksize: Some(i64::from(s.blksize)),
        reverse: Some(s.reverse),
        resolution: Some(s.resolution),
        ..document::Search::default()
    }
}

fn probe(p: &Probe) -> document::SearchProbe {
    document::SearchProbe {
        bits_per_second: Some(p.rate as f64),
        sent_bits_per_second: Some(p.sent_bps),
        received_bits_per_second: Some(p.received_bps),
        packets: Some(p.packets),
        lost_packets: Some(p.lost),
        lost_percent: Some(p.lost_percent),
        jitter_ms: Some(p.jitter_ms),
        sender_limited: Some(p.sender_limited),
        ok: Some(p.ok),
        retry: Some(p.retry),
        floor_check: Some(p.floor_check),
        ..document::SearchProbe::default()
    }
}

fn floor(f: &LossFloor) -> document::LossFloor {
    document::LossFloor {
        loss_floor_percent: Some(100.0 * f.loss),
        packets: Some(f.packets),
        up_to_bits_per_second: Some(f.up_to as f64),
        ..document::LossFloor::default()
    }
}

/// The `result` of a search that found an answer.
fn search_result(e: &SearchEnd) -> Option<document::SearchResult> {
    let a = e.outcome.as_ref().ok()?;
    Some(document::SearchResult {
        bits_per_second: Some(a.rate as f64),
        received_bits_per_second: Some(a.received_bps),
        lost_percent: Some(a.lost_percent),
        finish: Some(a.finish.name().to_string()),
        loss_floor_percent: e.floor.map(|f| 100.0 * f.loss),
        ..document::SearchResult::default()
    })
}

/// A part of a document as JSON.
fn json<T: serde::Serialize>(part: &T) -> Value {
    serde_json::to_value(part).unwrap_or(Value::Null)
}

/// The `--json-stream` line of a mode event: its name and data.
pub fn stream_line(m: &ModeEvent) -> (&'static str, Value) {
    match m {
        ModeEvent::RpmStart(s) => ("rpm_start", json(&rpm_start(s))),
        ModeEvent::RpmInterval(iv) => ("rpm_interval", json(&rpm_interval(iv))),
        ModeEvent::RpmEnd(r) => ("rpm_end", json(&rpm_end(r))),
        ModeEvent::SearchStart(s) => ("search_start", json(&search_head(s))),
        ModeEvent::SearchProbe(p) => ("probe", json(&probe(&p.probe))),
        ModeEvent::SearchFloor(f) => ("loss_floor", json(&floor(f))),
        ModeEvent::SearchEnd(e) => match &e.outcome {
            Ok(_) => ("search_end", search_result(e).map_or(Value::Null, |r| json(&r))),
            Err(err) => ("error", Value::String(err.text())),
        },
    }
}

/// The line written for a mode event (serde's compact JSON, as the modes
/// have always written them).
pub(crate) fn stream_text(m: &ModeEvent) -> String {
    let (name, data) = stream_line(m);
    let line = StreamEvent {
        event: name.to_string(),
        data,
    };
    format!("{}\n", serde_json::to_string(&line).unwrap_or_default())
}

/// A mode's `-J` document, built as its events arrive.
#[derive(Default)]
pub(crate) struct ModeDoc {
    /// The responsiveness test's document so far.
    rpm: Option<document::RpmDoc>,
    /// The search's settings, from its start.
    search: Option<SearchStart>,
}

impl ModeDoc {
    /// Takes one event; returns the whole document once the mode ended.
    pub fn event(&mut self, m: &ModeEvent) -> Option<Value> {
        match m {
            ModeEvent::RpmStart(s) => {
                self.rpm = Some(document::RpmDoc {
                    start: Some(rpm_start(s)),
                    ..document::RpmDoc::default()
                });
                None
            }
            ModeEvent::RpmInterval(iv) => {
                if let Some(d) = self.rpm.as_mut() {
                    d.intervals.push(rpm_interval(iv));
                }
                None
            }
            ModeEvent::RpmEnd(r) => {
                let mut d = self.rpm.take().unwrap_or_default();
                d.end = Some(rpm_end(r));
                Some(json(&d))
            }
            ModeEvent::SearchStart(s) => {
                self.search = Some((**s).clone());
                None
            }
            ModeEvent::SearchProbe(_) | ModeEvent::SearchFloor(_) => None,
            ModeEvent::SearchEnd(e) => Some(json(&self.search_document(e))),
        }
    }

    fn search_document(&self, e: &SearchEnd) -> document::SearchDoc {
        let mut search = self.search.as_ref().map(search_head).unwrap_or_default();
        search.probes = Some(e.probes.iter().map(probe).collect());
        search.result = search_result(e);
        let mut doc = document::SearchDoc {
            start: Some(document::Start {
                version: Some(wirespeed_core::version::version_string()),
                system_info: Some(wirespeed_sys::process::system_info()),
                ..document::Start::default()
            }),
            ..document::SearchDoc::default()
        };
        if let Err(err) = &e.outcome {
            doc.error = Some(err.text());
            search.loss_floor_percent = e.floor.map(|f| 100.0 * f.loss);
        }
        doc.search = Some(search);
        doc
    }
}

/// `-J` of a mode: its document, printed when it ends.
pub(crate) struct ModeJson {
    out: Output,
    doc: ModeDoc,
}

impl ModeJson {
    /// A sink writing to `out`.
    pub fn new(out: Output) -> ModeJson {
        ModeJson {
            out,
            doc: ModeDoc::default(),
        }
    }
}

impl Sink for ModeJson {
    fn event(&mut self, ev: &Event) {
        if let Event::Mode(m) = ev
            && let Some(d) = self.doc.event(m)
        {
            self.out
                .write(&format!("{}\n", wirespeed_proto::json::to_formatted(&d)));
        }
    }
}

/// The text of a mode (the same in both dialects).
pub(crate) struct ModeText {
    out: Output,
    /// `-f` for the search's rates.
    fmt: char,
    /// `-T`'s prefix of the search's lines.
    title: String,
    /// `--max-loss` as the search's lines say it.
    max_loss: String,
}

impl ModeText {
    /// A sink writing to `out` with `cfg`'s format and title.
    pub fn new(cfg: &TestConfig, out: Output) -> ModeText {
        ModeText {
            out,
            fmt: match cfg.output.format {
                'k' | 'm' | 'g' | 't' | 'K' | 'M' | 'G' | 'T' => cfg.output.format,
                _ => 'a',
            },
            title: cfg.output.title.as_ref().map(|t| format!("{t}:  ")).unwrap_or_default(),
            max_loss: String::new(),
        }
    }

    fn line(&self, text: &str) {
        self.out.write(&format!("{}{text}\n", self.title));
    }

    fn rpm_start(&self, s: &RpmStart) {
        self.out.write(&format!(
            "Responsiveness test (TCP-only RPM, after draft-ietf-ippm-responsiveness) with {} port {}: \
             up to {} load flows, one more every {:.0} s, {} probes/s, for at most {:.0} s\n",
            s.host, s.port, s.max_flows, s.interval_seconds, s.probes_per_second, s.time_limit_seconds
        ));
    }

    fn rpm_interval(&self, iv: &RpmInterval) {
        let n = |v: Option<f64>| v.map_or("-".to_string(), |r| format!("{r:.0}"));
        self.out.write(&format!(
            "[RPM] {:6.2} sec  {:2} flows  goodput {} (avg {}){}  RPM {} (foreign {}, loaded {})\n",
            iv.at,
            iv.flows,
            rate_text(iv.goodput, 'a'),
            rate_text(iv.goodput_avg, 'a'),
            if iv.saturated { " saturated" } else { "" },
            n(iv.rpm),
            n(iv.foreign),
            n(iv.loaded)
        ));
    }

    fn rpm_end(&self, r: &RpmEnd) {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |m| format!("{m:.3} ms"));
        let dir = &r.direction;
        let mut s = String::new();
        match r.rpm {
            Some(rpm) => s.push_str(&format!(
                "[RPM] Responsiveness: {rpm:.0} RPM ({}), TCP-only, {dir}; confidence {}\n",
                r.class.as_deref().unwrap_or_default(),
                r.confidence
            )),
            None => s.push_str("[RPM] Responsiveness: no probe came back under load\n"),
        }
        s.push_str(&format!(
            "[RPM] goodput {} with {} load flows\n",
            rate_text(r.goodput, 'a'),
            r.flows
        ));
        if let (Some(rpm), Some((t, rr))) = (r.idle_rpm, r.idle_ms) {
            s.push_str(&format!(
                "[RPM] idle:   {rpm:.0} RPM (TCP handshake {t:.3} ms, round trip {rr:.3} ms)\n"
            ));
        }
        s.push_str(&format!(
            "[RPM] loaded: TCP handshake {}, round trip {} (p90 {}), load flows' RTT {}{}\n",
            ms(r.tm_ms.0),
            ms(r.tm_ms.1),
            ms(r.p90_ms),
            ms(r.tm_ms.2),
            if r.failures > 0 {
                format!(" ({} probes failed)", r.failures)
            } else {
                String::new()
            }
        ));
        self.out.write(&s);
    }

    fn search_start(&mut self, s: &SearchStart) {
        self.max_loss = trim_num(s.max_loss_percent);
        self.line(&format!(
            "Searching for the highest UDP rate with loss <= {}% ({} s probes, {} stream{})",
            self.max_loss,
            trim_num(s.probe_seconds),
            s.streams,
            if s.streams == 1 { "" } else { "s" }
        ));
        self.line("Probe  Asked                Received             Lost/Total Datagrams");
    }

    fn search_probe(&self, n: usize, p: &Probe, retrying: bool) {
        let verdict = if p.ok && p.retry {
            "ok on a second try"
        } else if p.ok {
            "ok"
        } else if retrying {
            "too much loss, trying again"
        } else if p.sender_limited {
            "sender short of the rate"
        } else {
            "too much loss"
        };
        // The asked rate jumps above one that just lost too much: say why.
        let why = if p.floor_check {
            " (does the loss grow with the rate?)"
        } else {
            ""
        };
        self.line(&format!(
            "{n:>5}  {:<19}  {:<19}  {}/{} ({}%)  {verdict}{why}",
            rate_text(p.rate as f64, self.fmt),
            rate_text(p.received_bps, self.fmt),
            p.lost,
            p.packets,
            percent(p.lost_percent)
        ));
    }

    fn search_floor(&self, f: &LossFloor) {
        self.line(&format!(
            "Random loss: rates twice apart lost alike, about {}% up to {}; a probe is now ok when it loses at most {}% more",
            percent(100.0 * f.loss),
            rate_text(f.up_to as f64, self.fmt).trim_start(),
            self.max_loss
        ));
    }

    fn search_end(&self, e: &SearchEnd) {
        let a = match &e.outcome {
            Ok(a) => a,
            Err(err) => {
                self.out.write_err(&format!("{}: {}\n", self.out.program(), err.line()));
                return;
            }
        };
        let above = match e.floor {
            Some(f) => {
                let floor = percent(100.0 * f.loss);
                self.line(&format!(
                    "The path loses about {floor}% at every rate probed, however low: that much is taken as random loss, and the rate reported is the highest whose loss stays within {}% of it.",
                    self.max_loss
                ));
                format!(" above the {floor}% floor")
            }
            None => String::new(),
        };
        self.line(&format!(
            "Highest rate with loss <= {}%{above}: {} (received {}, {}% lost)",
            self.max_loss,
            rate_text(a.rate as f64, self.fmt),
            rate_text(a.received_bps, self.fmt),
            percent(a.lost_percent)
        ));
        match a.finish {
            wirespeed_core::events::Finish::SenderLimited => {
                self.line("The sender could not go faster: the path may carry more than this.")
            }
            wirespeed_core::events::Finish::Ceiling => self.line("Every rate up to the search's ceiling was carried."),
            wirespeed_core::events::Finish::ProbeLimit => {
                self.line("The search stopped at its probe limit before converging.")
            }
            _ => {}
        }
        self.line("");
        self.line("iperf Done.");
    }
}

impl Sink for ModeText {
    fn event(&mut self, ev: &Event) {
        let Event::Mode(m) = ev else { return };
        match m {
            ModeEvent::RpmStart(s) => self.rpm_start(s),
            ModeEvent::RpmInterval(iv) => self.rpm_interval(iv),
            ModeEvent::RpmEnd(r) => self.rpm_end(r),
            ModeEvent::SearchStart(s) => self.search_start(s),
            ModeEvent::SearchProbe(p) => self.search_probe(p.n, &p.probe, p.retrying),
            ModeEvent::SearchFloor(f) => self.search_floor(f),
            ModeEvent::SearchEnd(e) => self.search_end(e),
        }
    }
}

/// A mode's document rebuilt from its `--json-stream` lines (`None` if
/// they are not a mode's): the responsiveness test's `intervals`, `start`
/// and `end`, or the search's settings with its `probes` and `result` (or
/// `error`).
///
/// JSON, not the model, as [`crate::json`]'s rebuild: the lines' data go
/// into the document as they came.
pub(crate) fn document_from_stream(events: &[Value]) -> Option<Value> {
    let name = |e: &Value| StreamEvent::name_of(e).map(str::to_string);
    let first = events.iter().find_map(name)?;
    let data = |e: &Value| StreamEvent::from_value(e).map_or(Value::Null, |e| e.data);
    match first.as_str() {
        "rpm_start" => {
            let mut d = json!({"intervals": []});
            for e in events {
                match name(e).as_deref() {
                    // `--rpm=URL` tells each direction from its own
                    // start: the document is the latest direction's.
                    Some("rpm_start") => d = json!({"intervals": [], "start": data(e)}),
                    Some("rpm_interval") => {
                        if let Some(a) = d["intervals"].as_array_mut() {
                            a.push(data(e));
                        }
                    }
                    Some("rpm_end") => d["end"] = data(e),
                    Some("error") => d["error"] = data(e),
                    _ => {}
                }
            }
            Some(d)
        }
        "search_start" => {
            let mut search = match events.first().map(data) {
                Some(Value::Object(m)) => m,
                _ => Map::new(),
            };
            let mut probes = Vec::new();
            let mut doc = Map::new();
            for e in events {
                match name(e).as_deref() {
                    Some("probe") => probes.push(data(e)),
                    Some("loss_floor") => {
                        let floor = StreamEvent::from_value(e).and_then(|e| e.data_as::<document::LossFloor>());
                        if let Some(f) = floor.and_then(|f| f.loss_floor_percent) {
                            search.insert("loss_floor_percent".into(), f.into());
                        }
                    }
                    Some("search_end") => {
                        search.insert("result".into(), data(e));
                    }
                    Some("error") => {
                        doc.insert("error".into(), data(e));
                    }
                    _ => {}
                }
            }
            search.insert("probes".into(), Value::Array(probes));
            doc.insert("start".into(), json!({}));
            doc.insert("search".into(), Value::Object(search));
            Some(Value::Object(doc))
        }
        _ => None,
    }
}
