//! The results JSON both ends exchange after EXCHANGE_RESULTS (client first).

use serde_json::{Map, Value};

use crate::ecn::{Ecn, EcnCounts};
use crate::error::{Code, ProtoError as Error};
use crate::json::{lenient_f64, lenient_i64, num, to_compact};

/// One stream's entry in the results.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResult {
    /// Stream id (1, 3, 4, ...).
    pub id: i64,
    /// Bytes sent or received after the omit period.
    pub bytes: u64,
    /// TCP retransmits (-1 when not a sender or unknown).
    pub retransmits: i64,
    /// UDP jitter in seconds (receivers).
    pub jitter: f64,
    /// UDP lost datagrams (receivers), cumulative.
    pub errors: i64,
    /// Lost datagrams at the end of the omit period; `None` from pre-3.14 peers.
    pub omitted_errors: Option<i64>,
    /// UDP datagrams sent, or highest sequence received.
    pub packets: i64,
    /// Datagrams in the omit period; `None` from pre-3.14 peers.
    pub omitted_packets: Option<i64>,
    /// Always 0.
    pub start_time: f64,
    /// Seconds from stream start to the last sample.
    pub end_time: f64,
    /// wirespeed extension (UDP receivers): datagrams that arrived out of
    /// order and duplicates, after the omit period, so the sending end can
    /// report them too. C peers ignore the keys and never send them.
    pub out_of_order: Option<i64>,
    /// wirespeed extension: duplicated datagrams (see `out_of_order`).
    pub duplicates: Option<i64>,
    /// wirespeed extension: the stream's (local, remote) ports as this side
    /// sees them. Ids are given in the order each side saw the streams
    /// connect, which a lossy, reordering path can make differ between the
    /// two ends; the ports tell which stream is which. C peers ignore them.
    pub ports: Option<(u16, u16)>,
    /// wirespeed extension (`"omitted_bytes"`): bytes this side counted in
    /// its omit period (`-O`), so the peer can reconcile the two totals.
    /// C peers ignore the key and never send it.
    pub omitted_bytes: Option<u64>,
    /// wirespeed extension (`"ecn"`, UDP): the ECN codepoint the sender
    /// set, if known, and the datagrams per codepoint after the omit
    /// period: what a sender sent, what a receiver saw arrive. Present only
    /// when ECN is in play; C peers ignore the key and never send it.
    pub ecn: Option<(Option<Ecn>, EcnCounts)>,
    /// wirespeed extension (`"tcp_ecn"`, TCP): ECN as this side's kernel
    /// saw the connection (TCP_INFO), present only when in play there, so
    /// the other end can show the sender's view in `-R` (its kernel is the
    /// one that counts). C peers ignore the key and never send it.
    pub tcp_ecn: Option<TcpEcnResult>,
}

/// One TCP connection's ECN as one end's kernel saw it (`"tcp_ecn"`):
/// `{"negotiated":true,"seen":false,"acked_under_ece":N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpEcnResult {
    /// The handshake negotiated ECN (`TCPI_OPT_ECN`).
    pub negotiated: bool,
    /// A segment from the other end arrived ECT or CE (`TCPI_OPT_ECN_SEEN`).
    pub seen: bool,
    /// A sender's segments acknowledged under ECE (`tcpi_delivered_ce`
    /// since the omit period); absent where its kernel keeps no count, on
    /// a receiver and when not negotiated.
    pub acked_under_ece: Option<u64>,
}

/// One side's results.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    /// Process CPU % over the test.
    pub cpu_util_total: f64,
    /// User CPU %.
    pub cpu_util_user: f64,
    /// System CPU %.
    pub cpu_util_system: f64,
    /// -1 receiver only, 1 TCP sender with retransmit counters, 0 otherwise.
    pub sender_has_retransmits: i64,
    /// Congestion algorithm in use.
    pub congestion_used: Option<String>,
    /// Per-stream results in creation order.
    pub streams: Vec<StreamResult>,
    /// Server's text output, when asked for (server only).
    pub server_output_text: Option<String>,
    /// Server's JSON output, when asked for (server only).
    pub server_output_json: Option<Value>,
    /// wirespeed extension (`"receiver_drained":true`): this side's receivers
    /// counted everything that arrived until the senders had stopped, so a
    /// UDP datagram sent but never seen was lost, even after the last one
    /// seen. C peers ignore the key and never send it.
    pub receiver_drained: bool,
}

