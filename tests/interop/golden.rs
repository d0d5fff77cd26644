//! The golden matrix: a table of command lines in both dialects (and with
//! the real iperf3 / iperf 2 as the other end), run against the binary
//! under test, their output normalised to its *shape* (numbers, addresses,
//! times, cookies and unit prefixes do not matter; which lines, columns,
//! words and keys appear does), and compared with the files kept in
//! `tests/golden/<case>.txt`.
//!
//! ```text
//! cargo test --release --test golden                       # compare
//! WIRESPEED_BLESS=1 cargo test --release --test golden     # rewrite the files
//! WIRESPEED_GOLDEN_BIN=/opt/wirespeed-baseline/wirespeed WIRESPEED_BLESS=1 \
//!     cargo test --release --test golden                   # bless from another build
//! ```
//!
//! Other knobs: `WIRESPEED_GOLDEN_ONLY=a,b` runs only the cases whose name
//! contains one of the words; `WIRESPEED_GOLDEN_REPEAT=N` runs the matrix N
//! times (flake hunting: every run must match); `WIRESPEED_GOLDEN_JOBS=N`
//! cases at once (default 3); `WIRESPEED_GOLDEN_DUMP=dir` writes each run's
//! raw and normalised output there. Cases with a real peer print a NOTICE
//! and are skipped when it is missing (fail with WIRESPEED_REQUIRE_PEERS=1).
//!
//! How output is normalised (the unit tests at the end pin each rule):
//!
//! * Text, line by line: the machine's `uname` string becomes `UNAME`;
//!   IPv4/IPv6 addresses (an IPv4 one with an optional `:port`) become
//!   `ADDR`; 26+ character base32 words (iperf3 cookies) become `COOKIE`;
//!   every number (integer, decimal, dotted version, exponent form,
//!   negative, `0x` hex, and a printed `nan`/`-nan`/`inf`) becomes `N`,
//!   but digits inside a word (`iperf3`, `x86_64`, `T8`) are kept; so
//!   dates and times become `N-N-N N:N:N`, and
//!   weekday and month names become `DAY` / `MON` and a time zone in
//!   parentheses after a time `(TZ)`; a histogram's bin list
//!   (`cnt(N)=N:N,N:N,...`, as many bins as latencies were seen) becomes
//!   `=BINS`; unit words lose their magnitude prefix (`KBytes`, `GBytes` ->
//!   `?Bytes`, iperf 2's `MByte` -> `?Byte`, `Mbits/sec` -> `?bits/sec`,
//!   `KBytes/sec` -> `?Bytes/sec`), except the rate units in the client
//!   output of a case that fixes them with `-f`; the TCP congestion
//!   algorithm after `snd_tcp_congestion` / `rcv_tcp_congestion` becomes
//!   `CC` (the machine's default); runs of blanks collapse to one and lines
//!   are trimmed. The window advice's `Window needed ...` line ends in one of
//!   two ways by the measured RTT (a window-limited loopback test's
//!   rate x RTT can fall on either side of the window it had), so its tail
//!   after the arithmetic becomes `-> try -w NK`.
//! * Then repetition is collapsed: consecutive identical lines become one,
//!   and a block of up to 8 lines repeated back to back becomes one copy
//!   (repeated until nothing changes). How many interval lines or interval
//!   groups (`[ 1]..[ 2]..[SUM]..- - -`) a test prints is timing: a final
//!   short "sliver" interval (`2.00-2.00 sec` on an iperf3 server,
//!   `2.0000-2.0012 sec` in iperf 2) comes and goes, and a loaded machine
//!   that starves a process for a second makes a 2 s test print a single
//!   `0.00-2.00` interval. Interval lines and the whole-test line have the
//!   same shape (where a line starts does not matter), so they fold into
//!   one; nothing is dropped by kind.
//! * Two cases (`-d` dual tests) regroup the client's report lines by flow
//!   first: a sending and a receiving thread report as they happen to run
//!   (`by_flow`).
//! * Real peers only: iperf 2.1.8's `WARNING: ack of last datagram failed.`
//!   comes and goes by chance and is dropped from its output
//!   (`peer_quirks`); wirespeed's output keeps every line kind.
//! * `-J` output: every key path with the JSON type found there
//!   (`number`, `string`, `bool`, `null`, `object`, `array`), array elements
//!   collapsed to `[]` (types found at one path are joined with `|`); an
//!   `error` string is kept as normalised text. The window advice's
//!   `target_bits_per_second`, `suggested_window_bytes` and
//!   `suggested_option` exist exactly when `limited_by` is a window, and
//!   which limit a full-speed loopback test hits depends on the load: when
//!   they follow that rule they read the same either way (`advice_keys`).
//! * `--json-stream`: the sequence of event names (repetition collapsed as
//!   for text) and, per event name, the key path/type set over all its
//!   events.
//! * `-y C` CSV: per row the number of columns and a type per column
//!   (`int`, `float`, `ip`, `range` for `a-b` intervals, `text`, `empty`),
//!   repetition collapsed as for text.
//!
//! Servers are stopped with SIGTERM once they are done with the test: they
//! hold no more sockets than when idle, an iperf3 server has printed its
//! next "Server listening" banner, and the output has been quiet for a
//! while; a server started with `-1` exits by itself. A case whose setup
//! fails (a port taken meanwhile, a server that did not listen) is retried
//! with new ports, up to three times.
//!
//! Every process is bounded in time and ended by its pid.

use crate::common;

use common::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// The matrix.

/// Who runs a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prog {
    /// The wirespeed binary under test.
    Ws,
    /// The real iperf3.
    Iperf3,
    /// The real iperf 2.
    Iperf,
}

impl Prog {
    fn name(self) -> &'static str {
        match self {
            Prog::Ws => "wirespeed",
            Prog::Iperf3 => "iperf3",
            Prog::Iperf => "iperf",
        }
    }
}

/// One golden case. Arguments are templates: `{port}` is the server's port,
/// `{lport}` a free port for the client's own listener (iperf 2 `-L`),
/// `{closed}` a port nobody listens on.
#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    server: Option<(Prog, &'static str)>,
    client: (Prog, &'static str),
    /// Keep the rate units as printed (the case fixes them with `-f`).
    keep_rate_units: bool,
    /// The client's report lines interleave by timing: group them by flow.
    by_flow: bool,
}

const fn case(name: &'static str, server: Option<(Prog, &'static str)>, client: (Prog, &'static str)) -> Case {
    Case {
        name,
        server,
        client,
        keep_rate_units: false,
        by_flow: false,
    }
}

/// wirespeed, iperf3 dialect, against a wirespeed `-s` server.
const fn i3(name: &'static str, client: &'static str) -> Case {
    case(name, Some((Prog::Ws, "-s -p {port}")), (Prog::Ws, client))
}

/// wirespeed `--iperf2` client and server.
const fn i2(name: &'static str, server: &'static str, client: &'static str) -> Case {
    case(name, Some((Prog::Ws, server)), (Prog::Ws, client))
}

/// A client run with no server.
const fn alone(name: &'static str, prog: Prog, client: &'static str) -> Case {
    case(name, None, (prog, client))
}

