//! Test parameters: protocol, direction, length, rate, streams, and the
//! socket settings of the data streams.

use std::path::PathBuf;
use std::time::Duration;

use super::{int_arg, perr, unit_err, value};
use crate::getopt::Occurrence;
use crate::iperf3::MAX_PARALLEL;
use crate::iperf3::opt::Opt;
use crate::iperf3::state::ParseState;
use crate::values::dscp_by_name;
use wirespeed_core::config::EndCondition;
use wirespeed_core::error::{Code, Error};
use wirespeed_core::units::{parse_bitrate_iperf3, parse_int, parse_rate_iperf3, parse_seconds, parse_size_iperf3};

type Result = std::result::Result<(), Error>;

/// A non-negative size with iperf3's binary suffixes.
fn size(o: &Occurrence<Opt>) -> std::result::Result<f64, Error> {
    let v = value(o);
    let n = parse_size_iperf3(v).map_err(|_| unit_err(v))?;
    if n < 0.0 {
        return Err(unit_err(v));
    }
    Ok(n)
}

/// A non-negative rate with iperf3's decimal suffixes.
fn rate(o: &Occurrence<Opt>) -> std::result::Result<f64, Error> {
    let v = value(o);
    let r = parse_rate_iperf3(v).map_err(|_| unit_err(v))?;
    if r < 0.0 {
        return Err(unit_err(v));
    }
    Ok(r)
}

