//! The parameter JSON a client sends after PARAM_EXCHANGE.
//!
//! Writing follows the C client: keys in master's order, booleans sent only
//! when true (C servers treat a present boolean as true whatever its value),
//! `time`/`num`/`blockcount`/`parallel`/`len`/`omit` always. Reading is
//! lenient about numbers (3.12 negative images, doubles) and strict about
//! types: a known key with the wrong JSON type is a parameter error.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Code, ProtoError as Error};
use crate::json::{lenient_i64, to_compact};
use crate::params::{Direction, EndCondition, Protocol, TestParams};

/// Parameters as received, plus the wire-only extras.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamsIn {
    /// The test the client asks for.
    pub params: TestParams,
    /// Base64 RSA authentication token, if any.
    pub authtoken: Option<String>,
    /// The client's version string (informational).
    pub client_version: Option<String>,
    /// Raw numbers before range checks (for validation messages).
    pub raw: RawNumbers,
}

/// The numeric fields as sent, so range checks see what the peer asked for
/// even where the model would clamp or reinterpret.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RawNumbers {
    /// `time`.
    pub time: i64,
    /// `omit`.
    pub omit: i64,
    /// `num`.
    pub num: i64,
    /// `blockcount`.
    pub blockcount: i64,
    /// `parallel`.
    pub parallel: i64,
    /// `len`.
    pub len: i64,
    /// `bandwidth`.
    pub bandwidth: i64,
    /// `window`.
    pub window: i64,
    /// `MSS`.
    pub mss: i64,
    /// `burst`.
    pub burst: i64,
    /// `TOS`.
    pub tos: i64,
    /// `flowlabel`.
    pub flowlabel: i64,
    /// `fqrate`.
    pub fqrate: i64,
    /// `server_affinity` (-1 if absent).
    pub server_affinity: i64,
}

/// Extras a client adds beside the test parameters.
#[derive(Debug, Clone, Default)]
pub struct ParamsExtras<'a> {
    /// Authentication token.
    pub authtoken: Option<&'a str>,
    /// Version string to announce.
    pub client_version: &'a str,
}

