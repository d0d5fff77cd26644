//! iperf 2's `-y C` output: one comma-separated row per flow and report,
//! the rows flent parses.
//!
//! `timestamp,src_ip,src_port,dst_ip,dst_port,id,start-end,bytes,bits_per_sec`
//! for TCP, plus `,jitter_ms,lost,total,loss_pct,out_of_order` for UDP.
//! Addresses are always client side first. As in 2.1.8 there are no sum
//! rows. 2.1.8 stamps reports made without `-i` with the zero time
//! (`19700101000000`); wirespeed stamps every row with the time it was
//! made, which is what the column promises.
//!
//! With `--latency` every row ends with the round trips of the probes that
//! came back in its span (the final rows: all loaded probes):
//! `,rtt_probes,rtt_p50_ms,rtt_p90_ms,rtt_p99_ms,rtt_max_ms` (zeros when
//! none came back). They follow the columns above, so a parser that reads
//! iperf 2's columns by position reads the same values.
//!
//! A UDP row whose flow counted the ECN field (`--ecn`, or a TOS with ECN
//! bits) ends with `,not_ect,ect0,ect1,ce`: the datagrams that arrived
//! with each codepoint (a receiver's row) or were sent with it (a
//! sender's), after every column above.

use crate::{Output, Sink};
use wirespeed_core::config::TestConfig;
use wirespeed_core::events::*;

/// UDP receiver numbers of one row.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpColumns {
    /// Jitter, ms.
    pub jitter_ms: f64,
    /// Lost datagrams.
    pub lost: i64,
    /// Total datagrams.
    pub total: i64,
    /// Out-of-order datagrams.
    pub out_of_order: i64,
}

/// Formats one CSV row. `when` is epoch seconds (fractional); `enhanced`
/// adds milliseconds to the timestamp; `client_first` is (src, dst).
#[allow(clippy::too_many_arguments)]
pub fn row(
    when: f64,
    enhanced: bool,
    src: &(String, u16),
    dst: &(String, u16),
    id: u32,
    start: f64,
    end: f64,
    bytes: u64,
    bits_per_second: f64,
    udp: Option<UdpColumns>,
) -> String {
    let secs = when.floor() as i64;
    let mut ts = wirespeed_sys::time::strftime("%Y%m%d%H%M%S", secs, false);
    if enhanced {
        ts.push_str(&format!(".{:03}", ((when - secs as f64) * 1000.0).floor() as i64));
    }
    let mut s = format!(
        "{ts},{},{},{},{},{id},{start:.1}-{end:.1},{bytes},{}",
        src.0, src.1, dst.0, dst.1, bits_per_second as i64
    );
    if let Some(u) = udp {
        let pct = if u.total > 0 {
            100.0 * u.lost as f64 / u.total as f64
        } else if u.total < 0 {
            // A sender's final row: 2.1.8 prints `-1` and `-0.000`.
            -0.0
        } else {
            0.0
        };
        s.push_str(&format!(
            ",{:.3},{},{},{:.3},{}",
            u.jitter_ms, u.lost, u.total, pct, u.out_of_order
        ));
    }
    s.push('\n');
    s
}

/// A UDP row's receiver columns. A sender has none of its own: 2.1.8
/// prints zeros and its datagram count, and `-1` in the final row.
fn udp_columns(l: &StreamSample, u: &UdpSample, final_report: bool) -> UdpColumns {
    if l.sender {
        return UdpColumns {
            total: if final_report { -1 } else { l.extras.calls as i64 },
            ..UdpColumns::default()
        };
    }
    UdpColumns {
        jitter_ms: u.jitter_ms,
        lost: u.lost.max(0),
        total: u.packets,
        out_of_order: u.out_of_order,
    }
}

/// Prints flow reports as CSV rows.
pub(crate) struct CsvSink {
    out: Output,
    side: Side,
    enhanced: bool,
    intervals: bool,
    latency: bool,
    /// iperf 2's `--omit` (master), seconds: its rows are left out and the
    /// times after it go on from the test's start, as its text lines do.
    omit: f64,
}

/// The round-trip columns of `--latency`.
fn rtt_columns(r: &RttStats) -> String {
    format!(
        ",{},{:.3},{:.3},{:.3},{:.3}",
        r.probes, r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms
    )
}

