//! Property tests: UDP loss accounting under any arrival order, unit
//! parsing and formatting round trips, and the wire codecs of both
//! dialects (decoding never panics on any bytes; what we encode decodes to
//! what we meant).

use std::collections::HashSet;
use std::time::Duration;

use proptest::prelude::*;
use wirespeed::config::{Direction, EndCondition, Protocol, TestParams};
use wirespeed::proto::iperf2::{self, Amount, ClientAck, ClientHeader, HeaderExt, Need, ServerReport, StartTime};
use wirespeed::proto::iperf3::params::{ParamsExtras, decode_params, encode_params};
use wirespeed::proto::iperf3::udp::DatagramHeader;
use wirespeed::proto::iperf3::{Framer, Results, StreamResult};
use wirespeed::stats::udp::{Arrival, UdpAccounting};
use wirespeed::units;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Both command-line parsers, and the unit readers, on any argument
    /// vector: a configuration or an error, never a panic.
    #[test]
    fn command_lines_never_panic(args in prop::collection::vec("[-a-zA-Z0-9=,.:%@/ ]{0,12}", 0..12)) {
        let _ = wirespeed::cli::iperf3::parse_args(&args);
        let _ = wirespeed::cli::iperf2::parse_args_with_env(&args, &|_| None);
        for a in &args {
            let _ = units::parse_size_iperf3(a);
            let _ = units::parse_bitrate_iperf3(a);
            let _ = units::parse_iperf2(a);
            let _ = units::parse_int(a, true);
            let _ = units::parse_seconds(a);
        }
    }

    /// An isochronous sender's frame fields, as a hostile sender could
    /// write them, at both versions' offsets: the receiver's frame
    /// accounting never panics.
    #[test]
    fn frame_accounting_takes_any_datagrams(data in prop::collection::vec(any::<u8>(), 0..2000)) {
        let frames = std::sync::Arc::new(wirespeed::stats::FrameCounters::default());
        for at in [iperf2::udp::ISOCH_AT_21, iperf2::udp::ISOCH_AT_22] {
            let mut t = wirespeed::dialect::iperf2::hooks::FrameTracker::new(at, true, frames.clone());
            for d in data.chunks(120) {
                t.feed(d, i64::from_le_bytes([d[0]; 8]));
            }
        }
    }

    /// Any multiset of sequence numbers in any order (all inside the
    /// duplicate window): received + lost is the highest sequence number,
    /// every repeat is a duplicate, and out-of-order counts the distinct
    /// datagrams that arrived after a higher one.
    #[test]
    fn udp_counts_are_exact_in_any_arrival_order(arrivals in prop::collection::vec(1u64..3000, 0..4000)) {
        let mut a = UdpAccounting::new();
        for &s in &arrivals {
            a.on_datagram(s, 0);
        }
        let distinct: HashSet<u64> = arrivals.iter().copied().collect();
        let max = arrivals.iter().copied().max().unwrap_or(0);
        prop_assert_eq!(a.max_seq(), max);
        prop_assert_eq!(a.lost() + distinct.len() as i64, max as i64);
        prop_assert_eq!(a.duplicates() as usize, arrivals.len() - distinct.len());
        let (mut hi, mut seen, mut late) = (0, HashSet::new(), 0u64);
        for &s in &arrivals {
            if seen.insert(s) && s < hi {
                late += 1;
            }
            hi = hi.max(s);
        }
        prop_assert_eq!(a.out_of_order(), late);
    }

    /// Hostile sequence numbers (any 64-bit value, 0 included): every
    /// datagram is classified exactly once and nothing overflows.
    #[test]
    fn udp_accounting_survives_any_sequence_numbers(seqs in prop::collection::vec(any::<u64>(), 0..500)) {
        let mut a = UdpAccounting::new();
        let (mut ahead, mut late, mut dups, mut invalid) = (0u64, 0u64, 0u64, 0u64);
        for &s in &seqs {
            match a.on_datagram(s, s as i64) {
                Arrival::Ahead { .. } => ahead += 1,
                Arrival::Late | Arrival::Ancient => late += 1,
                Arrival::Duplicate => dups += 1,
                Arrival::Invalid => invalid += 1,
            }
        }
        prop_assert_eq!(ahead + late + dups + invalid, seqs.len() as u64);
        prop_assert_eq!(a.out_of_order(), late);
        prop_assert_eq!(a.duplicates(), dups);
        prop_assert!(a.lost() >= 0);
        prop_assert!(a.jitter.seconds().is_finite() && a.jitter.seconds() >= 0.0);
    }

    /// A 32-bit counter unwraps to the 64-bit value nearest the highest
    /// seen, across the 2^32 wrap in both directions.
    #[test]
    fn thirty_two_bit_sequence_numbers_unwrap(base in 1u64..(1 << 40), delta in -(1i64 << 30)..(1i64 << 30)) {
        let mut a = UdpAccounting::new();
        a.on_datagram(base, 0);
        let target = base as i64 + delta;
        prop_assume!(target > 0);
        prop_assert_eq!(a.unwrap32(target as u32), target as u64);
    }

    /// iperf3 sizes: a plain number, or one with K/M/G/T in either case,
    /// is that many bytes (powers of 1024); rates use powers of 1000.
    #[test]
    fn iperf3_units_parse_to_their_value(n in 0u32..1_000_000, suffix in prop::sample::select(vec!["", "k", "K", "m", "M", "g", "G", "t", "T"])) {
        let power = match suffix.to_ascii_lowercase().as_str() {
            "" => 0, "k" => 1, "m" => 2, "g" => 3, _ => 4,
        };
        let text = format!("{n}{suffix}");
        prop_assert_eq!(units::parse_size_iperf3(&text).unwrap(), n as f64 * 1024f64.powi(power));
        prop_assert_eq!(units::parse_rate_iperf3(&text).unwrap(), n as f64 * 1000f64.powi(power));
    }

    /// iperf 2: lower case is 1000^n, upper case 1024^n.
    #[test]
    fn iperf2_units_take_their_base_from_the_case(n in 0u32..1_000_000, c in prop::sample::select(vec!['k', 'K', 'm', 'M', 'g', 'G'])) {
        let power = match c.to_ascii_lowercase() { 'k' => 1, 'm' => 2, _ => 3 };
        let base: f64 = if c.is_ascii_lowercase() { 1000.0 } else { 1024.0 };
        prop_assert_eq!(units::parse_iperf2(&format!("{n}{c}")).unwrap(), n as f64 * base.powi(power));
    }

    /// `-b rate/burst` and `Npps`: what was written is what is read.
    #[test]
    fn bitrates_round_trip(rate in 0u64..(1 << 50), burst in 0u32..1000, pps in any::<bool>()) {
        if pps {
            let r = units::parse_bitrate_iperf3(&format!("{rate}pps/{burst}")).unwrap();
            prop_assert_eq!((r.pps, r.burst), (Some(rate), burst));
        } else {
            let r = units::parse_bitrate_iperf3(&format!("{rate}/{burst}")).unwrap();
            prop_assert_eq!((r.bits_per_sec, r.pps, r.burst), (rate, None, burst));
        }
    }

    /// C-style integers (strtol base 0) in decimal, hex and octal.
    #[test]
    fn c_style_integers_round_trip(n in 0i64..i64::MAX) {
        prop_assert_eq!(units::parse_int(&n.to_string(), true), Some(n));
        prop_assert_eq!(units::parse_int(&format!("{n:#x}"), true), Some(n));
        prop_assert_eq!(units::parse_int(&format!("0{n:o}"), true), Some(n));
        prop_assert_eq!(units::parse_int(&format!("-{n}"), false), Some(-n));
    }

    /// Formatting keeps three significant digits: reading the text back
    /// gives the value within half a unit of the last digit.
    #[test]
    fn formatted_quantities_read_back_close(bytes in 1.0f64..1e15, fmt in prop::sample::select(vec!['a', 'A', 'k', 'K', 'm', 'M', 'g', 'G'])) {
        for text in [units::format_iperf3(bytes, fmt), units::format_iperf2(bytes, fmt)] {
            let (num, unit) = text.trim().split_once(' ').unwrap();
            let v: f64 = num.parse().unwrap();
            let (scale, bits) = match unit {
                "Byte" => (1.0, false), "KByte" => (1024.0, false), "MByte" => (1048576.0, false),
                "GByte" => (1073741824.0, false), "TByte" => (1099511627776.0, false),
                "PByte" => (1125899906842624.0, false),
                "bit" => (1.0, true), "Kbit" => (1e3, true), "Mbit" => (1e6, true),
                "Gbit" => (1e9, true), "Tbit" => (1e12, true), "Pbit" => (1e15, true),
                other => panic!("unit {other} in {text}"),
            };
            let back = v * scale / if bits { 8.0 } else { 1.0 };
            let decimals = num.split('.').nth(1).map_or(0, |d| d.len() as i32);
            let step = 10f64.powi(-decimals) * scale / if bits { 8.0 } else { 1.0 };
            prop_assert!((back - bytes).abs() <= step / 2.0 + bytes * 1e-12, "{bytes} {fmt} -> {text}");
        }
    }

    /// Parameter JSON: any bytes are an error or a parameter set, never a
    /// panic; and arbitrary JSON objects of the right keys with any types.
    #[test]
    fn parameter_decoding_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_params(&bytes);
    }

    #[test]
    fn parameter_keys_of_any_type_are_checked(
        fields in prop::collection::vec((prop::sample::select(vec![
            "tcp", "udp", "time", "num", "blockcount", "parallel", "len", "bandwidth", "window", "MSS",
            "omit", "reverse", "bidirectional", "title", "TOS", "flowlabel", "get_server_output",
            "client_version", "authtoken", "pacing_timer", "fqrate", "burst",
        ]), json_leaf()), 0..12)
    ) {
        let mut m = serde_json::Map::new();
        for (k, v) in fields {
            m.insert(k.to_string(), v);
        }
        let text = serde_json::Value::Object(m).to_string();
        let _ = decode_params(text.as_bytes());
    }

    /// What a client encodes, a server decodes to the same test.
    #[test]
    fn parameters_round_trip(p in test_params()) {
        let text = encode_params(&p, &ParamsExtras { authtoken: None, client_version: "prop" });
        let back = decode_params(text.as_bytes()).unwrap().params;
        prop_assert_eq!(back.protocol, p.protocol);
        prop_assert_eq!(back.direction, p.direction);
        prop_assert_eq!(back.streams, p.streams);
        prop_assert_eq!(back.end, p.end);
        prop_assert_eq!(back.omit, p.omit);
        prop_assert_eq!(back.block_len, Some(p.block_len_or_default()));
        prop_assert_eq!(back.window, p.window);
        prop_assert_eq!(back.mss, p.mss);
        prop_assert_eq!(back.rate, p.rate);
        prop_assert_eq!(back.tos, p.tos);
        prop_assert_eq!(back.flowlabel, p.flowlabel);
        prop_assert_eq!(back.title, p.title);
        prop_assert_eq!(back.congestion, p.congestion);
        prop_assert_eq!(back.nodelay, p.nodelay);
        prop_assert_eq!(back.get_server_output, p.get_server_output);
    }

    /// Results JSON: encode then decode gives the same results.
    #[test]
    fn results_round_trip(r in results()) {
        let back = Results::decode(r.encode().as_bytes()).unwrap();
        prop_assert_eq!(back.streams.len(), r.streams.len());
        prop_assert_eq!(back.sender_has_retransmits, r.sender_has_retransmits);
        prop_assert_eq!(&back.congestion_used, &r.congestion_used);
        for (b, s) in back.streams.iter().zip(&r.streams) {
            prop_assert_eq!((b.id, b.bytes, b.retransmits, b.errors, b.packets), (s.id, s.bytes, s.retransmits, s.errors, s.packets));
            prop_assert_eq!((b.omitted_errors, b.omitted_packets), (s.omitted_errors, s.omitted_packets));
            prop_assert!((b.jitter - s.jitter).abs() <= 1e-9 * s.jitter.abs().max(1.0));
            prop_assert!((b.end_time - s.end_time).abs() <= 1e-9 * s.end_time.abs().max(1.0));
        }
    }

    #[test]
    fn results_decoding_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = Results::decode(&bytes);
    }

    /// The control framer: a length prefix over the cap is refused before
    /// anything is buffered for it, whatever the chunking.
    #[test]
    fn control_frames_split_anywhere(body in "[a-z]{1,200}", cut in 0usize..210, cap in 1usize..300) {
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body.as_bytes());
        let cut = cut.min(frame.len());
        let mut f = Framer::new();
        f.push(&frame[..cut]);
        let first = f.take_json(cap);
        f.push(&frame[cut..]);
        let r = match first {
            Ok(Some(b)) => Ok(Some(b)),
            Ok(None) => f.take_json(cap),
            Err(e) => Err(e),
        };
        if body.len() > cap {
            prop_assert!(r.is_err());
        } else {
            prop_assert_eq!(r.unwrap().unwrap(), body.as_bytes().to_vec());
        }
    }

    /// iperf 2 TCP headers: decoding any bytes never panics, the length it
    /// asks for is capped, and a header we encode decodes to itself.
    #[test]
    fn iperf2_headers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        match ClientHeader::need_tcp(&bytes) {
            Ok(Need::More(n)) | Ok(Need::Done(n)) => prop_assert!(n <= iperf2::header::MAX_TCP_HEADER),
            Err(_) => {}
        }
        let _ = ClientHeader::decode_tcp(&bytes);
        let _ = ClientHeader::decode_udp(&bytes);
        let _ = ClientAck::decode(&bytes);
        let _ = ServerReport::decode(&bytes);
        let _ = iperf2::DatagramHeader::read(&bytes, true);
    }

    #[test]
    fn iperf2_headers_round_trip(h in iperf2_header()) {
        let bytes = h.encode_tcp();
        prop_assert_eq!(ClientHeader::need_tcp(&bytes), Ok(Need::Done(bytes.len())));
        let back = ClientHeader::decode_tcp(&bytes).unwrap();
        prop_assert_eq!(back.num_threads, h.num_threads);
        prop_assert_eq!(back.port, h.port);
        prop_assert_eq!(back.buf_len, h.buf_len);
        prop_assert_eq!(back.amount, h.amount);
        prop_assert_eq!(back.key, h.key);
        prop_assert_eq!(back.ext.map(|e| e.upper), h.ext.map(|e| e.upper));
        prop_assert_eq!(back.start, h.start);
    }

    /// UDP datagram headers of both dialects and iperf 2's server report.
    #[test]
    fn datagram_headers_round_trip(sec in any::<u32>(), usec in 0u32..1_000_000, seq in any::<u64>(), wide in any::<bool>()) {
        let h = DatagramHeader { sec, usec, seq };
        let mut buf = [0u8; 64];
        prop_assert!(h.write(&mut buf, wide));
        let back = DatagramHeader::read(&buf, wide).unwrap();
        prop_assert_eq!(back.seq, if wide { seq } else { seq as u32 as u64 });
        prop_assert_eq!((back.sec, back.usec), (sec, usec));
        let h2 = iperf2::DatagramHeader { seq: seq as i64, sec, usec };
        h2.write(&mut buf);
        prop_assert_eq!(iperf2::DatagramHeader::read(&buf, true), Some(h2));
    }

    #[test]
    fn iperf2_server_reports_round_trip(bytes in any::<u64>(), lost in 0u64..(1 << 40), ooo in 0u64..(1 << 40), dgrams in 0u64..(1 << 40), sec in any::<u32>(), usec in 0u32..1_000_000) {
        let r = ServerReport {
            flags: iperf2::flags::VERSION1 | iperf2::flags::SEQNO64B,
            total_bytes: bytes,
            duration: (sec, usec),
            lost,
            out_of_order: ooo,
            datagrams: dgrams,
            jitter: (0, usec),
            latency: None,
        };
        let back = ServerReport::decode(&r.encode()).unwrap();
        prop_assert_eq!((back.total_bytes, back.lost, back.out_of_order, back.datagrams), (bytes, lost, ooo, dgrams));
        prop_assert_eq!(back.duration, (sec, usec));
    }
}

