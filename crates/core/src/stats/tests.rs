//! Unit tests of the statistics: intervals, sums, summaries, grid spans.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::*;
use crate::config::Protocol;
use wirespeed_proto::iperf3::{Results, StreamResult};

fn stream(id: u32, role: StreamRole) -> (StreamStats, Arc<StreamCounters>) {
    let c = Arc::new(StreamCounters::default());
    (StreamStats::new(id, id as i32 + 4, role, None, c.clone(), None), c)
}

#[test]
fn intervals_report_deltas_and_sums() {
    let t0 = Instant::now();
    let (a, ca) = stream(1, StreamRole::Send);
    let (b, cb) = stream(3, StreamRole::Send);
    let mut st = TestStats::new(vec![a, b], Protocol::Tcp, 2, false, t0, t0);
    ca.bytes.store(1000, Relaxed);
    cb.bytes.store(3000, Relaxed);
    let r = st.sample(t0 + Duration::from_secs(1), 0.1, false).unwrap();
    assert_eq!(r.streams[0].bytes, 1000);
    assert_eq!(r.sum.bytes, 4000);
    assert!((r.sum.bits_per_second - 32000.0).abs() < 1e-6);
    ca.bytes.store(1500, Relaxed);
    let r = st.sample(t0 + Duration::from_secs(2), 0.1, false).unwrap();
    assert_eq!(r.streams[0].bytes, 500);
    assert_eq!(r.streams[1].bytes, 0);
    assert_eq!(r.sum.start, 1.0);
    assert_eq!(r.sum.end, 2.0);
    // An empty sliver is not reported.
    assert!(st.sample(t0 + Duration::from_millis(2010), 0.1, false).is_none());
}

#[test]
fn samples_aside_leave_the_reported_chain_as_it_was() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let (a, ca) = stream(1, StreamRole::Send);
    let mut st = TestStats::new(vec![a], Protocol::Tcp, 1, false, t0, t0);
    let mut aside = st.aside();
    ca.bytes.store(1000, Relaxed);
    let r = st.sample_aside(&mut aside, at(1000), 0.0, false).unwrap();
    assert_eq!((r.sum.start, r.sum.end, r.sum.bytes), (0.0, 1.0, 1000));
    ca.bytes.store(4000, Relaxed);
    let r = st.sample_aside(&mut aside, at(2000), 0.0, false).unwrap();
    assert_eq!((r.sum.start, r.sum.end, r.sum.bytes), (1.0, 2.0, 3000));
    ca.bytes.store(4500, Relaxed);
    let r = st.sample_aside(&mut aside, at(2500), 0.0, true).unwrap();
    assert_eq!((r.sum.start, r.sum.end, r.sum.bytes), (2.0, 2.5, 500));
    // The reported chain never moved: its one interval is the whole test,
    // as without the samples.
    let r = st.sample(at(2500), 0.0, true).unwrap();
    assert_eq!((r.sum.start, r.sum.end, r.sum.bytes), (0.0, 2.5, 4500));
    let sum = st.summary(at(2500), None, None);
    assert_eq!(sum.local.sum.bytes, 4500);
}

#[test]
fn omit_resets_the_baseline() {
    let t0 = Instant::now();
    let (a, ca) = stream(1, StreamRole::Send);
    let mut st = TestStats::new(vec![a], Protocol::Tcp, 1, true, t0, t0);
    ca.bytes.store(5000, Relaxed);
    let r = st.sample(t0 + Duration::from_secs(1), 0.1, false).unwrap();
    assert!(r.streams[0].omitted);
    st.end_omit(t0 + Duration::from_secs(1));
    ca.bytes.store(7000, Relaxed);
    let r = st.sample(t0 + Duration::from_secs(2), 0.1, false).unwrap();
    assert!(!r.streams[0].omitted);
    assert_eq!(r.streams[0].start, 0.0);
    assert_eq!(r.streams[0].bytes, 2000);
    let res = st.local_results(t0 + Duration::from_secs(2), None);
    assert_eq!(res.streams[0].bytes, 2000);
}

