//! Number parsing and formatting with the suffix rules of both iperf dialects.
//!
//! iperf3 sizes (`-l`, `-n`, `-w`, ...) take `K/M/G/T` (either case) as powers of
//! 1024; iperf3 rates (`-b`, `--fq-rate`) take them as powers of 1000. iperf2 uses
//! case instead: lower-case `k/m/g` are powers of 1000, upper-case `K/M/G` powers
//! of 1024, for bytes and bits alike. Output formatting follows iperf3's
//! `unit_snprintf` (and iperf2's variant, which adds 3 decimals below 1).

use std::fmt;

/// Why a number on the command line was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid unit value or suffix: '{}'", self.0)
    }
}

/// Splits `"12.5K"` into the numeric prefix and the rest.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let bytes = s.as_bytes();
    let mut end = 0;
    if end < bytes.len() && (bytes[end] == b'+' || bytes[end] == b'-') {
        end += 1;
    }
    let digits_start = end;
    while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
        end += 1;
    }
    // Optional exponent, as strtod accepts ("1e6").
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') && end > digits_start {
        let mut e = end + 1;
        if e < bytes.len() && (bytes[e] == b'+' || bytes[e] == b'-') {
            e += 1;
        }
        if e < bytes.len() && bytes[e].is_ascii_digit() {
            while e < bytes.len() && bytes[e].is_ascii_digit() {
                e += 1;
            }
            end = e;
        }
    }
    if end == digits_start {
        return None;
    }
    let value: f64 = s[..end].parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    Some((value, &s[end..]))
}

fn suffix_power(c: char) -> Option<i32> {
    match c.to_ascii_uppercase() {
        'K' => Some(1),
        'M' => Some(2),
        'G' => Some(3),
        'T' => Some(4),
        _ => None,
    }
}

fn apply_suffix(s: &str, base: f64) -> Result<f64, UnitError> {
    let err = || UnitError(s.to_string());
    let (value, rest) = split_number(s).ok_or_else(err)?;
    let mut chars = rest.chars();
    match chars.next() {
        None => Ok(value),
        Some(c) => {
            let p = suffix_power(c).ok_or_else(err)?;
            if chars.next().is_some() {
                return Err(err());
            }
            Ok(value * base.powi(p))
        }
    }
}

/// iperf3 size (`unit_atof`): `K/M/G/T` in either case multiply by 1024^n.
pub fn parse_size_iperf3(s: &str) -> Result<f64, UnitError> {
    apply_suffix(s, 1024.0)
}

/// iperf3 size as an integer byte count (fractions truncate, as iperf3's
/// `unit_atoi` does). Negative values are rejected.
pub fn parse_size_u64_iperf3(s: &str) -> Result<u64, UnitError> {
    let v = parse_size_iperf3(s)?;
    if v < 0.0 || v >= u64::MAX as f64 {
        return Err(UnitError(s.to_string()));
    }
    Ok(v as u64)
}

/// iperf3 rate (`unit_atof_rate`): `K/M/G/T` in either case multiply by 1000^n.
pub fn parse_rate_iperf3(s: &str) -> Result<f64, UnitError> {
    apply_suffix(s, 1000.0)
}

/// A `-b` argument: a bit rate or a packet rate, with an optional burst.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSpec {
    /// Bits per second (0 = unlimited) when `pps` is `None`.
    pub bits_per_sec: u64,
    /// Packets per second, when the rate was given as `Npps`.
    pub pps: Option<u64>,
    /// Blocks written back-to-back before the pacer checks again (0 = none given).
    pub burst: u32,
}

