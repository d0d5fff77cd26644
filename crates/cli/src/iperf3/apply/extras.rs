//! wirespeed's own options (iperf3 has none of these).

use super::value;
use crate::getopt::Occurrence;
use crate::iperf3::opt::Opt;
use crate::iperf3::state::ParseState;
use wirespeed_core::error::Error;

type Result = std::result::Result<(), Error>;

/// `--loopback`: a client against a built-in server.
pub fn loopback(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.loopback = true;
    Ok(())
}

/// `--csv`: iperf 2's `-y C` rows instead of text.
pub fn csv(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.output.csv = true;
    Ok(())
}

/// `--metrics addr:port` (server).
pub fn metrics(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.metrics = Some(value(o).to_string());
    Ok(())
}

/// `--rpm`: the responsiveness test; `--rpm=URL` the standard one against
/// a networkQuality server (its configuration URL).
pub fn rpm(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    match o.value.as_deref() {
        Some(url) => s.nq.url = url.to_string(),
        None => s.common.cfg.rpm = true,
    }
    Ok(())
}

/// `--cacert FILE`: trust the PEM certificates in FILE (`--rpm=URL`).
pub fn cacert(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.nq.cacert = Some(std::path::PathBuf::from(value(o)));
    Ok(())
}

/// `--insecure`: no certificate verification (`--rpm=URL`).
pub fn insecure(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.nq.insecure = true;
    Ok(())
}

/// `--quic-perf HOST:PORT`: a QUIC perf client (ALPN `perf`) instead of an
/// iperf test.
pub fn quic_perf(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.quic_perf = Some(value(o).to_string());
    Ok(())
}

/// `--quic-perf-listen ADDR:PORT` (server): also serve QUIC perf clients.
pub fn quic_perf_listen(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.quic_perf_listen = Some(value(o).to_string());
    Ok(())
}
