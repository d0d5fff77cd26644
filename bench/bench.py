#!/usr/bin/env python3
"""Side-by-side loopback benchmark: wirespeed vs iperf3 vs iperf 2.x.

Each tool runs against its own server. Runs alternate (A B C A B C ...) so
machine noise hits every tool alike; the table reports medians, the spread
(min-max) and the ratio of wirespeed to the best peer.

    python3 bench/bench.py                      # everything, 3 rounds
    python3 bench/bench.py --rounds 5 --only tcp1,tcp4
    python3 bench/bench.py --quick              # 1 round, short runs (smoke)

Writes BENCHMARKS.md and bench/results.json (paths configurable). Needs
iperf3 and iperf (Debian: apt-get install iperf3 iperf) and a release build
of wirespeed (built here with cargo if missing). Only loopback is used.
Every process started is bounded in time and ended by its pid.
"""

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def proc_cpu(pid):
    """utime+stime of a live process, in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except OSError:
        return 0.0


def proc_rss_kb(pid, key="VmHWM"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_listening(port, proto="tcp", timeout=10.0):
    hexp = f":{port:04X} "
    deadline = time.time() + timeout
    while time.time() < deadline:
        for name in (f"/proc/net/{proto}", f"/proc/net/{proto}6"):
            try:
                with open(name) as f:
                    for line in f:
                        if hexp in line:
                            st = line.split()[3]
                            if proto == "udp" or st == "0A":
                                return True
            except OSError:
                pass
        time.sleep(0.02)
    return False


class Server:
    """A tool's server, bounded and ended by pid."""

    def __init__(self, argv, port, extra_udp=False):
        self.port = port
        self.out_path = f"/tmp/wsbench-{port}.out"
        self.out = open(self.out_path, "w+")
        self.p = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if not wait_listening(port):
            self.stop()
            raise RuntimeError(f"server {argv} did not listen")
        if extra_udp:
            wait_listening(port, "udp", 2.0)

    def cpu(self):
        return proc_cpu(self.p.pid)

    def output(self):
        self.out.flush()
        with open(self.out_path) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.out.close()
        try:
            os.unlink(self.out_path)
        except OSError:
            pass


def run_client(argv, timeout, watch_rss=False):
    """Runs a client to completion (killed at `timeout`); returns
    (stdout, stderr, returncode, wall seconds, peak RSS kB if watched)."""
    t0 = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    peak = 0
    if watch_rss:
        import threading

        done = threading.Event()

        def poll():
            nonlocal peak
            while not done.is_set():
                peak = max(peak, proc_rss_kb(p.pid, "VmRSS"))
                time.sleep(0.1)

        th = threading.Thread(target=poll, daemon=True)
        th.start()
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    if watch_rss:
        done.set()
    return out.decode(errors="replace"), err.decode(errors="replace"), p.returncode, time.time() - t0, peak


class ChildCpu:
    """CPU seconds used by finished children since creation."""

    def __init__(self):
        import resource

        self.r = resource
        u = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.base = u.ru_utime + u.ru_stime

    def read(self):
        u = self.r.getrusage(self.r.RUSAGE_CHILDREN)
        return u.ru_utime + u.ru_stime - self.base


# ---------------------------------------------------------------- tools


class Tool:
    name = ""

    def server_argv(self, port):
        raise NotImplementedError


class Wirespeed(Tool):
    name = "wirespeed"

    def __init__(self, path):
        self.path = path

    def server_argv(self, port):
        return [self.path, "-s", "-p", str(port), "--max-tests", "64"]

    def client(self, port, args, dur):
        return [self.path, "-c", "127.0.0.1", "-p", str(port), "-J"] + args

    def parse(self, out, server_out):
        return parse_iperf3_json(out)