/// Parses iperf3's `-b rate[KMGT][/burst]`, plus `Npps` (an iperf 2.0.8 idea).
pub fn parse_bitrate_iperf3(s: &str) -> Result<RateSpec, UnitError> {
    let (rate_part, burst_part) = match s.split_once('/') {
        Some((r, b)) => (r, Some(b)),
        None => (s, None),
    };
    let burst = match burst_part {
        None => 0,
        Some(b) => {
            let v = parse_plain_u64(b).ok_or_else(|| UnitError(s.to_string()))?;
            u32::try_from(v).map_err(|_| UnitError(s.to_string()))?
        }
    };
    let lower = rate_part.trim().to_ascii_lowercase();
    if let Some(num) = lower.strip_suffix("pps") {
        let v = parse_rate_iperf3(num).map_err(|_| UnitError(s.to_string()))?;
        if v < 0.0 {
            return Err(UnitError(s.to_string()));
        }
        return Ok(RateSpec {
            bits_per_sec: 0,
            pps: Some(v.round() as u64),
            burst,
        });
    }
    let v = parse_rate_iperf3(rate_part).map_err(|_| UnitError(s.to_string()))?;
    if v < 0.0 || v >= u64::MAX as f64 {
        return Err(UnitError(s.to_string()));
    }
    Ok(RateSpec {
        bits_per_sec: v as u64,
        pps: None,
        burst,
    })
}

/// iperf2 `byte_atoi`/`byte_atof`: lower-case `k/m/g` = 1000^n, upper-case
/// `K/M/G` = 1024^n; `t/T` as the next power. Used for bytes and bits alike.
pub fn parse_iperf2(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError(s.to_string());
    let (value, rest) = split_number(s).ok_or_else(err)?;
    let mut chars = rest.chars();
    let mult = match chars.next() {
        None => 1.0,
        Some(c) => {
            let p = suffix_power(c).ok_or_else(err)?;
            if c.is_ascii_lowercase() {
                1000f64.powi(p)
            } else {
                1024f64.powi(p)
            }
        }
    };
    if chars.next().is_some() {
        return Err(err());
    }
    Ok(value * mult)
}

/// iperf 2's "bit-or-byte" rate (`--fq-rate`): a lower-case suffix (or
/// none) counts bits, an upper-case one bytes, both in powers of 1000
/// (`10m` = 10,000,000 bit/s, `10M` = 10,000,000 byte/s). Returns bit/s.
pub fn parse_iperf2_bit_or_byte(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError(s.to_string());
    let (value, rest) = split_number(s).ok_or_else(err)?;
    let mut chars = rest.chars();
    let (mult, bytes) = match chars.next() {
        None => (1.0, false),
        Some(c) => (1000f64.powi(suffix_power(c).ok_or_else(err)?), c.is_ascii_uppercase()),
    };
    if chars.next().is_some() || value < 0.0 {
        return Err(err());
    }
    Ok(value * mult * if bytes { 8.0 } else { 1.0 })
}

/// A plain non-negative integer: decimal, or `0x..` hex / `0..` octal when
/// `c_style` (strtol base 0, as iperf uses for `-S`, `-L`, `-A`).
pub fn parse_int(s: &str, c_style: bool) -> Option<i64> {
    let t = s.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v = if c_style {
        if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            i64::from_str_radix(h, 16).ok()?
        } else if t.len() > 1 && t.starts_with('0') {
            i64::from_str_radix(&t[1..], 8).ok()?
        } else {
            t.parse::<i64>().ok()?
        }
    } else {
        t.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

fn parse_plain_u64(s: &str) -> Option<u64> {
    let v = parse_int(s, false)?;
    u64::try_from(v).ok()
}

/// Seconds as a float (`-i 0.5`, `-t 2.5`); rejects garbage and non-finite values.
pub fn parse_seconds(s: &str) -> Option<f64> {
    let (v, rest) = split_number(s)?;
    if !rest.is_empty() {
        return None;
    }
    Some(v)
}

/// Formats a byte quantity the way iperf3's `unit_snprintf` does.
///
/// `fmt` is one of `a k m g t` (bits, decimal steps) or `A K M G T` (bytes,
/// binary steps); `a`/`A` pick the unit adaptively. The caller appends `s`
/// or `s/sec`.
pub fn format_iperf3(bytes: f64, fmt: char) -> String {
    const BIT_LABELS: [&str; 5] = ["bit", "Kbit", "Mbit", "Gbit", "Tbit"];
    const BYTE_LABELS: [&str; 5] = ["Byte", "KByte", "MByte", "GByte", "TByte"];
    let (mut value, step, labels) = if fmt.is_ascii_lowercase() {
        (bytes * 8.0, 1000.0, &BIT_LABELS)
    } else {
        (bytes, 1024.0, &BYTE_LABELS)
    };
    let idx = match fmt.to_ascii_lowercase() {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        _ => {
            let mut i = 0;
            while value >= step && i < 4 {
                value /= step;
                i += 1;
            }
            return format!("{} {}", three_digits(value), labels[i]);
        }
    };
    value /= step.powi(idx as i32);
    format!("{} {}", three_digits(value), labels[idx])
}

/// `%4.2f` below 9.995, `%4.1f` below 99.95, else `%4.0f`.
fn three_digits(v: f64) -> String {
    if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    }
}

