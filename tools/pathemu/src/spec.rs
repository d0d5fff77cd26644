//! A direction's settings and the text that sets them: `delay=100ms,
//! rate=100M,queue=2000,loss=0.5%,jitter=4ms,ecn=mark,mark_at=1ms` on the
//! command line and in `set` commands, and `[a2b:|b2a:]AT+DURATION`
//! outages.

use serde_json::{Value, json};

/// How one direction of the path treats packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DirSettings {
    /// One-way propagation delay, nanoseconds.
    pub delay_ns: u64,
    /// Bottleneck rate in bits per second of IP packets; `None`: unlimited.
    pub rate_bps: Option<u64>,
    /// Packets that may wait for the link (not counting the one being
    /// sent); an arrival that finds this many waiting is dropped.
    pub queue: u64,
    /// Probability that a packet is lost before the queue.
    pub loss: f64,
    /// Each packet's delay is `delay` plus a uniform draw in ±jitter
    /// (never below zero in total), nanoseconds.
    pub jitter_ns: u64,
    /// What the path does to the ECN field.
    pub ecn: EcnMode,
    /// `ecn=mark`: the queue delay from which an ECT(1) packet is marked CE
    /// (and from which an ECT(0) packet's marking probability rises),
    /// nanoseconds.
    pub mark_at_ns: u64,
}

/// What a direction does to the ECN field of the packets it forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EcnMode {
    /// Leaves it alone.
    #[default]
    Off,
    /// A CE-marking queue: ECT(1) marked CE once its queue delay reaches
    /// `mark_at` (DualPI2's L4S step); ECT(0) marked CE with a probability
    /// rising linearly from 0 at `mark_at` to 1 at 10 × `mark_at` (RED-like);
    /// Not-ECT only meets the tail-drop queue, as without it.
    Mark,
    /// Clears it (Not-ECT).
    Bleach,
    /// ECT(0) becomes ECT(1).
    Remark0to1,
    /// ECT(1) becomes ECT(0).
    Remark1to0,
}

impl EcnMode {
    /// `off`, `mark`, `bleach`, `remark0to1`, `remark1to0`.
    pub fn parse(s: &str) -> Result<EcnMode, String> {
        Ok(match s {
            "off" | "none" => EcnMode::Off,
            "mark" => EcnMode::Mark,
            "bleach" => EcnMode::Bleach,
            "remark0to1" => EcnMode::Remark0to1,
            "remark1to0" => EcnMode::Remark1to0,
            _ => return Err(format!("ecn={s:?} is not off, mark, bleach, remark0to1 or remark1to0")),
        })
    }

    /// The name [`EcnMode::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            EcnMode::Off => "off",
            EcnMode::Mark => "mark",
            EcnMode::Bleach => "bleach",
            EcnMode::Remark0to1 => "remark0to1",
            EcnMode::Remark1to0 => "remark1to0",
        }
    }
}

impl Default for DirSettings {
    fn default() -> Self {
        DirSettings {
            delay_ns: 0,
            rate_bps: None,
            queue: 1000,
            loss: 0.0,
            jitter_ns: 0,
            ecn: EcnMode::Off,
            mark_at_ns: 1_000_000,
        }
    }
}

impl DirSettings {
    /// Applies `key=value,...` on top of these settings; keys not named
    /// keep their values.
    pub fn apply(&mut self, text: &str) -> Result<(), String> {
        let mut next = *self;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?} is not key=value"))?;
            let value = value.trim();
            match key.trim() {
                "delay" => next.delay_ns = duration_ns(value)?,
                "rate" => next.rate_bps = rate(value)?,
                "queue" => {
                    next.queue = value
                        .parse()
                        .map_err(|_| format!("queue={value:?} is not a number of packets"))?
                }
                "loss" => next.loss = probability(value)?,
                "jitter" => next.jitter_ns = duration_ns(value)?,
                "ecn" => next.ecn = EcnMode::parse(value)?,
                "mark_at" => next.mark_at_ns = duration_ns(value)?,
                k => {
                    return Err(format!(
                        "unknown setting {k:?} (delay, rate, queue, loss, jitter, ecn, mark_at)"
                    ));
                }
            }
        }
        *self = next;
        Ok(())
    }

    /// The settings as the stats and ready lines report them.
    pub fn to_json(self) -> Value {
        json!({
            "delay_us": self.delay_ns as f64 / 1e3,
            "rate_bps": self.rate_bps,
            "queue": self.queue,
            "loss": self.loss,
            "jitter_us": self.jitter_ns as f64 / 1e3,
            "ecn": self.ecn.name(),
            "mark_at_us": self.mark_at_ns as f64 / 1e3,
        })
    }
}

/// A number with an optional unit suffix, split.
fn split_unit(s: &str) -> (&str, &str) {
    let at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(s.len());
    // An exponent's `e` is only part of the number when digits follow it.
    let at = if s[..at].ends_with('e') { at - 1 } else { at };
    (&s[..at], &s[at..])
}

/// `100ms`, `50us`, `1.5s`, `250ns`, `0`: nanoseconds. A bare number
/// other than zero is refused: its unit would be a guess.
pub fn duration_ns(s: &str) -> Result<u64, String> {
    let (num, unit) = split_unit(s.trim());
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a duration"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" if n == 0.0 => 0.0,
        _ => return Err(format!("{s:?} is not a duration (e.g. 100ms, 50us, 1.5s)")),
    };
    let ns = n * scale;
    if !(0.0..=1e15).contains(&ns) {
        return Err(format!("duration {s:?} is out of range"));
    }
    Ok(ns.round() as u64)
}

