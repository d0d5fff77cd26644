//! `--rpm=URL`: the standard responsiveness test of
//! draft-ietf-ippm-responsiveness against a networkQuality server (Apple's
//! networkQuality, Cloudflare's mach, goresponsiveness speak the same):
//! HTTP/2 over TLS 1.3, load-generating connections, foreign and self
//! probes (`docs/features.md`, Standard responsiveness).
//!
//! This file holds what needs no network: the URL and the configuration
//! document, the per-second judgement of a direction, and the reports.
//! `client.rs` is the network side (tokio, rustls, h2), built with the
//! default `nq-client` feature.
// Without the `client` feature only the parsers and reports stay, unused.
#![cfg_attr(not(feature = "client"), allow(dead_code))]

#[cfg(feature = "client")]
mod network;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use serde_json::{Value, json};

use wirespeed_core::config::{NqOptions, TestConfig};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::events::{Event, ModeEvent, RpmEnd, RpmInterval, RpmStart, Side};
use wirespeed_iperf::modes::rpm::{MAD, class, stable, trimmed_mean};
use wirespeed_report::Output;

pub use wirespeed_core::config::nq::{DEFAULT_TIME, MAX_FLOWS, MOST_FLOWS};
/// Connections opened at the start, and added each second goodput still
/// grows (the draft's INP and INC).
pub(crate) const FLOWS_PER_STEP: u32 = 1;
/// Probe rounds per second (each a foreign and a self probe).
pub(crate) const PROBE_ROUNDS_PER_SECOND: u32 = 10;
/// The largest configuration document read.
pub(crate) const CONFIG_CAP: usize = 64 * 1024;
/// The largest small-object body a probe reads.
pub(crate) const SMALL_CAP: usize = 64 * 1024;

/// An `https://` URL, cut into what a connection and a request need.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Url {
    /// The host as written, without IPv6 brackets.
    pub host: String,
    /// The port (443 unless given).
    pub port: u16,
    /// The path and query (`/` when empty).
    pub path: String,
}

impl Url {
    /// `host[:port]` as a request's authority.
    pub(crate) fn authority(&self) -> String {
        let h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 443 {
            h
        } else {
            format!("{h}:{}", self.port)
        }
    }

    /// The whole URL again.
    pub fn text(&self) -> String {
        format!("https://{}{}", self.authority(), self.path)
    }
}

/// Parses an `https://host[:port][/path]` URL.
pub(crate) fn parse_url(s: &str) -> Result<Url, String> {
    let bad = |why: &str| format!("bad URL {s:?}: {why}");
    let rest = match s.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => rest,
        Some(_) => return Err(bad("only https:// is supported")),
        None => return Err(bad("expected https://host[:port]/path")),
    };
    let (hostport, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = match path.split_once('#') {
        Some((p, _)) => p,
        None => path,
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    if hostport.contains('@') {
        return Err(bad("user names are not supported"));
    }
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':').ok_or_else(|| bad("junk after ]"))?)),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control())
        || path.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(bad("spaces or control characters"));
    }
    let port = match port {
        None => 443,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| bad("bad port"))?,
    };
    Ok(Url {
        host: host.to_string(),
        port,
        path,
    })
}

/// The three URLs of a networkQuality configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NqUrls {
    /// A small object (probes).
    pub small: Url,
    /// A large object (download load).
    pub large: Url,
    /// Where uploads go (upload load).
    pub upload: Url,
}

/// Reads a configuration document: `{"version":1,"urls":{...}}`, with
/// the current keys or the older `*_https_*` ones.
pub(crate) fn parse_config(body: &[u8]) -> Result<NqUrls, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("the configuration is not JSON ({e})"))?;
    let urls = v
        .get("urls")
        .and_then(Value::as_object)
        .ok_or("the configuration has no \"urls\" object")?;
    let pick = |keys: &[&str]| -> Result<Url, String> {
        let s = keys
            .iter()
            .find_map(|k| urls.get(*k).and_then(Value::as_str))
            .ok_or_else(|| format!("the configuration's \"urls\" has no \"{}\"", keys[0]))?;
        parse_url(s)
    };
    Ok(NqUrls {
        small: pick(&["small_download_url", "small_https_download_url"])?,
        large: pick(&["large_download_url", "large_https_download_url"])?,
        upload: pick(&["upload_url", "https_upload_url"])?,
    })
}

