//! iperf 2.1.8's human-readable output, as Debian's build prints it
//! (4-decimal interval times), from the iperf 2 events.
//!
//! Layouts were matched against the real program's output
//! (`spec/iperf2.md` §3). A column header is printed before the first line
//! that needs it and again whenever the kind of line changes or a banner
//! intervened; that state is shared by every sink of one process (a dual
//! test's two directions print under one header).

use std::sync::{Arc, Mutex};

use super::event::*;
use super::{Output, Sink};
use crate::cli::units::format_iperf2;
use crate::config::TestConfig;

const RULE: &str = "------------------------------------------------------------\n";

/// Header state shared by the iperf 2 sinks of one process: the column
/// headers printed since the last banner or connection line (2.1.8 prints
/// each kind once, not again when the kind of line changes back).
pub type HeaderState = Arc<Mutex<Vec<&'static str>>>;

/// A fresh header state.
pub fn header_state() -> HeaderState {
    Arc::new(Mutex::new(Vec::new()))
}

const HDR_PLAIN: &str = "[ ID] Interval       Transfer     Bandwidth\n";
const HDR_SENDER_E: &str =
    "[ ID] Interval            Transfer    Bandwidth       Write/Err  Rtry     Cwnd/RTT(var)        NetPwr\n";
const HDR_READER_E: &str = "[ ID] Interval            Transfer    Bandwidth       Reads=Dist\n";
const HDR_TRIP: &str = "[ ID] Interval            Transfer    Bandwidth    Burst Latency avg/min/max/stdev (cnt/size) inP NetPwr  Reads=Dist\n";
const HDR_SUM_ONLY: &str = "[SUM-cnt] Interval       Transfer     Bandwidth\n";
const HDR_UDP_RECV: &str = "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams\n";
const HDR_UDP_RECV_E: &str = "[ ID] Interval            Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS  Rx/inP  NetPwr\n";
const HDR_UDP_SEND_E: &str = "[ ID] Interval            Transfer     Bandwidth      Write/Err  PPS\n";

/// Prints iperf 2 events as 2.1.8 does.
pub struct Iperf2Text {
    out: Output,
    side: Side,
    format: char,
    enhanced: bool,
    exclude: String,
    sum_only: bool,
    intervals: bool,
    hide_ips: bool,
    header: HeaderState,
}

/// The kind of a data line, which decides its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Sender,
    Reader,
    Trip,
    UdpRecv,
    UdpRecvE,
    UdpSendE,
}

impl Kind {
    fn header(self) -> &'static str {
        match self {
            Kind::Plain => HDR_PLAIN,
            Kind::Sender => HDR_SENDER_E,
            Kind::Reader => HDR_READER_E,
            Kind::Trip => HDR_TRIP,
            Kind::UdpRecv => HDR_UDP_RECV,
            Kind::UdpRecvE => HDR_UDP_RECV_E,
            Kind::UdpSendE => HDR_UDP_SEND_E,
        }
    }
}

/// NetPwr as iperf2 prints it.
fn net_power(v: Option<f64>) -> String {
    match v {
        None => "NAN".into(),
        Some(p) if p > 100.0 => format!("{p:.0}"),
        Some(p) if p > 10.0 => format!("{p:.2}"),
        Some(p) => format!("{p:.6}"),
    }
}

/// A latency histogram line:
/// `[  1] 0.0000-1.0000 sec T8-PDF: bin(w=100us):cnt(426)=1:423,2:3 (5.00/95.00/99.7%=1/1/2,Outliers=0,obl/obu=0/0)`.
pub(crate) fn histogram_line(tag: &str, l: &FlowLine, h: &HistogramSample) -> String {
    let bins: Vec<String> = h.bins.iter().map(|(b, n)| format!("{b}:{n}")).collect();
    let mut s = format!(
        "{tag}{:.4}-{:.4} sec {}{}-PDF: bin(w={}):cnt({})",
        l.start,
        l.end,
        h.name,
        if h.final_report { "(f)" } else { "" },
        h.width,
        h.count
    );
    if !bins.is_empty() {
        s.push('=');
        s.push_str(&bins.join(","));
    }
    if h.ci_upper > 99.7 {
        s.push_str(&format!(
            " ({:.2}/99.7/{:.2}/%={}/{}/{}",
            h.ci_lower, h.ci_upper, h.lower_bin, h.bin_997, h.upper_bin
        ));
    } else {
        s.push_str(&format!(
            " ({:.2}/{:.2}/99.7%={}/{}/{}",
            h.ci_lower, h.ci_upper, h.lower_bin, h.upper_bin, h.bin_997
        ));
    }
    s.push_str(&format!(",Outliers={},obl/obu={}/{})", h.outliers, h.below, h.above));
    if let Some((ms, sec, usec)) = h.worst {
        s.push_str(&format!(" ({ms:.3} ms/{sec}.{usec:06})"));
    }
    s.push('\n');
    s
}

