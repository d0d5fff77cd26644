//! iperf 2.2.1's UDP L4S exchange (`--udp-l4s`) over sockets: a receiver
//! acks what arrived, once per batch of datagrams read, with its counts
//! since the flow began; a sender paces by what the acks say
//! (`wirespeed_proto::iperf2::l4s`).

use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::udp::Iperf2Format;
use wirespeed_core::clock::mono_ns;
use wirespeed_core::engine::udp::{SendEnd, UdpOptions, UdpStart, spawn_udp_sender};
use wirespeed_core::engine::{StreamHandle, StreamHook, StreamTask};
use wirespeed_core::error::{Code, Error};
use wirespeed_core::stats::L4sLog;
use wirespeed_proto::iperf2::DatagramHeader;
use wirespeed_proto::iperf2::l4s::{Ack, FORWARD_LEN, Forward, Prague, Receiver};

/// Our clock as the exchange carries it: microseconds, 32 bits, wrapping.
pub(crate) fn now_us() -> u32 {
    (mono_ns() / 1000) as u32
}

/// A receiver's side: counts each L4S datagram and acks after each batch.
pub(crate) struct L4sAcker {
    sock: UdpSocket,
    rx: Receiver,
    /// Datagrams counted since the last ack.
    unacked: bool,
    /// The acks sent, for the reports.
    log: Arc<L4sLog>,
}

impl L4sAcker {
    /// Acks go out on `sock` (connected to the sender); `log` keeps what
    /// they said.
    pub fn new(sock: UdpSocket, log: Arc<L4sLog>) -> L4sAcker {
        L4sAcker {
            sock,
            rx: Receiver::default(),
            unacked: false,
            log,
        }
    }

    /// Counts a datagram that arrived with TOS byte `tos`. The sender's
    /// FIN (a negative sequence number) is not an L4S datagram: it is
    /// neither counted nor acked, so what the sender reads after its FIN is
    /// the server's report.
    pub fn on_datagram(&mut self, d: &[u8], tos: Option<u8>) {
        if DatagramHeader::read(d, true).is_none_or(|h| h.is_fin()) {
            return;
        }
        if let Ok(f) = Forward::decode(d) {
            self.rx.on_datagram(&f, tos, now_us());
            self.unacked = true;
        }
    }

    /// Sends the ack for what arrived since the last one.
    pub fn ack(&mut self) {
        if std::mem::take(&mut self.unacked) {
            // A lost ack is made good by the next: the counts are cumulative.
            let a = self.rx.ack(now_us());
            if self.sock.send(&a.encode()).is_ok() {
                self.log.on_ack(a.received, a.ce, a.lost, a.ecn_error);
            }
        }
    }
}

/// A `--udp-l4s` sender: iperf 2 datagrams of `-l` bytes carrying the L4S
/// fields, ECT(1) (Not-ECT once the receiver flags the field), paced at
/// the rate [`Prague`] sets from the acks, with no more datagrams
/// unacked than its window.
#[derive(Clone)]
pub(crate) struct L4sSender {
    pub fmt: Iperf2Format,
    /// One datagram, settings included.
    pub template: Vec<u8>,
    /// The ceiling, bytes/s (`-b`, as 2.2.1 caps its sender by it).
    pub max_rate: f64,
    /// The TOS byte's DSCP bits.
    pub dscp: u8,
    /// What the acks said, for the reports.
    pub log: Arc<L4sLog>,
}

/// 2.2.1's floor and first rate (100 kbit/s), bytes/s.
const MIN_RATE: f64 = 12_500.0;
/// How long a sender with a full window waits for an ack before it takes
/// the outstanding datagrams as gone and starts again from the floor
/// (2.2.1: a second).
const ACK_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest sleep between looks at the socket for acks.
const LOOK: Duration = Duration::from_micros(500);

impl L4sSender {
    fn set_ecn(&self, sock: &UdpSocket, ecn: u8) {
        let tos = u32::from((self.dscp & !3) | ecn);
        let r = SockRef::from(sock);
        if sock.local_addr().is_ok_and(|a| a.is_ipv6()) {
            let _ = wirespeed_sys::socket::set_tclass(&r, tos);
        }
        let _ = r.set_tos_v4(tos);
    }

    /// Takes every ack waiting on the (non-blocking) socket.
    fn take_acks(&self, sock: &UdpSocket, cc: &mut Prague, buf: &mut [u8]) -> bool {
        let mut got = false;
        while let Ok(n) = sock.recv(buf) {
            if let Ok(a) = Ack::decode(&buf[..n])
                && cc.on_ack(&a, now_us())
            {
                got = true;
                self.log.on_ack(a.received, a.ce, a.lost, a.ecn_error);
                self.log.on_controller(cc.rate(), cc.alpha());
            }
        }
        got
    }

    fn run(&self, sock: &UdpSocket, task: &StreamTask, opts: &UdpOptions) -> Result<SendEnd, Error> {
        let mut d = self.template.clone();
        d.resize(task.block_len.max(FORWARD_LEN), 0);
        let len = d.len();
        sock.set_nonblocking(true)
            .map_err(|e| Error::io(Code::INITSTREAM, &e))?;
        let res = self.send(sock, task, opts, &mut d, len);
        // The FIN exchange after the test reads this socket blocking.
        let _ = sock.set_nonblocking(false);
        res
    }

