//! Network options: addresses, ports, TOS and TTL, routing.

use super::{int_value, value};
use crate::getopt::Occurrence;
use crate::iperf2::CliError;
use crate::iperf2::opt::Opt;
use crate::iperf2::state::ParseState;
use crate::values::{dscp_by_name, split_dev};
use wirespeed_core::config::Family;
use wirespeed_core::units::parse_int;

type Result<T = ()> = std::result::Result<T, CliError>;

/// The most ports one `-p m-n` range may span.
const MAX_PORT_RANGE: u16 = 1024;

/// `-4`.
pub fn v4(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.net.family = Family::V4;
    Ok(())
}

/// `-6`, `-V`.
pub fn v6(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.net.family = Family::V6;
    Ok(())
}

/// `-c host[%dev]`: a client's server, or the one client a server serves.
pub fn client(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (h, d) = split_dev(value(o));
    if h.is_empty() {
        return Err(CliError::err("option -c needs a host"));
    }
    s.common.client = Some(h);
    if d.is_some() {
        s.common.cfg.net.bind_dev = d;
    }
    Ok(())
}

/// `-p port` or `-p m-n`: a server listens on every port of the range, a
/// client sends one flow to each.
pub fn port(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let port = |t: &str| {
        int_value(sp, t).and_then(|p| {
            u16::try_from(p)
                .ok()
                .filter(|p| *p >= 1)
                .ok_or_else(|| CliError::err(format!("port {t} is out of range (1-65535)")))
        })
    };
    match v.split_once('-').filter(|(a, _)| !a.is_empty()) {
        Some((a, b)) => {
            let (lo, hi) = (port(a)?, port(b)?);
            if hi < lo || hi - lo >= MAX_PORT_RANGE {
                return Err(CliError::err(format!(
                    "port range {v} must be ascending and span at most {MAX_PORT_RANGE} ports"
                )));
            }
            s.common.cfg.port = lo;
            s.common.cfg.iperf2.port_last = (hi > lo).then_some(hi);
        }
        None => {
            s.common.cfg.port = port(v)?;
            s.common.cfg.iperf2.port_last = None;
        }
    }
    Ok(())
}

/// `-B host[:port][%dev]`.
pub fn bind(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (h, p, d) = split_bind(value(o))?;
    if !h.is_empty() {
        s.common.cfg.net.bind = Some(h);
    }
    s.common.cfg.net.cport = p;
    if d.is_some() {
        s.common.cfg.net.bind_dev = d;
    }
    Ok(())
}

/// `-L port`: where a client takes `-d`/`-r` connections back.
pub fn listen_port(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let p = int_value(&o.spelled, v)?;
    if !(1..=65535).contains(&p) {
        return Err(CliError::err(format!("port {v} is out of range (1-65535)")));
    }
    s.common.cfg.iperf2.listen_port = Some(p as u16);
    Ok(())
}

/// `-S tos`: a number or a name.
pub fn tos(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    s.common.cfg.params.tos = tos_value(v).ok_or_else(|| CliError::err(format!("-S value of '{v}' not recognized")))?;
    Ok(())
}

/// `--dscp n` (iperf 2.2): the TOS byte's DSCP bits, ECN bits zero.
pub fn dscp(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let n = dscp_by_name(v)
        .map(i64::from)
        .or_else(|| parse_int(v, true))
        .filter(|n| (0..=63).contains(n))
        .ok_or_else(|| CliError::err(format!("--dscp value of '{v}' not recognized (0-63 or a class name)")))?;
    s.common.cfg.params.tos = (n as u8) << 2;
    Ok(())
}

/// `-T ttl`: below 255.
pub fn ttl(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let t = int_value(&o.spelled, value(o))?;
    if !(0..255).contains(&t) {
        return Err(CliError::err("option of -ttl (-T) must be less than 255"));
    }
    s.ttl = Some(t as u32);
    Ok(())
}

/// `--local-only[=1|0]`: SO_DONTROUTE.
pub fn local_only(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.local_only = match o.value.as_deref() {
        None | Some("1") => true,
        Some("0") => false,
        Some(x) => {
            return Err(CliError::err(format!(
                "--local-only value of '{x}' not recognized (1 or 0)"
            )));
        }
    };
    Ok(())
}

/// `--connect-retries n`.
pub fn connect_retries(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let n = int_value(&o.spelled, v)?;
    if !(0..=10_000).contains(&n) {
        return Err(CliError::err(format!(
            "--connect-retries value of '{v}' is out of range"
        )));
    }
    s.common.cfg.iperf2.connect_retries = n as u32;
    Ok(())
}

/// `--connect-only[=n]`: three-way handshakes only, 10 per flow unless
/// told.
pub fn connect_only(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let n = match &o.value {
        Some(v) => int_value(&o.spelled, v)?,
        None => 10,
    };
    if !(1..=1_000_000).contains(&n) {
        return Err(CliError::err(format!(
            "--connect-only count of {n} is out of range (1-1000000)"
        )));
    }
    s.common.cfg.iperf2.connect_only = Some(n as u32);
    Ok(())
}

/// `--incr-dstport`: flow i goes to port + i.
pub fn incr_dstport(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.incr_dstport = true;
    Ok(())
}

/// `-S` names (TOS byte values): the DSCP names both iperfs know, shifted
/// into the TOS byte, 2.1.8's `ac_*`, `le`, `nqb` and `nqb2`, or a number
/// (decimal, octal or hex). 2.1.8 puts the bare DSCP number in the TOS
/// byte for `le`, `nqb` and `nqb2`; wirespeed shifts it into the DSCP field
/// as the names promise.
pub fn tos_value(s: &str) -> Option<u8> {
    if let Some(dscp) = dscp_by_name(s) {
        return Some(dscp << 2);
    }
    let v = match s.to_ascii_lowercase().as_str() {
        "ac_be" => 0x00,
        "ac_bk" => 0x20,
        "ac_vi" => 0x80,
        "ac_vo" => 0xb8,
        "le" => 1 << 2,
        "nqb" => 45 << 2,
        "nqb2" => 5 << 2,
        _ => {
            let v = parse_int(s, true)?;
            return (0..=255).contains(&v).then_some(v as u8);
        }
    };
    Some(v)
}

/// Splits `host[:port][%dev]` (IPv6 hosts in brackets when a port follows).
pub fn split_bind(s: &str) -> Result<(String, Option<u16>, Option<String>)> {
    let (rest, dev) = match s.split_once('%') {
        Some((h, d)) if !d.is_empty() => (h, Some(d.to_string())),
        Some((h, _)) => (h, None),
        None => (s, None),
    };
    let bad = || CliError::err(format!("bind address '{s}' not recognized"));
    let port = |p: &str| -> Result<u16> { p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad) };
    if let Some(r) = rest.strip_prefix('[') {
        let (h, tail) = r.split_once(']').ok_or_else(bad)?;
        let p = match tail.strip_prefix(':') {
            Some(p) => Some(port(p)?),
            None if tail.is_empty() => None,
            None => return Err(bad()),
        };
        return Ok((h.to_string(), p, dev));
    }
    match rest.matches(':').count() {
        1 => {
            let (h, p) = rest.split_once(':').ok_or_else(bad)?;
            Ok((h.to_string(), Some(port(p)?), dev))
        }
        _ => Ok((rest.to_string(), None, dev)),
    }
}
