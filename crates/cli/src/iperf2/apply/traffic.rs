//! What a test sends: protocol, direction, amount, rate, lengths, and the
//! data sockets' settings.

use std::path::PathBuf;

use super::{int_value, unit_value, value};
use crate::getopt::Occurrence;
use crate::iperf2::opt::Opt;
use crate::iperf2::state::ParseState;
use crate::iperf2::{CliError, MAX_FLOWS};
use wirespeed_core::config::EndCondition;
use wirespeed_core::units::parse_seconds;

type Result = std::result::Result<(), CliError>;

/// `-b rate[kmgKMG]` or `-b n[kmgKMG]pps`: a client's send rate (a
/// packet rate for UDP), a TCP server's read rate.
pub fn bandwidth(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    s.rate_given = true;
    // `pps` (any case, or a bare `p`) means packets/s; the
    // number keeps its own suffix case (1Kpps = 1024/s).
    let lower = v.to_ascii_lowercase();
    let pps_at = lower.find('p');
    if let Some(at) = pps_at.filter(|at| matches!(&lower[*at..], "pps" | "p")) {
        s.rate_pps = true;
        s.common.cfg.params.pps = Some(unit_value(sp, &v[..at])?.round() as u64);
    } else if let Some((mean, stdev)) = v.split_once(',') {
        // A log-normal load of that mean and standard deviation, drawn
        // every 0.1 s (2.1.8 takes the mean for the stdev as well).
        s.common.cfg.params.rate = unit_value(sp, mean)? as u64;
        s.common.cfg.params.rate_stdev = Some(unit_value(sp, stdev)? as u64);
    } else {
        s.common.cfg.params.rate = unit_value(sp, v)? as u64;
    }
    Ok(())
}

/// `-d`.
pub fn dual(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.dual = true;
    Ok(())
}

/// `-r`.
pub fn tradeoff(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.tradeoff = true;
    Ok(())
}

/// `--full-duplex`.
pub fn full_duplex(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.full_duplex = true;
    Ok(())
}

/// `-l bytes`: checked once the protocol and the test are known.
pub fn len(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    if value(o).starts_with('<') {
        return Err(CliError::err(format!(
            "{} {}: Markov-chain lengths (iperf 2 master's <len|p,...> form) are not built in wirespeed",
            o.spelled,
            value(o)
        )));
    }
    s.len = Some(unit_value(&o.spelled, value(o))?);
    s.common.cfg.iperf2.len_given = true;
    Ok(())
}

/// `-n bytes`: instead of `-t` (a later `-t` wins back).
pub fn num(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let n = unit_value(&o.spelled, value(o))?;
    s.common.cfg.params.end = EndCondition::Bytes(n as u64);
    s.time = None;
    Ok(())
}

/// `-t secs`: fractions allowed.
pub fn time(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let t = parse_seconds(v)
        .filter(|t| *t >= 0.0 && *t <= 21_474_836.0)
        .ok_or_else(|| CliError::err(format!("-t value of '{v}' not recognized")))?;
    s.time = Some(t);
    Ok(())
}

/// `-U`: UDP, and a server serves one client at a time.
pub fn single_udp(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.udp = true;
    s.single_udp = true;
    Ok(())
}

/// `-w bytes`: below 2048 bytes warns as 2.1.8 does; 0 leaves the OS default.
pub fn window(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let w = unit_value(&o.spelled, v)?;
    if w > i32::MAX as f64 {
        return Err(CliError::err(format!("window size {v} is too large")));
    }
    if (1.0..2048.0).contains(&w) {
        s.common.warnings.push(format!(
            "WARNING: TCP window size set to {} bytes. A small window size\nwill give poor performance. See the Iperf documentation.",
            w as u64
        ));
    }
    s.common.cfg.params.window = (w >= 1.0).then_some(w as u32);
    Ok(())
}

/// `--rpm`: the responsiveness test against an iperf server. `--rpm=URL`
/// (or `--rpm URL`), the standard test against a networkQuality server, is
/// the iperf3 dialect's.
pub fn rpm(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    if let Some(url) = &o.value {
        return Err(CliError::err(format!(
            "--rpm={url} (the standard responsiveness test) is not in the iperf 2 dialect: run it without --iperf2"
        )));
    }
    crate::apply::rpm(s, o)
}

/// `-z`.
pub fn realtime(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.realtime = true;
    Ok(())
}

/// `-C`: no header (for iperf 2.0.x peers).
pub fn compat(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.compat = true;
    Ok(())
}