    fn send(
        &self,
        sock: &UdpSocket,
        task: &StreamTask,
        opts: &UdpOptions,
        d: &mut [u8],
        len: usize,
    ) -> Result<SendEnd, Error> {
        let _ = wirespeed_sys::udp::set_thread_timer_slack(1_000);
        let mut cc = Prague::new(len, MIN_RATE, MIN_RATE, self.max_rate, now_us());
        let mut ecn = cc.ecn();
        self.set_ecn(sock, ecn);
        let (control, c) = (&task.control, &task.counters);
        let mut ackbuf = [0u8; 2048];
        let (mut seq, mut l4s_seq) = (1u64, 0u32);
        // Datagrams given up on after a silence (no longer in flight).
        let mut written_off = 0u32;
        let mut next = Instant::now();
        let mut last_ack = Instant::now();
        let mut last_send = 0u64;
        loop {
            if control.stop.load(Relaxed) {
                return Ok((None, last_send));
            }
            let now = Instant::now();
            if let Some(u) = opts.until
                && now >= u
            {
                return Ok((Some(u), last_send));
            }
            if self.take_acks(sock, &mut cc, &mut ackbuf) {
                last_ack = now;
            }
            if cc.ecn() != ecn {
                ecn = cc.ecn();
                self.set_ecn(sock, ecn);
            }
            let a = cc.acked();
            let in_flight = l4s_seq
                .wrapping_sub(a.received)
                .wrapping_sub(a.lost)
                .saturating_sub(written_off);
            if in_flight >= cc.window_packets() {
                if now.duration_since(last_ack) >= ACK_TIMEOUT {
                    // Nothing came back for a second: start again.
                    cc.on_timeout();
                    written_off = l4s_seq.wrapping_sub(a.received).wrapping_sub(a.lost);
                    last_ack = now;
                    next = now;
                }
                std::thread::sleep(LOOK / 2);
                continue;
            }
            if next > now {
                std::thread::sleep((next - now).min(LOOK));
                continue;
            }
            // A burst of what 250 µs at the rate carries, within the window.
            let rate = cc.rate();
            let burst = ((rate * 250e-6 / len as f64) as u32).clamp(1, cc.window_packets() - in_flight);
            for _ in 0..burst {
                if let Some(b) = &task.budget
                    && b.claim_datagrams(len, 1) == 0
                {
                    return Ok((None, last_send));
                }
                l4s_seq = l4s_seq.wrapping_add(1);
                let a = cc.acked();
                self.fmt.stamp_now(d, seq as i64);
                let f = Forward {
                    sender_ts: now_us(),
                    // The receiver's clock, advanced by how long we held it.
                    echoed_ts: if a.rx_ts == 0 {
                        0
                    } else {
                        a.rx_ts.wrapping_add(elapsed_us(last_ack))
                    },
                    seqno: l4s_seq,
                };
                f.stamp(d).map_err(|e| Error::msg(Code::STREAMWRITE, e.to_string()))?;
                match sock.send(d) {
                    Ok(n) if n > 0 => {
                        seq += 1;
                        last_send = control.now_ns();
                        c.bytes.fetch_add(n as u64, Relaxed);
                        c.blocks.fetch_add(1, Relaxed);
                        c.packets.fetch_add(1, Relaxed);
                    }
                    // A full buffer or a refusal: the datagram is lost.
                    _ => {
                        c.errors.fetch_add(1, Relaxed);
                    }
                }
            }
            next = next.max(now.checked_sub(LOOK).unwrap_or(now))
                + Duration::from_secs_f64(f64::from(burst) * len as f64 / rate);
        }
    }
}

fn elapsed_us(since: Instant) -> u32 {
    since.elapsed().as_micros() as u32
}

impl UdpStart for L4sSender {
    fn start(
        &self,
        sock: UdpSocket,
        task: StreamTask,
        opts: UdpOptions,
        _hook: Option<Box<dyn StreamHook>>,
    ) -> Result<StreamHandle, Error> {
        let me = self.clone();
        spawn_udp_sender(sock, task, opts, move |s, t, o| me.run(s, t, o))
    }
}

/// The line a sender's acks leave at the end: what the receiver counted,
/// or (none came) that the server does not speak L4S.
pub(crate) fn say(id: u32, log: &L4sLog, reporter: &mut wirespeed_report::Reporter) {
    use wirespeed_core::events::Event;
    let now = log.sample(true);
    let (acks, Some(last)) = (now.acks, now.last) else {
        reporter.emit(Event::Warning(format!(
            "[{id:>3}] WARNING: no L4S acks came back: the server does not answer --udp-l4s (iperf 2.2.1 built with --enable-udp-l4s, or wirespeed, does); the flow stayed near its floor rate"
        )));
        return;
    };
    let (rx, ce, lost) = (last.received, last.ce, last.lost);
    let pct = if rx > 0 { 100.0 * ce as f64 / rx as f64 } else { 0.0 };
    let mut s = format!("[{id:>3}] L4S acks {acks}: received {rx}, CE {ce} ({pct:.2}%), lost {lost}");
    if now.ecn_error {
        s.push_str("; the ECN field arrived neither ECT(1) nor CE (bleached or remarked): sent Not-ECT since");
    }
    reporter.emit(Event::Notice(s));
}
