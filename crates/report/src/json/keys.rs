//! The objects of iperf3's `-J` document: `start`, one `intervals[]`
//! element, `end`. Keys, their order and their presence rules follow
//! iperf3 master (a superset of 3.12's).

use serde_json::{Map, Value};

use wirespeed_core::config::{Direction, Protocol};
use wirespeed_core::events::*;
use wirespeed_proto::iperf3::results::ecn_value;
use wirespeed_proto::json::num;

pub(super) fn obj() -> Map<String, Value> {
    Map::new()
}

fn timestamp(t: &Timestamp) -> Value {
    let mut m = obj();
    m.insert("time".into(), Value::from(t.time.clone()));
    m.insert("timesecs".into(), Value::from(t.timesecs));
    m.insert("timemillisecs".into(), Value::from(t.timemillisecs));
    Value::Object(m)
}

fn host_port(h: &str, p: u16) -> Value {
    let mut m = obj();
    m.insert("host".into(), Value::from(h));
    m.insert("port".into(), Value::from(p));
    Value::Object(m)
}

/// The `start` object.
pub fn start_json(s: &StartInfo, side: Side) -> Value {
    let mut m = obj();
    let connected: Vec<Value> = s
        .connected
        .iter()
        .map(|c| {
            let mut o = obj();
            o.insert("socket".into(), Value::from(c.socket));
            o.insert("local_host".into(), Value::from(c.local_host.clone()));
            o.insert("local_port".into(), Value::from(c.local_port));
            o.insert("remote_host".into(), Value::from(c.remote_host.clone()));
            o.insert("remote_port".into(), Value::from(c.remote_port));
            Value::Object(o)
        })
        .collect();
    m.insert("connected".into(), Value::Array(connected));
    m.insert("version".into(), Value::from(s.version.clone()));
    m.insert("system_info".into(), Value::from(s.system_info.clone()));
    let bufs = |m: &mut Map<String, Value>| {
        m.insert("sock_bufsize".into(), Value::from(s.sock_bufsize));
        m.insert("sndbuf_actual".into(), Value::from(s.sndbuf_actual));
        m.insert("rcvbuf_actual".into(), Value::from(s.rcvbuf_actual));
    };
    if side == Side::Server {
        bufs(&mut m);
    }
    m.insert("timestamp".into(), timestamp(&s.timestamp));
    if let Some((h, p)) = &s.connecting_to {
        m.insert("connecting_to".into(), host_port(h, *p));
    }
    if let Some((h, p)) = &s.accepted_connection {
        m.insert("accepted_connection".into(), host_port(h, *p));
    }
    m.insert("cookie".into(), Value::from(s.cookie.clone()));
    if s.protocol == Protocol::Tcp {
        match (s.tcp_mss, s.tcp_mss_default) {
            (Some(v), _) => {
                m.insert("tcp_mss".into(), Value::from(v));
            }
            (None, Some(v)) => {
                m.insert("tcp_mss_default".into(), Value::from(v));
            }
            _ => {}
        }
    }
    m.insert("target_bitrate".into(), Value::from(s.target_bitrate));
    if let Some(pps) = s.target_pps {
        m.insert("target_pps".into(), Value::from(pps));
    }
    m.insert("fq_rate".into(), Value::from(s.fq_rate));
    if side == Side::Client {
        bufs(&mut m);
    }
    let mut t = obj();
    t.insert("protocol".into(), Value::from(s.protocol.name()));
    t.insert("num_streams".into(), Value::from(s.num_streams));
    t.insert("blksize".into(), Value::from(s.blksize));
    t.insert("omit".into(), Value::from(s.omit));
    t.insert("duration".into(), Value::from(s.duration));
    t.insert("bytes".into(), Value::from(s.bytes));
    t.insert("blocks".into(), Value::from(s.blocks));
    t.insert(
        "reverse".into(),
        Value::from(u8::from(s.direction == Direction::Reverse)),
    );
    t.insert("tos".into(), Value::from(s.tos));
    t.insert("target_bitrate".into(), Value::from(s.target_bitrate));
    if let Some(pps) = s.target_pps {
        t.insert("target_pps".into(), Value::from(pps));
    }
    t.insert("bidir".into(), Value::from(u8::from(s.direction == Direction::Bidir)));
    t.insert("fqrate".into(), Value::from(s.fq_rate));
    t.insert("interval".into(), num(s.interval));
    // 3.21 writes both for every protocol (`--gsro` sets both).
    t.insert("gso".into(), Value::from(u8::from(s.gso)));
    t.insert("gro".into(), Value::from(u8::from(s.gso)));
    m.insert("test_start".into(), Value::Object(t));
    Value::Object(m)
}

