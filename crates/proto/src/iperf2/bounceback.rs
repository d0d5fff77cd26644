//! The bounceback message (`--bounceback`, `docs/protocols.md`, iperf 2:
//! bounceback): the
//! client writes `bbsize` bytes starting with this 60-byte header, the
//! server stamps its receive and send times and writes the same bytes
//! back. Layout as 2.1.8 puts it on the wire (all big-endian):
//!
//! | off | field |
//! |---|---|
//! | 0 | flags (`0x00800000`) |
//! | 4 | bbsize (the whole message, header included) |
//! | 8 | bbid (burst number, from 1) |
//! | 12 | bbflags (16) |
//! | 14 | tos (16; 2.1.8 leaves the filler `0x5a5a` unless it sets TOS) |
//! | 16 | run time (0) |
//! | 20 | client tx sec, usec |
//! | 28 | server rx sec, usec |
//! | 36 | server tx sec, usec |
//! | 44 | hold (µs) |
//! | 48 | rtt, read sec/usec (unused on the wire: filler) |

use super::{be16, be32, flags, put32};

/// Bytes of the header proper.
pub const BB_HEADER_LEN: usize = 60;
/// The smallest message 2.1.8's server accepts (`-l` must be at least this).
pub const BB_MIN_SIZE: u32 = 64;
/// The largest message wirespeed echoes; a larger `bbsize` is refused
/// before anything is allocated.
pub const BB_MAX_SIZE: u32 = 16 << 20;
/// The default message size (`-l` with `--bounceback`).
pub const BB_DEFAULT_SIZE: u32 = 100;

/// bbflags (iperf 2.2): the reply's size is at [`REPLY_SIZE_AT`] and
/// differs from the request's.
pub const BB_REPLY_SIZE: u16 = 0x0800;
/// Where iperf 2.2 puts the reply size (its 64-byte header's last word).
pub const REPLY_SIZE_AT: usize = 60;

/// bbflags: the server should set TCP_QUICKACK.
pub const BB_QUICKACK: u16 = 0x8000;
/// bbflags: clocks are synchronised (--trip-times).
pub const BB_CLOCKSYNCED: u16 = 0x4000;
/// bbflags: the tos field is valid.
pub const BB_TOS: u16 = 0x2000;
/// bbflags: stop.
pub const BB_STOP: u16 = 0x1000;

/// What `--latency`'s probes carry at the start of their payload (after
/// the header): a wirespeed server echoes them without reporting them as a
/// test of their own; an iperf 2 server echoes the payload unread.
pub const LATENCY_PROBE_MARK: &[u8] = b"wirespeed latency probe";

/// What a probe tells the server of the round trip before it (after the
/// mark): whether it was measured before the load or under it, and how
/// long it took. The server's `--metrics` histogram is made of these.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PreviousRtt {
    /// Measured under the test's load (else on the idle path).
    pub loaded: bool,
    /// The round trip, µs.
    pub micros: u32,
}

/// Where [`PreviousRtt`] sits: right after the mark, one phase byte (1
/// idle, 2 loaded; 0 none) and the round trip in µs (u32, big-endian).
const PREVIOUS_AT: usize = BB_HEADER_LEN + LATENCY_PROBE_MARK.len();

impl PreviousRtt {
    /// Writes it into a probe message (a message too short keeps none).
    pub fn put(self, msg: &mut [u8]) {
        if let Some(b) = msg.get_mut(PREVIOUS_AT..PREVIOUS_AT + 5) {
            b[0] = if self.loaded { 2 } else { 1 };
            b[1..5].copy_from_slice(&self.micros.to_be_bytes());
        }
    }

    /// Reads it from a probe message: `None` without the mark, without a
    /// previous round trip, or with a phase byte it does not know.
    pub fn get(msg: &[u8]) -> Option<PreviousRtt> {
        if !msg.get(BB_HEADER_LEN..)?.starts_with(LATENCY_PROBE_MARK) {
            return None;
        }
        let b = msg.get(PREVIOUS_AT..PREVIOUS_AT + 5)?;
        let micros = u32::from_be_bytes([b[1], b[2], b[3], b[4]]);
        match b[0] {
            1 => Some(PreviousRtt { loaded: false, micros }),
            2 => Some(PreviousRtt { loaded: true, micros }),
            _ => None,
        }
    }
}

/// The filler 2.1.8 leaves in unused fields.
pub const FILLER: u8 = 0x5a;

/// Why a bounceback header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BbError {
    /// Fewer than [`BB_HEADER_LEN`] bytes.
    Short(usize),
    /// The first word is not a bounceback one.
    NotBounceback(u32),
    /// bbsize outside [`BB_MIN_SIZE`]..=[`BB_MAX_SIZE`].
    BadSize(u32),
}

impl std::fmt::Display for BbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BbError::Short(n) => write!(f, "bounceback header of {n} bytes is too short"),
            BbError::NotBounceback(w) => write!(f, "first word 0x{w:08x} is not a bounceback message"),
            BbError::BadSize(n) => write!(
                f,
                "bounceback size {n} is out of range ({BB_MIN_SIZE}-{BB_MAX_SIZE} bytes)"
            ),
        }
    }
}

