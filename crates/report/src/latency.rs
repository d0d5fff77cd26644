//! The words for `--latency`'s round trips, shared by both dialects' text
//! (a `[LAT]` line per interval, three at the end) and the JSON keys.

use crate::document as doc;

use wirespeed_core::events::{LatencySummary, RttStats};

/// The finest difference between round trips the probes give: whole
/// microseconds (as they are printed here, and as each probe tells the
/// server the one before it).
const RESOLUTION_MS: f64 = 0.001;

fn figures(s: &RttStats) -> String {
    format!(
        "RTT p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms  ({} probes",
        s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms, s.probes
    )
}

/// An interval's line, under its streams.
pub(crate) fn interval_line(start: f64, end: f64, s: &RttStats) -> String {
    if s.probes == 0 {
        return format!("[LAT] {start:6.2}-{end:<6.2} sec  no probe came back\n");
    }
    format!("[LAT] {start:6.2}-{end:<6.2} sec  {})\n", figures(s))
}

/// The end's lines: idle, loaded, and how much the load added.
pub(crate) fn end_lines(l: &LatencySummary) -> String {
    let mut t = format!("[LAT] idle         {})\n", figures(&l.idle));
    if l.loaded.probes == 0 {
        t.push_str("[LAT] loaded       no probe came back under load\n");
    } else {
        t.push_str(&format!(
            "[LAT] loaded       {}, {})\n",
            figures(&l.loaded),
            probe_rate(l)
        ));
        let added = l.loaded.p50_ms - l.idle.p50_ms;
        if l.idle.probes > 0 && l.idle.p50_ms > 0.0 {
            // A loaded median at or below the idle one (a busy host can
            // answer faster than an idle one wakes) is no added delay.
            t.push_str(&if added > RESOLUTION_MS {
                format!(
                    "[LAT] the load added {added:.3} ms to the median round trip ({:.1}x idle)\n",
                    l.loaded.p50_ms / l.idle.p50_ms
                )
            } else {
                "[LAT] the load made no measurable increase in the median round trip\n".to_string()
            });
        }
    }
    if l.in_test_connection {
        t.push_str("[LAT] the probes rode a stream of the test's own QUIC connection\n");
    }
    if let Some(n) = &l.note {
        t.push_str(&format!("[LAT] {n}\n"));
    }
    t
}

/// How often the loaded probes went: the rate asked, or what the round
/// trips allowed when that was well short of it.
fn probe_rate(l: &LatencySummary) -> String {
    if l.achieved_rate > 0.0 && l.achieved_rate < 0.9 * f64::from(l.rate) {
        format!(
            "{:.1}/s of {}/s asked: one probe at a time, and the round trips allowed no more",
            l.achieved_rate, l.rate
        )
    } else {
        format!("{}/s", l.rate)
    }
}

/// `intervals[].latency`, and each half of `end.latency`.
pub(crate) fn rtt(s: &RttStats) -> doc::Rtt {
    doc::Rtt {
        probes: Some(i64::try_from(s.probes).unwrap_or(i64::MAX)),
        min_ms: Some(s.min_ms),
        mean_ms: Some(s.mean_ms),
        p50_ms: Some(s.p50_ms),
        p90_ms: Some(s.p90_ms),
        p99_ms: Some(s.p99_ms),
        max_ms: Some(s.max_ms),
        ..doc::Rtt::default()
    }
}

/// `end.latency`.
pub(crate) fn summary(l: &LatencySummary) -> doc::Latency {
    doc::Latency {
        probes_per_second: Some(f64::from(l.rate)),
        achieved_probes_per_second: Some(l.achieved_rate),
        idle: Some(rtt(&l.idle)),
        loaded: Some(rtt(&l.loaded)),
        note: l.note.clone(),
        in_test_connection: l.in_test_connection.then_some(true),
        ..doc::Latency::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_in_ms() {
        let mut v: Vec<f64> = (1..=100).rev().map(|i| i as f64 / 1000.0).collect();
        let s = RttStats::of(&mut v);
        assert_eq!(s.probes, 100);
        assert_eq!(
            (s.min_ms, s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms),
            (1.0, 50.0, 90.0, 99.0, 100.0)
        );
        assert!((s.mean_ms - 50.5).abs() < 1e-9);
        let mut one = vec![0.002];
        let s = RttStats::of(&mut one);
        assert_eq!((s.p50_ms, s.p99_ms), (2.0, 2.0));
        assert_eq!(RttStats::of(&mut []).probes, 0);
    }

    #[test]
    fn end_lines_say_what_the_load_added() {
        let l = LatencySummary {
            rate: 10,
            achieved_rate: 9.8,
            idle: RttStats {
                probes: 10,
                p50_ms: 0.05,
                ..Default::default()
            },
            loaded: RttStats {
                probes: 20,
                p50_ms: 0.25,
                ..Default::default()
            },
            note: None,
            in_test_connection: false,
        };
        let t = end_lines(&l);
        assert!(t.contains("[LAT] idle "), "{t}");
        assert!(!t.contains("QUIC"), "{t}");
        let quic = LatencySummary {
            in_test_connection: true,
            ..l.clone()
        };
        let t = end_lines(&quic);
        assert!(
            t.contains("[LAT] the probes rode a stream of the test's own QUIC connection\n"),
            "{t}"
        );
        assert_eq!(summary(&quic).in_test_connection, Some(true));
        assert_eq!(summary(&l).in_test_connection, None);
        assert!(t.contains("(20 probes, 10/s)"), "{t}");
        assert!(t.contains("added 0.200 ms to the median round trip (5.0x idle)"), "{t}");
        // Round trips longer than the gap between probes slow them down.
        let slow = LatencySummary {
            achieved_rate: 4.9,
            ..l.clone()
        };
        let t = end_lines(&slow);
        assert!(
            t.contains("(20 probes, 4.9/s of 10/s asked: one probe at a time"),
            "{t}"
        );
        assert!((summary(&slow).achieved_probes_per_second.unwrap() - 4.9).abs() < 1e-9);
    }

    #[test]
    fn a_loaded_median_not_above_the_idle_one_adds_nothing() {
        let at = |idle: f64, loaded: f64| {
            let rtt = |p50_ms, probes| RttStats {
                probes,
                p50_ms,
                ..Default::default()
            };
            end_lines(&LatencySummary {
                rate: 10,
                achieved_rate: 10.0,
                idle: rtt(idle, 10),
                loaded: rtt(loaded, 20),
                note: None,
                in_test_connection: false,
            })
        };
        // The report that found this: 0.4x idle, "added -0.046 ms".
        for (idle, loaded) in [(0.077, 0.031), (0.05, 0.05), (0.05, 0.0505), (0.05, 0.051)] {
            let t = at(idle, loaded);
            assert!(
                t.contains("[LAT] the load made no measurable increase in the median round trip\n"),
                "{idle} -> {loaded}: {t}"
            );
            assert!(!t.contains("added"), "{t}");
        }
        // Just above the resolution it is measured.
        assert!(
            at(0.05, 0.053).contains("the load added 0.003 ms"),
            "{}",
            at(0.05, 0.053)
        );
    }
}