fn stream_interval(s: &StreamSample) -> Value {
    let mut m = obj();
    m.insert("socket".into(), Value::from(s.socket));
    m.insert("start".into(), num(s.start));
    m.insert("end".into(), num(s.end));
    m.insert("seconds".into(), num(s.seconds));
    m.insert("bytes".into(), Value::from(s.bytes));
    m.insert("bits_per_second".into(), num(s.bits_per_second));
    if let Some(t) = &s.tcp {
        m.insert("retransmits".into(), Value::from(t.retransmits));
        m.insert("snd_cwnd".into(), Value::from(t.snd_cwnd));
        m.insert("snd_wnd".into(), Value::from(t.snd_wnd));
        m.insert("rtt".into(), Value::from(t.rtt));
        m.insert("rttvar".into(), Value::from(t.rttvar));
        m.insert("pmtu".into(), Value::from(t.pmtu));
        m.insert("reorder".into(), Value::from(t.reorder));
    }
    if let Some(u) = &s.udp {
        udp_interval_keys(&mut m, u, s.sender);
    }
    m.insert("omitted".into(), Value::Bool(s.omitted));
    m.insert("sender".into(), Value::Bool(s.sender));
    Value::Object(m)
}

fn udp_interval_keys(m: &mut Map<String, Value>, u: &UdpSample, sender: bool) {
    if sender {
        m.insert("packets".into(), Value::from(u.packets));
    } else {
        m.insert("jitter_ms".into(), num(u.jitter_ms));
        m.insert("lost_packets".into(), Value::from(u.lost));
        m.insert("packets".into(), Value::from(u.packets));
        m.insert("lost_percent".into(), num(u.lost_percent));
    }
    // Not in iperf3: the ECN field, only when in play.
    if let Some(e) = &u.ecn {
        m.insert("ecn".into(), ecn_value(e.sent, &e.counts));
    }
}

/// A whole test's `ecn` object: the codepoint sent, what arrived per
/// codepoint (when known here), the datagrams sent, and what the path did.
pub(crate) fn ecn_totals_json(e: &EcnTotals) -> Value {
    let mut m = match &e.arrived {
        Some(a) => match ecn_value(e.sent, a) {
            Value::Object(m) => m,
            _ => obj(),
        },
        None => {
            let mut m = obj();
            if let Some(s) = e.sent {
                m.insert("sent".into(), Value::from(s.key()));
            }
            m
        }
    };
    if let Some(n) = e.sent_packets {
        m.insert("sent_packets".into(), Value::from(n));
    }
    if let Some(v) = &e.verdict {
        m.insert("path".into(), Value::from(ecn_path_words(v)));
        m.insert("ce_percent".into(), num(v.ce_percent));
    }
    if let Some(c) = &e.impossible {
        m.insert("impossible_peer_counts".into(), ecn_value(None, c));
    }
    Value::Object(m)
}

/// What the path did, as JSON names it: `kept`, or any of `ce_marked`,
/// `bleached`, `remarked`.
fn ecn_path_words(v: &EcnVerdict) -> Vec<&'static str> {
    if v.kept_all() {
        return vec!["kept"];
    }
    let mut w = Vec::new();
    if v.ce > 0 {
        w.push("ce_marked");
    }
    if v.bleached > 0 {
        w.push("bleached");
    }
    if v.remarked > 0 {
        w.push("remarked");
    }
    w
}

fn sum_interval(s: &StreamSample) -> Value {
    let mut m = obj();
    m.insert("start".into(), num(s.start));
    m.insert("end".into(), num(s.end));
    m.insert("seconds".into(), num(s.seconds));
    m.insert("bytes".into(), Value::from(s.bytes));
    m.insert("bits_per_second".into(), num(s.bits_per_second));
    if let Some(r) = s.retransmits {
        m.insert("retransmits".into(), Value::from(r));
    }
    if let Some(u) = &s.udp {
        udp_interval_keys(&mut m, u, s.sender);
    }
    m.insert("omitted".into(), Value::Bool(s.omitted));
    m.insert("sender".into(), Value::Bool(s.sender));
    Value::Object(m)
}

/// One `intervals[]` element.
pub fn interval_json(r: &IntervalReport) -> Value {
    let mut m = obj();
    m.insert(
        "streams".into(),
        Value::Array(r.streams.iter().map(stream_interval).collect()),
    );
    m.insert("sum".into(), sum_interval(&r.sum));
    if let Some(b) = &r.sum_bidir_reverse {
        m.insert("sum_bidir_reverse".into(), sum_interval(b));
    }
    // wirespeed's: `--latency` round trips.
    if let Some(l) = &r.latency {
        m.insert("latency".into(), crate::latency::rtt_json(l));
    }
    Value::Object(m)
}