/// A bounceback message's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BbHeader {
    /// The whole message's size in bytes.
    pub size: u32,
    /// Burst number.
    pub id: u32,
    /// `BB_*` flags.
    pub bbflags: u16,
    /// TOS (valid with [`BB_TOS`]).
    pub tos: u16,
    /// Client send time (sec, usec).
    pub client_tx: (u32, u32),
    /// Server receive time (the client sends all ones).
    pub server_rx: (u32, u32),
    /// Server send time (the client sends all ones).
    pub server_tx: (u32, u32),
    /// How long the server holds the message before replying, µs.
    pub hold_us: u32,
}

/// Whether a stream's first word opens a bounceback test (no other
/// header bits, as 2.1.8's listener tests it).
pub fn is_bounceback(first: &[u8]) -> bool {
    first.len() >= 4 && {
        let f = be32(first, 0);
        f & (flags::VERSION1 | flags::VERSION2 | flags::EXTEND) == 0 && f & flags::BOUNCEBACK != 0
    }
}

impl BbHeader {
    /// A client's message of `size` bytes: header, filler, then the
    /// `0123456789` payload pattern, as 2.1.8 sends it.
    pub fn client_message(&self) -> Vec<u8> {
        let mut b = vec![FILLER; (self.size as usize).max(BB_HEADER_LEN)];
        for (i, x) in b.iter_mut().enumerate().skip(BB_HEADER_LEN) {
            *x = b'0' + ((i - BB_HEADER_LEN) % 10) as u8;
        }
        let h = BbHeader {
            server_rx: (u32::MAX, u32::MAX),
            server_tx: (u32::MAX, u32::MAX),
            ..*self
        };
        h.encode(&mut b);
        b
    }

    /// Writes the header fields over the first 60 bytes of `b` (the rtt
    /// and read-time words are left as they are).
    pub fn encode(&self, b: &mut [u8]) {
        put32(b, 0, flags::BOUNCEBACK);
        put32(b, 4, self.size);
        put32(b, 8, self.id);
        b[12..14].copy_from_slice(&self.bbflags.to_be_bytes());
        b[14..16].copy_from_slice(&self.tos.to_be_bytes());
        put32(b, 16, 0);
        put32(b, 20, self.client_tx.0);
        put32(b, 24, self.client_tx.1);
        put32(b, 28, self.server_rx.0);
        put32(b, 32, self.server_rx.1);
        put32(b, 36, self.server_tx.0);
        put32(b, 40, self.server_tx.1);
        put32(b, 44, self.hold_us);
    }

    /// Decodes and checks a header (at least 60 bytes).
    pub fn decode(b: &[u8]) -> Result<BbHeader, BbError> {
        if b.len() < BB_HEADER_LEN {
            return Err(BbError::Short(b.len()));
        }
        if !is_bounceback(b) {
            return Err(BbError::NotBounceback(be32(b, 0)));
        }
        let size = be32(b, 4);
        if !(BB_MIN_SIZE..=BB_MAX_SIZE).contains(&size) {
            return Err(BbError::BadSize(size));
        }
        Ok(BbHeader {
            size,
            id: be32(b, 8),
            bbflags: be16(b, 12),
            tos: be16(b, 14),
            client_tx: (be32(b, 20), be32(b, 24)),
            server_rx: (be32(b, 28), be32(b, 32)),
            server_tx: (be32(b, 36), be32(b, 40)),
            hold_us: be32(b, 44),
        })
    }

    /// The reply size an iperf 2.2 request asks for, when it differs
    /// from the request's own (`--bounceback-reply`); `None` for a
    /// symmetric message or a size out of range.
    pub fn reply_size(msg: &[u8]) -> Option<u32> {
        if msg.len() < REPLY_SIZE_AT + 4 || be16(msg, 12) & BB_REPLY_SIZE == 0 {
            return None;
        }
        let n = be32(msg, REPLY_SIZE_AT);
        (BB_MIN_SIZE..=BB_MAX_SIZE).contains(&n).then_some(n)
    }

    /// Asks for a reply of `reply` bytes (iperf 2.2's request/reply sizes).
    pub fn set_reply_size(msg: &mut [u8], reply: u32) {
        if msg.len() >= REPLY_SIZE_AT + 4 {
            let f = be16(msg, 12) | BB_REPLY_SIZE;
            msg[12..14].copy_from_slice(&f.to_be_bytes());
            put32(msg, REPLY_SIZE_AT, reply);
        }
    }

