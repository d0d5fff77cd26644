//! The iperf3 results JSON a peer sends at the end of a test: decoding
//! never panics, and what decodes re-encodes to something that decodes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::iperf3::Results;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = Results::decode(data) else { return };
    let again = r.encode();
    let back = Results::decode(again.as_bytes()).expect("our own encoding decodes");
    assert_eq!(back.streams.len(), r.streams.len());
});
