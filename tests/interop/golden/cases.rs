//! The golden matrix's cases: each a name, an optional server and a
//! client (see the module's documentation).

use super::*;

pub(super) const CASES: &[Case] = &[
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
