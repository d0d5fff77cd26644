//! The perf client (`--quic-perf HOST:PORT`): `-P` streams on one QUIC
//! connection, each uploading (`-n` bytes shared among them, or until
//! `-t`) or, with `-R`, asking for bytes back (`-n` shared, or as much as
//! there is until `-t`). Its test is told as any client's is: `Connecting`,
//! a `StreamConnected` per stream, `Start`, an `Interval` each `-i`, `End`
//! and `Done`, so text, `-J`, `--json-stream` and `--report` show it; `-J`'s
//! document has a `quic` object besides (the connection's RTT, congestion
//! window and losses from quinn's statistics).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use wirespeed_core::config::TestConfig;
use wirespeed_core::error::Error;
use wirespeed_report::Output;

#[cfg(feature = "perf")]
mod json;
#[cfg(feature = "perf")]
mod measure;

/// Runs the perf client against `target` (`HOST:PORT`), reporting through
/// the outputs `cfg` asks for on `out`. Every outcome, failures included,
/// reaches the outputs; the return value decides the exit code.
#[cfg(feature = "perf")]
pub fn run(cfg: &TestConfig, target: &str, out: &Output, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    measure::run(cfg, target, out, signal)
}

/// Without the `quic-perf` feature: refused in one line.
#[cfg(not(feature = "perf"))]
pub fn run(cfg: &TestConfig, target: &str, out: &Output, signal: &Arc<AtomicUsize>) -> Result<(), Error> {
    let _ = (cfg, target, out, signal);
    Err(crate::not_built("--quic-perf"))
}