/// `100M`, `1G`, `64k`, `20Mbit`, `1500000`: bits per second (powers of
/// 1000). `0`, `unlimited`, `none` or `inf`: no limit.
pub fn rate(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if matches!(t, "unlimited" | "none" | "inf" | "0") {
        return Ok(None);
    }
    let (num, unit) = split_unit(t);
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a rate"))?;
    let unit = unit
        .strip_suffix("bit")
        .or_else(|| unit.strip_suffix("bps"))
        .unwrap_or(unit);
    let scale = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        "g" | "G" => 1e9,
        _ => return Err(format!("{s:?} is not a rate (e.g. 100M, 1G, 64k bits/s)")),
    };
    let bps = n * scale;
    if !(1.0..=1e13).contains(&bps) {
        return Err(format!("rate {s:?} is out of range"));
    }
    Ok(Some(bps.round() as u64))
}

/// `0.5%` or `0.005`: a probability.
pub fn probability(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let p = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{s:?} is not a probability (e.g. 0.5% or 0.005)"))?;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("loss {s:?} is not between 0 and 100%"));
    }
    Ok(p)
}

/// Which directions a command or outage applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dirs {
    /// A to B only.
    A2b,
    /// B to A only.
    B2a,
    /// Both.
    Both,
}

impl Dirs {
    /// `a2b`, `b2a`, `both`.
    pub fn parse(s: &str) -> Result<Dirs, String> {
        match s {
            "a2b" => Ok(Dirs::A2b),
            "b2a" => Ok(Dirs::B2a),
            "both" | "" => Ok(Dirs::Both),
            _ => Err(format!("{s:?} is not a direction (a2b, b2a, both)")),
        }
    }

    /// Whether direction `i` (0 = a2b, 1 = b2a) is included.
    pub fn has(self, i: usize) -> bool {
        matches!((self, i), (Dirs::Both, _) | (Dirs::A2b, 0) | (Dirs::B2a, 1))
    }
}

/// A scheduled outage: from `at` after ready, for `dur`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outage {
    /// Directions that go down.
    pub dirs: Dirs,
    /// Start, nanoseconds after the ready line.
    pub at_ns: u64,
    /// Length, nanoseconds.
    pub dur_ns: u64,
}

impl Outage {
    /// `[a2b:|b2a:|both:]AT+DURATION`, e.g. `5s+3s` or `b2a:1.5s+200ms`.
    pub fn parse(s: &str) -> Result<Outage, String> {
        let (dirs, rest) = match s.split_once(':') {
            Some((d, r)) => (Dirs::parse(d)?, r),
            None => (Dirs::Both, s),
        };
        let (at, dur) = rest
            .split_once('+')
            .ok_or_else(|| format!("outage {s:?} is not AT+DURATION (e.g. 5s+3s)"))?;
        Ok(Outage {
            dirs,
            at_ns: duration_ns(at)?,
            dur_ns: duration_ns(dur)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_apply_over_earlier_ones() {
        let mut s = DirSettings::default();
        s.apply("delay=100ms,rate=100M,queue=2000,loss=0.5%,jitter=4ms")
            .unwrap();
        assert_eq!(
            s,
            DirSettings {
                delay_ns: 100_000_000,
                rate_bps: Some(100_000_000),
                queue: 2000,
                loss: 0.005,
                jitter_ns: 4_000_000,
                ecn: EcnMode::Off,
                mark_at_ns: 1_000_000,
            }
        );
        s.apply("ecn=mark,mark_at=500us").unwrap();
        assert_eq!((s.ecn, s.mark_at_ns), (EcnMode::Mark, 500_000));
        s.apply("ecn=remark1to0").unwrap();
        assert_eq!(s.ecn, EcnMode::Remark1to0);
        assert!(s.apply("ecn=paint").is_err());
        assert_eq!(s.ecn, EcnMode::Remark1to0);
        s.apply("rate=unlimited, loss=0.25").unwrap();
        assert_eq!((s.rate_bps, s.loss, s.delay_ns), (None, 0.25, 100_000_000));
        // A bad item changes nothing, not even the good items before it.
        assert!(s.apply("delay=1ms,speed=3").is_err());
        assert_eq!(s.delay_ns, 100_000_000);
    }

    #[test]
    fn units() {
        assert_eq!(duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(duration_ns("50us"), Ok(50_000));
        assert_eq!(duration_ns("0"), Ok(0));
        assert!(duration_ns("5").is_err() && duration_ns("-1ms").is_err() && duration_ns("ms").is_err());
        assert_eq!(rate("1G"), Ok(Some(1_000_000_000)));
        assert_eq!(rate("20Mbit"), Ok(Some(20_000_000)));
        assert_eq!(rate("1e6"), Ok(Some(1_000_000)));
        assert_eq!(rate("0"), Ok(None));
        assert!(rate("10X").is_err() && rate("0.1").is_err());
        assert_eq!(probability("20%"), Ok(0.2));
        assert!(probability("101%").is_err() && probability("x").is_err());
    }

    #[test]
    fn outages() {
        assert_eq!(
            Outage::parse("5s+3s"),
            Ok(Outage {
                dirs: Dirs::Both,
                at_ns: 5_000_000_000,
                dur_ns: 3_000_000_000
            })
        );
        assert_eq!(Outage::parse("b2a:1.5s+200ms").unwrap().dirs, Dirs::B2a);
        assert!(Outage::parse("5s").is_err() && Outage::parse("up:1s+1s").is_err());
    }
}
