//! Terminal size, for the `--live` status line (which must never wrap: a
//! wrapped line cannot be erased with a carriage return).

use std::mem;

/// Columns of the terminal on `fd`, if it is one.
pub fn columns(fd: i32) -> Option<usize> {
    // SAFETY: winsize is plain data; zeroed is a valid value.
    let mut ws: libc::winsize = unsafe { mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into the live struct we pass; on
    // a descriptor that is not a terminal it fails with ENOTTY and writes nothing.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws as *mut libc::winsize) };
    (rc == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
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
