//! iperf 2.1.8's human-readable output, as Debian's build prints it
//! (4-decimal interval times), from the one event stream.
//!
//! Layouts were matched against the real program's output
//! (`docs/protocols.md`, Output: iperf 2 text). A column header is printed before the first line
//! that needs it and again whenever the kind of line changes or a banner
//! intervened; that state is shared by every sink of one process (a dual
//! test's two directions print under one header).

use std::sync::{Arc, Mutex};

use crate::{Output, Sink};
use wirespeed_core::config::{Protocol, TestConfig};
use wirespeed_core::events::*;
use wirespeed_core::units::format_iperf2;

const RULE: &str = "------------------------------------------------------------\n";

/// Header state shared by the iperf 2 sinks of one process: the column
/// headers printed since the last banner or connection line (2.1.8 prints
/// each kind once, not again when the kind of line changes back).
pub(crate) type HeaderState = Arc<Mutex<Vec<&'static str>>>;

/// A fresh header state.
pub(crate) fn header_state() -> HeaderState {
    Arc::new(Mutex::new(Vec::new()))
}

/// The process's header state: every iperf 2 sink the process makes
/// (a dual test's two directions, a server's tests) prints under it.
pub(crate) fn process_header() -> HeaderState {
    static STATE: std::sync::OnceLock<HeaderState> = std::sync::OnceLock::new();
    STATE.get_or_init(header_state).clone()
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
const HDR_UDP_SEND_ISOCH: &str =
    "[ ID] Interval            Transfer     Bandwidth      Write/Err  PPS  isoch:tx/miss/slip\n";
const HDR_SENDER_ISOCH: &str = "[ ID] Interval            Transfer     Bandwidth      Write/Err  Rtry     Cwnd/RTT     isoch:tx/miss/slip  NetPwr\n";
const HDR_UDP_RECV_FRAMES: &str = "[ ID] Interval            Transfer     Bandwidth        Jitter   Lost/Total Latency avg/min/max/stdev  PPS  Frame:rx/lost  latency  NetPwr\n";
const HDR_BB: &str =
    "[ ID] Interval            Transfer    Bandwidth         BB cnt=avg/min/max/stdev         Rtry  Cwnd/RTT    RPS\n";

/// Prints events as 2.1.8 does.
pub(crate) struct Iperf2Text {
    out: Output,
    side: Side,
    format: char,
    enhanced: bool,
    exclude: String,
    sum_only: bool,
    intervals: bool,
    hide_ips: bool,
    print_mss: bool,
    /// The tries a sender's warning names when no report came back:
    /// 2.1.8 says 10 for a timed test, 1 for `-n`/`-k`, whatever it sent.
    fin_tries: u32,
    /// `-M`: the MSS asked for, which the banner names.
    mss_req: Option<u32>,
    /// A `--udp-l4s` client: its banner says `UDP L4S`, as 2.2.1's does.
    l4s: bool,
    /// `-W`: the window advice after a TCP sender's final report.
    window_advice: bool,
    /// `--omit` (iperf 2 master), seconds: added to the times after it.
    omit: f64,
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
    Bounceback,
    /// An isochronous sender's lines (`isoch:tx/miss/slip`).
    SenderIsoch,
    UdpSendIsoch,
    /// A receiver of isochronous frames with their latency.
    UdpRecvFrames,
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
            Kind::Bounceback => HDR_BB,
            Kind::SenderIsoch => HDR_SENDER_ISOCH,
            Kind::UdpSendIsoch => HDR_UDP_SEND_ISOCH,
            Kind::UdpRecvFrames => HDR_UDP_RECV_FRAMES,
        }
    }

    /// The kind of a sum of such lines (sums carry no frames).
    fn without_frames(self) -> Kind {
        match self {
            Kind::SenderIsoch => Kind::Sender,
            Kind::UdpSendIsoch => Kind::UdpSendE,
            Kind::UdpRecvFrames => Kind::UdpRecvE,
            k => k,
        }
    }
}

