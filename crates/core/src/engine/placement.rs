//! Where a test's streams run: a thread each, or multiplexed on per-CPU
//! workers once the process has enough threads; and the descriptors that
//! costs.

use std::sync::atomic::Ordering::Relaxed;

use super::streams::{DataSock, DataStream, StreamExtras};
use crate::config::Protocol;
use crate::error::{Code, Error};

/// Stream threads per CPU this process runs before further TCP streams are
/// multiplexed on per-CPU workers (see [`multiplexed`]).
///
/// Measured on loopback (BENCHMARKS.md, "threads vs workers"): up to a
/// few hundred streams a thread each moves more bytes per CPU second than
/// workers serving several sockets each (about 0.25 against 0.35 CPU s per
/// GB at 4, 64 and 256 streams on 2 CPUs), but at 256 threads per CPU the
/// control thread starves and a 3 s test ends after 8 s (at 1000 streams,
/// after 15 to 36 s, with 250 MB of buffers and stacks). 32 per CPU keeps
/// the faster threads for ordinary `-P` and stays far from that cliff.
pub(crate) const THREADS_PER_CPU: usize = 32;

/// Stream threads running in this process now (all tests): a server
/// running many tests at once multiplexes new ones rather than let their
/// threads crowd out every test's control thread.
static STREAM_THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `WIRESPEED_MUX`: when streams are multiplexed on workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MuxMode {
    /// When the process would run more than [`THREADS_PER_CPU`] stream
    /// threads per CPU (the default).
    Auto,
    /// Every TCP test whose streams allow it (for comparisons).
    Always,
    /// Never: a thread per stream (for comparisons).
    Never,
}

impl MuxMode {
    /// The mode `WIRESPEED_MUX` asks for (`auto`, `always` or `never`;
    /// unset is `auto`).
    pub fn from_env() -> Result<MuxMode, Error> {
        match std::env::var("WIRESPEED_MUX").as_deref() {
            Err(_) | Ok("") | Ok("auto") => Ok(MuxMode::Auto),
            Ok("always") => Ok(MuxMode::Always),
            Ok("never") => Ok(MuxMode::Never),
            Ok(other) => Err(Error::msg(
                Code::INITTEST,
                format!("WIRESPEED_MUX must be auto, always or never, not '{other}'"),
            )),
        }
    }

    /// Whether a TCP test of `streams` streams (without files or hooks)
    /// is multiplexed.
    fn applies(self, streams: usize) -> bool {
        match self {
            MuxMode::Auto => STREAM_THREADS.load(Relaxed) + streams > THREADS_PER_CPU * super::mux::workers(),
            MuxMode::Always => true,
            MuxMode::Never => false,
        }
    }
}

/// Whether a test's streams run on multiplexing workers: TCP tests that
/// would take this process past [`THREADS_PER_CPU`] stream threads per CPU
/// it may use (unless `WIRESPEED_MUX` says otherwise). Streams with
/// per-block hooks (iperf 2) or files (`-F`) always get threads.
pub fn multiplexed(streams: &[(DataStream, StreamExtras)], file: bool) -> Result<bool, Error> {
    Ok(!file
        && MuxMode::from_env()?.applies(streams.len())
        && streams
            .iter()
            .all(|(d, e)| matches!(d.sock, DataSock::Tcp(_)) && e.hook.is_none() && e.kind.is_bulk()))
}

/// Descriptors a stream costs this process: one when multiplexed; three
/// with a thread (the socket, the session's duplicate for TCP_INFO, the
/// thread's for shutdown).
pub fn fds_per_stream(protocol: Protocol, streams: usize, file: bool) -> u64 {
    let mode = MuxMode::from_env().unwrap_or(MuxMode::Auto);
    if protocol == Protocol::Tcp && !file && mode.applies(streams) {
        1
    } else {
        3
    }
}

/// Descriptors kept free besides the streams (control connections,
/// listeners, pollers, files, other tests starting meanwhile).
const FD_SLACK: u64 = 64;

/// Makes room for `streams` new streams of `per_stream` descriptors each:
/// raises the soft open-file limit up to the hard one when needed, and
/// says clearly, in one line, when even that is not enough.
pub fn reserve_fds(streams: usize, per_stream: u64) -> Result<(), Error> {
    use wirespeed_sys::process::{nofile_limits, open_fds, raise_nofile_limit};
    let open = open_fds().unwrap_or(0);
    let need = open + streams as u64 * per_stream + FD_SLACK;
    let Ok((soft, hard)) = nofile_limits() else {
        return Ok(());
    };
    if need <= soft {
        return Ok(());
    }
    let limit = raise_nofile_limit().unwrap_or(soft);
    if need <= limit {
        crate::debug!(3, "open-file limit raised from {soft} to {limit} for {streams} streams");
        return Ok(());
    }
    Err(Error {
        errno: Some(libc::EMFILE),
        ..Error::msg(
            Code::CREATESTREAM,
            format!(
                "unable to create {streams} streams: they need about {need} open files, \
                 but the open-file limit is {limit} (hard limit {hard}); raise it with ulimit -n"
            ),
        )
    })
}

/// Stream threads a session counts in [`STREAM_THREADS`], given back when
/// the session (or a failed start) is dropped.
#[derive(Default)]
pub(super) struct ThreadCount(pub(super) usize);

impl ThreadCount {
    pub(super) fn add(&mut self, n: usize) {
        self.0 += n;
        STREAM_THREADS.fetch_add(n, Relaxed);
    }
}

impl Drop for ThreadCount {
    fn drop(&mut self) {
        STREAM_THREADS.fetch_sub(self.0, Relaxed);
    }
}
