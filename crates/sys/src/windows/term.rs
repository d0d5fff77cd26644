//! The console on Windows: its width, for the `--live` status line, and a
//! password prompt with echo off.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::windows::io::AsRawHandle;

use windows_sys::Win32::System::Console::{
    CONSOLE_MODE, CONSOLE_SCREEN_BUFFER_INFO, ENABLE_ECHO_INPUT, GetConsoleMode, GetConsoleScreenBufferInfo,
    GetStdHandle, STD_ERROR_HANDLE, STD_OUTPUT_HANDLE, SetConsoleMode,
};

/// Columns of the console on standard output (`fd` 1) or error (2), if
/// it is one.
pub fn columns(fd: i32) -> Option<usize> {
    let which = match fd {
        1 => STD_OUTPUT_HANDLE,
        2 => STD_ERROR_HANDLE,
        _ => return None,
    };
    // SAFETY: the info struct is plain data; zeroed is valid.
    let mut info: CONSOLE_SCREEN_BUFFER_INFO = unsafe { std::mem::zeroed() };
    // SAFETY: GetStdHandle takes no pointers; GetConsoleScreenBufferInfo
    // writes one live struct and fails on a handle that is not a console.
    let ok = unsafe { GetConsoleScreenBufferInfo(GetStdHandle(which), &mut info) };
    let width = info.srWindow.Right as i32 - info.srWindow.Left as i32 + 1;
    (ok != 0 && width > 0).then_some(width as usize)
}

/// Puts the console's input mode back when dropped.
struct Restore<'a> {
    input: &'a File,
    saved: CONSOLE_MODE,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle is the console input `read_secret` still holds
        // open while this guard lives; no pointers.
        unsafe { SetConsoleMode(self.input.as_raw_handle(), self.saved) };
    }
}

/// Asks for a secret on the console (`CONIN$`/`CONOUT$`, so neither a
/// redirected stdin nor a `-J` stdout is involved): writes `prompt`, turns
/// echo off, and reads one line (without its line end). Returns
/// `Ok(None)` if `cancelled()` is true once the line is read (Ctrl-C), an
/// error if there is no console or the line is longer than `max` bytes.
pub fn read_secret(prompt: &str, max: usize, cancelled: &dyn Fn() -> bool) -> io::Result<Option<Vec<u8>>> {
    let mut input = OpenOptions::new().read(true).write(true).open("CONIN$")?;
    let mut output = OpenOptions::new().write(true).open("CONOUT$")?;
    let mut saved: CONSOLE_MODE = 0;
    // SAFETY: the handle is open (owned by `input`); one live CONSOLE_MODE.
    if unsafe { GetConsoleMode(input.as_raw_handle(), &mut saved) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; no pointers.
    if unsafe { SetConsoleMode(input.as_raw_handle(), saved & !ENABLE_ECHO_INPUT) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let restore = Restore { input: &input, saved };
    output.write_all(prompt.as_bytes())?;
    output.flush()?;
    let mut line = Vec::new();
    let mut chunk = [0u8; 256];
    let got = loop {
        let got = match (&*restore.input).read(&mut chunk) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the console closed")),
            Ok(g) => g,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if cancelled() {
            return Ok(None);
        }
        line.extend_from_slice(&chunk[..got]);
        if let Some(end) = line.iter().position(|b| *b == b'\n' || *b == b'\r') {
            line.truncate(end);
            break line;
        }
        if line.len() > max {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the line is too long"));
        }
    };
    drop(restore);
    let _ = output.write_all(b"\r\n");
    let _ = &mut input;
    Ok(Some(got))
}
