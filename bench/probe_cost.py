#!/usr/bin/env python3
"""What one Prometheus probe costs beyond its period: `wirespeed exporter`
side by side with edgard/iperf3_exporter (which runs `iperf3 -J -t N -c
HOST` per probe), both probing the same target on loopback.

    python3 bench/probe_cost.py [--rounds 8] [--periods 1,3] [--wirespeed PATH]
                                [--iperf3-server PATH] [--direct]

    IPERF3_EXPORTER=/opt/peers/iperf3_exporter/iperf3_exporter \\
    IPERF3=/opt/peers/iperf3-new/bin/iperf3 python3 bench/probe_cost.py

Targets: a wirespeed server (`wirespeed -s`) always; a real iperf3 server
too when `--iperf3-server PATH` is given (default: $IPERF3 when set).
Exporters: `wirespeed exporter` always; iperf3_exporter when
$IPERF3_EXPORTER names its binary, running the iperf3 that $IPERF3 names
(default: `iperf3` on PATH), put first in its PATH as `iperf3`. For each
target and period the exporters take turns (A B A B ...), one
`/probe?target=127.0.0.1&port=P&period=Ns` each, and the wall time of the
whole HTTP request is what counts: overhead = wall - period, median with
(min-max), and its ratio to iperf3_exporter's. Every probe must answer
`iperf3_up 1`; the table says how many did. `--direct` also times the
bare clients (`wirespeed -c` and `iperf3 -J -c` with `-t N`), to tell the
exporter's share of the overhead from the test's own.

Ports are free ones on 127.0.0.1; every process is bounded in time (the
probes by their HTTP timeout, the clients by subprocess timeouts, the
servers and exporters by the script's own deadline, --max-seconds) and
ended by its pid (bench.py's Server), never by name.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

WS = "wirespeed exporter"
IE = "iperf3_exporter"


class Deadline(Exception):
    pass


def on_signal(signum, _frame):
    raise Deadline(f"signal {signum}: stopping")


def metric(text, name):
    """A sample's value, with or without labels (iperf3_exporter labels
    every sample with target and port; wirespeed does not)."""
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            try:
                return float(line.rsplit(None, 1)[1])
            except (IndexError, ValueError):
                return None
    return None


def probe(port, target_port, period, timeout):
    """(wall seconds, iperf3_up, the exporter's own test seconds or None, error)."""
    url = f"http://127.0.0.1:{port}/probe?target=127.0.0.1&port={target_port}&period={period:g}s"
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = r.read().decode(errors="replace")
            err = r.headers.get("X-Wirespeed-Probe-Error")
    except (urllib.error.URLError, OSError) as e:
        return time.monotonic() - t0, None, None, str(e)[:120]
    wall = time.monotonic() - t0
    return wall, metric(body, "iperf3_up"), metric(body, "wirespeed_probe_duration_seconds"), err


def direct(argv, timeout):
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        ok = r.returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    return time.monotonic() - t0, ok


def version(path):
    """`iperf 3.12` from `iperf3 --version`'s first line."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, timeout=10).stdout.decode(errors="replace")
        return " ".join(out.split()[:2]) or path
    except (OSError, subprocess.TimeoutExpired):
        return path


def ms_cell(xs):
    return bench.cell([x * 1000 for x in xs], 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--periods", default="1,3", help="seconds, comma-separated")
    ap.add_argument("--wirespeed", default=os.path.join(bench.ROOT, "target", "release", "wirespeed"))
    ap.add_argument("--iperf3-server", default=os.environ.get("IPERF3"),
                    help="also probe a real iperf3 server run from this binary (default $IPERF3)")
    ap.add_argument("--direct", action="store_true", help="also time the bare clients")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="end everything after this long (default: generous for the runs asked)")
    a = ap.parse_args()
    periods = [float(p) for p in a.periods.split(",") if p]
    if not os.access(a.wirespeed, os.X_OK):
        sys.exit(f"no wirespeed binary at {a.wirespeed} (build it, or give --wirespeed)")

    iperf3 = os.environ.get("IPERF3") or shutil.which("iperf3")
    skipped = []
    exporter_bin = os.environ.get("IPERF3_EXPORTER")
    if not exporter_bin:
        skipped.append(f"{IE}: skipped, IPERF3_EXPORTER (its binary) is not set")
    elif not os.access(exporter_bin, os.X_OK):
        skipped.append(f"{IE}: skipped, IPERF3_EXPORTER={exporter_bin} is not an executable")
        exporter_bin = None
    elif not iperf3 or not os.access(iperf3, os.X_OK):
        skipped.append(f"{IE}: skipped, no iperf3 for it to run (IPERF3 unset and none on PATH)")
        exporter_bin = None
    if not a.iperf3_server:
        skipped.append("target iperf3 -s: skipped, neither --iperf3-server nor IPERF3 given")
    elif not os.access(a.iperf3_server, os.X_OK):
        skipped.append(f"target iperf3 -s: skipped, {a.iperf3_server} is not an executable")
        a.iperf3_server = None

    n_targets = 1 + bool(a.iperf3_server)
    n_exp = 1 + bool(exporter_bin)
    planned = n_targets * a.rounds * sum(p + 2 for p in periods) * (n_exp + (2 if a.direct else 0))
    limit = a.max_seconds or planned * 2 + 60
    signal.signal(signal.SIGALRM, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.alarm(int(limit) + 1)

    procs = []
    bindir = tempfile.mkdtemp(prefix="probecost-")
    samples = {}  # (target, period, who) -> list of (wall, up, own)
    errors = {}
    try:
        targets = []
        port = bench.free_port()
        procs.append(bench.Server([a.wirespeed, "-s", "-p", str(port), "-B", "127.0.0.1"], port))
        targets.append(("wirespeed -s", port))
        if a.iperf3_server:
            port = bench.free_port()
            procs.append(bench.Server([a.iperf3_server, "-s", "-p", str(port), "-B", "127.0.0.1"], port))
            targets.append((f"{version(a.iperf3_server)} -s", port))

        exporters = []
        port = bench.free_port()
        procs.append(bench.Server([a.wirespeed, "exporter", "--listen", f"127.0.0.1:{port}"], port))
        exporters.append((WS, port))
        if exporter_bin:
            os.symlink(os.path.abspath(iperf3), os.path.join(bindir, "iperf3"))
            env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
            port = bench.free_port()
            procs.append(bench.Server([exporter_bin, f"--web.listen-address=127.0.0.1:{port}",
                                       "--log.level=warn"], port, env=env))
            exporters.append((IE, port))

        clients = []
        if a.direct:
            clients.append(("wirespeed -c (bare)", lambda tp, p: [a.wirespeed, "-c", "127.0.0.1", "-p", str(tp), "-t", f"{p:g}"]))
            if iperf3:
                clients.append(("iperf3 -J -c (bare)", lambda tp, p: [iperf3, "-J", "-c", "127.0.0.1", "-p", str(tp), "-t", f"{p:g}"]))

        for tname, tport in targets:
            for p in periods:
                # One probe each first, not counted: caches, first connections.
                for who, eport in exporters:
                    probe(eport, tport, p, p + 30)
                for _ in range(a.rounds):
                    for who, eport in exporters:
                        wall, up, own, err = probe(eport, tport, p, p + 30)
                        samples.setdefault((tname, p, who), []).append((wall, up, own))
                        if err:
                            errors.setdefault((tname, p, who), err)
                    for who, argv in clients:
                        wall, ok = direct(argv(tport, p), p + 30)
                        samples.setdefault((tname, p, who), []).append((wall, 1.0 if ok else 0.0, None))
                for s in procs:
                    why = s.died()
                    if why:
                        print(f"warning: {s.argv[0]} {why}", file=sys.stderr)
    except Deadline as e:
        print(f"stopped early: {e}", file=sys.stderr)
    finally:
        signal.alarm(0)
        for s in reversed(procs):
            s.stop()
        shutil.rmtree(bindir, ignore_errors=True)

    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; "
          f"{a.rounds} rounds per period, exporters alternating; iperf3 for {IE}: {(iperf3 and version(iperf3)) or '-'} ({iperf3 or '-'})")
    for s in skipped:
        print(f"**{s}**")
    print()
    print("| target | period | who | wall ms | overhead ms (wall - period) | ratio to iperf3_exporter | iperf3_up 1 | exporter's own probe s |")
    print("|---|---|---|---|---|---|---|---|")
    for tname, _ in targets:
        for p in periods:
            ref = samples.get((tname, p, IE))
            ref_over = bench.med([w - p for w, _, _ in ref]) if ref else None
            for who in [WS, IE] + [c for c, _ in clients]:
                xs = samples.get((tname, p, who))
                if not xs:
                    continue
                over = [w - p for w, _, _ in xs]
                m = bench.med(over)
                ratio = f"{m / ref_over:.2f}" if ref_over and who != IE else ("1" if who == IE else "—")
                ups = sum(1 for _, u, _ in xs if u == 1.0)
                own = [o for _, _, o in xs if o is not None]
                print(f"| {tname} | {p:g} s | {who} | {ms_cell([w for w, _, _ in xs])} | "
                      f"{ms_cell(over)} | {ratio} | {ups}/{len(xs)} | "
                      f"{bench.cell(own, 3) if own else '—'} |")
    for k, e in errors.items():
        print(f"{k[2]} against {k[0]}, {k[1]:g} s: {e}")
    worst = [bench.med([w - p for w, _, _ in xs]) for (t, p, who), xs in samples.items() if who == WS]
    if worst:
        w = max(worst)
        print(f"\nwirespeed exporter: largest median overhead {w * 1000:.0f} ms "
              f"({'under' if w < 0.2 else 'NOT under'} the 200 ms goal)")


if __name__ == "__main__":
    main()