/// Encodes parameters as compact JSON, in the order the C client uses.
pub fn encode_params(p: &TestParams, extras: &ParamsExtras) -> String {
    let mut m = Map::new();
    let proto_key = match p.protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
        Protocol::Sctp => "sctp",
        // wirespeed's key (docs/protocols.md § QUIC data): a QUIC test is
        // no TCP test, so "tcp" is not sent beside it.
        Protocol::Quic => "quic",
    };
    m.insert(proto_key.into(), Value::Bool(true));
    m.insert("omit".into(), Value::from(ceil_secs(p.omit)));
    if let Some(a) = p.server_affinity {
        m.insert("server_affinity".into(), Value::from(a as u64));
    }
    let (time, num, blocks) = match p.end {
        EndCondition::Time(d) => (ceil_secs(d), 0, 0),
        EndCondition::Bytes(n) => (0, n, 0),
        EndCondition::Blocks(n) => (0, 0, n),
    };
    m.insert("time".into(), Value::from(time));
    m.insert("num".into(), Value::from(num));
    m.insert("blockcount".into(), Value::from(blocks));
    if let Some(mss) = p.mss.filter(|m| *m > 0) {
        m.insert("MSS".into(), Value::from(mss));
    }
    if p.nodelay {
        m.insert("nodelay".into(), Value::Bool(true));
    }
    m.insert("parallel".into(), Value::from(p.streams));
    match p.direction {
        Direction::Reverse => {
            m.insert("reverse".into(), Value::Bool(true));
        }
        Direction::Bidir => {
            m.insert("bidirectional".into(), Value::Bool(true));
        }
        _ => {}
    }
    if p.mptcp {
        m.insert("mptcp".into(), Value::Bool(true));
    }
    if p.quic_probes && p.protocol == Protocol::Quic {
        // wirespeed's key: one more QUIC stream echoes round-trip probes.
        m.insert("quic_probes".into(), Value::Bool(true));
    }
    if let Some(w) = p.window.filter(|w| *w > 0) {
        m.insert("window".into(), Value::from(w));
    }
    let len = p.block_len_or_default();
    m.insert("len".into(), Value::from(len));
    let bandwidth = effective_bitrate(p);
    if bandwidth > 0 || p.protocol == Protocol::Udp {
        m.insert("bandwidth".into(), Value::from(bandwidth));
    }
    if let Some(pps) = p.pps {
        // Extension: C servers ignore unknown keys and use `bandwidth`.
        m.insert("pps".into(), Value::from(pps));
    }
    if p.fq_rate > 0 {
        m.insert("fqrate".into(), Value::from(p.fq_rate));
    }
    if p.pacing_timer > 0 {
        m.insert("pacing_timer".into(), Value::from(p.pacing_timer));
    }
    if p.burst > 0 {
        m.insert("burst".into(), Value::from(p.burst));
    }
    if p.protocol == Protocol::Udp {
        let (gso, dg, bf, gro, grobf) = if p.gsro {
            let per = (65507 / len.max(1)).clamp(1, 128);
            (1, len, len * per, 1, 65507)
        } else {
            (0, 0, 65507, 0, 65507)
        };
        m.insert("gso".into(), Value::from(gso));
        m.insert("gso_dg_size".into(), Value::from(dg));
        m.insert("gso_bf_size".into(), Value::from(bf));
        m.insert("gro".into(), Value::from(gro));
        m.insert("gro_bf_size".into(), Value::from(grobf));
    }
    if p.tos > 0 {
        m.insert("TOS".into(), Value::from(p.tos));
    }
    if let Some(fl) = p.flowlabel {
        m.insert("flowlabel".into(), Value::from(fl));
    }
    if let Some(t) = &p.title {
        m.insert("title".into(), Value::from(t.clone()));
    }
    if let Some(x) = &p.extra_data {
        m.insert("extra_data".into(), Value::from(x.clone()));
    }
    if let Some(c) = &p.congestion {
        m.insert("congestion".into(), Value::from(c.clone()));
    }
    if p.get_server_output {
        m.insert("get_server_output".into(), Value::from(1));
    }
    if p.udp_counters_64bit {
        m.insert("udp_counters_64bit".into(), Value::from(1));
    }
    if p.repeating_payload {
        m.insert("repeating_payload".into(), Value::from(1));
    }
    if p.zerocopy {
        m.insert("zerocopy".into(), Value::from(1));
    }
    if p.dont_fragment {
        m.insert("dont_fragment".into(), Value::from(1));
    }
    if let Some(t) = extras.authtoken {
        m.insert("authtoken".into(), Value::from(t));
    }
    if p.skip_rx_copy {
        m.insert("skip_rx_copy".into(), Value::from(1));
    }
    m.insert("client_version".into(), Value::from(extras.client_version));
    to_compact(&Value::Object(m))
}

/// The per-stream bit rate to announce: the `-b` rate, or for a packet rate
/// its equivalent in bits (so a C server sending in reverse paces close to it).
pub fn effective_bitrate(p: &TestParams) -> u64 {
    match p.pps {
        Some(pps) => pps.saturating_mul(p.block_len_or_default() as u64).saturating_mul(8),
        None => p.rate,
    }
}

fn ceil_secs(d: Duration) -> u64 {
    let s = d.as_secs();
    if d.subsec_nanos() > 0 { s + 1 } else { s }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::msg(Code::RECVPARAMS, msg)
}

fn get_int(m: &Map<String, Value>, key: &str) -> Result<Option<i64>, Error> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(_)) => lenient_i64(v)
            .map(Some)
            .ok_or_else(|| bad(format!("parameter '{key}' is out of range"))),
        Some(_) => Err(bad(format!("parameter '{key}' must be a number"))),
    }
}