/// Which way the load goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// GETs of the large object.
    Download,
    /// POSTs of an endless body.
    Upload,
}

impl Direction {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Download => "download",
            Direction::Upload => "upload",
        }
    }
}

/// One probe's times, ms, and the second of the run it ended in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sample {
    /// A foreign probe: TCP handshake, TLS handshake, GET on the new
    /// connection.
    Foreign {
        /// The TCP handshake.
        tcp: f64,
        /// The TLS handshake.
        tls: f64,
        /// The GET.
        http: f64,
    },
    /// A self probe: GET on a load-generating connection.
    SelfProbe(f64),
}

/// The trimmed means of a window of probes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Latencies {
    /// Foreign probes' TCP handshakes, ms.
    pub tcp: f64,
    /// Foreign probes' TLS handshakes, ms.
    pub tls: f64,
    /// Foreign probes' GETs, ms.
    pub http: f64,
    /// Self probes' GETs, ms.
    pub self_ms: f64,
    /// Self probes' median, ms: the loaded latency mach reports.
    pub self_median: f64,
    /// Foreign probes counted.
    pub foreign_n: usize,
    /// Self probes counted.
    pub self_n: usize,
}

impl Latencies {
    /// The trimmed means (fastest 95 %) of these probes; `None` without a
    /// foreign and a self probe.
    pub fn of(samples: &[Sample]) -> Option<Latencies> {
        let (mut tcp, mut tls, mut http, mut own) = (vec![], vec![], vec![], vec![]);
        for s in samples {
            match *s {
                Sample::Foreign {
                    tcp: a,
                    tls: b,
                    http: c,
                } => {
                    tcp.push(a);
                    tls.push(b);
                    http.push(c);
                }
                Sample::SelfProbe(x) => own.push(x),
            }
        }
        Some(Latencies {
            tcp: trimmed_mean(&tcp)?,
            tls: trimmed_mean(&tls)?,
            http: trimmed_mean(&http)?,
            self_ms: trimmed_mean(&own)?,
            self_median: median(&own)?,
            foreign_n: tcp.len(),
            self_n: own.len(),
        })
    }

    /// The foreign probes' round trip: the mean of its three parts, ms.
    pub(crate) fn foreign_ms(&self) -> f64 {
        (self.tcp + self.tls + self.http) / 3.0
    }

    /// The draft's responsiveness: the mean of the foreign probes' and the
    /// self probes' round trips per minute (each `60000 / ms`).
    pub fn rpm(&self) -> f64 {
        let per_minute = |ms: f64| if ms > 0.0 { 60000.0 / ms } else { 0.0 };
        (per_minute(self.foreign_ms()) + per_minute(self.self_ms)) / 2.0
    }
}

