//! The client header: `client_hdr_v1` (24 bytes), the 2.1 extension (36),
//! the start-time/fq block (20), the isochronous settings (32) and the
//! permit key. TCP sends it once as the first bytes of a connection; UDP
//! repeats it at offset 16 of every datagram (see [`super::udp`]).

use std::fmt;

use super::flags::{self, upper};
use super::{be16, be32, put16, put32};

/// Length of `client_hdr_v1`.
pub const V1_LEN: usize = 24;
/// Length of `client_hdrext`.
pub const EXT_LEN: usize = 36;
/// Length of `client_hdrext_starttime_fq`.
pub const START_LEN: usize = 20;
/// Length of `client_hdrext_isoch_settings`.
pub const ISOCH_LEN: usize = 32;
/// Permit key length limits.
pub const KEY_MIN: usize = 4;
/// Longest permit key.
pub const KEY_MAX: usize = 128;
/// Longest TCP header a reader will accept: the length field's 255 plus a key.
pub const MAX_TCP_HEADER: usize = 255 + KEY_MAX;

/// What ends the test (`mAmount`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// Run this many hundredths of a second (`-t`; sent negated).
    Time(u32),
    /// Send this many bytes (`-n`; 31 bits on the wire).
    Bytes(u32),
}

impl Amount {
    /// The signed word on the wire.
    pub fn to_word(self) -> u32 {
        match self {
            Amount::Time(cs) => (cs.min(i32::MAX as u32) as i32).wrapping_neg() as u32,
            Amount::Bytes(b) => b & 0x7FFF_FFFF,
        }
    }

    /// Decodes the word: the top bit set means a negated time.
    pub fn from_word(w: u32) -> Amount {
        if w & 0x8000_0000 != 0 {
            Amount::Time((w as i32).unsigned_abs())
        } else {
            Amount::Bytes(w)
        }
    }

    /// Time mode for a duration in seconds (rounded to 10 ms).
    pub fn from_secs(secs: f64) -> Amount {
        Amount::Time((secs * 100.0).round().clamp(0.0, i32::MAX as f64) as u32)
    }
}

/// The 2.1 extension (`client_hdrext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeaderExt {
    /// `type` word (2.1.8 leaves 0).
    pub kind: u32,
    /// `length` word (2.1.8 leaves 0).
    pub length: u32,
    /// Upper flags ([`upper`]).
    pub upper: u16,
    /// Lower flags (0 in 2.1.8).
    pub lower: u16,
    /// `(major << 16) | minor`.
    pub version_u: u32,
    /// `(patch << 16) | kind`.
    pub version_l: u32,
    /// IP TOS byte (`-S`).
    pub tos: u16,
    /// `-b` in bits/s (or packets/s), 40 bits on the wire.
    pub rate: u64,
    /// `--tcp-write-prefetch`.
    pub write_prefetch: u32,
}

/// The start-time/fq block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StartTime {
    /// Client's first-write wall clock, seconds.
    pub sec: u32,
    /// Microseconds.
    pub usec: u32,
    /// `--fq-rate` in bytes/s.
    pub fq_rate: u64,
}

/// The threads word's flag for an iperf 2.2 transfer id.
const TRANSFER_ID_BIT: u32 = 0x8000_0000;

/// The settings block of a periodic-burst client (`--burst-period`):
/// frames per second as an integer and millionths, then the burst's size
/// in bytes as the mean; the rest zero.
pub fn burst_settings(period: std::time::Duration, size: u32) -> Vec<u8> {
    let mut b = vec![0u8; ISOCH_LEN];
    put_pair(&mut b, 0, 1.0 / period.as_secs_f64());
    put32(&mut b, 8, size);
    b
}

/// Reads settings pair `i` (`b` holds it).
fn get_pair(b: &[u8], i: usize) -> f64 {
    f64::from(be32(b, 8 * i)) + f64::from(be32(b, 8 * i + 4)) / 1e6
}