/// Found by `iperf2_headers_never_panic`: a keyed header without the
/// length bit (so 60 bytes long) put its key's length field inside the
/// extension, and the decoder sliced 60..58.
#[test]
fn a_keyed_header_whose_key_length_sits_in_the_extension_is_not_a_panic() {
    let mut bytes = vec![0u8; 70];
    bytes[..4].copy_from_slice(&0x140c_0000u32.to_be_bytes());
    bytes[58..60].copy_from_slice(&4u16.to_be_bytes());
    assert_eq!(ClientHeader::need_tcp(&bytes), Ok(Need::Done(64)));
    let h = ClientHeader::decode_tcp(&bytes[..64]).unwrap();
    assert_eq!(h.key.as_deref(), Some(&bytes[60..64]));
}

/// Found by the `iperf2_tcp_header` fuzzer: a keyed header without the
/// extension decoded, but re-encoded without its length field, so the key
/// could not be found again.
#[test]
fn a_keyed_header_without_the_extension_round_trips() {
    let mut bytes = vec![0u8; 32];
    // VERSION1 | KEYCHECK | LEN_BIT, length 26 (the key's value offset).
    bytes[..4].copy_from_slice(&(0x9001_0000u32 | (26 << 1)).to_be_bytes());
    bytes[24..26].copy_from_slice(&6u16.to_be_bytes());
    bytes[26..32].copy_from_slice(b"secret");
    assert_eq!(ClientHeader::need_tcp(&bytes), Ok(Need::Done(32)));
    let h = ClientHeader::decode_tcp(&bytes).unwrap();
    assert_eq!(h.key.as_deref(), Some(&b"secret"[..]));
    let again = h.encode_tcp();
    assert_eq!(ClientHeader::need_tcp(&again), Ok(Need::Done(again.len())));
    assert_eq!(ClientHeader::decode_tcp(&again).unwrap().key, h.key);
}