/// A report over one span, as iperf 2 prints it: its lines, their sum,
/// full-duplex pairs.
struct Report<'a> {
    final_report: bool,
    flows: &'a [StreamSample],
    sum: &'a StreamSample,
    pairs: &'a [StreamSample],
    relay: bool,
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
pub(crate) fn histogram_line(tag: &str, l: &StreamSample, h: &HistogramSample) -> String {
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
fn loss_pct(u: &UdpSample) -> String {
    let pct = if u.packets > 0 {
        100.0 * u.lost.max(0) as f64 / u.packets as f64
    } else {
        0.0
    };
    wirespeed_proto::json::format_g(pct, 2)
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

/// `avg/min/max/stdev` in ms.
/// An enhanced UDP receiver line up to its packet rate: jitter, loss,
/// latency, pps.
fn udp_recv_head(base: &str, u: &UdpSample) -> String {
    format!(
        "{base}  {:6.3} ms {}/{} ({}%) {} ms {:.0} pps",
        u.jitter_ms,
        u.lost.max(0),
        u.packets,
        loss_pct(u),
        ms4(&u.latency.unwrap_or_default()),
        u.pps
    )
}

fn ms4(l: &LatencyStats) -> String {
    format!(
        "{:.3}/{:.3}/{:.3}/{:.3}",
        l.mean * 1e3,
        l.min * 1e3,
        l.max * 1e3,
        l.stdev * 1e3
    )
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
            print_mss: cfg.output.print_mss,
            mss_req: cfg.params.mss,
            l4s: cfg.iperf2.udp_l4s,
            fin_tries: match cfg.params.end {
                wirespeed_core::config::EndCondition::Time(_) => 10,
                _ => 1,
            },
            window_advice: cfg.output.window_advice,
            omit: cfg.params.omit.as_secs_f64(),
            header,
        }
    }

    /// A line of an omitted span ends `  (omit)`, as iperf 2 master's.
    fn omit_mark(line: String, l: &StreamSample) -> String {
        match line.strip_suffix('\n') {
            Some(body) if l.omitted => format!("{body}  (omit)\n"),
            _ => line,
        }
    }

    fn excluded(&self, letter: char) -> bool {
        self.exclude.contains(letter)
    }

    fn host(&self, h: &str) -> String {
        if self.hide_ips { hidden(h) } else { h.to_string() }
    }

    fn listening(&self, l: &Listening) -> String {
        let b = &l.settings;
        let proto = b.protocol.name();
        let mut s = String::from(RULE);
        if let Some(last) = l.port_last {
            // 2.1.8 names the pid here with or without -e.
            s.push_str(&format!(
                "Server listening on {proto} ports {}-{last} with pid {}",
                l.port, b.pid
            ));
        } else {
            s.push_str(&format!("Server listening on {proto} port {}", l.port));
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
                format_iperf2(b.block_len as f64, self.format.to_ascii_uppercase()),
                format_iperf2((b.block_len / 8) as f64, 'A')
            ));
        }
        for n in &b.notes {
            if let BannerNote::Late(l) = n {
                s.push_str(&format!("{l}\n"));
            }
        }
        s.push_str(&self.mss_line(b));
        s.push_str(&self.window_lines(b));
        s
    }

    /// The banner's MSS line, as 2.1.8 prints it before the window line:
    /// `-M`'s request, else under `-m` the socket's TCP_MAXSEG before it
    /// connects (which Linux answers with its default, 536; a UDP socket
    /// has none, 0).
    fn mss_line(&self, b: &Settings) -> String {
        match (b.protocol, self.mss_req) {
            (Protocol::Udp, _) if self.print_mss => "MSS size 0 bytes\n".into(),
            (Protocol::Udp, _) => String::new(),
            (_, Some(m)) => format!("MSS req size {m} bytes (per TCP_MAXSEG)\n"),
            (_, None) if self.print_mss => "MSS size 536 bytes\n".into(),
            (_, None) => String::new(),
        }
    }

    fn connecting(&self, c: &Connecting) -> String {
        let b = &c.settings;
        let proto = match b.protocol.name() {
            "UDP" if self.l4s => "UDP L4S",
            n => n,
        };
        let mut s = String::from(RULE);
        s.push_str(&format!(
            "Client connecting to {}, {proto} port {}",
            self.host(&c.host),
            c.port
        ));
        if self.enhanced {
            s.push_str(&format!(" with pid {} ({} flows)", b.pid, b.flows));
        }
        s.push('\n');
        if self.enhanced && b.protocol != Protocol::Udp {
            s.push_str(&format!(
                "Write buffer size: {}\n",
                format_iperf2(b.block_len as f64, 'B')
            ));
        }
        // 2.1.8 takes -m with -u too, and has no MSS to show there.
        s.push_str(&self.mss_line(b));
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
                BannerNote::Early(_) | BannerNote::AfterWindow(_) | BannerNote::InsteadOfWindow(_) => {}
            }
        }
        s.push_str(&self.window_lines(b));
        s
    }

    /// The banner's window line, what follows it, and the closing rule.
    /// As 2.1.8 prints it: the size in bytes under `-f b`/`-f B` and
    /// adaptive under any other `-f`; the size requested in `-f`'s unit, as
    /// bytes (`-f k` as `-f K`, `-f a` as `-f A`).
    fn window_lines(&self, b: &Settings) -> String {
        let size_unit = if self.format.eq_ignore_ascii_case(&'b') {
            'B'
        } else {
            'A'
        };
        let asked_unit = self.format.to_ascii_uppercase();
        let note = match b.window_requested {
            Some(w) if w != b.window => format!("(WARNING: requested {})", format_iperf2(w as f64, asked_unit)),
            Some(_) => "(requested)".into(),
            None => "(default)".into(),
        };
        let label = if b.protocol == Protocol::Udp {
            "UDP buffer size"
        } else {
            "TCP window size"
        };
        let instead = b.notes.iter().find_map(|n| match n {
            BannerNote::InsteadOfWindow(l) => Some(l),
            _ => None,
        });
        let mut s = match instead {
            Some(l) => format!("{l}\n"),
            None => format!("{label}: {} {note}\n", format_iperf2(b.window as f64, size_unit)),
        };
        for n in &b.notes {
            if let BannerNote::AfterWindow(l) = n {
                s.push_str(&format!("{l}\n"));
            }
        }
        s.push_str(RULE);
        s
    }

    fn connection(&self, c: &ConnInfo) -> String {
        let dev = match (&c.local_dev, self.enhanced) {
            (Some(d), true) => format!("%{d}"),
            _ => String::new(),
        };
        let mut s = format!(
            "{}local {}{dev} port {} connected with {} port {}",
            id_tag(c.id, c.reversed),
            self.host(&c.local_host),
            c.local_port,
            self.host(&c.remote_host),
            c.remote_port
        );
        if let Some(n) = c.clamp {
            s.push_str(&format!(" (clamp={n})"));
        }
        if let Some(n) = c.prefetch {
            s.push_str(&format!(" (prefetch={n})"));
        }
        if c.epoch_start {
            s.push_str(" (epoch-start)");
        }
        if c.isoch {
            s.push_str(" (isoch)");
        }
        if let Some(m) = &c.mode {
            s.push_str(&format!(" ({m})"));
        }
        if c.no_udp_fin {
            s.push_str(" (no-udp-fin)");
        }
        if c.l4s {
            s.push_str(" (l4s)");
        }
        if c.fq {
            s.push_str(" (fq)");
        }
        if self.enhanced {
            s.push_str(&format!(" (sock={})", c.socket));
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
        if self.enhanced || c.times_always {
            if let Some(ct) = c.connect_ms {
                s.push_str(&format!(" (ct={ct:.2} ms)"));
            }
            if let Some(t) = c.when {
                s.push_str(&format!(
                    " on {}",
                    wirespeed_sys::time::strftime("%Y-%m-%d %H:%M:%S (%Z)", t, false)
                ));
            }
        }
        s.push('\n');
        if let Some(k) = &c.clock {
            s.push_str(&format!(
                "[{:>3}] Clock sync check (ms): RTT/Half=({:.3}/{:.3}) OWD-send/ack/asym=({:.3}/{:.3}/{:.3})\n",
                c.id,
                k.rtt,
                k.rtt / 2.0,
                k.send,
                k.back,
                k.send - k.back
            ));
        }
        s
    }

    /// The columns every data line starts with.
    fn base(&self, tag: &str, l: &StreamSample) -> String {
        let upper = self.format.to_ascii_uppercase();
        let secs = l.end - l.start;
        let per_sec = if secs > 0.0 { l.bytes as f64 / secs } else { 0.0 };
        // After an --omit the clock goes on from the test's start, as in
        // iperf 2 master (the engine restarts it at the omit's end).
        let shift = if l.omitted { 0.0 } else { self.omit };
        format!(
            "{tag}{:.4}-{:.4} sec  {}s  {}s/sec",
            l.start + shift,
            l.end + shift,
            format_iperf2(l.bytes as f64, upper),
            format_iperf2(per_sec, self.format)
        )
    }

    fn kind(&self, l: &StreamSample) -> Kind {
        if l.extras.bounceback.is_some() {
            return Kind::Bounceback;
        }
        // A bounceback server's lines: plain transfers, both ways' bytes.
        if l.both_ways {
            return Kind::Plain;
        }
        let frames = l.extras.frames.as_ref();
        if let Some(u) = &l.udp {
            return match (l.sender, self.enhanced || u.latency.is_some()) {
                (false, true) if frames.is_some_and(|f| f.latency.is_some()) => Kind::UdpRecvFrames,
                (true, true) if frames.is_some() => Kind::UdpSendIsoch,
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
        } else if l.sender && frames.is_some() {
            Kind::SenderIsoch
        } else if l.sender {
            Kind::Sender
        } else {
            Kind::Reader
        }
    }

    fn bins(l: &StreamSample) -> String {
        let b = l.extras.read_bins.unwrap_or_default();
        let dist: Vec<String> = b.iter().map(|x| x.to_string()).collect();
        format!("{}={}", l.extras.calls, dist.join(":"))
    }

    fn flow_line(&self, tag: &str, l: &StreamSample, kind: Kind, sum: bool) -> String {
        let mut s = self.flow_line_of(tag, l, kind, sum);
        // An L4S receiver (`--udp-l4s`) says how many of the interval's
        // datagrams arrived CE-marked (wirespeed's; 2.2.1 prints none).
        if let Some(e) = l.udp.and_then(|u| u.ecn).filter(|e| e.l4s && !sum)
            && matches!(kind, Kind::UdpRecv | Kind::UdpRecvE | Kind::UdpRecvFrames)
            && s.ends_with('\n')
        {
            let n = e.counts.total();
            let pct = if n > 0 {
                100.0 * e.counts.ce as f64 / n as f64
            } else {
                0.0
            };
            s.pop();
            s.push_str(&format!(" CE {}/{n} ({pct:.2}%)\n", e.counts.ce));
        }
        s
    }

    fn flow_line_of(&self, tag: &str, l: &StreamSample, kind: Kind, sum: bool) -> String {
        let base = self.base(tag, l);
        let e = &l.extras;
        let retr = l.retransmits.unwrap_or(0);
        match kind {
            Kind::Plain => format!("{base}\n"),
            Kind::Sender if sum => format!("{base}  {}/{}{retr:>10}\n", e.calls, e.errors),
            Kind::Sender => {
                let mut s = format!("{base}  {}/{} {retr:>10}", e.calls, e.errors);
                if let Some(t) = l.tcp {
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
                let u = l.udp.unwrap_or_default();
                format!("{base}   {}/{} ({}%)\n", u.lost.max(0), u.packets, loss_pct(&u))
            }
            Kind::UdpRecv => {
                let u = l.udp.unwrap_or_default();
                format!(
                    "{base}  {:6.3} ms {}/{} ({}%)\n",
                    u.jitter_ms,
                    u.lost.max(0),
                    u.packets,
                    loss_pct(&u)
                )
            }
            Kind::UdpRecvE => {
                let u = l.udp.unwrap_or_default();
                let (rx, inp, var) = u.in_flight.unwrap_or((u.packets - u.lost.max(0), 0.0, 0.0));
                format!(
                    "{} {rx}/{inp:.0}({var:.0}) pkts {}\n",
                    udp_recv_head(&base, &u),
                    net_power(e.net_power)
                )
            }
            Kind::UdpSendE => {
                let pps = l.udp.map(|u| u.pps).unwrap_or(0.0);
                format!("{base}  {}/{} {pps:8.0} pps\n", e.calls, e.errors)
            }
            Kind::UdpSendIsoch => {
                let pps = l.udp.map(|u| u.pps).unwrap_or(0.0);
                let f = e.frames.unwrap_or_default();
                format!(
                    "{base}  {}/{} {pps:8.0} pps  {:3}/{}/{}\n",
                    e.calls, e.errors, f.frames, f.missed, f.slips
                )
            }
            Kind::SenderIsoch => {
                let f = e.frames.unwrap_or_default();
                let (cwnd, rtt) = l.tcp.map_or((0, 0), |t| (t.snd_cwnd / 1024, t.rtt));
                format!(
                    "{base}  {}/{} {retr:>8} {cwnd:>8}K/{rtt} us  {:>9}/{}/{}        {}\n",
                    e.calls,
                    e.errors,
                    f.frames,
                    f.missed,
                    f.slips,
                    net_power(e.net_power)
                )
            }
            Kind::UdpRecvFrames => {
                let f = e.frames.unwrap_or_default();
                format!(
                    "{}  {:3}/{}  {} ms {}\n",
                    udp_recv_head(&base, &l.udp.unwrap_or_default()),
                    f.frames,
                    f.missed,
                    ms4(&f.latency.unwrap_or_default()),
                    net_power(e.net_power)
                )
            }
            Kind::Trip => {
                let lat = e.latency.unwrap_or_default();
                let size = lat.bytes.checked_div(lat.count).unwrap_or(0);
                format!(
                    "{base}  {} ms ({}/{}) {} {}  {}\n",
                    ms4(&lat),
                    lat.count,
                    size,
                    format_iperf2(e.in_flight.unwrap_or(0.0), 'A'),
                    net_power(e.net_power),
                    Self::bins(l)
                )
            }
            Kind::Bounceback => {
                let bb = e.bounceback.clone().unwrap_or_default();
                let (cwnd, rtt) = bb.tcp.unwrap_or((0, 0));
                format!(
                    "{base}    {}={} ms    {}  {}K/{rtt} us    {} rps\n",
                    bb.rtt.count,
                    ms4(&bb.rtt),
                    bb.retransmits,
                    cwnd / 1024,
                    bb.rps as u64
                )
            }
        }
    }

    /// A bounceback stream's whole-test extras: one-way delays.
    fn bounceback_final(&self, tag: &str, l: &StreamSample) -> String {
        let Some(bb) = &l.extras.bounceback else {
            return String::new();
        };
        let Some(o) = &bb.owd else {
            return String::new();
        };
        format!(
            "{tag}{:.4}-{:.4} sec  OWD Delays (ms) Cnt={} To={} From={} Asymmetry={}    {} rps\n",
            l.start,
            l.end,
            o.to.count,
            ms4(&o.to),
            ms4(&o.from),
            ms4(&o.asymmetry),
            bb.rps as u64
        )
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

    fn flows(&self, r: &Report) {
        if self.excluded('D') || (r.relay && self.excluded('V')) || (!r.final_report && !self.intervals) {
            return;
        }
        if self.sum_only {
            let n = r.flows.len();
            let line = self.base(&format!("[SUM-{n}] "), r.sum);
            self.under(HDR_SUM_ONLY, &Self::omit_mark(format!("{line}\n"), r.sum));
            return;
        }
        for l in r.flows {
            self.flow(r, l);
        }
        if self.enhanced {
            for p in r.pairs {
                self.under(
                    HDR_PLAIN,
                    &Self::omit_mark(self.flow_line(&format!("[FD{}] ", p.id), p, Kind::Plain, true), p),
                );
            }
        }
        self.sum(r);
    }

    /// One stream's line of a report, and what follows it.
    fn flow(&self, r: &Report, l: &StreamSample) {
        let kind = match (&l.udp, r.relay) {
            // A receiver's report is laid out as the receiver sent it:
            // enhanced only when it carries the latency fields (a server
            // with -e, or a --trip-times sender), whatever this end's -e,
            // as 2.1.8's client does.
            (Some(u), true) if u.latency.is_none() => Kind::UdpRecv,
            (Some(_), true) => Kind::UdpRecvE,
            _ => self.kind(l),
        };
        let tag = id_tag(l.id, l.reversed);
        // 2.1.8 does not star these two lines, even for a starred flow.
        let plain = id_tag(l.id, false);
        if r.relay {
            self.out.write(&format!("{plain}Server Report:\n"));
            self.reset_header();
        }
        self.under(kind.header(), &Self::omit_mark(self.flow_line(&tag, l, kind, false), l));
        if kind == Kind::Bounceback && r.final_report {
            self.out.write(&self.bounceback_final(&tag, l));
        }
        if let Some(h) = &l.extras.histogram {
            self.out.write(&histogram_line(&tag, l, h));
        }
        if let Some(u) = &l.udp {
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

    /// The `[SUM]` line of a report with more than one line.
    fn sum(&self, r: &Report) {
        let fd_alone = self.enhanced && self.side == Side::Client && r.pairs.len() == 1 && r.flows.len() == 2;
        if r.flows.len() <= 1 || fd_alone {
            return;
        }
        let kinds: Vec<Kind> = r.flows.iter().map(|l| self.kind(l).without_frames()).collect();
        let kind = match kinds.first() {
            Some(k) if kinds.iter().all(|x| x == k) && *k != Kind::Trip => *k,
            _ => Kind::Plain,
        };
        // Bounceback flows print no sums (their bytes go both ways).
        if kind == Kind::Bounceback || r.sum.both_ways {
            return;
        }
        // UDP receiver sums print under the plain header.
        let header = match kind {
            Kind::UdpRecv | Kind::UdpRecvE | Kind::UdpSendE => HDR_PLAIN,
            k => k.header(),
        };
        let kind = if kind == Kind::UdpSendE { Kind::Plain } else { kind };
        self.under(
            header,
            &Self::omit_mark(self.flow_line("[SUM] ", r.sum, kind, true), r.sum),
        );
        let all_send = r.flows.iter().all(|l| l.sender);
        if let (Some(n), true) = (r.sum.udp.and_then(|u| u.sent), r.final_report && all_send) {
            self.out.write(&format!("[SUM-{}] Sent {n} datagrams\n", r.flows.len()));
        }
    }

    /// wirespeed's: what the path did to the ECN field, a line per stream
    /// where it was in play (and their sum).
    fn ecn_lines(&self, s: &Summary) {
        if self.excluded('D') {
            return;
        }
        let (mut n, mut tcp) = (0, 0);
        for st in &s.streams {
            if let Some(e) = &st.tcp_ecn {
                tcp += 1;
                let reversed = s.local.streams.iter().any(|l| l.id == st.id && l.reversed);
                self.out.write(&format!(
                    "{}{}\n",
                    id_tag(st.id, reversed),
                    crate::ecn::tcp_line(e, st.local_sender)
                ));
            }
            if let Some(e) = st.udp.as_ref().and_then(|u| u.ecn.as_ref()) {
                let reversed = s.local.streams.iter().any(|l| l.id == st.id && l.reversed);
                self.out
                    .write(&format!("{}{}\n", id_tag(st.id, reversed), crate::ecn::line(e)));
                n += 1;
            }
        }
        if n > 1 {
            for d in std::iter::once(&s.forward).chain(s.reverse.as_ref()) {
                if let Some(e) = d.udp.as_ref().and_then(|u| u.ecn.as_ref()) {
                    self.out.write(&format!("[SUM] {}\n", crate::ecn::line(e)));
                }
            }
        }
        // TCP: each direction's streams added up (iperf 2 exchanges no
        // results, so these are this host's kernel's alone).
        if tcp > 1 {
            for d in std::iter::once(&s.forward).chain(s.reverse.as_ref()) {
                if let Some(e) = &d.tcp_ecn_sent {
                    self.out
                        .write(&format!("[SUM] {}\n", crate::ecn::tcp_sum_line(e, true)));
                }
                if let Some(e) = &d.tcp_ecn_received {
                    self.out
                        .write(&format!("[SUM] {}\n", crate::ecn::tcp_sum_line(e, false)));
                }
            }
        }
    }

    fn peer_report(&self, p: &PeerReport) {
        match p {
            PeerReport::Report(l) => self.flows(&Report {
                final_report: true,
                flows: std::slice::from_ref(l),
                sum: l,
                pairs: &[],
                relay: true,
            }),
            // As 2.1.8, on standard error: a line per refused read, and
            // the warning naming its tries (see `fin_tries`; the JSON has
            // the FINs sent).
            PeerReport::Missing { id, refused, .. } => {
                let mut s = "read failed: Connection refused\n".repeat(*refused as usize);
                s.push_str(&format!(
                    "[{id:>3}] WARNING: did not receive ack of last datagram after {} tries.\n",
                    self.fin_tries
                ));
                self.out.write_err(&s);
            }
            PeerReport::Undelivered { id } => {
                self.out
                    .write(&format!("[{id:>3}] WARNING: ack of last datagram failed.\n"));
            }
        }
    }
}

impl Sink for Iperf2Text {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Listening(l) if !self.excluded('S') => {
                self.out.write(&self.listening(l));
                self.reset_header();
            }
            Event::Connecting(c) if !self.excluded('S') => {
                self.out.write(&self.connecting(c));
                self.reset_header();
            }
            Event::StreamConnected(c) if !self.excluded('C') && !self.sum_only => {
                self.out.write(&self.connection(c));
                self.reset_header();
            }
            Event::ConnectTimes(ct) => {
                let m = &ct.ms;
                self.out.write(&format!(
                    "[ CT] final connect times (min/avg/max/stdev) = {:.3}/{:.3}/{:.3}/{:.3} ms (tot/err) = {}/{}\n",
                    m.min, m.mean, m.max, m.stdev, m.count, ct.errors
                ));
            }
            Event::Interval(r) => {
                self.flows(&Report {
                    final_report: false,
                    flows: &r.streams,
                    sum: &r.sum,
                    pairs: &r.pairs,
                    relay: false,
                });
                if let Some(l) = &r.latency {
                    self.out
                        .write(&crate::latency::interval_line(r.sum.start, r.sum.end, l));
                }
            }
            Event::End(s) => {
                self.flows(&Report {
                    final_report: true,
                    flows: &s.local.streams,
                    sum: &s.local.sum,
                    pairs: &s.local.pairs,
                    relay: false,
                });
                self.ecn_lines(s);
                if let (true, Some(a)) = (self.window_advice, &s.advice) {
                    let text: String = a.text.iter().map(|l| format!("{l}\n")).collect();
                    self.out.write(&text);
                }
                if let Some(l) = &s.latency {
                    self.out.write(&crate::latency::end_lines(l));
                }
            }
            Event::PeerReport(p) => self.peer_report(p),
            Event::Refused(r) => {
                let (lh, lp) = &r.local;
                let (rh, rp) = &r.remote;
                self.out.write(&format!(
                    "[drop] local {lh} port {lp} connected with {rh} port {rp} ({})\n",
                    r.why
                ));
            }
            Event::Notice(n) => self.out.write(&format!("{n}\n")),
            Event::Warning(w) => self.out.write_err(&format!("{w}\n")),
            Event::Error(e) => self.out.write_err(&format!("{}\n", e.text())),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