#[test]
fn summary_pairs_local_and_peer_numbers() {
    let t0 = Instant::now();
    let (a, ca) = stream(1, StreamRole::Send);
    let mut st = TestStats::new(vec![a], Protocol::Tcp, 1, false, t0, t0);
    ca.bytes.store(8_000_000, Relaxed);
    st.sample(t0 + Duration::from_secs(2), 0.1, false);
    let peer = Results {
        sender_has_retransmits: -1,
        streams: vec![StreamResult {
            id: 1,
            bytes: 8_000_000,
            retransmits: -1,
            jitter: 0.0,
            errors: 0,
            omitted_errors: Some(0),
            packets: 0,
            omitted_packets: Some(0),
            start_time: 0.0,
            end_time: 2.5,
            out_of_order: None,
            duplicates: None,
            ports: None,
            omitted_bytes: None,
            ecn: None,
            tcp_ecn: None,
        }],
        ..Results::default()
    };
    let s = st.summary(t0 + Duration::from_secs(2), Some(&peer), None);
    assert_eq!(s.streams[0].sender.bytes, 8_000_000);
    assert_eq!(s.streams[0].receiver.bytes, 8_000_000);
    assert_eq!(s.streams[0].receiver.end, 2.5);
    assert!((s.streams[0].receiver.bits_per_second - 8_000_000.0 * 8.0 / 2.5).abs() < 1e-6);
    assert_eq!(s.forward.sent.bytes, 8_000_000);
    assert!(s.local_sends && !s.local_receives);
}

#[test]
fn udp_receiver_summary_counts_loss_after_omit() {
    let t0 = Instant::now();
    let (a, ca) = stream(1, StreamRole::Recv);
    let mut st = TestStats::new(vec![a], Protocol::Udp, 1, true, t0, t0);
    ca.packets.store(10, Relaxed);
    ca.lost.store(1, Relaxed);
    st.end_omit(t0 + Duration::from_secs(1));
    ca.packets.store(110, Relaxed);
    ca.lost.store(6, Relaxed);
    ca.out_of_order.store(2, Relaxed);
    st.sample(t0 + Duration::from_secs(2), 0.1, false);
    let s = st.summary(t0 + Duration::from_secs(2), None, None);
    let u = s.streams[0].udp.unwrap();
    assert_eq!(u.packets, 100);
    assert_eq!(u.lost, Some(5));
    assert_eq!(u.lost_percent, 5.0);
    assert_eq!(u.out_of_order, 2);
}

fn peer_result(packets: i64, errors: i64, drained: bool) -> Results {
    Results {
        streams: vec![StreamResult {
            id: 1,
            bytes: 0,
            retransmits: -1,
            jitter: 0.0,
            errors,
            omitted_errors: Some(0),
            packets,
            omitted_packets: Some(0),
            start_time: 0.0,
            end_time: 1.0,
            out_of_order: Some(7),
            duplicates: Some(2),
            ports: None,
            omitted_bytes: None,
            ecn: None,
            tcp_ecn: None,
        }],
        receiver_drained: drained,
        ..Results::default()
    }
}

/// 100 sent, the receiver saw up to 97 with 5 gaps: the last 3 were
/// dropped too, which only the sender's count can reveal.
#[test]
fn datagrams_lost_after_the_last_one_seen_are_counted_when_the_receiver_drained() {
    let t0 = Instant::now();
    let (a, ca) = stream(1, StreamRole::Send);
    let st = TestStats::new(vec![a], Protocol::Udp, 1, false, t0, t0);
    ca.packets.store(100, Relaxed);
    let u = |drained| {
        st.summary(t0, Some(&peer_result(97, 5, drained)), None).streams[0]
            .udp
            .unwrap()
    };
    let d = u(true);
    assert_eq!((d.lost, d.packets, d.sent_packets), (Some(8), 100, 100));
    // A wirespeed receiver also says what arrived out of order or twice.
    assert_eq!((d.out_of_order, d.duplicates), (7, 2));
    // A C receiver stops counting at TEST_END: its tail may have been in
    // flight, not lost, so its own numbers stand.
    let c = u(false);
    assert_eq!((c.lost, c.packets), (Some(5), 97));
    // A local receiver always drains.
    let (b, cb) = stream(1, StreamRole::Recv);
    let st = TestStats::new(vec![b], Protocol::Udp, 1, false, t0, t0);
    cb.packets.store(97, Relaxed);
    cb.lost.store(5, Relaxed);
    let r = st.summary(t0, Some(&peer_result(100, 0, false)), None).streams[0]
        .udp
        .unwrap();
    assert_eq!((r.lost, r.packets), (Some(8), 100));
    assert_eq!(r.lost_percent, 8.0);
    // Before the exchange (a server) only the local view exists.
    let r = st.summary(t0, None, None).streams[0].udp.unwrap();
    assert_eq!((r.lost, r.packets), (Some(5), 97));
}

