//! The iperf3 control connection as a server reads it: the framer (state
//! bytes, length-prefixed JSON under a cap, SERVER_ERROR ints) fed in
//! arbitrary pieces, and both state machines fed arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::iperf3::Framer;
use wirespeed_proto::iperf3::machine::{ClientMachine, ServerMachine};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let mut f = Framer::new();
    // Feed in chunks whose sizes come from the first byte.
    let step = (split as usize % 17) + 1;
    for (i, chunk) in rest.chunks(step).enumerate() {
        f.push(chunk);
        match i % 4 {
            0 => {
                let _ = f.take_byte();
            }
            1 => {
                if let Ok(Some(body)) = f.take_json(8192) {
                    assert!(body.len() <= 8192);
                }
            }
            2 => {
                let _ = f.take_i32();
            }
            _ => {
                let _ = f.json_needs(1 << 20);
            }
        }
    }
    let mut s = ServerMachine::new();
    s.running();
    let mut c = ClientMachine::new();
    for &b in rest {
        if s.on_byte(b).is_err() {
            s = ServerMachine::new();
            s.running();
        }
        if c.on_byte(b).is_err() {
            c = ClientMachine::new();
        }
    }
});
