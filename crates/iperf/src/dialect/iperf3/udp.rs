//! iperf3's UDP datagram header as the engine's stream loops write and
//! read it: seconds, microseconds and a 32- or 64-bit sequence number
//! (the codec is `proto::iperf3::udp`).

use std::sync::Arc;

use wirespeed_core::config::{Protocol, TestParams};
use wirespeed_core::engine::StreamExtras;
use wirespeed_core::engine::udp::{DatagramFormat, UdpStart};
use wirespeed_proto::iperf3::udp::{COOKIE_HELLO_LEN, DatagramHeader, HELLO, HELLO_REPLY};

/// What an iperf3 stream adds to the engine's: its datagram header when
/// the test is UDP.
pub fn extras(params: &TestParams) -> StreamExtras {
    StreamExtras {
        udp_format: (params.protocol == Protocol::Udp).then(|| {
            Arc::new(Iperf3Format {
                wide: params.udp_counters_64bit,
            }) as Arc<dyn UdpStart>
        }),
        ..StreamExtras::default()
    }
}

/// iperf3's header: seconds, microseconds, 32- or 64-bit sequence number.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Iperf3Format {
    /// 64-bit sequence numbers (`--udp-counters-64bit`).
    pub wide: bool,
}

impl DatagramFormat for Iperf3Format {
    fn header_len(&self) -> usize {
        DatagramHeader::len(self.wide)
    }

    #[inline]
    fn stamp(&self, buf: &mut [u8], seq: u64, sent_ns: u64) {
        DatagramHeader::at(sent_ns, seq).write(buf, self.wide);
    }

    #[inline]
    fn parse(&self, buf: &[u8]) -> Option<(u64, u64)> {
        DatagramHeader::read(buf, self.wide).map(|h| (h.seq, h.sent_ns()))
    }

    fn narrow(&self) -> bool {
        !self.wide
    }

    /// A client's hello repeated on a stream the server already has (the
    /// reply was lost: the client sends it again every second and waits)
    /// gets the reply again, from the stream's socket, where the kernel
    /// now delivers it. Never data: no header starts with `"9876"` today
    /// (it would be a send time in the year 2000).
    #[inline]
    fn answer(&self, buf: &[u8]) -> Option<&'static [u8]> {
        let hello = (buf.len() == COOKIE_HELLO_LEN || buf.len() == HELLO.len()) && buf[..4] == HELLO;
        hello.then_some(&HELLO_REPLY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_proto::iperf3::udp::cookie_hello;

    #[test]
    fn a_repeated_hello_is_answered_and_data_is_not() {
        let f = Iperf3Format { wide: false };
        assert_eq!(f.answer(&cookie_hello(&[b'a'; 37])), Some(&HELLO_REPLY[..]));
        assert_eq!(f.answer(&HELLO), Some(&HELLO_REPLY[..]));
        // Data of every length, stamped now, is never taken for one.
        let now = wirespeed_core::clock::wall_ns() as u64;
        for len in [4, 12, 41, 1400] {
            let mut d = vec![0u8; len.max(12)];
            f.stamp(&mut d, 7, now);
            assert_eq!(f.answer(&d[..len]), None, "{len}");
        }
        assert_eq!(f.answer(b"6789"), None);
    }
}