/// A port number, if `v` is one.
fn port(v: Option<&Value>) -> Option<u16> {
    v.and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok())
}

impl Results {
    /// The peer's result for one of our streams: the one whose ports are
    /// ours mirrored (`ports` as we see them), else the one with our id.
    pub fn stream_for(&self, id: u32, ports: Option<(u16, u16)>) -> Option<&StreamResult> {
        ports
            .and_then(|(l, r)| self.streams.iter().find(|s| s.ports == Some((r, l))))
            .or_else(|| self.streams.iter().find(|s| s.id == i64::from(id)))
    }

    /// Compact JSON for the wire.
    pub fn encode(&self) -> String {
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), num(self.cpu_util_total));
        m.insert("cpu_util_user".into(), num(self.cpu_util_user));
        m.insert("cpu_util_system".into(), num(self.cpu_util_system));
        m.insert(
            "sender_has_retransmits".into(),
            Value::from(self.sender_has_retransmits),
        );
        if let Some(c) = &self.congestion_used {
            m.insert("congestion_used".into(), Value::from(c.clone()));
        }
        if let Some(t) = &self.server_output_text {
            m.insert("server_output_text".into(), Value::from(t.clone()));
        }
        if let Some(j) = &self.server_output_json {
            m.insert("server_output_json".into(), j.clone());
        }
        if self.receiver_drained {
            m.insert("receiver_drained".into(), Value::Bool(true));
        }
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                let mut o = Map::new();
                o.insert("id".into(), Value::from(s.id));
                o.insert("bytes".into(), Value::from(s.bytes));
                o.insert("retransmits".into(), Value::from(s.retransmits));
                o.insert("jitter".into(), num(s.jitter));
                o.insert("errors".into(), Value::from(s.errors));
                o.insert("omitted_errors".into(), Value::from(s.omitted_errors.unwrap_or(0)));
                o.insert("packets".into(), Value::from(s.packets));
                o.insert("omitted_packets".into(), Value::from(s.omitted_packets.unwrap_or(0)));
                o.insert("start_time".into(), num(s.start_time));
                o.insert("end_time".into(), num(s.end_time));
                if let Some(n) = s.out_of_order {
                    o.insert("out_of_order".into(), Value::from(n));
                }
                if let Some(n) = s.duplicates {
                    o.insert("duplicates".into(), Value::from(n));
                }
                if let Some((l, r)) = s.ports {
                    o.insert("local_port".into(), Value::from(l));
                    o.insert("remote_port".into(), Value::from(r));
                }
                if let Some(b) = s.omitted_bytes {
                    o.insert("omitted_bytes".into(), Value::from(b));
                }
                if let Some((sent, c)) = &s.ecn {
                    o.insert("ecn".into(), ecn_value(*sent, c));
                }
                if let Some(e) = &s.tcp_ecn {
                    o.insert("tcp_ecn".into(), tcp_ecn_value(e));
                }
                Value::Object(o)
            })
            .collect();
        m.insert("streams".into(), Value::Array(streams));
        to_compact(&Value::Object(m))
    }

    /// Decodes a peer's results. Missing required keys, wrong types or
    /// absurd sizes are errors ("unable to receive results").
    pub fn decode(bytes: &[u8]) -> Result<Results, Error> {
        let bad = |why: &str| Error::msg(Code::RECVRESULTS, format!("unable to receive results: {why}"));
        let v: Value = serde_json::from_slice(bytes).map_err(|_| bad("invalid JSON"))?;
        let m = v.as_object().ok_or_else(|| bad("not an object"))?;
        let f = |k: &str| {
            m.get(k)
                .and_then(lenient_f64)
                .ok_or_else(|| bad(&format!("missing {k}")))
        };
        let mut r = Results {
            cpu_util_total: f("cpu_util_total")?,
            cpu_util_user: f("cpu_util_user")?,
            cpu_util_system: f("cpu_util_system")?,
            sender_has_retransmits: m
                .get("sender_has_retransmits")
                .and_then(lenient_i64)
                .ok_or_else(|| bad("missing sender_has_retransmits"))?,
            ..Results::default()
        };
        r.congestion_used = m.get("congestion_used").and_then(|v| v.as_str()).map(String::from);
        r.server_output_text = m.get("server_output_text").and_then(|v| v.as_str()).map(String::from);
        r.server_output_json = m.get("server_output_json").filter(|v| v.is_object()).cloned();
        r.receiver_drained = m.get("receiver_drained").and_then(|v| v.as_bool()).unwrap_or(false);
        let streams = m
            .get("streams")
            .and_then(|v| v.as_array())
            .ok_or_else(|| bad("missing streams"))?;
        for s in streams {
            let o = s.as_object().ok_or_else(|| bad("stream is not an object"))?;
            let i = |k: &str| {
                o.get(k)
                    .and_then(lenient_i64)
                    .ok_or_else(|| bad(&format!("missing {k}")))
            };
            let oe = o.get("omitted_errors").and_then(lenient_i64);
            let op = o.get("omitted_packets").and_then(lenient_i64);
            let (oe, op) = if oe.is_some() && op.is_some() {
                (oe, op)
            } else {
                (None, None)
            };
            r.streams.push(StreamResult {
                id: i("id")?,
                bytes: i("bytes")?.max(0) as u64,
                retransmits: i("retransmits")?,
                jitter: o
                    .get("jitter")
                    .and_then(lenient_f64)
                    .ok_or_else(|| bad("missing jitter"))?,
                errors: i("errors")?,
                omitted_errors: oe,
                packets: i("packets")?,
                omitted_packets: op,
                start_time: o.get("start_time").and_then(lenient_f64).unwrap_or(0.0),
                end_time: o.get("end_time").and_then(lenient_f64).unwrap_or(0.0),
                out_of_order: o.get("out_of_order").and_then(lenient_i64).filter(|n| *n >= 0),
                duplicates: o.get("duplicates").and_then(lenient_i64).filter(|n| *n >= 0),
                ports: match (port(o.get("local_port")), port(o.get("remote_port"))) {
                    (Some(l), Some(r)) => Some((l, r)),
                    _ => None,
                },
                omitted_bytes: o.get("omitted_bytes").and_then(Value::as_u64),
                ecn: o.get("ecn").and_then(ecn_of),
                tcp_ecn: o.get("tcp_ecn").and_then(tcp_ecn_of),
            });
        }
        Ok(r)
    }
}

