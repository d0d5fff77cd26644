//! What arrives on a UDP port: iperf3 hellos and datagram headers (32- and
//! 64-bit counters), iperf 2 datagram headers, settings and server reports,
//! and the receiver's loss accounting fed the sequence numbers they carry.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed::iperf2::hooks::FrameTracker;
use wirespeed::proto::iperf2::{self, ClientHeader, ServerReport};
use wirespeed::proto::iperf3::udp::{self as udp3, DatagramHeader};
use wirespeed::stats::udp::UdpAccounting;

fuzz_target!(|data: &[u8]| {
    let _ = udp3::parse_hello(data);
    let _ = udp3::is_hello_reply(data);
    for wide in [false, true] {
        if let Some(h) = DatagramHeader::read(data, wide) {
            let mut buf = [0u8; 16];
            if h.write(&mut buf, wide) {
                assert_eq!(DatagramHeader::read(&buf, wide).map(|x| x.seq), Some(h.seq));
            }
        }
    }
    for seq64 in [false, true] {
        let _ = iperf2::DatagramHeader::read(data, seq64);
    }
    let _ = ClientHeader::decode_udp(data);
    // An isochronous sender's frame fields, at both versions' offsets, and
    // the receiver's frame accounting fed them.
    let frames = std::sync::Arc::new(wirespeed::stats::FrameCounters::default());
    for at in [iperf2::udp::ISOCH_AT_21, iperf2::udp::ISOCH_AT_22] {
        let _ = iperf2::IsochPayload::read(data, at);
        let mut t = FrameTracker::new(at, true, frames.clone());
        for d in data.chunks(120) {
            t.feed(d, i64::from_le_bytes([d[0]; 8]));
        }
    }
    if let Some(r) = ServerReport::decode(data) {
        let _ = (r.duration_secs(), r.jitter_secs());
        let _ = ServerReport::decode(&r.encode());
    }
    // Every 8 bytes a sequence number (wide and narrow), as a hostile
    // sender could choose them: the counts stay consistent.
    let mut wide = UdpAccounting::new();
    let mut narrow = UdpAccounting::new();
    for (i, w) in data.chunks_exact(8).enumerate() {
        let v = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        wide.on_datagram(v, i as i64);
        let s = narrow.unwrap32(v as u32);
        narrow.on_datagram(s, -(i as i64));
    }
    for a in [&wide, &narrow] {
        assert!(a.jitter.seconds().is_finite());
        let _ = (a.lost(), a.out_of_order(), a.duplicates(), a.max_seq());
    }
});