fn get_bool(m: &Map<String, Value>, key: &str) -> Result<bool, Error> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v @ Value::Number(_)) => Ok(lenient_i64(v).unwrap_or(1) != 0),
        Some(_) => Err(bad(format!("parameter '{key}' must be a boolean"))),
    }
}

/// Numeric flags that C servers enable by mere presence.
fn get_presence(m: &Map<String, Value>, key: &str) -> Result<bool, Error> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Number(_)) | Some(Value::Bool(true)) => Ok(true),
        Some(Value::Bool(false)) => Ok(false),
        Some(_) => Err(bad(format!("parameter '{key}' must be a number"))),
    }
}

fn get_str(m: &Map<String, Value>, key: &str) -> Result<Option<String>, Error> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("parameter '{key}' must be a string"))),
    }
}

/// Decodes parameter JSON. Only structure and types are checked here;
/// [`validate`] applies the server's ranges and limits.
pub fn decode_params(bytes: &[u8]) -> Result<ParamsIn, Error> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("invalid parameter JSON: {e}")))?;
    let m = match v {
        Value::Object(m) => m,
        _ => return Err(bad("parameter JSON is not an object")),
    };
    let mut p = TestParams::default();
    let udp = get_bool(&m, "udp")?;
    let sctp = get_bool(&m, "sctp")?;
    let _tcp = get_bool(&m, "tcp")?;
    let quic = get_bool(&m, "quic")?;
    if quic && (udp || sctp) {
        return Err(bad("parameter 'quic' cannot go with 'udp' or 'sctp'"));
    }
    p.protocol = if quic {
        Protocol::Quic
    } else if udp {
        Protocol::Udp
    } else if sctp {
        Protocol::Sctp
    } else {
        Protocol::Tcp
    };
    let mut raw = RawNumbers {
        server_affinity: -1,
        ..RawNumbers::default()
    };
    raw.omit = get_int(&m, "omit")?.unwrap_or(0);
    raw.time = get_int(&m, "time")?.unwrap_or(0);
    raw.num = get_int(&m, "num")?.unwrap_or(0);
    raw.blockcount = get_int(&m, "blockcount")?.unwrap_or(0);
    raw.parallel = get_int(&m, "parallel")?.unwrap_or(1);
    raw.len = get_int(&m, "len")?.unwrap_or(0);
    raw.bandwidth = get_int(&m, "bandwidth")?.unwrap_or(0);
    raw.window = get_int(&m, "window")?.unwrap_or(0);
    raw.mss = get_int(&m, "MSS")?.unwrap_or(0);
    raw.burst = get_int(&m, "burst")?.unwrap_or(0);
    raw.tos = get_int(&m, "TOS")?.unwrap_or(0);
    raw.flowlabel = get_int(&m, "flowlabel")?.unwrap_or(0);
    raw.fqrate = get_int(&m, "fqrate")?.unwrap_or(0);
    raw.server_affinity = get_int(&m, "server_affinity")?.unwrap_or(-1);
    let pacing = get_int(&m, "pacing_timer")?.unwrap_or(0);
    let pps = get_int(&m, "pps")?;
    for k in ["gso", "gso_dg_size", "gso_bf_size", "gro", "gro_bf_size"] {
        get_int(&m, k)?;
    }

    p.omit = Duration::from_secs(raw.omit.clamp(0, i64::MAX) as u64);
    p.end = if raw.num > 0 {
        EndCondition::Bytes(raw.num as u64)
    } else if raw.blockcount > 0 {
        EndCondition::Blocks(raw.blockcount as u64)
    } else {
        EndCondition::Time(Duration::from_secs(raw.time.clamp(0, i64::MAX) as u64))
    };
    p.streams = raw.parallel.clamp(0, u32::MAX as i64) as u32;
    p.block_len = (raw.len > 0).then(|| raw.len.min(u32::MAX as i64) as u32);
    p.rate = raw.bandwidth.max(0) as u64;
    p.pps = pps.filter(|v| *v > 0).map(|v| v as u64);
    p.burst = raw.burst.clamp(0, u32::MAX as i64) as u32;
    p.fq_rate = raw.fqrate.max(0) as u64;
    p.pacing_timer = pacing.clamp(0, u32::MAX as i64) as u32;
    p.window = (raw.window > 0).then(|| raw.window.min(u32::MAX as i64) as u32);
    p.mss = (raw.mss > 0).then(|| raw.mss.min(u32::MAX as i64) as u32);
    p.tos = raw.tos.clamp(0, 255) as u8;
    p.flowlabel = (raw.flowlabel != 0).then(|| raw.flowlabel.clamp(0, u32::MAX as i64) as u32);
    p.server_affinity = (raw.server_affinity >= 0).then_some(raw.server_affinity as usize);
    p.nodelay = get_bool(&m, "nodelay")?;
    p.mptcp = get_bool(&m, "mptcp")?;
    p.quic_probes = get_bool(&m, "quic_probes")?;
    if p.quic_probes && !quic {
        return Err(bad("parameter 'quic_probes' needs 'quic'"));
    }
    let reverse = get_bool(&m, "reverse")?;
    let bidir = get_bool(&m, "bidirectional")?;
    p.direction = match (reverse, bidir) {
        (_, true) => Direction::Bidir,
        (true, false) => Direction::Reverse,
        _ => Direction::Forward,
    };
    if reverse && bidir {
        return Err(Error::new(Code::REVERSEBIDIR));
    }
    p.get_server_output = get_presence(&m, "get_server_output")?;
    p.udp_counters_64bit = get_presence(&m, "udp_counters_64bit")?;
    p.repeating_payload = get_presence(&m, "repeating_payload")?;
    p.zerocopy = get_bool(&m, "zerocopy")?;
    p.dont_fragment = get_bool(&m, "dont_fragment")?;
    p.skip_rx_copy = get_bool(&m, "skip_rx_copy")?;
    p.gsro = get_int(&m, "gro")?.unwrap_or(0) != 0 || get_int(&m, "gso")?.unwrap_or(0) != 0;
    p.title = get_str(&m, "title")?;
    p.extra_data = get_str(&m, "extra_data")?;
    p.congestion = get_str(&m, "congestion")?;
    let authtoken = get_str(&m, "authtoken")?;
    let client_version = get_str(&m, "client_version")?;
    Ok(ParamsIn {
        params: p,
        authtoken,
        client_version,
        raw,
    })
}

