//! iperf 2's Windows service options: `-s -D` installs the server as the
//! service "IPerfService" and starts it, `-s -R` stops and removes it, as
//! iperf 2 on Windows does (with its messages). The service runs this
//! executable with `--windows-service` and the options it was installed
//! with. The Win32 calls are in `sys::service`.

use std::ffi::OsString;
use std::sync::OnceLock;
use std::time::Duration;

use wirespeed_sys::service::{self, Installed, Names, SERVICE_FLAG};

/// iperf 2's names for its service.
pub const IPERF2: Names = Names {
    name: "IPerfService",
    display: "IPerf Service",
};

/// How long `-R` waits for a running service to stop.
const STOP_WAIT: Duration = Duration::from_secs(20);

static ARGS: OnceLock<Vec<OsString>> = OnceLock::new();
static IS_SERVICE: OnceLock<()> = OnceLock::new();

/// Whether this process is the service the manager started.
pub fn is_service() -> bool {
    IS_SERVICE.get().is_some()
}

/// Whether `args` (the whole command line) is the service manager starting
/// the service.
pub fn started_by_manager(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == SERVICE_FLAG)
}

/// What the service runs: the program's entry, given by the application
/// (so that this module needs nothing above it).
static ENTRY: OnceLock<fn(Vec<OsString>) -> i32> = OnceLock::new();

fn body() -> i32 {
    match ENTRY.get() {
        Some(entry) => entry(ARGS.get().cloned().unwrap_or_default()),
        None => 1,
    }
}

/// The manager asked the service to stop: the server ends as on SIGTERM
/// (running tests are told, results written).
fn stop() {
    crate::signals::interrupt(libc::SIGTERM as usize);
}

/// Runs the service: `entry` (the program's) with the options after
/// `--windows-service` (just `-s` without any) as the server's command
/// line, until the manager stops it.
pub fn run(args: Vec<OsString>, entry: fn(Vec<OsString>) -> i32) -> i32 {
    let _ = ENTRY.set(entry);
    let mut own: Vec<OsString> = args.iter().take(1).cloned().collect();
    own.extend(args.iter().skip(2).cloned());
    if own.len() == 1 {
        own.push("-s".into());
    }
    let _ = ARGS.set(own);
    let _ = IS_SERVICE.set(());
    match service::dispatch(IPERF2, body, stop) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{SERVICE_FLAG} is for the service manager only: {e}");
            1
        }
    }
}

/// `-s -D`: installs (if needed) and starts the service with this
/// process's options, printing what iperf 2 prints. Exit code.
pub fn install() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match service::install_and_start(IPERF2, &args) {
        Ok((installed, started)) => {
            if installed == Installed::Existing {
                println!("{} already installed.", IPERF2.display);
            }
            if started {
                println!("{} started.", IPERF2.display);
            }
            0
        }
        Err(e) => {
            eprintln!("ERROR: unable to install {}: {e}", IPERF2.display);
            1
        }
    }
}

/// `-s -R`: stops and removes the service, printing what iperf 2 prints.
/// Exit code.
pub fn remove() -> i32 {
    match service::stop_and_remove(IPERF2, STOP_WAIT) {
        Ok(Some(stopped)) => {
            if stopped {
                println!("{} stopped.", IPERF2.display);
            } else {
                println!("{} failed to stop.", IPERF2.display);
            }
            println!("{} removed.", IPERF2.display);
            eprintln!("IPerf Service is removed.");
            0
        }
        Ok(None) => {
            eprintln!("ERROR: {} is not installed", IPERF2.display);
            1
        }
        Err(e) => {
            eprintln!("ERROR: unable to remove {}: {e}", IPERF2.display);
            1
        }
    }
}
