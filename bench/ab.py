#!/usr/bin/env python3
"""A/B runs of wirespeed against itself on loopback: one TCP test per
variant, variants alternating (A B C A B C ...), medians and spread of
receiver Gbit/s and CPU seconds per GB (both ends).

    python3 bench/ab.py [--rounds 3] [--duration 3] [--wirespeed PATH] VARIANT...

A variant is `SERVER_ENV;CLIENT_ENV;CLIENT_ARGS`, each env a comma-separated
list of NAME=value, for example:

    python3 bench/ab.py ';;' ';;-Z' ';;--skip-rx-copy'
    python3 bench/ab.py 'WIRESPEED_MUX=never;WIRESPEED_MUX=never;-P 4' \\
                        'WIRESPEED_MUX=always;WIRESPEED_MUX=always;-P 4'

`WS_BIN=PATH` in either env runs that binary on that end instead of
`--wirespeed` (to compare two builds: `'WS_BIN=/tmp/a;WS_BIN=/tmp/a;'
'WS_BIN=/tmp/b;WS_BIN=/tmp/b;'`); it is not passed to the process.

Variants with the same server environment share one server. Prints one
Markdown table row per variant. Every process is bounded in time and ended
by its pid (bench.py's helpers).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def parse(spec):
    try:
        senv, cenv, args = spec.split(";")
    except ValueError:
        sys.exit(f"variant {spec!r} is not SERVER_ENV;CLIENT_ENV;CLIENT_ARGS")

    def env(s):
        return dict(x.split("=", 1) for x in s.split(",") if x)

    return env(senv), env(cenv), args.split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--wirespeed", default=os.path.join(bench.ROOT, "target", "release", "wirespeed"))
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if k != "WIRESPEED_MUX"}
    specs = [(v, *parse(v)) for v in a.variants]
    servers = {}
    gbps = {v: [] for v in a.variants}
    cpu = {v: [] for v in a.variants}
    try:
        for _, senv, _, _ in specs:
            key = tuple(sorted(senv.items()))
            if key not in servers:
                port = bench.free_port()
                senv = dict(senv)
                argv = bench.Wirespeed(senv.pop("WS_BIN", a.wirespeed)).server_argv(port)
                servers[key] = bench.Server(argv, port, env=dict(base, **senv))
        for _ in range(a.rounds):
            for name, senv, cenv, args in specs:
                cenv = dict(cenv)
                binary = cenv.pop("WS_BIN", a.wirespeed)
                t = bench.Wirespeed(binary, env=dict(base, **cenv), label=name)
                srv = servers[tuple(sorted(senv.items()))]
                g, c = bench.scenario_tcp([t], {name: srv}, 1, a.duration, 1, args)
                gbps[name] += g[name]
                cpu[name] += c[name]
    finally:
        for s in servers.values():
            s.stop()
    print(f"load average {os.getloadavg()[0]:.2f}; {a.rounds} rounds of {a.duration:g} s")
    print("| variant (server env; client env; client args) | receiver Gbit/s | CPU s per GB |")
    print("|---|---|---|")
    for name in a.variants:
        print(f"| `{name}` | {bench.cell(gbps[name], 2)} | {bench.cell(cpu[name], 3)} |")


if __name__ == "__main__":
    main()
