//! Clocks and calendar formatting: the monotonic clock iperf3 stamps UDP
//! datagrams with, and strftime for `--timestamps` and headers.

use std::ffi::CString;
use std::mem;

/// CLOCK_MONOTONIC as (seconds, nanoseconds).
pub fn monotonic() -> (u64, u32) {
    clock(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME as (seconds, nanoseconds).
pub fn realtime() -> (u64, u32) {
    clock(libc::CLOCK_REALTIME)
}

fn clock(id: libc::clockid_t) -> (u64, u32) {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a live timespec; the clock ids used are always
    // available on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

/// Formats epoch seconds with strftime, in local time or UTC.
pub fn strftime(fmt: &str, epoch_secs: i64, utc: bool) -> String {
    let Ok(cfmt) = CString::new(fmt) else {
        return String::new();
    };
    // `as _`: time_t is i64 here, and libc marks its musl alias deprecated.
    let t = epoch_secs as _;
    // SAFETY: tm is plain data; zeroed is valid.
    let mut tm: libc::tm = unsafe { mem::zeroed() };
    // SAFETY: valid pointers to live values; the *_r variants are thread-safe.
    let ok = unsafe {
        if utc {
            !libc::gmtime_r(&t, &mut tm).is_null()
        } else {
            !libc::localtime_r(&t, &mut tm).is_null()
        }
    };
    if !ok {
        return String::new();
    }
    let mut buf = vec![0u8; 256];
    // SAFETY: buf is writable for buf.len() bytes; strftime writes at most
    // that and returns the count written (0 on overflow).
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), &tm) };
    buf.truncate(n);
    String::from_utf8_lossy(&buf).into_owned()
}

pub use super::epoch_now;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1123_in_utc() {
        assert_eq!(
            strftime("%a, %d %b %Y %H:%M:%S GMT", 1795317876, true),
            "Sun, 22 Nov 2026 03:24:36 GMT"
        );
    }

    #[test]
    fn monotonic_moves_forward() {
        let a = monotonic();
        let b = monotonic();
        assert!(b >= a);
    }
}