const CASES: &[Case] = &[
    // ---- iperf3 dialect: wirespeed client -> wirespeed -s.
    i3("i3-tcp", "-c 127.0.0.1 -p {port} -t 2 -i 1"),
    i3("i3-tcp-reverse", "-c 127.0.0.1 -p {port} -t 2 -i 1 -R"),
    i3("i3-tcp-bidir", "-c 127.0.0.1 -p {port} -t 2 -i 1 --bidir"),
    i3("i3-tcp-p2", "-c 127.0.0.1 -p {port} -t 2 -i 1 -P 2"),
    i3("i3-tcp-bytes", "-c 127.0.0.1 -p {port} -n 2M"),
    i3("i3-tcp-bytes-reverse", "-c 127.0.0.1 -p {port} -n 2M -R"),
    i3("i3-tcp-blocks", "-c 127.0.0.1 -p {port} -k 50"),
    i3("i3-tcp-omit", "-c 127.0.0.1 -p {port} -O 1 -t 2 -i 1"),
    // -V with a 4 KiB window: on loopback that window is always what holds
    // the sender back, so the window advice is always the same kind (at full
    // speed it names the receive window, the send buffer, the path or the
    // CPU depending on the load; paced with -b, the sender or, when the
    // receiver stalls, the receive window).
    i3("i3-tcp-verbose", "-c 127.0.0.1 -p {port} -V -w 4K -t 2 -i 1"),
    // The receiving client gives no advice.
    i3("i3-tcp-verbose-reverse", "-c 127.0.0.1 -p {port} -V -R -t 2 -i 1"),
    i3(
        "i3-tcp-server-output",
        "-c 127.0.0.1 -p {port} --get-server-output -t 2 -i 1",
    ),
    i3("i3-tcp-i0", "-c 127.0.0.1 -p {port} -t 2 -i 0"),
    Case {
        keep_rate_units: true,
        ..i3("i3-tcp-format-m", "-c 127.0.0.1 -p {port} -t 2 -i 1 -f m")
    },
    i3("i3-tcp-title", "-c 127.0.0.1 -p {port} -t 2 -i 1 -T golden"),
    i3("i3-udp", "-c 127.0.0.1 -p {port} -u -b 10M -t 2 -i 1"),
    i3("i3-udp-reverse", "-c 127.0.0.1 -p {port} -u -R -b 10M -t 2 -i 1"),
    i3("i3-udp-p2", "-c 127.0.0.1 -p {port} -u -P 2 -b 5M -t 2 -i 1"),
    i3("i3-udp-bidir", "-c 127.0.0.1 -p {port} -u --bidir -b 5M -t 2 -i 1"),
    i3("i3-udp-verbose", "-c 127.0.0.1 -p {port} -u -V -b 10M -t 2 -i 1"),
    i3("i3-json-tcp", "-c 127.0.0.1 -p {port} -J -t 2 -i 1"),
    i3("i3-json-reverse", "-c 127.0.0.1 -p {port} -J -R -t 2 -i 1"),
    i3("i3-json-bidir", "-c 127.0.0.1 -p {port} -J --bidir -t 2 -i 1"),
    i3("i3-json-udp", "-c 127.0.0.1 -p {port} -J -u -b 10M -t 2 -i 1"),
    i3("i3-json-p2", "-c 127.0.0.1 -p {port} -J -P 2 -t 2 -i 1"),
    i3("i3-json-window", "-c 127.0.0.1 -p {port} -J -w 4K -t 2 -i 1"),
    i3("i3-json-stream", "-c 127.0.0.1 -p {port} --json-stream -t 2 -i 1"),
    i3(
        "i3-json-stream-udp",
        "-c 127.0.0.1 -p {port} --json-stream -u -b 10M -t 2 -i 1",
    ),
    case(
        "i3-server-oneoff-json",
        Some((Prog::Ws, "-s -p {port} -1 -J")),
        (Prog::Ws, "-c 127.0.0.1 -p {port} -t 2 -i 1"),
    ),
    case(
        "i3-server-oneoff",
        Some((Prog::Ws, "-s -p {port} -1")),
        (Prog::Ws, "-c 127.0.0.1 -p {port} -t 2 -i 1 -u -b 10M"),
    ),
    alone("i3-err-refused", Prog::Ws, "-c 127.0.0.1 -p {closed} -t 2"),
    alone("i3-err-refused-json", Prog::Ws, "-c 127.0.0.1 -p {closed} -t 2 -J"),
    alone("i3-err-bogus", Prog::Ws, "-c 127.0.0.1 -p {closed} --bogus"),
    alone("i3-err-c-without-host", Prog::Ws, "-c"),
    alone("i3-version", Prog::Ws, "-v"),
    // ---- iperf 2 dialect: wirespeed --iperf2 client -> wirespeed --iperf2 -s.
    i2(
        "i2-tcp",
        "--iperf2 -s -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -t 2 -i 1",
    ),
    i2(
        "i2-tcp-enhanced",
        "--iperf2 -s -p {port} -e -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -e -t 2 -i 1",
    ),
    i2(
        "i2-tcp-p2",
        "--iperf2 -s -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -P 2 -t 2 -i 1",
    ),
    i2(
        "i2-tcp-enhanced-p2",
        "--iperf2 -s -p {port} -e -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -e -P 2 -t 2 -i 1",
    ),
    i2(
        "i2-tcp-reverse",
        "--iperf2 -s -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -R -t 2 -i 1",
    ),
    i2(
        "i2-tcp-full-duplex",
        "--iperf2 -s -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} --full-duplex -t 2 -i 1",
    ),
    // A dual test's client sends on one flow and receives on another; their
    // reports interleave as the two threads happen to run.
    Case {
        by_flow: true,
        ..i2(
            "i2-tcp-dual",
            "--iperf2 -s -p {port} -i 1",
            "--iperf2 -c 127.0.0.1 -p {port} -d -L {lport} -t 2 -i 1",
        )
    },
    i2(
        "i2-tcp-tradeoff",
        "--iperf2 -s -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -r -L {lport} -t 2 -i 1",
    ),
    i2(
        "i2-tcp-trip-times",
        "--iperf2 -s -p {port} -e -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} --trip-times -t 2 -i 1",
    ),
    i2(
        "i2-tcp-csv",
        "--iperf2 -s -p {port} -y C -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -y C -t 2 -i 1",
    ),
    i2(
        "i2-tcp-csv-enhanced",
        "--iperf2 -s -p {port} -y C -e -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -y C -e -t 2 -i 1",
    ),
    i2(
        "i2-tcp-bytes",
        "--iperf2 -s -p {port}",
        "--iperf2 -c 127.0.0.1 -p {port} -n 1M",
    ),
    i2(
        "i2-tcp-exclude-cs",
        "--iperf2 -s -p {port} -x CS -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -x CS -t 2 -i 1",
    ),
    i2(
        "i2-tcp-sum-only",
        "--iperf2 -s -p {port} --sum-only -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} --sum-only -P 2 -t 2 -i 1",
    ),
    i2(
        "i2-tcp-mss",
        "--iperf2 -s -p {port} -m -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -m -t 2 -i 1",
    ),
    i2(
        "i2-tcp-peer-detect",
        "--iperf2 -s -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -X -t 2 -i 1",
    ),
    i2(
        "i2-bounceback",
        "--iperf2 -s -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} --bounceback -i 1 -t 2",
    ),
    i2(
        "i2-udp",
        "--iperf2 -s -u -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -u -b 10m -t 2 -i 1",
    ),
    i2(
        "i2-udp-enhanced",
        "--iperf2 -s -u -p {port} -e -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -u -e -b 10m -t 2 -i 1",
    ),
    i2(
        "i2-udp-p2",
        "--iperf2 -s -u -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -u -P 2 -b 5m -t 2 -i 1",
    ),
    i2(
        "i2-udp-reverse",
        "--iperf2 -s -u -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -u -R -b 10m -t 2 -i 1",
    ),
    i2(
        "i2-udp-full-duplex",
        "--iperf2 -s -u -p {port} -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -u --full-duplex -b 5m -t 2 -i 1",
    ),
    Case {
        by_flow: true,
        ..i2(
            "i2-udp-dual",
            "--iperf2 -s -u -p {port} -i 1",
            "--iperf2 -c 127.0.0.1 -p {port} -u -d -L {lport} -b 5m -t 2 -i 1",
        )
    },
    i2(
        "i2-udp-csv",
        "--iperf2 -s -u -p {port} -y C -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -u -y C -b 10m -t 2 -i 1",
    ),
    i2(
        "i2-udp-histograms",
        "--iperf2 -s -u -p {port} -e --histograms -i 1",
        "--iperf2 -c 127.0.0.1 -p {port} -u --trip-times -b 10m -t 2 -i 1",
    ),
    alone("i2-err-refused", Prog::Ws, "--iperf2 -c 127.0.0.1 -p {closed} -t 2"),
    alone("i2-err-bogus", Prog::Ws, "--iperf2 -c 127.0.0.1 -p {closed} --bogus"),
    alone("i2-version", Prog::Ws, "--iperf2 -v"),
    // iperf 2 clients on the iperf3-dialect server's port.
    i3("i2-to-i3-server-tcp", "--iperf2 -c 127.0.0.1 -p {port} -t 2 -i 1"),
    i3(
        "i2-to-i3-server-udp",
        "--iperf2 -c 127.0.0.1 -p {port} -u -b 10m -t 2 -i 1",
    ),
    // ---- Real peers as the other end (skipped with a NOTICE when missing).
    case(
        "peer-iperf3-client-tcp",
        Some((Prog::Ws, "-s -p {port}")),
        (Prog::Iperf3, "-c 127.0.0.1 -p {port} -t 2 -i 1"),
    ),
    case(
        "peer-iperf3-client-udp",
        Some((Prog::Ws, "-s -p {port}")),
        (Prog::Iperf3, "-c 127.0.0.1 -p {port} -u -b 10M -t 2 -i 1"),
    ),
    case(
        "peer-iperf3-server-tcp",
        Some((Prog::Iperf3, "-s -p {port} --forceflush")),
        (Prog::Ws, "-c 127.0.0.1 -p {port} -t 2 -i 1"),
    ),
    case(
        "peer-iperf3-server-udp",
        Some((Prog::Iperf3, "-s -p {port} --forceflush")),
        (Prog::Ws, "-c 127.0.0.1 -p {port} -u -b 10M -t 2 -i 1"),
    ),
    case(
        "peer-iperf-client-tcp",
        Some((Prog::Ws, "--iperf2 -s -p {port} -i 1")),
        (Prog::Iperf, "-c 127.0.0.1 -p {port} -t 2 -i 1"),
    ),
    case(
        "peer-iperf-client-udp",
        Some((Prog::Ws, "--iperf2 -s -u -p {port} -i 1")),
        (Prog::Iperf, "-c 127.0.0.1 -p {port} -u -b 10m -t 2 -i 1"),
    ),
    case(
        "peer-iperf-client-to-i3-server",
        Some((Prog::Ws, "-s -p {port}")),
        (Prog::Iperf, "-c 127.0.0.1 -p {port} -t 2 -i 1"),
    ),
    case(
        "peer-iperf-server-tcp",
        Some((Prog::Iperf, "-s -p {port} -i 1")),
        (Prog::Ws, "--iperf2 -c 127.0.0.1 -p {port} -t 2 -i 1"),
    ),
    case(
        "peer-iperf-server-udp",
        Some((Prog::Iperf, "-s -u -p {port} -i 1")),
        (Prog::Ws, "--iperf2 -c 127.0.0.1 -p {port} -u -b 10m -t 2 -i 1"),
    ),
];

