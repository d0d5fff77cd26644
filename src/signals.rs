//! Signals: what SIGINT, SIGTERM and SIGHUP do to a run, and the cells a
//! running client or server watches for them. A leaf, so that the Windows
//! service's stop request (which has no signal of its own) can raise the
//! same cells without depending on the application above it.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use wirespeed_core::config::{Role, TestConfig};

/// What SIGHUP does to a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hangup {
    /// Ends it, like SIGTERM (iperf3's behaviour; a client, or a server
    /// in a terminal that goes away).
    End,
    /// Reopens the log file (a server with `--logfile` / `-o`, for log rotation).
    ReopenLog,
    /// Nothing (a daemon without a log file).
    Ignore,
}

/// SIGHUP's meaning for a process of `cfg`: a server reopens its log, or
/// as a daemon without one ignores it; anything else ends.
pub fn hangup_for(cfg: &TestConfig) -> Hangup {
    match cfg.role {
        Role::Server if cfg.output.logfile.is_some() => Hangup::ReopenLog,
        Role::Server if cfg.server.daemon => Hangup::Ignore,
        _ => Hangup::End,
    }
}

/// Every cell [`install_signals`] made, for [`interrupt`].
static SIGNAL_CELLS: std::sync::Mutex<Vec<Arc<AtomicUsize>>> = std::sync::Mutex::new(Vec::new());

/// Acts as if signal `sig` had arrived (the Windows service manager's
/// stop request has no signal of its own).
pub fn interrupt(sig: usize) {
    if let Ok(cells) = SIGNAL_CELLS.lock() {
        for c in cells.iter() {
            c.store(sig, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Installs handlers for SIGINT and SIGTERM (and SIGHUP as `hup` says):
/// the returned cell holds the number of the last ending signal (0 = none).
pub fn install_signals(hup: Hangup) -> Arc<AtomicUsize> {
    let cell = Arc::new(AtomicUsize::new(0));
    if let Ok(mut cells) = SIGNAL_CELLS.lock() {
        cells.push(cell.clone());
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let _ = signal_hook::flag::register_usize(sig, cell.clone(), sig as usize);
    }
    // Windows has no hangup signal (a closed console ends the process).
    #[cfg(unix)]
    let _ = match hup {
        Hangup::End => signal_hook::flag::register_usize(libc::SIGHUP, cell.clone(), libc::SIGHUP as usize),
        Hangup::ReopenLog => signal_hook::flag::register(libc::SIGHUP, wirespeed_report::log_reopen_flag()),
        Hangup::Ignore => {
            signal_hook::flag::register(libc::SIGHUP, Arc::new(std::sync::atomic::AtomicBool::new(false)))
        }
    };
    #[cfg(not(unix))]
    let _ = hup;
    cell
}
