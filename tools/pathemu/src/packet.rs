//! What the emulator needs to know about a packet (its family, transport
//! and UDP payload length), and the ICMP echo requests that prove a path
//! works before it is announced ready.
//!
//! Parsing never trusts a length field beyond the bytes actually read:
//! anything truncated or unknown is "other", never a panic.

/// Transport classes counted apart.
pub const PROTOS: [&str; 4] = ["tcp", "udp", "icmp", "other"];
/// Counter rows: IPv4 × PROTOS, IPv6 × PROTOS, then one row for packets
/// that are not IP at all or too short to be (counted as "other").
pub const CLASSES: usize = 9;
/// The row of packets that are not (whole) IP headers.
pub const NON_IP: usize = 8;

/// What the counters need from one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// Counter row (see [`CLASSES`]).
    pub class: u8,
    /// UDP payload length from the UDP header, when the packet carries
    /// one (a first or only fragment).
    pub udp_len: Option<u16>,
}

fn be16(p: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*p.get(at)?, *p.get(at + 1)?]))
}

fn proto_index(proto: u8, icmp: u8) -> u8 {
    match proto {
        6 => 0,
        17 => 1,
        p if p == icmp => 2,
        _ => 3,
    }
}

/// Classifies one packet as read from a TUN device (no prefix).
pub fn classify(p: &[u8]) -> Kind {
    let non_ip = Kind {
        class: NON_IP as u8,
        udp_len: None,
    };
    match p.first().map(|b| b >> 4) {
        Some(4) => {
            let ihl = (p[0] & 0x0f) as usize * 4;
            if p.len() < 20 || ihl < 20 || ihl > p.len() {
                return non_ip;
            }
            let proto = p[9];
            let first = be16(p, 6).is_some_and(|f| f & 0x1fff == 0);
            Kind {
                class: proto_index(proto, 1),
                udp_len: udp_len(p, proto, ihl, first),
            }
        }
        Some(6) => {
            if p.len() < 40 {
                return non_ip;
            }
            let (proto, at, first) = ipv6_transport(p);
            Kind {
                class: 4 + proto_index(proto, 58),
                udp_len: at.and_then(|at| udp_len(p, proto, at, first)),
            }
        }
        _ => non_ip,
    }
}

fn udp_len(p: &[u8], proto: u8, at: usize, first: bool) -> Option<u16> {
    if proto != 17 || !first {
        return None;
    }
    be16(p, at + 4).and_then(|l| l.checked_sub(8))
}

/// The upper-layer protocol of an IPv6 packet past its extension headers,
/// where its header starts (if within the packet), and whether this is a
/// first or only fragment.
fn ipv6_transport(p: &[u8]) -> (u8, Option<usize>, bool) {
    let mut next = p[6];
    let mut at = 40usize;
    let mut first = true;
    // A packet can chain extension headers without end; a handful is all a
    // real one carries.
    for _ in 0..8 {
        let len = match next {
            0 | 43 | 60 => p.get(at + 1).map(|l| (*l as usize + 1) * 8),
            44 => {
                first = be16(p, at + 2).is_some_and(|f| f >> 3 == 0);
                Some(8)
            }
            51 => p.get(at + 1).map(|l| (*l as usize + 2) * 4),
            _ => break,
        };
        let (Some(len), Some(n)) = (len, p.get(at)) else {
            return (255, None, first);
        };
        next = *n;
        at += len;
    }
    (next, (at <= p.len()).then_some(at), first)
}

/// The ECN field of an IP packet (the TOS byte's or the traffic class's
/// low two bits), if it is a whole IP header.
pub fn ecn(p: &[u8]) -> Option<u8> {
    match p.first().map(|b| b >> 4) {
        Some(4) if p.len() >= 20 && (p[0] & 0x0f) >= 5 => Some(p[1] & 3),
        Some(6) if p.len() >= 40 => Some((p[1] >> 4) & 3),
        _ => None,
    }
}