// ---------------------------------------------------------------------------
// Running a case.

/// How long a client may run.
const CLIENT_LIMIT: Duration = Duration::from_secs(30);
/// How long a server may take to listen, or to exit once told to.
const SERVER_LIMIT: Duration = Duration::from_secs(10);
/// How long a server's output must stay unchanged before it is stopped.
const QUIET: Duration = Duration::from_millis(400);
/// The same for a server with no banner that marks the end of a test.
const QUIET_IPERF2: Duration = Duration::from_millis(1500);
/// The longest wait for that quiet.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// What one run of a case printed.
#[derive(Debug, Default, Clone)]
struct Captured {
    client_out: String,
    client_err: String,
    client_exit: String,
    server: Option<(String, String, String)>,
}

/// Ports handed out in this process, so that concurrent cases never share one.
static PORTS: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

fn fresh_port() -> u16 {
    loop {
        let p = free_port();
        let mut g = PORTS.lock().unwrap();
        if g.get_or_insert_with(HashSet::new).insert(p) {
            return p;
        }
    }
}

struct Ports {
    port: u16,
    lport: u16,
    closed: u16,
}

fn fill(template: &str, p: &Ports) -> Vec<String> {
    template
        .split_whitespace()
        .map(|w| {
            w.replace("{port}", &p.port.to_string())
                .replace("{lport}", &p.lport.to_string())
                .replace("{closed}", &p.closed.to_string())
        })
        .collect()
}

/// The program for `prog` (the binary under test for wirespeed).
fn program(prog: Prog, bin: &Path) -> Option<PathBuf> {
    match prog {
        Prog::Ws => Some(bin.to_path_buf()),
        Prog::Iperf3 => which("iperf3"),
        Prog::Iperf => which("iperf"),
    }
}

/// A program on PATH (quietly; `peer()` reports missing peers up front).
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether something is bound to `port`: a TCP listener, or (`udp`) any
/// UDP socket (read from /proc, so no probe disturbs the server).
fn bound(port: u16, udp: bool) -> bool {
    let files: &[&str] = if udp {
        &["/proc/net/udp", "/proc/net/udp6"]
    } else {
        &["/proc/net/tcp", "/proc/net/tcp6"]
    };
    let tail = format!(":{port:04X}");
    files.iter().any(|f| {
        std::fs::read_to_string(f).unwrap_or_default().lines().any(|l| {
            let mut w = l.split_whitespace();
            let local = w.nth(1).unwrap_or("");
            let state = w.nth(1).unwrap_or("");
            local.ends_with(&tail) && (udp || state == "0A")
        })
    })
}

fn exit_text(s: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match s {
        None => "did not exit in time (killed)".to_string(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => c.to_string(),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "unknown".to_string(),
        },
    }
}

/// How many sockets process `pid` holds open.
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:")))
                .count()
        })
        .unwrap_or(0)
}

