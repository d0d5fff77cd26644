//! The Windows service, as iperf 2 has it: `-s -D` installs the server as
//! a service (demand start, LocalSystem) and starts it; `-s -R` stops and
//! removes it. Unlike iperf 2, whose service loses its options when the
//! service manager restarts it, the options live in the service's command
//! line (`wirespeed.exe --windows-service OPTIONS`), so `sc start` runs the
//! same server again.

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, Instant};

use windows_sys::Win32::System::Services::{
    CloseServiceHandle, ControlService, CreateServiceW, DeleteService, OpenSCManagerW, OpenServiceW,
    QueryServiceStatus, RegisterServiceCtrlHandlerExW, SC_HANDLE, SC_MANAGER_ALL_ACCESS, SERVICE_ACCEPT_STOP,
    SERVICE_ALL_ACCESS, SERVICE_CONTROL_STOP, SERVICE_DEMAND_START, SERVICE_ERROR_NORMAL, SERVICE_RUNNING,
    SERVICE_STATUS, SERVICE_STOP_PENDING, SERVICE_STOPPED, SERVICE_TABLE_ENTRYW, SERVICE_WIN32_OWN_PROCESS,
    SetServiceStatus, StartServiceCtrlDispatcherW, StartServiceW,
};

/// The argument that tells the process the service manager started it.
pub const SERVICE_FLAG: &str = "--windows-service";

/// A service's names: the key `sc` knows it by and what lists show.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    /// The service name (`sc stop NAME`).
    pub name: &'static str,
    /// The display name, which iperf 2 also prints.
    pub display: &'static str,
}

fn wide(s: &str) -> Vec<u16> {
    OsStr::new(s).encode_wide().chain(std::iter::once(0)).collect()
}

/// An open service-manager handle, closed when dropped.
struct Handle(SC_HANDLE);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from OpenSCManagerW/OpenServiceW/
        // CreateServiceW, is non-null, and is closed once.
        unsafe { CloseServiceHandle(self.0) };
    }
}

fn manager() -> io::Result<Handle> {
    // SAFETY: null machine and database mean the local default; no other pointers.
    let h = unsafe { OpenSCManagerW(std::ptr::null(), std::ptr::null(), SC_MANAGER_ALL_ACCESS) };
    if h.is_null() {
        return Err(io::Error::last_os_error());
    }
    Ok(Handle(h))
}

fn open(m: &Handle, names: Names) -> Option<Handle> {
    let name = wide(names.name);
    // SAFETY: `m` is an open manager handle and `name` a live NUL-terminated string.
    let h = unsafe { OpenServiceW(m.0, name.as_ptr(), SERVICE_ALL_ACCESS) };
    (!h.is_null()).then_some(Handle(h))
}