/// The `"ecn"` object: `{"sent":"ect1","not_ect":0,"ect0":0,"ect1":N,"ce":0}`
/// (`sent` only when known).
pub fn ecn_value(sent: Option<Ecn>, c: &EcnCounts) -> Value {
    let mut o = Map::new();
    if let Some(s) = sent {
        o.insert("sent".into(), Value::from(s.key()));
    }
    for e in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
        o.insert(e.key().into(), Value::from(c.get(e)));
    }
    Value::Object(o)
}

/// Reads an `"ecn"` object leniently: a count that is missing, negative or
/// not a number makes the whole object absent (it is an extension; the rest
/// of the results stand).
fn ecn_of(v: &Value) -> Option<(Option<Ecn>, EcnCounts)> {
    let o = v.as_object()?;
    let n = |e: Ecn| o.get(e.key()).and_then(Value::as_u64);
    let counts = EcnCounts {
        not_ect: n(Ecn::NotEct)?,
        ect0: n(Ecn::Ect0)?,
        ect1: n(Ecn::Ect1)?,
        ce: n(Ecn::Ce)?,
    };
    let sent = o.get("sent").and_then(Value::as_str).and_then(Ecn::from_key);
    Some((sent, counts))
}

/// The `"tcp_ecn"` object (`acked_under_ece` only when counted).
pub fn tcp_ecn_value(e: &TcpEcnResult) -> Value {
    let mut o = Map::new();
    o.insert("negotiated".into(), Value::Bool(e.negotiated));
    o.insert("seen".into(), Value::Bool(e.seen));
    if let Some(n) = e.acked_under_ece {
        o.insert("acked_under_ece".into(), Value::from(n));
    }
    Value::Object(o)
}