/// Waits (at most `SETTLE_LIMIT`) until a server is done with the test: it
/// holds no more sockets than it did idle (`idle`), `marker` (if given)
/// was printed `count` times, and then its output stayed unchanged for
/// `quiet`. Returns whether that happened in time.
fn settle(p: &mut Proc, idle: usize, marker: Option<(&str, usize)>, quiet: Duration) -> bool {
    let deadline = Instant::now() + SETTLE_LIMIT;
    let mut last = (usize::MAX, usize::MAX);
    let mut since = Instant::now();
    while Instant::now() < deadline {
        if !p.running() {
            return true;
        }
        let (o, e) = (p.out(), p.err());
        let now = (o.len(), e.len());
        let done = sockets(p.pid()) <= idle && marker.is_none_or(|(m, n)| o.matches(m).count() >= n);
        if now != last || !done {
            last = now;
            since = Instant::now();
        }
        if since.elapsed() >= quiet {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Runs a case once. `Err` means the setup failed in a way worth a retry
/// with other ports (a port taken meanwhile, a server that did not start).
fn run_once(c: &Case, bin: &Path) -> Result<Captured, String> {
    let ports = Ports {
        port: fresh_port(),
        lport: fresh_port(),
        closed: fresh_port(),
    };
    let mut server = None;
    if let Some((prog, template)) = c.server {
        let exe = program(prog, bin).ok_or("server program missing")?;
        let args = fill(template, &ports);
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let mut p = Proc::spawn(&exe, &a);
        let iperf2_dialect = prog == Prog::Iperf || a.contains(&"--iperf2");
        let udp_only = iperf2_dialect && a.contains(&"-u");
        let deadline = Instant::now() + SERVER_LIMIT;
        while !bound(ports.port, udp_only) {
            if Instant::now() >= deadline || !p.running() {
                p.signal(15);
                p.wait(SERVER_LIMIT);
                return Err(format!("server did not listen:\n{}{}", p.out(), p.err()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if prog == Prog::Ws && !iperf2_dialect {
            // The iperf3-dialect server also takes iperf 2 UDP clients on the
            // same port; let that socket be bound too (a no-op otherwise).
            let until = Instant::now() + Duration::from_secs(2);
            while !bound(ports.port, true) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // Let it finish setting up before counting its idle sockets.
        std::thread::sleep(Duration::from_millis(100));
        let idle = sockets(p.pid());
        server = Some((p, prog, a.contains(&"-1"), idle));
    }
    let (cprog, ctemplate) = c.client;
    let exe = program(cprog, bin).ok_or("client program missing")?;
    let args = fill(ctemplate, &ports);
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let ran = run(&exe, &a, CLIENT_LIMIT);
    let mut cap = Captured {
        client_out: ran.stdout,
        client_err: ran.stderr,
        client_exit: match ran.code {
            Some(c) => c.to_string(),
            None => "did not exit in time (killed)".to_string(),
        },
        server: None,
    };
    if let Some((mut p, prog, one_off, idle)) = server {
        let status = if one_off {
            p.wait(SERVER_LIMIT)
        } else {
            // An iperf3 server announces it is ready for the next test once
            // it has printed everything about this one.
            // (Not after an iperf 2 client, which it serves without a new banner.)
            let sargs = c.server.map(|s| s.1).unwrap_or("");
            let iperf3_server = prog == Prog::Iperf3 || (prog == Prog::Ws && !sargs.contains("--iperf2"));
            let iperf3_client =
                c.client.0 == Prog::Iperf3 || (c.client.0 == Prog::Ws && !c.client.1.contains("--iperf2"));
            let iperf3_banner = iperf3_server && iperf3_client && !sargs.contains("-J");
            let marker = (iperf3_banner && ran.code == Some(0)).then_some(("Server listening on", 2));
            // Without the banner, only quiet tells that the last report is
            // out: longer than a `-i 1` interval and than the stalls a
            // loaded machine shows.
            let quiet = if marker.is_some() { QUIET } else { QUIET_IPERF2 };
            if !settle(&mut p, idle, marker, quiet) {
                eprintln!("golden {}: the server did not settle in {SETTLE_LIMIT:?}", c.name);
            }
            p.signal(15);
            p.wait(SERVER_LIMIT)
        };
        cap.server = Some((p.out(), p.err(), exit_text(status)));
    }
    let all = format!(
        "{}{}{}",
        cap.client_out,
        cap.client_err,
        cap.server
            .as_ref()
            .map(|s| format!("{}{}", s.0, s.1))
            .unwrap_or_default()
    );
    if all.contains("Address already in use") {
        return Err(format!("a port was taken meanwhile:\n{all}"));
    }
    Ok(cap)
}

fn run_case(c: &Case, bin: &Path) -> Captured {
    let mut last = String::new();
    for _ in 0..3 {
        match run_once(c, bin) {
            Ok(cap) => return cap,
            Err(e) => {
                eprintln!("golden {}: retrying: {e}", c.name);
                last = e;
            }
        }
    }
    Captured {
        client_out: format!("SETUP FAILED THREE TIMES: {last}"),
        ..Captured::default()
    }
}

// ---------------------------------------------------------------------------
// The golden text of a case.

/// How a stream of output is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    JsonStream,
    Csv,
}

impl Format {
    fn of(args: &str) -> Format {
        let w: Vec<&str> = args.split_whitespace().collect();
        if w.contains(&"--json-stream") {
            Format::JsonStream
        } else if w.contains(&"-J") || w.contains(&"--json") {
            Format::Json
        } else if w.windows(2).any(|p| p[0] == "-y" && p[1].eq_ignore_ascii_case("c")) {
            Format::Csv
        } else {
            Format::Text
        }
    }

    fn label(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "JSON key paths and types",
            Format::JsonStream => "JSON stream events, then key paths and types per event",
            Format::Csv => "CSV columns and types per row",
        }
    }
}

fn shown(template: &str) -> String {
    template
        .replace("{port}", "PORT")
        .replace("{lport}", "LPORT")
        .replace("{closed}", "CLOSED")
}

/// The golden file's text for a captured run of `c`.
fn render(c: &Case, cap: &Captured, n: &Normaliser) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "# golden case {} (tests/interop/golden.rs; normalised output)\n",
        c.name
    ));
    if let Some((prog, args)) = c.server {
        s.push_str(&format!("# server: {} {}\n", prog.name(), shown(args)));
    }
    s.push_str(&format!("# client: {} {}\n", c.client.0.name(), shown(c.client.1)));
    let section = |s: &mut String, title: &str, fmt: Format, text: &str, n: &Normaliser| {
        s.push_str(&format!("==== {title} ({}) ====\n", fmt.label()));
        let lines = n.normalise(text, fmt);
        if lines.is_empty() {
            s.push_str("(empty)\n");
        }
        for l in lines {
            s.push_str(&l);
            s.push('\n');
        }
    };
    let cfmt = Format::of(c.client.1);
    // `-f` fixes the client's rate units only (a server reports in its own).
    let client_n = Normaliser {
        keep_rate_units: c.keep_rate_units,
        ..n.clone()
    };
    let cp = c.client.0;
    let mut out = peer_quirks(cp, &cap.client_out);
    if c.by_flow {
        s.push_str("# (client report lines grouped by flow: they interleave by timing)\n");
        out = by_flow(&out);
    }
    section(&mut s, "client stdout", cfmt, &out, &client_n);
    section(
        &mut s,
        "client stderr",
        Format::Text,
        &peer_quirks(cp, &cap.client_err),
        n,
    );
    s.push_str(&format!("==== client exit status ====\n{}\n", cap.client_exit));
    if let (Some((sp, sargs)), Some((out, err, exit))) = (c.server, &cap.server) {
        section(&mut s, "server stdout", Format::of(sargs), &peer_quirks(sp, out), n);
        section(&mut s, "server stderr", Format::Text, &peer_quirks(sp, err), n);
        s.push_str(&format!("==== server exit status ====\n{exit}\n"));
    }
    s
}

/// Lines a real peer prints or not by chance, dropped from that peer's
/// output only (wirespeed's own output keeps every line kind):
///
/// * iperf 2.1.8's UDP server prints `WARNING: ack of last datagram
///   failed.` on loopback even when the client got its report, depending on
///   a race between its FIN handling and the client's retries (the README's
///   notes on the iperf 2 dialect; wirespeed prints it only when the client
///   really kept retrying). Seen in 1 of 5 runs.
fn peer_quirks(prog: Prog, text: &str) -> String {
    match prog {
        Prog::Iperf => text
            .lines()
            .filter(|l| !l.ends_with("WARNING: ack of last datagram failed."))
            .map(|l| format!("{l}\n"))
            .collect(),
        Prog::Ws | Prog::Iperf3 => text.to_string(),
    }
}

/// Regroups report lines by flow: the lines of each flow tag (`[  1]`,
/// `[ *2]`, `[SUM]`), in the tags' order, each in its own order. Lines
/// before the first tagged line stay first. Column headers (`[ ID] ...`)
/// printed after that come next, each once, sorted (a header shared by the
/// flows is printed by whichever reports first); any other untagged line
/// goes with the tagged line that follows it, or last.
fn by_flow(text: &str) -> String {
    let mut prelude = String::new();
    let mut headers = BTreeSet::new();
    let mut flows: BTreeMap<String, String> = BTreeMap::new();
    let mut pending = String::new();
    for l in text.lines() {
        let tag = l
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|(t, _)| t.trim());
        match tag {
            Some("ID") if !flows.is_empty() => {
                headers.insert(l.to_string());
            }
            Some(t) if t != "ID" && t != "CT" => {
                let f = flows.entry(t.to_string()).or_default();
                f.push_str(&pending);
                pending.clear();
                f.push_str(l);
                f.push('\n');
            }
            _ if flows.is_empty() => {
                prelude.push_str(l);
                prelude.push('\n');
            }
            _ => {
                pending.push_str(l);
                pending.push('\n');
            }
        }
    }
    let headers: String = headers.into_iter().map(|h| h + "\n").collect();
    prelude + &headers + &flows.into_values().collect::<String>() + &pending
}

// ---------------------------------------------------------------------------
// Normalisation.

/// Normalises output to its shape; see the module comment for the rules.
#[derive(Clone)]
struct Normaliser {
    /// The machine's `uname -snrvm` text (iperf3 -V prints it).
    uname: Option<String>,
    keep_rate_units: bool,
}

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl Normaliser {
    fn new() -> Normaliser {
        let read = |f: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).ok();
        let uname = (|| {
            Some(format!(
                "{} {} {} {} {}",
                read("ostype")?.trim(),
                read("hostname")?.trim(),
                read("osrelease")?.trim(),
                read("version")?.trim(),
                std::env::consts::ARCH
            ))
        })();
        Normaliser {
            uname,
            keep_rate_units: false,
        }
    }

    /// Plain rules only (for the unit tests: no machine-specific strings).
    #[cfg(test)]
    fn plain() -> Normaliser {
        Normaliser {
            uname: None,
            keep_rate_units: false,
        }
    }

    fn normalise(&self, text: &str, fmt: Format) -> Vec<String> {
        match fmt {
            Format::Text => collapse(text.lines().map(|l| advice_tail(&self.line(l))).collect()),
            Format::Csv => collapse(
                text.lines()
                    .map(|l| csv_row(l).unwrap_or_else(|| self.line(l)))
                    .collect(),
            ),
            Format::Json => self.json(text),
            Format::JsonStream => self.json_stream(text),
        }
    }

    /// One line of text.
    fn line(&self, line: &str) -> String {
        let mut line = line.trim_end().to_string();
        if let Some(u) = &self.uname {
            line = line.replace(u.as_str(), "UNAME");
        }
        let words = histogram_bins(&scan(&line));
        let mut out: Vec<String> = Vec::new();
        let mut prev_word = String::new();
        for w in words.split_whitespace() {
            let mut w = w.to_string();
            // Split off punctuation around the word proper.
            let core_start = w
                .find(|c: char| c.is_ascii_alphanumeric() || c == '?')
                .unwrap_or(w.len());
            let core_end = w
                .rfind(|c: char| c.is_ascii_alphanumeric())
                .map(|i| i + 1)
                .unwrap_or(core_start)
                .max(core_start);
            let core = &w[core_start..core_end];
            let replaced = if DAYS.contains(&core) {
                Some("DAY".to_string())
            } else if MONTHS.contains(&core) {
                Some("MON".to_string())
            } else if let Some(u) = unit(core, self.keep_rate_units) {
                Some(u)
            } else if (prev_word == "snd_tcp_congestion" || prev_word == "rcv_tcp_congestion") && !core.is_empty() {
                Some("CC".to_string())
            } else if prev_word.ends_with("N:N:N")
                && w.starts_with('(')
                && w.ends_with(')')
                && core.chars().all(|c| c.is_ascii_uppercase())
            {
                Some("TZ".to_string())
            } else {
                None
            };
            if let Some(r) = replaced {
                w = format!("{}{}{}", &w[..core_start], r, &w[core_end..]);
            }
            prev_word = w.clone();
            out.push(w);
        }
        out.join(" ")
    }

    fn json(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
        let mut n = 0;
        loop {
            let at = stream.byte_offset();
            match stream.next() {
                Some(Ok(v)) => {
                    n += 1;
                    out.push(format!("JSON document {n}:"));
                    for (path, types) in json_types(&v, self) {
                        out.push(format!("{path}: {types}"));
                    }
                }
                Some(Err(_)) => {
                    out.push("(not JSON from here on:)".to_string());
                    out.extend(collapse(
                        text[at..].trim_start().lines().map(|l| self.line(l)).collect(),
                    ));
                    break;
                }
                None => break,
            }
        }
        out
    }

    fn json_stream(&self, text: &str) -> Vec<String> {
        let mut events = Vec::new();
        let mut kinds: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for l in text.lines() {
            match serde_json::from_str::<serde_json::Value>(l) {
                Ok(v) => {
                    let name = v
                        .get("event")
                        .and_then(|e| e.as_str())
                        .unwrap_or("(no event name)")
                        .to_string();
                    events.push(format!("event {name}"));
                    let set = kinds.entry(name).or_default();
                    for (path, types) in json_types(&v, self) {
                        set.entry(path).or_default().insert(types);
                    }
                }
                Err(_) => events.push(format!("(not JSON) {}", self.line(l))),
            }
        }
        let mut out = vec!["Events:".to_string()];
        out.extend(collapse(events));
        for (name, paths) in kinds {
            out.push(format!("Event {name}:"));
            for (path, types) in paths {
                out.push(format!("{path}: {}", types.into_iter().collect::<Vec<_>>().join("|")));
            }
        }
        out
    }
}

/// Replaces addresses, cookies and numbers in `line` (character rules).
fn scan(line: &str) -> String {
    let ch: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < ch.len() {
        let prev = if i > 0 { Some(ch[i - 1]) } else { None };
        let word_start = !prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == '_');
        if word_start {
            if let Some((len, rep)) = address_at(&ch, i) {
                out.push_str(rep);
                i += len;
                continue;
            }
            if let Some(len) = cookie_at(&ch, i) {
                out.push_str("COOKIE");
                i += len;
                continue;
            }
        }
        if word_start && let Some(len) = non_finite_at(&ch, i) {
            out.push('N');
            i += len;
            continue;
        }
        if ch[i].is_ascii_alphabetic() || ch[i] == '_' {
            // A word: digits inside it (`iperf3`, `x86_64`) are part of it.
            while i < ch.len() && (ch[i].is_ascii_alphanumeric() || ch[i] == '_') {
                out.push(ch[i]);
                i += 1;
            }
            continue;
        }
        if let Some(len) = number_at(&ch, i) {
            out.push('N');
            i += len;
            continue;
        }
        out.push(ch[i]);
        i += 1;
    }
    out
}

