//! What arrives on a UDP port: iperf3 hellos and datagram headers (32- and
//! 64-bit counters), iperf 2 datagram headers, settings, isochronous frame
//! fields and server reports. (The receiver's loss and frame accounting
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
    if let Some(r) = ServerReport::decode(data) {
        let _ = (r.duration_secs(), r.jitter_secs());
        let _ = ServerReport::decode(&r.encode());
    }
});