/// Sets the ECN field of an IP packet to `v` (0-3). An IPv4 header's
/// checksum is updated to match (RFC 1624); IPv6 has none. False if `p`
/// is not a whole IP header.
pub fn set_ecn(p: &mut [u8], v: u8) -> bool {
    match p.first().map(|b| b >> 4) {
        Some(4) if p.len() >= 20 && (p[0] & 0x0f) >= 5 => {
            let old = u16::from_be_bytes([p[0], p[1]]);
            p[1] = (p[1] & !3) | (v & 3);
            let new = u16::from_be_bytes([p[0], p[1]]);
            // HC' = ~(~HC + ~m + m'), in one's complement.
            let hc = u16::from_be_bytes([p[10], p[11]]);
            let mut sum = (!hc) as u32 + (!old) as u32 + new as u32;
            while sum >> 16 != 0 {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            true
        }
        Some(6) if p.len() >= 40 => {
            p[1] = (p[1] & !0x30) | ((v & 3) << 4);
            true
        }
        _ => false,
    }
}

/// The Internet checksum of `parts` laid end to end (each part of even
/// length but the last).
fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for part in parts {
        let mut chunks = part.chunks_exact(2);
        for c in &mut chunks {
            sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        }
        if let [last] = chunks.remainder() {
            sum += (*last as u32) << 8;
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An ICMP (or ICMPv6) echo request from `src` to `dst` with `ident`, for
/// writing into the TUN device on `dst`'s side.
pub fn echo_request(src: std::net::IpAddr, dst: std::net::IpAddr, ident: u16) -> Vec<u8> {
    use std::net::IpAddr;
    let payload = b"pathemu ready probe";
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut icmp = vec![8, 0, 0, 0];
            icmp.extend_from_slice(&ident.to_be_bytes());
            icmp.extend_from_slice(&1u16.to_be_bytes());
            icmp.extend_from_slice(payload);
            let c = checksum(&[&icmp]);
            icmp[2..4].copy_from_slice(&c.to_be_bytes());
            let total = (20 + icmp.len()) as u16;
            let mut ip = vec![0x45, 0];
            ip.extend_from_slice(&total.to_be_bytes());
            ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 1, 0, 0]);
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            let c = checksum(&[&ip]);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            ip.extend_from_slice(&icmp);
            ip
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut icmp = vec![128, 0, 0, 0];
            icmp.extend_from_slice(&ident.to_be_bytes());
            icmp.extend_from_slice(&1u16.to_be_bytes());
            icmp.extend_from_slice(payload);
            let len = (icmp.len() as u32).to_be_bytes();
            let c = checksum(&[&s.octets(), &d.octets(), &len, &[0, 0, 0, 58], &icmp]);
            icmp[2..4].copy_from_slice(&c.to_be_bytes());
            let mut ip = vec![0x60, 0, 0, 0];
            ip.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
            ip.extend_from_slice(&[58, 64]);
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            ip.extend_from_slice(&icmp);
            ip
        }
        _ => Vec::new(),
    }
}

