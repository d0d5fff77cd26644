//! The documents wirespeed writes and reads, as types: iperf3's `-J`
//! document of both dialects ([`TestDoc`]), the modes' documents
//! ([`RpmDoc`], [`SearchDoc`], [`NqDoc`]) and the `--json-stream` events
//! ([`StreamEvent`]).
//!
//! Everything that reads a document (the HTML report, `wirespeed report`,
//! the web UI's board, history and exports) reads it through these types,
//! so a key is named once, here. Reading never fails on a missing or odd
//! field: it is `None` (documents may be iperf3's, of any 3.x, or
//! damaged); only input that is not a JSON object is an error. Keys the
//! model does not name are kept in each part's `extra`.
//!
//! The writers (`json/`, `mode.rs`) build these types and serialize them,
//! so the model is what they write too: its field order is the written
//! key order, an absent `Option` is left out (a few are written as `null`,
//! and a field that may be either is an `Option<Option<_>>`), and numbers
//! are written as the writers always wrote them (`de::num`, `de::whole`).
//! What stays JSON, named by the model's keys where the writers add to
//! it: an iperf 2 test's `end` once a connect-back's `end` or the peer
//! reports merge into it (its key order is the order its parts came in),
//! the document's parts after the `end` (in the order they came), and the
//! documents rebuilt from `--json-stream` lines (their data kept as they
//! came). The golden tests pin the bytes; the model's tests check that
//! what the writers write reads back whole.

pub(crate) mod de;
pub mod iperf3;
pub mod modes;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use iperf3::{
    Advice, Bounceback, Buffers, Connected, Cpu, Ecn, End, EndStream, Histogram, HostPort, Interval, Iperf2,
    Isochronous, L4s, Latency, OneWay, Quic, Rtt, Sample, Spread, Start, TcpEcn, TestDoc, TestStart, Timestamp, Totals,
};
pub use modes::{
    LossFloor, NqDoc, NqLatency, NqProbes, NqSecond, NqWay, RpmDoc, RpmEnd, RpmInterval, RpmProbes, RpmStart, Search,
    SearchDoc, SearchProbe, SearchResult,
};

/// One document of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    /// A test's `-J` (either dialect, or iperf3's own).
    Test(Box<TestDoc>),
    /// `--rpm`'s.
    Rpm(Box<RpmDoc>),
    /// `--udp-search`'s.
    Search(Box<SearchDoc>),
    /// `--rpm=URL`'s.
    Nq(Box<NqDoc>),
}

/// What tells the kinds apart.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Shape {
    #[serde(deserialize_with = "de::part")]
    search: Option<Map<String, Value>>,
    #[serde(deserialize_with = "de::part")]
    start: Option<Method>,
    #[serde(deserialize_with = "de::string")]
    test: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Method {
    #[serde(deserialize_with = "de::string")]
    method: Option<String>,
}

impl Document {
    /// Reads a document; an error (in words) if `v` is not an object.
    pub fn from_value(v: &Value) -> Result<Document, String> {
        if !v.is_object() {
            return Err("the JSON value is not an object".into());
        }
        let shape = Shape::deserialize(v).map_err(|e| e.to_string())?;
        let doc = if shape.search.is_some() {
            Document::Search(Box::new(SearchDoc::deserialize(v).map_err(|e| e.to_string())?))
        } else if shape.start.and_then(|s| s.method).is_some_and(|m| m.contains("RPM")) {
            Document::Rpm(Box::new(RpmDoc::deserialize(v).map_err(|e| e.to_string())?))
        } else if shape.test.as_deref() == Some("responsiveness") {
            Document::Nq(Box::new(NqDoc::deserialize(v).map_err(|e| e.to_string())?))
        } else {
            Document::Test(Box::new(TestDoc::deserialize(v).map_err(|e| e.to_string())?))
        };
        Ok(doc)
    }

