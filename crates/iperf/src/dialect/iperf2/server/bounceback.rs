//! The server side of `--bounceback` (`docs/protocols.md`, iperf 2: bounceback): a
//! connection whose first word opens a bounceback test becomes one echo
//! stream, run through the one test loop like any flow (the client side
//! is a stream kind of the iperf 2 client; both loops are in
//! `engine::bounceback`).

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use socket2::SockRef;

use crate::dialect::iperf2::bounceback::EchoSpec;
use crate::dialect::iperf2::client::bb_mode;
use crate::dialect::iperf2::conn_line;
use crate::dialect::iperf2::runner::{Flow, RunOpts, run_flows};
use crate::server::{Running, ServerCtx};
use wirespeed_core::engine::StreamKind;
use wirespeed_core::engine::{DataSock, DataStream, StreamExtras};
use wirespeed_core::events::{Event, Side, StartInfo};
use wirespeed_core::stats::{BouncebackCounters, StreamMeta, StreamRole};
use wirespeed_proto::iperf2::bounceback::{
    BB_CLOCKSYNCED, BB_HEADER_LEN, BB_QUICKACK, BB_TOS, BbHeader, LATENCY_PROBE_MARK, PreviousRtt,
};

/// How long the rest of the first header may take once it has begun.
const MESSAGE_WAIT: Duration = Duration::from_secs(4);

/// Reads into `prefix` until it holds `want` bytes, by `deadline`.
fn fill(sock: &TcpStream, prefix: &mut Vec<u8>, want: usize, deadline: Instant) -> Option<()> {
    let start = prefix.len();
    if start >= want {
        return Some(());
    }
    prefix.resize(want, 0);
    let ok = crate::dialect::iperf2::bounceback::read_by(sock, &mut prefix[start..], deadline, &AtomicBool::new(false));
    ok.then_some(())
}

/// Reads the rest of the first message's header (and the whole message
/// when it is as small as a probe, to see its mark); `None` if it does not
/// come in time or is not a bounceback header.
fn first_header(sock: &TcpStream, mut prefix: Vec<u8>) -> Option<(BbHeader, Vec<u8>)> {
    let deadline = Instant::now() + MESSAGE_WAIT;
    fill(sock, &mut prefix, BB_HEADER_LEN, deadline)?;
    let h = BbHeader::decode(&prefix).ok()?;
    let size = h.size as usize;
    // More than one message's worth before the first reply: not a client
    // that waits for its echoes.
    if prefix.len() > size {
        return None;
    }
    if size <= PROBE_MAX {
        fill(sock, &mut prefix, size, deadline)?;
    }
    Some((h, prefix))
}

/// The largest first message read whole before echoing.
const PROBE_MAX: usize = 256;

/// A `--latency` client's probe connection: echoed, not reported.
fn is_latency_probe(first: &[u8]) -> bool {
    first
        .get(BB_HEADER_LEN..)
        .is_some_and(|p| p.starts_with(LATENCY_PROBE_MARK))
}

/// With `--metrics`, a probe connection's messages feed the round-trip
/// histogram with the round trips they report.
fn probe_metrics(ctx: &ServerCtx, probes: bool) -> Option<crate::dialect::iperf2::bounceback::MessageHook> {
    let m = ctx.metrics.get().filter(|_| probes)?.clone();
    Some(Arc::new(move |msg: &[u8]| {
        if let Some(p) = PreviousRtt::get(msg) {
            m.latency_probe(p.loaded, f64::from(p.micros) / 1e6);
        }
    }))
}

/// Serves one bounceback connection; `prefix` holds the bytes already
/// read (at least the first word). Returns when the client closes, goes
/// silent, or sends what is not a bounceback message.
pub(super) fn serve(ctx: &ServerCtx, sock: TcpStream, peer: SocketAddr, prefix: Vec<u8>) {
    let Ok(local) = sock.local_addr() else { return };
    let Some((first, prefix)) = first_header(&sock, prefix) else {
        ctx.refused(wirespeed_report::metrics::Refusal::Unrecognized);
        return;
    };
    let _ = sock.set_read_timeout(None);
    if first.bbflags & BB_TOS != 0 {
        // The client's -S, for the replies too.
        let tos = (first.tos & 0xff) as u32;
        let r = SockRef::from(&sock);
        let _ = if peer.is_ipv4() {
            r.set_tos_v4(tos)
        } else {
            wirespeed_sys::socket::set_tclass(&r, tos)
        };
    }
    let id = crate::dialect::iperf2::next_id();
    let mut line = conn_line(id, &sock, local, peer);
    line.mode = Some(bb_mode(
        first.bbflags & BB_QUICKACK != 0,
        first.size,
        first.hold_us,
        first.bbflags & BB_CLOCKSYNCED != 0,
    ));
    if !ctx.has_echo_room() {
        crate::dialect::iperf2::server::groups::refuse(ctx, local, peer, "server is busy");
        ctx.refused(wirespeed_report::metrics::Refusal::Busy);
        return;
    }
    let _running = Running::new(&ctx.echoes);
    let cfg = &ctx.flow_cfg;
    // A --latency client's probes belong to its test: echoed quietly, not
    // a report (or a JSON document) of their own.
    let probes = is_latency_probe(&prefix);
    let mut rep = if probes {
        wirespeed_report::Reporter::new()
    } else {
        ctx.test_reporter(cfg, wirespeed_core::config::Protocol::Tcp, peer.ip())
    };
    rep.emit(Event::StreamConnected(Box::new(line)));
    let Ok(s2) = sock.try_clone() else { return };
    let counters = BouncebackCounters::echo(cfg.output.interval);
    let ds = DataStream::new(id, StreamRole::Recv, DataSock::Tcp(s2), local, peer);
    let extras = StreamExtras {
        kind: StreamKind::Exchange(std::sync::Arc::new(EchoSpec {
            first: prefix,
            counters: counters.clone(),
            on_message: probe_metrics(ctx, probes),
        })),
        meta: StreamMeta {
            bounceback: Some(counters),
            ..StreamMeta::default()
        },
        ..StreamExtras::default()
    };
    let mut params = cfg.params.clone();
    params.end = wirespeed_core::config::EndCondition::Time(Duration::ZERO);
    params.rate = 0;
    let opts = RunOpts {
        interval: cfg.output.interval,
        decides_end: false,
        watchdog: None,
        drain: Duration::from_secs(1),
        idle_limit: None,
        stop: ctx.stop.clone(),
        file: None,
        signal: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        samples: cfg.output.chart_samples(),
        start: StartInfo {
            accepted_connection: Some(wirespeed_core::net::split_addr(&peer)),
            ..StartInfo::default()
        },
    };
    if let Err(e) = run_flows(&params, Side::Server, vec![Flow::new(ds, extras)], &opts, &mut rep) {
        rep.emit(Event::Warning(format!("WARNING: {}", e.text())));
    }
    rep.emit(Event::Done);
    drop(sock);
}
