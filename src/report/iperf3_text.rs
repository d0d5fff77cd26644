//! iperf3's human-readable output, line for line.
//!
//! Layouts follow iperf3 master's format strings (`iperf_locale.c`); the
//! `spec/iperf3-cli-output.md` catalogue counts their spaces. Text goes out in
//! the same chunks iperf3 prints, because `-T` and `--timestamps` prefix each
//! chunk rather than each line.

use super::event::*;
use super::{Output, Sink};
use crate::cli::units::format_iperf3;
use crate::config::{Direction, EndCondition, Protocol, TestConfig};
use crate::json::format_g;

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
const BANNER_RULE: &str = "-----------------------------------------------------------\n";

/// Prints events as iperf3 does.
pub struct TextSink {
    out: Output,
    side: Side,
    format: char,
    verbose: bool,
    title: Option<String>,
    interval_header_done: bool,
    protocol: Protocol,
    bidir: bool,
    streams: u32,
    local_sends_tcp: bool,
    local_receives: bool,
    local_sends: bool,
    failed: bool,
    /// The last chunk printed was the `- - -` separator.
    after_separator: bool,
}

impl TextSink {
    /// A text sink for `cfg`, writing to `out`.
    pub fn new(cfg: &TestConfig, out: Output, side: Side) -> TextSink {
        TextSink {
            out,
            side,
            format: cfg.output.format,
            verbose: cfg.output.verbose,
            title: if side == Side::Client {
                cfg.output.title.clone()
            } else {
                None
            },
            interval_header_done: false,
            protocol: cfg.params.protocol,
            bidir: cfg.params.direction == Direction::Bidir,
            streams: cfg.params.streams,
            local_sends_tcp: false,
            local_receives: false,
            local_sends: false,
            failed: false,
            after_separator: false,
        }
    }

    fn print(&mut self, chunk: &str) {
        self.after_separator = chunk == SEPARATOR;
        match &self.title {
            Some(t) => self.out.write(&format!("{t}:  {chunk}")),
            None => self.out.write(chunk),
        }
    }

