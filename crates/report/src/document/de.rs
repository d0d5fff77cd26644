//! Lenient readers for the model's fields. A document may be foreign (any
//! iperf3 3.x) or damaged, so a field of the wrong type reads as absent
//! rather than failing the whole document; only a document that is not
//! JSON at all, or not an object, is an error.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// A number, or `None` for absent, non-numeric, non-finite, or iperf3
/// 3.12's unsigned image of `-1` (TCP_INFO fields it could not read).
pub(crate) fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(number(&v))
}

/// The number of `v` as [`f64`] reads it.
pub(crate) fn number(v: &Value) -> Option<f64> {
    if let Some(u) = v.as_u64()
        && u > i64::MAX as u64
    {
        return None;
    }
    v.as_f64().filter(|f| f.is_finite())
}

/// An integer (iperf3's unsigned `-1` reads as `-1`; a float is truncated).
pub(crate) fn i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(wirespeed_proto::json::lenient_i64(&v))
}

/// A flag: `true`/`false`, or iperf3's `1`/`0`.
pub(crate) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Bool(b) => Some(b),
        Value::Number(n) => Some(n.as_f64().unwrap_or(0.0) != 0.0),
        _ => None,
    })
}

/// A string.
pub(crate) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A part of the document (an object), `None` if it does not read as one.
pub(crate) fn part<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(if v.is_object() { T::deserialize(v).ok() } else { None })
}

/// A boxed part (a document inside a document).
pub(crate) fn boxed<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<Box<T>>, D::Error> {
    part(d).map(|p| p.map(Box::new))
}

/// A list, `None` if it is not an array; items that do not read are left out.
pub(crate) fn list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(a) => Some(a.into_iter().filter_map(|v| T::deserialize(v).ok()).collect()),
        _ => None,
    })
}

/// A list that may be absent (then empty).
pub(crate) fn items<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    list(d).map(Option::unwrap_or_default)
}

/// Writes a flag as iperf3 does in `test_start` (`1`/`0`).
pub(crate) fn flag_as_int<S: Serializer>(v: &Option<bool>, s: S) -> Result<S::Ok, S::Error> {
    v.map(u8::from).serialize(s)
}

/// Writes a number as the writers always have
/// ([`wirespeed_proto::json::num`]): a whole value below 1e15 as an
/// integer, anything else as a float (a non-finite one as `null`).
pub(crate) fn num<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => wirespeed_proto::json::num(*x).serialize(s),
        None => s.serialize_none(),
    }
}

/// Writes a count the model holds as a float (bytes, windows, µs, bit/s
/// asked) as the integer it was: whole values as integers (exact up to
/// 2^53), anything else as a float.
pub(crate) fn whole<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.fract() == 0.0 && *x >= 0.0 && *x < 18_446_744_073_709_551_616.0 => s.serialize_u64(*x as u64),
        Some(x) if x.fract() == 0.0 && *x < 0.0 && *x >= -9_223_372_036_854_775_808.0 => s.serialize_i64(*x as i64),
        Some(x) => s.serialize_f64(*x),
        None => s.serialize_none(),
    }
}

/// A number that may be written as `null`: absent is `None`, present is
/// `Some` of what [`f64`] reads (so `null` is `Some(None)`).
pub(crate) fn nullable_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    f64(d).map(Some)
}
