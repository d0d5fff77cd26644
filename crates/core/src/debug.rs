//! `-d`: debugging output on stderr, iperf3's levels (1 error, 2 warning,
//! 3 info, 4 everything). Off unless asked; cheap when off.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

static LEVEL: AtomicU8 = AtomicU8::new(0);

/// Sets the level (0 = off).
pub fn set_level(l: u8) {
    LEVEL.store(l, Relaxed);
}

/// Whether messages of `level` are printed.
pub fn enabled(level: u8) -> bool {
    let l = LEVEL.load(Relaxed);
    l > 0 && level <= l
}

/// Prints a debug line (use through [`debug!`](crate::debug!)).
pub fn emit(level: u8, msg: std::fmt::Arguments) {
    if enabled(level) {
        eprintln!("debug{level}: {msg}");
    }
}

/// Prints a debug line at `level` when `-d` asked for it.
#[macro_export]
macro_rules! debug {
    ($level:expr, $($arg:tt)*) => {
        if $crate::debug::enabled($level) {
            $crate::debug::emit($level, format_args!($($arg)*));
        }
    };
}