impl CsvSink {
    /// A CSV sink for `cfg`.
    pub fn new(cfg: &TestConfig, out: Output, side: Side) -> CsvSink {
        CsvSink {
            out,
            side,
            // The iperf3 dialect's `--csv` writes the rows of `-e -y C`,
            // whose millisecond timestamps flent's parser requires.
            enhanced: cfg.output.enhanced || cfg.dialect == wirespeed_core::config::Dialect::Iperf3,
            intervals: cfg.output.interval.is_some(),
            latency: cfg.latency.is_some(),
            omit: match cfg.dialect {
                wirespeed_core::config::Dialect::Iperf2 => cfg.params.omit.as_secs_f64(),
                _ => 0.0,
            },
        }
    }

    /// Rows for `flows` (2.1.8's CSV has no sums and no relayed UDP
    /// server reports).
    fn report(&self, flows: &[StreamSample], final_report: bool, rtt: Option<&RttStats>) {
        if !final_report && !self.intervals {
            return;
        }
        let now = wirespeed_sys::time::epoch_now();
        let mut text = String::new();
        for l in flows {
            if l.omitted && self.omit > 0.0 {
                continue;
            }
            let Some((local, remote)) = &l.addrs else { continue };
            let (src, dst) = match self.side {
                Side::Client => (local, remote),
                Side::Server => (remote, local),
            };
            let mut r = row(
                now,
                self.enhanced,
                src,
                dst,
                l.id,
                l.start + self.omit,
                l.end + self.omit,
                l.bytes,
                l.bits_per_second,
                l.udp.map(|u| udp_columns(l, &u, final_report)),
            );
            if self.latency {
                r.pop();
                r.push_str(&rtt_columns(rtt.unwrap_or(&RttStats::default())));
                r.push('\n');
            }
            if let Some(e) = l.udp.as_ref().and_then(|u| u.ecn.as_ref()) {
                let c = &e.counts;
                r.pop();
                r.push_str(&format!(",{},{},{},{}\n", c.not_ect, c.ect0, c.ect1, c.ce));
            }
            text.push_str(&r);
        }
        if !text.is_empty() {
            self.out.write(&text);
        }
    }
}

impl Sink for CsvSink {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Interval(r) => self.report(&r.streams, false, r.latency.as_ref()),
            Event::End(s) => self.report(&s.local.streams, true, s.latency.as_ref().map(|l| &l.loaded)),
            Event::Warning(w) => self.out.write_err(&format!("{w}\n")),
            Event::Error(e) => self.out.write_err(&format!("{}\n", e.text())),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(h: &str, p: u16) -> (String, u16) {
        (h.to_string(), p)
    }

    #[test]
    fn tcp_rows_match_2_1_8() {
        // 2026-11-22 02:39:53 UTC; the test machine's zone may differ, so
        // compare everything after the timestamp and its shape.
        let r = row(
            1795318793.0,
            false,
            &a("127.0.0.1", 50462),
            &a("127.0.0.1", 15008),
            1,
            0.0,
            1.0,
            1318518791,
            10548150328.0,
            None,
        );
        let (ts, rest) = r.split_once(',').unwrap();
        assert_eq!(ts.len(), 14);
        assert_eq!(
            rest,
            "127.0.0.1,50462,127.0.0.1,15008,1,0.0-1.0,1318518791,10548150328\n"
        );
        let e = row(1.5, true, &a("h", 1), &a("g", 2), 2, 0.0, 2.0, 5, 20.9, None);
        let (ts, rest) = e.split_once(',').unwrap();
        assert_eq!(ts.len(), 18);
        assert!(ts.ends_with(".500"));
        assert_eq!(rest, "h,1,g,2,2,0.0-2.0,5,20\n");
    }

    #[test]
    fn udp_rows_add_receiver_columns() {
        let r = row(
            0.0,
            false,
            &a("127.0.0.1", 53672),
            &a("127.0.0.1", 15009),
            1,
            0.0,
            1.0,
            132300,
            1058400.0,
            Some(UdpColumns {
                jitter_ms: 0.002,
                lost: 0,
                total: 90,
                out_of_order: 0,
            }),
        );
        assert!(r.ends_with(",127.0.0.1,53672,127.0.0.1,15009,1,0.0-1.0,132300,1058400,0.002,0,90,0.000,0\n"));
        // A sender's final row, as 2.1.8 prints it.
        let f = row(
            0.0,
            false,
            &a("127.0.0.1", 53672),
            &a("127.0.0.1", 15009),
            1,
            0.0,
            2.0,
            267540,
            1060148.0,
            Some(UdpColumns {
                total: -1,
                ..UdpColumns::default()
            }),
        );
        assert!(f.ends_with(",1,0.0-2.0,267540,1060148,0.000,0,-1,-0.000,0\n"), "{f}");
    }
}