/// Settings pair `i`: the integer part, then millionths.
fn put_pair(b: &mut [u8], i: usize, v: f64) {
    let v = v.clamp(0.0, f64::from(u32::MAX));
    put32(b, 8 * i, v.trunc() as u32);
    put32(b, 8 * i + 4, (v.fract() * 1e6).round().min(999_999.0) as u32);
}

/// The settings block of an isochronous client whose server sends the
/// frames (`-R`, `--full-duplex`): frames per second, mean and standard
/// deviation (bit/s), and the gap between a frame's datagrams (ms), each
/// as an integer part and millionths.
pub fn isoch_settings(fps: f64, mean: f64, stdev: f64, ipg_ms: f64) -> Vec<u8> {
    let mut b = vec![0u8; ISOCH_LEN];
    for (i, v) in [fps, mean, stdev, ipg_ms].into_iter().enumerate() {
        put_pair(&mut b, i, v);
    }
    b
}

/// What an isochronous settings block asks for: (fps, mean bit/s, stdev
/// bit/s, gap ms).
pub fn decode_isoch_settings(b: &[u8]) -> Option<(f64, f64, f64, f64)> {
    if b.len() < ISOCH_LEN {
        return None;
    }
    Some((get_pair(b, 0), get_pair(b, 1), get_pair(b, 2), get_pair(b, 3)))
}

/// A decoded (or to-be-encoded) client header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientHeader {
    /// Base flags. On encode, EXTEND/KEYCHECK/LEN bits are derived from the
    /// other fields; on decode they are kept as read.
    pub flags: u32,
    /// The client's `-P`.
    pub num_threads: u32,
    /// iperf 2.2's `--sync-transfer-id`: the flow's id, carried in the
    /// threads word (bit 31 set, the id in bits 20–30, the count below).
    pub transfer_id: Option<u32>,
    /// Port to connect back to for -d/-r.
    pub port: u32,
    /// The client's `-l` if given explicitly, else 0.
    pub buf_len: u32,
    /// Historical window/bandwidth word (0).
    pub win_band: u32,
    /// Test duration or byte count.
    pub amount: Option<Amount>,
    /// The 2.1 extension.
    pub ext: Option<HeaderExt>,
    /// Start time / fq rate block.
    pub start: Option<StartTime>,
    /// Isochronous/burst settings, kept opaque (as many bytes as were sent).
    pub isoch: Option<Vec<u8>>,
    /// Permit key.
    pub key: Option<Vec<u8>>,
}

/// Why a header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// The length field is shorter than the parts the flags announce.
    BadLength(usize),
    /// A permit key length outside 4..=128.
    BadKeyLength(usize),
    /// Fewer bytes than the header needs.
    Truncated,
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::BadLength(n) => write!(f, "invalid header length {n}"),
            HeaderError::BadKeyLength(n) => write!(f, "invalid permit key length {n}"),
            HeaderError::Truncated => f.write_str("truncated header"),
        }
    }
}

/// How much of a TCP stream's start is header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// At least this many bytes (in total) are needed to decide.
    More(usize),
    /// The header is this many bytes (0: the stream is pure data).
    Done(usize),
}

impl ClientHeader {
    /// Whether the upper flags ask for the start-time block.
    fn wants_start_block(&self) -> bool {
        let u = self.ext.map(|e| e.upper).unwrap_or(0);
        self.start.is_some()
            || self.isoch.is_some()
            || u & (upper::TRIPTIME | upper::FQRATESET | upper::EPOCH_START | upper::ISOCH) != 0
    }