/// Whether `p` is the echo reply to [`echo_request`]'s `ident`.
pub fn is_echo_reply(p: &[u8], ident: u16) -> bool {
    let id = ident.to_be_bytes();
    match p.first().map(|b| b >> 4) {
        Some(4) => {
            let ihl = (p[0] & 0x0f) as usize * 4;
            p.len() >= ihl + 8 && p[9] == 1 && p[ihl] == 0 && p[ihl + 4..ihl + 6] == id
        }
        Some(6) => p.len() >= 48 && p[6] == 58 && p[40] == 129 && p[44..46] == id,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(proto: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0];
        p.extend_from_slice(&frag.to_be_bytes());
        p.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        p.extend_from_slice(l4);
        p
    }

    #[test]
    fn ipv4_transports_and_udp_lengths() {
        let udp = [0, 1, 0, 2, 0x05, 0x80, 0, 0];
        assert_eq!(
            classify(&v4(17, 0, &udp)),
            Kind {
                class: 1,
                udp_len: Some(1400)
            }
        );
        assert_eq!(classify(&v4(6, 0, &[0; 20])).class, 0);
        assert_eq!(classify(&v4(1, 0, &[0; 8])).class, 2);
        assert_eq!(classify(&v4(47, 0, &[])).class, 3);
        // A later fragment has no UDP header to read.
        assert_eq!(
            classify(&v4(17, 0x20b9, &udp)),
            Kind {
                class: 1,
                udp_len: None
            }
        );
        // A UDP header cut short, or one whose length is below its own size.
        assert_eq!(classify(&v4(17, 0, &udp[..5])).udp_len, None);
        assert_eq!(classify(&v4(17, 0, &[0, 1, 0, 2, 0, 7, 0, 0])).udp_len, None);
    }

    #[test]
    fn odd_packets_are_other_and_never_panic() {
        for p in [
            &[][..],
            &[0x45],
            &[0x4f; 19],
            &[0x46; 20],
            &[0x60; 39],
            &[0x10; 100],
            &[0xff; 3],
        ] {
            assert_eq!(classify(p).class as usize, NON_IP, "{p:?}");
        }
        // Extension headers that run off the end of the packet.
        let mut p = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
        p.extend_from_slice(&[0; 32]);
        p.extend_from_slice(&[0, 200]);
        assert_eq!(
            classify(&p),
            Kind {
                class: 7,
                udp_len: None
            }
        );
        for n in 0..p.len() {
            let _ = classify(&p[..n]);
        }
    }

    #[test]
    fn ipv6_walks_extension_headers() {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
        p.extend_from_slice(&[0; 32]);
        // Hop-by-hop (8 bytes) then a first fragment (8) then UDP.
        p.extend_from_slice(&[44, 0, 0, 0, 0, 0, 0, 0]);
        p.extend_from_slice(&[17, 0, 0, 1, 0, 0, 0, 9]);
        p.extend_from_slice(&[0, 1, 0, 2, 0, 108, 0, 0]);
        assert_eq!(
            classify(&p),
            Kind {
                class: 5,
                udp_len: Some(100)
            }
        );
        p[6] = 58;
        assert_eq!(classify(&p).class, 6);
    }

    /// Every rewrite of the field leaves a valid IPv4 checksum (the
    /// incremental update agrees with a recomputation) and an IPv6 flow
    /// label and version untouched.
    #[test]
    fn the_ecn_field_is_rewritten_with_its_checksum() {
        let a4 = "10.77.0.1".parse().unwrap();
        let b4 = "10.77.0.2".parse().unwrap();
        for tos in [0u8, 0x01, 0x02, 0x03, 0xb8, 0xb9, 0xff] {
            let mut p = echo_request(a4, b4, 3);
            p[1] = tos;
            p[10] = 0;
            p[11] = 0;
            let c = checksum(&[&p[..20]]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
            for v in 0..4u8 {
                let mut q = p.clone();
                assert!(set_ecn(&mut q, v));
                assert_eq!(ecn(&q), Some(v));
                assert_eq!(q[1] & !3, tos & !3, "the DSCP stays");
                assert_eq!(checksum(&[&q[..20]]), 0, "tos {tos:#x} -> {v}");
            }
        }
        let a6: std::net::Ipv6Addr = "fd77::1".parse().unwrap();
        let b6: std::net::Ipv6Addr = "fd77::2".parse().unwrap();
        let mut p = echo_request(a6.into(), b6.into(), 4);
        p[0..4].copy_from_slice(&[0x6b, 0x8a, 0xbc, 0xde]);
        for v in 0..4u8 {
            assert!(set_ecn(&mut p, v));
            assert_eq!(ecn(&p), Some(v));
            assert_eq!((p[0], p[1] & 0xcf, p[2], p[3]), (0x6b, 0x8a & 0xcf, 0xbc, 0xde));
        }
        assert_eq!(ecn(&[0x45; 10]), None);
        assert!(!set_ecn(&mut [0x60; 20], 1));
    }

    #[test]
    fn probes_have_valid_checksums_and_are_recognised() {
        let a4 = "10.77.0.1".parse().unwrap();
        let b4 = "10.77.0.2".parse().unwrap();
        let p = echo_request(b4, a4, 77);
        assert_eq!(checksum(&[&p[..20]]), 0);
        assert_eq!(checksum(&[&p[20..]]), 0);
        assert_eq!(classify(&p).class, 2);
        let mut reply = p.clone();
        reply[20] = 0;
        assert!(is_echo_reply(&reply, 77) && !is_echo_reply(&reply, 78) && !is_echo_reply(&p, 77));
        let a6: std::net::Ipv6Addr = "fd77::1".parse().unwrap();
        let b6: std::net::Ipv6Addr = "fd77::2".parse().unwrap();
        let p = echo_request(b6.into(), a6.into(), 9);
        let len = ((p.len() - 40) as u32).to_be_bytes();
        assert_eq!(
            checksum(&[&b6.octets(), &a6.octets(), &len, &[0, 0, 0, 58], &p[40..]]),
            0
        );
        assert_eq!(classify(&p).class, 6);
        let mut reply = p.clone();
        reply[40] = 129;
        assert!(is_echo_reply(&reply, 9));
    }
}
