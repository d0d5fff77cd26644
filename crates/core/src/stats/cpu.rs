//! CPU utilisation over a test, as iperf3 reports it: process CPU time over
//! wall time, in percent, total and split into user and system.

use std::time::{Duration, Instant};

use wirespeed_sys::process::cpu_times;

/// CPU percentages.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuUse {
    /// user + system.
    pub total: f64,
    /// User mode.
    pub user: f64,
    /// Kernel mode.
    pub system: f64,
}

/// Remembers the CPU clock at a start point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuMeter {
    wall: Instant,
    user: Duration,
    system: Duration,
}

impl CpuMeter {
    /// Starts measuring now.
    pub fn start(now: Instant) -> CpuMeter {
        let (user, system) = cpu_times();
        CpuMeter {
            wall: now,
            user,
            system,
        }
    }

    /// Percentages since the start.
    pub fn read(&self, now: Instant) -> CpuUse {
        let (u, s) = cpu_times();
        let wall = now.saturating_duration_since(self.wall).as_secs_f64();
        if wall <= 0.0 {
            return CpuUse::default();
        }
        let user = u.saturating_sub(self.user).as_secs_f64() / wall * 100.0;
        let system = s.saturating_sub(self.system).as_secs_f64() / wall * 100.0;
        CpuUse {
            total: user + system,
            user,
            system,
        }
    }
}