    /// The TCP first message, exactly as a 2.1.8 client sends it.
    pub fn encode_tcp(&self) -> Vec<u8> {
        let mut flags = self.flags & !(flags::LEN_BIT | flags::LEN_MASK | flags::KEYCHECK | flags::EXTEND);
        let mut b = vec![0u8; V1_LEN];
        if let Some(ext) = &self.ext {
            flags |= flags::EXTEND;
            b.resize(V1_LEN + EXT_LEN, 0);
            encode_ext(&mut b[V1_LEN..], ext);
            if self.wants_start_block() {
                let mut blk = [0u8; START_LEN];
                let st = self.start.unwrap_or_default();
                put32(&mut blk, 4, st.sec);
                put32(&mut blk, 8, st.usec);
                put32(&mut blk, 12, st.fq_rate as u32);
                put32(&mut blk, 16, (st.fq_rate >> 32) as u32);
                b.extend_from_slice(&blk);
            }
            if let Some(iso) = &self.isoch {
                let mut blk = [0u8; ISOCH_LEN];
                let n = iso.len().min(ISOCH_LEN);
                blk[..n].copy_from_slice(&iso[..n]);
                b.extend_from_slice(&blk);
            }
        }
        let mut len = b.len();
        if let Some(key) = &self.key {
            flags |= flags::KEYCHECK;
            let key = &key[..key.len().min(KEY_MAX)];
            b.extend_from_slice(&(key.len() as u16).to_be_bytes());
            len = b.len();
            b.extend_from_slice(key);
        }
        // A key needs the length field to be found, extension or not.
        if self.ext.is_some() || self.key.is_some() {
            flags |= flags::LEN_BIT | ((len as u32) << 1) & flags::LEN_MASK;
        }
        put32(&mut b, 0, flags);
        self.encode_v1_rest(&mut b[..V1_LEN]);
        b
    }

    fn encode_v1_rest(&self, b: &mut [u8]) {
        let threads = match self.transfer_id {
            Some(id) => TRANSFER_ID_BIT | ((id & 0x7FF) << 20) | (self.num_threads & 0xF_FFFF),
            None => self.num_threads,
        };
        put32(b, 4, threads);
        put32(b, 8, self.port);
        put32(b, 12, self.buf_len);
        put32(b, 16, self.win_band);
        put32(b, 20, self.amount.map(Amount::to_word).unwrap_or(0));
    }

    /// How long the header at the start of a TCP stream is, from the bytes
    /// seen so far. Follows 2.1.8's listener: no VERSION1/VERSION2/EXTEND
    /// bit means no header at all (a `-C` client's data).
    pub fn need_tcp(prefix: &[u8]) -> Result<Need, HeaderError> {
        if prefix.len() < 4 {
            return Ok(Need::More(4));
        }
        let f = be32(prefix, 0);
        if f & (flags::VERSION1 | flags::VERSION2 | flags::EXTEND) == 0 {
            // A bounceback message (`bounceback::is_bounceback`) is not a
            // test header: the server reads it whole itself.
            return Ok(Need::Done(0));
        }
        let len = header_len(f)?;
        if f & flags::KEYCHECK == 0 {
            return Ok(if prefix.len() >= len {
                Need::Done(len)
            } else {
                Need::More(len)
            });
        }
        // The length field points at the key's value; its 2-byte length
        // sits just before.
        if len < V1_LEN + 2 {
            return Err(HeaderError::BadLength(len));
        }
        if prefix.len() < len {
            return Ok(Need::More(len));
        }
        let klen = be16(prefix, len - 2) as usize;
        if !(KEY_MIN..=KEY_MAX).contains(&klen) {
            return Err(HeaderError::BadKeyLength(klen));
        }
        let total = len + klen;
        Ok(if prefix.len() >= total {
            Need::Done(total)
        } else {
            Need::More(total)
        })
    }