/// A histogram's bin list (`cnt(N)=N:N,N:N,N:N`: bin:count pairs, as many as
/// the latencies fell into) becomes `=BINS`; an 8-bucket `Reads=Dist`
/// (`N=N:N:N:N:N:N:N:N`) stays.
fn histogram_bins(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("=N:N") {
        let after = &rest[at + 4..];
        let mut tail = after;
        while let Some(t) = tail.strip_prefix(",N:N") {
            tail = t;
        }
        let ends = !tail.starts_with(|c: char| c == ':' || c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        if ends {
            out.push_str("=BINS");
            rest = tail;
        } else {
            out.push_str("=N:N");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// An IPv4/IPv6 address (IPv4 with an optional `:port`) starting at `i`:
/// its length and replacement.
fn address_at(ch: &[char], i: usize) -> Option<(usize, &'static str)> {
    let mut j = i;
    while j < ch.len() && (ch[j].is_ascii_hexdigit() || ch[j] == ':' || ch[j] == '.') {
        j += 1;
    }
    if j == i || ch.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
        return None;
    }
    // Sentence punctuation after an address is not part of it.
    while j > i && (ch[j - 1] == '.' || ch[j - 1] == ':') {
        j -= 1;
    }
    let run: String = ch[i..j].iter().collect();
    // An IPv6 address as printed has a `::` or a hex letter; eight groups of
    // decimal digits (iperf 2's `Reads=Dist` histogram) are not one.
    let v6_like = run.contains("::") || run.chars().any(|c| c.is_ascii_alphabetic());
    if v6_like && run.matches(':').count() >= 2 && run.parse::<std::net::Ipv6Addr>().is_ok() {
        return Some((j - i, "ADDR"));
    }
    if run.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some((j - i, "ADDR"));
    }
    if let Some((a, p)) = run.rsplit_once(':')
        && a.parse::<std::net::Ipv4Addr>().is_ok()
        && !p.is_empty()
        && p.chars().all(|c| c.is_ascii_digit())
    {
        return Some((j - i, "ADDR:N"));
    }
    None
}

/// An iperf3 cookie (a word of 26+ base32 characters, letters and digits)
/// starting at `i`: its length.
fn cookie_at(ch: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    while j < ch.len() && ch[j].is_ascii_alphanumeric() {
        j += 1;
    }
    let w = &ch[i..j];
    (w.len() >= 26
        && w.iter().all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(c))
        && w.iter().any(|c| c.is_ascii_digit())
        && w.iter().any(|c| c.is_ascii_lowercase())
        && ch.get(j) != Some(&'_'))
    .then_some(j - i)
}

/// A printed non-finite float (`nan`, `-nan`, `inf`, `-inf`, any case) as a
/// whole word starting at `i`: its length. (iperf 2.1.8 prints `(-nan%)`
/// loss for an interval a loaded machine left without datagrams.)
fn non_finite_at(ch: &[char], i: usize) -> Option<usize> {
    let prev = if i > 0 { Some(ch[i - 1]) } else { None };
    let mut j = i;
    if ch[j] == '-' {
        if prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == ')' || p == '.') {
            return None;
        }
        j += 1;
    }
    let start = j;
    while ch.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
        j += 1;
    }
    let w: String = ch[start..j].iter().collect::<String>().to_ascii_lowercase();
    (w == "nan" || w == "inf").then_some(j - i)
}

/// A number starting at `i` (not inside a word): its length. Decimal with
/// any number of `.digits` groups (so versions are one number), an exponent,
/// a leading minus where it cannot be a range's dash, or `0x` hex.
fn number_at(ch: &[char], i: usize) -> Option<usize> {
    let digit = |k: usize| ch.get(k).is_some_and(|c| c.is_ascii_digit());
    let prev = if i > 0 { Some(ch[i - 1]) } else { None };
    if prev.is_some_and(|p| p.is_ascii_alphabetic() || p == '_') {
        return None;
    }
    let mut j = i;
    if ch[j] == '-' {
        if prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == ')' || p == '.') || !digit(j + 1) {
            return None;
        }
        j += 1;
    }
    if !digit(j) {
        return None;
    }
    if ch[j] == '0' && matches!(ch.get(j + 1), Some('x' | 'X')) && ch.get(j + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        j += 2;
        while ch.get(j).is_some_and(|c| c.is_ascii_hexdigit()) {
            j += 1;
        }
        return Some(j - i);
    }
    while digit(j) {
        j += 1;
    }
    while ch.get(j) == Some(&'.') && digit(j + 1) {
        j += 1;
        while digit(j) {
            j += 1;
        }
    }
    if matches!(ch.get(j), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(ch.get(k), Some('+' | '-')) {
            k += 1;
        }
        if digit(k) {
            while digit(k) {
                k += 1;
            }
            if !ch.get(k).is_some_and(|c| c.is_ascii_alphabetic()) {
                j = k;
            }
        }
    }
    Some(j - i)
}

/// A unit word with its magnitude prefix replaced by `?`.
fn unit(word: &str, keep_rate_units: bool) -> Option<String> {
    const BASES: [&str; 5] = ["Bytes", "Byte", "bits/sec", "Bytes/sec", "Byte/sec"];
    let (prefixed, base) = match word.chars().next() {
        Some('K' | 'M' | 'G' | 'T') if BASES.contains(&&word[1..]) => (true, &word[1..]),
        _ => (false, word),
    };
    if !BASES.contains(&base) || (keep_rate_units && base.ends_with("/sec")) {
        return None;
    }
    let _ = prefixed;
    Some(format!("?{base}"))
}

/// A CSV row's shape: column count and a type per column.
fn csv_row(line: &str) -> Option<String> {
    let line = line.trim_end();
    if line.matches(',').count() < 2 || line.contains(char::is_whitespace) {
        return None;
    }
    let cols: Vec<&str> = line.split(',').collect();
    let types: Vec<&str> = cols.iter().map(|c| csv_type(c)).collect();
    Some(format!("csv {} columns: {}", cols.len(), types.join(",")))
}

