//! What the web ports still decode by hand (the rest of a request is
//! hyper's): a path's percent escapes and a query's `key=value` pairs.
//! Any text decodes or is refused without panicking, never longer than
//! it came; pairs that decode re-encode to pairs that decode the same.
//! The decoder's file is compiled here alone (it needs nothing but std),
//! so this target depends on nothing of the web crate but what it fuzzes.
#![no_main]

#[path = "../../crates/http/src/decode.rs"]
mod decode;

use libfuzzer_sys::fuzz_target;

fn encode(s: &str) -> String {
    s.bytes().map(|b| format!("%{b:02X}")).collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for plus in [false, true] {
        if let Some(d) = decode::percent_decode(text, plus) {
            assert!(d.len() <= text.len());
        }
    }
    if let Some(pairs) = decode::parse_pairs(text) {
        let again: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
        let back = decode::parse_pairs(&again.join("&")).expect("encoded pairs decode");
        let kept: Vec<_> = pairs.into_iter().filter(|(k, v)| !(k.is_empty() && v.is_empty())).collect();
        let back: Vec<_> = back.into_iter().filter(|(k, v)| !(k.is_empty() && v.is_empty())).collect();
        assert_eq!(back, kept);
    }
});