    /// Decodes a complete TCP header (`bytes` as long as [`Self::need_tcp`] said).
    pub fn decode_tcp(bytes: &[u8]) -> Result<ClientHeader, HeaderError> {
        let total = match Self::need_tcp(bytes)? {
            Need::Done(0) => return Ok(ClientHeader::default()),
            Need::Done(n) => n,
            Need::More(_) => return Err(HeaderError::Truncated),
        };
        let f = be32(bytes, 0);
        let len = header_len(f)?;
        let mut h = Self::decode_v1(&bytes[..V1_LEN]);
        if f & (flags::EXTEND | flags::VERSION2) != 0 && len >= V1_LEN + EXT_LEN {
            let ext = decode_ext(&bytes[V1_LEN..V1_LEN + EXT_LEN]);
            let body = if f & flags::KEYCHECK != 0 { len - 2 } else { len };
            // A key length field inside the extension leaves no blocks
            // (and must not turn the range around).
            let blocks = bytes.get(V1_LEN + EXT_LEN..body).unwrap_or_default();
            if blocks.len() >= START_LEN {
                h.start = Some(decode_start(&blocks[..START_LEN]));
            }
            // 2.1.8's TCP isochronous client sends the block (with -R or
            // --full-duplex) without the ISOCH_SETTINGS flag.
            if ext.upper & (upper::ISOCH_SETTINGS | upper::PERIODICBURST | upper::ISOCH) != 0
                && blocks.len() > START_LEN
            {
                let iso = &blocks[START_LEN..];
                h.isoch = Some(iso[..iso.len().min(ISOCH_LEN)].to_vec());
            }
            h.ext = Some(ext);
        }
        if f & flags::KEYCHECK != 0 {
            h.key = Some(bytes[len..total].to_vec());
        }
        Ok(h)
    }

    fn decode_v1(b: &[u8]) -> ClientHeader {
        let amount = be32(b, 20);
        let threads = be32(b, 4);
        let (num_threads, transfer_id) = if threads & TRANSFER_ID_BIT != 0 {
            (threads & 0xF_FFFF, Some((threads >> 20) & 0x7FF))
        } else {
            (threads, None)
        };
        ClientHeader {
            flags: be32(b, 0),
            num_threads,
            transfer_id,
            port: be32(b, 8),
            buf_len: be32(b, 12),
            win_band: be32(b, 16),
            amount: (amount != 0).then(|| Amount::from_word(amount)),
            ..ClientHeader::default()
        }
    }

    /// Writes the UDP form into a datagram (from offset 16, after the
    /// sequence/timestamp prefix). `buf` must hold at least 160 bytes or the
    /// whole datagram; fields that do not fit are left out, as 2.1.8 does
    /// for tiny datagrams. Returns the bytes of `buf` used.
    pub fn encode_udp(&self, buf: &mut [u8]) -> usize {
        const BASE: usize = super::udp::DATAGRAM_HEADER_LEN;
        let want = BASE + V1_LEN + EXT_LEN;
        if buf.len() < want {
            return 0;
        }
        let mut flags = (self.flags & !(flags::LEN_BIT | flags::LEN_MASK | flags::KEYCHECK)) | flags::SEQNO64B;
        let mut len = BASE + V1_LEN;
        if let Some(ext) = &self.ext {
            flags |= flags::EXTEND;
            if ext.upper != 0 {
                flags |= flags::UDPTESTS;
            }
            encode_ext(&mut buf[len..len + EXT_LEN], ext);
            len += EXT_LEN;
            // The isochronous payload slot (zero unless isochronous) is
            // counted whenever later blocks matter.
            let mut end = len;
            if self.wants_start_block() && buf.len() >= 128 {
                buf[len..len + 32].fill(0);
                len += 32;
                let st = self.start.unwrap_or_default();
                let blk = &mut buf[108..128];
                blk.fill(0);
                put32(blk, 4, st.sec);
                put32(blk, 8, st.usec);
                put32(blk, 12, st.fq_rate as u32);
                put32(blk, 16, (st.fq_rate >> 32) as u32);
                end = 128;
            }
            if let Some(iso) = &self.isoch
                && buf.len() >= 160
            {
                let blk = &mut buf[128..160];
                blk.fill(0);
                let n = iso.len().min(ISOCH_LEN);
                blk[..n].copy_from_slice(&iso[..n]);
                len += 32;
                end = 160;
            }
            flags |= flags::LEN_BIT | ((len as u32) << 1) & flags::LEN_MASK;
            put32(buf, BASE, flags);
            self.encode_v1_rest(&mut buf[BASE..BASE + V1_LEN]);
            return end.max(len);
        }
        put32(buf, BASE, flags);
        self.encode_v1_rest(&mut buf[BASE..BASE + V1_LEN]);
        len
    }

