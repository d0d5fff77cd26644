//! Window advice: after a TCP test, what limited the sender — the
//! receiver's window, its own send buffer, the path, or itself — and a `-w`
//! worked out from the bandwidth-delay product.
//!
//! The kernel times why a TCP sender could not send (`tcpi_busy_time`,
//! split into `tcpi_rwnd_limited` and `tcpi_sndbuf_limited`, the rest being
//! congestion-window limited); with the measured rate and the smoothed RTT
//! that is enough to say which knob matters. Pure arithmetic on numbers
//! `stats` collected, computed once for every output.

use crate::events::{WindowAdvice, WindowLimit};
use crate::units::format_iperf3;

/// A limit that held the sender back for at least this share of its busy
/// time is called the limit.
pub const LIMITED_SHARE: f64 = 0.2;
/// A connection busy for less than this share of the test was held back by
/// its sender (a `-b` rate, the application, the CPU), not the network.
pub const BUSY_SHARE: f64 = 0.5;
/// A sending host whose CPU use (as `-V` reports it: the process's CPU
/// time over the test's wall time, so 100% is one CPU and a process on
/// several CPUs goes past it) reaches this share of the CPUs its sending
/// streams could keep busy was the limit, not the path: typical of
/// loopback tests.
pub const CPU_BOUND: f64 = 90.0;
/// Data in flight (rate x RTT) of at least this share of SO_SNDBUF (which
/// Linux doubles for its bookkeeping) filled the send buffer: the sender
/// was held back by it even when the kernel's sndbuf timer did not run
/// (a small buffer stalls on delayed ACKs, which inflates the RTT instead).
pub const SNDBUF_FILL: f64 = 0.5;
/// Without a `-b` target, the suggested window lets the rate grow this many
/// times before the window binds again.
pub const HEADROOM: f64 = 4.0;

/// What the advice is computed from (sums over this host's sending streams).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AdviceInput {
    /// Sending TCP streams.
    pub streams: u32,
    /// Delivered rate of all of them, bit/s.
    pub bits_per_second: f64,
    /// How long they ran, µs.
    pub elapsed_us: u64,
    /// Mean smoothed RTT, µs.
    pub rtt_us: u64,
    /// Smallest RTT the kernel saw, µs (0 = unknown).
    pub min_rtt_us: u64,
    /// Σ tcpi_busy_time, µs.
    pub busy_us: u64,
    /// Σ tcpi_rwnd_limited, µs.
    pub rwnd_limited_us: u64,
    /// Σ tcpi_sndbuf_limited, µs.
    pub sndbuf_limited_us: u64,
    /// Largest receive window the peer advertised, bytes (0 = unknown).
    pub peer_window: u64,
    /// SO_SNDBUF of a sending socket, bytes (0 = unknown).
    pub send_buffer: u64,
    /// Target rate asked with `-b`, for all streams (0 = none).
    pub target_bits_per_second: f64,
    /// This host's CPU use over the test, % of one CPU (as the CPU
    /// Utilization line; more than 100 on more than one CPU).
    pub cpu_percent: f64,
    /// CPUs this host could run its sending streams on (0 = unknown: one).
    pub cpus: u32,
}

impl AdviceInput {
    /// The CPUs the sending streams could keep busy: one a stream (each
    /// runs on a thread, or many on a worker per CPU), at most the host's.
    fn sending_cpus(&self) -> f64 {
        f64::from(self.streams.min(self.cpus.max(1)).max(1))
    }

    /// The sender used (nearly) all the CPU its streams could.
    fn cpu_bound(&self) -> bool {
        self.cpu_percent >= CPU_BOUND * self.sending_cpus()
    }
}

fn bytes(b: f64) -> String {
    format!("{}s", format_iperf3(b, 'A')).trim_start().to_string()
}

fn rate(bps: f64) -> String {
    format!("{}s/sec", format_iperf3(bps / 8.0, 'a'))
        .trim_start()
        .to_string()
}

fn ms(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1000.0)
}

/// The `-w` value (a power of two of KiB, at least 4K) that holds `need` bytes.
pub fn window_option(need: f64) -> (u64, String) {
    let mut kib: u64 = 4;
    while ((kib * 1024) as f64) < need && kib < 512 * 1024 {
        kib *= 2;
    }
    let text = if kib >= 1024 && kib.is_multiple_of(1024) {
        format!("{}M", kib / 1024)
    } else {
        format!("{kib}K")
    };
    (kib * 1024, text)
}

