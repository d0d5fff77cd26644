#!/usr/bin/env python3
"""A long mixed soak of one server: many short tests of both dialects
(ours and the real iperf3 and iperf 2 as clients; TCP, UDP, -R, QUIC) and
hostile connections, against one `wirespeed -s`, with the server's RSS and
descriptors at the start, every --every tests and at the end.

    python3 bench/soak.py                     # 10,000 tests
    python3 bench/soak.py --tests 2000 --every 200 --bin /path/to/wirespeed

Prints one JSON line per checkpoint and a summary; with --out, writes the
whole record there as JSON. Loopback only; the server is ended by its pid
and every client is bounded in time.
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
WIRESPEED = os.path.join(TARGET, "release", "wirespeed")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_fds(pid):
    rss = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def hostile(port, rng, kind):
    """A connection that is not a test: random bytes, a half cookie, an
    idle connection, UDP junk."""
    try:
        if kind == 0:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(rng.randbytes(rng.randint(1, 400)))
        elif kind == 1:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(b"abcdefghij")
        elif kind == 2:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                pass
        else:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                for _ in range(5):
                    u.sendto(rng.randbytes(rng.randint(1, 1400)), ("127.0.0.1", port))
    except OSError:
        pass
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", type=int, default=10000)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--bin", default=WIRESPEED, help="the wirespeed to soak (default: the release build)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    iperf3, iperf = shutil.which("iperf3"), shutil.which("iperf")
    port = free_port()
    p = str(port)
    ws = a.bin
    kinds = [
        ("ours tcp", [ws, "-c", "127.0.0.1", "-p", p, "-n", "200K"]),
        ("ours udp", [ws, "-c", "127.0.0.1", "-p", p, "-u", "-b", "20M", "-n", "100K"]),
        ("ours tcp -R", [ws, "-c", "127.0.0.1", "-p", p, "-n", "200K", "-R"]),
        ("ours quic", [ws, "-c", "127.0.0.1", "-p", p, "-q", "-n", "200K"]),
        ("ours iperf2 tcp", [ws, "--iperf2", "-c", "127.0.0.1", "-p", p, "-n", "200K"]),
        ("ours iperf2 udp", [ws, "--iperf2", "-c", "127.0.0.1", "-p", p, "-u", "-b", "20M", "-n", "100K"]),
        ("hostile", None),
    ]
    if iperf3:
        kinds += [("iperf3 tcp", [iperf3, "-c", "127.0.0.1", "-p", p, "-n", "200K"]),
                  ("iperf3 udp", [iperf3, "-c", "127.0.0.1", "-p", p, "-u", "-b", "20M", "-n", "100K"])]
    if iperf:
        kinds += [("iperf tcp", [iperf, "-c", "127.0.0.1", "-p", p, "-n", "200K"])]
    srv = subprocess.Popen([ws, "-s", "-p", p], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        t0 = time.monotonic()
        rss, fds = rss_fds(srv.pid)
        points = [{"tests": 0, "rss_kib": rss, "fds": fds, "seconds": 0.0}]
        print(json.dumps(points[0]), flush=True)
        failed = {}
        ran = {}
        for i in range(1, a.tests + 1):
            name, argv = kinds[i % len(kinds)]
            ran[name] = ran.get(name, 0) + 1
            if argv is None:
                hostile(port, rng, rng.randint(0, 3))
            else:
                try:
                    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30, text=True)
                    ok = r.returncode == 0
                    why = r.stderr.strip()[-200:]
                except subprocess.TimeoutExpired:
                    ok, why = False, "timed out"
                if not ok:
                    failed.setdefault(name, []).append(why)
            if srv.poll() is not None:
                print(json.dumps({"error": f"the server exited ({srv.returncode}) at test {i}"}), flush=True)
                return 1
            if i % a.every == 0 or i == a.tests:
                rss, fds = rss_fds(srv.pid)
                pt = {"tests": i, "rss_kib": rss, "fds": fds, "seconds": round(time.monotonic() - t0, 1),
                      "failed": sum(len(v) for v in failed.values())}
                points.append(pt)
                print(json.dumps(pt), flush=True)
        summary = {"tests": a.tests, "ran": ran, "failed": {k: len(v) for k, v in failed.items()},
                   "failures": {k: v[:3] for k, v in failed.items()}, "points": points}
        print(json.dumps({k: summary[k] for k in ("tests", "ran", "failed", "failures")}), flush=True)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(summary, f, indent=1)
        return 0
    finally:
        srv.terminate()
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


if __name__ == "__main__":
    sys.exit(main())