/// Loss as iperf 2 prints it (`%.2g`: `0`, `0.55`, `62`, `1e+02`).
fn loss_pct(u: &UdpFlow) -> String {
    let pct = if u.total > 0 {
        100.0 * u.lost as f64 / u.total as f64
    } else {
        0.0
    };
    crate::json::format_g(pct, 2)
}

/// `[  1] `, `[ *1] `, `[*12] `.
fn id_tag(id: u32, reversed: bool) -> String {
    if reversed {
        format!("[{:>3}] ", format!("*{id}"))
    } else {
        format!("[{id:>3}] ")
    }
}

/// An address with `--hide-ips`: IPv4 keeps its last octet.
fn hidden(host: &str) -> String {
    if let Ok(std::net::IpAddr::V4(v4)) = host.parse::<std::net::IpAddr>() {
        return format!("*.*.*.{}", v4.octets()[3]);
    }
    if host.parse::<std::net::IpAddr>().is_ok() {
        return "*:*".into();
    }
    "(**hidden**)".into()
}

impl Iperf2Text {
    /// A sink for `cfg`, writing to `out`, sharing `header` with the other
    /// sinks of the process.
    pub fn new(cfg: &TestConfig, out: Output, side: Side, header: HeaderState) -> Iperf2Text {
        Iperf2Text {
            out,
            side,
            format: cfg.output.format,
            enhanced: cfg.output.enhanced,
            exclude: cfg.output.exclude.clone(),
            sum_only: cfg.output.sum_only,
            intervals: cfg.output.interval.is_some(),
            hide_ips: cfg.iperf2.hide_ips,
            header,
        }
    }

    fn excluded(&self, letter: char) -> bool {
        self.exclude.contains(letter)
    }

    fn host(&self, h: &str) -> String {
        if self.hide_ips { hidden(h) } else { h.to_string() }
    }

    fn banner(&self, b: &Banner) -> String {
        let mut s = String::from(RULE);
        let proto = b.protocol.name();
        match &b.role {
            BannerRole::Listening | BannerRole::ListeningRange(_) => {
                if let BannerRole::ListeningRange(last) = b.role {
                    // 2.1.8 names the pid here with or without -e.
                    s.push_str(&format!(
                        "Server listening on {proto} ports {}-{last} with pid {}",
                        b.port, b.pid
                    ));
                } else {
                    s.push_str(&format!("Server listening on {proto} port {}", b.port));
                    if self.enhanced {
                        s.push_str(&format!(" with pid {}", b.pid));
                    }
                }
                s.push('\n');
                for n in &b.notes {
                    if let BannerNote::Early(l) = n {
                        s.push_str(&format!("{l}\n"));
                    }
                }
                if self.enhanced {
                    s.push_str(&format!(
                        "Read buffer size: {} (Dist bin width={})\n",
                        format_iperf2(b.block_len as f64, 'A'),
                        format_iperf2((b.block_len / 8) as f64, 'A')
                    ));
                }
                for n in &b.notes {
                    if let BannerNote::Late(l) = n {
                        s.push_str(&format!("{l}\n"));
                    }
                }
            }
            BannerRole::Connecting(host) => {
                s.push_str(&format!(
                    "Client connecting to {}, {proto} port {}",
                    self.host(host),
                    b.port
                ));
                if self.enhanced {
                    s.push_str(&format!(" with pid {} ({} flows)", b.pid, b.flows));
                }
                s.push('\n');
                let udp = b.protocol == crate::config::Protocol::Udp;
                if self.enhanced && !udp {
                    s.push_str(&format!(
                        "Write buffer size: {}\n",
                        format_iperf2(b.block_len as f64, 'B')
                    ));
                }
                // Early lines (--fq-rate's) come before the TOS line.
                for n in &b.notes {
                    if let BannerNote::Early(l) = n {
                        s.push_str(&format!("{l}\n"));
                    }
                }
                if self.enhanced {
                    let nagle = if b.nodelay {
                        " and nodelay (Nagle off)"
                    } else {
                        " (Nagle on)"
                    };
                    s.push_str(&format!("TOS set to 0x{:x}{nagle}\n", b.tos));
                }
                for n in &b.notes {
                    match n {
                        BannerNote::Datagrams { len, ipg_us } => s.push_str(&format!(
                            "Sending {len} byte datagrams, IPG target: {ipg_us:.2} us (kalman adjust)\n"
                        )),
                        BannerNote::Late(l) => s.push_str(&format!("{l}\n")),
                        BannerNote::Early(_) | BannerNote::AfterWindow(_) => {}
                    }
                }
            }
        }
        let note = match b.window_requested {
            Some(w) if w != b.window => format!("(WARNING: requested {})", format_iperf2(w as f64, 'A')),
            Some(_) => "(requested)".into(),
            None => "(default)".into(),
        };
        let label = if b.protocol == crate::config::Protocol::Udp {
            "UDP buffer size"
        } else {
            "TCP window size"
        };
        s.push_str(&format!("{label}: {} {note}\n", format_iperf2(b.window as f64, 'A')));
        for n in &b.notes {
            if let BannerNote::AfterWindow(l) = n {
                s.push_str(&format!("{l}\n"));
            }
        }
        s.push_str(RULE);
        s
    }