    /// Stamps the server's receive and send times into a message.
    pub fn stamp_server(b: &mut [u8], rx: (u32, u32), tx: (u32, u32)) {
        if b.len() >= BB_HEADER_LEN {
            put32(b, 28, rx.0);
            put32(b, 32, rx.1);
            put32(b, 36, tx.0);
            put32(b, 40, tx.1);
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_probe_carries_the_round_trip_before_it() {
        let mut msg = BbHeader {
            size: BB_DEFAULT_SIZE,
            ..BbHeader::default()
        }
        .client_message();
        assert_eq!(PreviousRtt::get(&msg), None, "no mark");
        msg[BB_HEADER_LEN..BB_HEADER_LEN + LATENCY_PROBE_MARK.len()].copy_from_slice(LATENCY_PROBE_MARK);
        msg[PREVIOUS_AT] = 0;
        assert_eq!(PreviousRtt::get(&msg), None, "no previous round trip");
        let p = PreviousRtt {
            loaded: true,
            micros: 66_000,
        };
        p.put(&mut msg);
        assert_eq!(PreviousRtt::get(&msg), Some(p));
        PreviousRtt {
            loaded: false,
            micros: 91,
        }
        .put(&mut msg);
        assert_eq!(
            PreviousRtt::get(&msg),
            Some(PreviousRtt {
                loaded: false,
                micros: 91
            })
        );
        msg[PREVIOUS_AT] = 9;
        assert_eq!(PreviousRtt::get(&msg), None, "an unknown phase");
        assert_eq!(PreviousRtt::get(&msg[..PREVIOUS_AT + 2]), None, "cut short");
        let mut short = vec![0u8; PREVIOUS_AT];
        p.put(&mut short);
        assert!(short.iter().all(|b| *b == 0));
    }
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A 2.1.8 client's first message (`iperf -c ... --bounceback`),
    /// captured on loopback.
    const CLIENT_2_1_8: &str = "00800000000000640000000180005a5a000000006b03ebb60004160dffffffffffffffffffffffffffffffff000000005a5a5a5a5a5a5a5a5a5a5a5a30313233343536373839303132333435363738393031323334353637383930313233343536373839";
    /// The 2.1.8 server's reply to it.
    const SERVER_2_1_8: &str = "00800000000000640000000180005a5a000000006b03ebb60004160d6b03ebb6000427326b03ebb6000427f8000000005a5a5a5a5a5a5a5a5a5a5a5a30313233343536373839303132333435363738393031323334353637383930313233343536373839";

    #[test]
    fn a_2_1_8_client_message_decodes_and_is_rebuilt_byte_for_byte() {
        let wire = hex(CLIENT_2_1_8);
        let h = BbHeader::decode(&wire).unwrap();
        assert_eq!(h.size, 100);
        assert_eq!(h.id, 1);
        assert_eq!(h.bbflags, BB_QUICKACK);
        assert_eq!(h.tos, 0x5a5a);
        assert_eq!(h.client_tx, (0x6b03ebb6, 0x0004160d));
        assert_eq!(h.server_rx, (u32::MAX, u32::MAX));
        assert_eq!(h.hold_us, 0);
        assert_eq!(h.client_message(), wire);
    }

    #[test]
    fn the_server_stamp_matches_a_2_1_8_reply() {
        let mut b = hex(CLIENT_2_1_8);
        BbHeader::stamp_server(&mut b, (0x6b03ebb6, 0x42732), (0x6b03ebb6, 0x427f8));
        assert_eq!(b, hex(SERVER_2_1_8));
        let h = BbHeader::decode(&b).unwrap();
        assert_eq!(h.server_tx, (0x6b03ebb6, 0x427f8));
    }

    /// `iperf -c ... --bounceback=2 -S 0x10 --bounceback-hold 1` (2.1.8).
    const CLIENT_TOS_HOLD_2_1_8: &str = "008000000000006400000001a0000010000000006b03f16c000565c0ffffffffffffffffffffffffffffffff000003e85a5a5a5a5a5a5a5a5a5a5a5a30313233343536373839303132333435363738393031323334353637383930313233343536373839";

    #[test]
    fn tos_and_hold_travel_as_2_1_8_sends_them() {
        let wire = hex(CLIENT_TOS_HOLD_2_1_8);
        let h = BbHeader::decode(&wire).unwrap();
        assert_eq!(h.bbflags, BB_QUICKACK | BB_TOS);
        assert_eq!(h.tos, 0x10);
        assert_eq!(h.hold_us, 1000);
        assert_eq!(h.client_message(), wire);
    }

    #[test]
    fn malformed_headers_are_errors() {
        let good = hex(CLIENT_2_1_8);
        assert_eq!(BbHeader::decode(&good[..59]), Err(BbError::Short(59)));
        let mut b = good.clone();
        b[0] = 0x40;
        assert!(matches!(BbHeader::decode(&b), Err(BbError::NotBounceback(_))));
        for size in [0u32, 63, BB_MAX_SIZE + 1, u32::MAX] {
            let mut b = good.clone();
            put32(&mut b, 4, size);
            assert_eq!(BbHeader::decode(&b), Err(BbError::BadSize(size)));
        }
        let mut b = good;
        put32(&mut b, 4, 64);
        assert_eq!(BbHeader::decode(&b).map(|h| h.size), Ok(64));
    }

    #[test]
    fn only_a_bare_bounceback_word_opens_a_bounceback_test() {
        assert!(is_bounceback(&[0, 0x80, 0, 0]));
        assert!(!is_bounceback(&[0x40, 0x80, 0, 0]));
        assert!(!is_bounceback(&[0x80, 0, 0, 0]));
        assert!(!is_bounceback(b"0123"));
        assert!(!is_bounceback(&[0, 0x80]));
    }
}