    /// Decodes the settings a UDP datagram carries (offset 16 on), or
    /// `None` for a datagram without them (tiny, or a `-C` client).
    pub fn decode_udp(d: &[u8]) -> Option<ClientHeader> {
        const BASE: usize = super::udp::DATAGRAM_HEADER_LEN;
        if d.len() < BASE + V1_LEN {
            return None;
        }
        let f = be32(d, BASE);
        if f & (flags::VERSION1 | flags::VERSION2 | flags::EXTEND) == 0 {
            return None;
        }
        let mut h = Self::decode_v1(&d[BASE..BASE + V1_LEN]);
        if f & flags::EXTEND != 0 && d.len() >= BASE + V1_LEN + EXT_LEN {
            let ext = decode_ext(&d[BASE + V1_LEN..BASE + V1_LEN + EXT_LEN]);
            if ext.upper & (upper::TRIPTIME | upper::FQRATESET | upper::EPOCH_START | upper::ISOCH) != 0
                && d.len() >= 128
            {
                h.start = Some(decode_start(&d[108..128]));
            }
            if ext.upper & upper::ISOCH_SETTINGS != 0 && d.len() >= 160 {
                h.isoch = Some(d[128..160].to_vec());
            }
            h.ext = Some(ext);
        }
        Some(h)
    }

    /// A periodic-burst client's period (`--burst-period`), from the
    /// settings block's frames per second; `None` without one.
    pub fn burst_period(&self) -> Option<f64> {
        if self.upper() & upper::PERIODICBURST == 0 {
            return None;
        }
        let s = self.isoch.as_deref().filter(|s| s.len() >= 8)?;
        let fps = get_pair(s, 0);
        (fps > 0.0).then(|| 1.0 / fps)
    }

    /// iperf 2.2's `--sync-transfer-id`: the flow's id in the threads
    /// word; over TCP also VERSION1, as 2.2 sends it (2.2 servers look for
    /// an id only then; 2.1.8 servers take it for `-r`).
    pub fn with_transfer_id(mut self, id: u32, tcp: bool) -> ClientHeader {
        self.transfer_id = Some(id);
        if tcp {
            self.flags |= flags::VERSION1;
        }
        self
    }

    /// The frames an isochronous client asks its server to send (`-R`,
    /// `--full-duplex`), from the settings block; `None` without one.
    pub fn isoch_frames(&self) -> Option<(f64, f64, f64, f64)> {
        if self.upper() & upper::ISOCH == 0 {
            return None;
        }
        decode_isoch_settings(self.isoch.as_deref()?).filter(|s| s.0 > 0.0 && s.1 > 0.0)
    }

    /// Upper flags (0 without the extension).
    pub fn upper(&self) -> u16 {
        self.ext.map(|e| e.upper).unwrap_or(0)
    }

    /// The peer's version words, if it sent them.
    pub fn version(&self) -> Option<(u32, u32)> {
        self.ext.map(|e| (e.version_u, e.version_l))
    }
}

/// Header length from the flags: the length field when valid, else the
/// fixed sizes the announced parts have.
fn header_len(f: u32) -> Result<usize, HeaderError> {
    let parts = V1_LEN
        + if f & (flags::VERSION2 | flags::EXTEND) != 0 {
            EXT_LEN
        } else {
            0
        };
    if f & flags::LEN_BIT == 0 {
        return Ok(parts);
    }
    let len = ((f & flags::LEN_MASK) >> 1) as usize;
    if len < parts {
        return Err(HeaderError::BadLength(len));
    }
    Ok(len)
}

fn encode_ext(b: &mut [u8], e: &HeaderExt) {
    put32(b, 0, e.kind);
    put32(b, 4, e.length);
    put16(b, 8, e.upper);
    put16(b, 10, e.lower);
    put32(b, 12, e.version_u);
    put32(b, 16, e.version_l);
    put16(b, 20, 0);
    put16(b, 22, e.tos);
    put32(b, 24, e.rate as u32);
    put32(b, 28, (((e.rate >> 32) as u32) & 0x00FF_FFFF) << 8);
    put32(b, 32, e.write_prefetch);
}