fn csv_type(c: &str) -> &'static str {
    let int = |s: &str| {
        let s = s.strip_prefix('-').unwrap_or(s);
        !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
    };
    let float = |s: &str| {
        int(s)
            || (s.parse::<f64>().is_ok()
                && s.chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
    };
    if c.is_empty() {
        "empty"
    } else if int(c) {
        "int"
    } else if float(c) {
        "float"
    } else if c.parse::<std::net::IpAddr>().is_ok() {
        "ip"
    } else if let Some((a, b)) = c.split_once('-')
        && float(a)
        && float(b)
    {
        "range"
    } else {
        "text"
    }
}

/// Keys of the window advice (`end.advice`) that exist exactly when the
/// advice says a window held the sender back, and their types.
const ADVICE_WINDOW_KEYS: [(&str, &str); 3] = [
    ("target_bits_per_second", "number"),
    ("suggested_window_bytes", "number"),
    ("suggested_option", "string"),
];

/// The `Window needed ...` line of the window advice (already normalised)
/// with either of its endings as one: what it suggests, not why.
fn advice_tail(line: &str) -> String {
    if !line.starts_with("Window needed") {
        return line.to_string();
    }
    let Some(at) = line.rfind("-> try -w ") else {
        return line.to_string();
    };
    let head = line.split(", less than the ").next().unwrap_or(line);
    let head = head.split(" -> try -w ").next().unwrap_or(head);
    let option = line[at..].split_whitespace().nth(3).unwrap_or("").trim_end_matches('.');
    format!("{head} -> try -w {option}")
}

/// What limits a full-speed loopback test (the receive window, the send
/// buffer, the path or the CPU) depends on the machine's load, and with it
/// whether the advice has the keys above. When they are there exactly as
/// `limited_by` says they should be, they are shown the same either way
/// (the keys returned here); otherwise they are shown as found, and differ.
fn advice_keys(m: &serde_json::Map<String, serde_json::Value>) -> Vec<&'static str> {
    let window = matches!(
        m.get("limited_by").and_then(|v| v.as_str()),
        Some("receive_window" | "send_buffer")
    );
    let types_ok = ADVICE_WINDOW_KEYS.iter().all(|(k, t)| match m.get(*k) {
        None => true,
        Some(v) => (*t == "number" && v.is_number()) || (*t == "string" && v.is_string()),
    });
    let all_there = ADVICE_WINDOW_KEYS.iter().all(|(k, _)| m.contains_key(*k));
    let none_there = ADVICE_WINDOW_KEYS.iter().all(|(k, _)| !m.contains_key(*k));
    if m.contains_key("limited_by") && types_ok && ((window && all_there) || (!window && none_there)) {
        ADVICE_WINDOW_KEYS.iter().map(|(k, _)| *k).collect()
    } else {
        Vec::new()
    }
}

/// The JSON type of every path in `v` (array elements as `[]`); the text of
/// `error` strings. Paths in order, types joined with `|`.
fn json_types(v: &serde_json::Value, n: &Normaliser) -> Vec<(String, String)> {
    fn walk(v: &serde_json::Value, path: &str, n: &Normaliser, out: &mut BTreeMap<String, BTreeSet<String>>) {
        use serde_json::Value;
        let t = match v {
            Value::Null => "null".to_string(),
            Value::Bool(_) => "bool".to_string(),
            Value::Number(_) => "number".to_string(),
            Value::String(s) if path.ends_with(".error") => format!("string {:?}", n.line(s)),
            Value::String(_) => "string".to_string(),
            Value::Array(_) => "array".to_string(),
            Value::Object(_) => "object".to_string(),
        };
        if !path.is_empty() {
            out.entry(path.to_string()).or_default().insert(t);
        }
        match v {
            Value::Object(m) => {
                let conditional = if path.ends_with(".advice") {
                    advice_keys(m)
                } else {
                    Vec::new()
                };
                for (k, x) in m {
                    if !conditional.contains(&k.as_str()) {
                        walk(x, &format!("{path}.{k}"), n, out);
                    }
                }
                for (k, t) in ADVICE_WINDOW_KEYS {
                    if conditional.contains(&k) {
                        out.entry(format!("{path}.{k}"))
                            .or_default()
                            .insert(format!("{t} exactly when limited_by is a window"));
                    }
                }
            }
            Value::Array(a) => {
                for x in a {
                    walk(x, &format!("{path}[]"), n, out);
                }
            }
            _ => {}
        }
    }
    let mut m = BTreeMap::new();
    walk(v, "", n, &mut m);
    m.into_iter()
        .map(|(p, t)| (p, t.into_iter().collect::<Vec<_>>().join("|")))
        .collect()
}

/// Collapses repetition: a block of 1 to 8 lines repeated back to back
/// becomes one copy, until nothing changes.
fn collapse(mut v: Vec<String>) -> Vec<String> {
    loop {
        let mut changed = false;
        for k in 1..=8 {
            let mut i = 0;
            while i + 2 * k <= v.len() {
                if v[i..i + k] == v[i + k..i + 2 * k] {
                    v.drain(i + k..i + 2 * k);
                    changed = true;
                } else {
                    i += 1;
                }
            }
        }
        if !changed {
            return v;
        }
    }
}

// ---------------------------------------------------------------------------
// Comparing.

/// A line diff of `old` and `new` (longest common subsequence), unified
/// style with 3 lines of context.
fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // (tag, line): ' ' both, '-' golden only, '+' this run only.
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near = |k: usize| {
        let lo = k.saturating_sub(3);
        let hi = (k + 3).min(ops.len() - 1);
        ops[lo..=hi].iter().any(|(t, _)| *t != ' ')
    };
    let mut out = String::from("--- golden\n+++ this run\n");
    let mut skipped = false;
    for (k, (t, l)) in ops.iter().enumerate() {
        if near(k) {
            if skipped {
                out.push_str("@@ ... @@\n");
                skipped = false;
            }
            out.push_str(&format!("{t}{l}\n"));
        } else {
            skipped = true;
        }
    }
    out
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

