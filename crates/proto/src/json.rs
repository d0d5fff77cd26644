//! JSON text the way iperf3 (cJSON) writes it.
//!
//! Two layouts: *compact* for the wire (`{"tcp":true,"omit":0,...}`) and
//! *formatted* for `-J` (one member per line, TAB indentation, `"key":\tvalue`,
//! arrays of objects as `[{` ... `}, {` ... `}]`). Numbers follow cJSON: an
//! integral value prints without a fraction, others with `%.15g` (or `%.17g`
//! when 15 digits do not round-trip), NaN and infinities as `null`.

use serde_json::{Map, Number, Value};

/// Builds a JSON number from a float the way cJSON would store it.
pub fn num(v: f64) -> Value {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e15 {
        if v >= 0.0 {
            return Value::Number(Number::from(v as u64));
        }
        return Value::Number(Number::from(v as i64));
    }
    Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null)
}

/// Formats a float as C's `%.<prec>g` would.
pub fn format_g(v: f64, prec: usize) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let prec = prec.max(1);
    let sci = format!("{:.*e}", prec - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= prec as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (prec as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(f) = n.as_f64() {
        if !f.is_finite() {
            out.push_str("null");
        } else if f == f.trunc() && f.abs() < 1e15 {
            out.push_str(&format!("{f:.0}"));
        } else {
            let short = format_g(f, 15);
            if short.parse::<f64>().ok() == Some(f) {
                out.push_str(&short);
            } else {
                out.push_str(&format_g(f, 17));
            }
        }
    } else {
        out.push_str("null");
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Compact text (the wire format).
pub fn to_compact(v: &Value) -> String {
    let mut out = String::new();
    compact(&mut out, v);
    out
}

fn compact(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                compact(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                compact(out, x);
            }
            out.push('}');
        }
    }
}

/// cJSON "formatted" text, as `iperf3 -J` prints it (no trailing newline).
pub fn to_formatted(v: &Value) -> String {
    let mut out = String::new();
    formatted(&mut out, v, 0);
    out
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push('\t');
    }
}

fn formatted(out: &mut String, v: &Value, depth: usize) {
    match v {
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                formatted(out, x, depth + 1);
            }
            out.push(']');
        }
        Value::Object(m) => formatted_object(out, m, depth),
        other => compact(out, other),
    }
}

fn formatted_object(out: &mut String, m: &Map<String, Value>, depth: usize) {
    out.push_str("{\n");
    let n = m.len();
    for (i, (k, x)) in m.iter().enumerate() {
        indent(out, depth + 1);
        write_string(out, k);
        out.push_str(":\t");
        formatted(out, x, depth + 1);
        if i + 1 < n {
            out.push(',');
        }
        out.push('\n');
    }
    indent(out, depth);
    out.push('}');
}

/// Reads an integer leniently: iperf3 3.12/3.13 print negative numbers as
/// their unsigned 64-bit image (`-1` as `18446744073709551615`), and some
/// writers use doubles where integers are meant.
pub fn lenient_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(i)
            } else if let Some(u) = n.as_u64() {
                Some(u as i64)
            } else {
                let f = n.as_f64()?;
                if f.is_finite() && f.abs() < 9.2e18 {
                    Some(f as i64)
                } else {
                    None
                }
            }
        }
        _ => None,
    }
}

/// Reads a number as a float (integers included).
pub fn lenient_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_like_cjson() {
        assert_eq!(to_compact(&num(0.0)), "0");
        assert_eq!(to_compact(&num(6975651840.0)), "6975651840");
        assert_eq!(to_compact(&num(1.000164)), "1.000164");
        assert_eq!(to_compact(&num(27929483311.4844)), "27929483311.4844");
        assert_eq!(to_compact(&num(27929483311.484375)), "27929483311.484375");
        assert_eq!(to_compact(&num(22.747775741068956)), "22.747775741068956");
        assert_eq!(to_compact(&num(f64::NAN)), "null");
        assert_eq!(to_compact(&num(-1.0)), "-1");
        assert_eq!(to_compact(&json!(1e20)), "1e+20");
    }

    #[test]
    fn percent_g_matches_c() {
        assert_eq!(format_g(0.0001234, 15), "0.0001234");
        assert_eq!(format_g(0.00001234, 15), "1.234e-05");
        assert_eq!(format_g(123456.0, 3), "1.23e+05");
        assert_eq!(format_g(2.5, 2), "2.5");
        assert_eq!(format_g(13.4, 2), "13");
        assert_eq!(format_g(100.0, 2), "1e+02");
        assert_eq!(format_g(0.55, 2), "0.55");
    }

    #[test]
    fn formatted_layout_matches_iperf3() {
        let v = json!({"start": {"connected": [{"socket": 5}], "empty": {}}, "intervals": []});
        let s = to_formatted(&v);
        let expect = "{\n\t\"start\":\t{\n\t\t\"connected\":\t[{\n\t\t\t\t\"socket\":\t5\n\t\t\t}],\n\t\t\"empty\":\t{\n\t\t}\n\t},\n\t\"intervals\":\t[]\n}";
        assert_eq!(s, expect);
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(to_compact(&json!("a\"b\\c\n\u{1}")), "\"a\\\"b\\\\c\\n\\u0001\"");
    }

    #[test]
    fn lenient_integers_unwrap_312_negatives() {
        assert_eq!(lenient_i64(&json!(18446744073709551615u64)), Some(-1));
        assert_eq!(lenient_i64(&json!(5.0)), Some(5));
        assert_eq!(lenient_i64(&json!("5")), None);
    }
}