/// `-F file`: send a file's bytes.
pub fn file_input(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.file = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `-I`: send what standard input gives.
pub fn stdin_input(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.stdin = true;
    Ok(())
}

/// `-M mss`: TCP_MAXSEG (and `-m`); 0 leaves the OS default.
pub fn mss(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let m = unit_value(&o.spelled, v)?;
    if !(0.0..=65535.0).contains(&m) {
        return Err(CliError::err(format!("MSS {v} is out of range")));
    }
    s.common.cfg.params.mss = (m >= 1.0).then_some(m as u32);
    s.common.cfg.output.print_mss = true;
    Ok(())
}

/// `-N`.
pub fn nodelay(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.nodelay = true;
    Ok(())
}

/// `-P n`: 1 to [`MAX_FLOWS`].
pub fn parallel(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let p = int_value(&o.spelled, v)?;
    if !(1..=MAX_FLOWS as i64).contains(&p) {
        return Err(CliError::err(format!(
            "-P value of '{v}' must be between 1 and {MAX_FLOWS}"
        )));
    }
    s.parallel = Some(p as u32);
    Ok(())
}

/// `-X`.
pub fn peer_detect(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.peer_detect = true;
    Ok(())
}

/// `--tcp-cca algo` (iperf 2.2): `-Z`'s other name; `-Z` wins when both
/// are given.
pub(crate) fn tcp_cca(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.tcp_cca = Some(value(o).to_string());
    Ok(())
}

/// `--sync-transfer-id` (iperf 2.2): flows carry their ids to the server.
pub fn sync_transfer_id(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.sync_transfer_id = true;
    Ok(())
}

/// `--permit-key=key`: 4 to 128 characters (a generated key is not built).
pub fn permit_key(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let Some(k) = &o.value else {
        return Err(CliError::err(
            "--permit-key needs a value (generated keys are not implemented yet)",
        ));
    };
    if !(4..=128).contains(&k.len()) {
        return Err(CliError::err("permit key must be 4 to 128 characters"));
    }
    s.common.cfg.iperf2.permit_key = Some(k.clone());
    Ok(())
}

/// `--trip-times`.
pub fn trip_times(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.params.trip_times = true;
    Ok(())
}

/// `--tcp-quickack`.
pub fn tcp_quickack(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.quickack = true;
    Ok(())
}

/// `--tcp-write-prefetch bytes`: TCP_NOTSENT_LOWAT (implies `-e`, as 2.1.8).
pub(crate) fn tcp_write_prefetch(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let n = unit_value(sp, v)?;
    if !(1.0..=i32::MAX as f64).contains(&n) {
        return Err(CliError::err(format!("{sp} value of '{v}' is out of range")));
    }
    s.common.cfg.iperf2.write_prefetch = Some(n as u32);
    s.common.cfg.output.enhanced = true;
    Ok(())
}

/// `--fq-rate rate`: SO_MAX_PACING_RATE, with iperf 2's bit-or-byte rule;
/// 2.1.8 sets it on its flows (and the server on its sending side of `-R`
/// / `--full-duplex`); 0 sets nothing.
pub fn fq_rate(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let bits = wirespeed_core::units::parse_iperf2_bit_or_byte(v)
        .ok()
        .filter(|b| *b <= 8.0 * u64::MAX as f64 / 16.0)
        .ok_or_else(|| CliError::err(format!("--fq-rate value of '{v}' not recognized")))?;
    s.common.cfg.params.fq_rate = bits as u64;
    Ok(())
}

/// `--udp-l4s` (iperf 2.2.1's).
pub fn udp_l4s(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.udp_l4s = true;
    Ok(())
}

/// `--no-udp-fin`.
pub fn no_udp_fin(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.iperf2.no_udp_fin = true;
    Ok(())
}

/// The most `--txstart-time` may lie ahead, as in iperf 2.
const MAX_TXSTART_AHEAD: f64 = 3600.0;

/// `--txstart-time sec[.fraction]`: start sending at that wall-clock time
/// (implies `-e`). The fraction is a decimal fraction of a second (2.1.8
/// reads its digits as a count of µs, so its `.5` is 5 µs).
pub(crate) fn txstart_time(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let bad = || CliError::err(format!("{sp} value of '{v}' not recognized (seconds since the epoch)"));
    let (whole, frac) = v.split_once('.').unwrap_or((v, ""));
    if whole.starts_with('-') {
        return Err(CliError::err("--txstart-time must be a positive value"));
    }
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let sec: u32 = whole.parse().map_err(|_| bad())?;
    let digits = &frac[..frac.len().min(6)];
    let usec = if digits.is_empty() {
        0
    } else {
        digits.parse::<u32>().map_err(|_| bad())? * 10u32.pow(6 - digits.len() as u32)
    };
    let now = wirespeed_sys::time::epoch_now();
    if f64::from(sec) - now > MAX_TXSTART_AHEAD {
        let when = wirespeed_sys::time::strftime("%Y-%m-%d %H:%M:%S %Z", i64::from(sec), false);
        return Err(CliError::err(format!(
            "--txstart-time ({sec}.{usec}) ({when}) exceeds max scheduled delay of {} secs",
            MAX_TXSTART_AHEAD as u32
        )));
    }
    s.common.cfg.iperf2.txstart = Some((sec, usec));
    s.common.cfg.output.enhanced = true;
    Ok(())
}

/// `--burst-size bytes[KMG]`: bytes per periodic burst (checked with the
/// period and `-l` later).
pub fn burst_size(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = unit_value(&o.spelled, value(o))?;
    if !(1.0..=f64::from(u32::MAX)).contains(&v) {
        return Err(CliError::err(format!("--burst-size of {v} is out of range")));
    }
    s.burst_size = Some(v);
    Ok(())
}

/// `--burst-period seconds`: the time between periodic bursts.
pub fn burst_period(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let p = parse_seconds(v)
        .filter(|p| (0.0..=3600.0).contains(p))
        .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized (seconds, at most 3600)")))?;
    s.burst_period = Some(p);
    Ok(())
}

/// `--isochronous[=fps:mean,stdev]`: checked once the protocol and `-l`
/// are known.
pub fn isochronous(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.isochronous = Some(o.value.clone());
    s.common.cfg.output.enhanced = true;
    Ok(())
}

/// `--ipg ms`: the gap between the datagrams of an isochronous frame (or
/// between all datagrams without `--isochronous`).
pub fn ipg(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let ms = v
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| CliError::err(format!("{sp} value of '{v}' not recognized (milliseconds)")))?;
    if ms < 0.0 {
        return Err(CliError::err("IPG delay target must be non-negative"));
    }
    if ms > 60_000.0 {
        return Err(CliError::err(format!(
            "IPG delay target of {:.1} secs too large (max value is 60 secs)",
            ms / 1000.0
        )));
    }
    s.ipg = Some(ms);
    Ok(())
}

