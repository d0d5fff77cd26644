//! wirespeed client against wirespeed server, in one process, checking the
//! numbers the events carry (not the text).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use wirespeed::cli::iperf3::{Command, parse_args};
use wirespeed::config::{Role, TestConfig};
use wirespeed::events::{Event, Summary};
use wirespeed::report::{Output, Recorder, Reporter};
use wirespeed::server::Server;

/// Runs `args` (iperf3 client options) against an in-process server and
/// returns every event the client emitted.
fn run(args: &str) -> Vec<Event> {
    let mut scfg = TestConfig {
        role: Role::Server,
        port: 0,
        ..TestConfig::default()
    };
    scfg.net.bind = Some("127.0.0.1".into());
    let server = Server::bind(&scfg, Output::discard(), wirespeed::dialect::wings()).unwrap();
    let port = server.port();
    let stop = Arc::new(AtomicUsize::new(0));
    let s2 = stop.clone();
    let t = std::thread::spawn(move || server.run(s2));
    let argv: Vec<String> = format!("-c 127.0.0.1 -p {port} {args}")
        .split_whitespace()
        .map(String::from)
        .collect();
    let Command::Run(cfg, _) = parse_args(&argv).unwrap() else {
        panic!()
    };
    let rec = Recorder::default();
    let mut reporter = Reporter::new();
    reporter.add(Box::new(rec.clone()));
    let sig = Arc::new(AtomicUsize::new(0));
    let r = wirespeed::dialect::iperf3::client::run(&cfg, "127.0.0.1", port, &mut reporter, &sig);
    stop.store(15, Relaxed);
    t.join().unwrap().unwrap();
    r.unwrap_or_else(|e| panic!("client failed: {}", e.line()));
    rec.events.lock().unwrap().clone()
}

fn summary(events: &[Event]) -> &Summary {
    events
        .iter()
        .find_map(|e| if let Event::End(s) = e { Some(&**s) } else { None })
        .expect("no summary")
}

fn intervals(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e, Event::Interval(_))).count()
}

#[test]
fn forward_tcp_reports_intervals_and_agreeing_totals() {
    let ev = run("-t 2");
    let s = summary(&ev);
    assert!(intervals(&ev) >= 2);
    let st = &s.streams[0];
    assert!(st.sender.bytes > 0);
    // Both ends are wirespeed: the receiver drained everything that was sent.
    assert_eq!(st.sender.bytes, st.receiver.bytes);
    assert!((st.sender.end - 2.0).abs() < 0.3, "{}", st.sender.end);
    assert!(s.local_sends && !s.local_receives);
}

#[test]
fn byte_count_is_exact_on_both_ends() {
    let ev = run("-n 10000007 -P 3");
    let s = summary(&ev);
    assert_eq!(s.forward.sent.bytes, 10_000_007);
    assert_eq!(s.forward.received.bytes, 10_000_007);
    assert_eq!(s.streams.len(), 3);
    for st in &s.streams {
        assert_eq!(st.sender.bytes, st.receiver.bytes);
    }
}

#[test]
fn block_count_is_exact_on_both_ends() {
    let ev = run("-k 77 -l 64K");
    let s = summary(&ev);
    assert_eq!(s.forward.sent.bytes, 77 * 65536);
    assert_eq!(s.forward.received.bytes, 77 * 65536);
}

#[test]
fn reverse_byte_count_is_exact() {
    let ev = run("-R -n 5M -P 2");
    let s = summary(&ev);
    assert_eq!(s.forward.sent.bytes, 5 << 20);
    assert_eq!(s.forward.received.bytes, 5 << 20);
    assert!(!s.local_sends && s.local_receives);
}

#[test]
fn reverse_timed_totals_agree() {
    let ev = run("-R -t 1");
    let s = summary(&ev);
    let st = &s.streams[0];
    assert!(!st.local_sender);
    assert_eq!(st.sender.bytes, st.receiver.bytes);
}