fn json_leaf() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        (-1e300f64..1e300).prop_map(serde_json::Value::from),
        ".{0,20}".prop_map(serde_json::Value::from),
        Just(serde_json::json!([1, "x"])),
        Just(serde_json::json!({"a": {}})),
    ]
}

fn test_params() -> impl Strategy<Value = TestParams> {
    (
        (
            prop::sample::select(vec![Protocol::Tcp, Protocol::Udp]),
            prop::sample::select(vec![Direction::Forward, Direction::Reverse, Direction::Bidir]),
            1u32..10_000,
            prop_oneof![
                (0u64..86_400).prop_map(|s| EndCondition::Time(Duration::from_secs(s))),
                (1u64..u32::MAX as u64).prop_map(EndCondition::Bytes),
                (1u64..u32::MAX as u64).prop_map(EndCondition::Blocks),
            ],
            0u64..600,
            prop::option::of(16u32..65507),
        ),
        (
            prop::option::of(1u32..(512 << 20)),
            prop::option::of(1u32..32767),
            0u64..(1 << 40),
            0u8..=255,
            prop::option::of(1u32..=0xFFFFF),
            prop::option::of(".{0,30}"),
            prop::option::of("[a-z]{1,10}"),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (protocol, direction, streams, end, omit, block_len),
                (window, mss, rate, tos, flowlabel, title, congestion, nodelay, gso),
            )| TestParams {
                protocol,
                direction,
                streams,
                end,
                omit: Duration::from_secs(omit),
                block_len,
                window,
                mss,
                rate,
                tos,
                flowlabel,
                title,
                congestion,
                nodelay,
                get_server_output: gso,
                ..TestParams::default()
            },
        )
}