    fn connection(&self, c: &FlowConn) -> String {
        let dev = match (&c.local_dev, self.enhanced) {
            (Some(d), true) => format!("%{d}"),
            _ => String::new(),
        };
        let mut s = format!(
            "{}local {}{dev} port {} connected with {} port {}",
            id_tag(c.id, c.reversed),
            self.host(&c.local.0),
            c.local.1,
            self.host(&c.remote.0),
            c.remote.1
        );
        if let Some(n) = c.clamp {
            s.push_str(&format!(" (clamp={n})"));
        }
        if let Some(n) = c.prefetch {
            s.push_str(&format!(" (prefetch={n})"));
        }
        if let Some(m) = &c.mode {
            s.push_str(&format!(" ({m})"));
        }
        if c.no_udp_fin {
            s.push_str(" (no-udp-fin)");
        }
        if c.fq {
            s.push_str(" (fq)");
        }
        if self.enhanced {
            s.push_str(&format!(" (sock={})", c.sock));
            if let Some(v) = &c.peer_version {
                s.push_str(&format!(" (peer {v})"));
            }
        }
        if c.qack {
            s.push_str(" (qack)");
        }
        if let Some((cwnd, mss, rtt)) = c.tcp_init {
            s.push_str(&format!(" (icwnd/mss/irtt={cwnd}/{mss}/{rtt})"));
        }
        if self.enhanced {
            if let Some(ct) = c.connect_ms {
                s.push_str(&format!(" (ct={ct:.2} ms)"));
            }
            if let Some(t) = c.when {
                s.push_str(&format!(
                    " on {}",
                    crate::sys::time::strftime("%Y-%m-%d %H:%M:%S (%Z)", t, false)
                ));
            }
        }
        s.push('\n');
        s
    }

    /// The columns every data line starts with.
    fn base(&self, tag: &str, l: &FlowLine) -> String {
        let upper = self.format.to_ascii_uppercase();
        let secs = l.end - l.start;
        let per_sec = if secs > 0.0 { l.bytes as f64 / secs } else { 0.0 };
        format!(
            "{tag}{:.4}-{:.4} sec  {}s  {}s/sec",
            l.start,
            l.end,
            format_iperf2(l.bytes as f64, upper),
            format_iperf2(per_sec, self.format)
        )
    }

    fn kind(&self, l: &FlowLine) -> Kind {
        if let Some(u) = &l.extras.udp {
            return match (l.sender, self.enhanced || u.latency.is_some()) {
                (false, true) => Kind::UdpRecvE,
                (false, false) => Kind::UdpRecv,
                (true, true) => Kind::UdpSendE,
                (true, false) => Kind::Plain,
            };
        }
        if l.extras.latency.is_some() && !l.sender {
            Kind::Trip
        } else if !self.enhanced {
            Kind::Plain
        } else if l.sender {
            Kind::Sender
        } else {
            Kind::Reader
        }
    }

    fn bins(l: &FlowLine) -> String {
        let b = l.extras.read_bins.unwrap_or_default();
        let dist: Vec<String> = b.iter().map(|x| x.to_string()).collect();
        format!("{}={}", l.extras.calls, dist.join(":"))
    }