fn status(s: &Handle) -> io::Result<SERVICE_STATUS> {
    // SAFETY: plain data; zeroed is valid.
    let mut st: SERVICE_STATUS = unsafe { std::mem::zeroed() };
    // SAFETY: `s` is an open service handle; one live SERVICE_STATUS.
    if unsafe { QueryServiceStatus(s.0, &mut st) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// What [`install_and_start`] did, for the caller's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// Created now.
    New,
    /// It was there already (its command line is left as it was).
    Existing,
}

/// Installs the service to run this executable with `args` (if it is not
/// installed yet) and starts it unless it is running. Returns whether it
/// was created and whether it was started now.
pub fn install_and_start(names: Names, args: &[String]) -> io::Result<(Installed, bool)> {
    let exe = std::env::current_exe()?;
    let quote = super::quote_windows_arg;
    let mut command = quote(&exe.to_string_lossy());
    for a in std::iter::once(SERVICE_FLAG).chain(args.iter().map(String::as_str)) {
        command.push(' ');
        command.push_str(&quote(a));
    }
    let m = manager()?;
    let (svc, installed) = match open(&m, names) {
        Some(s) => (s, Installed::Existing),
        None => {
            let (name, display, path) = (wide(names.name), wide(names.display), wide(&command));
            // SAFETY: `m` is an open manager handle; every string is a live
            // NUL-terminated UTF-16 buffer; the null pointers mean no load
            // order group, no tag, no dependencies, LocalSystem, no password.
            let h = unsafe {
                CreateServiceW(
                    m.0,
                    name.as_ptr(),
                    display.as_ptr(),
                    SERVICE_ALL_ACCESS,
                    SERVICE_WIN32_OWN_PROCESS,
                    SERVICE_DEMAND_START,
                    SERVICE_ERROR_NORMAL,
                    path.as_ptr(),
                    std::ptr::null(),
                    std::ptr::null_mut(),
                    std::ptr::null(),
                    std::ptr::null(),
                    std::ptr::null(),
                )
            };
            if h.is_null() {
                return Err(io::Error::last_os_error());
            }
            (Handle(h), Installed::New)
        }
    };
    if status(&svc)?.dwCurrentState != SERVICE_STOPPED {
        return Ok((installed, false));
    }
    // SAFETY: `svc` is an open service handle; no arguments are passed
    // (the options are in its command line).
    if unsafe { StartServiceW(svc.0, 0, std::ptr::null()) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((installed, true))
}

/// Stops the service (waiting up to `wait` for it) and removes it.
/// Returns `Ok(false)` if it was not installed, else whether it stopped.
pub fn stop_and_remove(names: Names, wait: Duration) -> io::Result<Option<bool>> {
    let m = manager()?;
    let Some(svc) = open(&m, names) else {
        return Ok(None);
    };
    // SAFETY: plain data; zeroed is valid.
    let mut st: SERVICE_STATUS = unsafe { std::mem::zeroed() };
    let mut stopped = status(&svc)?.dwCurrentState == SERVICE_STOPPED;
    // SAFETY: `svc` is an open service handle; one live SERVICE_STATUS.
    if !stopped && unsafe { ControlService(svc.0, SERVICE_CONTROL_STOP, &mut st) } != 0 {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if status(&svc)?.dwCurrentState == SERVICE_STOPPED {
                stopped = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // SAFETY: `svc` is an open service handle.
    if unsafe { DeleteService(svc.0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Some(stopped))
}

/// The status handle of the running service, for the control handler.
static STATUS: AtomicPtr<core::ffi::c_void> = AtomicPtr::new(std::ptr::null_mut());
/// What the service runs: set once by [`dispatch`] before the manager
/// calls [`service_main`].
static BODY: std::sync::OnceLock<Callbacks> = std::sync::OnceLock::new();

/// The service's names, what it runs, and how it is stopped.
type Callbacks = (Names, fn() -> i32, fn());

fn report(state: u32, exit_code: u32) {
    let h = STATUS.load(Ordering::Acquire);
    if h.is_null() {
        return;
    }
    let st = SERVICE_STATUS {
        dwServiceType: SERVICE_WIN32_OWN_PROCESS,
        dwCurrentState: state,
        dwControlsAccepted: if state == SERVICE_RUNNING {
            SERVICE_ACCEPT_STOP
        } else {
            0
        },
        dwWin32ExitCode: exit_code,
        dwServiceSpecificExitCode: 0,
        dwCheckPoint: 0,
        dwWaitHint: if state == SERVICE_STOP_PENDING { 15_000 } else { 0 },
    };
    // SAFETY: `h` is the handle RegisterServiceCtrlHandlerExW returned,
    // valid for the service's life; `st` is live for the call.
    unsafe { SetServiceStatus(h, &st) };
}

unsafe extern "system" fn control(
    code: u32,
    _event: u32,
    _data: *mut core::ffi::c_void,
    _ctx: *mut core::ffi::c_void,
) -> u32 {
    if code == SERVICE_CONTROL_STOP {
        report(SERVICE_STOP_PENDING, 0);
        if let Some((_, _, stop)) = BODY.get() {
            stop();
        }
    }
    0
}

unsafe extern "system" fn service_main(_argc: u32, _argv: *mut windows_sys::core::PWSTR) {
    let Some((names, body, _)) = BODY.get().copied() else {
        return;
    };
    let name = wide(names.name);
    // SAFETY: `name` is a live NUL-terminated string; `control` has the
    // handler signature; no context.
    let h = unsafe { RegisterServiceCtrlHandlerExW(name.as_ptr(), Some(control), std::ptr::null()) };
    if h.is_null() {
        return;
    }
    STATUS.store(h, Ordering::Release);
    report(SERVICE_RUNNING, 0);
    // The manager's thread has a small stack; the server gets a main
    // thread's worth.
    let code = std::thread::Builder::new()
        .name("service".into())
        .stack_size(8 << 20)
        .spawn(body)
        .ok()
        .and_then(|t| t.join().ok())
        .unwrap_or(1);
    report(SERVICE_STOPPED, code as u32);
}

/// Points standard output and error at `NUL` when the manager gave the
/// service none that work, so the server's words (without `-o`) go
/// nowhere instead of failing.
fn quiet_std_handles() {
    use std::os::windows::io::IntoRawHandle;
    use windows_sys::Win32::System::Console::{STD_ERROR_HANDLE, STD_OUTPUT_HANDLE, SetStdHandle};
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("NUL") else {
        return;
    };
    // Kept open for the life of the process.
    let h = null.into_raw_handle();
    for which in [STD_OUTPUT_HANDLE, STD_ERROR_HANDLE] {
        // SAFETY: `h` is an open handle this process keeps for its life.
        unsafe { SetStdHandle(which, h) };
    }
}

/// Runs as the service the manager started: hands the process to the
/// service manager, which calls back to run `body` (the server), and
/// `stop` when asked to stop it; returns when it has ended. Fails when
/// not started by the manager.
pub fn dispatch(names: Names, body: fn() -> i32, stop: fn()) -> io::Result<()> {
    let _ = BODY.set((names, body, stop));
    quiet_std_handles();
    let mut name = wide(names.name);
    let table = [
        SERVICE_TABLE_ENTRYW {
            lpServiceName: name.as_mut_ptr(),
            lpServiceProc: Some(service_main),
        },
        SERVICE_TABLE_ENTRYW {
            lpServiceName: std::ptr::null_mut(),
            lpServiceProc: None,
        },
    ];
    // SAFETY: the table ends with a null entry and `name` outlives the
    // call, which returns only when the service has stopped.
    if unsafe { StartServiceCtrlDispatcherW(table.as_ptr()) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