fn results() -> impl Strategy<Value = Results> {
    let stream = (
        any::<i32>(),
        0u64..(i64::MAX as u64),
        any::<i32>(),
        0u32..1_000_000,
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        0u32..100_000_000,
        prop::option::of(0u64..(i64::MAX as u64)),
    )
        .prop_map(|(id, bytes, rt, jit, errors, oe, packets, op, end, ob)| StreamResult {
            id: id as i64,
            bytes,
            retransmits: rt as i64,
            jitter: jit as f64 / 1e6,
            errors: errors as i64,
            omitted_errors: Some(oe as i64),
            packets: packets as i64,
            omitted_packets: Some(op as i64),
            start_time: 0.0,
            end_time: end as f64 / 1e6,
            // The receiver's reorder counts, never negative when present.
            out_of_order: (errors >= 0).then_some(errors as i64 / 3),
            duplicates: (oe >= 0).then_some(oe as i64 / 5),
            ports: (packets >= 0).then_some(((packets & 0xffff) as u16, (op & 0xffff) as u16)),
            omitted_bytes: ob,
            ecn: None,
            // Negotiated (with a count) on some streams, absent on others.
            tcp_ecn: (rt >= 0).then_some(wirespeed::proto::iperf3::TcpEcnResult {
                negotiated: true,
                seen: rt % 2 == 0,
                acked_under_ece: Some(rt as u64 / 7),
            }),
        });
    (
        prop::collection::vec(stream, 0..20),
        -1i64..=1,
        prop::option::of("[a-z]{1,10}"),
        0u32..10_000,
    )
        .prop_map(|(streams, shr, cc, cpu)| Results {
            cpu_util_total: cpu as f64 / 100.0,
            cpu_util_user: cpu as f64 / 200.0,
            cpu_util_system: cpu as f64 / 200.0,
            sender_has_retransmits: shr,
            congestion_used: cc,
            streams,
            ..Results::default()
        })
}

