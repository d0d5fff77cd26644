//! What arrives on a UDP port: iperf3 hellos and datagram headers (32- and
//! 64-bit counters), iperf 2 datagram headers, settings, isochronous frame
//! fields, server reports, and 2.2.1's L4S fields and acks. (The receiver's loss and frame accounting
//! that the tool feeds them is held by property tests in the tool's tests.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::iperf2::{self, ClientHeader, ServerReport};
use wirespeed_proto::iperf3::udp::{self as udp3, DatagramHeader};

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
    // An isochronous sender's frame fields, at both versions' offsets.
    for at in [iperf2::udp::ISOCH_AT_21, iperf2::udp::ISOCH_AT_22] {
        let _ = iperf2::IsochPayload::read(data, at);
    }
    // --udp-l4s: the datagram's fields, the ack (and the counts a
    // receiver and the sender's controller keep from them).
    let _ = iperf2::l4s::announces(data);
    if let Ok(f) = iperf2::l4s::Forward::decode(data) {
        let mut r = iperf2::l4s::Receiver::default();
        r.on_datagram(&f, data.first().copied(), f.sender_ts);
        let _ = r.ack(f.echoed_ts);
    }
    if let Ok(a) = iperf2::l4s::Ack::decode(data) {
        assert_eq!(iperf2::l4s::Ack::decode(&a.encode()), Ok(a));
        let mut p = iperf2::l4s::Prague::new(1470, 1e6, 12_500.0, 1e9, 1);
        let _ = p.on_ack(&a, a.rx_ts);
        assert!(p.rate().is_finite() && p.window().is_finite());
    }
    if let Some(r) = ServerReport::decode(data) {
        let _ = (r.duration_secs(), r.jitter_secs());
        let _ = ServerReport::decode(&r.encode());
    }
});