#[test]
fn bidir_has_both_directions_and_role_tags() {
    let ev = run("--bidir -t 1 -P 2");
    let s = summary(&ev);
    assert_eq!(s.streams.len(), 4);
    let rev = s.reverse.as_ref().expect("reverse sums");
    assert!(rev.sent.bytes > 0 && s.forward.sent.bytes > 0);
    assert_eq!(rev.sent.bytes, rev.received.bytes);
    assert_eq!(s.forward.sent.bytes, s.forward.received.bytes);
    let ids: Vec<u32> = s.streams.iter().map(|x| x.id).collect();
    assert_eq!(ids, vec![1, 3, 4, 5]);
}

#[test]
fn four_streams_sum_to_the_total() {
    let ev = run("-P 4 -t 1");
    let s = summary(&ev);
    let total: u64 = s.streams.iter().map(|x| x.sender.bytes).sum();
    assert_eq!(total, s.forward.sent.bytes);
    for e in &ev {
        if let Event::Interval(r) = e {
            let sum: u64 = r.streams.iter().map(|x| x.bytes).sum();
            assert_eq!(sum, r.sum.bytes);
        }
    }
}

#[test]
fn omitted_intervals_are_marked_and_excluded() {
    let ev = run("-O 1 -t 1");
    let ivs: Vec<_> = ev
        .iter()
        .filter_map(|e| if let Event::Interval(r) = e { Some(r) } else { None })
        .collect();
    assert!(ivs[0].streams[0].omitted);
    assert!(!ivs.last().unwrap().streams[0].omitted);
    let counted: u64 = ivs.iter().filter(|r| !r.sum.omitted).map(|r| r.sum.bytes).sum();
    let s = summary(&ev);
    assert_eq!(counted, s.forward.sent.bytes);
    let d = s.streams[0].sender.end;
    assert!((d - 1.0).abs() < 0.3, "post-omit duration {d}");
}

/// With -O each end leaves out its own first seconds, so the post-omit
/// totals differ by the bytes between the two ends at their boundaries;
/// each side's omitted bytes (a wirespeed peer's come in the results)
/// close the gap to the byte: sent + omitted = received + omitted.
#[test]
fn omitted_bytes_reconcile_the_totals_on_each_side_and_direction() {
    for args in ["-O 1 -t 1", "-O 1 -t 1 -R -P 2", "-O 1 -t 1 --bidir"] {
        let ev = run(args);
        let s = summary(&ev);
        let dirs = std::iter::once(&s.forward).chain(s.reverse.as_ref());
        for d in dirs {
            let (sent, recv) = (&d.sent, &d.received);
            let so = sent
                .omitted_bytes
                .unwrap_or_else(|| panic!("{args}: no sender omitted_bytes"));
            let ro = recv
                .omitted_bytes
                .unwrap_or_else(|| panic!("{args}: no receiver omitted_bytes"));
            assert!(so > 0 && ro > 0, "{args}: {so} {ro}");
            assert_eq!(sent.bytes + so, recv.bytes + ro, "{args}: {d:?}");
        }
        for st in &s.streams {
            let total = |t: &wirespeed::events::Totals| t.bytes + t.omitted_bytes.unwrap();
            assert_eq!(total(&st.sender), total(&st.receiver), "{args}: stream {}", st.id);
        }
    }
    // Without -O nothing is omitted, and nothing is said.
    let s = summary(&run("-t 1")).clone();
    assert_eq!(s.forward.sent.omitted_bytes, None);
    assert_eq!(s.forward.received.omitted_bytes, None);
}

#[test]
fn rate_limited_tcp_stays_near_target() {
    let ev = run("-b 40M -t 2");
    let s = summary(&ev);
    let bps = s.forward.sent.bits_per_second;
    // A functional check of the pacer (the accuracy goal lives in bench/).
    assert!((bps / 40e6 - 1.0).abs() < 0.10, "{bps}");
}
