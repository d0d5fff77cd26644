//! Clocks and calendar formatting on Windows: the performance counter as
//! the monotonic clock, the C runtime's strftime.

use std::ffi::CString;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The performance counter as (seconds, nanoseconds) since boot.
pub fn monotonic() -> (u64, u32) {
    use windows_sys::Win32::System::Performance::{QueryPerformanceCounter, QueryPerformanceFrequency};
    static FREQ: OnceLock<u64> = OnceLock::new();
    let freq = *FREQ.get_or_init(|| {
        let mut f = 0i64;
        // SAFETY: valid pointer to a live i64; cannot fail on XP and later.
        unsafe { QueryPerformanceFrequency(&mut f) };
        f.max(1) as u64
    });
    let mut c = 0i64;
    // SAFETY: valid pointer to a live i64.
    unsafe { QueryPerformanceCounter(&mut c) };
    let c = c.max(0) as u64;
    let secs = c / freq;
    let nanos = ((c % freq) as u128 * 1_000_000_000 / freq as u128) as u32;
    (secs, nanos)
}

/// The calendar clock as (seconds, nanoseconds) since the epoch.
pub fn realtime() -> (u64, u32) {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    (d.as_secs(), d.subsec_nanos())
}

unsafe extern "C" {
    /// The C runtime's strftime (msvcrt), which the libc crate does not
    /// declare for Windows.
    #[link_name = "strftime"]
    fn crt_strftime(s: *mut libc::c_char, max: usize, format: *const libc::c_char, tm: *const libc::tm) -> usize;
}

/// Formats epoch seconds with strftime, in local time or UTC.
pub fn strftime(fmt: &str, epoch_secs: i64, utc: bool) -> String {
    let Ok(cfmt) = CString::new(fmt) else {
        return String::new();
    };
    let t: libc::time_t = epoch_secs as libc::time_t;
    // SAFETY: tm is plain data; zeroed is valid.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to live values; the *_s variants are thread-safe.
    let rc = unsafe {
        if utc {
            libc::gmtime_s(&mut tm, &t)
        } else {
            libc::localtime_s(&mut tm, &t)
        }
    };
    if rc != 0 {
        return String::new();
    }
    let mut buf = vec![0u8; 256];
    // SAFETY: buf is writable for buf.len() bytes; strftime writes at most
    // that and returns the count written (0 on overflow).
    let n = unsafe { crt_strftime(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), &tm) };
    buf.truncate(n);
    String::from_utf8_lossy(&buf).into_owned()
}

pub use super::epoch_now;