    fn flow_line(&self, tag: &str, l: &FlowLine, kind: Kind, sum: bool) -> String {
        let base = self.base(tag, l);
        let e = &l.extras;
        match kind {
            Kind::Plain => format!("{base}\n"),
            Kind::Sender if sum => format!("{base}  {}/{}{:>10}\n", e.calls, e.errors, e.retransmits.unwrap_or(0)),
            Kind::Sender => {
                let mut s = format!("{base}  {}/{} {:>10}", e.calls, e.errors, e.retransmits.unwrap_or(0));
                if let Some(t) = e.tcp {
                    s.push_str(&format!(
                        " {:>8}K/{}({}) us  {}",
                        t.snd_cwnd / 1024,
                        t.rtt,
                        t.rttvar,
                        net_power(e.net_power)
                    ));
                }
                s.push('\n');
                s
            }
            Kind::Reader => format!("{base}  {}\n", Self::bins(l)),
            Kind::UdpRecv | Kind::UdpRecvE if sum => {
                let u = e.udp.unwrap_or_default();
                format!("{base}   {}/{} ({}%)\n", u.lost, u.total, loss_pct(&u))
            }
            Kind::UdpRecv => {
                let u = e.udp.unwrap_or_default();
                format!(
                    "{base}  {:6.3} ms {}/{} ({}%)\n",
                    u.jitter_ms,
                    u.lost,
                    u.total,
                    loss_pct(&u)
                )
            }
            Kind::UdpRecvE => {
                let u = e.udp.unwrap_or_default();
                let lat = u.latency.unwrap_or_default();
                let (rx, inp, var) = u.in_flight.unwrap_or((u.total - u.lost, 0.0, 0.0));
                format!(
                    "{base}  {:6.3} ms {}/{} ({}%) {:.3}/{:.3}/{:.3}/{:.3} ms {:.0} pps {rx}/{inp:.0}({var:.0}) pkts {}\n",
                    u.jitter_ms,
                    u.lost,
                    u.total,
                    loss_pct(&u),
                    lat.mean * 1e3,
                    lat.min * 1e3,
                    lat.max * 1e3,
                    lat.stdev * 1e3,
                    u.pps,
                    net_power(e.net_power)
                )
            }
            Kind::UdpSendE => {
                let pps = e.udp.map(|u| u.pps).unwrap_or(0.0);
                format!("{base}  {}/{} {pps:8.0} pps\n", e.calls, e.errors)
            }
            Kind::Trip => {
                let lat = e.latency.unwrap_or_default();
                let size = lat.bytes.checked_div(lat.count).unwrap_or(0);
                format!(
                    "{base}  {:.3}/{:.3}/{:.3}/{:.3} ms ({}/{}) {} {}  {}\n",
                    lat.mean * 1e3,
                    lat.min * 1e3,
                    lat.max * 1e3,
                    lat.stdev * 1e3,
                    lat.count,
                    size,
                    format_iperf2(e.in_flight.unwrap_or(0.0), 'A'),
                    net_power(e.net_power),
                    Self::bins(l)
                )
            }
        }
    }

    /// Prints `line` under `header`, printing the header first if it has
    /// not been printed since the last banner or connection line.
    fn under(&self, header: &'static str, line: &str) {
        let mut chunk = String::new();
        if let Ok(mut h) = self.header.lock() {
            if !h.contains(&header) {
                chunk.push_str(header);
                h.push(header);
            }
            chunk.push_str(line);
            // Written while holding the state, so header and line stay together.
            self.out.write(&chunk);
        } else {
            self.out.write(line);
        }
    }

    /// After a banner or a connection line the next data line gets a
    /// column header again.
    fn reset_header(&self) {
        if let Ok(mut h) = self.header.lock() {
            h.clear();
        }
    }

    fn flows(&self, r: &FlowReport) {
        if self.excluded('D') || (r.relay && self.excluded('V')) || (!r.final_report && !self.intervals) {
            return;
        }
        if self.sum_only {
            let n = r.flows.len();
            let line = self.base(&format!("[SUM-{n}] "), &r.sum);
            self.under(HDR_SUM_ONLY, &format!("{line}\n"));
            return;
        }
        for l in &r.flows {
            let kind = self.kind(l);
            let tag = id_tag(l.id, l.reversed);
            // 2.1.8 does not star these two lines, even for a starred flow.
            let plain = id_tag(l.id, false);
            if r.relay {
                self.out.write(&format!("{plain}Server Report:\n"));
                self.reset_header();
            }
            self.under(kind.header(), &self.flow_line(&tag, l, kind, false));
            if let Some(h) = &l.extras.histogram {
                self.out.write(&histogram_line(&tag, l, h));
            }
            if let Some(u) = &l.extras.udp {
                if u.out_of_order > 0 && !l.sender {
                    self.out.write(&format!(
                        "{tag}{:.4}-{:.4} sec  {} datagrams received out-of-order\n",
                        l.start, l.end, u.out_of_order
                    ));
                }
                if let (Some(n), true) = (u.sent, r.final_report && !r.relay) {
                    self.out.write(&format!("{plain}Sent {n} datagrams\n"));
                }
            }
        }
        if self.enhanced {
            for p in &r.pairs {
                self.under(
                    HDR_PLAIN,
                    &self.flow_line(&format!("[FD{}] ", p.id), p, Kind::Plain, true),
                );
            }
        }
        let fd_alone = self.enhanced && self.side == Side::Client && r.pairs.len() == 1 && r.flows.len() == 2;
        if r.flows.len() > 1 && !fd_alone {
            let kinds: Vec<Kind> = r.flows.iter().map(|l| self.kind(l)).collect();
            let kind = match kinds.first() {
                Some(k) if kinds.iter().all(|x| x == k) && *k != Kind::Trip => *k,
                _ => Kind::Plain,
            };
            // UDP receiver sums print under the plain header.
            let header = match kind {
                Kind::UdpRecv | Kind::UdpRecvE | Kind::UdpSendE => HDR_PLAIN,
                k => k.header(),
            };
            let kind = if kind == Kind::UdpSendE { Kind::Plain } else { kind };
            self.under(header, &self.flow_line("[SUM] ", &r.sum, kind, true));
            let all_send = r.flows.iter().all(|l| l.sender);
            if let (Some(n), true) = (r.sum.extras.udp.and_then(|u| u.sent), r.final_report && all_send) {
                self.out.write(&format!("[SUM-{}] Sent {n} datagrams\n", r.flows.len()));
            }
        }
    }
}

