//! Line charts as inline SVG: the small piece of plotting the HTML report needs.
//!
//! Hand-rolled rather than a plotting crate: the report wants a few line
//! charts with "nice" ticks, a responsive `viewBox`, hover titles and
//! machine-readable scale attributes (so tests can map points back to
//! values) — a few hundred lines, against a dependency tree that would bring
//! fonts and backends we do not use.
//!
//! Every `<svg class="chart">` carries `data-x-min`, `data-x-max`,
//! `data-y-min`, `data-y-max` (axis ends, in displayed units),
//! `data-y-scale` (raw units per displayed unit) and `data-plot` (the plot
//! box `left top right bottom` in viewBox units). Each series is a
//! `<polyline data-series=.. data-label=..>` whose points invert exactly to
//! the values plotted.

use std::fmt::Write as _;

use super::escape;

/// ViewBox width: charts scale to their container.
pub(crate) const WIDTH: f64 = 640.0;
/// ViewBox height.
pub(crate) const HEIGHT: f64 = 300.0;
const LEFT: f64 = 66.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 46.0;
/// Above this many points a series is drawn without per-point markers.
const MARKER_LIMIT: usize = 120;

/// Colour-blind-safe palette (Okabe–Ito first, then Tol's muted colours).
const PALETTE: &[&str] = &[
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#882255", "#44AA99", "#999933", "#AA4499",
];
/// Colour of sums.
pub(crate) const SUM_COLOUR: &str = "#222222";
/// Colour of the second direction's sum in a bidirectional test.
pub(crate) const SUM2_COLOUR: &str = "#777777";
/// Colour of per-stream lines when there are too many to tell apart.
pub(crate) const CROWD_COLOUR: &str = "#B8C4D6";

/// What a chart's values measure, which decides scaling and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bits per second, shown in decimal multiples (as iperf prints rates).
    BitsPerSecond,
    /// Bytes, shown in binary multiples (as iperf prints sizes).
    Bytes,
    /// Milliseconds.
    Millis,
    /// Percent.
    Percent,
    /// A plain count per interval.
    Count,
    /// Round trips per minute (responsiveness).
    Rpm,
}

impl Unit {
    /// (raw units per displayed unit, unit label) for values up to `max`.
    pub fn scale(self, max: f64) -> (f64, &'static str) {
        match self {
            Unit::BitsPerSecond => {
                let steps = [(1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "Kbit/s")];
                steps
                    .iter()
                    .find(|(f, _)| max >= *f)
                    .map(|&(f, l)| (f, l))
                    .unwrap_or((1.0, "bit/s"))
            }
            Unit::Bytes => {
                let steps = [
                    (1024.0 * 1024.0 * 1024.0, "GByte"),
                    (1024.0 * 1024.0, "MByte"),
                    (1024.0, "KByte"),
                ];
                steps
                    .iter()
                    .find(|(f, _)| max >= *f)
                    .map(|&(f, l)| (f, l))
                    .unwrap_or((1.0, "byte"))
            }
            Unit::Millis => (1.0, "ms"),
            Unit::Percent => (1.0, "%"),
            Unit::Count => (1.0, "count"),
            Unit::Rpm => (1.0, "RPM"),
        }
    }
}

/// One line on a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// (seconds, raw value) points in time order.
    pub points: Vec<(f64, f64)>,
    /// Stroke colour.
    pub colour: String,
    /// Drawn thicker (sums).
    pub emphasis: bool,
    /// Listed in the legend (crowds of streams share one entry).
    pub in_legend: bool,
}

/// A chart to draw.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Short machine name (`throughput`, `rtt`, ...), used in ids and tests.
    pub id: String,
    /// Heading.
    pub title: String,
    /// What the y values measure (name before the unit, e.g. "Throughput").
    pub y_name: String,
    /// Unit of the raw values.
    pub unit: Unit,
    /// The lines.
    pub series: Vec<Series>,
    /// The time axis' ends (seconds).
    pub x_span: (f64, f64),
    /// What the x axis counts when it is not time ("Probe").
    pub x_name: Option<String>,
    /// An x range to shade and label (the omitted warm-up).
    pub shade: Option<(f64, f64, String)>,
    /// A note printed under the chart.
    pub note: Option<String>,
}

/// The colour of the `i`-th stream.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A "nice" number near `x` (1, 2 or 5 times a power of ten), rounded to
/// the nearest one or taken as the next one up (Heckbert, Graphics Gems).
pub(crate) fn nice_number(x: f64, round: bool) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let exp = x.log10().floor();
    let base = 10f64.powf(exp);
    let f = x / base;
    let nf = if round {
        if f < 1.5 {
            1.0
        } else if f < 3.0 {
            2.0
        } else if f < 7.0 {
            5.0
        } else {
            10.0
        }
    } else if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nf * base
}

/// Axis ends and tick step covering `[lo, hi]` with about `n` ticks.
pub(crate) fn nice_ticks(lo: f64, hi: f64, n: usize) -> (f64, f64, f64) {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
    let range = nice_number(hi - lo, false);
    let step = nice_number(range / (n.max(2) - 1) as f64, true);
    let lo = (lo / step).floor() * step;
    let hi = (hi / step).ceil() * step;
    (lo, hi, step)
}