/// The two ends end their omit periods a control message apart: the
/// sender after datagram 100, the receiver after 101 (or 99). Nothing was
/// lost, and neither end may call the datagram across the gap lost.
#[test]
fn omit_boundaries_a_datagram_apart_are_no_loss() {
    let t0 = Instant::now();
    for receiver_base in [99, 101] {
        // The sender's view: 300 sent, its boundary at 100.
        let (a, ca) = stream(1, StreamRole::Send);
        let mut st = TestStats::new(vec![a], Protocol::Udp, 1, true, t0, t0);
        ca.packets.store(100, Relaxed);
        st.end_omit(t0 + Duration::from_secs(1));
        ca.packets.store(300, Relaxed);
        let mut peer = peer_result(300, 0, true);
        peer.streams[0].omitted_packets = Some(receiver_base);
        let u = st.summary(t0, Some(&peer), None).streams[0].udp.unwrap();
        assert_eq!((u.lost, u.packets), (Some(0), 300 - receiver_base), "{receiver_base}");
        // The receiver's view: its boundary at `receiver_base`, the
        // sender's at 100.
        let (b, cb) = stream(1, StreamRole::Recv);
        let mut st = TestStats::new(vec![b], Protocol::Udp, 1, true, t0, t0);
        cb.packets.store(receiver_base as u64, Relaxed);
        st.end_omit(t0 + Duration::from_secs(1));
        cb.packets.store(300, Relaxed);
        let mut peer = peer_result(300, 0, false);
        peer.streams[0].omitted_packets = Some(100);
        let r = st.summary(t0, Some(&peer), None).streams[0].udp.unwrap();
        assert_eq!((r.lost, r.packets), (Some(0), 300 - receiver_base), "{receiver_base}");
    }
}

/// A 3.12 sender's count includes its omit period and does not say how
/// much of it that was: no tail is guessed from it.
#[test]
fn no_tail_loss_is_guessed_from_a_312_sender_after_an_omit_period() {
    let t0 = Instant::now();
    let (b, cb) = stream(1, StreamRole::Recv);
    let mut st = TestStats::new(vec![b], Protocol::Udp, 1, true, t0, t0);
    cb.packets.store(100, Relaxed);
    st.end_omit(t0 + Duration::from_secs(1));
    cb.packets.store(300, Relaxed);
    let mut peer = peer_result(300, 0, false);
    peer.streams[0].omitted_packets = None;
    peer.streams[0].omitted_errors = None;
    let r = st.summary(t0, Some(&peer), None).streams[0].udp.unwrap();
    assert_eq!((r.lost, r.packets, r.sent_packets), (Some(0), 200, 200));
}

#[test]
fn udp_sender_trusts_a_312_peer_without_omit_keys_when_nothing_was_omitted() {
    let t0 = Instant::now();
    let (a, ca) = stream(1, StreamRole::Send);
    let mut st = TestStats::new(vec![a], Protocol::Udp, 1, false, t0, t0);
    ca.packets.store(100, Relaxed);
    st.sample(t0 + Duration::from_secs(1), 0.1, false);
    let peer = |errors| {
        let mut r = peer_result(100, errors, false);
        r.streams[0].omitted_errors = None;
        r.streams[0].omitted_packets = None;
        r
    };
    let s = st.summary(t0 + Duration::from_secs(1), Some(&peer(3)), None);
    let u = s.streams[0].udp.unwrap();
    assert_eq!((u.lost, u.packets), (Some(3), 100));
    // With an omit period the omitted losses are unknown, as iperf3 says.
    let (b, cb) = stream(1, StreamRole::Send);
    let mut st = TestStats::new(vec![b], Protocol::Udp, 1, true, t0, t0);
    cb.packets.store(10, Relaxed);
    st.end_omit(t0 + Duration::from_secs(1));
    cb.packets.store(100, Relaxed);
    let s = st.summary(t0 + Duration::from_secs(2), Some(&peer(3)), None);
    let u = s.streams[0].udp.unwrap();
    assert_eq!((u.lost, u.packets), (None, 90));
    let s = st.summary(t0 + Duration::from_secs(2), Some(&peer(0)), None);
    assert_eq!(s.streams[0].udp.unwrap().lost, Some(0));
}