/// Reads a `"tcp_ecn"` object leniently: without both flags as booleans
/// it is absent (an extension; the rest of the results stand); a count
/// that is not a whole number is left out, as unknown. A count claimed
/// without negotiation is not believed.
fn tcp_ecn_of(v: &Value) -> Option<TcpEcnResult> {
    let o = v.as_object()?;
    let negotiated = o.get("negotiated")?.as_bool()?;
    let seen = o.get("seen")?.as_bool()?;
    let acked_under_ece = o.get("acked_under_ece").and_then(Value::as_u64).filter(|_| negotiated);
    Some(TcpEcnResult {
        negotiated,
        seen,
        acked_under_ece,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_master_results() {
        let s = br#"{"cpu_util_total":27.87,"cpu_util_user":0.72,"cpu_util_system":27.15,"sender_has_retransmits":-1,"congestion_used":"bbr","streams":[{"id":1,"bytes":891420672,"retransmits":-1,"jitter":0,"errors":0,"omitted_errors":0,"packets":0,"omitted_packets":0,"start_time":0,"end_time":2.013482}]}"#;
        let r = Results::decode(s).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.congestion_used.as_deref(), Some("bbr"));
        assert_eq!(r.streams[0].bytes, 891420672);
        assert_eq!(r.streams[0].omitted_errors, Some(0));
        assert_eq!(r.streams[0].end_time, 2.013482);
    }

    #[test]
    fn omitted_bytes_go_both_ways_and_are_optional() {
        let mut r = Results {
            streams: vec![StreamResult {
                id: 1,
                bytes: 10,
                retransmits: -1,
                jitter: 0.0,
                errors: 0,
                omitted_errors: Some(0),
                packets: 0,
                omitted_packets: Some(0),
                start_time: 0.0,
                end_time: 1.0,
                out_of_order: None,
                duplicates: None,
                ports: None,
                omitted_bytes: Some(4096),
                ecn: None,
                tcp_ecn: None,
            }],
            ..Results::default()
        };
        let text = r.encode();
        assert!(text.contains(r#""omitted_bytes":4096"#), "{text}");
        assert_eq!(Results::decode(text.as_bytes()).unwrap(), r);
        // A C peer's results have none; ours without -O send none.
        r.streams[0].omitted_bytes = None;
        let text = r.encode();
        assert!(!text.contains("omitted_bytes"), "{text}");
        assert_eq!(Results::decode(text.as_bytes()).unwrap().streams[0].omitted_bytes, None);
    }

    #[test]
    fn decodes_312_results_with_unsigned_negatives() {
        let s = br#"{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":794689536,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.000116}]}"#;
        let r = Results::decode(s).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.streams[0].omitted_errors, None);
    }

    #[test]
    fn round_trip() {
        let r = Results {
            cpu_util_total: 12.5,
            cpu_util_user: 2.5,
            cpu_util_system: 10.0,
            sender_has_retransmits: 1,
            congestion_used: Some("cubic".into()),
            streams: vec![StreamResult {
                id: 3,
                bytes: 123,
                retransmits: 4,
                jitter: 0.001,
                errors: 2,
                omitted_errors: Some(1),
                packets: 77,
                omitted_packets: Some(5),
                start_time: 0.0,
                end_time: 2.000083,
                out_of_order: Some(3),
                duplicates: Some(1),
                ports: Some((5201, 41234)),
                omitted_bytes: None,
                tcp_ecn: None,
                ecn: Some((
                    Some(Ecn::Ect1),
                    EcnCounts {
                        not_ect: 1,
                        ect0: 0,
                        ect1: 70,
                        ce: 6,
                    },
                )),
            }],
            server_output_text: Some("line\n".into()),
            server_output_json: None,
            receiver_drained: true,
        };
        assert_eq!(Results::decode(r.encode().as_bytes()).unwrap(), r);
    }

    /// The TCP ECN key travels both ways, is absent unless in play, and a
    /// broken one is dropped alone; a count without negotiation is not
    /// believed.
    #[test]
    fn tcp_ecn_round_trips_and_is_read_leniently() {
        let mut r = Results::decode(
            br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":9,"retransmits":0,"jitter":0,"errors":0,"packets":0,"tcp_ecn":{"negotiated":true,"seen":false,"acked_under_ece":212}},{"id":3,"bytes":9,"retransmits":0,"jitter":0,"errors":0,"packets":0,"tcp_ecn":{"negotiated":"yes","seen":false}},{"id":4,"bytes":9,"retransmits":0,"jitter":0,"errors":0,"packets":0,"tcp_ecn":{"negotiated":false,"seen":false,"acked_under_ece":5}},{"id":5,"bytes":9,"retransmits":0,"jitter":0,"errors":0,"packets":0,"tcp_ecn":{"negotiated":true,"seen":true,"acked_under_ece":-3}}]}"#,
        )
        .unwrap();
        let e = |a, b, n| {
            Some(TcpEcnResult {
                negotiated: a,
                seen: b,
                acked_under_ece: n,
            })
        };
        assert_eq!(r.streams[0].tcp_ecn, e(true, false, Some(212)));
        assert_eq!(r.streams[1].tcp_ecn, None);
        assert_eq!(r.streams[2].tcp_ecn, e(false, false, None));
        assert_eq!(r.streams[3].tcp_ecn, e(true, true, None));
        let back = Results::decode(r.encode().as_bytes()).unwrap();
        let ecn = |r: &Results| r.streams.iter().map(|s| s.tcp_ecn).collect::<Vec<_>>();
        assert_eq!(ecn(&back), ecn(&r));
        for st in &mut r.streams {
            st.tcp_ecn = None;
        }
        assert!(!r.encode().contains("ecn"));
    }

    /// The ECN key is an extension: absent unless in play, and a broken
    /// one is dropped on its own, the stream's other numbers kept.
    #[test]
    fn ecn_counts_are_optional_and_read_leniently() {
        let s = br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":5,"ecn":{"sent":"ect0","not_ect":0,"ect0":3,"ect1":0,"ce":2}},{"id":3,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":1,"ecn":{"ce":-1}},{"id":4,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":1,"ecn":"x"}]}"#;
        let r = Results::decode(s).unwrap();
        let (sent, c) = r.streams[0].ecn.unwrap();
        assert_eq!((sent, c.ect0, c.ce), (Some(Ecn::Ect0), 3, 2));
        assert_eq!((r.streams[1].ecn, r.streams[2].ecn), (None, None));
        assert_eq!(r.streams[1].packets, 1);
        let mut plain = r.clone();
        for st in &mut plain.streams {
            st.ecn = None;
        }
        assert!(!plain.encode().contains("ecn"));
    }

    #[test]
    fn reorder_counts_are_optional_and_never_negative() {
        let s = br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":1,"out_of_order":-4},{"id":3,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":1}]}"#;
        let r = Results::decode(s).unwrap();
        assert_eq!((r.streams[0].out_of_order, r.streams[1].out_of_order), (None, None));
        assert!(!Results { ..r }.encode().contains("out_of_order"));
    }

    #[test]
    fn streams_are_matched_by_their_ports_before_their_ids() {
        let stream = |id, ports| StreamResult {
            id,
            bytes: id as u64,
            retransmits: -1,
            jitter: 0.0,
            errors: 0,
            omitted_errors: None,
            packets: 0,
            omitted_packets: None,
            start_time: 0.0,
            end_time: 1.0,
            out_of_order: None,
            duplicates: None,
            ports,
            omitted_bytes: None,
            ecn: None,
            tcp_ecn: None,
        };
        // The server saw our stream 1 (port 40001) connect second.
        let theirs = Results {
            streams: vec![stream(1, Some((5201, 40003))), stream(3, Some((5201, 40001)))],
            ..Results::default()
        };
        assert_eq!(theirs.stream_for(1, Some((40001, 5201))).unwrap().id, 3);
        assert_eq!(theirs.stream_for(3, Some((40003, 5201))).unwrap().id, 1);
        // A C peer gives no ports: ids it is.
        let c = Results {
            streams: vec![stream(1, None), stream(3, None)],
            ..Results::default()
        };
        assert_eq!(c.stream_for(3, Some((40003, 5201))).unwrap().id, 3);
    }

    #[test]
    fn malformed_results_are_errors() {
        for bad in [&b"{}"[..], b"[]", b"{\"cpu_util_total\":1}", b"\xff\xfe"] {
            assert!(Results::decode(bad).is_err());
        }
    }
}