class Iperf3(Tool):
    name = "iperf3"

    def __init__(self, path):
        self.path = path

    def server_argv(self, port):
        return [self.path, "-s", "-p", str(port)]

    def client(self, port, args, dur):
        return [self.path, "-c", "127.0.0.1", "-p", str(port), "-J"] + args

    def parse(self, out, server_out):
        return parse_iperf3_json(out)


class Iperf2(Tool):
    name = "iperf2"

    def __init__(self, path):
        self.path = path
        self.udp = False

    def server_argv(self, port):
        argv = [self.path, "-s", "-p", str(port), "-y", "C"]
        if self.udp:
            argv.append("-u")
        return argv

    def client(self, port, args, dur):
        return [self.path, "-c", "127.0.0.1", "-p", str(port), "-y", "C"] + args

    def parse(self, out, server_out):
        return parse_iperf2_csv(server_out)


def parse_iperf3_json(out):
    try:
        d = json.loads(out)
    except ValueError:
        return {"error": "invalid JSON: " + out[:200]}
    if "error" in d:
        return {"error": d["error"]}
    end = d.get("end", {})
    r = {}
    if "sum_received" in end:
        sr = end["sum_received"]
        r["rx_bps"] = sr.get("bits_per_second", 0)
        r["rx_bytes"] = sr.get("bytes", 0)
        r["seconds"] = sr.get("seconds", 0)
        if "packets" in sr:
            lost = sr.get("lost_packets", 0)
            r["rx_packets"] = sr.get("packets", 0) - lost
            r["lost_percent"] = sr.get("lost_percent", 0)
    r["streams"] = len(end.get("streams", []))
    r["stream_bytes"] = [
        (s.get("receiver") or s.get("udp") or {}).get("bytes", 0) for s in end.get("streams", [])
    ]
    return r


def parse_iperf2_csv(server_out):
    """Sums the final rows of the last test in an iperf2 server's CSV."""
    rows = [l.split(",") for l in server_out.strip().splitlines() if l.count(",") >= 8]
    if not rows:
        return {"error": "no iperf2 server report"}
    # Final rows start at 0.0 (per-flow totals); take the most recent test's.
    finals = [r for r in rows if r[6].startswith("0.0-")]
    r = {"rx_bytes": 0, "rx_bps": 0.0, "streams": 0, "stream_bytes": []}
    for row in finals:
        r["rx_bytes"] += int(row[7])
        r["rx_bps"] += float(row[8])
        r["streams"] += 1
        r["stream_bytes"].append(int(row[7]))
        if len(row) >= 13:
            total, lost = int(row[11]), int(row[10])
            r["rx_packets"] = r.get("rx_packets", 0) + total - lost
            dur = float(row[6].split("-")[1]) or 1.0
            r["rx_pps"] = r.get("rx_pps", 0) + (total - lost) / dur
            r["lost_percent"] = float(row[12])
    return r


# ---------------------------------------------------------------- scenarios


def one_run(tool, server, args, dur, timeout, watch_rss=False):
    cc = ChildCpu()
    scpu0 = server.cpu()
    before = len(server.output())
    out, err, rc, wall, peak = run_client(tool.client(server.port, args, dur), timeout, watch_rss)
    time.sleep(0.3)
    scpu = server.cpu() - scpu0
    ccpu = cc.read()
    server_out = server.output()[before:]
    res = tool.parse(out, server_out)
    if rc not in (0, None) and "error" not in res:
        res["error"] = (err or out).strip()[:200]
    res["client_cpu"] = ccpu
    res["server_cpu"] = scpu
    res["wall"] = wall
    res["client_peak_rss_kb"] = peak
    return res