/// A tick label with just enough decimals for `step`.
pub(crate) fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let s = format!("{v:.decimals$}");
    // "-0" reads oddly on an axis.
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        return s.trim_start_matches('-').to_string();
    }
    s
}

/// Axis ranges of a chart: (x_lo, x_hi, x_step, y_hi, y_step, scale, unit label).
struct Frame {
    x_lo: f64,
    x_hi: f64,
    x_step: f64,
    y_hi: f64,
    y_step: f64,
    scale: f64,
    unit: &'static str,
}

fn frame(c: &Chart) -> Frame {
    let (mut x_lo, mut x_hi, mut y_max) = (c.x_span.0, c.x_span.1, 0.0f64);
    for &(x, y) in c.series.iter().flat_map(|s| s.points.iter()) {
        x_lo = x_lo.min(x);
        x_hi = x_hi.max(x);
        y_max = y_max.max(y);
    }
    if !(x_lo.is_finite() && x_hi.is_finite() && x_hi > x_lo) {
        (x_lo, x_hi) = (0.0, 1.0);
    }
    let (scale, unit) = c.unit.scale(y_max);
    // The time axis spans the test exactly; ticks fall on round seconds inside it.
    let x_step = nice_number((x_hi - x_lo) / 7.0, true);
    // Values start at zero: a rate axis that starts elsewhere exaggerates.
    let shown_max = if y_max > 0.0 { y_max / scale } else { 1.0 };
    let (_, y_hi, y_step) = nice_ticks(0.0, shown_max, 5);
    Frame {
        x_lo,
        x_hi,
        x_step,
        y_hi,
        y_step,
        scale,
        unit,
    }
}

/// Renders a chart as an inline `<svg>` followed by its HTML legend.
pub fn render(c: &Chart) -> String {
    let f = frame(c);
    let (pl, pt, pr, pb) = (LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM);
    let px = |x: f64| pl + (x - f.x_lo) / (f.x_hi - f.x_lo) * (pr - pl);
    let py = |y: f64| pb - (y / f.scale) / f.y_hi * (pb - pt);
    let mut s = String::with_capacity(4096);
    let _ = write!(
        s,
        r#"<svg class="chart" id="chart-{id}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{title}" data-chart="{id}" data-x-min="{}" data-x-max="{}" data-y-min="0" data-y-max="{}" data-y-scale="{}" data-plot="{pl} {pt} {pr} {pb}">"#,
        f.x_lo,
        f.x_hi,
        f.y_hi,
        f.scale,
        id = escape(&c.id),
        title = escape(&c.title),
    );
    if let Some((a, b, label)) = &c.shade {
        let (xa, xb) = (px(*a), px(*b));
        let _ = write!(
            s,
            r#"<rect class="shade" x="{xa:.2}" y="{pt}" width="{:.2}" height="{:.2}"/><text class="shade-label" x="{:.2}" y="{:.2}" text-anchor="middle">{}</text>"#,
            xb - xa,
            pb - pt,
            (xa + xb) / 2.0,
            pt + 14.0,
            escape(label)
        );
    }
    // Grid and y ticks.
    let mut y = 0.0;
    while y <= f.y_hi + f.y_step * 1e-9 {
        let yy = pb - y / f.y_hi * (pb - pt);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{pl}" y1="{yy:.2}" x2="{pr}" y2="{yy:.2}"/><text class="tick" x="{:.2}" y="{:.2}" text-anchor="end">{}</text>"#,
            pl - 6.0,
            yy + 4.0,
            tick_label(y, f.y_step)
        );
        y += f.y_step;
    }
    // X ticks.
    let mut x = (f.x_lo / f.x_step).ceil() * f.x_step;
    while x <= f.x_hi + f.x_step * 1e-9 {
        let xx = px(x);
        let _ = write!(
            s,
            r#"<line class="xtick" x1="{xx:.2}" y1="{pb}" x2="{xx:.2}" y2="{:.2}"/><text class="tick" x="{xx:.2}" y="{:.2}" text-anchor="middle">{}</text>"#,
            pb + 5.0,
            pb + 18.0,
            tick_label(x, f.x_step)
        );
        x += f.x_step;
    }
    let _ = write!(
        s,
        r#"<line class="axis" x1="{pl}" y1="{pb}" x2="{pr}" y2="{pb}"/><line class="axis" x1="{pl}" y1="{pt}" x2="{pl}" y2="{pb}"/>"#
    );
    let _ = write!(
        s,
        r#"<text class="label" x="{:.2}" y="{:.2}" text-anchor="middle">{}</text>"#,
        (pl + pr) / 2.0,
        HEIGHT - 8.0,
        escape(c.x_name.as_deref().unwrap_or("Time (s)"))
    );
    let _ = write!(
        s,
        r#"<text class="label" transform="translate(16 {:.2}) rotate(-90)" text-anchor="middle">{} ({})</text>"#,
        (pt + pb) / 2.0,
        escape(&c.y_name),
        f.unit
    );
    // Crowds first, so named lines stay on top; sums last.
    let mut order: Vec<&Series> = c.series.iter().filter(|s| !s.in_legend).collect();
    order.extend(c.series.iter().filter(|s| s.in_legend && !s.emphasis));
    order.extend(c.series.iter().filter(|s| s.in_legend && s.emphasis));
    for se in order {
        let pts: Vec<String> = se
            .points
            .iter()
            .map(|&(x, y)| format!("{:.2},{:.2}", px(x), py(y)))
            .collect();
        let width = if se.emphasis { 2.6 } else { 1.6 };
        let _ = write!(
            s,
            r#"<polyline class="series" data-series="{id}" data-label="{label}" fill="none" stroke="{col}" stroke-width="{width}" stroke-linejoin="round" points="{pts}"/>"#,
            id = escape(&c.id),
            label = escape(&se.label),
            col = se.colour,
            pts = pts.join(" ")
        );
        if se.in_legend && se.points.len() <= MARKER_LIMIT {
            for &(x, y) in &se.points {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.2}" cy="{:.2}" r="{}" fill="{}"><title>{}: {} s, {} {}</title></circle>"#,
                    px(x),
                    py(y),
                    if se.emphasis { 3.0 } else { 2.2 },
                    se.colour,
                    escape(&se.label),
                    tick_label(x, 0.01),
                    value_text(y / f.scale),
                    f.unit
                );
            }
        }
    }
    s.push_str("</svg>");
    s.push_str(r#"<ul class="legend">"#);
    for se in c.series.iter().filter(|s| s.in_legend) {
        let _ = write!(
            s,
            r#"<li><svg class="swatch{}" viewBox="0 0 1 1" preserveAspectRatio="none"><rect width="1" height="1" fill="{}"/></svg>{}</li>"#,
            if se.emphasis { " thick" } else { "" },
            se.colour,
            escape(&se.label)
        );
    }
    s.push_str("</ul>");
    s
}