fn detail_stream(id: u32, role: StreamRole, d: Option<Arc<DetailCounters>>) -> (StreamStats, Arc<StreamCounters>) {
    let c = Arc::new(StreamCounters::default());
    let meta = StreamMeta {
        detail: d,
        ..StreamMeta::default()
    };
    (
        StreamStats::new(id, id as i32, role, None, c.clone(), None).with_meta(meta),
        c,
    )
}

#[test]
fn intervals_carry_call_counts_bins_and_latency_deltas() {
    let t0 = Instant::now();
    let fa = DetailCounters::new(800, true);
    let (a, ca) = detail_stream(1, StreamRole::Recv, Some(fa.clone()));
    let (b, cb) = detail_stream(2, StreamRole::Recv, None);
    let mut st = TestStats::new(vec![a, b], Protocol::Tcp, 2, false, t0, t0);
    ca.bytes.store(1000, Relaxed);
    ca.blocks.store(10, Relaxed);
    cb.bytes.store(3000, Relaxed);
    cb.blocks.store(3, Relaxed);
    fa.count_read(100);
    fa.count_read(750);
    fa.record_latency(0.002, 800);
    fa.record_latency(0.004, 800);
    let r = st.sample(t0 + Duration::from_secs(1), 0.0, false).unwrap();
    assert_eq!(r.streams[0].extras.calls, 10);
    assert_eq!(r.streams[0].extras.read_bins, Some([0, 1, 0, 0, 0, 0, 0, 1]));
    let lat = r.streams[0].extras.latency.unwrap();
    assert_eq!(lat.count, 2);
    assert!((lat.mean - 0.003).abs() < 1e-12);
    // 1000 bytes in 1 s over 3 ms: NetPwr 1000/0.003e6, in flight 3 bytes.
    assert!((r.streams[0].extras.net_power.unwrap() - 1000.0 / 0.003 * 1e-6).abs() < 1e-9);
    assert!((r.streams[0].extras.in_flight.unwrap() - 3.0).abs() < 1e-9);
    assert_eq!(r.streams[1].extras.read_bins, None);
    assert_eq!(r.sum.bytes, 4000);
    assert_eq!(r.sum.extras.calls, 13);
    assert!(r.pairs.is_empty());
    // The next interval starts from zero.
    ca.blocks.store(12, Relaxed);
    fa.count_read(100);
    let r = st.sample(t0 + Duration::from_secs(2), 0.0, false).unwrap();
    assert_eq!(r.streams[0].extras.calls, 2);
    assert_eq!(r.streams[0].extras.read_bins, Some([0, 1, 0, 0, 0, 0, 0, 0]));
    assert_eq!(r.streams[0].extras.latency.unwrap().count, 0);
    // The end report has whole-test totals.
    let e = st.summary(t0 + Duration::from_secs(2), None, None).local;
    assert_eq!(e.streams[0].extras.calls, 12);
    assert_eq!(e.streams[0].extras.latency.unwrap().count, 2);
    assert_eq!(e.sum.bytes, 4000);
}

fn grid(ms: u64) -> TestStats {
    let t0 = Instant::now();
    TestStats::new(Vec::new(), Protocol::Tcp, 1, false, t0, t0).presented(Presentation {
        grid: Some(ms as f64 / 1000.0),
        ..Presentation::default()
    })
}

#[test]
fn interval_reports_sit_on_the_grid() {
    let mut st = grid(500);
    assert_eq!(st.span(0.0, 0.5007, false, None), (0.0, 0.5));
    assert_eq!(st.span(0.5, 1.0011, false, None), (0.5, 1.0));
    // A late tick that covers two steps.
    assert_eq!(st.span(1.0, 2.0004, false, None), (1.0, 2.0));
    assert_eq!(st.span(2.0, 2.2, true, None), (2.0, 2.2));
    let mut st = grid(1000);
    assert_eq!(st.span(0.0, 1.0, false, None), (0.0, 1.0));
    assert_eq!(st.span(1.0, 2.004, true, None), (1.0, 2.0));
    // The streams ended inside the step.
    let mut st = grid(500);
    assert_eq!(st.span(0.0, 0.5, false, None), (0.0, 0.5));
    assert_eq!(st.span(0.5, 1.2, false, Some(0.91)), (0.5, 0.91));
    // Without a grid, the instants the samples were taken.
    let t0 = Instant::now();
    let mut st = TestStats::new(Vec::new(), Protocol::Tcp, 1, false, t0, t0);
    assert_eq!(st.span(0.2, 1.234, false, None), (0.2, 1.234));
}