fn decode_ext(b: &[u8]) -> HeaderExt {
    HeaderExt {
        kind: be32(b, 0),
        length: be32(b, 4),
        upper: be16(b, 8),
        lower: be16(b, 10),
        version_u: be32(b, 12),
        version_l: be32(b, 16),
        tos: be16(b, 22),
        rate: be32(b, 24) as u64 | (((be32(b, 28) >> 8) as u64) << 32),
        write_prefetch: be32(b, 32),
    }
}

fn decode_start(b: &[u8]) -> StartTime {
    StartTime {
        sec: be32(b, 4),
        usec: be32(b, 8),
        fq_rate: be32(b, 12) as u64 | ((be32(b, 16) as u64) << 32),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn isoch_settings_match_a_2_1_8_capture() {
        // `iperf -u -R --isochronous=30:4m,1m --ipg 0.5`, bytes 128..160.
        let words = [30u32, 0, 0x003d_0900, 0, 0x000f_4240, 0, 0, 0x0007_a120];
        let b = super::isoch_settings(30.0, 4e6, 1e6, 0.5);
        let got: Vec<u32> = b.chunks(4).map(|w| u32::from_be_bytes(w.try_into().unwrap())).collect();
        assert_eq!(got, words);
        assert_eq!(super::decode_isoch_settings(&b), Some((30.0, 4e6, 1e6, 0.5)));
        assert_eq!(super::decode_isoch_settings(&b[..31]), None);
    }

    #[test]
    fn a_burst_period_travels_as_frames_per_second() {
        let mut h = ClientHeader {
            isoch: Some(burst_settings(std::time::Duration::from_millis(500), 102_400)),
            ext: Some(HeaderExt {
                upper: upper::PERIODICBURST,
                ..HeaderExt::default()
            }),
            ..ClientHeader::default()
        };
        // 2.1.8's words for `--burst-size 100K --burst-period 0.5`.
        assert_eq!(
            &h.isoch.as_deref().unwrap()[..12],
            &[0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x90, 0]
        );
        assert_eq!(h.burst_period(), Some(0.5));
        h.ext = Some(HeaderExt::default());
        assert_eq!(h.burst_period(), None);
    }

    #[test]
    fn a_2_2_transfer_id_is_not_a_thread_count() {
        // 2.2.1 --sync-transfer-id -P 2, flow 2: `80200002`, and VERSION1.
        let mut b = vec![0u8; V1_LEN];
        b[0..4].copy_from_slice(&flags::VERSION1.to_be_bytes());
        b[4..8].copy_from_slice(&0x8020_0002u32.to_be_bytes());
        let h = ClientHeader::decode_v1(&b);
        assert_eq!((h.num_threads, h.transfer_id), (2, Some(2)));
        let mut again = vec![0u8; V1_LEN];
        h.encode_v1_rest(&mut again);
        assert_eq!(&again[4..8], &b[4..8]);
    }
    use super::*;
    use crate::iperf2::{VERSION_L, VERSION_U};

    fn words(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .filter(|w| *w != "|")
            .flat_map(|w| u32::from_str_radix(w, 16).unwrap().to_be_bytes())
            .collect()
    }

    fn ext(upper: u16) -> HeaderExt {
        HeaderExt {
            upper,
            version_u: VERSION_U,
            version_l: VERSION_L,
            ..HeaderExt::default()
        }
    }

    // Golden words captured from the real 2.1.8 client (docs/protocols.md,
    // iperf 2: client header over TCP).
    #[test]
    fn plain_header_with_explicit_len_is_byte_exact() {
        let wire = words(
            "40010078 00000001 00003ab6 00000400 00000000 ffffffe2 | 00000000 00000000 00000000 00020001 00080003 00000000 00000000 00000000 00000000",
        );
        assert_eq!(ClientHeader::need_tcp(&wire), Ok(Need::Done(60)));
        let h = ClientHeader::decode_tcp(&wire).unwrap();
        assert_eq!(h.num_threads, 1);
        assert_eq!(h.port, 0x3ab6);
        assert_eq!(h.buf_len, 1024);
        assert_eq!(h.amount, Some(Amount::Time(30)));
        assert_eq!(h.version(), Some((VERSION_U, VERSION_L)));
        assert_eq!(h.encode_tcp(), wire);
    }

    #[test]
    fn dual_and_tradeoff_flags() {
        let d = words(
            "c0010079 00000001 00004268 00000000 00000000 ffffffe2 | 00000000 00000000 00000000 00020001 00080003 00000000 00000000 00000000 00000000",
        );
        let h = ClientHeader::decode_tcp(&d).unwrap();
        assert_eq!(
            h.flags & (flags::VERSION1 | flags::RUN_NOW),
            flags::VERSION1 | flags::RUN_NOW
        );
        assert_eq!(h.port, 17000);
        assert_eq!(h.encode_tcp(), d);
        let r = ClientHeader {
            flags: flags::VERSION1,
            num_threads: 1,
            port: 17001,
            amount: Some(Amount::from_secs(0.3)),
            ext: Some(ext(0)),
            ..ClientHeader::default()
        };
        assert_eq!(&r.encode_tcp()[..12], &words("c0010078 00000001 00004269")[..]);
    }

    #[test]
    fn reverse_full_duplex_and_rate() {
        let r = words(
            "44010078 00000001 00001389 00000000 00000000 ffffffe2 | 00000000 00000000 04000000 00020001 00080003 00000000 00000000 00000000 00000000",
        );
        let h = ClientHeader::decode_tcp(&r).unwrap();
        assert_eq!(h.upper(), upper::REVERSE);
        assert_eq!(h.encode_tcp(), r);
        let b = words(
            "40010078 00000001 00001389 00000000 00000000 ffffffe2 | 00000000 00000000 00000000 00020001 00080003 00000000 02faf080 00000000 00000000",
        );
        let h = ClientHeader::decode_tcp(&b).unwrap();
        assert_eq!(h.ext.unwrap().rate, 50_000_000);
        assert_eq!(h.encode_tcp(), b);
        let n = words("40010078 00000001 00001389 00000000 00000000 00019000");
        let mut full = n.clone();
        full.extend(words(
            "00000000 00000000 00000000 00020001 00080003 00000000 00000000 00000000 00000000",
        ));
        assert_eq!(
            ClientHeader::decode_tcp(&full).unwrap().amount,
            Some(Amount::Bytes(102400))
        );
    }

    #[test]
    fn trip_times_header_carries_the_start_block() {
        let t = words(
            "400100a0 00000001 00001389 00000000 00000000 ffffffe2 | 00000000 00000000 00100000 00020001 00080003 00000000 00000000 00000000 00000000 | 00000000 6a001234 0001e240 00000000 00000000",
        );
        assert_eq!(ClientHeader::need_tcp(&t), Ok(Need::Done(80)));
        let h = ClientHeader::decode_tcp(&t).unwrap();
        assert_eq!(h.upper(), upper::TRIPTIME);
        assert_eq!(h.start.unwrap().sec, 0x6a001234);
        assert_eq!(h.start.unwrap().usec, 123456);
        assert_eq!(h.encode_tcp(), t);
    }

    #[test]
    fn rate_high_bits_sit_shifted_in_the_upper_word() {
        let h = ClientHeader {
            ext: Some(HeaderExt {
                rate: 0x12_3456_7890,
                ..ext(0)
            }),
            ..ClientHeader::default()
        };
        let w = h.encode_tcp();
        assert_eq!(&w[24 + 28..24 + 32], &[0, 0, 0x12, 0]);
        assert_eq!(ClientHeader::decode_tcp(&w).unwrap().ext.unwrap().rate, 0x12_3456_7890);
    }

    #[test]
    fn permit_key_length_field_points_at_the_value() {
        let h = ClientHeader {
            num_threads: 1,
            ext: Some(ext(0)),
            key: Some(b"secret".to_vec()),
            ..ClientHeader::default()
        };
        let w = h.encode_tcp();
        assert_eq!(w.len(), 60 + 2 + 6);
        let f = be32(&w, 0);
        assert_eq!(f & flags::KEYCHECK, flags::KEYCHECK);
        assert_eq!(((f & flags::LEN_MASK) >> 1) as usize, 62);
        assert_eq!(ClientHeader::need_tcp(&w[..62]), Ok(Need::More(68)));
        assert_eq!(ClientHeader::need_tcp(&w), Ok(Need::Done(68)));
        assert_eq!(
            ClientHeader::decode_tcp(&w).unwrap().key.as_deref(),
            Some(&b"secret"[..])
        );
    }

    #[test]
    fn compat_clients_send_no_header() {
        assert_eq!(ClientHeader::need_tcp(b"0123456789"), Ok(Need::Done(0)));
        assert_eq!(ClientHeader::need_tcp(b"01"), Ok(Need::More(4)));
        // A 2.0.5-style v1 header: 24 bytes.
        let mut v1 = vec![0u8; 24];
        v1[0] = 0x80;
        assert_eq!(ClientHeader::need_tcp(&v1[..4]), Ok(Need::More(24)));
        assert_eq!(ClientHeader::need_tcp(&v1), Ok(Need::Done(24)));
        let bare = ClientHeader {
            flags: flags::VERSION1,
            ..ClientHeader::default()
        };
        assert_eq!(bare.encode_tcp(), v1);
    }

    #[test]
    fn hostile_headers_are_errors_not_panics() {
        // Length field shorter than the extension it announces.
        assert_eq!(
            ClientHeader::need_tcp(&words("40010010")),
            Err(HeaderError::BadLength(8))
        );
        // Key length beyond 128.
        let mut k = words("50010078");
        k.resize(60, 0);
        k.extend_from_slice(&[0xFF, 0xFF]);
        let mut k2 = k.clone();
        let f = (0x5001_0000u32 | (62 << 1)).to_be_bytes();
        k2[..4].copy_from_slice(&f);
        assert_eq!(ClientHeader::need_tcp(&k2), Err(HeaderError::BadKeyLength(0xFFFF)));
        assert_eq!(ClientHeader::need_tcp(&words("00800000")), Ok(Need::Done(0)));
        assert_eq!(
            ClientHeader::decode_tcp(&words("40010078")),
            Err(HeaderError::Truncated)
        );
        let _ = k;
    }

    #[test]
    fn udp_default_datagram_settings_are_byte_exact() {
        let prefix = "00000001 6a000000 00000010 00000000";
        let settings = "48010098 00000001 00001389 00000000 00000000 ffffffec | 00000000 00000000 00000000 00020001 00080003 00000000 00100000 00000000 00000000";
        let mut d = words(&format!("{prefix} {settings}"));
        d.resize(1470, 0);
        let h = ClientHeader::decode_udp(&d).unwrap();
        assert_eq!(h.amount, Some(Amount::Time(20)));
        assert_eq!(h.ext.unwrap().rate, 1_048_576);
        let mut out = vec![0u8; 1470];
        out[..16].copy_from_slice(&d[..16]);
        let h2 = ClientHeader { flags: 0, ..h.clone() };
        h2.encode_udp(&mut out);
        assert_eq!(out, d);
    }

    #[test]
    fn udp_trip_times_len_skips_the_start_block() {
        let h = ClientHeader {
            num_threads: 1,
            port: 5001,
            amount: Some(Amount::from_secs(0.2)),
            ext: Some(HeaderExt {
                rate: 1_048_576,
                ..ext(upper::TRIPTIME)
            }),
            start: Some(StartTime {
                sec: 7,
                usec: 9,
                fq_rate: 0,
            }),
            ..ClientHeader::default()
        };
        let mut out = vec![0u8; 1470];
        h.encode_udp(&mut out);
        assert_eq!(be32(&out, 16), 0x6801_00d8);
        assert_eq!(be32(&out, 112), 7);
        assert_eq!(be32(&out, 116), 9);
        let back = ClientHeader::decode_udp(&out).unwrap();
        assert_eq!(back.start.unwrap().sec, 7);
        assert!(ClientHeader::decode_udp(&out[..30]).is_none());
    }
}
