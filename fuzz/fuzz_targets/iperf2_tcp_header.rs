//! The first bytes of an iperf 2 TCP connection: the header's length comes
//! from its own fields and is capped; decoding never panics; what decodes
//! re-encodes to a header of the length the decoder asks for. Also the
//! version ack a client reads back, the burst framing of trip-times
//! streams, and the bounceback message header (its size checked before
//! anything is allocated for it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::iperf2::bounceback::{BB_HEADER_LEN, BB_MAX_SIZE, BB_MIN_SIZE, BbHeader, is_bounceback};
use wirespeed_proto::iperf2::header::MAX_TCP_HEADER;
use wirespeed_proto::iperf2::{BURST_HEADER_LEN, BurstHeader, BurstTracker, ClientAck, ClientHeader, Need};

fuzz_target!(|data: &[u8]| {
    match ClientHeader::need_tcp(data) {
        Ok(Need::More(n)) => assert!(n <= MAX_TCP_HEADER),
        Ok(Need::Done(n)) => {
            assert!(n <= MAX_TCP_HEADER && n <= data.len());
            if let Ok(h) = ClientHeader::decode_tcp(&data[..n]) {
                let enc = h.encode_tcp();
                match ClientHeader::need_tcp(&enc) {
                    Ok(Need::Done(m)) => {
                        assert!(m <= enc.len());
                        assert!(ClientHeader::decode_tcp(&enc[..m]).is_ok());
                    }
                    other => panic!("re-encoded header: {other:?}"),
                }
            }
        }
        Err(_) => assert!(ClientHeader::decode_tcp(data).is_err()),
    }
    match BbHeader::decode(data) {
        Ok(h) => {
            assert!(is_bounceback(data) && (BB_MIN_SIZE..=BB_MAX_SIZE).contains(&h.size));
            let mut b = vec![0u8; BB_HEADER_LEN];
            h.encode(&mut b);
            assert_eq!(BbHeader::decode(&b), Ok(h));
        }
        Err(_) => assert!(data.len() < BB_HEADER_LEN || !is_bounceback(data) || {
            let size = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
            !(BB_MIN_SIZE..=BB_MAX_SIZE).contains(&size)
        }),
    }
    let _ = ClientAck::needed(data);
    if let Some(a) = ClientAck::decode(data) {
        assert_eq!(ClientAck::decode(&a.encode()), Some(a));
    }
    if data.len() >= BURST_HEADER_LEN {
        let _ = BurstHeader::read(&data[..BURST_HEADER_LEN]);
    }
    let step = data.first().map(|b| *b as usize % 97 + 1).unwrap_or(1);
    for mut t in [BurstTracker::new(), BurstTracker::after_header()] {
        for chunk in data.chunks(step) {
            t.feed(chunk, |h| assert!(h.burst_size as usize >= BURST_HEADER_LEN));
        }
    }
});
