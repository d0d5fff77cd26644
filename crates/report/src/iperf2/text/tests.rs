use super::*;
use wirespeed_core::config::{Protocol, TestConfig};

fn sink(cfg: &TestConfig, side: Side) -> (Iperf2Text, Arc<Mutex<String>>) {
    let buf = Arc::new(Mutex::new(String::new()));
    (
        Iperf2Text::new(cfg, Output::buffer(buf.clone()), side, header_state()),
        buf,
    )
}

fn line(id: u32, sender: bool, start: f64, end: f64, bytes: u64) -> StreamSample {
    StreamSample {
        id,
        sender,
        start,
        end,
        seconds: end - start,
        bytes,
        bits_per_second: bytes as f64 * 8.0 / (end - start),
        ..StreamSample::default()
    }
}

/// An interval report, or (final) the end of the test with these lines.
fn report(final_report: bool, flows: Vec<StreamSample>, sum: StreamSample) -> Event {
    if final_report {
        Event::End(Box::new(Summary {
            local: LocalTotals {
                streams: flows,
                sum,
                pairs: Vec::new(),
            },
            ..Summary::default()
        }))
    } else {
        Event::Interval(Box::new(IntervalReport {
            streams: flows,
            sum,
            ..IntervalReport::default()
        }))
    }
}

fn relayed(l: StreamSample) -> Event {
    Event::PeerReport(PeerReport::Report(Box::new(l)))
}

fn settings(window: u64) -> Settings {
    Settings {
        protocol: Protocol::Tcp,
        pid: 10275,
        flows: 1,
        block_len: 131072,
        window,
        ..Settings::default()
    }
}

fn listening(window: u64) -> Event {
    Event::Listening(Box::new(Listening {
        port: 15001,
        settings: settings(window),
        ..Listening::default()
    }))
}

fn connecting(host: &str, window: u64) -> Event {
    Event::Connecting(Box::new(Connecting {
        host: host.into(),
        port: 15001,
        settings: settings(window),
        ..Connecting::default()
    }))
}

fn conn(id: u32, local: u16, remote: u16) -> ConnInfo {
    ConnInfo {
        id,
        socket: 4,
        local_host: "127.0.0.1".into(),
        local_port: local,
        remote_host: "127.0.0.1".into(),
        remote_port: remote,
        local_dev: Some("lo".into()),
        tcp_init: Some((320, 32768, 68)),
        ..ConnInfo::default()
    }
}

const GB: u64 = 1 << 30;

#[test]
fn plain_server_matches_the_sample() {
    let mut cfg = TestConfig::default();
    cfg.output.interval = None;
    let (mut s, buf) = sink(&cfg, Side::Server);
    s.event(&listening(131072));
    s.event(&Event::StreamConnected(Box::new(conn(1, 15001, 48824))));
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
    s.event(&connecting("127.0.0.1", 16384));
    let mut c = conn(1, 45656, 15002);
    c.socket = 3;
    c.tcp_init = Some((319, 32741, 55));
    c.connect_ms = Some(1.35);
    s.event(&Event::StreamConnected(Box::new(c)));
    let mut l = line(1, true, 0.0, 1.0, (1.21 * GB as f64) as u64);
    l.extras = Enhanced {
        calls: 9928,
        errors: 0,
        net_power: Some(5333127.4),
        ..Enhanced::default()
    };
    l.retransmits = Some(0);
    l.tcp = Some(TcpSample {
        snd_cwnd: 2174 * 1024,
        rtt: 244,
        rttvar: 245,
        ..TcpSample::default()
    });
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
    a.retransmits = Some(9);
    let mut sum = line(0, true, 0.0, 1.0, (5.17 * GB as f64) as u64);
    sum.extras.calls = 42392;
    sum.retransmits = Some(18);
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
    s.event(&Event::StreamConnected(Box::new(conn(1, 1, 2))));
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
    s.event(&listening(1));
    s.event(&Event::StreamConnected(Box::new(conn(1, 1, 2))));
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

fn udp_line(id: u32, sender: bool, start: f64, end: f64, bytes: u64, u: UdpSample) -> StreamSample {
    let mut l = line(id, sender, start, end, bytes);
    l.udp = Some(u);
    l
}

fn udp_rx(jitter_ms: f64, lost: i64, packets: i64) -> UdpSample {
    UdpSample {
        jitter_ms,
        lost,
        packets,
        ..UdpSample::default()
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
    let sent = UdpSample {
        sent: Some(183),
        ..UdpSample::default()
    };
    let l = udp_line(1, true, 0.0, 2.0193, 182 * 1470, sent);
    s.event(&report(true, vec![l.clone()], l));
    let report = udp_line(1, false, 0.0, 2.0176, 182 * 1470, udp_rx(0.005, 0, 182));
    s.event(&relayed(report));
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
    let u = UdpSample {
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
        UdpSample {
            pps: 852.0,
            ..UdpSample::default()
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
    let u = UdpSample {
        jitter_ms: 1.234,
        lost: 7,
        packets: 1000,
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
        ..UdpSample::default()
    };
    let mut l = udp_line(1, false, 0.0, 2.5, 123_456_789, u);
    l.extras.net_power = Some(9876.54);
    s.event(&relayed(l));
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
fn an_enhanced_client_prints_a_plain_servers_report_in_the_short_layout() {
    // `-u -e` against a server without -e: its report has no latency
    // fields, and 2.1.8's client prints it as a plain one (not zeros,
    // `0 pps` and `NAN`).
    let mut cfg = TestConfig::default();
    cfg.output.enhanced = true;
    cfg.output.interval = None;
    let (mut s, buf) = sink(&cfg, Side::Client);
    let report = udp_line(1, false, 0.0, 1.0208, 93 * 1470, udp_rx(0.005, 0, 93));
    s.event(&relayed(report));
    assert_eq!(
        *buf.lock().unwrap(),
        "[  1] Server Report:
[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams
[  1] 0.0000-1.0208 sec   134 KBytes  1.07 Mbits/sec   0.005 ms 0/93 (0%)
"
    );
}

#[test]
fn hidden_addresses() {
    assert_eq!(hidden("10.1.2.3"), "*.*.*.3");
    assert_eq!(hidden("example.com"), "(**hidden**)");
}

#[test]
fn clock_checks_and_connect_times_print_as_2_1_8() {
    let cfg = TestConfig::default();
    let (mut s, buf) = sink(&cfg, Side::Client);
    let mut c = conn(1, 45656, 15002);
    c.tcp_init = None;
    c.clock = Some(ClockCheck {
        rtt: 2.0,
        send: 1.0,
        back: 1.0,
    });
    s.event(&Event::StreamConnected(Box::new(c)));
    s.event(&Event::ConnectTimes(Box::new(ConnectTimes {
        ms: LatencyStats {
            count: 2,
            mean: 2.0,
            min: 1.0,
            max: 3.0,
            stdev: 1.414,
            ..LatencyStats::default()
        },
        errors: 0,
    })));
    assert_eq!(
        *buf.lock().unwrap(),
        "[  1] local 127.0.0.1 port 45656 connected with 127.0.0.1 port 15002
[  1] Clock sync check (ms): RTT/Half=(2.000/1.000) OWD-send/ack/asym=(1.000/1.000/0.000)
[ CT] final connect times (min/avg/max/stdev) = 1.000/2.000/3.000/1.414 ms (tot/err) = 2/0
"
    );
}