    fn role(&self, r: Option<RoleTag>) -> &'static str {
        match r {
            Some(t) if self.bidir => t.as_str(),
            _ => "",
        }
    }

    fn prefix(&self, id: &str, role: Option<RoleTag>, start: f64, end: f64, bytes: u64, bps: f64) -> String {
        format!(
            "{id}{} {start:6.2}-{end:<6.2} sec  {}s  {}s/sec",
            self.role(role),
            format_iperf3(bytes as f64, 'A'),
            format_iperf3(bps / 8.0, self.format),
        )
    }

    fn header(&self, kind: HeaderKind) -> String {
        let id = if self.bidir { "[ ID][Role]" } else { "[ ID]" };
        let tail = match kind {
            HeaderKind::Plain => "",
            HeaderKind::Retr => "         Retr",
            HeaderKind::RetrCwnd => "         Retr  Cwnd",
            HeaderKind::UdpReceiver => "         Jitter    Lost/Total Datagrams",
            HeaderKind::UdpSender => "         Total Datagrams",
        };
        format!("{id} Interval           Transfer     Bitrate{tail}\n")
    }

    fn interval_header(&self) -> HeaderKind {
        match self.protocol {
            Protocol::Udp => {
                if self.local_receives {
                    HeaderKind::UdpReceiver
                } else {
                    HeaderKind::UdpSender
                }
            }
            _ => {
                if self.local_sends_tcp {
                    HeaderKind::RetrCwnd
                } else {
                    HeaderKind::Plain
                }
            }
        }
    }

    fn stream_interval_line(&self, s: &StreamInterval) -> String {
        let id = format!("[{:>3}]", s.socket);
        let p = self.prefix(&id, s.role, s.start, s.end, s.bytes, s.bits_per_second);
        let suffix = if s.omitted { "(omitted)" } else { "" };
        match (&s.udp, &s.tcp) {
            (Some(u), _) if s.sender => {
                let gap = if self.bidir { "           " } else { " " };
                format!("{p} {gap}{}  {suffix}\n", u.packets)
            }
            (Some(u), _) => format!(
                "{p}  {:5.3} ms  {}/{} ({}%)  {suffix}\n",
                u.jitter_ms,
                u.lost,
                u.packets,
                format_g(u.lost_percent, 2)
            ),
            (None, Some(t)) => format!(
                "{p}  {:>3}   {}s       {suffix}\n",
                t.retransmits,
                format_iperf3(t.snd_cwnd as f64, 'A')
            ),
            (None, None) => format!("{p}                  {suffix}\n"),
        }
    }

    fn sum_interval_line(&self, s: &SumInterval) -> String {
        let p = self.prefix("[SUM]", s.role, s.start, s.end, s.bytes, s.bits_per_second);
        let suffix = if s.omitted { "(omitted)" } else { "" };
        match (&s.udp, s.retransmits) {
            (Some(u), _) if s.sender => {
                let gap = if self.bidir { "           " } else { " " };
                format!("{p} {gap}{}  {suffix}\n", u.packets)
            }
            (Some(u), _) => format!(
                "{p}  {:5.3} ms  {}/{} ({}%)  {suffix}\n",
                u.jitter_ms,
                u.lost,
                u.packets,
                format_g(u.lost_percent, 2)
            ),
            (None, Some(r)) => format!("{p}  {r:>3}             {suffix}\n"),
            (None, None) => format!("{p}                  {suffix}\n"),
        }
    }

    fn on_interval(&mut self, rep: &IntervalReport) {
        if !self.interval_header_done {
            self.interval_header_done = true;
            self.print(&self.header(self.interval_header()));
        }
        let multi = self.streams > 1;
        let forward = |r: Option<RoleTag>| !matches!(r, Some(RoleTag::RxC) | Some(RoleTag::TxS));
        for (want_forward, sum) in [(true, Some(&rep.sum)), (false, rep.sum_bidir_reverse.as_ref())] {
            let group: Vec<&StreamInterval> = rep.streams.iter().filter(|s| forward(s.role) == want_forward).collect();
            if group.is_empty() {
                continue;
            }
            for s in group {
                self.print(&self.stream_interval_line(s));
            }
            if multi && let Some(sum) = sum {
                self.print(&self.sum_interval_line(sum));
            }
        }
        if multi {
            self.print(SEPARATOR);
        }
    }

    fn totals_line(&self, id: &str, role: Option<RoleTag>, t: &Totals, which: &str, sum: bool) -> String {
        let p = self.prefix(id, role, t.start, t.end, t.bytes, t.bits_per_second);
        match t.retransmits {
            Some(r) if which == "sender" && self.protocol != Protocol::Udp => {
                if sum {
                    format!("{p}  {r:>3}             {which}\n")
                } else {
                    format!("{p}  {r:>3}            {which}\n")
                }
            }
            _ => format!("{p}                  {which}\n"),
        }
    }

    fn udp_totals_line(&self, id: &str, role: Option<RoleTag>, t: &Totals, u: &UdpTotals, which: &str) -> String {
        let p = self.prefix(id, role, t.start, t.end, t.bytes, t.bits_per_second);
        match u.lost {
            Some(lost) => format!(
                "{p}  {:5.3} ms  {}/{} ({}%)  {which}\n",
                u.jitter_ms,
                lost,
                u.packets,
                format_g(u.lost_percent, 2)
            ),
            None => format!("{p}  {:5.3} ms  Unknown/{}  {which}\n", u.jitter_ms, u.packets),
        }
    }

    fn on_end(&mut self, sum: &Summary) {
        if !self.after_separator {
            self.print(SEPARATOR);
        }
        if self.verbose {
            self.print("Test Complete. Summary Results:\n");
        }
        let kind = match sum.protocol {
            Protocol::Udp => HeaderKind::UdpReceiver,
            _ if sum.has_retransmits => HeaderKind::Retr,
            _ => HeaderKind::Plain,
        };
        self.print(&self.header(kind));
        let multi = self.streams > 1;
        let forward = |r: Option<RoleTag>| !matches!(r, Some(RoleTag::RxC) | Some(RoleTag::TxS));
        let dirs = [(true, Some(&sum.forward)), (false, sum.reverse.as_ref())];
        for (want_forward, dsum) in dirs {
            let group: Vec<&StreamSummary> = sum.streams.iter().filter(|s| forward(s.role) == want_forward).collect();
            if group.is_empty() {
                continue;
            }
            for s in &group {
                self.stream_summary(s, sum.protocol);
            }
            if multi && let Some(d) = dsum {
                self.direction_summary(d, &group, sum.protocol);
            }
        }
        if self.verbose {
            let line = |local: &str, remote: &str, c: &CpuUtil| {
                format!(
                    "CPU Utilization: local/{local} {:.1}% ({:.1}%u/{:.1}%s), remote/{remote} {:.1}% ({:.1}%u/{:.1}%s)\n",
                    c.host_total, c.host_user, c.host_system, c.remote_total, c.remote_user, c.remote_system
                )
            };
            if sum.local_sends {
                self.print(&line("sender", "receiver", &sum.cpu));
            }
            if sum.local_sends && sum.local_receives {
                self.print(&line("receiver", "sender", &sum.cpu));
            }
            if sum.protocol == Protocol::Tcp {
                if let Some(c) = &sum.sender_tcp_congestion {
                    self.print(&format!("snd_tcp_congestion {c}\n"));
                }
                if let Some(c) = &sum.receiver_tcp_congestion {
                    self.print(&format!("rcv_tcp_congestion {c}\n"));
                }
            }
        }
    }

    fn stream_summary(&mut self, s: &StreamSummary, protocol: Protocol) {
        let id = format!("[{:>3}]", s.socket);
        let show_sender = s.local_sender || s.peer_known;
        let show_receiver = !s.local_sender || s.peer_known;
        match (protocol, &s.udp) {
            (Protocol::Udp, Some(u)) => {
                if show_sender {
                    let sent = UdpTotals {
                        jitter_ms: 0.0,
                        lost: Some(0),
                        packets: u.sent_packets,
                        lost_percent: 0.0,
                        ..*u
                    };
                    self.print(&self.udp_totals_line(&id, s.role, &s.sender, &sent, "sender"));
                } else if self.verbose {
                    self.print(&format!("[{:>3}] (sender statistics not available)\n", s.socket));
                }
                if show_receiver {
                    self.print(&self.udp_totals_line(&id, s.role, &s.receiver, u, "receiver"));
                } else if self.verbose {
                    self.print(&format!("[{:>3}] (receiver statistics not available)\n", s.socket));
                }
                if u.out_of_order > 0 && !s.local_sender {
                    self.print(&format!(
                        "[SUM]{} {:4.1}-{:4.1} sec  {} datagrams received out-of-order\n",
                        self.role(s.role),
                        s.receiver.start,
                        s.receiver.end,
                        u.out_of_order
                    ));
                }
            }
            _ => {
                if show_sender {
                    self.print(&self.totals_line(&id, s.role, &s.sender, "sender", false));
                } else if self.verbose {
                    self.print(&format!("[{:>3}] (sender statistics not available)\n", s.socket));
                }
                if show_receiver {
                    self.print(&self.totals_line(&id, s.role, &s.receiver, "receiver", false));
                } else if self.verbose {
                    self.print(&format!("[{:>3}] (receiver statistics not available)\n", s.socket));
                }
            }
        }
    }

    fn direction_summary(&mut self, d: &DirectionSums, group: &[&StreamSummary], protocol: Protocol) {
        let local_sender = group.first().map(|s| s.local_sender).unwrap_or(true);
        let peer_known = group.first().map(|s| s.peer_known).unwrap_or(true);
        let show_sender = local_sender || peer_known;
        let show_receiver = !local_sender || peer_known;
        match (protocol, &d.udp) {
            (Protocol::Udp, Some(u)) => {
                if show_sender {
                    let sent = UdpTotals {
                        jitter_ms: 0.0,
                        lost: Some(0),
                        packets: u.sent_packets,
                        lost_percent: 0.0,
                        ..*u
                    };
                    self.print(&self.udp_totals_line("[SUM]", d.role, &d.sent, &sent, "sender"));
                } else if self.verbose {
                    self.print("[SUM] (sender statistics not available)\n");
                }
                if show_receiver {
                    self.print(&self.udp_totals_line("[SUM]", d.role, &d.received, u, "receiver"));
                } else if self.verbose {
                    self.print("[SUM] (receiver statistics not available)\n");
                }
            }
            _ => {
                if show_sender {
                    self.print(&self.totals_line("[SUM]", d.role, &d.sent, "sender", true));
                } else if self.verbose {
                    self.print("[SUM] (sender statistics not available)\n");
                }
                if show_receiver {
                    self.print(&self.totals_line("[SUM]", d.role, &d.received, "receiver", true));
                } else if self.verbose {
                    self.print("[SUM] (receiver statistics not available)\n");
                }
            }
        }
    }

    fn on_connecting(&mut self, c: &ConnectingInfo) {
        if self.verbose {
            self.print(&format!("Control connection MSS {}\n", c.control_mss));
            if let Some(n) = c.udp_block_note {
                self.print(&format!("Setting UDP block size to {n}\n"));
            }
            self.print(&format!("Time: {}\n", c.timestamp.time));
        }
        self.print(&format!("Connecting to host {}, port {}\n", c.host, c.port));
        if c.direction == Direction::Reverse {
            self.print(&format!("Reverse mode, remote host {} is sending\n", c.host));
        }
        if self.verbose {
            self.print(&format!("      Cookie: {}\n", c.cookie));
            if self.protocol == Protocol::Tcp {
                match c.mss_set {
                    Some(m) => self.print(&format!("      TCP MSS: {m}\n")),
                    None => self.print(&format!("      TCP MSS: {} (default)\n", c.control_mss)),
                }
            }
            if c.target_bitrate > 0 {
                self.print(&format!("      Target Bitrate: {}\n", c.target_bitrate));
            }
        }
    }

    fn on_start(&mut self, s: &StartInfo) {
        self.protocol = s.protocol;
        self.bidir = s.direction == Direction::Bidir;
        self.streams = s.num_streams;
        let (sends, receives) = match (self.side, s.direction) {
            (_, Direction::Bidir | Direction::FullDuplex | Direction::Dual) => (true, true),
            (Side::Client, Direction::Reverse) | (Side::Server, Direction::Forward) => (false, true),
            _ => (true, false),
        };
        self.local_sends = sends;
        self.local_receives = receives;
        self.local_sends_tcp = sends && s.protocol == Protocol::Tcp;
        if self.verbose {
            if self.side == Side::Server {
                self.print(&format!("      Cookie: {}\n", s.cookie));
                if s.protocol == Protocol::Tcp {
                    self.print(&format!("      TCP MSS: {} (default)\n", s.tcp_mss.unwrap_or(0)));
                }
            }
            let end = if s.bytes > 0 {
                format!("{} bytes to send", s.bytes)
            } else if s.blocks > 0 {
                format!("{} blocks to send", s.blocks)
            } else {
                format!("{} second test", s.duration)
            };
            self.print(&format!(
                "Starting Test: protocol: {}, {} streams, {} byte blocks, omitting {} seconds, {}, tos {}\n",
                s.protocol.name(),
                s.num_streams,
                s.blksize,
                s.omit,
                end,
                s.tos
            ));
        }
    }
}

