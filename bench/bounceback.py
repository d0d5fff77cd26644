#!/usr/bin/env python3
"""Round trips side by side on loopback: iperf 2's bounceback
(`--bounceback --bounceback-period 0`: one 100-byte message at a time,
back to back) from wirespeed's iperf 2 dialect and from the real iperf 2
(Debian's 2.1.8, and a newer one from IPERF2_BIN), each against its own
server; and what `--latency` costs a TCP test's throughput.

    python3 bench/bounceback.py [--rounds 5] [--duration 3] [--wirespeed PATH]

Prints Markdown tables: round trips per second and mean RTT (each tool's
own final bounceback line: `N=avg/min/max/stdev ms ... R rps`), medians
with (min-max) over alternating rounds, and the ratio to the best peer
(goal: at least its rate, a lower RTT); then receiver Gbit/s with and
without `--latency` (goal: under 1 % apart); and, since that difference is
smaller than this machine's noise, what the probes cost directly: the CPU
both ends spend in a near-idle test (`-b 1k`) with and without them, per
second, as a share of the two CPUs a saturated test keeps busy. At full
speed the CPU is what runs out, so that share is what the probes can take
from a saturated test. Every process is bounded in time and ended by its
pid (bench.py's helpers).
"""

import argparse
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

# 2.1.8: `[  1] 0.0000-3.0001 sec  ...  102794=0.019/0.014/5.392/0.101 ms    0  576K/1818 us    53175 rps`
# 2.2.1: `[  1] 0.00-2.01 sec  ...  33155=0.060/0.014/4.092/0.034 ms    0   -(-)/-(-)    Tx=... RPS=16604`
FINAL = re.compile(
    r"^\[\s*\d+\]\s+0\.0+-\S+ sec .*?\s(\d+)=([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms"
    r".*?(?:\s(\d+) rps|RPS=(\d+))\s*$"
)


def parse(out):
    """(round trips, mean RTT ms, rps) from the last whole-test line."""
    found = None
    for line in out.splitlines():
        m = FINAL.match(line)
        if m:
            found = (int(m.group(1)), float(m.group(2)), int(m.group(6) or m.group(7)))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--wirespeed", default=os.path.join(bench.ROOT, "target", "release", "wirespeed"))
    a = ap.parse_args()
    tools = [("wirespeed", [a.wirespeed, "--iperf2"])]
    if shutil.which("iperf"):
        tools.append(("iperf 2 (Debian)", [shutil.which("iperf")]))
    if os.environ.get("IPERF2_BIN"):
        tools.append(("iperf 2 (IPERF2_BIN)", [os.environ["IPERF2_BIN"]]))
    servers = {}
    rps = {t: [] for t, _ in tools}
    rtt = {t: [] for t, _ in tools}
    try:
        for name, cmd in tools:
            port = bench.free_port()
            servers[name] = (bench.Server(cmd + ["-s", "-p", str(port)], port), port)
        for _ in range(a.rounds):
            for name, cmd in tools:
                _, port = servers[name]
                argv = cmd + ["-c", "127.0.0.1", "-p", str(port), "--bounceback", "--bounceback-period", "0",
                              "-t", str(a.duration)]
                r = bench.run_client(argv, a.duration + 20)
                got = parse(r["out"])
                if r["rc"] != 0 or not got:
                    print(f"  {name}: failed ({r['rc']}): {(r['err'] or r['out'])[-200:]}", file=sys.stderr)
                    continue
                n, mean, per_s = got
                rps[name].append(per_s)
                rtt[name].append(mean)
                print(f"  {name}: {n} round trips, mean {mean:.3f} ms, {per_s} rps", file=sys.stderr)
    finally:
        for s, _ in servers.values():
            s.stop()
    print(f"load average {os.getloadavg()[0]:.2f}; {a.rounds} rounds of {a.duration:g} s; "
          f"`python3 bench/bounceback.py --rounds {a.rounds} --duration {a.duration:g}`")
    print()
    print("| tool | round trips per second | mean RTT, ms |")
    print("|---|---|---|")
    for name, _ in tools:
        print(f"| {name} | {bench.cell(rps[name], 0)} | {bench.cell(rtt[name], 3)} |")
    peers = [n for n, _ in tools if n != "wirespeed" and rps[n]]
    if peers and rps["wirespeed"]:
        best_rps = max(bench.med(rps[n]) for n in peers)
        best_rtt = min(bench.med(rtt[n]) for n in peers)
        print(f"\nwirespeed / best peer: {bench.med(rps['wirespeed']) / best_rps:.2f}x the round trips per second "
              f"(goal >= 1), {bench.med(rtt['wirespeed']) / best_rtt:.2f}x the mean RTT (goal < 1)")

    # What --latency costs a TCP test (both ends wirespeed).
    port = bench.free_port()
    srv = bench.Server([a.wirespeed, "-s", "-p", str(port)], port)
    gbps = {"plain": [], "--latency": []}
    try:
        for _ in range(a.rounds):
            for label, extra in [("plain", []), ("--latency", ["--latency"])]:
                t = bench.Wirespeed(a.wirespeed, label=label)
                g, _ = bench.scenario_tcp([t], {label: srv}, 1, a.duration, 1, extra)
                gbps[label] += [x for x in g[label] if x is not None]
    finally:
        srv.stop()
    # The probes' own CPU: a near-idle test with and without them.
    port = bench.free_port()
    srv = bench.Server([a.wirespeed, "-s", "-p", str(port)], port)
    idle_secs = 10
    cpu_s = {"plain": [], "--latency": []}
    try:
        for _ in range(max(2, a.rounds // 2)):
            for label, extra in [("plain", []), ("--latency", ["--latency"])]:
                before = srv.cpu()
                argv = [a.wirespeed, "-c", "127.0.0.1", "-p", str(port), "-b", "1k", "-t", str(idle_secs)]
                r = bench.run_client(argv + extra, idle_secs + 30)
                if r["rc"] != 0:
                    print(f"  cpu {label}: failed ({r['rc']}): {r['err'][-200:]}", file=sys.stderr)
                    continue
                # Per second of the test (the idle probes before it included).
                cpu_s[label].append((r["cpu"] + srv.cpu() - before) / idle_secs * 1e3)
                print(f"  cpu {label}: {cpu_s[label][-1]:.2f} CPU ms/s", file=sys.stderr)
    finally:
        srv.stop()
    print("\n| TCP, 1 stream | receiver Gbit/s |")
    print("|---|---|")
    for label in gbps:
        print(f"| `{label}` | {bench.cell(gbps[label], 2)} |")
    if gbps["plain"] and gbps["--latency"]:
        cost = 1 - bench.med(gbps["--latency"]) / bench.med(gbps["plain"])
        print(f"\n--latency costs {100 * cost:.1f} % of the median (goal < 1 %)")
    print(f"\n| TCP at 1 kbit/s, {idle_secs} s | CPU ms per second, both ends |")
    print("|---|---|")
    for label in cpu_s:
        print(f"| `{label}` | {bench.cell(cpu_s[label], 2)} |")
    if cpu_s["plain"] and cpu_s["--latency"]:
        probes = bench.med(cpu_s["--latency"]) - bench.med(cpu_s["plain"])
        print(f"\nthe probes use {probes:.2f} CPU ms per second: {probes / 2000 * 100:.3f} % of the two CPUs "
              f"a saturated test keeps busy (goal < 1 %)")


if __name__ == "__main__":
    main()
