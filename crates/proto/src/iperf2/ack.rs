//! The server's version ack (`client_hdr_ack`): 28 bytes, or 52 with the
//! trip-times clock-check timestamps. A 2.1.8 server sends it when the
//! client header has EXTEND without VERSION2, or asks with V2PEERDETECT.

use super::flags::{self, CLIENTHDRACK};
use super::{be32, put32};

/// Length of the plain ack.
pub const ACK_LEN: usize = 28;
/// Length of the ack with timestamps.
pub const ACK_LEN_TIMES: usize = 52;

/// A decoded or to-be-sent ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientAck {
    /// Sender's `version_u`.
    pub version_u: u32,
    /// Sender's `version_l`.
    pub version_l: u32,
    /// With trip-times: client start (echo), server accept, server ack-send,
    /// each `(sec, usec)`.
    pub times: Option<[(u32, u32); 3]>,
}

impl ClientAck {
    /// Does a client header ask the server for an ack?
    pub fn wanted(header_flags: u32) -> bool {
        (header_flags & flags::EXTEND != 0 && header_flags & flags::VERSION2 == 0)
            || header_flags & flags::V2PEERDETECT != 0
    }

    /// The bytes on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let len = if self.times.is_some() { ACK_LEN_TIMES } else { ACK_LEN };
        let mut b = vec![0u8; len];
        put32(&mut b, 0, CLIENTHDRACK);
        put32(&mut b, 4, len as u32);
        put32(&mut b, 12, self.version_u);
        put32(&mut b, 16, self.version_l);
        if let Some(t) = &self.times {
            for (i, (s, u)) in t.iter().enumerate() {
                put32(&mut b, 28 + i * 8, *s);
                put32(&mut b, 32 + i * 8, *u);
            }
        }
        b
    }

    /// Bytes still needed to decide, given what arrived (the length word
    /// says 28 or 52).
    pub fn needed(prefix: &[u8]) -> usize {
        if prefix.len() < 8 {
            return ACK_LEN;
        }
        match be32(prefix, 4) as usize {
            ACK_LEN_TIMES => ACK_LEN_TIMES,
            _ => ACK_LEN,
        }
    }

    /// Decodes an ack; `None` if the bytes are not one.
    pub fn decode(b: &[u8]) -> Option<ClientAck> {
        if b.len() < ACK_LEN || be32(b, 0) != CLIENTHDRACK {
            return None;
        }
        let len = be32(b, 4) as usize;
        if len != ACK_LEN && len != ACK_LEN_TIMES {
            return None;
        }
        let times = if len == ACK_LEN_TIMES {
            if b.len() < ACK_LEN_TIMES {
                return None;
            }
            let p = |i: usize| (be32(b, 28 + i * 8), be32(b, 32 + i * 8));
            Some([p(0), p(1), p(2)])
        } else {
            None
        };
        Some(ClientAck {
            version_u: be32(b, 12),
            version_l: be32(b, 16),
            times,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf2::{VERSION_L, VERSION_U};

    #[test]
    fn plain_ack_matches_the_capture() {
        let a = ClientAck {
            version_u: VERSION_U,
            version_l: VERSION_L,
            times: None,
        };
        let wire: Vec<u8> = [2u32, 0x1c, 0, 0x0002_0001, 0x0008_0003, 0, 0]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
        assert_eq!(a.encode(), wire);
        assert_eq!(ClientAck::decode(&wire), Some(a));
        assert_eq!(ClientAck::needed(&wire[..8]), 28);
    }

    #[test]
    fn timestamped_ack_round_trips() {
        let a = ClientAck {
            version_u: VERSION_U,
            version_l: VERSION_L,
            times: Some([(1, 2), (3, 4), (5, 6)]),
        };
        let w = a.encode();
        assert_eq!(w.len(), 52);
        assert_eq!(ClientAck::needed(&w[..8]), 52);
        assert_eq!(ClientAck::decode(&w), Some(a));
        assert_eq!(ClientAck::decode(&w[..40]), None);
    }

    #[test]
    fn which_headers_get_an_ack() {
        assert!(ClientAck::wanted(0x4001_0078));
        assert!(!ClientAck::wanted(0x4401_0078));
        assert!(ClientAck::wanted(0x4601_0078));
        assert!(!ClientAck::wanted(0x8000_0000));
        assert_eq!(ClientAck::decode(&[0u8; 28]), None);
    }
}