/// A number of milliseconds, seconds or the like: a plain decimal.
fn decimal(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// The most `--tcp-tx-delay`/`--send-delay` may be: the kernel takes an
/// int of µs.
const MAX_SEND_DELAY_MS: f64 = i32::MAX as f64 / 1000.0;

/// iperf 2.2's `--tcp-tx-delay ms` and master's `--send-delay ms`:
/// TCP_TX_DELAY on the client's sockets (µs in the kernel; the smallest
/// delay is 1 µs; implies `-e`, as in 2.2). UDP is refused later.
pub(crate) fn send_delay(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let ms = decimal(v).ok_or_else(|| CliError::err(format!("Invalid value of '{v}' for {sp}")))?;
    if ms < 0.001 {
        return Err(CliError::err(format!(
            "{sp} of '{v}' is below its smallest unit, one microsecond (0.001 ms)"
        )));
    }
    if ms > MAX_SEND_DELAY_MS {
        return Err(CliError::err(format!(
            "{sp} of '{v}' is too large (at most {MAX_SEND_DELAY_MS:.3} ms)"
        )));
    }
    s.common.cfg.iperf2.tx_delay_us = Some((ms * 1000.0).round() as u32);
    s.send_delay = Some(sp.to_string());
    s.common.cfg.output.enhanced = true;
    Ok(())
}

/// iperf 2.2's `--fq-rate-step rate`: each `--fq-rate-step-interval`
/// the sending sockets' pacing rate grows by this much (bit-or-byte rule
/// as `--fq-rate`; implies `-e`, as in 2.2). Checked with `-R` later.
pub fn fq_rate_step(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let bits = wirespeed_core::units::parse_iperf2_bit_or_byte(v)
        .ok()
        .filter(|b| *b >= 8.0 && *b <= 8.0 * u64::MAX as f64 / 16.0)
        .ok_or_else(|| CliError::err(format!("--fq-rate-step value of '{v}' not recognized")))?;
    s.fq_step = Some(bits as u64);
    s.common.cfg.output.enhanced = true;
    Ok(())
}

/// iperf 2.2's `--fq-rate-step-interval secs` (default 1).
pub fn fq_rate_step_interval(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let secs = decimal(v).filter(|x| *x >= 0.001 && *x <= 3600.0).ok_or_else(|| {
        CliError::err(format!(
            "--fq-rate-step-interval value of '{v}' not recognized (seconds, 0.001 to 3600)"
        ))
    })?;
    s.fq_step_interval = Some(secs);
    Ok(())
}

/// iperf 2 master's `--omit secs`: the first seconds' samples are
/// reported as omitted and left out of the totals (TCP only, checked
/// later). 0 omits nothing.
pub fn omit(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let v = value(o);
    let secs = decimal(v).ok_or_else(|| CliError::err(format!("--omit value of '{v}' not recognized")))?;
    if secs > f64::from(u32::MAX) / 1e6 {
        return Err(CliError::err(format!(
            "Too large value of '{v}' for --omit, max is {:.6}",
            f64::from(u32::MAX) / 1e6
        )));
    }
    if secs > 0.0 && secs < 1e-6 {
        return Err(CliError::err(format!(
            "Too small value of '{v}' for --omit, min is 0.000001"
        )));
    }
    s.omit = (secs > 0.0).then_some(secs);
    Ok(())
}

/// iperf 2 master's `--set-rand-seed n`: the seed of the client's
/// generators (`-b mean,stdev`, `--isochronous` frame sizes), so a run's
/// draws can be repeated. Like C's `srand(atoi(n))`: a negative number
/// wraps.
pub fn set_rand_seed(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let (v, sp) = (value(o), o.spelled.as_str());
    let n = super::int_value(sp, v)?;
    if n < i64::from(i32::MIN) || n > i64::from(u32::MAX) {
        return Err(CliError::err(format!("{sp} value of '{v}' is out of range")));
    }
    s.common.cfg.iperf2.rand_seed = Some(n as u32);
    Ok(())
}