/// The keys every whole-test total opens with.
fn totals_head(socket: Option<i32>, t: &Totals) -> Map<String, Value> {
    let mut m = obj();
    if let Some(s) = socket {
        m.insert("socket".into(), Value::from(s));
    }
    m.insert("start".into(), num(t.start));
    m.insert("end".into(), num(t.end));
    m.insert("seconds".into(), num(t.seconds));
    m.insert("bytes".into(), Value::from(t.bytes));
    m.insert("bits_per_second".into(), num(t.bits_per_second));
    // Not in iperf3: what the counting side left out with -O.
    if let Some(o) = t.omitted_bytes {
        m.insert("omitted_bytes".into(), Value::from(o));
    }
    m
}

fn totals(socket: Option<i32>, t: &Totals, tcp: Option<&TcpTotals>, with_retr: bool) -> Value {
    let mut m = totals_head(socket, t);
    if with_retr {
        m.insert("retransmits".into(), Value::from(t.retransmits.unwrap_or(0)));
        if let Some(tc) = tcp {
            m.insert("reorder".into(), Value::from(tc.reorder));
            m.insert("max_snd_cwnd".into(), Value::from(tc.max_snd_cwnd));
            m.insert("max_snd_wnd".into(), Value::from(tc.max_snd_wnd));
            m.insert("max_rtt".into(), Value::from(tc.max_rtt));
            m.insert("min_rtt".into(), Value::from(tc.min_rtt));
            m.insert("mean_rtt".into(), Value::from(tc.mean_rtt));
        }
    }
    m.insert("sender".into(), Value::Bool(t.sender));
    Value::Object(m)
}

fn udp_totals(socket: Option<i32>, t: &Totals, u: &UdpTotals, sender: bool, ooo: bool, packets: i64) -> Value {
    let mut m = totals_head(socket, t);
    m.insert("jitter_ms".into(), num(u.jitter_ms));
    m.insert("lost_packets".into(), Value::from(u.lost.unwrap_or(0)));
    m.insert("packets".into(), Value::from(packets));
    m.insert("lost_percent".into(), num(u.lost_percent));
    if ooo {
        m.insert("out_of_order".into(), Value::from(u.out_of_order));
        // Not in iperf3: datagrams that arrived more than once.
        m.insert("duplicates".into(), Value::from(u.duplicates));
    }
    m.insert("sender".into(), Value::Bool(sender));
    // Not in iperf3: the ECN field, only when in play.
    if let Some(e) = &u.ecn {
        m.insert("ecn".into(), ecn_totals_json(e));
    }
    Value::Object(m)
}

/// `end.streams[].quic`: QUIC's own numbers (an addition to iperf3's keys).
fn quic_json(q: &wirespeed_core::events::QuicTotals) -> Value {
    let mut m = obj();
    m.insert("rtt_us".into(), Value::from(q.rtt_us));
    m.insert("min_rtt_us".into(), Value::from(q.min_rtt_us));
    m.insert("cwnd".into(), Value::from(q.cwnd));
    m.insert("sent_packets".into(), Value::from(q.sent_packets));
    m.insert("lost_packets".into(), Value::from(q.lost_packets));
    m.insert("lost_bytes".into(), Value::from(q.lost_bytes));
    m.insert("congestion_events".into(), Value::from(q.congestion_events));
    Value::Object(m)
}

/// `end.advice`: wirespeed's window advice (an addition to iperf3's keys).
fn advice_json(a: &WindowAdvice) -> Value {
    let mut m = obj();
    m.insert("limited_by".into(), Value::from(a.limited_by.name()));
    m.insert("bits_per_second".into(), num(a.bits_per_second));
    m.insert("rtt_us".into(), Value::from(a.rtt_us));
    m.insert("min_rtt_us".into(), Value::from(a.min_rtt_us));
    m.insert("bdp_bytes".into(), Value::from(a.bdp_bytes));
    m.insert("rwnd_limited_percent".into(), num(a.rwnd_limited_percent));
    m.insert("sndbuf_limited_percent".into(), num(a.sndbuf_limited_percent));
    m.insert("busy_percent".into(), num(a.busy_percent));
    m.insert("peer_window_bytes".into(), Value::from(a.peer_window_bytes));
    m.insert("send_buffer_bytes".into(), Value::from(a.send_buffer_bytes));
    if let Some(t) = a.target_bits_per_second {
        m.insert("target_bits_per_second".into(), num(t));
    }
    if let Some(w) = a.suggested_window_bytes {
        m.insert("suggested_window_bytes".into(), Value::from(w));
    }
    if let Some(o) = &a.suggested_option {
        m.insert("suggested_option".into(), Value::from(o.clone()));
    }
    m.insert("text".into(), Value::from(a.text.join("\n")));
    Value::Object(m)
}