/// Works out the advice; `None` when there is nothing to go on (no sending
/// TCP stream, no RTT).
pub fn advise(i: &AdviceInput) -> Option<WindowAdvice> {
    if i.streams == 0 || i.rtt_us == 0 {
        return None;
    }
    let share = |x: u64| {
        if i.busy_us > 0 {
            x as f64 / i.busy_us as f64
        } else {
            0.0
        }
    };
    let rwnd = share(i.rwnd_limited_us);
    let sndbuf = share(i.sndbuf_limited_us);
    let busy = if i.elapsed_us > 0 {
        (i.busy_us as f64 / (i.elapsed_us as f64 * i.streams as f64)).min(1.0)
    } else {
        0.0
    };
    let filled = i.send_buffer > 0
        && i.bits_per_second / i.streams as f64 * i.rtt_us as f64 / 8e6 >= SNDBUF_FILL * i.send_buffer as f64;
    let limited_by = if i.busy_us == 0 {
        WindowLimit::Unknown
    } else if rwnd >= LIMITED_SHARE && rwnd >= sndbuf {
        WindowLimit::ReceiveWindow
    } else if sndbuf >= LIMITED_SHARE || filled {
        WindowLimit::SendBuffer
    } else if busy < BUSY_SHARE || i.cpu_bound() {
        WindowLimit::Sender
    } else {
        WindowLimit::Path
    };
    let n = i.streams as f64;
    let rtt_s = i.rtt_us as f64 / 1e6;
    let per_stream = i.bits_per_second / n;
    let in_flight = per_stream * rtt_s / 8.0;
    let each = if i.streams > 1 { " per stream" } else { "" };
    let mut lines = Vec::new();
    let why = if limited_by == WindowLimit::SendBuffer && sndbuf < LIMITED_SHARE {
        format!(
            "limited by the send buffer: the data in flight (rate x RTT) filled its {}",
            bytes(i.send_buffer as f64)
        )
    } else {
        reason(limited_by, rwnd, sndbuf, busy, i)
    };
    lines.push(format!("Window advice: {why}."));
    lines.push(format!(
        "In flight{each}: {} x {} RTT = {} (bandwidth-delay product){}.",
        rate(per_stream),
        ms(i.rtt_us),
        bytes(in_flight),
        match (limited_by, i.peer_window, i.send_buffer) {
            (WindowLimit::ReceiveWindow, w, _) if w > 0 =>
                format!("; the receiver offered at most {}", bytes(w as f64)),
            (WindowLimit::SendBuffer, _, b) if b > 0 => format!("; the send buffer was {}", bytes(b as f64)),
            _ => String::new(),
        }
    ));
    let (mut target, mut suggested, mut option) = (None, None, None);
    if matches!(limited_by, WindowLimit::ReceiveWindow | WindowLimit::SendBuffer) {
        let (t, w, text, line) = suggest(i, limited_by, each);
        lines.push(line);
        target = Some(t);
        suggested = Some(w);
        option = Some(format!("-w {text}"));
    } else if limited_by == WindowLimit::Path {
        lines.push("A larger -w will not help: the window was not what held the sender back.".to_string());
    }
    Some(WindowAdvice {
        limited_by,
        bits_per_second: i.bits_per_second,
        rtt_us: i.rtt_us,
        min_rtt_us: i.min_rtt_us,
        bdp_bytes: (in_flight * n) as u64,
        rwnd_limited_percent: rwnd * 100.0,
        sndbuf_limited_percent: sndbuf * 100.0,
        busy_percent: busy * 100.0,
        peer_window_bytes: i.peer_window,
        send_buffer_bytes: i.send_buffer,
        target_bits_per_second: target,
        suggested_window_bytes: suggested,
        suggested_option: option,
        text: lines,
    })
}

/// One sentence on what held the sender back.
fn reason(limited_by: WindowLimit, rwnd: f64, sndbuf: f64, busy: f64, i: &AdviceInput) -> String {
    match limited_by {
        WindowLimit::ReceiveWindow => format!(
            "limited by the receive window: the sender waited for the receiver's window {:.0}% of the time it had data to send",
            rwnd * 100.0
        ),
        WindowLimit::SendBuffer => format!(
            "limited by the send buffer: the sender waited for buffer space {:.0}% of the time it had data to send",
            sndbuf * 100.0
        ),
        WindowLimit::Path => format!(
            "limited by the path: congestion control set the pace (window-limited {:.0}%, buffer-limited {:.0}% of the busy time)",
            rwnd * 100.0,
            sndbuf * 100.0
        ),
        WindowLimit::Sender if i.cpu_bound() => {
            let cpus = i.sending_cpus();
            let streams = if i.streams == 1 {
                "its sending stream".to_string()
            } else {
                format!("its {} sending streams", i.streams)
            };
            format!(
                "limited by the sender: its process kept {:.2} CPUs busy ({:.0}% of one CPU) where {streams} could use {} CPU{}, so this measured the host more than the network",
                i.cpu_percent / 100.0,
                i.cpu_percent,
                cpus,
                if cpus == 1.0 { "" } else { "s" }
            )
        }
        WindowLimit::Sender => format!(
            "limited by the sender: the connection had data to send only {:.0}% of the test (a -b rate, or the sending host)",
            busy * 100.0
        ),
        WindowLimit::Unknown => "the kernel did not say why the sender waited (no tcpi_busy_time)".to_string(),
    }
}