impl Sink for Iperf2Text {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Banner(b) if !self.excluded('S') => {
                self.out.write(&self.banner(b));
                self.reset_header();
            }
            Event::FlowConnected(c) if !self.excluded('C') && !self.sum_only => {
                self.out.write(&self.connection(c));
                self.reset_header();
            }
            Event::Flows(r) => self.flows(r),
            Event::Notice(n) => self.out.write(&format!("{n}\n")),
            Event::Warning(w) => self.out.write_err(&format!("{w}\n")),
            Event::Error(e) => self.out.write_err(&format!("{}\n", e.text())),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Protocol, TestConfig};

    fn sink(cfg: &TestConfig, side: Side) -> (Iperf2Text, Arc<Mutex<String>>) {
        let buf = Arc::new(Mutex::new(String::new()));
        (
            Iperf2Text::new(cfg, Output::buffer(buf.clone()), side, header_state()),
            buf,
        )
    }

    fn line(id: u32, sender: bool, start: f64, end: f64, bytes: u64) -> FlowLine {
        FlowLine {
            id,
            sender,
            reversed: false,
            start,
            end,
            bytes,
            bits_per_second: bytes as f64 * 8.0 / (end - start),
            extras: FlowExtras::default(),
            addrs: None,
        }
    }

    fn report(final_report: bool, flows: Vec<FlowLine>, sum: FlowLine) -> Event {
        Event::Flows(Box::new(FlowReport {
            final_report,
            flows,
            sum,
            pairs: Vec::new(),
            relay: false,
        }))
    }

    fn banner(role: BannerRole, window: u64) -> Event {
        Event::Banner(Box::new(Banner {
            role,
            protocol: Protocol::Tcp,
            port: 15001,
            pid: 10275,
            flows: 1,
            block_len: 131072,
            tos: 0,
            nodelay: false,
            window,
            window_requested: None,
            notes: Vec::new(),
        }))
    }

    fn conn(id: u32, local: u16, remote: u16) -> FlowConn {
        FlowConn {
            id,
            reversed: false,
            local: ("127.0.0.1".into(), local),
            remote: ("127.0.0.1".into(), remote),
            local_dev: Some("lo".into()),
            mode: None,
            sock: 4,
            peer_version: None,
            tcp_init: Some((320, 32768, 68)),
            no_udp_fin: false,
            fq: false,
            clamp: None,
            prefetch: None,
            qack: false,
            connect_ms: None,
            when: None,
        }
    }

    const GB: u64 = 1 << 30;

    #[test]
    fn plain_server_matches_the_sample() {
        let mut cfg = TestConfig::default();
        cfg.output.interval = None;
        let (mut s, buf) = sink(&cfg, Side::Server);
        s.event(&banner(BannerRole::Listening, 131072));
        s.event(&Event::FlowConnected(Box::new(conn(1, 15001, 48824))));
        // Without -i, intervals are not printed.
        s.event(&report(
            false,
            vec![line(1, false, 0.0, 1.0, GB)],
            line(0, false, 0.0, 1.0, GB),
        ));
        let total = (3.50 * GB as f64) as u64;
        s.event(&report(
            true,
            vec![line(1, false, 0.0, 2.0017, total)],
            line(0, false, 0.0, 2.0017, total),
        ));
        assert_eq!(
            *buf.lock().unwrap(),
            "------------------------------------------------------------
Server listening on TCP port 15001
TCP window size:  128 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1 port 15001 connected with 127.0.0.1 port 48824 (icwnd/mss/irtt=320/32768/68)
[ ID] Interval       Transfer     Bandwidth
[  1] 0.0000-2.0017 sec  3.50 GBytes  15.0 Gbits/sec
"
        );
    }

    #[test]
    fn parallel_flows_get_sum_lines_under_one_header() {
        let mut cfg = TestConfig::default();
        cfg.output.interval = Some(std::time::Duration::from_secs(1));
        let (mut s, buf) = sink(&cfg, Side::Client);
        let mb = 1u64 << 20;
        let flows = vec![line(2, true, 0.0, 1.0, 660 * mb), line(1, true, 0.0, 1.0, 951 * mb)];
        s.event(&report(false, flows, line(0, true, 0.0, 1.0, 1611 * mb)));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval       Transfer     Bandwidth
[  2] 0.0000-1.0000 sec   660 MBytes  5.54 Gbits/sec
[  1] 0.0000-1.0000 sec   951 MBytes  7.98 Gbits/sec
[SUM] 0.0000-1.0000 sec  1.57 GBytes  13.5 Gbits/sec
"
        );
    }

    #[test]
    fn enhanced_client_columns() {
        let mut cfg = TestConfig::default();
        cfg.output.enhanced = true;
        let (mut s, buf) = sink(&cfg, Side::Client);
        s.event(&banner(BannerRole::Connecting("127.0.0.1".into()), 16384));
        let mut c = conn(1, 45656, 15002);
        c.sock = 3;
        c.tcp_init = Some((319, 32741, 55));
        c.connect_ms = Some(1.35);
        s.event(&Event::FlowConnected(Box::new(c)));
        let mut l = line(1, true, 0.0, 1.0, (1.21 * GB as f64) as u64);
        l.extras = FlowExtras {
            calls: 9928,
            errors: 0,
            retransmits: Some(0),
            tcp: Some(TcpSample {
                snd_cwnd: 2174 * 1024,
                rtt: 244,
                rttvar: 245,
                ..TcpSample::default()
            }),
            net_power: Some(5333127.4),
            ..FlowExtras::default()
        };
        s.event(&report(true, vec![l.clone()], l));
        let out = buf.lock().unwrap().clone();
        assert_eq!(
            out,
            "------------------------------------------------------------
Client connecting to 127.0.0.1, TCP port 15001 with pid 10275 (1 flows)
Write buffer size: 131072 Byte
TOS set to 0x0 (Nagle on)
TCP window size: 16.0 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1%lo port 45656 connected with 127.0.0.1 port 15002 (sock=3) (icwnd/mss/irtt=319/32741/55) (ct=1.35 ms)
[ ID] Interval            Transfer    Bandwidth       Write/Err  Rtry     Cwnd/RTT(var)        NetPwr
[  1] 0.0000-1.0000 sec  1.21 GBytes  10.4 Gbits/sec  9928/0          0     2174K/244(245) us  5333127
"
        );
    }

    #[test]
    fn enhanced_sums_and_reader_histograms() {
        let mut cfg = TestConfig::default();
        cfg.output.enhanced = true;
        cfg.output.interval = Some(std::time::Duration::from_secs(1));
        let (mut s, buf) = sink(&cfg, Side::Client);
        let mut a = line(2, true, 0.0, 1.0, (3.04 * GB as f64) as u64);
        a.extras.calls = 24885;
        a.extras.retransmits = Some(9);
        let mut sum = line(0, true, 0.0, 1.0, (5.17 * GB as f64) as u64);
        sum.extras.calls = 42392;
        sum.extras.retransmits = Some(18);
        s.event(&report(false, vec![a.clone(), a], sum));
        let out = buf.lock().unwrap().clone();
        assert!(
            out.ends_with("[SUM] 0.0000-1.0000 sec  5.17 GBytes  44.4 Gbits/sec  42392/0        18\n"),
            "{out}"
        );
        let (mut s, buf) = sink(&cfg, Side::Server);
        let mut r = line(1, false, 0.0, 1.0, (1.21 * GB as f64) as u64);
        r.extras.calls = 10142;
        r.extras.read_bins = Some([167, 1, 0, 98, 89, 2, 1, 9784]);
        s.event(&report(false, vec![r.clone()], r));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval            Transfer    Bandwidth       Reads=Dist
[  1] 0.0000-1.0000 sec  1.21 GBytes  10.4 Gbits/sec  10142=167:1:0:98:89:2:1:9784
"
        );
    }

    #[test]
    fn trip_times_receiver_line() {
        let cfg = TestConfig::default();
        let (mut s, buf) = sink(&cfg, Side::Server);
        let bytes = (1.43 * GB as f64) as u64;
        let mut l = line(1, false, 0.0, 1.0, bytes);
        l.extras.calls = 18111;
        l.extras.read_bins = Some([2835, 0, 6, 4499, 2572, 6, 0, 8193]);
        l.extras.latency = Some(LatencyStats {
            count: 11734,
            bytes: 11734 * 131077,
            mean: 0.000869,
            min: 0.000014,
            max: 0.020974,
            stdev: 0.001633,
        });
        l.extras.in_flight = Some(1.28 * 1048576.0);
        l.extras.net_power = Some(1769132.2);
        s.event(&report(true, vec![l.clone()], l));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval            Transfer    Bandwidth    Burst Latency avg/min/max/stdev (cnt/size) inP NetPwr  Reads=Dist
[  1] 0.0000-1.0000 sec  1.43 GBytes  12.3 Gbits/sec  0.869/0.014/20.974/1.633 ms (11734/131077) 1.28 MByte 1769132  18111=2835:0:6:4499:2572:6:0:8193
"
        );
    }

    #[test]
    fn reverse_and_full_duplex_are_starred() {
        let cfg = TestConfig::default();
        let (mut s, buf) = sink(&cfg, Side::Client);
        let mb = 1u64 << 20;
        let mut rcv = line(1, false, 0.0, 2.0006, 1690 * mb);
        rcv.reversed = true;
        let snd = line(1, true, 0.0, 2.0002, 1249 * mb);
        let sum = line(0, true, 0.0, 2.0005, 2939 * mb);
        s.event(&report(true, vec![rcv, snd], sum));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval       Transfer     Bandwidth
[ *1] 0.0000-2.0006 sec  1.65 GBytes  7.09 Gbits/sec
[  1] 0.0000-2.0002 sec  1.22 GBytes  5.24 Gbits/sec
[SUM] 0.0000-2.0005 sec  2.87 GBytes  12.3 Gbits/sec
"
        );
        assert_eq!(id_tag(12, true), "[*12] ");
    }

    #[test]
    fn sum_only_and_exclusions() {
        let mut cfg = TestConfig::default();
        cfg.output.sum_only = true;
        let (mut s, buf) = sink(&cfg, Side::Client);
        let mb = 1u64 << 20;
        s.event(&Event::FlowConnected(Box::new(conn(1, 1, 2))));
        let f = vec![line(1, true, 0.0, 1.0012, 400 * mb); 3];
        s.event(&report(true, f, line(0, true, 0.0, 1.0012, (1.21 * GB as f64) as u64)));
        assert_eq!(
            *buf.lock().unwrap(),
            "[SUM-cnt] Interval       Transfer     Bandwidth
[SUM-3] 0.0000-1.0012 sec  1.21 GBytes  10.4 Gbits/sec
"
        );
        cfg.output.sum_only = false;
        cfg.output.exclude = "CS".into();
        let (mut s, buf) = sink(&cfg, Side::Client);
        s.event(&banner(BannerRole::Listening, 1));
        s.event(&Event::FlowConnected(Box::new(conn(1, 1, 2))));
        let l = line(1, true, 0.0, 1.0038, (1.34 * GB as f64) as u64);
        s.event(&report(true, vec![l.clone()], l));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval       Transfer     Bandwidth\n[  1] 0.0000-1.0038 sec  1.34 GBytes  11.5 Gbits/sec\n"
        );
    }

    #[test]
    fn format_letters_follow_the_sample() {
        let mut cfg = TestConfig::default();
        let l = line(1, true, 0.0, 0.5181, 18944060);
        let mut got = Vec::new();
        for f in ['b', 'B', 'k', 'm', 'g', 'a'] {
            cfg.output.format = f;
            let (s, _) = sink(&cfg, Side::Client);
            got.push(s.base("[  1] ", &l));
        }
        assert_eq!(got[0], "[  1] 0.0000-0.5181 sec  18944060 Bytes  292515885 bits/sec");
        assert_eq!(got[1], "[  1] 0.0000-0.5181 sec  18944060 Bytes  36564486 Bytes/sec");
        assert_eq!(got[2], "[  1] 0.0000-0.5181 sec  18500 KBytes  292516 Kbits/sec");
        assert_eq!(got[3], "[  1] 0.0000-0.5181 sec  18.1 MBytes   293 Mbits/sec");
        assert_eq!(got[4], "[  1] 0.0000-0.5181 sec  0.018 GBytes  0.293 Gbits/sec");
        assert_eq!(got[5], "[  1] 0.0000-0.5181 sec  18.1 MBytes   293 Mbits/sec");
    }

    #[test]
    fn net_power_widths() {
        assert_eq!(net_power(None), "NAN");
        assert_eq!(net_power(Some(5333127.4)), "5333127");
        assert_eq!(net_power(Some(12.345)), "12.35");
        assert_eq!(net_power(Some(1.5)), "1.500000");
    }

    fn udp_line(id: u32, sender: bool, start: f64, end: f64, bytes: u64, u: UdpFlow) -> FlowLine {
        let mut l = line(id, sender, start, end, bytes);
        l.extras.udp = Some(u);
        l
    }

    fn udp_rx(jitter_ms: f64, lost: i64, total: i64) -> UdpFlow {
        UdpFlow {
            jitter_ms,
            lost,
            total,
            ..UdpFlow::default()
        }
    }

    #[test]
    fn udp_server_lines_and_sums() {
        let mut cfg = TestConfig::default();
        cfg.output.interval = Some(std::time::Duration::from_secs(1));
        let (mut s, buf) = sink(&cfg, Side::Server);
        let one = udp_line(1, false, 0.0, 1.0, 91 * 1470, udp_rx(0.005, 0, 91));
        s.event(&report(false, vec![one.clone()], one));
        let a = udp_line(2, false, 0.0, 1.0, 91 * 1470, udp_rx(0.004, 1, 92));
        let b = udp_line(1, false, 0.0, 1.0, 91 * 1470, udp_rx(0.001, 0, 91));
        let sum = udp_line(0, false, 0.0, 1.0, 182 * 1470, udp_rx(0.0, 1, 183));
        s.event(&report(false, vec![a, b], sum));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams
[  1] 0.0000-1.0000 sec   131 KBytes  1.07 Mbits/sec   0.005 ms 0/91 (0%)
[  2] 0.0000-1.0000 sec   131 KBytes  1.07 Mbits/sec   0.004 ms 1/92 (1.1%)
[  1] 0.0000-1.0000 sec   131 KBytes  1.07 Mbits/sec   0.001 ms 0/91 (0%)
[ ID] Interval       Transfer     Bandwidth
[SUM] 0.0000-1.0000 sec   261 KBytes  2.14 Mbits/sec   1/183 (0.55%)
"
        );
        assert_eq!(loss_pct(&udp_rx(0.0, 5, 5)), "1e+02");
    }

    #[test]
    fn udp_client_final_sent_count_and_server_report() {
        let mut cfg = TestConfig::default();
        cfg.output.interval = None;
        let (mut s, buf) = sink(&cfg, Side::Client);
        let sent = UdpFlow {
            sent: Some(183),
            ..UdpFlow::default()
        };
        let l = udp_line(1, true, 0.0, 2.0193, 182 * 1470, sent);
        s.event(&report(true, vec![l.clone()], l));
        let relayed = udp_line(1, false, 0.0, 2.0176, 182 * 1470, udp_rx(0.005, 0, 182));
        s.event(&Event::Flows(Box::new(FlowReport {
            final_report: true,
            flows: vec![relayed.clone()],
            sum: relayed,
            pairs: Vec::new(),
            relay: true,
        })));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval       Transfer     Bandwidth
[  1] 0.0000-2.0193 sec   261 KBytes  1.06 Mbits/sec
[  1] Sent 183 datagrams
[  1] Server Report:
[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams
[  1] 0.0000-2.0176 sec   261 KBytes  1.06 Mbits/sec   0.005 ms 0/182 (0%)
"
        );
    }

    #[test]
    fn udp_enhanced_columns() {
        let mut cfg = TestConfig::default();
        cfg.output.enhanced = true;
        let (mut s, buf) = sink(&cfg, Side::Server);
        let u = UdpFlow {
            pps: 856.0,
            latency: Some(LatencyStats {
                count: 852,
                bytes: 0,
                mean: 0.000008,
                min: 0.000001,
                max: 0.000060,
                stdev: 0.000004,
            }),
            in_flight: Some((852, 0.0, 0.0)),
            ..udp_rx(0.002, 0, 852)
        };
        let mut l = udp_line(1, false, 0.0, 1.0, 852 * 1470, u);
        l.extras.net_power = Some(166393.2);
        s.event(&report(true, vec![l.clone()], l));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval            Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS  Rx/inP  NetPwr
[  1] 0.0000-1.0000 sec  1.19 MBytes  10.0 Mbits/sec   0.002 ms 0/852 (0%) 0.008/0.001/0.060/0.004 ms 856 pps 852/0(0) pkts 166393
"
        );
        let (mut s, buf) = sink(&cfg, Side::Client);
        let mut l = udp_line(
            1,
            true,
            0.0,
            1.0,
            851 * 1470,
            UdpFlow {
                pps: 852.0,
                ..UdpFlow::default()
            },
        );
        l.extras.calls = 851;
        s.event(&report(true, vec![l.clone()], l));
        assert_eq!(
            *buf.lock().unwrap(),
            "[ ID] Interval            Transfer     Bandwidth      Write/Err  PPS
[  1] 0.0000-1.0000 sec  1.19 MBytes  10.0 Mbits/sec  851/0      852 pps
"
        );
    }

    #[test]
    fn relayed_report_with_latency_switches_to_enhanced_and_shows_reordering() {
        let cfg = TestConfig::default();
        let (mut s, buf) = sink(&cfg, Side::Client);
        let u = UdpFlow {
            jitter_ms: 1.234,
            lost: 7,
            total: 1000,
            out_of_order: 3,
            pps: 400.0,
            latency: Some(LatencyStats {
                count: 1000,
                bytes: 0,
                mean: 0.005,
                min: 0.001,
                max: 0.009,
                stdev: 0.0,
            }),
            in_flight: Some((400, 2.0, 0.0)),
            sent: None,
        };
        let mut l = udp_line(1, false, 0.0, 2.5, 123_456_789, u);
        l.extras.net_power = Some(9876.54);
        s.event(&Event::Flows(Box::new(FlowReport {
            final_report: true,
            flows: vec![l.clone()],
            sum: l,
            pairs: Vec::new(),
            relay: true,
        })));
        assert_eq!(
            *buf.lock().unwrap(),
            "[  1] Server Report:
[ ID] Interval            Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS  Rx/inP  NetPwr
[  1] 0.0000-2.5000 sec   118 MBytes   395 Mbits/sec   1.234 ms 7/1000 (0.7%) 5.000/1.000/9.000/0.000 ms 400 pps 400/2(0) pkts 9877
[  1] 0.0000-2.5000 sec  3 datagrams received out-of-order
"
        );
    }

    #[test]
    fn hidden_addresses() {
        assert_eq!(hidden("10.1.2.3"), "*.*.*.3");
        assert_eq!(hidden("example.com"), "(**hidden**)");
    }
}