/// The median of `v`; `None` when empty.
fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// What the measurement tells as it goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Progress<'a> {
    /// The configuration was read: the server's URLs.
    Urls(&'a NqUrls),
    /// The idle path was measured.
    Idle(&'a Idle),
    /// A second of a direction.
    Second(Direction, &'a Second),
    /// A direction ended.
    Ended(&'a WayResult),
}

/// One second of a direction.
#[derive(Debug, Clone, PartialEq)]
pub struct Second {
    /// Seconds since the direction started.
    pub at: f64,
    /// Goodput in that second, bit/s.
    pub goodput: f64,
    /// Its moving average over the last [`MAD`] seconds.
    pub moving: f64,
    /// Load-generating connections open.
    pub flows: u32,
    /// RPM of the probes of the last [`MAD`] seconds, if any.
    pub rpm: Option<f64>,
    /// Its foreign and loaded (self probes') parts.
    pub foreign_rpm: Option<f64>,
    /// See `foreign_rpm`.
    pub loaded_rpm: Option<f64>,
    /// Goodput was stable (saturated) by this second.
    pub saturated: bool,
}

/// The per-second judgement of one direction: adds goodput and RPM,
/// says when both are stable.
#[derive(Debug, Default)]
pub(crate) struct Judge {
    /// The seconds so far.
    pub seconds: Vec<Second>,
    moving: Vec<f64>,
    rpms: Vec<f64>,
}

/// What a second's judgement asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Goodput still grows: add connections (if any are left).
    MoreLoad,
    /// Goodput is stable, responsiveness not yet.
    Wait,
    /// Both are stable: the result is final.
    Done,
}

impl Judge {
    /// Adds one second: `goodput` bit/s with `flows` connections, and the
    /// latencies of the probes of the last [`MAD`] seconds.
    pub fn second(&mut self, at: f64, goodput: f64, flows: u32, lat: Option<Latencies>) -> Verdict {
        let recent: Vec<f64> = self.seconds.iter().rev().take(MAD - 1).map(|s| s.goodput).collect();
        let moving = (recent.iter().sum::<f64>() + goodput) / (recent.len() + 1) as f64;
        self.moving.push(moving);
        let rpm = lat.map(|l| l.rpm());
        if let Some(r) = rpm {
            self.rpms.push(r);
        }
        let per_minute = |ms: f64| (ms > 0.0).then(|| 60000.0 / ms);
        let saturated = stable(&self.moving);
        self.seconds.push(Second {
            at,
            goodput,
            moving,
            flows,
            rpm,
            foreign_rpm: lat.and_then(|l| per_minute(l.foreign_ms())),
            loaded_rpm: lat.and_then(|l| per_minute(l.self_ms)),
            saturated,
        });
        if !saturated {
            Verdict::MoreLoad
        } else if stable(&self.rpms) {
            Verdict::Done
        } else {
            Verdict::Wait
        }
    }

    /// The confidence of a result ended now: high when `done`, medium
    /// after [`MAD`] seconds, low before.
    pub fn confidence(&self, done: bool) -> &'static str {
        if done {
            "high"
        } else if self.seconds.len() >= MAD {
            "medium"
        } else {
            "low"
        }
    }

    /// The goodput's latest moving average, bit/s.
    pub fn throughput(&self) -> f64 {
        self.moving.last().copied().unwrap_or(0.0)
    }
}

/// One direction's result.
#[derive(Debug, Clone, PartialEq)]
pub struct WayResult {
    /// Which direction.
    pub direction: Direction,
    /// Goodput, bit/s (the last moving average).
    pub throughput: f64,
    /// Probes' latencies over the last [`MAD`] seconds.
    pub lat: Latencies,
    /// Load-generating connections at the end.
    pub flows: u32,
    /// How long it ran, s.
    pub seconds: f64,
    /// "high", "medium" or "low".
    pub confidence: &'static str,
    /// Each second.
    pub intervals: Vec<Second>,
}

impl WayResult {
    /// Its `-J` object (mach's names where they overlap).
    pub fn json(&self) -> Value {
        json!({
            "throughput": self.throughput.round(),
            "loaded_latency_ms": round3(self.lat.self_median),
            "rpm": self.lat.rpm().round(),
            "class": class(self.lat.rpm()),
            "confidence": self.confidence,
            "flows": self.flows,
            "seconds": round3(self.seconds),
            "latency_ms": {
                "tcp": round3(self.lat.tcp),
                "tls": round3(self.lat.tls),
                "http": round3(self.lat.http),
                "self": round3(self.lat.self_ms),
                "foreign": round3(self.lat.foreign_ms()),
            },
            "probes": {"foreign": self.lat.foreign_n, "self": self.lat.self_n},
            "intervals": self.intervals.iter().map(|s| json!({
                "seconds": round3(s.at),
                "goodput": s.goodput.round(),
                "moving_average": s.moving.round(),
                "flows": s.flows,
                "rpm": s.rpm.map(f64::round),
            })).collect::<Vec<_>>(),
        })
    }
}

/// The idle path: GETs of the small object on one idle connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Idle {
    /// Their median, ms.
    pub latency_ms: f64,
    /// The mean difference between consecutive ones, ms.
    pub jitter_ms: f64,
}

