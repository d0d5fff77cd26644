//! iperf 2's latency histograms (`--histograms` on a server): fixed-width
//! bins of one-way latency, printed per interval and for the whole test
//! with the bins where the distribution crosses two confidence levels and
//! 99.7 %, an outlier count and out-of-range counts.
//!
//! Data threads add samples to atomic bins (no lock on the hot path); the
//! reporter keeps the previous snapshot of each histogram and reports the
//! difference, as 2.1.8 does.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::events::HistogramSample;

/// The most bins a histogram may have (2.1.8 has no limit; 10^6 bins are
/// 8 MB per flow, which is plenty).
pub(crate) const MAX_BINS: u32 = 1_000_000;

/// How a histogram is binned (`--histograms=width[u|m],bins,lower,upper`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramSpec {
    /// Bin width in `units`.
    pub width: u32,
    /// Units per second of `width`: 1e6 (µs), 1e3 (ms) or 1 (s, a width
    /// given without a letter, as 2.1.8 reads it).
    pub units: f64,
    /// Number of bins.
    pub bins: u32,
    /// Lower confidence level, percent.
    pub ci_lower: f64,
    /// Upper confidence level, percent.
    pub ci_upper: f64,
}

impl Default for HistogramSpec {
    /// 2.1.8's server default: 100 µs bins, 10000 of them, 5 % and 95 %.
    fn default() -> Self {
        HistogramSpec {
            width: 100,
            units: 1e6,
            bins: 10_000,
            ci_lower: 5.0,
            ci_upper: 95.0,
        }
    }
}

impl HistogramSpec {
    /// Parses the option's value (`None`: the defaults). A width without
    /// bins gets 1000 bins, as 2.1.8's histograms do.
    pub fn parse(v: Option<&str>) -> Result<HistogramSpec, String> {
        let mut spec = HistogramSpec::default();
        let Some(v) = v.filter(|v| !v.is_empty()) else {
            return Ok(spec);
        };
        let bad = || format!("histogram settings '{v}' not recognized (use width[u|m],bins,lower,upper)");
        let parts: Vec<&str> = v.split(',').collect();
        if parts.len() > 4 {
            return Err(bad());
        }
        let w = parts[0];
        let (num, units) = if let Some(n) = w.strip_suffix('u') {
            (n, 1e6)
        } else if let Some(n) = w.strip_suffix('m') {
            (n, 1e3)
        } else {
            (w, 1.0)
        };
        spec.width = num.parse::<u32>().ok().filter(|w| *w > 0).ok_or_else(bad)?;
        spec.units = units;
        spec.bins = match parts.get(1) {
            Some(b) => b
                .parse::<u32>()
                .ok()
                .filter(|b| (1..=MAX_BINS).contains(b))
                .ok_or_else(bad)?,
            None => 1000,
        };
        let pct = |s: &str| {
            s.parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(bad)
        };
        if let Some(l) = parts.get(2) {
            spec.ci_lower = pct(l)?;
        }
        if let Some(u) = parts.get(3) {
            spec.ci_upper = pct(u)?;
        }
        Ok(spec)
    }

    /// Bin width in milliseconds.
    pub(crate) fn width_ms(&self) -> f64 {
        self.width as f64 / self.units * 1e3
    }

    /// The server banner's line.
    pub fn banner(&self) -> String {
        format!(
            "Enabled receive histograms bin-width={:.3} ms, bins={} (clients should use --trip-times)",
            self.width_ms(),
            self.bins
        )
    }

    /// The bin a latency of `secs` falls in (may be negative or past the
    /// end). Computed in single precision and truncated, as 2.1.8 does, so
    /// samples land in the same bins.
    fn bin_of(&self, secs: f64) -> i64 {
        let v = (self.units as f32) * (secs as f32) / (self.width as f32);
        v as i64
    }

    /// `w=100us`, `w=1ms` (a width in seconds is shown in ms).
    fn width_label(&self) -> String {
        if self.units == 1e6 {
            format!("{}us", self.width)
        } else if self.units == 1e3 {
            format!("{}ms", self.width)
        } else {
            format!("{}ms", self.width as u64 * 1000)
        }
    }
}

/// The worst sample of a span and when it was taken.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Worst {
    secs: f64,
    at: (u32, u32),
}

