//! The terminal: its size, for the `--live` status line (which must never
//! wrap: a wrapped line cannot be erased with a carriage return), and a
//! password prompt with echo off.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::mem;
use std::os::fd::AsRawFd;

/// Columns of the terminal on `fd`, if it is one.
pub fn columns(fd: i32) -> Option<usize> {
    // SAFETY: winsize is plain data; zeroed is a valid value.
    let mut ws: libc::winsize = unsafe { mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into the live struct we pass; on
    // a descriptor that is not a terminal it fails with ENOTTY and writes nothing.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws as *mut libc::winsize) };
    (rc == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

/// Puts a terminal's saved settings back when dropped, so echo comes back
/// on every way out of [`read_secret`].
struct Restore {
    fd: i32,
    saved: libc::termios,
}

impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: tcsetattr only reads the termios we pass; `fd` is the
        // terminal `read_secret` still holds open while this guard lives.
        unsafe { libc::tcsetattr(self.fd, libc::TCSAFLUSH, &self.saved) };
    }
}

/// Asks for a secret on the controlling terminal (`/dev/tty`, so neither a
/// redirected stdin nor a `-J` stdout is involved): writes `prompt` there,
/// turns echo off, and reads one line (without its line end). Returns
/// `Ok(None)` if `cancelled()` turns true while it waits (a signal
/// arrived), an error if the process has no terminal, the terminal closes,
/// or the line is longer than `max` bytes.
pub fn read_secret(prompt: &str, max: usize, cancelled: &dyn Fn() -> bool) -> io::Result<Option<Vec<u8>>> {
    let mut tty: File = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    let fd = tty.as_raw_fd();
    // SAFETY: termios is plain data; zeroed is a valid value.
    let mut saved: libc::termios = unsafe { mem::zeroed() };
    // SAFETY: tcgetattr writes one termios into the live struct we pass;
    // `fd` is open (owned by `tty`) for the whole call.
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut quiet = saved;
    // No echo, but the Enter key still moves to the next line.
    quiet.c_lflag &= !libc::ECHO;
    quiet.c_lflag |= libc::ECHONL;
    // SAFETY: tcsetattr only reads the termios we pass; `fd` is open.
    if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Declared after `tty`, so dropped (echo restored) before it closes.
    let _restore = Restore { fd, saved };
    tty.write_all(prompt.as_bytes())?;
    tty.flush()?;
    let mut line = Vec::new();
    let mut chunk = [0u8; 256];
    loop {
        if cancelled() {
            return Ok(None);
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes exactly the one pollfd we pass.
        let n = unsafe { libc::poll(&mut pfd, 1, 200) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            continue;
        }
        let got = match tty.read(&mut chunk) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the terminal closed")),
            Ok(g) => g,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        line.extend_from_slice(&chunk[..got]);
        if let Some(end) = line.iter().position(|b| *b == b'\n' || *b == b'\r') {
            line.truncate(end);
            return Ok(Some(line));
        }
        if line.len() > max {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the line is too long"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_not_a_terminal() {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(columns(f.as_raw_fd()), None);
    }
}