impl Idle {
    /// From the GETs' times in order, ms.
    pub fn of(times: &[f64]) -> Option<Idle> {
        let latency_ms = median(times)?;
        let jitter_ms = if times.len() > 1 {
            times.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / (times.len() - 1) as f64
        } else {
            0.0
        };
        Some(Idle { latency_ms, jitter_ms })
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The whole run's `-J` document.
pub fn document(url: &str, idle: &Idle, directions: &[WayResult]) -> Value {
    let mut doc = json!({
        "test": "responsiveness",
        "config_url": url,
        "unloaded_latency_ms": round3(idle.latency_ms),
        "jitter_ms": round3(idle.jitter_ms),
    });
    for w in directions {
        doc[w.direction.name()] = w.json();
    }
    doc
}

/// A second's line of text.
pub(crate) fn second_text(direction: Direction, s: &Second, fmt: char) -> String {
    let rpm = s.rpm.map_or("-".to_string(), |r| format!("{r:.0}"));
    format!(
        "[{:>4.1}s] {:<8} goodput {}  flows {:>2}  RPM {rpm}\n",
        s.at,
        direction.name(),
        wirespeed_report::mode::rate_text(s.goodput, fmt),
        s.flows
    )
}

/// A direction's result in text.
pub(crate) fn result_text(w: &WayResult, fmt: char) -> String {
    let rpm = w.lat.rpm();
    let name = match w.direction {
        Direction::Download => "Download",
        Direction::Upload => "Upload",
    };
    format!(
        "{name} capacity: {} ({} flows, {:.1} s)\n\
         {name} responsiveness: {rpm:.0} RPM ({}), {:.3} ms loaded latency (self probes' median), confidence {}\n  \
         foreign probes (TCP {:.3} ms, TLS {:.3} ms, HTTP {:.3} ms, {} probes), self probes {:.3} ms ({} probes)\n",
        wirespeed_report::mode::rate_text(w.throughput, fmt),
        w.flows,
        w.seconds,
        class(rpm),
        w.lat.self_median,
        w.confidence,
        w.lat.tcp,
        w.lat.tls,
        w.lat.http,
        w.lat.foreign_n,
        w.lat.self_ms,
        w.lat.self_n,
    )
}

/// Runs the standard responsiveness test and prints its report; with
/// `--json-stream`, `--report` or `--metrics` it also tells its progress
/// as the iperf `--rpm`'s events, a start, a line a second and an end per
/// direction, which those outputs draw (the text and `-J` stay this
/// test's own).
pub fn run(
    cfg: &TestConfig,
    nq: &NqOptions,
    out: &Output,
    signal: &Arc<AtomicUsize>,
    metrics: Option<wirespeed_http::metrics::Endpoint>,
) -> Result<(), Error> {
    let mut side = wirespeed_report::Reporter::new();
    if cfg.output.json_stream {
        side.add(Box::new(wirespeed_report::json::JsonStreamSink::new(
            cfg,
            out.clone(),
            Side::Client,
        )));
    }
    if let Some(path) = &cfg.output.html_report {
        side.add(Box::new(wirespeed_report::html::HtmlSink::new(
            cfg,
            out.clone(),
            Side::Client,
            path.clone(),
        )));
    }
    let _serving = match metrics {
        Some(ep) => {
            let registry = Arc::new(wirespeed_report::metrics::Metrics::new());
            side.add(Box::new(wirespeed_report::metrics::ModeMetrics::new(registry.clone())));
            Some(ep.serve(registry)?)
        }
        None => None,
    };
    let r = run_inner(cfg, nq, out, signal, &mut side).map_err(|m| Error::msg(Code::NONE, m));
    if let Err(e) = &r {
        side.emit(Event::Error(e.clone()));
        side.emit(Event::Done);
    }
    match (r, side.finish()) {
        (Ok(()), Err(e)) => Err(e),
        (r, _) => r,
    }
}

/// The iperf `--rpm`'s events for a direction's second.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
fn interval_event(s: &Second) -> Event {
    Event::Mode(ModeEvent::RpmInterval(Box::new(RpmInterval {
        at: s.at,
        flows: s.flows,
        goodput: s.goodput,
        goodput_avg: s.moving,
        foreign: s.foreign_rpm,
        loaded: s.loaded_rpm,
        rpm: s.rpm,
        saturated: s.saturated,
    })))
}

/// The start of a direction, as the iperf `--rpm`'s.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
fn start_event(nq: &NqOptions, urls: &NqUrls, direction: Direction) -> Event {
    Event::Mode(ModeEvent::RpmStart(Box::new(RpmStart {
        host: urls.large.host.clone(),
        port: urls.large.port,
        method: format!(
            "RPM over HTTP/2 and TLS 1.3 (draft-ietf-ippm-responsiveness-09), {}",
            direction.name()
        ),
        interval_seconds: 1.0,
        mad: MAD,
        sdt: wirespeed_iperf::modes::rpm::SDT,
        max_flows: nq.max_flows,
        probes_per_second: PROBE_ROUNDS_PER_SECOND,
        trimmed_mean_keep: wirespeed_iperf::modes::rpm::TRIM_KEEP,
        time_limit_seconds: nq.time.as_secs_f64(),
    })))
}

/// A direction's end, as the iperf `--rpm`'s.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
fn end_event(w: &WayResult, idle: Option<&Idle>) -> Event {
    let rpm = w.lat.rpm();
    Event::Mode(ModeEvent::RpmEnd(Box::new(RpmEnd {
        rpm: Some(rpm),
        class: Some(class(rpm).to_string()),
        confidence: w.confidence.to_string(),
        direction: w.direction.name().to_string(),
        goodput: w.throughput,
        flows: w.flows,
        idle_rpm: idle.filter(|i| i.latency_ms > 0.0).map(|i| 60000.0 / i.latency_ms),
        idle_ms: None,
        tm_ms: (Some(w.lat.tcp), Some(w.lat.http), None),
        self_probe_ms: Some(w.lat.self_ms),
        p90_ms: None,
        failures: 0,
    })))
}

#[cfg(feature = "client")]
fn run_inner(
    cfg: &TestConfig,
    nq: &NqOptions,
    out: &Output,
    signal: &Arc<AtomicUsize>,
    side: &mut wirespeed_report::Reporter,
) -> Result<(), String> {
    let fmt = cfg.output.format;
    // The JSON stream replaces the text and the document.
    let (json, stream) = (cfg.output.json, cfg.output.json_stream);
    let url = parse_url(&nq.url)?;
    let mut urls: Option<NqUrls> = None;
    let mut idle_seen: Option<Idle> = None;
    let mut current: Option<Direction> = None;
    let mut told = |t: Progress<'_>| match t {
        Progress::Urls(u) => {
            if !json && !stream {
                out.write(&format!(
                    "Responsiveness test (draft-ietf-ippm-responsiveness, HTTP/2 over TLS 1.3) with {}: {}, each until stable or {} s, up to {} connections\n",
                    u.large.authority(),
                    if nq.download_only { "download" } else { "download then upload" },
                    nq.time.as_secs_f64(),
                    nq.max_flows
                ));
            }
            urls = Some(u.clone());
        }
        Progress::Idle(i) => idle_seen = Some(*i),
        Progress::Second(direction, s) => {
            if !json && !stream {
                out.write(&second_text(direction, s, fmt));
            }
            if current != Some(direction)
                && let Some(u) = &urls
            {
                side.emit(start_event(nq, u, direction));
                current = Some(direction);
            }
            side.emit(interval_event(s));
        }
        Progress::Ended(w) => {
            if current != Some(w.direction)
                && let Some(u) = &urls
            {
                side.emit(start_event(nq, u, w.direction));
            }
            current = None;
            side.emit(end_event(w, idle_seen.as_ref()));
        }
    };
    let (idle, directions) = network::measure(nq, &url, signal, &mut told)?;
    if stream {
        return Ok(());
    }
    if json {
        let doc = document(&url.text(), &idle, &directions);
        out.write(&format!("{}\n", serde_json::to_string_pretty(&doc).unwrap_or_default()));
    } else {
        let mut text = format!(
            "Idle latency: {:.3} ms, jitter {:.3} ms\n",
            idle.latency_ms, idle.jitter_ms
        );
        for w in &directions {
            text += &result_text(w, fmt);
        }
        out.write(&text);
    }
    Ok(())
}

#[cfg(not(feature = "client"))]
fn run_inner(
    _: &TestConfig,
    _: &NqOptions,
    _: &Output,
    _: &Arc<AtomicUsize>,
    _: &mut wirespeed_report::Reporter,
) -> Result<(), String> {
    Err("--rpm=URL is not built into this wirespeed (the nq-client feature)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let u = parse_url("https://example.com/.well-known/nq").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("example.com", 443, "/.well-known/nq")
        );
        let u = parse_url("https://[::1]:8443").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("::1", 8443, "/"));
        assert_eq!(u.text(), "https://[::1]:8443/");
        let u = parse_url("HTTPS://127.0.0.1:4443?x=1#f").unwrap();
        assert_eq!(u.path, "/?x=1");
        for bad in [
            "http://x/",
            "x/y",
            "https://",
            "https://h:0/",
            "https://h:99999/",
            "https://[::1/",
            "https://a b/",
            "https://u@h/",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn configs_parse_both_spellings() {
        let new = br#"{"version":1,"urls":{"small_download_url":"https://h/small","large_download_url":"https://h/large","upload_url":"https://h/slurp"}}"#;
        let old = br#"{"version":1,"urls":{"small_https_download_url":"https://h/small","large_https_download_url":"https://h/large","https_upload_url":"https://h/slurp"}}"#;
        assert_eq!(parse_config(new).unwrap(), parse_config(old).unwrap());
        assert_eq!(parse_config(new).unwrap().upload.path, "/slurp");
        assert!(parse_config(b"<html>").unwrap_err().contains("not JSON"));
        assert!(parse_config(b"{}").unwrap_err().contains("\"urls\""));
        assert!(
            parse_config(br#"{"urls":{"small_download_url":"https://h/s"}}"#)
                .unwrap_err()
                .contains("large_download_url")
        );
    }

    #[test]
    fn rpm_is_the_drafts_mean() {
        let samples = [
            Sample::Foreign {
                tcp: 10.0,
                tls: 20.0,
                http: 30.0,
            },
            Sample::SelfProbe(40.0),
            Sample::SelfProbe(80.0),
            Sample::SelfProbe(120.0),
        ];
        let l = Latencies::of(&samples).unwrap();
        // The foreign round trip is 20 ms (3000 RPM), the self probes' 80
        // ms (750 RPM): the result is the mean of the two RPMs, not the
        // RPM of the mean round trip (1200).
        assert_eq!(l.foreign_ms(), 20.0);
        assert_eq!(l.self_ms, 80.0);
        assert_eq!(l.rpm(), 1875.0);
        // mach's loaded latency: the self probes' median.
        assert_eq!(l.self_median, 80.0);
        assert!(Latencies::of(&samples[..1]).is_none());
    }

    #[test]
    fn the_judge_wants_stable_goodput_then_stable_rpm() {
        let l = Latencies::of(&[
            Sample::Foreign {
                tcp: 1.0,
                tls: 1.0,
                http: 1.0,
            },
            Sample::SelfProbe(1.0),
        ]);
        let mut j = Judge::default();
        assert_eq!(j.second(1.0, 1e6, 4, l), Verdict::MoreLoad);
        assert_eq!(j.second(2.0, 2e6, 8, l), Verdict::MoreLoad);
        let mut last = Verdict::MoreLoad;
        for i in 3..12 {
            last = j.second(i as f64, 2e6, 8, l);
        }
        assert_eq!(last, Verdict::Done);
        assert_eq!(j.confidence(true), "high");
        assert!((j.throughput() - 2e6).abs() < 1.0);
    }

    #[test]
    fn idle_jitter_is_the_mean_step() {
        let i = Idle::of(&[1.0, 3.0, 2.0]).unwrap();
        assert_eq!(i.jitter_ms, 1.5);
        assert!(Idle::of(&[]).is_none());
    }
}
