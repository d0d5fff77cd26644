//! Network options: addresses, ports, devices, CPUs and socket timeouts.

use std::time::Duration;

use super::{int_arg, perr, unit_err, value};
use crate::getopt::Occurrence;
use crate::iperf3::opt::Opt;
use crate::iperf3::state::ParseState;
use crate::values::split_dev;
use wirespeed_core::config::{Family, KeepAlive};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::units::{parse_int, parse_size_iperf3};

type Result = std::result::Result<(), Error>;

/// A port number, 1 to 65535.
fn port_number(o: &Occurrence<Opt>) -> std::result::Result<u16, Error> {
    let p = int_arg(o, Code::BADPORT)?;
    if !(1..=65535).contains(&p) {
        return Err(perr(Code::BADPORT));
    }
    Ok(p as u16)
}

/// `-p port`.
pub fn port(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.port = port_number(o)?;
    Ok(())
}

/// `--cport port`: the client's data streams' source port.
pub fn cport(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.net.cport = Some(port_number(o)?);
    Ok(())
}

/// `-A n[,m]`: this process's CPU, and the server's for this test.
pub fn affinity(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let cpu = |t: &str| {
        parse_int(t, true)
            .filter(|n| (0..=1024).contains(n))
            .ok_or_else(|| perr(Code::AFFINITY))
    };
    let (a, b) = match v.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (v, None),
    };
    s.common.cfg.net.affinity = Some(cpu(a)? as usize);
    if let Some(b) = b {
        s.common.cfg.params.server_affinity = Some(cpu(b)? as usize);
    }
    Ok(())
}

/// `-B host[%dev]`.
pub fn bind(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (h, d) = split_dev(value(o));
    s.common.cfg.net.bind = Some(h);
    if d.is_some() {
        s.common.cfg.net.bind_dev = d;
    }
    Ok(())
}

/// `--bind-dev dev`.
pub fn bind_dev(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.net.bind_dev = Some(value(o).to_string());
    Ok(())
}

/// `-c host[%dev]`: client mode.
pub fn client(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (h, d) = split_dev(value(o));
    s.common.client = Some(h);
    if d.is_some() {
        s.common.cfg.net.bind_dev = d;
    }
    Ok(())
}

/// `-4`.
pub fn version4(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.net.family = Family::V4;
    Ok(())
}

/// `-6`.
pub fn version6(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.net.family = Family::V6;
    Ok(())
}

/// `--rcv-timeout ms`: 100 ms to a day.
pub fn rcv_timeout(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let ms = int_arg(o, Code::RCVTIMEOUT)?;
    if !(100..=86_400_000).contains(&ms) {
        return Err(perr(Code::RCVTIMEOUT));
    }
    s.common.cfg.net.rcv_timeout = Some(Duration::from_millis(ms as u64));
    s.rcv_timeout_given = true;
    Ok(())
}

/// `--snd-timeout ms`: up to a day.
pub fn snd_timeout(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let ms = int_arg(o, Code::SNDTIMEOUT)?;
    if !(0..=86_400_000).contains(&ms) {
        return Err(perr(Code::SNDTIMEOUT));
    }
    s.common.cfg.net.snd_timeout = Some(Duration::from_millis(ms as u64));
    Ok(())
}

/// `--connect-timeout ms`.
pub fn connect_timeout(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let ms = parse_size_iperf3(v).map_err(|_| unit_err(v))?;
    if ms < 0.0 {
        return Err(unit_err(v));
    }
    s.common.cfg.net.connect_timeout = Some(Duration::from_millis(ms as u64));
    Ok(())
}

/// `--cntl-ka[=idle/interval/count]`: each field optional; the idle time
/// must exceed interval × count.
pub fn cntl_ka(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let mut ka = KeepAlive::default();
    if let Some(spec) = &o.value {
        let parts: Vec<&str> = spec.split('/').collect();
        if parts.len() > 3 {
            return Err(perr(Code::CNTLKA));
        }
        let field = |i: usize| -> std::result::Result<Option<u32>, Error> {
            match parts.get(i).map(|s| s.trim()).filter(|s| !s.is_empty()) {
                None => Ok(None),
                Some(s) => parse_int(s, false)
                    .filter(|v| *v > 0 && *v <= u32::MAX as i64)
                    .map(|v| Some(v as u32))
                    .ok_or_else(|| perr(Code::CNTLKA)),
            }
        };
        ka.idle = field(0)?;
        ka.interval = field(1)?;
        ka.count = field(2)?;
        if let (Some(i), Some(n), Some(c)) = (ka.idle, ka.interval, ka.count)
            && u64::from(i) <= u64::from(n) * u64::from(c)
        {
            return Err(perr(Code::CNTLKA));
        }
    }
    s.common.cfg.net.cntl_ka = Some(ka);
    Ok(())
}
