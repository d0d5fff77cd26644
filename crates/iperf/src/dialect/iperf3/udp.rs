//! iperf3's UDP datagram header as the engine's stream loops write and
//! read it: seconds, microseconds and a 32- or 64-bit sequence number
//! (the codec is `proto::iperf3::udp`).

use std::sync::Arc;

use wirespeed_core::config::{Protocol, TestParams};
use wirespeed_core::engine::StreamExtras;
use wirespeed_core::engine::udp::{DatagramFormat, UdpStart};
use wirespeed_proto::iperf3::udp::DatagramHeader;

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
}