    /// Parses one document from text.
    pub fn parse(text: &str) -> Result<Document, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Document::from_value(&v)
    }

    /// Checks that a test's document has iperf3's three parts (a mode's
    /// has a shape of its own); the reason in words if not.
    pub fn check(&self) -> Result<(), String> {
        let Document::Test(t) = self else { return Ok(()) };
        if t.start.is_none() {
            return Err("it has no \"start\" object".into());
        }
        if t.intervals.is_none() {
            return Err("it has no \"intervals\" array".into());
        }
        if t.end.is_none() {
            return Err("it has no \"end\" object".into());
        }
        Ok(())
    }

    /// Why the test failed, if it did.
    pub fn error(&self) -> Option<&str> {
        match self {
            Document::Test(d) => d.error.as_deref(),
            Document::Rpm(d) => d.error.as_deref(),
            Document::Search(d) => d.error.as_deref(),
            Document::Nq(_) => None,
        }
    }

    /// As JSON again (keys the model does not name included).
    pub fn to_value(&self) -> Value {
        let v = match self {
            Document::Test(d) => serde_json::to_value(d),
            Document::Rpm(d) => serde_json::to_value(d),
            Document::Search(d) => serde_json::to_value(d),
            Document::Nq(d) => serde_json::to_value(d),
        };
        v.unwrap_or(Value::Null)
    }
}

/// One `--json-stream` line: `{"event": NAME, "data": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEvent {
    /// Its name: `start`, `interval`, `end`, `error`, `peer_report`,
    /// `server_output_json`, `server_output_text`, `warning`, and the
    /// modes' `rpm_start`, `rpm_interval`, `rpm_end`, `search_start`,
    /// `probe`, `loss_floor`, `search_end`.
    pub event: String,
    /// The event's part of the document.
    pub data: Value,
}

/// The borrowed head of an event.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    event: &'a str,
}

impl StreamEvent {
    /// Reads an event (`None` if `v` is not one: no string `event`, or no
    /// `data`).
    pub fn from_value(v: &Value) -> Option<StreamEvent> {
        StreamEvent::deserialize(v).ok()
    }