#[derive(Clone, Copy)]
enum HeaderKind {
    Plain,
    Retr,
    RetrCwnd,
    UdpReceiver,
    UdpSender,
}

impl Sink for TextSink {
    fn event(&mut self, ev: &Event) {
        match ev {
            Event::Listening { port, test_no } => {
                self.print(&format!(
                    "{BANNER_RULE}Server listening on {port} (test #{test_no})\n{BANNER_RULE}"
                ));
            }
            Event::Connecting(c) => self.on_connecting(c),
            Event::Accepted { host, port } => {
                if self.verbose {
                    let t = crate::sys::time::epoch_now() as i64;
                    self.print(&format!(
                        "Time: {}\n",
                        crate::sys::time::strftime("%a, %d %b %Y %H:%M:%S GMT", t, true)
                    ));
                }
                self.print(&format!("Accepted connection from {host}, port {port}\n"));
            }
            Event::StreamConnected(c) => self.print(&format!(
                "[{:>3}] local {} port {} connected to {} port {}\n",
                c.socket, c.local_host, c.local_port, c.remote_host, c.remote_port
            )),
            Event::Start(s) => self.on_start(s),
            Event::OmitDone => {}
            Event::Interval(rep) => self.on_interval(rep),
            Event::End(sum) => self.on_end(sum),
            Event::ServerOutput(ServerOutput::Text(t)) => self.print(&format!("\nServer output:\n{t}\n")),
            Event::ServerOutput(ServerOutput::Json(j)) => {
                self.print(&format!("\nServer JSON output:\n{}\n", crate::json::to_formatted(j)))
            }
            Event::Warning(w) => self.out.write_err(&format!("warning: {w}\n")),
            Event::Notice(n) => self.out.write_err(&format!("{}: {n}\n", self.out.program())),
            Event::Error(e) => {
                self.failed = true;
                self.out.write_err(&format!("{}: {}\n", self.out.program(), e.line()));
            }
            Event::Done => {
                if self.side == Side::Client && !self.failed {
                    self.print("\n");
                    self.print("iperf Done.\n");
                }
            }
        }
    }
}

/// The `Starting Test` end clause for a config (used by tests).
pub fn end_clause(end: &EndCondition) -> String {
    match end {
        EndCondition::Time(d) => format!("{} second test", d.as_secs()),
        EndCondition::Bytes(b) => format!("{b} bytes to send"),
        EndCondition::Blocks(b) => format!("{b} blocks to send"),
    }
}