#[test]
fn full_duplex_directions_pair_up_by_id() {
    let t0 = Instant::now();
    let (a, ca) = detail_stream(1, StreamRole::Send, None);
    let (b, cb) = detail_stream(1, StreamRole::Recv, None);
    let mut st = TestStats::new(vec![a, b], Protocol::Tcp, 1, false, t0, t0);
    ca.bytes.store(100, Relaxed);
    cb.bytes.store(50, Relaxed);
    let r = st.sample(t0 + Duration::from_secs(1), 0.0, false).unwrap();
    assert_eq!(r.pairs.len(), 1);
    assert_eq!(r.pairs[0].bytes, 150);
    assert_eq!(r.pairs[0].id, 1);
}

/// A UDP sender's peer claims more CE datagrams than were sent: the
/// claim is set aside (and kept to be said), every other number stands.
#[test]
fn impossible_ecn_counts_from_a_peer_are_not_believed() {
    use crate::events::{Ecn, EcnCounts};
    let t0 = Instant::now();
    let (mut a, ca) = stream(1, StreamRole::Send);
    a.meta.ecn_sent = Some(Ecn::Ect1);
    let mut st = TestStats::new(vec![a], Protocol::Udp, 1, false, t0, t0);
    ca.packets.store(100, Relaxed);
    ca.bytes.store(100_000, Relaxed);
    st.sample(t0 + Duration::from_secs(1), 0.1, false);
    let mut peer = peer_result(100, 5, true);
    let bogus = EcnCounts {
        ect1: 10,
        ce: 500,
        ..EcnCounts::default()
    };
    peer.streams[0].ecn = Some((Some(Ecn::Ect1), bogus));
    let s = st.summary(t0 + Duration::from_secs(1), Some(&peer), None);
    let u = s.streams[0].udp.unwrap();
    let e = u.ecn.unwrap();
    assert_eq!((e.impossible, e.arrived, e.verdict), (Some(bogus), None, None));
    assert_eq!((e.sent, e.sent_packets), (Some(Ecn::Ect1), Some(100)));
    assert_eq!((u.packets, u.lost, u.sent_packets), (100, Some(5), 100));
    assert_eq!(s.forward.udp.unwrap().ecn.unwrap().impossible, Some(bogus));
    // Counts that can be are believed.
    let fine = EcnCounts {
        ect1: 90,
        ce: 5,
        ..EcnCounts::default()
    };
    peer.streams[0].ecn = Some((Some(Ecn::Ect1), fine));
    let e = st.summary(t0 + Duration::from_secs(1), Some(&peer), None).streams[0]
        .udp
        .unwrap()
        .ecn
        .unwrap();
    assert_eq!((e.arrived, e.impossible), (Some(fine), None));
    assert_eq!(e.verdict.unwrap().ce, 5);
}

#[test]
fn tcp_ecn_only_when_in_play_and_counts_only_what_the_kernel_counts() {
    use crate::events::TcpEcn;
    use wirespeed_sys::socket::{TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN, TcpInfo};
    let info = |options: u8, delivered_ce: Option<u32>| TcpInfo {
        options,
        delivered_ce,
        ..TcpInfo::default()
    };
    // Not negotiated and not asked: nothing, whatever the counter says.
    assert_eq!(super::stream::tcp_ecn(&info(0, Some(0)), false, true, 0), None);
    // Asked and refused: said once, no counts (not zeros).
    assert_eq!(
        super::stream::tcp_ecn(&info(0, Some(0)), true, true, 0),
        Some(TcpEcn::default())
    );
    // Negotiated: a sender's acks under ECE since the given read.
    let e = super::stream::tcp_ecn(&info(TCPI_OPT_ECN, Some(179)), false, true, 20).unwrap();
    assert_eq!((e.negotiated, e.seen, e.acked_under_ece), (true, false, Some(159)));
    // A receiver counts none; it says whether ECT arrived.
    let e = super::stream::tcp_ecn(&info(TCPI_OPT_ECN | TCPI_OPT_ECN_SEEN, Some(0)), false, false, 0).unwrap();
    assert_eq!((e.negotiated, e.seen, e.acked_under_ece), (true, true, None));
    // A kernel whose TCP_INFO lacks the counter: negotiated, nothing counted.
    let e = super::stream::tcp_ecn(&info(TCPI_OPT_ECN, None), false, true, 0).unwrap();
    assert_eq!(e.acked_under_ece, None);
}
