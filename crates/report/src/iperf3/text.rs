//! iperf3's human-readable output, line for line.
//!
//! Layouts follow iperf3 master's format strings (`iperf_locale.c`); the
//! `docs/protocols.md` (Output: iperf3 text) counts their spaces. Text goes out in
//! the same chunks iperf3 prints, because `-T` and `--timestamps` prefix each
//! chunk rather than each line.

use crate::{Output, Sink};
use wirespeed_core::config::{Direction, Protocol, TestConfig};
use wirespeed_core::events::*;
use wirespeed_core::units::format_iperf3;
use wirespeed_proto::json::format_g;

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
const BANNER_RULE: &str = "-----------------------------------------------------------\n";

/// Prints events as iperf3 does.
pub(crate) struct TextSink {
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
            // Every line carries the title, also in a chunk of several.
            Some(t) => {
                let titled: String = chunk.split_inclusive('\n').map(|l| format!("{t}:  {l}")).collect();
                self.out.write(&titled)
            }
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

    fn stream_interval_line(&self, s: &StreamSample) -> String {
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

    fn sum_interval_line(&self, s: &StreamSample) -> String {
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
            let group: Vec<&StreamSample> = rep.streams.iter().filter(|s| forward(s.role) == want_forward).collect();
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
        if let Some(l) = &rep.latency {
            self.print(&crate::latency::interval_line(rep.sum.start, rep.sum.end, l));
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
        // Once: this host received with ECN in play, and the sending
        // peer's results held no view of its kernel.
        if sum.protocol == Protocol::Tcp
            && sum
                .streams
                .iter()
                .any(|s| !s.local_sender && s.peer_known && s.tcp_ecn.is_some() && s.peer_tcp_ecn.is_none())
        {
            self.print(&format!("{}\n", crate::ecn::PEER_SENDER_UNKNOWN));
        }
        if let Some(l) = &sum.latency {
            self.print(&crate::latency::end_lines(l));
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
            // A QUIC test's controller (`-C`), as this end ran it (both
            // ends run the test's).
            if let Some(q) = sum.quic.as_ref().filter(|q| !q.congestion.is_empty()) {
                self.print(&format!("quic_congestion {}\n", q.congestion));
            }
            if let Some(a) = &sum.advice {
                for line in &a.text {
                    self.print(&format!("{line}\n"));
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
                        ecn: None,
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
                // iperf3 cannot tell duplicates from reordering; wirespeed
                // counts them apart and says so when there are any.
                if u.duplicates > 0 && !s.local_sender {
                    self.print(&format!(
                        "[SUM]{} {:4.1}-{:4.1} sec  {} datagrams received more than once\n",
                        self.role(s.role),
                        s.receiver.start,
                        s.receiver.end,
                        u.duplicates
                    ));
                }
                // wirespeed's: what the path did to the ECN field.
                if let Some(e) = &u.ecn {
                    self.print(&format!("{id} {}\n", crate::ecn::line(e)));
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
                // wirespeed's: ECN as this host's kernel saw the connection,
                // and, where the peer sent, as its kernel did (a wirespeed
                // peer says so in its results).
                if let Some(e) = &s.tcp_ecn {
                    self.print(&format!("{id} {}\n", crate::ecn::tcp_line(e, s.local_sender)));
                }
                if !s.local_sender
                    && let Some(e) = &s.peer_tcp_ecn
                {
                    self.print(&format!("{id} {}\n", crate::ecn::peer_sender_line(e)));
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
                        ecn: None,
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
                if let Some(e) = &u.ecn {
                    self.print(&format!("[SUM] {}\n", crate::ecn::line(e)));
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
                // wirespeed's: the streams' ECN lines added up (the
                // sending kernels', and this host's as a receiver).
                if let Some(e) = &d.tcp_ecn_sent {
                    self.print(&format!("[SUM] {}\n", crate::ecn::tcp_sum_line(e, true)));
                }
                if !local_sender && let Some(e) = &d.tcp_ecn_received {
                    self.print(&format!("[SUM] {}\n", crate::ecn::tcp_sum_line(e, false)));
                }
            }
        }
    }

    fn on_connecting(&mut self, conn: &Connecting) {
        let Some(c) = &conn.control else { return };
        if self.verbose {
            self.print(&format!("Control connection MSS {}\n", c.control_mss));
            if let Some(n) = c.udp_block_note {
                self.print(&format!("Setting UDP block size to {n}\n"));
            }
            self.print(&format!("Time: {}\n", c.timestamp.time));
        }
        self.print(&format!("Connecting to host {}, port {}\n", conn.host, conn.port));
        if conn.direction == Direction::Reverse {
            self.print(&format!("Reverse mode, remote host {} is sending\n", conn.host));
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
            if let Some(pps) = c.target_pps {
                self.print(&format!("      Target Packet Rate: {pps} pps\n"));
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
            Event::Listening(l) => {
                self.print(&format!(
                    "{BANNER_RULE}Server listening on {} (test #{})\n{BANNER_RULE}",
                    l.port, l.test_no
                ));
            }
            Event::Connecting(c) => self.on_connecting(c),
            Event::Accepted { host, port } => {
                if self.verbose {
                    let t = wirespeed_sys::time::epoch_now() as i64;
                    self.print(&format!(
                        "Time: {}\n",
                        wirespeed_sys::time::strftime("%a, %d %b %Y %H:%M:%S GMT", t, true)
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
            Event::ConnectTimes(_) | Event::PeerReport(_) | Event::Sample(_) => {}
            Event::Refused(r) if r.policy => self.print(&format!(
                "Refused connection from {}, port {} (access policy)\n",
                r.remote.0, r.remote.1
            )),
            Event::Refused(_) => {}
            Event::Interval(rep) => self.on_interval(rep),
            Event::End(sum) => self.on_end(sum),
            Event::ServerOutput(ServerOutput::Text(t)) => self.print(&format!("\nServer output:\n{t}\n")),
            Event::ServerOutput(ServerOutput::Json(j)) => self.print(&format!(
                "\nServer JSON output:\n{}\n",
                wirespeed_proto::json::to_formatted(j)
            )),
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
            // A mode's text is its own sink's (`report::mode`).
            Event::Mode(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use wirespeed_core::config::TestConfig;

    fn sink(cfg: &TestConfig, side: Side) -> (TextSink, Arc<Mutex<String>>) {
        let buf = Arc::new(Mutex::new(String::new()));
        (TextSink::new(cfg, Output::buffer(buf.clone()), side), buf)
    }

    fn start(direction: Direction, protocol: Protocol, streams: u32) -> StartInfo {
        StartInfo {
            connected: vec![],
            version: "v".into(),
            system_info: "s".into(),
            timestamp: Timestamp {
                time: "t".into(),
                timesecs: 0,
                timemillisecs: 0,
            },
            connecting_to: None,
            accepted_connection: None,
            cookie: "c".into(),
            tcp_mss: None,
            tcp_mss_default: None,
            target_bitrate: 0,
            fq_rate: 0,
            sock_bufsize: 0,
            sndbuf_actual: 0,
            rcvbuf_actual: 0,
            protocol,
            num_streams: streams,
            blksize: 131072,
            omit: 0,
            duration: 2,
            bytes: 0,
            blocks: 0,
            direction,
            tos: 0,
            interval: 1.0,
            gso: false,
            target_pps: None,
            title: None,
            extra_data: None,
        }
    }

    fn si(socket: i32, start: f64, end: f64, bytes: u64, bps: f64) -> StreamSample {
        StreamSample {
            socket,
            id: 1,
            sender: true,
            start,
            end,
            seconds: end - start,
            bytes,
            bits_per_second: bps,
            ..StreamSample::default()
        }
    }

    // Lines below are verbatim from iperf3 3.12 runs on this machine.
    #[test]
    fn tcp_sender_interval_line() {
        let cfg = TestConfig::default();
        let (mut s, buf) = sink(&cfg, Side::Client);
        s.event(&Event::Start(Box::new(start(Direction::Forward, Protocol::Tcp, 1))));
        let mut st = si(5, 0.0, 1.0, 3_618_701_312, 28.9e9);
        st.tcp = Some(TcpSample {
            retransmits: 6,
            snd_cwnd: 1023 * 1024,
            ..TcpSample::default()
        });
        let r = IntervalReport {
            sum: StreamSample {
                sender: true,
                start: 0.0,
                end: 1.0,
                seconds: 1.0,
                retransmits: Some(6),
                ..StreamSample::default()
            },
            streams: vec![st],
            sum_bidir_reverse: None,
            pairs: Vec::new(),
            latency: None,
        };
        s.event(&Event::Interval(Box::new(r)));
        let out = buf.lock().unwrap().clone();
        assert_eq!(
            out,
            "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n\
             [  5]   0.00-1.00   sec  3.37 GBytes  28.9 Gbits/sec    6   1023 KBytes       \n"
        );
    }

    #[test]
    fn receiver_interval_and_summary_lines() {
        let cfg = TestConfig::default();
        let (mut s, buf) = sink(&cfg, Side::Server);
        s.event(&Event::Start(Box::new(start(Direction::Forward, Protocol::Tcp, 1))));
        let mut st = si(5, 2.0, 2.0, 512 * 1024, 20.6e9);
        st.sender = false;
        let sum = StreamSample {
            sender: false,
            start: 2.0,
            end: 2.0,
            seconds: 0.0,
            retransmits: None,
            ..StreamSample::default()
        };
        s.event(&Event::Interval(Box::new(IntervalReport {
            streams: vec![st],
            sum,
            sum_bidir_reverse: None,
            pairs: Vec::new(),
            latency: None,
        })));
        let out = buf.lock().unwrap().clone();
        assert!(
            out.ends_with("[  5]   2.00-2.00   sec   512 KBytes  20.6 Gbits/sec                  \n"),
            "{out}"
        );
    }

    #[test]
    fn udp_sender_lines_plain_and_bidir() {
        let cfg = TestConfig::default();
        let (mut s, _) = sink(&cfg, Side::Client);
        s.event(&Event::Start(Box::new(start(Direction::Forward, Protocol::Udp, 1))));
        let mut st = si(5, 0.0, 1.0, 1_277_952, 10.2e6);
        st.udp = Some(UdpSample {
            packets: 39,
            ..UdpSample::default()
        });
        assert_eq!(
            s.stream_interval_line(&st),
            "[  5]   0.00-1.00   sec  1.22 MBytes  10.2 Mbits/sec  39  \n"
        );
        let (mut s, _) = sink(&cfg, Side::Client);
        s.event(&Event::Start(Box::new(start(Direction::Bidir, Protocol::Udp, 2))));
        st.role = Some(RoleTag::TxC);
        assert_eq!(
            s.stream_interval_line(&st),
            "[  5][TX-C]   0.00-1.00   sec  1.22 MBytes  10.2 Mbits/sec            39  \n"
        );
    }

    #[test]
    fn udp_receiver_line() {
        let cfg = TestConfig::default();
        let (mut s, _) = sink(&cfg, Side::Client);
        s.event(&Event::Start(Box::new(start(Direction::Bidir, Protocol::Udp, 2))));
        let mut st = si(9, 0.0, 1.0, 1_277_952, 10.2e6);
        st.sender = false;
        st.role = Some(RoleTag::RxC);
        st.udp = Some(UdpSample {
            packets: 39,
            lost: 0,
            jitter_ms: 0.015,
            lost_percent: 0.0,
            ..UdpSample::default()
        });
        assert_eq!(
            s.stream_interval_line(&st),
            "[  9][RX-C]   0.00-1.00   sec  1.22 MBytes  10.2 Mbits/sec  0.015 ms  0/39 (0%)  \n"
        );
    }

    #[test]
    fn summary_sender_receiver_and_sum_lines() {
        let cfg = TestConfig {
            params: wirespeed_core::config::TestParams {
                streams: 2,
                ..Default::default()
            },
            ..TestConfig::default()
        };
        let (mut s, buf) = sink(&cfg, Side::Client);
        s.event(&Event::Start(Box::new(start(Direction::Forward, Protocol::Tcp, 2))));
        let tot = |bytes: u64, bps: f64, retr: Option<i64>| Totals {
            start: 0.0,
            end: 0.03,
            seconds: 0.03,
            bytes,
            bits_per_second: bps,
            retransmits: retr,
            sender: true,
            omitted_bytes: None,
        };
        let st = |sock| StreamSummary {
            socket: sock,
            id: 1,
            role: None,
            local_sender: true,
            sender: tot(52_428_800, 15.8e9, Some(0)),
            receiver: tot(52_428_800, 15.7e9, None),
            tcp: None,
            udp: None,
            tcp_ecn: None,
            peer_tcp_ecn: None,
            peer_known: true,
            connect_back: false,
        };
        let sum = Summary {
            protocol: Protocol::Tcp,
            streams: vec![st(5), st(7)],
            forward: DirectionSums {
                role: None,
                sent: tot(104_857_600, 31.5e9, Some(0)),
                received: tot(104_857_600, 31.5e9, None),
                udp: None,
                tcp_ecn_sent: None,
                tcp_ecn_received: None,
            },
            reverse: None,
            cpu: CpuUtil::default(),
            sender_tcp_congestion: None,
            receiver_tcp_congestion: None,
            has_retransmits: true,
            local_sends: true,
            local_receives: false,
            advice: None,
            local: LocalTotals::default(),
            latency: None,
            quic: None,
        };
        s.event(&Event::End(Box::new(sum)));
        let out = buf.lock().unwrap().clone();
        let expect = "- - - - - - - - - - - - - - - - - - - - - - - - -\n\
[ ID] Interval           Transfer     Bitrate         Retr\n\
[  5]   0.00-0.03   sec  50.0 MBytes  15.8 Gbits/sec    0            sender\n\
[  5]   0.00-0.03   sec  50.0 MBytes  15.7 Gbits/sec                  receiver\n\
[  7]   0.00-0.03   sec  50.0 MBytes  15.8 Gbits/sec    0            sender\n\
[  7]   0.00-0.03   sec  50.0 MBytes  15.7 Gbits/sec                  receiver\n\
[SUM]   0.00-0.03   sec   100 MBytes  31.5 Gbits/sec    0             sender\n\
[SUM]   0.00-0.03   sec   100 MBytes  31.5 Gbits/sec                  receiver\n";
        // iperf3 3.18+ puts 12 spaces before a stream's "sender" (3.12 had 13).
        assert_eq!(out, expect);
    }

    #[test]
    fn title_prefixes_each_chunk_and_format_sets_bitrate_units() {
        let cfg = TestConfig {
            output: wirespeed_core::config::OutputOptions {
                title: Some("tt".into()),
                format: 'm',
                ..Default::default()
            },
            ..TestConfig::default()
        };
        let (mut s, buf) = sink(&cfg, Side::Client);
        s.event(&Event::Start(Box::new(start(Direction::Forward, Protocol::Tcp, 1))));
        let mut st = si(5, 0.0, 1.0, 3_618_701_312, 28.9e9);
        st.sender = false;
        let sum = StreamSample {
            sender: false,
            start: 0.0,
            end: 1.0,
            seconds: 1.0,
            retransmits: None,
            ..StreamSample::default()
        };
        s.event(&Event::Interval(Box::new(IntervalReport {
            streams: vec![st],
            sum,
            sum_bidir_reverse: None,
            pairs: Vec::new(),
            latency: None,
        })));
        s.event(&Event::Done);
        let out = buf.lock().unwrap().clone();
        assert!(
            out.contains("tt:  [  5]   0.00-1.00   sec  3.37 GBytes  28900 Mbits/sec"),
            "{out}"
        );
        assert!(out.ends_with("tt:  \ntt:  iperf Done.\n"), "{out}");
        // A chunk of several lines (the latency's end) titles each.
        let (mut s, buf) = sink(&cfg, Side::Client);
        s.print("[LAT] idle ...\n[LAT] loaded ...\n");
        assert_eq!(*buf.lock().unwrap(), "tt:  [LAT] idle ...\ntt:  [LAT] loaded ...\n");
    }
}