#[test]
fn golden_matrix() {
    let started = Instant::now();
    let bin = std::env::var_os("WIRESPEED_GOLDEN_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_wirespeed")));
    let bless = env_flag("WIRESPEED_BLESS");
    let repeat: usize = std::env::var("WIRESPEED_GOLDEN_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let jobs: usize = std::env::var("WIRESPEED_GOLDEN_JOBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let only: Vec<String> = std::env::var("WIRESPEED_GOLDEN_ONLY")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let dump = std::env::var_os("WIRESPEED_GOLDEN_DUMP").map(PathBuf::from);
    if let Some(d) = &dump {
        std::fs::create_dir_all(d).unwrap();
    }
    eprintln!("golden: binary under test {}", bin.display());

    // Which peers exist (peer() prints the NOTICE, or panics when required).
    let has_iperf3 = peer("iperf3").is_some();
    let has_iperf = peer("iperf").is_some();
    let available = |c: &Case| {
        let progs = [Some(c.client.0), c.server.map(|s| s.0)];
        progs.iter().flatten().all(|p| match p {
            Prog::Ws => true,
            Prog::Iperf3 => has_iperf3,
            Prog::Iperf => has_iperf,
        })
    };
    let mut names = HashSet::new();
    for c in CASES {
        assert!(names.insert(c.name), "two cases are named {}", c.name);
    }
    let selected: Vec<&Case> = CASES
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.name.contains(o.as_str())))
        .collect();
    let mut skipped = Vec::new();
    let mut work: Vec<(usize, usize)> = Vec::new(); // (case index in selected, repetition)
    for rep in 0..repeat {
        for (k, c) in selected.iter().enumerate() {
            if available(c) {
                work.push((k, rep));
            } else if rep == 0 {
                eprintln!("NOTICE: golden case {} skipped (a real peer is missing)", c.name);
                skipped.push(c.name);
            }
        }
    }

    let normaliser = Normaliser::new();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, usize, String)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(work.len()).max(1) {
            s.spawn(|| {
                loop {
                    let w = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(k, rep)) = work.get(w) else { break };
                    let c = selected[k];
                    let t = Instant::now();
                    let cap = run_case(c, &bin);
                    let text = render(c, &cap, &normaliser);
                    if let Some(d) = &dump {
                        let raw = format!(
                            "== client stdout\n{}== client stderr\n{}== client exit {}\n{}",
                            cap.client_out,
                            cap.client_err,
                            cap.client_exit,
                            cap.server
                                .as_ref()
                                .map(|(o, e, x)| format!(
                                    "== server stdout\n{o}== server stderr\n{e}== server exit {x}\n"
                                ))
                                .unwrap_or_default()
                        );
                        let _ = std::fs::write(d.join(format!("{}.{rep}.raw", c.name)), raw);
                        let _ = std::fs::write(d.join(format!("{}.{rep}.txt", c.name)), &text);
                    }
                    eprintln!("golden: {} ({:.1} s)", c.name, t.elapsed().as_secs_f64());
                    results.lock().unwrap().push((k, rep, text));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort();
    let dir = golden_dir();

    if bless {
        std::fs::create_dir_all(&dir).unwrap();
        for (k, rep, text) in &results {
            if *rep == 0 {
                std::fs::write(dir.join(format!("{}.txt", selected[*k].name)), text).unwrap();
            }
        }
        if only.is_empty() {
            // Files of cases that no longer exist go.
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(stem) = name.strip_suffix(".txt")
                    && !CASES.iter().any(|c| c.name == stem)
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        eprintln!(
            "golden: blessed {} cases in {:.1} s",
            results.len(),
            started.elapsed().as_secs_f64()
        );
        return;
    }

    let mut failures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (k, rep, text) in &results {
        let c = selected[*k];
        let path = dir.join(format!("{}.txt", c.name));
        let golden = std::fs::read_to_string(&path).unwrap_or_default();
        if golden != *text {
            let d = if golden.is_empty() {
                format!("no golden file {} (bless with WIRESPEED_BLESS=1)\n", path.display())
            } else {
                diff(&golden, text)
            };
            let v = failures.entry(c.name).or_default();
            if !v.iter().any(|x| x.ends_with(&d)) {
                v.push(format!("(run {})\n{d}", rep + 1));
            } else {
                v.push(format!("(run {}: the same difference)", rep + 1));
            }
        }
    }
    let mut stale = Vec::new();
    if only.is_empty() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".txt")
                && !CASES.iter().any(|c| c.name == stem)
            {
                stale.push(name);
            }
        }
    }
    eprintln!(
        "golden: {} runs of {} cases in {:.1} s, {} skipped",
        results.len(),
        selected.len(),
        started.elapsed().as_secs_f64(),
        skipped.len()
    );
    if !failures.is_empty() || !stale.is_empty() {
        let mut msg = String::new();
        for (name, diffs) in &failures {
            msg.push_str(&format!("\n===== golden case {name} differs =====\n"));
            for d in diffs {
                msg.push_str(d);
                msg.push('\n');
            }
        }
        for s in &stale {
            msg.push_str(&format!(
                "\ngolden file tests/golden/{s} has no case (remove it or bless)\n"
            ));
        }
        eprintln!("{msg}");
        panic!(
            "golden: {} of {} cases differ: {}{}",
            failures.len(),
            selected.len(),
            failures.keys().copied().collect::<Vec<_>>().join(", "),
            if stale.is_empty() {
                String::new()
            } else {
                format!("; stale files: {}", stale.join(", "))
            }
        );
    }
}

// ---------------------------------------------------------------------------
// Unit tests of the normaliser.

#[cfg(test)]
mod normaliser_tests {
    use super::*;

    fn line(s: &str) -> String {
        Normaliser::plain().line(s)
    }

    fn text(s: &str) -> Vec<String> {
        Normaliser::plain().normalise(s, Format::Text)
    }

    #[test]
    fn numbers_of_every_form() {
        assert_eq!(
            line("a 12 b 3.25 c -7 d 1.5e+09 e 2E-3 f 0x1F g -0.5"),
            "a N b N c N d N e N f N g N"
        );
        assert_eq!(line("(0%) 10/76 (13.2%)"), "(N%) N/N (N%)");
        assert_eq!(line("irtt=319/32741/117 ct=0.51 ms"), "irtt=N/N/N ct=N ms");
        assert_eq!(line("1023K/54(21) us"), "NK/N(N) us");
        assert_eq!(line("(peer 2.1.8) wirespeed 0.1.0"), "(peer N) wirespeed N");
        assert_eq!(line("0/0 (-nan%) x nan, inf -inf NaN"), "N/N (N%) x N, N N N");
        assert_eq!(line("info nano inference"), "info nano inference");
    }

    #[test]
    fn digits_inside_words_stay() {
        assert_eq!(line("iperf3 x86_64 T8(f)-PDF ipv6"), "iperf3 x86_64 T8(f)-PDF ipv6");
        assert_eq!(line("--iperf2 -P 2"), "--iperf2 -P N");
    }

    #[test]
    fn ranges() {
        // Where an interval starts does not matter: how many intervals a
        // test prints (one, when a loaded machine starves the reporter for
        // a second) is timing.
        assert_eq!(line("[  6]   0.00-1.00   sec"), "[ N] N-N sec");
        assert_eq!(line("[  6]   1.00-2.00   sec"), "[ N] N-N sec");
        assert_eq!(line("[SUM] 0.0000-2.0011 sec"), "[SUM] N-N sec");
        // A dash between numbers is not a minus sign.
        assert_eq!(line("2026-11-23 21:55:11"), "N-N-N N:N:N");
        assert_eq!(line("x -3-4"), "x N-N");
    }

    #[test]
    fn addresses() {
        assert_eq!(
            line("[  6] local 127.0.0.1 port 50916 connected to 127.0.0.1 port 45123"),
            "[ N] local ADDR port N connected to ADDR port N"
        );
        assert_eq!(
            line("host ::1, fe80::1%lo and ::ffff:127.0.0.1."),
            "host ADDR, ADDR%lo and ADDR."
        );
        assert_eq!(line("to 127.0.0.1:5201 now"), "to ADDR:N now");
        assert_eq!(line("local 127.0.0.1%lo port"), "local ADDR%lo port");
        // Times and hex-looking words are not addresses.
        assert_eq!(line("at 21:55:11 add cafe"), "at N:N:N add cafe");
        assert_eq!(line("41271=4292:0:0:5595:4001:0:0:27383"), "N=N:N:N:N:N:N:N:N");
        assert_eq!(line("2001:db8:1:2:3:4:5:6 and 1:2::3"), "ADDR and ADDR");
    }

    #[test]
    fn cookies() {
        assert_eq!(line("Cookie: v33dfyffpsvgu23tbigyakx4xsqmm2k3z6p7"), "Cookie: COOKIE");
        assert_eq!(line("Cookie: 7j4xul4n3tdpdl7aorqeqlyqc7piy7is4o22"), "Cookie: COOKIE");
        // Long ordinary words are not cookies.
        assert_eq!(line("abcdefghijklmnopqrstuvwxyzabc"), "abcdefghijklmnopqrstuvwxyzabc");
    }

    #[test]
    fn dates_and_time_zones() {
        assert_eq!(
            line("Time: Mon, 23 Nov 2026 21:56:21 GMT"),
            "Time: DAY, N MON N N:N:N GMT"
        );
        assert_eq!(
            line("connected on 2026-11-23 21:55:11 (UTC)"),
            "connected on N-N-N N:N:N (TZ)"
        );
        assert_eq!(line("20261123215516,127.0.0.1,57612"), "N,ADDR,N");
    }

    #[test]
    fn units_lose_their_prefix() {
        assert_eq!(
            line("[  6]   0.00-1.00   sec  3.28 GBytes  28.1 Gbits/sec   14   1023 KBytes"),
            "[ N] N-N sec N ?Bytes N ?bits/sec N N ?Bytes"
        );
        assert_eq!(
            line("2.00-2.00 sec   640 KBytes  20.1 bits/sec"),
            "N-N sec N ?Bytes N ?bits/sec"
        );
        assert_eq!(
            line("Read buffer size:  128 KByte (Dist bin width=16.0 KByte)"),
            "Read buffer size: N ?Byte (Dist bin width=N ?Byte)"
        );
        assert_eq!(
            line("18944060 Bytes  36564486 Bytes/sec 5 MBytes/sec"),
            "N ?Bytes N ?Bytes/sec N ?Bytes/sec"
        );
        // Words that merely contain a unit stay.
        assert_eq!(line("131072 byte blocks, Bitrate"), "N byte blocks, Bitrate");
        let keep = Normaliser {
            uname: None,
            keep_rate_units: true,
        };
        assert_eq!(keep.line("2.90 GBytes  24923 Mbits/sec"), "N ?Bytes N Mbits/sec");
    }