/// One flow's histogram, fed by its data thread.
#[derive(Debug)]
pub struct LatencyHistogram {
    /// Binning.
    pub spec: HistogramSpec,
    /// `F8` (burst/frame latency, TCP) or `T8` (datagram latency, UDP).
    pub name: &'static str,
    bins: Box<[AtomicU64]>,
    population: AtomicU64,
    below: AtomicU64,
    above: AtomicU64,
    /// Worst sample (this interval, whole test), when samples carry a time.
    worst: Mutex<(Worst, Worst)>,
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new(spec: HistogramSpec, name: &'static str) -> LatencyHistogram {
        let n = spec.bins.min(MAX_BINS) as usize;
        LatencyHistogram {
            spec,
            name,
            bins: (0..n).map(|_| AtomicU64::new(0)).collect(),
            population: AtomicU64::new(0),
            below: AtomicU64::new(0),
            above: AtomicU64::new(0),
            worst: Mutex::new((Worst::default(), Worst::default())),
        }
    }

    /// Adds a sample of `secs`; `at` (wall clock) is remembered for the
    /// worst sample (TCP bursts are stamped, UDP datagrams are not).
    pub fn add(&self, secs: f64, at: Option<(u32, u32)>) {
        self.population.fetch_add(1, Relaxed);
        let b = self.spec.bin_of(secs);
        if b < 0 {
            self.below.fetch_add(1, Relaxed);
        } else if b as usize >= self.bins.len() {
            self.above.fetch_add(1, Relaxed);
        } else {
            self.bins[b as usize].fetch_add(1, Relaxed);
        }
        if let Some(at) = at
            && let Ok(mut w) = self.worst.lock()
        {
            if secs > w.0.secs {
                w.0 = Worst { secs, at };
            }
            if secs > w.1.secs {
                w.1 = Worst { secs, at };
            }
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            bins: self.bins.iter().map(|b| b.load(Relaxed)).collect(),
            population: self.population.load(Relaxed),
            below: self.below.load(Relaxed),
            above: self.above.load(Relaxed),
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Snapshot {
    bins: Vec<u64>,
    population: u64,
    below: u64,
    above: u64,
}

/// The reporter's view of one histogram: what it reported last.
#[derive(Debug, Clone, Default)]
pub(crate) struct HistogramView {
    last: Snapshot,
}

impl HistogramView {
    /// The span since the last call (`final_report`: the whole test).
    pub fn sample(&mut self, h: &LatencyHistogram, final_report: bool) -> HistogramSample {
        let now = h.snapshot();
        let zero = Snapshot {
            bins: vec![0; now.bins.len()],
            ..Snapshot::default()
        };
        let base = if final_report || self.last.bins.len() != now.bins.len() {
            &zero
        } else {
            &self.last
        };
        let delta: Vec<u64> = now
            .bins
            .iter()
            .zip(&base.bins)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        let worst = h
            .worst
            .lock()
            .map(|mut w| {
                let x = if final_report { w.1 } else { w.0 };
                w.0 = Worst::default();
                x
            })
            .unwrap_or_default();
        let mut s = summarize(&h.spec, &delta, now.population.saturating_sub(base.population));
        s.name = h.name;
        s.final_report = final_report;
        s.below = now.below.saturating_sub(base.below);
        s.above = now.above.saturating_sub(base.above);
        s.worst = (worst.secs > 0.0).then_some((worst.secs * 1e3, worst.at.0, worst.at.1));
        if !final_report {
            self.last = now;
        }
        s
    }
}

/// The printed summary of `bins` (one span) holding `population` samples.
fn summarize(spec: &HistogramSpec, bins: &[u64], population: u64) -> HistogramSample {
    let mut s = HistogramSample {
        name: "",
        final_report: false,
        width: spec.width_label(),
        count: population,
        bins: Vec::new(),
        ci_lower: spec.ci_lower,
        ci_upper: spec.ci_upper,
        lower_bin: 0,
        upper_bin: 0,
        bin_997: 0,
        outliers: 0,
        below: 0,
        above: 0,
        worst: None,
    };
    // Shares are compared in single precision, as 2.1.8 computes them, so
    // a share exactly at a level lands on the same side.
    let share = |running: u64| running as f32 / population as f32;
    let (mut running, mut fence_low, mut fence_high, mut far) = (0u64, 0u64, 0u64, 0u64);
    for (i, &n) in bins.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let bin = i as u64 + 1;
        running += n;
        let f = share(running) as f64;
        if s.lower_bin == 0 && f > spec.ci_lower / 100.0 {
            s.lower_bin = bin;
        }
        // Tukey-like fences at 10 % and 90 %; past 3 spreads beyond the
        // upper one a sample is an outlier. The threshold is fixed at the
        // first bin at or past 90 %, and bins are compared by their
        // zero-based index, as in 2.1.8.
        if f < 0.1 {
            fence_low = bin;
        }
        if f < 0.9 {
            fence_high = bin;
        } else if far == 0 {
            far = fence_high + 3 * (fence_high - fence_low);
        } else if i as u64 > far {
            s.outliers += n;
        }
        if s.upper_bin == 0 && f > spec.ci_upper / 100.0 {
            s.upper_bin = bin;
        }
        if s.bin_997 == 0 && f > 0.997 {
            s.bin_997 = bin;
        }
        s.bins.push((bin, n));
    }
    if s.upper_bin == 0 {
        s.upper_bin = spec.bins as u64;
    }
    if s.bin_997 == 0 {
        s.bin_997 = spec.bins as u64;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: &str) -> HistogramSpec {
        HistogramSpec::parse(Some(v)).unwrap()
    }

    #[test]
    fn settings_parse_as_2_1_8_reads_them() {
        assert_eq!(HistogramSpec::parse(None).unwrap(), HistogramSpec::default());
        assert_eq!(
            HistogramSpec::default().banner(),
            "Enabled receive histograms bin-width=0.100 ms, bins=10000 (clients should use --trip-times)"
        );
        let s = spec("1m,20,10,90");
        assert_eq!(
            (s.width, s.units, s.bins, s.ci_lower, s.ci_upper),
            (1, 1e3, 20, 10.0, 90.0)
        );
        assert!(s.banner().contains("bin-width=1.000 ms, bins=20"));
        // A width without a letter is in seconds.
        assert!(spec("1,10").banner().contains("bin-width=1000.000 ms, bins=10"));
        assert!(spec("10u,5").banner().contains("bin-width=0.010 ms, bins=5"));
        assert_eq!(spec("10u").bins, 1000);
        for bad in ["0.5m", "x", "1m,0", "1m,10,101", "1m,1,2,3,4", "-1u"] {
            assert!(HistogramSpec::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    /// The interval lines of a real 2.1.8 server (`--histograms=10u,50,1,99.9`)
    /// and the samples that give them.
    #[test]
    fn summary_matches_2_1_8() {
        let sp = spec("10u,50,1,99.9");
        let h = LatencyHistogram::new(sp, "T8");
        // Bins (1-based) 1:1, 2:4, 3:40, 8:1 from latencies in those bins.
        for (bin, n) in [(1u32, 1), (2, 4), (3, 40), (8, 1)] {
            for _ in 0..n {
                h.add((bin as f64 - 0.5) * 10e-6, None);
            }
        }
        let mut v = HistogramView::default();
        let s = v.sample(&h, false);
        assert_eq!(s.count, 46);
        assert_eq!(s.bins, vec![(1, 1), (2, 4), (3, 40), (8, 1)]);
        assert_eq!((s.lower_bin, s.bin_997, s.upper_bin), (1, 8, 8));
        assert_eq!(s.outliers, 1);
        assert_eq!(s.worst, None);
        // The next interval reports only what came since.
        for (bin, n) in [(2u32, 3), (3, 42)] {
            for _ in 0..n {
                h.add((bin as f64 - 0.5) * 10e-6, None);
            }
        }
        let s = v.sample(&h, false);
        assert_eq!(s.bins, vec![(2, 3), (3, 42)]);
        assert_eq!((s.lower_bin, s.bin_997, s.upper_bin, s.outliers), (2, 3, 3, 0));
        // The final report covers the whole test.
        let f = v.sample(&h, true);
        assert!(f.final_report);
        assert_eq!(f.count, 91);
        assert_eq!(f.bins, vec![(1, 1), (2, 7), (3, 82), (8, 1)]);
    }

    #[test]
    fn out_of_range_samples_and_the_worst_one() {
        let h = LatencyHistogram::new(spec("1m,10"), "F8");
        h.add(-0.002, Some((1, 0)));
        h.add(0.5, Some((7, 250)));
        h.add(0.0015, Some((3, 0)));
        let s = HistogramView::default().sample(&h, false);
        assert_eq!((s.count, s.below, s.above), (3, 1, 1));
        assert_eq!(s.bins, vec![(2, 1)]);
        assert_eq!(s.worst, Some((500.0, 7, 250)));
        // Nothing in range: the levels are not reached.
        let e = LatencyHistogram::new(spec("1m,10"), "F8");
        let s = HistogramView::default().sample(&e, false);
        assert_eq!((s.lower_bin, s.upper_bin, s.bin_997), (0, 10, 10));
    }
}
