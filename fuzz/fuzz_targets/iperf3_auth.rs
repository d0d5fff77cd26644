//! What an iperf3 server's authentication reads from the network and from
//! its users file: the decrypted token (user, password, timestamp), base64
//! (the token travels as base64 in the parameters), and the users file's
//! lines looked up. Every outcome is a value or a refusal, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::iperf3::auth::{base64_decode, base64_encode, lookup, parse_token, user_lines};

fuzz_target!(|data: &[u8]| {
    let _ = parse_token(data);
    let text = String::from_utf8_lossy(data);
    if let Some(bytes) = base64_decode(&text) {
        // What decodes encodes back to something that decodes the same.
        assert_eq!(base64_decode(&base64_encode(&bytes)), Some(bytes));
    }
    for _ in user_lines(&text) {}
    let _ = lookup(&text, "mario", "00");
    if let Some((user, rest)) = text.split_once(',') {
        let _ = lookup(&text, user, rest);
    }
});