    /// Whether `v` is an event (a string `event` and a `data`), without
    /// copying it.
    pub fn is_event(v: &Value) -> bool {
        #[derive(Deserialize)]
        struct Whole<'a> {
            #[serde(borrow, rename = "event")]
            _event: &'a str,
            #[serde(rename = "data")]
            _data: serde::de::IgnoredAny,
        }
        Whole::deserialize(v).is_ok()
    }

    /// The name of the event `v` (`None` if it is not one).
    pub fn name_of(v: &Value) -> Option<&str> {
        Head::deserialize(v).ok().map(|h| h.event)
    }

    /// The words of an `error` event.
    pub fn error_of(v: &Value) -> Option<String> {
        let e = StreamEvent::from_value(v)?;
        match (e.event.as_str(), e.data) {
            ("error", Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Its data read as `T` (`None` if it does not read as one).
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(&self.data).ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::json::{JsonSink, JsonStreamSink};
    use crate::mode::ModeJson;
    use crate::{Output, Sink};
    use wirespeed_core::config::{Dialect, Direction, Protocol, TestConfig};
    use wirespeed_core::events::{self as ev, Event, Side};

    /// iperf3 3.12's own documents (tests/data).
    const IPERF3_3_12: [(&str, &str); 6] = [
        (
            "server-log",
            include_str!("../../../../tests/data/iperf3-3.12-server-log.json"),
        ),
        (
            "tcp-bidir-omit",
            include_str!("../../../../tests/data/iperf3-3.12-tcp-bidir-omit.json"),
        ),
        ("tcp-p2", include_str!("../../../../tests/data/iperf3-3.12-tcp-p2.json")),
        (
            "udp-lossy-reverse",
            include_str!("../../../../tests/data/iperf3-3.12-udp-lossy-reverse.json"),
        ),
        ("udp-p2", include_str!("../../../../tests/data/iperf3-3.12-udp-p2.json")),
        (
            "udp-reverse",
            include_str!("../../../../tests/data/iperf3-3.12-udp-reverse.json"),
        ),
    ];

    /// `v` with what the model cannot tell apart made alike: numbers as
    /// floats, flags as 0/1, and absent, `null` and empty lists the same.
    fn norm(v: &Value) -> Value {
        match v {
            Value::Bool(b) => Value::from(f64::from(u8::from(*b))),
            Value::Number(n) => Value::from(n.as_f64().unwrap()),
            Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(_, x)| !x.is_null() && x.as_array().is_none_or(|a| !a.is_empty()))
                    .map(|(k, x)| (k.clone(), norm(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Where `a` and `b` differ, as paths.
    fn differences(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                    let (p, q) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                    differences(&format!("{at}.{k}"), p, q, out);
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    differences(&format!("{at}[{i}]"), p, q, out);
                }
            }
            _ if a != b => out.push(format!("{at}: {a} != {b}")),
            _ => {}
        }
    }

    /// Reads `v` and checks that writing the model gives it back.
    fn round_trip(what: &str, v: &Value) -> Document {
        let d = Document::from_value(v).unwrap_or_else(|e| panic!("{what}: {e}"));
        d.check().unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut diff = Vec::new();
        differences("", &norm(&d.to_value()), &norm(v), &mut diff);
        assert!(diff.is_empty(), "{what}: the model lost or changed {diff:?}");
        d
    }

    /// The keys of a test's document that the model does not name
    /// (`iperf2`'s own keys aside), as paths.
    fn unnamed(d: &TestDoc) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |at: &str, m: &Map<String, Value>| out.extend(m.keys().map(|k| format!("{at}.{k}")));
        add("", &d.extra);
        if let Some(s) = &d.start {
            add("start", &s.extra);
            s.connected().iter().for_each(|c| add("start.connected", &c.extra));
            s.test_start.iter().for_each(|t| add("start.test_start", &t.extra));
            s.timestamp.iter().for_each(|t| add("start.timestamp", &t.extra));
        }
        for iv in d.intervals() {
            add("intervals", &iv.extra);
            iv.streams.iter().for_each(|s| add("intervals.streams", &s.extra));
            iv.streams
                .iter()
                .flat_map(|s| &s.tcp_ecn)
                .for_each(|e| add("intervals.streams.tcp_ecn", &e.extra));
            iv.streams
                .iter()
                .chain(&iv.sum)
                .flat_map(|s| &s.l4s)
                .for_each(|e| add("intervals.*.l4s", &e.extra));
            iv.sum.iter().for_each(|s| add("intervals.sum", &s.extra));
            iv.sum
                .iter()
                .flat_map(|s| &s.tcp_ecn)
                .for_each(|e| add("intervals.sum.tcp_ecn", &e.extra));
            iv.latency.iter().for_each(|s| add("intervals.latency", &s.extra));
        }
        if let Some(e) = &d.end {
            add("end", &e.extra);
            for st in &e.streams {
                add("end.streams", &st.extra);
                for t in [&st.sender, &st.receiver, &st.udp, &st.peer_report]
                    .into_iter()
                    .flatten()
                {
                    add("end.streams.*", &t.extra);
                    t.tcp_ecn.iter().for_each(|e| add("end.streams.*.tcp_ecn", &e.extra));
                    t.l4s.iter().for_each(|e| add("end.streams.*.l4s", &e.extra));
                }
            }
            for t in [
                &e.sum,
                &e.sum_sent,
                &e.sum_received,
                &e.sum_sent_bidir_reverse,
                &e.sum_received_bidir_reverse,
            ]
            .into_iter()
            .flatten()
            {
                add("end.sum*", &t.extra);
                t.tcp_ecn.iter().for_each(|e| add("end.sum*.tcp_ecn", &e.extra));
                t.l4s.iter().for_each(|e| add("end.sum*.l4s", &e.extra));
            }
            e.cpu_utilization_percent.iter().for_each(|c| add("end.cpu", &c.extra));
            e.latency.iter().for_each(|l| add("end.latency", &l.extra));
        }
        out
    }

    #[test]
    fn every_iperf3_3_12_document_loads() {
        for (name, text) in IPERF3_3_12 {
            let mut n = 0;
            for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
                let v = v.unwrap();
                n += 1;
                let Document::Test(d) = round_trip(name, &v) else {
                    panic!("{name}: not read as a test's document")
                };
                if d.error.is_some() {
                    // A failed test's: `start` says little.
                    continue;
                }
                let protocol = d.test_start().and_then(|t| t.protocol.clone()).unwrap();
                assert!(!d.intervals().is_empty(), "{name}");
                let end = d.end.as_ref().unwrap();
                assert!(!end.streams.is_empty(), "{name}");
                let sum = if protocol == "UDP" { &end.sum } else { &end.sum_received };
                assert!(sum.as_ref().and_then(|s| s.bytes).is_some(), "{name}: {end:?}");
                assert!(
                    end.cpu_utilization_percent
                        .as_ref()
                        .and_then(|c| c.host_total)
                        .is_some(),
                    "{name}"
                );
                for iv in d.intervals() {
                    assert!(iv.sum.as_ref().and_then(|s| s.bits_per_second).is_some(), "{name}");
                    assert!(iv.streams.iter().all(|s| s.socket.is_some()), "{name}");
                }
                if name == "tcp-bidir-omit" {
                    assert!(end.both_ways(), "{name}");
                    // (3.12 writes no `bidir` in `test_start`.)
                    assert!(d.intervals().iter().any(|iv| iv.sum_bidir_reverse.is_some()));
                }
            }
            assert!(n >= 1, "{name}");
        }
    }

    #[test]
    fn a_foreign_or_odd_document_reads_without_failing() {
        // Odd types read as absent; unknown keys are kept.
        let v = serde_json::json!({
            "start": {"test_start": {"protocol": 7, "num_streams": "two"}, "new_in_3_20": {"x": 1}},
            "intervals": [{"streams": [{"socket": 5, "bytes": "many", "bits_per_second": 8.0}], "sum": 3}],
            "end": {"streams": "none", "sum_sent": {"bytes": 18446744073709551615u64}},
        });
        let Document::Test(d) = Document::from_value(&v).unwrap() else {
            panic!()
        };
        assert_eq!(d.test_start().unwrap().protocol, None);
        assert_eq!(d.test_start().unwrap().num_streams, None);
        assert!(d.start.as_ref().unwrap().extra.contains_key("new_in_3_20"));
        let s = &d.intervals()[0].streams[0];
        assert_eq!((s.socket, s.bytes, s.bits_per_second), (Some(5), None, Some(8.0)));
        assert_eq!(d.intervals()[0].sum, None);
        let end = d.end.as_ref().unwrap();
        assert!(end.streams.is_empty());
        assert_eq!(end.sum_sent.as_ref().unwrap().bytes, None, "iperf3's unsigned -1");
        // Only what is not an object at all is an error.
        assert!(Document::from_value(&serde_json::json!([1, 2])).is_err());
        assert!(Document::parse("{\"start\": ").is_err());
        let e = Document::from_value(&serde_json::json!({"a": 1}))
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e, "it has no \"start\" object");
        // The error document alone.
        let d = Document::from_value(&serde_json::json!({"error": "unable to connect"})).unwrap();
        assert_eq!(d.error(), Some("unable to connect"));
    }

    fn config(dialect: Dialect, protocol: Protocol) -> TestConfig {
        let mut cfg = TestConfig {
            dialect,
            ..TestConfig::default()
        };
        cfg.params.protocol = protocol;
        cfg
    }

    fn sample(id: u32, sender: bool, udp: bool, tcp: bool) -> ev::StreamSample {
        ev::StreamSample {
            id,
            socket: id as i32 + 4,
            sender,
            start: 0.0,
            end: 1.0,
            seconds: 1.0,
            bytes: 125_000 * u64::from(id),
            bits_per_second: 1e6 * f64::from(id),
            retransmits: tcp.then_some(2),
            tcp: tcp.then_some(ev::TcpSample {
                retransmits: 2,
                snd_cwnd: 64_000,
                snd_wnd: 128_000,
                rtt: 1500,
                rttvar: 300,
                pmtu: 1500,
                reorder: 0,
                ecn: Some(ev::TcpEcn {
                    negotiated: true,
                    seen: false,
                    acked_under_ece: Some(179),
                }),
            }),
            udp: udp.then(|| ev::UdpSample {
                jitter_ms: 0.25,
                lost: 3,
                packets: 100,
                lost_percent: 3.0,
                out_of_order: 1,
                ecn: Some(ev::EcnSample {
                    sent: Some(ev::Ecn::Ect1),
                    counts: ev::EcnCounts {
                        ect1: 90,
                        ce: 7,
                        ..ev::EcnCounts::default()
                    },
                    l4s: false,
                }),
                l4s: Some(l4s_sample()),
                ..ev::UdpSample::default()
            }),
            // As a sum carries it (a stream's own is `tcp.ecn`).
            tcp_ecn_sum: tcp.then_some(ev::TcpEcnSum {
                streams: 2,
                negotiated: 2,
                seen: 0,
                acked_under_ece: Some(40),
            }),
            ..ev::StreamSample::default()
        }
    }

    fn l4s_sample() -> ev::L4sSample {
        ev::L4sSample {
            sender: true,
            acks: 120,
            last: Some(ev::L4sCounts {
                received: 1000,
                ce: 80,
                lost: 2,
            }),
            ecn_error: false,
            rate_bps: Some(16e6),
            alpha: Some(0.08),
        }
    }

    fn totals(id: u32, sender: bool) -> ev::Totals {
        ev::Totals {
            start: 0.0,
            end: 2.0,
            seconds: 2.0,
            bytes: 250_000 * u64::from(id),
            bits_per_second: 1e6 * f64::from(id),
            retransmits: sender.then_some(4),
            sender,
            omitted_bytes: sender.then_some(1000),
        }
    }

    /// The events of one test: two streams, both ways when `bidir`.
    fn events(udp: bool, bidir: bool, latency: bool) -> Vec<Event> {
        let tcp = !udp;
        let protocol = if udp { Protocol::Udp } else { Protocol::Tcp };
        let start = ev::StartInfo {
            connected: (1..=2)
                .map(|id| ev::ConnInfo {
                    socket: id + 4,
                    id: id as u32,
                    local_host: "127.0.0.1".into(),
                    local_port: 40000 + id as u16,
                    remote_host: "127.0.0.1".into(),
                    remote_port: 5201,
                    ..ev::ConnInfo::default()
                })
                .collect(),
            version: "wirespeed test".into(),
            system_info: "Linux".into(),
            connecting_to: Some(("127.0.0.1".into(), 5201)),
            cookie: "abc".into(),
            tcp_mss_default: tcp.then_some(1448),
            protocol,
            num_streams: 2,
            blksize: 131_072,
            duration: 2,
            direction: if bidir { Direction::Bidir } else { Direction::Forward },
            interval: 1.0,
            ..ev::StartInfo::default()
        };
        let rtt = ev::RttStats {
            probes: 10,
            min_ms: 0.1,
            mean_ms: 0.2,
            p50_ms: 0.2,
            p90_ms: 0.3,
            p99_ms: 0.4,
            max_ms: 0.5,
        };
        let interval = ev::IntervalReport {
            streams: vec![sample(1, true, udp, tcp), sample(2, !bidir, udp, tcp && !bidir)],
            sum: sample(1, true, udp, tcp),
            sum_bidir_reverse: bidir.then(|| sample(2, false, udp, false)),
            latency: latency.then_some(rtt),
            ..ev::IntervalReport::default()
        };
        let stream = |id: u32, local_sender: bool| ev::StreamSummary {
            socket: id as i32 + 4,
            id,
            local_sender,
            sender: totals(id, true),
            receiver: totals(id, false),
            tcp: tcp.then_some(ev::TcpTotals {
                max_snd_cwnd: 64_000,
                max_snd_wnd: 128_000,
                max_rtt: 2000,
                min_rtt: 1000,
                mean_rtt: 1500,
                reorder: 0,
            }),
            udp: udp.then_some(ev::UdpTotals {
                jitter_ms: 0.25,
                lost: Some(3),
                packets: 100,
                sent_packets: 100,
                lost_percent: 3.0,
                out_of_order: 1,
                duplicates: 0,
                ecn: Some({
                    let arrived = ev::EcnCounts {
                        ect1: 90,
                        ce: 7,
                        ..ev::EcnCounts::default()
                    };
                    ev::EcnTotals {
                        sent: Some(ev::Ecn::Ect1),
                        sent_packets: Some(100),
                        arrived: (id == 1).then_some(arrived),
                        verdict: (id == 1).then(|| ev::EcnVerdict::judge(ev::Ecn::Ect1, &arrived)),
                        impossible: (id == 2).then_some(ev::EcnCounts {
                            ce: 500,
                            ..ev::EcnCounts::default()
                        }),
                        l4s: false,
                    }
                }),
                l4s: Some(l4s_sample()),
            }),
            tcp_ecn: tcp.then_some(ev::TcpEcn {
                negotiated: true,
                seen: !local_sender,
                acked_under_ece: local_sender.then_some(179),
            }),
            // A wirespeed peer's view of its kernel, from its results.
            peer_tcp_ecn: tcp.then_some(ev::TcpEcn {
                negotiated: true,
                seen: local_sender,
                acked_under_ece: (!local_sender).then_some(212),
            }),
            peer_known: true,
            ..ev::StreamSummary::default()
        };
        let sums = |id: u32| ev::DirectionSums {
            sent: totals(id, true),
            received: totals(id, false),
            udp: udp.then(|| ev::UdpTotals {
                jitter_ms: 0.25,
                lost: Some(3),
                packets: 100,
                ..ev::UdpTotals::default()
            }),
            tcp_ecn_sent: tcp.then_some(ev::TcpEcnSum {
                streams: 2,
                negotiated: 2,
                seen: 0,
                acked_under_ece: Some(391),
            }),
            tcp_ecn_received: tcp.then_some(ev::TcpEcnSum {
                streams: 2,
                negotiated: 2,
                seen: 2,
                acked_under_ece: None,
            }),
            ..ev::DirectionSums::default()
        };
        let end = ev::Summary {
            protocol,
            streams: vec![stream(1, true), stream(2, !bidir)],
            forward: sums(1),
            reverse: bidir.then(|| sums(2)),
            cpu: ev::CpuUtil {
                host_total: 10.0,
                host_user: 2.0,
                host_system: 8.0,
                remote_total: 5.0,
                remote_user: 1.0,
                remote_system: 4.0,
            },
            sender_tcp_congestion: tcp.then(|| "cubic".into()),
            receiver_tcp_congestion: tcp.then(|| "cubic".into()),
            has_retransmits: tcp,
            local_sends: true,
            local_receives: bidir,
            latency: latency.then(|| ev::LatencySummary {
                rate: 10,
                achieved_rate: 10.0,
                idle: rtt,
                loaded: rtt,
                ..ev::LatencySummary::default()
            }),
            ..ev::Summary::default()
        };
        vec![
            Event::Start(Box::new(start)),
            Event::Interval(Box::new(interval.clone())),
            Event::Interval(Box::new(interval)),
            Event::End(Box::new(end)),
            Event::Done,
        ]
    }

    /// What `sink` writes of `events`.
    fn written(make: impl FnOnce(Output) -> Box<dyn Sink>, events: &[Event]) -> String {
        let buf = Arc::new(Mutex::new(String::new()));
        let mut sink = make(Output::buffer(buf.clone()));
        for e in events {
            sink.event(e);
        }
        drop(sink);
        buf.lock().unwrap().clone()
    }

    #[test]
    fn every_document_we_write_reads_back_whole() {
        for dialect in [Dialect::Iperf3, Dialect::Iperf2] {
            for (udp, bidir, latency) in [
                (false, false, false),
                (false, true, true),
                (true, false, false),
                (true, true, false),
            ] {
                let what = format!("{dialect:?} udp={udp} bidir={bidir} latency={latency}");
                let protocol = if udp { Protocol::Udp } else { Protocol::Tcp };
                let cfg = config(dialect, protocol);
                let mut evs = events(udp, bidir, latency);
                let report = dialect == Dialect::Iperf2 && udp && !bidir;
                if report {
                    // A UDP sender's peer report (iperf 2's server report).
                    let r = ev::PeerReport::Report(Box::new(sample(1, false, true, false)));
                    evs.insert(evs.len() - 1, Event::PeerReport(r));
                }
                // -J
                let text = written(|o| Box::new(JsonSink::new(&cfg, o, Side::Client)), &evs);
                let v: Value = serde_json::from_str(&text).unwrap();
                let Document::Test(d) = round_trip(&what, &v) else {
                    panic!("{what}")
                };
                assert_eq!(unnamed(&d), Vec::<String>::new(), "{what}: {v:#}");
                let end = d.end.as_ref().unwrap();
                assert_eq!(d.intervals().len(), 2, "{what}");
                let iv = &d.intervals()[0];
                assert_eq!(iv.sum.as_ref().unwrap().bits_per_second, Some(1e6), "{what}");
                assert_eq!(iv.streams.len(), 2, "{what}");
                assert_eq!(end.both_ways(), bidir, "{what}: {v:#}");
                assert_eq!(end.sum_sent.as_ref().and_then(|s| s.bytes), Some(250_000.0), "{what}");
                if udp {
                    let u = end.streams[0].udp.as_ref().unwrap();
                    assert_eq!((u.lost_packets, u.packets), (Some(3), Some(100)), "{what}");
                } else if dialect == Dialect::Iperf3 {
                    let s = end.streams[0].sender.as_ref().unwrap();
                    assert_eq!(s.mean_rtt, Some(1500.0), "{what}");
                    let e = s.tcp_ecn.as_ref().unwrap();
                    assert_eq!((e.negotiated, e.acked_under_ece), (Some(true), Some(179)), "{what}");
                    let e = iv.streams[0].tcp_ecn.as_ref().unwrap();
                    assert_eq!(e.acked_under_ece, Some(179), "{what}");
                }
                if latency {
                    let l = end.latency.as_ref().unwrap();
                    assert_eq!(l.idle.as_ref().unwrap().p50_ms, Some(0.2), "{what}");
                    assert_eq!(iv.latency.as_ref().unwrap().probes, Some(10), "{what}");
                }
                if dialect == Dialect::Iperf2 {
                    assert!(d.is_iperf2(), "{what}");
                }
                if report {
                    let p = end.streams[0].peer_report.as_ref().unwrap();
                    assert_eq!((p.jitter_ms, p.lost_packets), (Some(0.25), Some(3)), "{what}");
                    assert_eq!(Iperf2::id(&p.iperf2), Some(1), "{what}");
                }
                // --json-stream: every line an event, and their document
                // the same test's.
                let mut scfg = cfg.clone();
                scfg.output.json_stream = true;
                let text = written(|o| Box::new(JsonStreamSink::new(&scfg, o, Side::Client)), &evs);
                let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
                let names: Vec<&str> = lines.iter().filter_map(StreamEvent::name_of).collect();
                let expected: &[&str] = if report {
                    &["start", "interval", "interval", "peer_report", "end"]
                } else {
                    &["start", "interval", "interval", "end"]
                };
                assert_eq!(names, expected, "{what}");
                for l in &lines {
                    let e = StreamEvent::from_value(l).unwrap();
                    let part = match e.event.as_str() {
                        "start" => norm(&serde_json::to_value(e.data_as::<Start>().unwrap()).unwrap()),
                        "interval" => norm(&serde_json::to_value(e.data_as::<Interval>().unwrap()).unwrap()),
                        "peer_report" => norm(&serde_json::to_value(e.data_as::<Totals>().unwrap()).unwrap()),
                        _ => norm(&serde_json::to_value(e.data_as::<End>().unwrap()).unwrap()),
                    };
                    assert_eq!(part, norm(&e.data), "{what}: {}", e.event);
                }
                let rebuilt = crate::json::document_from_stream(&lines).unwrap();
                let Document::Test(r) = round_trip(&what, &rebuilt) else {
                    panic!("{what}")
                };
                assert_eq!(r.end, d.end, "{what}");
                assert_eq!(r.intervals, d.intervals, "{what}");
            }
        }
    }

    #[test]
    fn the_error_document_reads_back() {
        let cfg = config(Dialect::Iperf3, Protocol::Tcp);
        let err = wirespeed_core::error::Error::msg(wirespeed_core::error::Code::CONNECT, "unable to connect");
        let text = written(
            |o| Box::new(JsonSink::new(&cfg, o, Side::Client)),
            &[Event::Error(err), Event::Done],
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let d = round_trip("error", &v);
        assert!(d.error().is_some_and(|e| e.contains("unable to connect")), "{v}");
    }

    fn rpm_events() -> Vec<ev::ModeEvent> {
        vec![
            ev::ModeEvent::RpmStart(Box::new(ev::RpmStart {
                host: "127.0.0.1".into(),
                port: 5201,
                method: "TCP-only RPM".into(),
                interval_seconds: 1.0,
                mad: 4,
                sdt: 0.05,
                max_flows: 16,
                probes_per_second: 20,
                trimmed_mean_keep: 0.9,
                time_limit_seconds: 20.0,
            })),
            ev::ModeEvent::RpmInterval(Box::new(ev::RpmInterval {
                at: 1.0,
                flows: 1,
                goodput: 1e9,
                goodput_avg: 1e9,
                foreign: Some(3000.0),
                loaded: None,
                rpm: Some(2500.0),
                saturated: false,
            })),
            ev::ModeEvent::RpmEnd(Box::new(ev::RpmEnd {
                rpm: Some(2500.0),
                class: Some("High".into()),
                confidence: "high".into(),
                direction: "upload".into(),
                goodput: 1e9,
                flows: 4,
                idle_rpm: Some(30000.0),
                idle_ms: Some((0.1, 0.2)),
                tm_ms: (Some(1.0), Some(2.0), None),
                self_probe_ms: Some(3.0),
                p90_ms: Some(4.0),
                failures: 0,
            })),
        ]
    }

    fn search_events(found: bool) -> Vec<ev::ModeEvent> {
        let probe = ev::Probe {
            rate: 1_000_000,
            sent_bps: 1e6,
            received_bps: 0.99e6,
            packets: 100,
            lost: 1,
            lost_percent: 1.0,
            jitter_ms: 0.1,
            sender_limited: false,
            ok: true,
            retry: false,
            loss_ok: true,
            floor_check: false,
        };
        let floor = ev::LossFloor {
            loss: 0.01,
            packets: 100,
            up_to: 1_000_000,
        };
        vec![
            ev::ModeEvent::SearchStart(Box::new(ev::SearchStart {
                max_loss_percent: 2.0,
                probe_seconds: 2.0,
                streams: 1,
                blksize: 1448,
                reverse: true,
                resolution: 0.05,
            })),
            ev::ModeEvent::SearchProbe(Box::new(ev::SearchProbe {
                n: 1,
                probe: probe.clone(),
                retrying: false,
            })),
            ev::ModeEvent::SearchFloor(floor),
            ev::ModeEvent::SearchEnd(Box::new(ev::SearchEnd {
                probes: vec![probe],
                floor: Some(floor),
                outcome: if found {
                    Ok(ev::SearchAnswer {
                        rate: 1_000_000,
                        received_bps: 0.99e6,
                        lost_percent: 1.0,
                        finish: ev::Finish::Converged,
                    })
                } else {
                    Err(wirespeed_core::error::Error::msg(
                        wirespeed_core::error::Code::NONE,
                        "no rate was good",
                    ))
                },
            })),
        ]
    }

    #[test]
    fn every_modes_document_and_line_reads_back_whole() {
        let cfg = config(Dialect::Iperf3, Protocol::Tcp);
        let rpm: Vec<Event> = rpm_events().into_iter().map(Event::Mode).collect();
        let text = written(|o| Box::new(ModeJson::new(o)), &rpm);
        let v: Value = serde_json::from_str(&text).unwrap();
        let Document::Rpm(d) = round_trip("rpm", &v) else {
            panic!("{v}")
        };
        assert!(d.extra.is_empty() && d.start.as_ref().unwrap().extra.is_empty());
        let end = d.end.as_ref().unwrap();
        assert!(end.extra.is_empty() && end.loaded.as_ref().unwrap().extra.is_empty());
        assert_eq!((end.rpm, end.flows), (Some(2500.0), Some(4)));
        assert_eq!(end.loaded.as_ref().unwrap().self_probe_ms, Some(3.0));
        assert_eq!(d.intervals[0].foreign_rpm, Some(3000.0));
        assert!(d.intervals[0].extra.is_empty());
        for found in [true, false] {
            let search: Vec<Event> = search_events(found).into_iter().map(Event::Mode).collect();
            let text = written(|o| Box::new(ModeJson::new(o)), &search);
            let v: Value = serde_json::from_str(&text).unwrap();
            let Document::Search(d) = round_trip("search", &v) else {
                panic!("{v}")
            };
            let s = d.search.as_ref().unwrap();
            assert!(d.extra.is_empty() && s.extra.is_empty() && s.probes()[0].extra.is_empty());
            assert_eq!(s.reverse, Some(true));
            assert_eq!(s.probes()[0].lost_packets, Some(1));
            assert_eq!(s.result.is_some(), found);
            assert_eq!(d.error.is_some(), !found);
            assert_eq!(
                s.result
                    .as_ref()
                    .and_then(|r| r.loss_floor_percent)
                    .or(s.loss_floor_percent),
                Some(1.0)
            );
            // The lines, and the document rebuilt from them.
            let mut scfg = cfg.clone();
            scfg.output.json_stream = true;
            let text = written(|o| Box::new(JsonStreamSink::new(&scfg, o, Side::Client)), &search);
            let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            for l in &lines {
                let e = StreamEvent::from_value(l).unwrap();
                let part = match e.event.as_str() {
                    "search_start" => serde_json::to_value(e.data_as::<Search>().unwrap()),
                    "probe" => serde_json::to_value(e.data_as::<SearchProbe>().unwrap()),
                    "loss_floor" => serde_json::to_value(e.data_as::<LossFloor>().unwrap()),
                    "search_end" => serde_json::to_value(e.data_as::<SearchResult>().unwrap()),
                    "error" => Ok(e.data.clone()),
                    other => panic!("{other}"),
                };
                assert_eq!(norm(&part.unwrap()), norm(&e.data), "{}", e.event);
            }
            let rebuilt = crate::json::document_from_stream(&lines).unwrap();
            let Document::Search(r) = round_trip("search lines", &rebuilt) else {
                panic!("{rebuilt}")
            };
            assert_eq!(r.search.as_ref().unwrap().probes, s.probes);
            assert_eq!(r.error, d.error);
        }
        let text = written(|o| Box::new(JsonStreamSink::new(&cfg, o, Side::Client)), &rpm);
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let rebuilt = crate::json::document_from_stream(&lines).unwrap();
        let Document::Rpm(r) = round_trip("rpm lines", &rebuilt) else {
            panic!("{rebuilt}")
        };
        assert_eq!(r.end, d.end);
        assert_eq!(r.intervals, d.intervals);
    }
}