/// The `end` object.
pub fn end_json(s: &Summary) -> Value {
    let mut m = obj();
    let streams: Vec<Value> = s
        .streams
        .iter()
        .map(|st| {
            let mut o = obj();
            match (&st.udp, s.protocol) {
                (Some(u), Protocol::Udp) => {
                    // Bytes and rate are the sender's, as iperf3 writes them.
                    o.insert(
                        "udp".into(),
                        udp_totals(
                            Some(st.socket),
                            &st.sender,
                            u,
                            st.local_sender,
                            true,
                            u.sent_packets.max(u.packets),
                        ),
                    );
                }
                _ => {
                    let with_retr = s.has_retransmits;
                    // TCP_INFO is the sending host's: a stream this host
                    // only received has zeros there, as iperf3 writes.
                    let tcp = st.tcp.map(|t| if st.local_sender { t } else { TcpTotals::default() });
                    o.insert(
                        "sender".into(),
                        totals(Some(st.socket), &st.sender, tcp.as_ref(), with_retr),
                    );
                    o.insert("receiver".into(), totals(Some(st.socket), &st.receiver, None, false));
                }
            }
            // Not in iperf3: a QUIC test's connection, as this end saw it
            // (the same for every stream: they share it).
            if let Some(q) = &s.quic {
                o.insert("quic".into(), quic_json(q));
            }
            Value::Object(o)
        })
        .collect();
    m.insert("streams".into(), Value::Array(streams));
    // A server writes its end before the results exchange: it does not
    // know yet what the client sent.
    let peer_known = s.streams.iter().any(|st| st.peer_known);
    let dir = |m: &mut Map<String, Value>, d: &DirectionSums, suffix: &str| match (&d.udp, s.protocol) {
        (Some(u), Protocol::Udp) => {
            m.insert(
                format!("sum{suffix}"),
                udp_totals(None, &d.sent, u, d.sent.sender, false, u.sent_packets.max(u.packets)),
            );
            let sent = UdpTotals {
                jitter_ms: 0.0,
                lost: Some(0),
                lost_percent: 0.0,
                ecn: None,
                ..*u
            };
            let sent_packets = if d.sent.sender || peer_known { u.sent_packets } else { 0 };
            // iperf3 (3.11+) marks these two by what they are, not by
            // which host sent.
            m.insert(
                format!("sum_sent{suffix}"),
                udp_totals(None, &d.sent, &sent, true, false, sent_packets),
            );
            m.insert(
                format!("sum_received{suffix}"),
                udp_totals(None, &d.received, u, false, false, u.packets),
            );
        }
        _ => {
            // Retransmits are the sender's: known here when this host
            // sent, or after the results exchange.
            m.insert(
                format!("sum_sent{suffix}"),
                totals(None, &d.sent, None, s.has_retransmits && (d.sent.sender || peer_known)),
            );
            m.insert(format!("sum_received{suffix}"), totals(None, &d.received, None, false));
        }
    };
    dir(&mut m, &s.forward, "");
    if let Some(r) = &s.reverse {
        dir(&mut m, r, "_bidir_reverse");
    }
    let mut c = obj();
    c.insert("host_total".into(), num(s.cpu.host_total));
    c.insert("host_user".into(), num(s.cpu.host_user));
    c.insert("host_system".into(), num(s.cpu.host_system));
    c.insert("remote_total".into(), num(s.cpu.remote_total));
    c.insert("remote_user".into(), num(s.cpu.remote_user));
    c.insert("remote_system".into(), num(s.cpu.remote_system));
    m.insert("cpu_utilization_percent".into(), Value::Object(c));
    if s.protocol == Protocol::Tcp {
        if let Some(x) = &s.sender_tcp_congestion {
            m.insert("sender_tcp_congestion".into(), Value::from(x.clone()));
        }
        // A sending server learns the receiver's only in the exchange,
        // after it wrote its end (iperf3 leaves the key out there).
        if let Some(x) = &s.receiver_tcp_congestion
            && (peer_known || !s.local_sends)
        {
            m.insert("receiver_tcp_congestion".into(), Value::from(x.clone()));
        }
    }
    // After iperf3's keys, so their order stays iperf3's.
    if let Some(a) = &s.advice {
        m.insert("advice".into(), advice_json(a));
    }
    if let Some(l) = &s.latency {
        m.insert("latency".into(), crate::latency::summary_json(l));
    }
    Value::Object(m)
}