def scenario_tcp(tools, servers, rounds, dur, parallel):
    samples = {t.name: [] for t in tools}
    cpu = {t.name: [] for t in tools}
    for _ in range(rounds):
        for t in tools:
            args = ["-t", str(dur)] + (["-P", str(parallel)] if parallel > 1 else [])
            r = one_run(t, servers[t.name], args, dur, dur + 30)
            if "error" in r:
                samples[t.name].append(None)
                print(f"  {t.name}: error {r['error']}", file=sys.stderr)
                continue
            gbps = r["rx_bps"] / 1e9
            samples[t.name].append(gbps)
            gb = r["rx_bytes"] / 1e9
            if gb > 0:
                cpu[t.name].append((r["client_cpu"] + r["server_cpu"]) / gb)
            print(f"  {t.name}: {gbps:.2f} Gbit/s, {(r['client_cpu'] + r['server_cpu']):.2f} CPU s", file=sys.stderr)
    return samples, cpu


def scenario_udp(tools, udp_servers, rounds, dur, length):
    samples = {t.name: [] for t in tools}
    loss = {t.name: [] for t in tools}
    for _ in range(rounds):
        for t in tools:
            if t.name == "iperf2":
                args = ["-u", "-t", str(dur), "-l", str(length), "-b", "100G"]
            else:
                args = ["-u", "-t", str(dur), "-l", str(length), "-b", "0"]
            r = one_run(t, udp_servers[t.name], args, dur, dur + 30)
            if "error" in r or ("rx_packets" not in r and "rx_pps" not in r):
                samples[t.name].append(None)
                print(f"  {t.name}: error {r.get('error', r)}", file=sys.stderr)
                continue
            pps = r.get("rx_pps") or r["rx_packets"] / max(r.get("seconds") or dur, 1e-9)
            samples[t.name].append(pps)
            loss[t.name].append(r.get("lost_percent", 0.0))
            print(f"  {t.name}: {pps/1e3:.0f} kpps received, loss {r.get('lost_percent', 0):.1f}%", file=sys.stderr)
    return samples, loss


def scenario_many_flows(tools, servers, dur, flows):
    out = {}
    for t in tools:
        args = ["-t", str(dur), "-P", str(flows)]
        r = one_run(t, servers[t.name], args, dur, dur + 120, watch_rss=True)
        if "error" in r:
            out[t.name] = {"ok": False, "note": r["error"][:120]}
        else:
            sb = r.get("stream_bytes", [])
            ok = r.get("streams") == flows and all(b > 0 for b in sb)
            out[t.name] = {
                "ok": ok,
                "streams": r.get("streams"),
                "gbps": r["rx_bps"] / 1e9,
                "sum_matches": abs(sum(sb) - r["rx_bytes"]) == 0 if sb else False,
                "client_rss_mb": r["client_peak_rss_kb"] / 1024,
                "note": "" if ok else f"{r.get('streams')} of {flows} flows reported",
            }
        print(f"  {t.name}: {out[t.name]}", file=sys.stderr)
    return out


def scenario_many_clients(tools, servers, dur, clients):
    out = {}
    for t in tools:
        srv = servers[t.name]
        before = len(srv.output())
        procs = []
        t0 = time.time()
        for _ in range(clients):
            procs.append(
                subprocess.Popen(
                    t.client(srv.port, ["-t", str(dur)], dur),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                )
            )
        ok = 0
        gbps = 0.0
        for p in procs:
            try:
                o, e = p.communicate(timeout=dur + 60)
            except subprocess.TimeoutExpired:
                p.kill()
                o, e = p.communicate()
            if p.returncode == 0:
                if t.name == "iperf2":
                    ok += 1
                else:
                    r = parse_iperf3_json(o.decode(errors="replace"))
                    if "error" not in r:
                        ok += 1
                        gbps += r["rx_bps"] / 1e9
        if t.name == "iperf2":
            time.sleep(0.5)
            r = parse_iperf2_csv(srv.output()[before:])
            gbps = r.get("rx_bps", 0) / 1e9
        out[t.name] = {"completed": ok, "of": clients, "aggregate_gbps": gbps, "wall": time.time() - t0}
        print(f"  {t.name}: {out[t.name]}", file=sys.stderr)
    return out


