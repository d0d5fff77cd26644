//! The objects of iperf3's `-J` document: `start`, one `intervals[]`
//! element, `end`, built as the typed model ([`crate::document`]) and
//! serialized. Keys, their order and their presence rules follow iperf3
//! master (a superset of 3.12's); the model's field order is their order.

use serde_json::{Map, Value};

use crate::document as doc;
use wirespeed_core::config::{Direction, Protocol};
use wirespeed_core::events::*;

/// A part of the document as JSON (an object).
pub(super) fn to_map<T: serde::Serialize>(part: &T) -> Map<String, Value> {
    match serde_json::to_value(part) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// An unsigned count as the model's integer.
fn int(v: u64) -> Option<i64> {
    Some(i64::try_from(v).unwrap_or(i64::MAX))
}

/// A count the model holds as a float (written back as the integer).
fn whole(v: u64) -> Option<f64> {
    Some(v as f64)
}

fn host_port(h: &str, p: u16) -> Option<doc::HostPort> {
    Some(doc::HostPort {
        host: Some(h.to_string()),
        port: Some(i64::from(p)),
        ..doc::HostPort::default()
    })
}

/// The `start` object.
pub fn start(s: &StartInfo, side: Side) -> doc::Start {
    let connected = s
        .connected
        .iter()
        .map(|c| doc::Connected {
            socket: Some(i64::from(c.socket)),
            local_host: Some(c.local_host.clone()),
            local_port: Some(i64::from(c.local_port)),
            remote_host: Some(c.remote_host.clone()),
            remote_port: Some(i64::from(c.remote_port)),
            ..doc::Connected::default()
        })
        .collect();
    let tcp = s.protocol == Protocol::Tcp;
    let client = side == Side::Client;
    doc::Start {
        connected: Some(connected),
        version: Some(s.version.clone()),
        system_info: Some(s.system_info.clone()),
        // A server writes its buffers before the timestamp, a client
        // after `fq_rate`.
        server_buffers: (!client).then(|| doc::Buffers {
            sock_bufsize: int(s.sock_bufsize).unwrap_or_default(),
            sndbuf_actual: int(s.sndbuf_actual).unwrap_or_default(),
            rcvbuf_actual: int(s.rcvbuf_actual).unwrap_or_default(),
        }),
        timestamp: Some(doc::Timestamp {
            time: Some(s.timestamp.time.clone()),
            timesecs: Some(s.timestamp.timesecs as f64),
            timemillisecs: Some(s.timestamp.timemillisecs as f64),
            ..doc::Timestamp::default()
        }),
        connecting_to: s.connecting_to.as_ref().and_then(|(h, p)| host_port(h, *p)),
        accepted_connection: s.accepted_connection.as_ref().and_then(|(h, p)| host_port(h, *p)),
        cookie: Some(s.cookie.clone()),
        tcp_mss: s.tcp_mss.filter(|_| tcp).map(i64::from),
        tcp_mss_default: s.tcp_mss_default.filter(|_| tcp && s.tcp_mss.is_none()).map(i64::from),
        target_bitrate: whole(s.target_bitrate),
        target_pps: s.target_pps.and_then(whole),
        fq_rate: whole(s.fq_rate),
        sock_bufsize: client.then(|| int(s.sock_bufsize)).flatten(),
        sndbuf_actual: client.then(|| int(s.sndbuf_actual)).flatten(),
        rcvbuf_actual: client.then(|| int(s.rcvbuf_actual)).flatten(),
        test_start: Some(doc::TestStart {
            protocol: Some(s.protocol.name().to_string()),
            num_streams: Some(i64::from(s.num_streams)),
            blksize: Some(i64::from(s.blksize)),
            omit: int(s.omit),
            duration: int(s.duration),
            bytes: int(s.bytes),
            blocks: int(s.blocks),
            reverse: Some(s.direction == Direction::Reverse),
            tos: Some(i64::from(s.tos)),
            target_bitrate: whole(s.target_bitrate),
            target_pps: s.target_pps.and_then(whole),
            bidir: Some(s.direction == Direction::Bidir),
            fqrate: whole(s.fq_rate),
            interval: Some(s.interval),
            // 3.21 writes both for every protocol (`--gsro` sets both).
            gso: Some(s.gso),
            gro: Some(s.gso),
            ..doc::TestStart::default()
        }),
        ..doc::Start::default()
    }
}

/// The `start` object as JSON.
pub fn start_json(s: &StartInfo, side: Side) -> Value {
    Value::Object(to_map(&start(s, side)))
}

/// The interval keys every sample opens with.
fn sample_head(s: &StreamSample) -> doc::Sample {
    doc::Sample {
        start: Some(s.start),
        end: Some(s.end),
        seconds: Some(s.seconds),
        bytes: whole(s.bytes),
        bits_per_second: Some(s.bits_per_second),
        ..doc::Sample::default()
    }
}

fn udp_interval_keys(m: &mut doc::Sample, u: &UdpSample, sender: bool) {
    if !sender {
        m.jitter_ms = Some(u.jitter_ms);
        m.lost_packets = Some(u.lost);
        m.lost_percent = Some(u.lost_percent);
    }
    m.packets = Some(u.packets);
    // Not in iperf3: the ECN field, only when in play, and the L4S
    // exchange where it runs.
    m.ecn = u.ecn.as_ref().map(|e| ecn_counts(e.sent, &e.counts));
    m.l4s = u.l4s.as_ref().map(l4s);
}

/// The `l4s` object: one side of iperf 2.2.1's L4S exchange.
pub(crate) fn l4s(s: &L4sSample) -> doc::L4s {
    doc::L4s {
        role: Some(if s.sender { "sender" } else { "receiver" }.to_string()),
        acks: int(s.acks),
        received: s.last.and_then(|c| int(c.received)),
        ce: s.last.and_then(|c| int(c.ce)),
        lost: s.last.and_then(|c| int(c.lost)),
        ecn_error: Some(s.ecn_error),
        rate_bps: s.rate_bps,
        alpha: s.alpha,
        ..doc::L4s::default()
    }
}

/// The `ecn` object of an interval: the codepoint sent and the datagrams
/// per codepoint.
pub(crate) fn ecn_counts(sent: Option<Ecn>, c: &EcnCounts) -> doc::Ecn {
    doc::Ecn {
        sent: sent.map(|s| s.key().to_string()),
        not_ect: int(c.not_ect),
        ect0: int(c.ect0),
        ect1: int(c.ect1),
        ce: int(c.ce),
        ..doc::Ecn::default()
    }
}

/// A whole test's `ecn` object: the codepoint sent, what arrived per
/// codepoint (when known here), the datagrams sent, and what the path did.
pub(crate) fn ecn_totals(e: &EcnTotals) -> doc::Ecn {
    let counts = match &e.arrived {
        Some(a) => ecn_counts(e.sent, a),
        None => doc::Ecn {
            sent: e.sent.map(|s| s.key().to_string()),
            ..doc::Ecn::default()
        },
    };
    doc::Ecn {
        sent_packets: e.sent_packets.and_then(int),
        path: e
            .verdict
            .as_ref()
            .map(|v| ecn_path_words(v).into_iter().map(String::from).collect()),
        ce_percent: e.verdict.as_ref().map(|v| v.ce_percent),
        impossible_peer_counts: e.impossible.as_ref().map(|c| Box::new(ecn_counts(None, c))),
        ..counts
    }
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

fn stream_interval(s: &StreamSample) -> doc::Sample {
    let mut m = doc::Sample {
        socket: Some(i64::from(s.socket)),
        ..sample_head(s)
    };
    if let Some(t) = &s.tcp {
        m.retransmits = Some(t.retransmits);
        m.snd_cwnd = whole(t.snd_cwnd);
        m.snd_wnd = whole(t.snd_wnd);
        m.rtt = whole(t.rtt);
        m.rttvar = whole(t.rttvar);
        m.pmtu = whole(t.pmtu);
        m.reorder = Some(t.reorder as f64);
        // Not in iperf3: ECN, only when in play.
        m.tcp_ecn = t.ecn.as_ref().map(tcp_ecn);
    }
    if let Some(u) = &s.udp {
        udp_interval_keys(&mut m, u, s.sender);
    }
    m.omitted = Some(s.omitted);
    m.sender = Some(s.sender);
    m
}

/// A `tcp_ecn` object: what the kernel counts, and nothing it does not.
fn tcp_ecn(e: &TcpEcn) -> doc::TcpEcn {
    doc::TcpEcn {
        negotiated: Some(e.negotiated),
        seen: Some(e.seen),
        acked_under_ece: e.acked_under_ece.and_then(int),
        ..doc::TcpEcn::default()
    }
}

/// A sum's `tcp_ecn` object: how many streams, and the count only where
/// every negotiated stream's kernel gave one.
fn tcp_ecn_sum(e: &TcpEcnSum) -> doc::TcpEcn {
    doc::TcpEcn {
        streams: Some(i64::from(e.streams)),
        negotiated_streams: Some(i64::from(e.negotiated)),
        seen_streams: Some(i64::from(e.seen)),
        acked_under_ece: e.acked_under_ece.and_then(int),
        ..doc::TcpEcn::default()
    }
}

fn sum_interval(s: &StreamSample) -> doc::Sample {
    let mut m = doc::Sample {
        retransmits: s.retransmits,
        // Not in iperf3: the streams' ECN, only when in play.
        tcp_ecn: s.tcp_ecn_sum.as_ref().map(tcp_ecn_sum),
        ..sample_head(s)
    };
    if let Some(u) = &s.udp {
        udp_interval_keys(&mut m, u, s.sender);
    }
    m.omitted = Some(s.omitted);
    m.sender = Some(s.sender);
    m
}

/// One `intervals[]` element.
pub fn interval(r: &IntervalReport) -> doc::Interval {
    doc::Interval {
        streams: r.streams.iter().map(stream_interval).collect(),
        sum: Some(sum_interval(&r.sum)),
        sum_bidir_reverse: r.sum_bidir_reverse.as_ref().map(sum_interval),
        // wirespeed's: `--latency` round trips.
        latency: r.latency.as_ref().map(crate::latency::rtt),
        ..doc::Interval::default()
    }
}

/// One `intervals[]` element as JSON.
pub fn interval_json(r: &IntervalReport) -> Value {
    Value::Object(to_map(&interval(r)))
}

/// The keys every whole-test total opens with.
fn totals_head(socket: Option<i32>, t: &Totals) -> doc::Totals {
    doc::Totals {
        socket: socket.map(i64::from),
        start: Some(t.start),
        end: Some(t.end),
        seconds: Some(t.seconds),
        bytes: whole(t.bytes),
        bits_per_second: Some(t.bits_per_second),
        // Not in iperf3: what the counting side left out with -O.
        omitted_bytes: t.omitted_bytes.and_then(whole),
        ..doc::Totals::default()
    }
}

fn totals(socket: Option<i32>, t: &Totals, tcp: Option<&TcpTotals>, with_retr: bool) -> doc::Totals {
    let mut m = totals_head(socket, t);
    if with_retr {
        m.retransmits = Some(t.retransmits.unwrap_or(0));
        if let Some(tc) = tcp {
            m.reorder = Some(tc.reorder as f64);
            m.max_snd_cwnd = whole(tc.max_snd_cwnd);
            m.max_snd_wnd = whole(tc.max_snd_wnd);
            m.max_rtt = whole(tc.max_rtt);
            m.min_rtt = whole(tc.min_rtt);
            m.mean_rtt = whole(tc.mean_rtt);
        }
    }
    m.sender = Some(t.sender);
    m
}

fn udp_totals(socket: Option<i32>, t: &Totals, u: &UdpTotals, sender: bool, ooo: bool, packets: i64) -> doc::Totals {
    doc::Totals {
        jitter_ms: Some(u.jitter_ms),
        lost_packets: Some(u.lost.unwrap_or(0)),
        packets: Some(packets),
        lost_percent: Some(u.lost_percent),
        out_of_order: ooo.then_some(u.out_of_order),
        // Not in iperf3: datagrams that arrived more than once.
        duplicates: ooo.then_some(u.duplicates),
        sender: Some(sender),
        // Not in iperf3: the ECN field, only when in play, and the L4S
        // exchange where it runs.
        ecn: u.ecn.as_ref().map(ecn_totals),
        l4s: u.l4s.as_ref().map(l4s),
        ..totals_head(socket, t)
    }
}

/// `end.streams[].quic`: QUIC's own numbers (an addition to iperf3's keys).
fn quic(q: &wirespeed_core::events::QuicTotals) -> doc::Quic {
    doc::Quic {
        rtt_us: int(q.rtt_us),
        min_rtt_us: int(q.min_rtt_us),
        cwnd: int(q.cwnd),
        sent_packets: int(q.sent_packets),
        lost_packets: int(q.lost_packets),
        lost_bytes: int(q.lost_bytes),
        congestion_events: int(q.congestion_events),
        congestion: (!q.congestion.is_empty()).then(|| q.congestion.clone()),
        ..doc::Quic::default()
    }
}

/// `end.advice`: wirespeed's window advice (an addition to iperf3's keys).
fn advice(a: &WindowAdvice) -> doc::Advice {
    doc::Advice {
        limited_by: Some(a.limited_by.name().to_string()),
        bits_per_second: Some(a.bits_per_second),
        rtt_us: int(a.rtt_us),
        min_rtt_us: int(a.min_rtt_us),
        bdp_bytes: int(a.bdp_bytes),
        rwnd_limited_percent: Some(a.rwnd_limited_percent),
        sndbuf_limited_percent: Some(a.sndbuf_limited_percent),
        busy_percent: Some(a.busy_percent),
        peer_window_bytes: int(a.peer_window_bytes),
        send_buffer_bytes: int(a.send_buffer_bytes),
        target_bits_per_second: a.target_bits_per_second,
        suggested_window_bytes: a.suggested_window_bytes.and_then(whole),
        suggested_option: a.suggested_option.clone(),
        text: Some(a.text.join("\n")),
        ..doc::Advice::default()
    }
}

/// The `end` object.
pub fn end(s: &Summary) -> doc::End {
    let streams = s
        .streams
        .iter()
        .map(|st| match (&st.udp, s.protocol) {
            // Bytes and rate are the sender's, as iperf3 writes them.
            (Some(u), Protocol::Udp) => doc::EndStream {
                udp: Some(udp_totals(
                    Some(st.socket),
                    &st.sender,
                    u,
                    st.local_sender,
                    true,
                    u.sent_packets.max(u.packets),
                )),
                ..doc::EndStream::default()
            },
            _ => {
                let with_retr = s.has_retransmits;
                // TCP_INFO is the sending host's: a stream this host
                // only received has zeros there, as iperf3 writes.
                let tcp = st.tcp.map(|t| if st.local_sender { t } else { TcpTotals::default() });
                // Not in iperf3: ECN as each end's kernel saw it, on its
                // side (the peer's when a wirespeed peer said), only when
                // in play.
                let snd_ecn = st.sender_tcp_ecn().map(tcp_ecn);
                let rcv_ecn = st.receiver_tcp_ecn().map(tcp_ecn);
                doc::EndStream {
                    sender: Some(doc::Totals {
                        tcp_ecn: snd_ecn,
                        ..totals(Some(st.socket), &st.sender, tcp.as_ref(), with_retr)
                    }),
                    receiver: Some(doc::Totals {
                        tcp_ecn: rcv_ecn,
                        ..totals(Some(st.socket), &st.receiver, None, false)
                    }),
                    // Not in iperf3: a QUIC test's connection, as this end
                    // saw it (the same for every stream: they share it).
                    quic: s.quic.as_ref().map(quic),
                    ..doc::EndStream::default()
                }
            }
        })
        .collect();
    let mut m = doc::End {
        streams,
        ..doc::End::default()
    };
    // A server writes its end before the results exchange: it does not
    // know yet what the client sent.
    let peer_known = s.streams.iter().any(|st| st.peer_known);
    // (sum, sum_sent, sum_received) of one direction.
    type Sums = (Option<doc::Totals>, Option<doc::Totals>, Option<doc::Totals>);
    let dir = |d: &DirectionSums| -> Sums {
        match (&d.udp, s.protocol) {
            (Some(u), Protocol::Udp) => {
                let sum = udp_totals(None, &d.sent, u, d.sent.sender, false, u.sent_packets.max(u.packets));
                let sent = UdpTotals {
                    jitter_ms: 0.0,
                    lost: Some(0),
                    lost_percent: 0.0,
                    ecn: None,
                    l4s: None,
                    ..*u
                };
                let sent_packets = if d.sent.sender || peer_known { u.sent_packets } else { 0 };
                // iperf3 (3.11+) marks these two by what they are, not by
                // which host sent.
                (
                    Some(sum),
                    Some(udp_totals(None, &d.sent, &sent, true, false, sent_packets)),
                    Some(udp_totals(None, &d.received, u, false, false, u.packets)),
                )
            }
            // Retransmits are the sender's: known here when this host
            // sent, or after the results exchange.
            _ => (
                None,
                Some(doc::Totals {
                    tcp_ecn: d.tcp_ecn_sent.as_ref().map(tcp_ecn_sum),
                    ..totals(None, &d.sent, None, s.has_retransmits && (d.sent.sender || peer_known))
                }),
                Some(doc::Totals {
                    tcp_ecn: d.tcp_ecn_received.as_ref().map(tcp_ecn_sum),
                    ..totals(None, &d.received, None, false)
                }),
            ),
        }
    };
    (m.sum, m.sum_sent, m.sum_received) = dir(&s.forward);
    if let Some(r) = &s.reverse {
        (
            m.sum_bidir_reverse,
            m.sum_sent_bidir_reverse,
            m.sum_received_bidir_reverse,
        ) = dir(r);
    }
    m.cpu_utilization_percent = Some(doc::Cpu {
        host_total: Some(s.cpu.host_total),
        host_user: Some(s.cpu.host_user),
        host_system: Some(s.cpu.host_system),
        remote_total: Some(s.cpu.remote_total),
        remote_user: Some(s.cpu.remote_user),
        remote_system: Some(s.cpu.remote_system),
        ..doc::Cpu::default()
    });
    if s.protocol == Protocol::Tcp {
        m.sender_tcp_congestion = s.sender_tcp_congestion.clone();
        // A sending server learns the receiver's only in the exchange,
        // after it wrote its end (iperf3 leaves the key out there).
        if peer_known || !s.local_sends {
            m.receiver_tcp_congestion = s.receiver_tcp_congestion.clone();
        }
    }
    // After iperf3's keys, so their order stays iperf3's.
    m.advice = s.advice.as_ref().map(advice);
    m.latency = s.latency.as_ref().map(crate::latency::summary);
    m
}

/// The `end` object as JSON.
pub fn end_json(s: &Summary) -> Value {
    Value::Object(to_map(&end(s)))
}