/// A value in a hover title: three significant digits.
fn value_text(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    let decimals = (2 - mag).clamp(0, 6) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_numbers_are_one_two_five() {
        assert_eq!(nice_number(0.6, true), 0.5);
        assert_eq!(nice_number(0.73, true), 1.0);
        assert_eq!(nice_number(0.73, false), 1.0);
        assert_eq!(nice_number(2.4, true), 2.0);
        assert_eq!(nice_number(37.0, false), 50.0);
        assert_eq!(nice_number(9.0, true), 10.0);
    }

    #[test]
    fn ticks_cover_the_range_with_round_steps() {
        let (lo, hi, step) = nice_ticks(0.0, 9.41, 5);
        assert_eq!((lo, hi, step), (0.0, 10.0, 2.0));
        let (lo, hi, step) = nice_ticks(-2.0, 10.0, 8);
        assert_eq!((lo, hi, step), (-2.0, 10.0, 2.0));
        let (lo, hi, step) = nice_ticks(0.0, 0.037, 5);
        assert!(lo == 0.0 && (hi - 0.04).abs() < 1e-12 && (step - 0.01).abs() < 1e-12);
        // A flat zero series still gets an axis.
        assert_eq!(nice_ticks(0.0, 0.0, 5).1, 1.0);
    }

    #[test]
    fn tick_labels_carry_only_needed_decimals() {
        assert_eq!(tick_label(2.0, 0.5), "2.0");
        assert_eq!(tick_label(4.0, 2.0), "4");
        assert_eq!(tick_label(0.03, 0.01), "0.03");
        assert_eq!(tick_label(-0.0, 1.0), "0");
    }

    #[test]
    fn units_pick_a_readable_multiple() {
        assert_eq!(Unit::BitsPerSecond.scale(9.4e9), (1e9, "Gbit/s"));
        assert_eq!(Unit::BitsPerSecond.scale(800.0), (1.0, "bit/s"));
        assert_eq!(Unit::Bytes.scale(3.0 * 1024.0 * 1024.0), (1048576.0, "MByte"));
    }

    #[test]
    fn svg_points_invert_to_values() {
        let c = Chart {
            id: "t".into(),
            title: "T".into(),
            y_name: "Throughput".into(),
            unit: Unit::BitsPerSecond,
            series: vec![Series {
                label: "a<b".into(),
                points: vec![(1.0, 2e9), (2.0, 4e9)],
                colour: colour(0).into(),
                emphasis: false,
                in_legend: true,
            }],
            x_span: (0.0, 2.0),
            x_name: None,
            shade: None,
            note: None,
        };
        let svg = render(&c);
        assert!(svg.contains(r#"data-label="a&lt;b""#));
        assert!(svg.contains(r#"data-y-scale="1000000000""#));
        // y axis 0..4 Gbit/s over the plot from y=14 to y=254; x 0..2 s over x=66..624.
        assert!(svg.contains(r#"data-y-max="4""#), "{svg}");
        assert!(svg.contains(r#"points="345.00,134.00 624.00,14.00""#), "{svg}");
    }
}