def scenario_startup(tools, servers, rounds):
    samples = {t.name: [] for t in tools}
    for _ in range(rounds):
        for t in tools:
            args = ["-n", "1K"]
            out, err, rc, wall, _ = run_client(t.client(servers[t.name].port, args, 1), 30)
            if rc == 0:
                samples[t.name].append(wall * 1000)
    return samples


# ---------------------------------------------------------------- report


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else (None, None)


def fmt(v, unit="", digits=2):
    return "—" if v is None else f"{v:.{digits}f}{unit}"


def ratio_row(samples, higher_is_better=True):
    ws = med(samples.get("wirespeed", []))
    peers = [med(v) for k, v in samples.items() if k != "wirespeed"]
    peers = [p for p in peers if p is not None]
    if ws is None or not peers:
        return None
    best = max(peers) if higher_is_better else min(peers)
    return ws / best if best else None


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "load_before": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--only", default="tcp1,tcp4,udp64,udp1400,p1000,clients50,startup")
    ap.add_argument("--quick", action="store_true", help="1 round, 2 s runs, small scale")
    ap.add_argument("--md", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results.json"))
    ap.add_argument("--wirespeed", default=os.path.join(ROOT, "target", "release", "wirespeed"))
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.duration = 1, 2
    only = set(a.only.split(","))
    if not os.path.exists(a.wirespeed):
        subprocess.check_call(["cargo", "build", "--release"], cwd=ROOT)
    missing = [p for p in ("iperf3", "iperf") if not shutil.which(p)]
    if missing:
        sys.exit(f"missing peers: {missing} (apt-get install iperf3 iperf)")
    tools = [Wirespeed(a.wirespeed), Iperf3(shutil.which("iperf3")), Iperf2(shutil.which("iperf"))]
    dur = a.duration
    m = machine()
    results = {"machine": m, "command": " ".join(sys.argv), "rounds": a.rounds, "duration": dur}

    servers = {}
    try:
        for t in tools:
            port = free_port()
            servers[t.name] = Server(t.server_argv(port), port)
        if "tcp1" in only:
            print("TCP, 1 stream", file=sys.stderr)
            results["tcp1"], results["tcp1_cpu_per_gb"] = scenario_tcp(tools, servers, a.rounds, dur, 1)
        if "tcp4" in only:
            print("TCP, -P 4", file=sys.stderr)
            results["tcp4"], _ = scenario_tcp(tools, servers, a.rounds, dur, 4)
        if "p1000" in only:
            flows = 100 if a.quick else 1000
            print(f"TCP, -P {flows}", file=sys.stderr)
            results["p1000"] = scenario_many_flows(tools, servers, 10 if not a.quick else 3, flows)
            results["p1000_flows"] = flows
        if "clients50" in only:
            n = 10 if a.quick else 50
            print(f"{n} clients at once", file=sys.stderr)
            results["clients50"] = scenario_many_clients(tools, servers, dur, n)
            results["clients"] = n
        if "startup" in only:
            print("start to first byte (-n 1K wall time)", file=sys.stderr)
            results["startup_ms"] = scenario_startup(tools, servers, a.rounds * 3)
    finally:
        for s in servers.values():
            if s:
                s.stop()
    if "udp64" in only or "udp1400" in only:
        udp_servers = {}
        try:
            for t in tools:
                port = free_port()
                if t.name == "iperf2":
                    t.udp = True
                udp_servers[t.name] = Server(t.server_argv(port), port)
            for length, key in ((64, "udp64"), (1400, "udp1400")):
                if key in only:
                    print(f"UDP {length} B, -b 0", file=sys.stderr)
                    results[key], results[key + "_loss"] = scenario_udp(tools, udp_servers, a.rounds, dur, length)
        finally:
            for s in udp_servers.values():
                s.stop()
    m["load_after"] = os.getloadavg()
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(results, f, indent=2)
    write_markdown(results, a.md)
    print(f"wrote {a.md} and {a.json}", file=sys.stderr)


def write_markdown(r, path):
    m = r["machine"]
    L = []
    L.append("# Benchmarks: wirespeed vs iperf3 vs iperf 2.x (loopback)\n")
    L.append(f"Command: `{r['command']}` — {r['rounds']} alternating rounds, {r['duration']:.0f} s runs, each tool against its own server.\n")
    L.append(
        f"Machine: {m['cores']} cores ({m['cpu']}), Linux {m['kernel']}, {m['date']}; "
        f"load average before {m['load_before'][0]:.2f}, after {m['load_after'][0]:.2f}.\n"
    )
    L.append("Values are medians with the (min–max) spread; ratio = wirespeed ÷ the better peer.\n")
    L.append("| scenario | metric | wirespeed | iperf3 | iperf 2 | ratio | goal |")
    L.append("|---|---|---|---|---|---|---|")

    def row(name, metric, samples, unit, digits, goal, higher=True):
        cells = []
        for t in ("wirespeed", "iperf3", "iperf2"):
            xs = samples.get(t, [])
            lo, hi = spread(xs)
            v = med(xs)
            cells.append("—" if v is None else f"{fmt(v, '', digits)} ({fmt(lo, '', digits)}–{fmt(hi, '', digits)}){unit}")
        rt = ratio_row(samples, higher)
        L.append(f"| {name} | {metric} | {cells[0]} | {cells[1]} | {cells[2]} | {fmt(rt, '', 2)} | {goal} |")

    if "tcp1" in r:
        row("TCP 1 stream", "receiver Gbit/s", r["tcp1"], "", 2, "≥ 1.05")
    if "tcp4" in r:
        row("TCP `-P 4`", "receiver Gbit/s", r["tcp4"], "", 2, "≥ 1.15")
    if "tcp1_cpu_per_gb" in r:
        row("TCP 1 stream", "CPU s per GB (both ends)", r["tcp1_cpu_per_gb"], "", 3, "≤ 0.9", higher=False)
    for key, name in (("udp64", "UDP 64 B, `-b 0`"), ("udp1400", "UDP 1400 B, `-b 0`")):
        if key in r:
            kpps = {k: [None if x is None else x / 1e3 for x in v] for k, v in r[key].items()}
            row(name, "received kpps", kpps, "", 0, "≥ 2.0")
            row(name, "loss %", r[key + "_loss"], "", 1, "lower is better", higher=False)
    if "p1000" in r:
        f = r["p1000_flows"]
        cells = []
        for t in ("wirespeed", "iperf3", "iperf2"):
            x = r["p1000"].get(t, {})
            if x.get("ok"):
                cells.append(
                    f"ok, {x['streams']} flows, {x['gbps']:.2f} Gbit/s, sum {'right' if x.get('sum_matches') else 'WRONG'}, "
                    f"client RSS {x.get('client_rss_mb', 0):.0f} MB"
                )
            else:
                cells.append(f"fails: {x.get('note', '')}")
        L.append(f"| TCP `-P {f}`, 10 s | completes, every flow reported, [SUM] right | {cells[0]} | {cells[1]} | {cells[2]} | — | iperf3 cannot |")
    if "clients50" in r:
        n = r["clients"]
        cells = []
        for t in ("wirespeed", "iperf3", "iperf2"):
            x = r["clients50"].get(t, {})
            cells.append(f"{x.get('completed', 0)}/{n} done, {x.get('aggregate_gbps', 0):.2f} Gbit/s")
        L.append(f"| {n} clients at once | all complete, aggregate Gbit/s | {cells[0]} | {cells[1]} | {cells[2]} | — | all complete |")
    if "startup_ms" in r:
        row("start to first byte", "wall ms of a `-n 1K` test", r["startup_ms"], "", 1, "≤ 1.0 (no worse)", higher=False)
    L.append("")
    notes = r.get("notes")
    if notes:
        L.append("Notes:\n")
        L.extend(f"- {n}" for n in notes)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