fn iperf2_header() -> impl Strategy<Value = ClientHeader> {
    (
        1u32..1000,
        any::<u16>(),
        any::<u32>(),
        prop_oneof![
            Just(None),
            (1u32..0x7FFF_FFFF).prop_map(|b| Some(Amount::Bytes(b))),
            (1u32..0x7FFF_FFFF).prop_map(|c| Some(Amount::Time(c))),
        ],
        prop::option::of((any::<u16>(), any::<u32>(), any::<u32>())),
        prop::option::of(prop::collection::vec(any::<u8>(), 4..=128)),
    )
        .prop_map(|(threads, port, buf_len, amount, ext, key)| {
            let (ext, start) = match ext {
                Some((upper, sec, usec)) => {
                    // Only the start block's flag, so the optional blocks are known.
                    let upper = (upper
                        & !(iperf2::flags::upper::ISOCH_SETTINGS
                            | iperf2::flags::upper::PERIODICBURST
                            | iperf2::flags::upper::ISOCH
                            | iperf2::flags::upper::FQRATESET
                            | iperf2::flags::upper::EPOCH_START))
                        | iperf2::flags::upper::TRIPTIME;
                    (
                        Some(HeaderExt {
                            upper,
                            ..HeaderExt::default()
                        }),
                        Some(StartTime { sec, usec, fq_rate: 0 }),
                    )
                }
                None => (None, None),
            };
            ClientHeader {
                flags: iperf2::flags::VERSION1,
                num_threads: threads,
                port: port as u32,
                buf_len,
                amount,
                ext,
                start,
                key,
                ..ClientHeader::default()
            }
        })
}
