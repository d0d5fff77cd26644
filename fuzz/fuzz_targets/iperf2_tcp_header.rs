//! The first bytes of an iperf 2 TCP connection: the header's length comes
//! from its own fields and is capped; decoding never panics; what decodes
//! re-encodes to a header of the length the decoder asks for. Also the
//! version ack a client reads back, and the burst framing of trip-times
//! streams.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed::proto::iperf2::header::MAX_TCP_HEADER;
use wirespeed::proto::iperf2::{BURST_HEADER_LEN, BurstHeader, BurstTracker, ClientAck, ClientHeader, Need};

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
