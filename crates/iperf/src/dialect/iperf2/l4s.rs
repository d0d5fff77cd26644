//! iperf 2.2.1's UDP L4S exchange (`--udp-l4s`) over sockets: a receiver
//! acks what arrived, once per batch of datagrams read, with its counts
//! since the flow began (`wirespeed_proto::iperf2::l4s`).

use std::net::UdpSocket;

use wirespeed_core::clock::mono_ns;
use wirespeed_proto::iperf2::DatagramHeader;
use wirespeed_proto::iperf2::l4s::{Forward, Receiver};

/// Our clock as the exchange carries it: microseconds, 32 bits, wrapping.
pub(crate) fn now_us() -> u32 {
    (mono_ns() / 1000) as u32
}

/// A receiver's side: counts each L4S datagram and acks after each batch.
pub(crate) struct L4sAcker {
    sock: UdpSocket,
    rx: Receiver,
    /// Datagrams counted since the last ack.
    unacked: bool,
}

impl L4sAcker {
    /// Acks go out on `sock` (connected to the sender).
    pub fn new(sock: UdpSocket) -> L4sAcker {
        L4sAcker {
            sock,
            rx: Receiver::default(),
            unacked: false,
        }
    }

    /// Counts a datagram that arrived with TOS byte `tos`. The sender's
    /// FIN (a negative sequence number) is not an L4S datagram: it is
    /// neither counted nor acked, so what the sender reads after its FIN is
    /// the server's report.
    pub fn on_datagram(&mut self, d: &[u8], tos: Option<u8>) {
        if DatagramHeader::read(d, true).is_none_or(|h| h.is_fin()) {
            return;
        }
        if let Ok(f) = Forward::decode(d) {
            self.rx.on_datagram(&f, tos, now_us());
            self.unacked = true;
        }
    }

    /// Sends the ack for what arrived since the last one.
    pub fn ack(&mut self) {
        if std::mem::take(&mut self.unacked) {
            // A lost ack is made good by the next: the counts are cumulative.
            let _ = self.sock.send(&self.rx.ack(now_us()).encode());
        }
    }
}