/// `-F name`: send from (or receive into) a file.
pub fn file(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.file = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `-q`/`--quic`: the test's data over QUIC streams on one connection
/// (the options it takes are checked with the others).
pub fn quic(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.protocol = wirespeed_core::config::Protocol::Quic;
    Ok(())
}

/// `-m`: MPTCP.
pub fn mptcp(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.mptcp = true;
    Ok(())
}

/// `-b rate[KMGT][/burst]` or `Npps[/burst]`; a burst is at most 1000.
pub fn bitrate(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let r = parse_bitrate_iperf3(v).map_err(|_| unit_err(v))?;
    if r.burst > 1000 {
        return Err(perr(Code::BURST));
    }
    s.common.cfg.params.rate = r.bits_per_sec;
    s.common.cfg.params.pps = r.pps;
    s.common.cfg.params.burst = r.burst;
    Ok(())
}

/// `--pacing-timer µs`.
pub fn pacing_timer(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let us = parse_size_iperf3(v).map_err(|_| unit_err(v))?;
    if !(0.0..=u32::MAX as f64).contains(&us) {
        return Err(unit_err(v));
    }
    s.common.cfg.params.pacing_timer = us as u32;
    Ok(())
}

/// `--fq-rate rate`: socket pacing, bit/s.
pub fn fq_rate(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.fq_rate = rate(o)? as u64;
    Ok(())
}

/// `--no-fq-socket-pacing`: deprecated, a warning only (as iperf3).
pub(crate) fn no_fq_socket_pacing(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common
        .warnings
        .push("--no-fq-socket-pacing is deprecated".to_string());
    Ok(())
}

/// `-t secs`: up to a day; applied after the checks.
pub fn time(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let t = parse_seconds(value(o)).ok_or_else(|| perr(Code::DURATION))?;
    if !(0.0..=86400.0).contains(&t) {
        return Err(perr(Code::DURATION));
    }
    s.time = Some(Duration::from_secs_f64(t));
    s.end_conditions += 1;
    Ok(())
}

/// `-n bytes`.
pub fn bytes(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.end = EndCondition::Bytes(size(o)? as u64);
    s.end_conditions += 1;
    Ok(())
}

/// `-k blocks`.
pub fn blockcount(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.end = EndCondition::Blocks(size(o)? as u64);
    s.end_conditions += 1;
    Ok(())
}

/// `-l bytes`: its range depends on the protocol, checked later.
pub fn length(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.length = Some(size(o)?);
    Ok(())
}

/// `-P n`: 1 to [`MAX_PARALLEL`].
pub fn parallel(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let p = int_arg(o, Code::NUMSTREAMS)?;
    if p < 1 || p > MAX_PARALLEL as i64 {
        return Err(Error::param_msg(
            Code::NUMSTREAMS,
            format!("invalid number of parallel streams (min = 1, max = {MAX_PARALLEL})"),
        ));
    }
    s.common.cfg.params.streams = p as u32;
    Ok(())
}

/// `--bidir`.
pub fn bidir(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.bidir = true;
    Ok(())
}

/// `-w bytes`: up to 512 MiB; 0 leaves the OS default.
pub fn window(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let w = parse_size_iperf3(v).map_err(|_| unit_err(v))?;
    if !(0.0..=512.0 * 1024.0 * 1024.0).contains(&w) {
        return Err(perr(Code::BUFSIZE));
    }
    s.common.cfg.params.window = (w >= 1.0).then_some(w as u32);
    Ok(())
}

/// `-M mss`: up to 32767; 0 leaves the OS default.
pub fn set_mss(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let m = int_arg(o, Code::MSS)?;
    if !(0..=32767).contains(&m) {
        return Err(perr(Code::MSS));
    }
    s.common.cfg.params.mss = (m > 0).then_some(m as u32);
    Ok(())
}

/// `-N`.
pub(crate) fn no_delay(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.nodelay = true;
    Ok(())
}

/// `-S tos`: 0 to 255, decimal, octal or hex.
pub fn tos(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let t = parse_int(value(o), true)
        .filter(|t| (0..=255).contains(t))
        .ok_or_else(|| perr(Code::BADTOS))?;
    s.common.cfg.params.tos = t as u8;
    Ok(())
}

/// `--dscp name|0-63`: iperf3's names (and `va`), shifted into the TOS byte.
pub fn dscp(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let d = match dscp_by_name(v) {
        Some(d) => Some(d),
        None if v.eq_ignore_ascii_case("va") => Some(44),
        None => parse_int(v, true).filter(|d| (0..=63).contains(d)).map(|d| d as u8),
    };
    s.common.cfg.params.tos = d.ok_or_else(|| perr(Code::BADDSCP))? << 2;
    Ok(())
}

/// `-L label`: 1 to 0xFFFFF.
pub fn flowlabel(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let f = parse_int(value(o), true)
        .filter(|f| (1..=0xFFFFF).contains(f))
        .ok_or_else(|| perr(Code::SETFLOW))?;
    s.common.cfg.params.flowlabel = Some(f as u32);
    Ok(())
}

/// `-Z`.
pub fn zerocopy(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.zerocopy = true;
    Ok(())
}

/// `--skip-rx-copy`.
pub fn skip_rx_copy(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.skip_rx_copy = true;
    Ok(())
}

/// `-O secs`: up to 600.
pub fn omit(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let secs = parse_seconds(value(o)).ok_or_else(|| perr(Code::OMIT))?;
    if !(0.0..=600.0).contains(&secs) {
        return Err(perr(Code::OMIT));
    }
    s.common.cfg.params.omit = Duration::from_secs_f64(secs);
    Ok(())
}

/// `--extra-data str`.
pub fn extra_data(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.extra_data = Some(value(o).to_string());
    Ok(())
}

/// `--get-server-output`.
pub fn get_server_output(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.get_server_output = true;
    Ok(())
}

/// `--udp-counters-64bit`.
pub fn udp_counters_64bit(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.udp_counters_64bit = true;
    Ok(())
}

/// `--gsro`.
pub fn gsro(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.gsro = true;
    Ok(())
}

/// `--repeating-payload`.
pub fn repeating_payload(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.repeating_payload = true;
    Ok(())
}

/// `--dont-fragment`.
pub fn dont_fragment(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.dont_fragment = true;
    Ok(())
}