/// The window to try when a window held the test back: the target rate,
/// the window in bytes, its -w text and the line that explains it.
fn suggest(i: &AdviceInput, limited_by: WindowLimit, each: &str) -> (f64, u64, String, String) {
    let n = i.streams as f64;
    let rtt_s = i.rtt_us as f64 / 1e6;
    let (t, how) = if i.target_bits_per_second > i.bits_per_second {
        (i.target_bits_per_second, "for the rate asked with -b".to_string())
    } else {
        (
            i.bits_per_second * HEADROOM,
            format!("to let the rate grow {HEADROOM:.0}x"),
        )
    };
    let bdp = t / n * rtt_s / 8.0;
    // A window of a few segments stalls on delayed ACKs and timers long
    // before rate x RTT fills it: never suggest less than twice the
    // window that held this test back.
    let current = match limited_by {
        WindowLimit::ReceiveWindow => i.peer_window,
        _ => i.send_buffer,
    } as f64;
    let need = bdp.max(current * 2.0);
    let (w, text) = window_option(need);
    let arithmetic = format!("{}{each} x {} = {}", rate(t / n), ms(i.rtt_us), bytes(bdp));
    let line = if bdp >= current * 2.0 {
        format!(
            "Window needed {how}: {arithmetic} -> try -w {text} (on both ends; repeat until the test is no longer window-limited)."
        )
    } else {
        format!(
            "Window needed {how}: {arithmetic}, less than the {} window that held the test back, which is too small to keep segments flowing: double it -> try -w {text}.",
            bytes(current)
        )
    };
    (t, w, text, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> AdviceInput {
        AdviceInput {
            streams: 1,
            bits_per_second: 8_000_000.0,
            elapsed_us: 10_000_000,
            rtt_us: 20_000,
            min_rtt_us: 19_000,
            busy_us: 10_000_000,
            rwnd_limited_us: 0,
            sndbuf_limited_us: 0,
            peer_window: 20_000,
            send_buffer: 87_040,
            target_bits_per_second: 0.0,
            cpu_percent: 5.0,
            cpus: 8,
        }
    }

    #[test]
    fn receive_window_limited_gets_a_bdp_window() {
        let a = advise(&AdviceInput {
            rwnd_limited_us: 8_000_000,
            ..input()
        })
        .unwrap();
        assert_eq!(a.limited_by, WindowLimit::ReceiveWindow);
        // 8 Mbit/s x 20 ms = 20 000 bytes in flight; 4x = 80 000 -> 128K.
        assert_eq!(a.bdp_bytes, 20_000);
        assert_eq!(a.suggested_window_bytes, Some(128 * 1024));
        assert_eq!(a.suggested_option.as_deref(), Some("-w 128K"));
        assert!(
            a.text[1].contains("8.00 Mbits/sec x 20.00 ms RTT = 19.5 KBytes"),
            "{}",
            a.text[1]
        );
        assert!(
            a.text[2].contains("32.0 Mbits/sec x 20.00 ms = 78.1 KBytes -> try -w 128K"),
            "{}",
            a.text[2]
        );
    }

    #[test]
    fn a_rate_target_sets_the_window_needed() {
        let a = advise(&AdviceInput {
            sndbuf_limited_us: 5_000_000,
            target_bits_per_second: 1e9,
            streams: 2,
            ..input()
        })
        .unwrap();
        assert_eq!(a.limited_by, WindowLimit::SendBuffer);
        // 500 Mbit/s per stream x 20 ms = 1.25 MB -> 2M.
        assert_eq!(a.suggested_option.as_deref(), Some("-w 2M"));
    }

    #[test]
    fn cwnd_limited_is_the_path_and_idle_is_the_sender() {
        let a = advise(&input()).unwrap();
        assert_eq!(a.limited_by, WindowLimit::Path);
        assert_eq!(a.suggested_option, None);
        let a = advise(&AdviceInput {
            busy_us: 1_000_000,
            ..input()
        })
        .unwrap();
        assert_eq!(a.limited_by, WindowLimit::Sender);
        let a = advise(&AdviceInput {
            cpu_percent: 97.0,
            ..input()
        })
        .unwrap();
        assert_eq!(a.limited_by, WindowLimit::Sender);
        assert!(
            a.text[0].contains("kept 0.97 CPUs busy (97% of one CPU) where its sending stream could use 1 CPU,"),
            "{}",
            a.text[0]
        );
        let a = advise(&AdviceInput { busy_us: 0, ..input() }).unwrap();
        assert_eq!(a.limited_by, WindowLimit::Unknown);
        assert!(advise(&AdviceInput { rtt_us: 0, ..input() }).is_none());
    }

    #[test]
    fn cpu_use_is_of_one_cpu_and_judged_against_the_cpus_the_streams_could_use() {
        // The report that found this: "its CPU was busy 108%" (108% is 1.08
        // CPUs of process time, as iperf3 counts it).
        let a = advise(&AdviceInput {
            cpu_percent: 108.0,
            ..input()
        })
        .unwrap();
        assert_eq!(a.limited_by, WindowLimit::Sender);
        assert!(
            a.text[0].contains("kept 1.08 CPUs busy (108% of one CPU)"),
            "{}",
            a.text[0]
        );
        assert!(!a.text[0].contains("busy 108%"), "{}", a.text[0]);
        // Four streams on four CPUs at 150%: not CPU-bound (the path is).
        let four = AdviceInput {
            streams: 4,
            busy_us: 40_000_000,
            cpu_percent: 150.0,
            ..input()
        };
        assert_eq!(advise(&four).unwrap().limited_by, WindowLimit::Path);
        // ... but on one CPU (-A) it is.
        let pinned = AdviceInput {
            cpus: 1,
            cpu_percent: 95.0,
            ..four
        };
        let a = advise(&pinned).unwrap();
        assert_eq!(a.limited_by, WindowLimit::Sender);
        assert!(
            a.text[0].contains("its 4 sending streams could use 1 CPU,"),
            "{}",
            a.text[0]
        );
        let a = advise(&AdviceInput {
            cpu_percent: 380.0,
            ..four
        })
        .unwrap();
        assert!(
            a.text[0].contains("kept 3.80 CPUs busy (380% of one CPU) where its 4 sending streams could use 4 CPUs"),
            "{}",
            a.text[0]
        );
    }

    #[test]
    fn never_suggests_less_than_twice_the_window_that_stalled() {
        // Loopback with -w 8K: a tiny rate x RTT, yet window-limited.
        let a = advise(&AdviceInput {
            bits_per_second: 1.25e6,
            rtt_us: 117,
            rwnd_limited_us: 8_000_000,
            peer_window: 16384,
            ..input()
        })
        .unwrap();
        assert_eq!(a.suggested_option.as_deref(), Some("-w 32K"));
        assert!(a.text[2].contains("double it"), "{}", a.text[2]);
    }

    #[test]
    fn a_full_send_buffer_is_the_limit_even_without_its_timer() {
        // iperf 2 -w 4K on the client only: SO_SNDBUF 8 KBytes, 68 Mbit/s
        // over a 25 ms RTT (delayed ACKs) is 212 KBytes "in flight".
        let a = advise(&AdviceInput {
            bits_per_second: 68e6,
            rtt_us: 25_000,
            send_buffer: 8192,
            ..input()
        })
        .unwrap();
        assert_eq!(a.limited_by, WindowLimit::SendBuffer);
        assert!(a.text[0].contains("filled its 8.00 KBytes"), "{}", a.text[0]);
        // 4 x 68 Mbit/s x 25 ms = 850 KBytes -> 1M.
        assert_eq!(a.suggested_option.as_deref(), Some("-w 1M"));
        // Half the buffer is not yet full: the path.
        let a = advise(&AdviceInput {
            send_buffer: 1 << 20,
            ..input()
        })
        .unwrap();
        assert_eq!(a.limited_by, WindowLimit::Path);
    }

    #[test]
    fn window_option_rounds_up_to_a_power_of_two() {
        assert_eq!(window_option(1.0).1, "4K");
        assert_eq!(window_option(4097.0).1, "8K");
        assert_eq!(window_option(1_048_576.0).1, "1M");
        assert_eq!(window_option(1_048_577.0).1, "2M");
    }
}
