//! The shared port's dialect sniffer: any first bytes of a connection or
//! first datagram classify without panicking; a verdict, once reached,
//! holds whatever bytes follow; "more" never asks past the cookie; an
//! iperf3 verdict is the cookie that was read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirespeed_proto::iperf3::COOKIE_LEN;
use wirespeed_proto::sniff::{self, Tcp};

fuzz_target!(|data: &[u8]| {
    let whole = sniff::tcp(data);
    // Every prefix: what it says is consistent with the whole input.
    for n in 0..=data.len().min(COOKIE_LEN + 1) {
        match sniff::tcp(&data[..n]) {
            Tcp::More(k) => {
                assert!(k >= 1 && n + k <= COOKIE_LEN, "more {k} after {n}");
            }
            decided => assert_eq!(decided, whole, "verdict after {n} bytes changed"),
        }
    }
    match whole {
        Tcp::Iperf3(c) => assert_eq!(&c.to_wire()[..], &data[..COOKIE_LEN]),
        Tcp::More(_) => assert!(data.len() < COOKIE_LEN),
        Tcp::Iperf2 | Tcp::Junk => {}
    }
    let _ = sniff::udp(data);
});