/// Formats a byte quantity the way iperf2 does (`byte_snprintf`): like iperf3
/// but with 3 decimals below 0.9995, `b`/`B` for plain bits/bytes and Peta.
pub fn format_iperf2(bytes: f64, fmt: char) -> String {
    const BIT_LABELS: [&str; 6] = ["bit", "Kbit", "Mbit", "Gbit", "Tbit", "Pbit"];
    const BYTE_LABELS: [&str; 6] = ["Byte", "KByte", "MByte", "GByte", "TByte", "PByte"];
    let (mut value, step, labels) = if fmt.is_ascii_lowercase() {
        (bytes * 8.0, 1000.0, &BIT_LABELS)
    } else {
        (bytes, 1024.0, &BYTE_LABELS)
    };
    let idx = match fmt.to_ascii_lowercase() {
        'b' => 0,
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => {
            let mut i = 0;
            while value >= step && i < 5 {
                value /= step;
                i += 1;
            }
            return format!("{} {}", iperf2_digits(value), labels[i]);
        }
    };
    value /= step.powi(idx as i32);
    format!("{} {}", iperf2_digits(value), labels[idx])
}

fn iperf2_digits(v: f64) -> String {
    if v < 0.9995 && v != 0.0 {
        format!("{v:4.3}")
    } else if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from iperf3's own src/t_units.c.
    #[test]
    fn iperf3_size_suffixes_are_binary_and_case_insensitive() {
        assert_eq!(parse_size_iperf3("0.5K").unwrap(), 512.0);
        assert_eq!(parse_size_iperf3("1M").unwrap(), 1048576.0);
        assert_eq!(parse_size_iperf3("4G").unwrap(), 4.0 * 1073741824.0);
        assert_eq!(parse_size_iperf3("3t").unwrap(), 3.0 * 1099511627776.0);
        assert_eq!(parse_size_iperf3("1k").unwrap(), 1024.0);
        assert_eq!(parse_size_u64_iperf3("128K").unwrap(), 131072);
    }

    #[test]
    fn iperf3_rates_are_decimal() {
        assert_eq!(parse_rate_iperf3("10M").unwrap(), 10e6);
        assert_eq!(parse_rate_iperf3("1g").unwrap(), 1e9);
        assert_eq!(parse_rate_iperf3("1.5K").unwrap(), 1500.0);
    }

    #[test]
    fn bad_suffixes_are_rejected() {
        assert!(parse_size_iperf3("10X").is_err());
        assert!(parse_size_iperf3("K").is_err());
        assert!(parse_size_iperf3("").is_err());
        assert!(parse_rate_iperf3("1MM").is_err());
        assert_eq!(
            parse_size_iperf3("10X").unwrap_err().to_string(),
            "invalid unit value or suffix: '10X'"
        );
    }

    #[test]
    fn bitrate_with_burst_and_pps() {
        let r = parse_bitrate_iperf3("100M/10").unwrap();
        assert_eq!(r.bits_per_sec, 100_000_000);
        assert_eq!(r.burst, 10);
        assert_eq!(r.pps, None);
        let r = parse_bitrate_iperf3("10000pps").unwrap();
        assert_eq!(r.pps, Some(10000));
        let r = parse_bitrate_iperf3("2kpps/5").unwrap();
        assert_eq!(r.pps, Some(2000));
        assert_eq!(r.burst, 5);
        assert!(parse_bitrate_iperf3("1M/x").is_err());
        assert!(parse_bitrate_iperf3("-5M").is_err());
    }

    #[test]
    fn iperf2_case_decides_the_base() {
        assert_eq!(parse_iperf2("10m").unwrap(), 10e6);
        assert_eq!(parse_iperf2("10M").unwrap(), 10.0 * 1048576.0);
        assert_eq!(parse_iperf2("128K").unwrap(), 131072.0);
        assert_eq!(parse_iperf2("1k").unwrap(), 1000.0);
    }

    #[test]
    fn c_style_integers() {
        assert_eq!(parse_int("0x34", true), Some(52));
        assert_eq!(parse_int("064", true), Some(52));
        assert_eq!(parse_int("52", true), Some(52));
        assert_eq!(parse_int("0", true), Some(0));
        assert_eq!(parse_int("x", true), None);
    }

    // unit_snprintf vectors from iperf3's src/t_units.c.
    #[test]
    fn iperf3_formatting_matches_t_units() {
        assert_eq!(format_iperf3(1024.0, 'A'), "1.00 KByte");
        assert_eq!(format_iperf3(1048576.0, 'A'), "1.00 MByte");
        assert_eq!(format_iperf3(1000.0, 'k'), "8.00 Kbit");
        assert_eq!(format_iperf3(1_000_000.0, 'a'), "8.00 Mbit");
        let g4 = 4.0 * 1073741824.0;
        assert_eq!(format_iperf3(g4, 'A'), "4.00 GByte");
        assert_eq!(format_iperf3(g4, 'a'), "34.4 Gbit");
        let t4 = g4 * 1024.0;
        assert_eq!(format_iperf3(t4, 'A'), "4.00 TByte");
        assert_eq!(format_iperf3(t4, 'a'), "35.2 Tbit");
        let p4 = t4 * 1024.0;
        assert_eq!(format_iperf3(p4, 'A'), "4096 TByte");
        assert_eq!(format_iperf3(p4, 'a'), "36029 Tbit");
    }

    #[test]
    fn iperf3_formatting_widths() {
        assert_eq!(format_iperf3(0.0, 'A'), "0.00 Byte");
        assert_eq!(format_iperf3(0.0, 'a'), "0.00 bit");
        assert_eq!(format_iperf3(131072.0, 'A'), " 128 KByte");
        assert_eq!(format_iperf3(1.14 * 1073741824.0, 'A'), "1.14 GByte");
        assert_eq!(format_iperf3(1e9 / 8.0 * 9.79, 'a'), "9.79 Gbit");
        assert_eq!(format_iperf3(1e6 / 8.0 * 10.0, 'g'), "0.01 Gbit");
        assert_eq!(format_iperf3(1e6 / 8.0 * 10.0, 'K'), "1221 KByte");
    }

    #[test]
    fn iperf2_formatting_matches_samples() {
        // `-f` letters sample in the spec (18944060 bytes in 0.5181 s).
        assert_eq!(format_iperf2(18944060.0, 'B'), "18944060 Byte");
        assert_eq!(format_iperf2(18944060.0, 'K'), "18500 KByte");
        assert_eq!(format_iperf2(18944060.0, 'M'), "18.1 MByte");
        assert_eq!(format_iperf2(18944060.0, 'G'), "0.018 GByte");
        assert_eq!(format_iperf2(18944060.0 / 0.5181, 'g'), "0.293 Gbit");
        assert_eq!(format_iperf2(131072.0, 'A'), " 128 KByte");
    }
}