    #[test]
    fn machine_specific_words() {
        assert_eq!(line("snd_tcp_congestion bbr"), "snd_tcp_congestion CC");
        assert_eq!(line("rcv_tcp_congestion cubic"), "rcv_tcp_congestion CC");
        let n = Normaliser {
            uname: Some("Linux vm 6.1.0 #1 SMP x86_64".into()),
            keep_rate_units: false,
        };
        assert_eq!(n.line("Linux vm 6.1.0 #1 SMP x86_64"), "UNAME");
    }

    #[test]
    fn histogram_bins_fold() {
        assert_eq!(
            line(concat!(
                "[  1] 0.00-1.00 sec T8-PDF: bin(w=100us):cnt(849)=1:848,2:1 ",
                "(5.00/95.00/99.7%=1/1/2,Outliers=0,obl/obu=0/0)"
            )),
            "[ N] N-N sec T8-PDF: bin(w=Nus):cnt(N)=BINS (N/N/N%=N/N/N,Outliers=N,obl/obu=N/N)"
        );
        assert_eq!(line("cnt(9)=3:9 (x)"), "cnt(N)=BINS (x)");
        assert_eq!(line("44198=5002:1:1:6413:4711:9:0:28061"), "N=N:N:N:N:N:N:N:N");
    }

    #[test]
    fn blanks_collapse_and_lines_trim() {
        assert_eq!(line("   a    b\t c   "), "a b c");
    }

    #[test]
    fn repetition_collapses() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(collapse(v(&["a", "a", "a", "b"])), v(&["a", "b"]));
        // Interval groups, however many, fold into one.
        assert_eq!(
            collapse(v(&[
                "h", "x", "x", "s", "-", "x", "x", "s", "-", "x", "x", "s", "-", "t"
            ])),
            v(&["h", "x", "s", "-", "t"])
        );
        assert_eq!(
            collapse(v(&["a", "b", "a", "b", "c", "a", "b"])),
            v(&["a", "b", "c", "a", "b"])
        );
        // An iperf3 client: two intervals and a sliver have one shape.
        let out = "[  6]   0.00-1.00   sec  3.28 GBytes  28.1 Gbits/sec\n\
                   [  6]   1.00-2.00   sec  2.82 GBytes  24.3 Gbits/sec\n\
                   [  6]   2.00-2.00   sec   640 KBytes  20.1 Gbits/sec\n\
                   [  6]   0.00-2.00   sec  6.10 GBytes  26.2 Gbits/sec  sender\n";
        assert_eq!(
            text(out),
            v(&[
                "[ N] N-N sec N ?Bytes N ?bits/sec",
                "[ N] N-N sec N ?Bytes N ?bits/sec sender"
            ])
        );
    }

    #[test]
    fn csv_rows() {
        let n = Normaliser::plain();
        let out = "20261123215516,127.0.0.1,57612,127.0.0.1,45124,1,0.0-1.0,4076994620,32615956960\n\
                   20261123215517,127.0.0.1,57612,127.0.0.1,45124,1,1.0-2.0,4681891840,37455134720\n\
                   20261123215517,127.0.0.1,57612,127.0.0.1,45124,1,0.0-2.0,8758886460,35021336615\n\
                   20261123215517,::1,57612,127.0.0.1,45124,-1,0.0-2.0,0.002,,text\n";
        assert_eq!(
            n.normalise(out, Format::Csv),
            vec![
                "csv 9 columns: int,ip,int,ip,int,int,range,int,int",
                "csv 10 columns: int,ip,int,ip,int,int,range,float,empty,text",
            ]
        );
        // Lines that are not CSV rows are text.
        assert_eq!(n.normalise("WARNING: 5 things", Format::Csv), vec!["WARNING: N things"]);
    }

    #[test]
    fn json_documents() {
        let n = Normaliser::plain();
        let doc = r#"{"start": {"cookie": "abc", "n": 1, "ok": true, "x": null},
                      "intervals": [{"streams": [{"bytes": 5}]}, {"streams": [{"bytes": 6.5}]}],
                      "empty": [], "error": "unable to connect to server - 127.0.0.1 port 5"}
                     {"a": 1}
                     trailing 5 words"#;
        assert_eq!(
            n.normalise(doc, Format::Json),
            vec![
                "JSON document 1:",
                ".empty: array",
                ".error: string \"unable to connect to server - ADDR port N\"",
                ".intervals: array",
                ".intervals[]: object",
                ".intervals[].streams: array",
                ".intervals[].streams[]: object",
                ".intervals[].streams[].bytes: number",
                ".start: object",
                ".start.cookie: string",
                ".start.n: number",
                ".start.ok: bool",
                ".start.x: null",
                "JSON document 2:",
                ".a: number",
                "(not JSON from here on:)",
                "trailing N words",
            ]
        );
    }

    #[test]
    fn window_advice_keys_follow_limited_by() {
        let n = Normaliser::plain();
        let shape = |doc: &str| n.normalise(doc, Format::Json);
        let window = shape(
            r#"{"end": {"advice": {"limited_by": "receive_window", "target_bits_per_second": 1.5,
                "suggested_window_bytes": 16384, "suggested_option": "-w 16K"}}}"#,
        );
        let path = shape(r#"{"end": {"advice": {"limited_by": "path"}}}"#);
        assert_eq!(window, path);
        assert!(
            window.contains(&".end.advice.suggested_option: string exactly when limited_by is a window".to_string())
        );
        // Keys that break the rule show as they are.
        let wrong = shape(r#"{"end": {"advice": {"limited_by": "path", "suggested_option": "-w 16K"}}}"#);
        assert_ne!(wrong, path);
        assert!(
            wrong.contains(&".end.advice.suggested_option: string".to_string()),
            "{wrong:?}"
        );
        let missing = shape(r#"{"end": {"advice": {"limited_by": "send_buffer"}}}"#);
        assert_ne!(missing, path);
    }

    #[test]
    fn json_streams() {
        let n = Normaliser::plain();
        let s = "{\"event\":\"start\",\"data\":{\"a\":1}}\n\
                 {\"event\":\"interval\",\"data\":{\"b\":1}}\n\
                 {\"event\":\"interval\",\"data\":{\"b\":null}}\n\
                 {\"event\":\"end\",\"data\":{}}\n";
        assert_eq!(
            n.normalise(s, Format::JsonStream),
            vec![
                "Events:",
                "event start",
                "event interval",
                "event end",
                "Event end:",
                ".data: object",
                ".event: string",
                "Event interval:",
                ".data: object",
                ".data.b: null|number",
                ".event: string",
                "Event start:",
                ".data: object",
                ".data.a: number",
                ".event: string",
            ]
        );
    }

    #[test]
    fn flows_regroup() {
        let out = concat!(
            "banner\n[  1] local\n[  2] local\n[ ID] h\n[  1] a\n",
            "[ ID] h2\n[  2] b\n[  1] c\n[  2] d\nx\n[  1] e\ntail\n"
        );
        assert_eq!(
            by_flow(out),
            concat!(
                "banner\n[ ID] h\n[ ID] h2\n[  1] local\n[  1] a\n[  1] c\nx\n[  1] e\n",
                "[  2] local\n[  2] b\n[  2] d\ntail\n"
            )
        );
        // The same flows in another interleaving.
        let other = concat!(
            "banner\n[  2] local\n[  1] local\n[ ID] h2\n[  2] b\n[ ID] h\n",
            "[  1] a\n[  2] d\n[  1] c\nx\n[  1] e\ntail\n"
        );
        assert_eq!(by_flow(other), by_flow(out));
    }

    #[test]
    fn either_ending_of_the_window_needed_line_is_one() {
        let a = "Window needed to let the rate grow Nx: N ?bits/sec x N ms = N ?Bytes -> try -w NK (on both ends; repeat until the test is no longer window-limited).";
        let b = "Window needed to let the rate grow Nx: N ?bits/sec x N ms = N ?Bytes, less than the N ?Bytes window that held the test back, which is too small to keep segments flowing: double it -> try -w NK.";
        let one = "Window needed to let the rate grow Nx: N ?bits/sec x N ms = N ?Bytes -> try -w NK";
        assert_eq!(advice_tail(a), one);
        assert_eq!(advice_tail(b), one);
        assert_eq!(advice_tail("In flight: N"), "In flight: N");
    }

    #[test]
    fn formats_from_arguments() {
        assert_eq!(Format::of("-c h -J"), Format::Json);
        assert_eq!(Format::of("-c h --json-stream"), Format::JsonStream);
        assert_eq!(Format::of("--iperf2 -c h -y C"), Format::Csv);
        assert_eq!(Format::of("-c h -t 2"), Format::Text);
    }

    #[test]
    fn diffs_show_both_sides() {
        let d = diff("a\nb\nc\n", "a\nx\nc\n");
        assert!(d.contains("-b\n") && d.contains("+x\n") && d.contains(" a\n"), "{d}");
    }
}