/// A server's limits on what a client may ask for.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most streams per direction.
    pub max_streams: u32,
    /// Longest `time + omit`; `None` = no limit (and `time = 0` allowed).
    pub max_duration: Option<Duration>,
    /// Largest total requested bit rate (0 = none).
    pub bitrate_limit: u64,
}

/// Applies iperf3 master's server-side range checks and the server's limits.
pub fn validate(p: &ParamsIn, limits: &Limits) -> Result<(), Error> {
    let r = &p.raw;
    let e = |c: Code| Err(Error::new(c));
    if p.params.protocol == Protocol::Sctp {
        // No SCTP data path on this server (see net::sctp_unavailable).
        return e(Code::NOSCTP);
    }
    if !(0..=600).contains(&r.omit) {
        return e(Code::OMIT);
    }
    if r.server_affinity > 1024 {
        return e(Code::AFFINITY);
    }
    if !(0..=86400).contains(&r.time) {
        return e(Code::DURATION);
    }
    if r.num < 0 || r.blockcount < 0 || r.bandwidth < 0 || r.fqrate < 0 {
        return e(Code::RECVPARAMS);
    }
    if !(0..=32767).contains(&r.mss) {
        return e(Code::MSS);
    }
    if r.parallel < 1 || r.parallel > limits.max_streams as i64 {
        return Err(Error::msg(
            Code::NUMSTREAMS,
            format!(
                "invalid number of parallel streams (min = 1, max = {})",
                limits.max_streams
            ),
        ));
    }
    if !(0..=512 * 1024 * 1024).contains(&r.window) {
        return e(Code::BUFSIZE);
    }
    if !(0..=1000).contains(&r.burst) {
        return e(Code::BURST);
    }
    if !(0..=255).contains(&r.tos) {
        return e(Code::BADTOS);
    }
    if r.flowlabel != 0 && !(1..=0xFFFFF).contains(&r.flowlabel) {
        return e(Code::SETFLOW);
    }
    match p.params.protocol {
        Protocol::Udp => {
            if r.len != 0 && !(16..=65507).contains(&r.len) {
                return e(Code::UDPBLOCKSIZE);
            }
        }
        _ => {
            if !(0..=1024 * 1024).contains(&r.len) {
                return e(Code::BLOCKSIZE);
            }
        }
    }
    if let Some(max) = limits.max_duration {
        let total = r.time.saturating_add(r.omit);
        let unbounded = r.time == 0 && r.num == 0 && r.blockcount == 0;
        if unbounded || total as u64 > max.as_secs() {
            return e(Code::MAXSERVERTESTDURATIONEXCEEDED);
        }
    }
    if limits.bitrate_limit > 0 {
        let dirs: u64 = if p.params.direction == Direction::Bidir { 2 } else { 1 };
        let per = (r.bandwidth.max(0) as u64).max(r.fqrate.max(0) as u64);
        let total = per.saturating_mul(r.parallel.max(0) as u64).saturating_mul(dirs);
        if total > limits.bitrate_limit {
            return e(Code::TOTALRATE);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extras() -> ParamsExtras<'static> {
        ParamsExtras {
            authtoken: None,
            client_version: "3.12",
        }
    }

    #[test]
    fn default_tcp_params_match_the_c_client() {
        let p = TestParams {
            end: EndCondition::Time(Duration::from_secs(1)),
            direction: Direction::Reverse,
            ..TestParams::default()
        };
        let s = encode_params(&p, &extras());
        assert_eq!(
            s,
            r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"reverse":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#
        );
    }

    #[test]
    fn udp_params_carry_bandwidth_and_gso_keys() {
        let p = TestParams {
            protocol: Protocol::Udp,
            end: EndCondition::Time(Duration::from_secs(2)),
            block_len: Some(32768),
            rate: 5_000_000,
            ..TestParams::default()
        };
        let s = encode_params(
            &p,
            &ParamsExtras {
                authtoken: None,
                client_version: "3.21+",
            },
        );
        assert_eq!(
            s,
            r#"{"udp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":32768,"bandwidth":5000000,"pacing_timer":1000,"gso":0,"gso_dg_size":0,"gso_bf_size":65507,"gro":0,"gro_bf_size":65507,"client_version":"3.21+"}"#
        );
    }

    #[test]
    fn round_trip_keeps_the_test() {
        let p = TestParams {
            streams: 4,
            direction: Direction::Bidir,
            end: EndCondition::Bytes(5_000_000),
            window: Some(1 << 20),
            mss: Some(1400),
            nodelay: true,
            tos: 0x10,
            congestion: Some("cubic".into()),
            get_server_output: true,
            title: Some("t".into()),
            extra_data: Some("x".into()),
            ..TestParams::default()
        };
        let s = encode_params(&p, &extras());
        let back = decode_params(s.as_bytes()).unwrap();
        assert_eq!(back.params.streams, 4);
        assert_eq!(back.params.direction, Direction::Bidir);
        assert_eq!(back.params.end, EndCondition::Bytes(5_000_000));
        assert_eq!(back.params.window, Some(1 << 20));
        assert_eq!(back.params.mss, Some(1400));
        assert!(back.params.nodelay && back.params.get_server_output);
        assert_eq!(back.params.tos, 0x10);
        assert_eq!(back.params.congestion.as_deref(), Some("cubic"));
        assert_eq!(back.client_version.as_deref(), Some("3.12"));
    }

    #[test]
    fn hostile_params_are_errors_not_panics() {
        for bad in [
            &b"not json"[..],
            b"[1,2]",
            b"{\"parallel\":\"many\"}",
            b"{\"reverse\":\"yes\"}",
            b"{\"title\":5}",
            b"{\"time\":1e300}",
            b"",
        ] {
            assert!(decode_params(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn validation_ranges() {
        let limits = Limits {
            max_streams: 128,
            max_duration: None,
            bitrate_limit: 0,
        };
        let check = |json: &str| {
            let p = decode_params(json.as_bytes()).unwrap();
            validate(&p, &limits).map_err(|e| e.code)
        };
        assert_eq!(check(r#"{"tcp":true,"parallel":1,"len":131072,"time":10}"#), Ok(()));
        assert_eq!(check(r#"{"tcp":true,"parallel":0}"#), Err(Code::NUMSTREAMS));
        assert_eq!(check(r#"{"tcp":true,"parallel":1000000}"#), Err(Code::NUMSTREAMS));
        assert_eq!(
            check(r#"{"tcp":true,"parallel":1,"len":2000000}"#),
            Err(Code::BLOCKSIZE)
        );
        assert_eq!(check(r#"{"udp":true,"parallel":1,"len":8}"#), Err(Code::UDPBLOCKSIZE));
        assert_eq!(check(r#"{"tcp":true,"parallel":1,"time":100000}"#), Err(Code::DURATION));
        assert_eq!(check(r#"{"tcp":true,"parallel":1,"omit":601}"#), Err(Code::OMIT));
        assert_eq!(
            check(r#"{"tcp":true,"parallel":1,"window":1073741824}"#),
            Err(Code::BUFSIZE)
        );
        assert_eq!(check(r#"{"tcp":true,"parallel":1,"time":-5}"#), Err(Code::DURATION));
        let limits = Limits {
            max_streams: 128,
            max_duration: Some(Duration::from_secs(30)),
            bitrate_limit: 1_000_000,
        };
        let p = decode_params(br#"{"tcp":true,"parallel":1,"time":60}"#).unwrap();
        assert_eq!(
            validate(&p, &limits).unwrap_err().code,
            Code::MAXSERVERTESTDURATIONEXCEEDED
        );
        let p = decode_params(br#"{"tcp":true,"parallel":2,"time":10,"bandwidth":600000}"#).unwrap();
        assert_eq!(validate(&p, &limits).unwrap_err().code, Code::TOTALRATE);
    }

    #[test]
    fn negative_numbers_from_312_are_read_back() {
        let p = decode_params(br#"{"tcp":true,"parallel":1,"time":18446744073709551615}"#).unwrap();
        assert_eq!(p.raw.time, -1);
    }

    #[test]
    fn quic_is_its_own_protocol_key() {
        let p = TestParams {
            protocol: Protocol::Quic,
            ..TestParams::default()
        };
        let json = encode_params(&p, &ParamsExtras::default());
        assert!(json.starts_with(r#"{"quic":true,"#), "{json}");
        assert!(!json.contains(r#""tcp""#), "{json}");
        let back = decode_params(json.as_bytes()).unwrap();
        assert_eq!(back.params.protocol, Protocol::Quic);
        // A number is read as iperf3 reads its flags.
        let n = decode_params(br#"{"quic":1,"parallel":2}"#).unwrap();
        assert_eq!(n.params.protocol, Protocol::Quic);
        assert!(decode_params(br#"{"quic":true,"udp":true}"#).is_err());
        // The probe stream of --latency goes with QUIC alone.
        let mut p = TestParams {
            protocol: Protocol::Quic,
            quic_probes: true,
            ..TestParams::default()
        };
        let json = encode_params(&p, &ParamsExtras::default());
        assert!(json.contains(r#""quic_probes":true"#), "{json}");
        assert!(decode_params(json.as_bytes()).unwrap().params.quic_probes);
        p.protocol = Protocol::Tcp;
        let json = encode_params(&p, &ParamsExtras::default());
        assert!(!json.contains("quic_probes"), "{json}");
        assert!(decode_params(br#"{"tcp":true,"quic_probes":true}"#).is_err());
    }
}
