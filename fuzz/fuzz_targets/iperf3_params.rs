//! The iperf3 parameter JSON a server receives: decoding and range checks
//! never panic, and what decodes and validates survives a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::iperf3::params::{Limits, ParamsExtras, decode_params, encode_params, validate};

fuzz_target!(|data: &[u8]| {
    let Ok(p) = decode_params(data) else { return };
    let open = Limits {
        max_streams: 10_000,
        max_duration: None,
        bitrate_limit: 0,
    };
    let tight = Limits {
        max_streams: 4,
        max_duration: Some(std::time::Duration::from_secs(10)),
        bitrate_limit: 1_000_000,
    };
    let _ = validate(&p, &tight);
    if validate(&p, &open).is_ok() {
        let again = encode_params(
            &p.params,
            &ParamsExtras {
                authtoken: p.authtoken.as_deref(),
                client_version: "fuzz",
            },
        );
        let back = decode_params(again.as_bytes()).expect("our own encoding decodes");
        assert_eq!(back.params.streams, p.params.streams);
        assert_eq!(back.params.protocol, p.params.protocol);
        assert_eq!(back.params.direction, p.params.direction);
    }
});
