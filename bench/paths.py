#!/usr/bin/env python3
"""Every tool's numbers against the path emulator's ground truth.

    python3 bench/paths.py --quick                  # 8 paths, about 15 minutes
    python3 bench/paths.py                          # the full matrix (120 paths, hours)
    python3 bench/paths.py --rtt 20,200 --loss 0,1 --rate 100 --jitter off --tools wirespeed,iperf3
    python3 bench/paths.py --render                 # the Markdown again from the JSON
    python3 bench/paths.py --quick --tools wirespeed --kinds tcp,quic --section quic \
        --json bench/paths-quic-results.json        # QUIC next to TCP, into its own section

A path is `tools/pathemu` (docs/pathemu.md) with the same settings in both
directions: one-way delay RTT/2, a bottleneck `rate` with a tail-drop queue of
one bandwidth-delay product (at least 100 packets), Bernoulli `loss`, and,
with jitter, a uniform draw in +-J added to each packet's delay, J = 10 % of
the one-way delay and at least 0.5 ms (which reorders). The matrix is
RTT {1, 20, 80, 200, 600} ms x loss {0, 0.1, 1, 5} % x rate {10, 100, 1000}
Mbit/s x jitter {off, on}.

On each path, the server runs in namespace B and the client in A, each tool
against its own kind (wirespeed; iperf3 3.12 and the newest; iperf 2.1.8 and
the newest), one after another:

  * TCP, one stream, `-C cubic` (iperf 2: `-Z cubic`), -t = max(5 s, 30 RTTs):
    receiver bitrate against the bottleneck's goodput (rate x 1448/1500),
    also over the second half of the test from the receiver's own intervals;
    sender bytes against receiver bytes; client start to exit minus -t.
  * UDP, 1400-byte datagrams at 90 % of the bottleneck's IP rate (and 120 %
    on the jitter-free paths with loss 0 or 1 %), 5 s: the reported loss
    against the emulator's drops of 1400-byte UDP payloads from A to B,
    the reported jitter against the emulated one, the out-of-order count
    against the emulator's reordering count.
  * RTT: ping's median against 2 x delay; wirespeed's `--latency` idle p50
    (on its UDP run); the sender's TCP_INFO min/mean RTT in `-J` (wirespeed,
    iperf3); iperf 2's `-e` RTT (its last sample, under load).
  * QUIC (wirespeed only: `-q`, an iperf3 test over one QUIC connection;
    the peers have none), one stream, -t as TCP's: the receiver's bitrate
    against the same goodput as TCP's; the packets quinn declared lost (the
    client's `end.streams[0].quic.lost_packets`) against the UDP packets
    the emulator dropped A to B, those declared beyond the drops (spurious,
    at least: reordering or delay past quinn's thresholds) counted apart;
    QUIC's min and smoothed RTT against the path's.

`--kinds` picks the tests (tcp, udp, quic; all by default). `--section quic`
writes only the QUIC section into the Markdown (replacing the one between
its markers, or appending it), so a QUIC run with its own `--json` leaves
the other tables' numbers as they were measured.

The newest peers run when IPERF3_BIN and IPERF2_BIN name them (as for
bench/bench.py). Writes BENCHMARKS-PATHS.md and bench/paths-results.json
(after every path, so a long run that stops keeps what it measured). Needs
root and the release builds (cargo build --release --bin wirespeed --example
pathemu; CARGO_TARGET_DIR is honoured). Network traffic stays inside the
emulator's namespaces. Every process is bounded in time and ended by its pid.
"""

import argparse
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pathemu  # noqa: E402
from pathemu import PathEmu, PathEmuError, stop  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTTS = (1, 20, 80, 200, 600)
LOSSES = (0.0, 0.1, 1.0, 5.0)
RATES = (10, 100, 1000)
QUICK = {"rtt": (20, 200), "loss": (0.0, 1.0), "rate": (100,), "jitter": (False, True)}
TOOLS = ("wirespeed", "iperf3", "iperf3-new", "iperf2", "iperf2-new")
EXTRA_TOOLS = ("wirespeed-iperf2",)
LABELS = {"wirespeed": "wirespeed", "iperf3": "iperf3 3.12", "iperf3-new": "iperf3 new",
          "iperf2": "iperf 2.1.8", "iperf2-new": "iperf 2 new", "wirespeed-iperf2": "wirespeed --iperf2"}
PAYLOAD = 1400            # UDP -l: every tool's data datagrams have this payload
UDP_IP = PAYLOAD + 28     # its IP packet
MSS = 1448                # TCP payload of a 1500-byte packet with timestamps
UDP_SECS = 5
UDP_LOADS = (0.9, 1.2)    # of the bottleneck's IP rate
FATES = ("in", "delivered", "loss", "queue", "outage", "limit", "write_error")
DROPS = ("loss", "queue", "outage", "limit", "write_error")
KINDS = ("tcp", "udp", "quic")
QUIC_BEGIN = "<!-- paths.py quic section: begin -->"
QUIC_END = "<!-- paths.py quic section: end -->"
# Sections of BENCHMARKS-PATHS.md that other runs write (bench/ecn.py's; a
# `--section quic` run's): a whole rewrite keeps them unless it has its own.
KEPT = (("<!-- ecn begin -->", "<!-- ecn end -->"), (QUIC_BEGIN, QUIC_END))


# ---------------------------------------------------------------- paths

class Path:
    def __init__(self, rtt_ms, loss_pct, rate_mbps, jitter):
        self.rtt_ms, self.loss_pct, self.rate_mbps, self.jitter = rtt_ms, loss_pct, rate_mbps, jitter
        self.delay_us = int(round(rtt_ms * 500))
        self.jitter_us = int(round(max(500, self.delay_us * 0.1))) if jitter else 0
        self.rate_bps = rate_mbps * 1e6
        bdp = self.rate_bps * rtt_ms / 1000 / 8 / 1500
        self.queue = max(100, int(math.ceil(bdp)))
        self.ideal_bps = self.rate_bps * MSS / 1500
        p = loss_pct / 100
        # Mathis et al.: MSS/RTT x sqrt(3/2)/sqrt(p), at the idle RTT.
        self.mathis_bps = math.inf if p == 0 else MSS * 8 / (rtt_ms / 1000) * math.sqrt(1.5) / math.sqrt(p)
        self.allowed = self.mathis_bps >= self.ideal_bps
        self.tcp_secs = max(5, int(math.ceil(30 * rtt_ms / 1000)))
        # Send and receive buffers big enough for twice the path's packets in flight
        # (BDP + queue), so the window is set by TCP and the path, not by a cap.
        need = int(2 * (bdp + self.queue) * 1500 * 2)
        self.buf_max = max(need, 32 << 20)

    @property
    def name(self):
        j = f", ±{self.jitter_us / 1000:g} ms" if self.jitter else ""
        return f"{self.rtt_ms} ms, {self.loss_pct:g} %, {self.rate_mbps} M{j}"

    def settings(self):
        s = f"delay={self.delay_us}us,rate={self.rate_mbps}M,queue={self.queue},loss={self.loss_pct}%"
        return s + f",jitter={self.jitter_us}us"

    def udp_loads(self):
        over = not self.jitter and self.loss_pct in (0.0, 1.0)
        return UDP_LOADS if over else UDP_LOADS[:1]

    def udp_bps(self, load):
        """-b (UDP payload bits/s) for `load` x the bottleneck's IP rate."""
        return int(round(load * self.rate_bps * PAYLOAD / UDP_IP))

    def to_json(self):
        return {"rtt_ms": self.rtt_ms, "loss_pct": self.loss_pct, "rate_mbps": self.rate_mbps,
                "jitter": self.jitter, "delay_us": self.delay_us, "jitter_us": self.jitter_us,
                "queue": self.queue, "ideal_bps": self.ideal_bps,
                "mathis_bps": None if math.isinf(self.mathis_bps) else self.mathis_bps,
                "allowed": self.allowed, "tcp_secs": self.tcp_secs, "buf_max": self.buf_max,
                "settings": self.settings(), "name": self.name}


def path_from_json(d):
    return Path(d["rtt_ms"], d["loss_pct"], d["rate_mbps"], d["jitter"])


# ---------------------------------------------------------------- processes

def wait_listen(pid, port, proto, timeout=10.0):
    """True once the process `pid` (in its own namespace) has a socket
    bound to `port` (a TCP one listening)."""
    hexp = f":{port:04X} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in (f"/proc/{pid}/net/{proto}", f"/proc/{pid}/net/{proto}6"):
            try:
                with open(name) as f:
                    for line in f:
                        parts = line.split()
                        if len(parts) > 3 and hexp in parts[1] + " " and (proto == "udp" or parts[3] == "0A"):
                            return True
            except OSError:
                return False
        time.sleep(0.02)
    return False


def read_file(f):
    f.flush()
    f.seek(0)
    return f.read()


def in_flight(st):
    return st["a2b"]["in_flight"] + st["b2a"]["in_flight"]


def settled_stats(pe, timeout):
    """The counters once nothing is in flight (or at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        st = pe.stats()
        if in_flight(st) == 0 or time.monotonic() >= deadline:
            return st
        time.sleep(0.1)


def counters(st):
    out = {}
    for d in ("a2b", "b2a"):
        x = st[d]
        c = {"tcp": {f: x["tcp"][f]["packets"] for f in FATES}, "udp": {f: x["udp"][f]["packets"] for f in FATES},
             "total": {f: x["total"][f]["packets"] for f in FATES},
             "tcp_reordered": x["tcp"]["reordered"]["packets"], "udp_reordered": x["udp"]["reordered"]["packets"],
             "udp_len": {f: x["udp_by_len"].get(str(PAYLOAD), {}).get(f, 0) for f in FATES},
             "udp_bytes": {f: x["udp"][f]["bytes"] for f in ("in", "delivered")},
             "late_max_us": x["late_us"].get("max", 0)}
        out[d] = c
    out["tun"] = {s: {k: st["tun"][s].get(k, 0) or 0 for k in ("tx_dropped", "rx_dropped")} for s in ("a", "b")}
    return out


def diff(after, before):
    if isinstance(after, dict):
        return {k: diff(v, before.get(k, 0) if isinstance(before, dict) else 0) for k, v in after.items()}
    if isinstance(after, (int, float)) and isinstance(before, (int, float)):
        return after - before
    return after


def ring_drops(c):
    return sum(v for side in c["tun"].values() for v in side.values())


def udp_snmp(ns):
    """The namespace's UDP counters (/proc/net/snmp): datagrams its sockets
    could not take (RcvbufErrors) or send (SndbufErrors)."""
    p = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"], capture_output=True, text=True,
                       timeout=10)
    lines = [l.split() for l in p.stdout.splitlines() if l.startswith("Udp:")]
    if len(lines) < 2:
        return {}
    d = dict(zip(lines[0][1:], (int(x) for x in lines[1][1:])))
    return {k: d.get(k, 0) for k in ("InDatagrams", "InErrors", "RcvbufErrors", "SndbufErrors")}


def run_test(pe, tool, path, kind, client_argv, server_argv, secs):
    """One test: server in B, client in A, both bounded and ended by pid.
    Returns the outputs, the client's wall time, how long the server took
    to finish after the client exited, and the counters' change."""
    rtt = path.rtt_ms / 1000
    proto = "udp" if tool.family == "iperf2" and kind == "udp" else "tcp"
    sout = tempfile.TemporaryFile(mode="w+")
    srv = pe.popen_b(server_argv, stdout=sout, stderr=subprocess.STDOUT)
    res = {"client_argv": client_argv, "server_argv": server_argv}
    try:
        if not wait_listen(srv.pid, tool.port, proto):
            res["error"] = "server did not listen: " + read_file(sout).strip()[-200:]
            return res
        before = counters(pe.stats())
        snmp_before = {"a": udp_snmp(pe.ns_a), "b": udp_snmp(pe.ns_b)}
        cout, cerr = tempfile.TemporaryFile(mode="w+"), tempfile.TemporaryFile(mode="w+")
        limit = secs + 40 + 30 * rtt
        t0 = time.monotonic()
        cl = pe.popen_a(client_argv, stdout=cout, stderr=cerr)
        try:
            cl.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            cl.kill()
            cl.wait()
            res["error"] = f"client killed after {limit:.0f} s"
        res["wall"] = time.monotonic() - t0
        res["rc"] = cl.returncode
        res["client_out"], res["client_err"] = read_file(cout), read_file(cerr)
        # The server ends by itself (-1) or writes its final report when the
        # last byte has arrived (an iperf 2 client may exit with data still in
        # its socket): wait for that, as long as the test again at most.
        t1 = time.monotonic()
        deadline = t1 + 10 + secs + 10 * rtt
        done = False
        while time.monotonic() < deadline:
            if srv.poll() is not None or tool.server_done(read_file(sout), kind):
                done = True
                break
            time.sleep(0.1)
        res["server_after_client"] = time.monotonic() - t1
        if not done:
            res["server_cut"] = f"server still running {res['server_after_client']:.0f} s after the client"
        elif srv.poll() is None:
            time.sleep(0.2)
    finally:
        stop(srv)
    res["server_out"] = read_file(sout)
    res["emu"] = diff(counters(settled_stats(pe, 5 + 4 * rtt)), before)
    res["snmp"] = diff({"a": udp_snmp(pe.ns_a), "b": udp_snmp(pe.ns_b)}, snmp_before)
    return res


def model_jitter(path, bps, secs=UDP_SECS, seeds=(1, 2, 3)):
    """The RFC 3550 estimate the emulator's model gives a perfect receiver of
    datagrams sent evenly at `bps`, each delayed by a uniform draw in +-J
    and delivered in delivery order: its mean over the middle of the test
    (2J/3), its final value when the receiver waits for every straggler
    (the last arrivals are the most delayed, so it ends lower), and its final
    value when out-of-order datagrams are left out of the estimate."""
    if not path.jitter:
        return None
    import random
    J = path.jitter_us / 1e6
    s = PAYLOAD * 8 / bps
    n = int(secs / s)
    mids, finals, inorders = [], [], []
    for seed in (seeds if n <= 100000 else seeds[:1]):
        r = random.Random(seed)
        pk = sorted((i * s + r.uniform(-J, J), i) for i in range(n))
        jit = jin = 0.0
        prev = prev_in = None
        top = -1
        acc = []
        for k, (arr, i) in enumerate(pk):
            t = arr - i * s
            if prev is not None:
                jit += (abs(t - prev) - jit) / 16
                if n // 4 <= k < 3 * n // 4:
                    acc.append(jit)
            prev = t
            if i > top:
                if prev_in is not None:
                    jin += (abs(t - prev_in) - jin) / 16
                prev_in = t
                top = i
        mids.append(sum(acc) / len(acc))
        finals.append(jit)
        inorders.append(jin)
    return {"mid_ms": statistics.mean(mids) * 1e3, "final_ms": statistics.mean(finals) * 1e3,
            "final_min_ms": min(finals) * 1e3, "final_max_ms": max(finals) * 1e3,
            "inorder_ms": statistics.mean(inorders) * 1e3}


# ---------------------------------------------------------------- tools

class Iperf3Family:
    family = "iperf3"
    port = 5201

    def __init__(self, name, exe):
        self.name, self.exe = name, exe

    def version(self):
        p = subprocess.run([self.exe, "--version"], capture_output=True, text=True, timeout=10)
        return (p.stdout or p.stderr).splitlines()[0].strip()

    def server(self, kind):
        return [self.exe, "-s", "-1", "-J", "-p", str(self.port)]

    def tcp(self, addr, secs):
        return [self.exe, "-c", addr, "-p", str(self.port), "-t", str(secs), "-J", "-C", "cubic"]

    def udp(self, addr, secs, bps, rtt_probe):
        argv = [self.exe, "-c", addr, "-p", str(self.port), "-t", str(secs), "-J", "-u", "-l", str(PAYLOAD),
                "-b", str(bps)]
        if rtt_probe and self.name == "wirespeed":
            argv.append("--latency")
        return argv

    @property
    def has_quic(self):
        return self.name == "wirespeed"  # iperf3 has no QUIC

    def quic(self, addr, secs):
        return [self.exe, "-c", addr, "-p", str(self.port), "-t", str(secs), "-J", "-q"]

    def server_done(self, out, kind):
        return False  # -1: it exits by itself

    @staticmethod
    def _doc(text):
        try:
            return json.loads(text)
        except ValueError:
            return None

    def parse_tcp(self, r, secs):
        c, s = self._doc(r.get("client_out", "")), self._doc(r.get("server_out", ""))
        out = {}
        if not c or "end" not in c or c.get("error"):
            out["error"] = (c or {}).get("error") or (r.get("client_err") or r.get("client_out") or "").strip()[-200:]
            return out
        end = c["end"]
        out["tx_bytes"] = end["sum_sent"]["bytes"]
        out["rx_bytes_client"] = end["sum_received"]["bytes"]
        out["rx_bps"] = end["sum_received"]["bits_per_second"]
        out["retransmits"] = end["sum_sent"].get("retransmits")
        out["tx_seconds"] = end["sum_sent"].get("seconds")
        out["rx_seconds"] = end["sum_received"].get("seconds")
        snd = (end.get("streams") or [{}])[0].get("sender", {})
        for k in ("min_rtt", "mean_rtt", "max_rtt"):
            if k in snd:
                out[k + "_ms"] = snd[k] / 1000
        if s and "end" in s:
            out["rx_bytes"] = s["end"]["sum_received"]["bytes"]
            out["rx_seconds"] = s["end"]["sum_received"].get("seconds")
            ivs = [(iv["sum"]["start"], iv["sum"]["end"], iv["sum"]["bytes"]) for iv in s.get("intervals", [])]
            out["steady_bps"] = steady(ivs, secs)
            out["rx_intervals_mbps"] = interval_rates(ivs)
            out["rx_intervals"] = [[round(a, 4), round(b, 4), n] for a, b, n in ivs]
        else:
            out["rx_bytes"] = out["rx_bytes_client"]
            out["server_doc"] = "missing"
        return out

    def parse_quic(self, r, secs):
        """The TCP numbers (the documents have the same keys) and each end's
        QUIC connection: the client's (the sender's: the packets it sent
        A to B and those it declared lost) and the server's (its ACKs)."""
        out = self.parse_tcp(r, secs)
        c, s = self._doc(r.get("client_out", "")), self._doc(r.get("server_out", ""))
        for who, doc in (("client", c), ("server", s)):
            q = ((((doc or {}).get("end") or {}).get("streams") or [{}])[0]).get("quic")
            if q:
                out["quic_" + who] = q
        if c and "quic_client" not in out and "error" not in out:
            out["error"] = "no end.streams[0].quic in the client's document"
        return out

    def parse_udp(self, r, secs):
        c, s = self._doc(r.get("client_out", "")), self._doc(r.get("server_out", ""))
        out = {}
        if not c or "end" not in c or c.get("error"):
            out["error"] = (c or {}).get("error") or (r.get("client_err") or r.get("client_out") or "").strip()[-200:]
            return out
        end = c["end"]
        out["sent"] = (end.get("sum_sent") or end.get("sum") or {}).get("packets")
        out["tx_intervals_packets"] = [iv["sum"].get("packets") for iv in c.get("intervals", [])]
        # The receiver's numbers as the client reports them (the server's, exchanged at the end; a
        # wirespeed client also counts datagrams lost after the last one the server saw); the
        # out-of-order count only the server's own document has.
        rx = end.get("sum_received") or end.get("sum") or {}
        if s and "end" in s:
            srx = s["end"].get("sum_received") or s["end"].get("sum") or {}
            st = (s["end"].get("streams") or [{}])[0].get("udp", {})
            out["out_of_order"] = st.get("out_of_order")
            out["lost_server"] = srx.get("lost_packets")
            out["packets_server"] = srx.get("packets")
            if rx.get("lost_packets") is None:
                rx = srx
        else:
            out["server_doc"] = "missing"
        out["lost"] = rx.get("lost_packets")
        out["packets"] = rx.get("packets")
        out["received"] = rx.get("packets", 0) - rx.get("lost_packets", 0)
        out["jitter_ms"] = rx.get("jitter_ms")
        out["rx_bps"] = rx.get("bits_per_second")
        lat = end.get("latency")
        if lat and lat.get("idle"):
            out["idle_p50_ms"] = lat["idle"].get("p50_ms")
            out["idle_min_ms"] = lat["idle"].get("min_ms")
            out["idle_probes"] = lat["idle"].get("probes")
        return out


def interval_rates(intervals):
    return [round(n * 8 / (b - a) / 1e6, 2) if b > a else None for a, b, n in intervals]


def steady(intervals, secs):
    """Bits/s over the receiver's intervals from the middle of the test to
    its own end (start >= secs/2, the last, partial one included: data
    held behind a late hole is read there)."""
    got = [(a, b, n) for a, b, n in intervals if a >= secs / 2 - 0.01 and b > a]
    if not got:
        return None
    span = sum(b - a for a, b, _ in got)
    return sum(n for _, _, n in got) * 8 / span if span > 0 else None


class Iperf2Family:
    family = "iperf2"
    port = 5001
    has_quic = False

    def __init__(self, name, argv0):
        self.name, self.argv0 = name, list(argv0)

    def version(self):
        p = subprocess.run(self.argv0 + ["-v"], capture_output=True, text=True, timeout=10)
        return (p.stdout + p.stderr).splitlines()[0].strip()

    def server(self, kind):
        return self.argv0 + ["-s", "-p", str(self.port), "-i", "1", "-y", "C"] + (["-u"] if kind == "udp" else [])

    def tcp(self, addr, secs):
        # -i 1: without interval reports iperf 2.2.1's final Rtry and Cwnd/RTT are
        # its connect-time sample (0 retries, the handshake's RTT).
        return self.argv0 + ["-c", addr, "-p", str(self.port), "-t", str(secs), "-i", "1", "-e", "-f", "B",
                             "-Z", "cubic"]

    def udp(self, addr, secs, bps, rtt_probe):
        return self.argv0 + ["-c", addr, "-p", str(self.port), "-t", str(secs), "-e", "-f", "B", "-u",
                             "-l", str(PAYLOAD), "-b", str(bps)]

    def server_done(self, out, kind):
        rows = csv_rows(out)
        return any(r["start"] == 0 and r["end"] > 1.5 for r in rows)

    def parse_tcp(self, r, secs):
        out = {}
        line = final_text_line(r.get("client_out", ""))
        rows = csv_rows(r.get("server_out", ""))
        if line is None:
            out["error"] = (r.get("client_err") or r.get("client_out") or "no report").strip()[-200:]
            return out
        out["tx_bytes"] = line["bytes"]
        out["tx_seconds"] = line["end"]
        m = re.search(r"Bytes/sec\s+(\d+)/(\d+)\s+(\d+)", line["text"])
        if m:
            out["retransmits"] = int(m.group(3))
        m = re.findall(r"(\d+)\(\d+\) us", line["text"])
        if m:
            out["rtt_ms"] = int(m[-1]) / 1000
        fin = final_row(rows)
        if fin is None:
            out["error"] = "no server report"
            return out
        out["rx_bytes"] = fin["bytes"]
        out["rx_seconds"] = fin["end"]
        out["rx_bps"] = fin["bytes"] * 8 / (fin["end"] - fin["start"]) if fin["end"] > fin["start"] else None
        out["rx_bps_reported"] = fin["bps"]
        ivs = [(x["start"], x["end"], x["bytes"]) for x in rows if x is not fin and (x["start"] > 0 or x["end"] <= 1.01)]
        out["steady_bps"] = steady([iv for iv in ivs if iv[0] > 0], secs)
        out["rx_intervals_mbps"] = interval_rates(ivs)
        out["rx_intervals"] = [[a, b, n] for a, b, n in ivs]
        return out

    def parse_udp(self, r, secs):
        out = {}
        m = re.search(r"Sent (\d+) datagrams", r.get("client_out", ""))
        if m:
            out["sent"] = int(m.group(1))
        fin = final_row(csv_rows(r.get("server_out", "")))
        if fin is None or "lost" not in fin:
            out["error"] = "no server report: " + (r.get("client_err") or r.get("client_out") or "").strip()[-200:]
            return out
        out["lost"] = fin["lost"]
        out["packets"] = fin["total"]
        out["received"] = fin["total"] - fin["lost"]
        out["jitter_ms"] = fin["jitter_ms"]
        out["out_of_order"] = fin.get("ooo")
        out["rx_bps"] = fin["bps"]
        return out


def csv_rows(text):
    """iperf 2 server CSV rows, classic (`...,id,0.0-1.0,bytes,bps[,jitter,lost,total,%,ooo]`)
    or 2.2's with a header line and `+0000:` time prefix (istart, iend)."""
    rows, header = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("time,"):
            header = line.split(",")
            continue
        f = line.split(",")
        if len(f) < 9:
            continue
        try:
            if header and len(f) == len(header) and "istart" in header:
                d = dict(zip(header, f))
                row = {"start": float(d["istart"]), "end": float(d["iend"]), "bytes": int(d["bytes"]),
                       "bps": float(d["speed"])}
                if "jitter" in d:
                    row.update(jitter_ms=float(d["jitter"]), lost=int(d["lostPkts"] if "lostPkts" in d else d["lost"]),
                               total=int(d["totalPkts"] if "totalPkts" in d else d["total"]))
            else:
                a, b = f[6].split("-")
                row = {"start": float(a), "end": float(b), "bytes": int(f[7]), "bps": float(f[8])}
                if len(f) >= 13:
                    row.update(jitter_ms=float(f[9]), lost=int(f[10]), total=int(f[11]))
                if len(f) >= 14:
                    row["ooo"] = int(f[13])
        except (ValueError, KeyError):
            continue
        if int(f[5]) < 0:  # a -P sum row
            continue
        rows.append(row)
    return rows


def final_row(rows):
    fins = [x for x in rows if x["start"] == 0]
    return max(fins, key=lambda x: x["end"]) if fins else None


def final_text_line(text):
    best = None
    for line in text.splitlines():
        m = re.search(r"\]\s+([\d.]+)-\s*([\d.]+) sec\s+(\d+) Bytes", line)
        if m and float(m.group(1)) == 0:
            if best is None or float(m.group(2)) >= best["end"]:
                best = {"end": float(m.group(2)), "bytes": int(m.group(3)), "text": line}
    return best


def make_tools(names, wirespeed):
    avail = {"wirespeed": lambda: Iperf3Family("wirespeed", wirespeed),
             "wirespeed-iperf2": lambda: Iperf2Family("wirespeed-iperf2", [wirespeed, "--iperf2"])}
    if shutil.which("iperf3"):
        avail["iperf3"] = lambda: Iperf3Family("iperf3", shutil.which("iperf3"))
    if shutil.which("iperf"):
        avail["iperf2"] = lambda: Iperf2Family("iperf2", [shutil.which("iperf")])
    if os.environ.get("IPERF3_BIN"):
        avail["iperf3-new"] = lambda: Iperf3Family("iperf3-new", os.environ["IPERF3_BIN"])
    if os.environ.get("IPERF2_BIN"):
        avail["iperf2-new"] = lambda: Iperf2Family("iperf2-new", [os.environ["IPERF2_BIN"]])
    tools, skipped = [], []
    for n in names:
        if n in avail:
            tools.append(avail[n]())
        else:
            skipped.append(n)
    return tools, skipped


# ---------------------------------------------------------------- one path

def ping(pe, path, count=20, interval=0.05):
    wait = max(2, int(path.rtt_ms * 3 / 1000) + 2)
    r = pe.run_a(["ping", "-n", "-c", str(count), "-i", str(interval), "-W", str(wait), pe.addr_b],
                 timeout=count * interval + wait + 20)
    times = [float(x) for x in re.findall(r"time=([\d.]+) ms", r.stdout)]
    if not times:
        return {"error": (r.stdout + r.stderr).strip()[-200:]}
    return {"replies": len(times), "sent": count, "min_ms": min(times), "median_ms": statistics.median(times),
            "mean_ms": statistics.mean(times), "max_ms": max(times)}


def set_buffers(pe, path):
    out = {}
    for ns in (pe.ns_a, pe.ns_b):
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
                        f"net.ipv4.tcp_rmem=4096 131072 {path.buf_max}",
                        f"net.ipv4.tcp_wmem=4096 16384 {path.buf_max}"], check=True, timeout=10)
        p = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                            "net.ipv4.tcp_congestion_control"], capture_output=True, text=True, timeout=10)
        out[ns[-1]] = [" ".join(l.split()) for l in p.stdout.splitlines()]
    return out


def tests_for(path, tool, kinds):
    """The tests one tool runs on a path: (key, kind, seconds, UDP load)."""
    out = []
    if "tcp" in kinds:
        out.append(("tcp", "tcp", path.tcp_secs, None))
    if "udp" in kinds:
        out += [(f"udp{int(load * 100)}", "udp", UDP_SECS, load) for load in path.udp_loads()]
    if "quic" in kinds and tool.has_quic:
        out.append(("quic", "quic", path.tcp_secs, None))
    return out


def path_budget(path, tools, kinds=KINDS):
    """About how long the path takes (seconds), from the quick run's timings
    (a QUIC test ends some 3 s past -t at 200 ms: more round trips)."""
    rtt = path.rtt_ms / 1000
    extra = {"tcp": 1.5 + 6 * rtt, "udp": 1.5 + 6 * rtt, "quic": 2 + 10 * rtt}
    return 5 + 10 * rtt + sum(secs + extra[kind] for t in tools for _, kind, secs, _ in tests_for(path, t, kinds))


def path_lifetime(path, tools, kinds=KINDS):
    """The emulator's hard bound: every test at its own bounds."""
    rtt = path.rtt_ms / 1000
    return int(120 + sum(2 * secs + 55 + 44 * rtt for t in tools for _, _, secs, _ in tests_for(path, t, kinds)))


def run_path(path, tools, log, kinds=KINDS):
    seed = zlib.crc32(path.settings().encode())
    res = {"path": path.to_json(), "seed": seed, "load_before": os.getloadavg()[0], "tools": {},
           "jitter_model": model_jitter(path, path.udp_bps(UDP_LOADS[0])) if "udp" in kinds else None}
    t_start = time.monotonic()
    lifetime = path_lifetime(path, tools, kinds)
    with PathEmu(both=path.settings(), seed=seed, lifetime=lifetime) as pe:
        res["buffers"] = set_buffers(pe, path)
        res["ping"] = ping(pe, path)
        log(f"  ping {res['ping']}")
        for tool in tools:
            tr = res["tools"][tool.name] = {}
            for key, kind, _, load in tests_for(path, tool, kinds):
                try:
                    if kind == "tcp":
                        r = run_test(pe, tool, path, "tcp", tool.tcp(pe.addr_b, path.tcp_secs), tool.server("tcp"),
                                     path.tcp_secs)
                        tr[key] = summarise_tcp(tool, path, r)
                    elif kind == "quic":
                        r = run_test(pe, tool, path, "quic", tool.quic(pe.addr_b, path.tcp_secs),
                                     tool.server("quic"), path.tcp_secs)
                        tr[key] = summarise_quic(tool, path, r)
                    else:
                        bps = path.udp_bps(load)
                        r = run_test(pe, tool, path, "udp",
                                     tool.udp(pe.addr_b, UDP_SECS, bps, load == UDP_LOADS[0]),
                                     tool.server("udp"), UDP_SECS)
                        tr[key] = summarise_udp(tool, path, r, bps)
                except PathEmuError:
                    raise
                except Exception as e:  # a parser's surprise must not end a run of hours
                    tr[key] = {"error": f"bench: {type(e).__name__}: {e}"}
                log(f"  {tool.name} {key}: {brief(tr[key])}")
        res["final"] = {d: {"late_us": pe.stats()[d]["late_us"], "queue_max": pe.stats()[d]["queue_max"]}
                        for d in ("a2b", "b2a")}
    res["seconds"] = time.monotonic() - t_start
    res["load_after"] = os.getloadavg()[0]
    return res


def brief(d):
    keys = ("error", "rx_bps", "ratio", "steady_ratio", "tx_minus_rx", "time_to_end", "lost", "drops", "jitter_ms",
            "out_of_order", "emu_reordered", "idle_p50_ms", "rtt_ms", "min_rtt_ms", "ring_drops", "declared_lost",
            "not_arrived", "spurious_min", "quic_min_rtt_ms", "quic_rtt_ms", "congestion_events")
    return {k: (round(d[k], 4) if isinstance(d[k], float) else d[k]) for k in keys if k in d}


def common(r, out):
    if "error" in r:
        out["error"] = r["error"]
    if r.get("rc") not in (0, None) and "error" not in out:
        out["error"] = f"exit {r['rc']}: " + (r.get("client_err") or r.get("client_out") or "").strip()[-200:]
    out["argv"] = shlex.join(r["client_argv"])
    out["server_argv"] = shlex.join(r["server_argv"])
    if "emu" in r:
        out["emu"] = r["emu"]
        out["ring_drops"] = ring_drops(r["emu"])
    if "wall" in r:
        out["wall"] = r["wall"]
    if r.get("server_cut"):
        out["server_cut"] = r["server_cut"]
    if "server_after_client" in r:
        out["server_after_client"] = r["server_after_client"]
    snmp = r.get("snmp") or {}
    out["rcvbuf_errors"] = snmp.get("b", {}).get("RcvbufErrors", 0)
    out["sndbuf_errors"] = snmp.get("a", {}).get("SndbufErrors", 0)
    # The ends of the outputs, for reading a surprising number afterwards.
    out["client_tail"] = (r.get("client_out") or "")[-700:]
    out["client_err_tail"] = (r.get("client_err") or "")[-300:]
    out["server_tail"] = (r.get("server_out") or "")[-700:]


def stream_figures(path, out):
    """What a TCP or QUIC test's figures say against the path: goodput
    ratios, sender minus receiver bytes, time past -t."""
    if out.get("rx_bps"):
        out["ratio"] = out["rx_bps"] / path.ideal_bps
    if out.get("steady_bps"):
        out["steady_ratio"] = out["steady_bps"] / path.ideal_bps
    if out.get("tx_bytes") is not None and out.get("rx_bytes") is not None:
        out["tx_minus_rx"] = out["tx_bytes"] - out["rx_bytes"]
    if "wall" in out:
        out["time_to_end"] = out["wall"] - path.tcp_secs


def summarise_tcp(tool, path, r):
    out = {"secs": path.tcp_secs}
    if "client_out" in r:
        out.update(tool.parse_tcp(r, path.tcp_secs))
    common(r, out)
    stream_figures(path, out)
    if out.get("rx_seconds") is not None:
        out["rx_over_t"] = out["rx_seconds"] - path.tcp_secs
    return out


def summarise_quic(tool, path, r):
    """A QUIC test against the path: the goodput as TCP's, and the client's
    connection numbers against the emulator's A-to-B UDP counts (the
    test's only UDP: its control connection is TCP)."""
    out = {"secs": path.tcp_secs}
    if "client_out" in r:
        out.update(tool.parse_quic(r, path.tcp_secs))
    common(r, out)
    stream_figures(path, out)
    q = out.get("quic_client") or {}
    emu = out.get("emu")
    if emu:
        a, b = emu["a2b"], emu["b2a"]
        out["emu_udp"] = {"in": a["udp"]["in"], "delivered": a["udp"]["delivered"],
                          "drops": sum(a["udp"][f] for f in DROPS), "loss": a["udp"]["loss"],
                          "queue": a["udp"]["queue"], "reordered": a["udp_reordered"],
                          "in_bytes": a["udp_bytes"]["in"], "delivered_bytes": a["udp_bytes"]["delivered"],
                          "b2a_in": b["udp"]["in"], "b2a_drops": sum(b["udp"][f] for f in DROPS)}
        # What left the client's QUIC and did not reach the server's: the
        # path's drops, the client's TUN ring's (before the emulator read
        # them) and the server host's socket's (RcvbufErrors).
        out["drops"] = out["emu_udp"]["drops"]
        out["not_arrived"] = out["drops"] + emu["tun"]["a"]["tx_dropped"] + (out.get("rcvbuf_errors") or 0)
        if out["emu_udp"]["delivered"]:
            out["ip_bytes_per_packet"] = out["emu_udp"]["delivered_bytes"] / out["emu_udp"]["delivered"]
        if out.get("rx_bytes") and out["emu_udp"]["delivered_bytes"]:
            out["payload_share"] = out["rx_bytes"] / out["emu_udp"]["delivered_bytes"]
    if q:
        out["declared_lost"] = q.get("lost_packets")
        out["quic_sent"] = q.get("sent_packets")
        out["congestion_events"] = q.get("congestion_events")
        out["quic_min_rtt_ms"] = q["min_rtt_us"] / 1000 if q.get("min_rtt_us") is not None else None
        out["quic_rtt_ms"] = q["rtt_us"] / 1000 if q.get("rtt_us") is not None else None
        if out.get("not_arrived") is not None and out["declared_lost"] is not None:
            # Declared beyond what failed to arrive: at least that many were
            # spurious (a packet late or reordered past quinn's thresholds);
            # fewer declared than dropped: drops it never judged (the test's
            # last packets) or netted against spurious ones.
            out["spurious_min"] = max(0, out["declared_lost"] - out["not_arrived"])
            out["undeclared_min"] = max(0, out["not_arrived"] - out["declared_lost"])
    return out


def summarise_udp(tool, path, r, bps):
    out = {"bps": bps}
    if "client_out" in r:
        out.update(tool.parse_udp(r, UDP_SECS))
    common(r, out)
    emu = out.get("emu")
    if emu:
        a = emu["a2b"]["udp_len"]
        out["emu_in"] = a["in"]
        out["emu_delivered"] = a["delivered"]
        out["drops"] = a["loss"] + a["queue"] + a["outage"] + a["limit"] + a["write_error"]
        out["drops_loss"], out["drops_queue"] = a["loss"], a["queue"]
        out["emu_reordered"] = emu["a2b"]["udp_reordered"]
    return out


# ---------------------------------------------------------------- goals

def judge(pr):
    """Per tool: each goal True (met), False (not met) or None (does not apply),
    with a reason when not met."""
    p = pr["path"]
    rtt = p["rtt_ms"]
    out = {}
    for name, tr in pr["tools"].items():
        g = {}
        tcp = tr.get("tcp", {})
        # Exactness: TCP sender bytes = receiver bytes; UDP reported lost = the path's drops.
        ex = []
        if tcp.get("tx_minus_rx") is not None:
            cut = f" ({tcp['server_cut']})" if tcp.get("server_cut") else ""
            ex.append(("TCP bytes", tcp["tx_minus_rx"] == 0, f"sent − received = {tcp['tx_minus_rx']:+d} B{cut}"))
        for key in ("udp90", "udp120"):
            u = tr.get(key)
            if u and u.get("lost") is not None and u.get("drops") is not None:
                # What the path dropped plus what the receiving host's socket had no room for.
                dropped = u["drops"] + (u.get("rcvbuf_errors") or 0)
                ex.append((f"UDP {key[3:]} %", u["lost"] == dropped,
                           f"lost {u['lost']} vs {dropped} dropped by the path and the receiving host"))
        why = [f"{w}: {r}" for w, ok, r in ex if not ok]
        g["exact"] = (all(ok for _, ok, _ in ex) if ex else None, "; ".join(dict.fromkeys(why)))
        # TCP within 5 % of the goodput, where the window allows.
        if not p["allowed"]:
            g["tcp"] = (None, "Mathis bound below the rate")
        elif tcp.get("steady_ratio") is None:
            g["tcp"] = (False, tcp.get("error") or "no receiver intervals")
        else:
            ok = tcp["steady_ratio"] >= 0.95
            g["tcp"] = (ok, "" if ok else f"second half {tcp['steady_ratio']:.3f} of goodput "
                                             f"(whole test {tcp.get('ratio', 0):.3f})")
        # UDP loss = drops (both loads).
        uu = []
        for key in ("udp90", "udp120"):
            u = tr.get(key)
            if u is None:
                continue
            if u.get("lost") is None or u.get("drops") is None:
                uu.append((key, False, u.get("error") or "no counts"))
            else:
                host = f" (+{u['rcvbuf_errors']} dropped by the receiving host's socket)" if u.get("rcvbuf_errors") else ""
                uu.append((key, u["lost"] == u["drops"], f"{key[3:]} %: lost {u['lost']} vs drops {u['drops']}{host}"))
        g["udp"] = (all(ok for _, ok, _ in uu) if uu else None, "; ".join(w for _, ok, w in uu if not ok))
        # Idle RTT within 1 ms of 2 x delay: only the tools that measure an idle RTT.
        if name == "wirespeed":
            v = (tr.get("udp90") or {}).get("idle_p50_ms")
            if p["jitter"]:
                g["rtt"] = (None, "jitter: a median of 10 probes scatters by more than 1 ms")
            elif v is None:
                g["rtt"] = (False, "no idle probes")
            else:
                ok = abs(v - rtt) <= 1.0
                g["rtt"] = (ok, "" if ok else f"idle p50 {v:.3f} ms vs {rtt} ms")
        else:
            g["rtt"] = (None, "no idle RTT (only TCP_INFO under load)")
        if tcp.get("ring_drops") or any((tr.get(u) or {}).get("ring_drops") for u in ("udp90", "udp120")):
            g["ring"] = (False, "the emulator's TUN ring dropped packets")
        out[name] = g
    ping_ok = None
    pg = pr.get("ping", {})
    if "median_ms" in pg and not p["jitter"]:
        ping_ok = abs(pg["median_ms"] - rtt) <= 1.0
    out["_ping"] = ping_ok
    return out


# ---------------------------------------------------------------- Markdown

def f(v, digits=2, unit=""):
    if v is None:
        return "—"
    if isinstance(v, int):
        return f"{v}{unit}"
    return f"{v:.{digits}f}{unit}"


def mark(ok):
    return {True: "✓", False: "✗", None: "·"}[ok]


def recompute_steady(res):
    """The second-half rate from the stored receiver intervals (raw ones, or
    for older results their rates: 1 s each, the last ending at the
    receiver's own end), so a change to `steady` reaches saved results."""
    for pr in res["paths"]:
        p = pr["path"]
        for tr in pr["tools"].values():
            x = tr.get("tcp")
            if not x:
                continue
            ivs = None
            if x.get("rx_intervals"):
                ivs = [tuple(iv) for iv in x["rx_intervals"]]
            elif x.get("rx_intervals_mbps") and x.get("rx_seconds"):
                rates = x["rx_intervals_mbps"]
                ivs = []
                for k, r in enumerate(rates):
                    end = k + 1 if k < len(rates) - 1 or x["rx_seconds"] <= k else x["rx_seconds"]
                    ivs.append((k, end, (r or 0) * 1e6 / 8 * (end - k)))
            if ivs:
                bps = steady(ivs, p["tcp_secs"])
                x["steady_bps"] = bps
                x["steady_ratio"] = bps / p["ideal_bps"] if bps else None


def render(res):
    recompute_steady(res)
    tools = res["tools"]
    labels = [LABELS.get(t, t) for t in tools]
    m = res["machine"]
    L = []
    title = "# Path benchmarks: every tool against the path emulator's ground truth"
    L.append(title + "\n")
    if res.get("subset"):
        L.append(f"**{res['subset']}**\n")
    L.append(f"Ran {m['date']} to {m.get('end', '(running)')}: `{res['command']}`.\n")
    L.append(f"Machine: {m['cores']} cores ({m['cpu']}), Linux {m['kernel']}; load average "
             f"{m['load_before']:.2f} before, {f(m.get('load_after'))} after; the cores were shared with "
             "other work, so the load is noted per path in the JSON.\n")
    code = res.get("code_commit")
    L.append(f"wirespeed: built from commit `{code or res['commit']}`"
             + (f" (the last to change `src/`, `crates/`, `examples/` or `Cargo.*`; the bench ran at `{res['commit']}` "
                f"on branch `{res.get('branch', '?')}`)" if code else f" (branch `{res.get('branch', '?')}`)")
             + f", `{res['versions'].get('wirespeed', '?')}`.\n")
    L.append("Peers: " + "; ".join(f"{LABELS.get(k, k)} = `{v}` (`{res['exes'].get(k, '')}`)"
                                    for k, v in res["versions"].items() if k != "wirespeed") + ".\n")
    L.append(f"Paths measured: {len(res['paths'])} in {res.get('seconds', 0) / 60:.1f} minutes.\n")
    L.append("## Method\n")
    L.extend(METHOD)
    L.append("")
    if res.get("notes"):
        L.append("## What we saw\n")
        L.extend(f"- {n}" for n in res["notes"])
        L.append("")
    judged = [(pr, judge(pr)) for pr in res["paths"]]
    L.append("## Goals\n")
    L.extend(GOALS)
    L.append("")
    L.append("| goal | " + " | ".join(labels) + " |")
    L.append("|---|" + "---|" * len(tools))
    for key, what in (("exact", "exact (TCP bytes; UDP lost = path + host drops)"), ("tcp", "TCP ≥ 95 % of goodput"),
                      ("udp", "UDP lost = drops"), ("rtt", "idle RTT within 1 ms")):
        cells = []
        for t in tools:
            vals = [j[t][key][0] for _, j in judged if t in j and key in j[t]]
            met = sum(1 for v in vals if v is True)
            judged_n = sum(1 for v in vals if v is not None)
            cells.append(f"{met}/{judged_n}" if judged_n else "n/a")
        L.append(f"| {what} | " + " | ".join(cells) + " |")
    pings = [j["_ping"] for _, j in judged if j["_ping"] is not None]
    L.append(f"\nping's median within 1 ms of 2 × delay (jitter-free paths): {sum(pings)}/{len(pings)}.\n")
    ring = [pr["path"]["name"] for pr, j in judged if any("ring" in g for k, g in j.items() if k != "_ping")]
    L.append("The emulator's TUN rings dropped packets (the emulator, not the path, was the bottleneck) on: "
             + (", ".join(ring) if ring else "no path") + ".\n")
    L.append("Per path (✓ met, ✗ not met, · does not apply), in the order exact / TCP / UDP / RTT:\n")
    L.append("| path | " + " | ".join(labels) + " |")
    L.append("|---|" + "---|" * len(tools))
    for pr, j in judged:
        cells = []
        for t in tools:
            if t not in j:
                cells.append("—")
                continue
            cells.append(" ".join(mark(j[t][k][0]) for k in ("exact", "tcp", "udp", "rtt"))
                         + (" RING" if "ring" in j[t] else ""))
        L.append(f"| {pr['path']['name']} | " + " | ".join(cells) + " |")
    L.append("\nWhere a goal was not met, what we saw:\n")
    for pr, j in judged:
        for t in tools:
            if t not in j:
                continue
            why = [f"{k}: {j[t][k][1]}" for k in ("exact", "tcp", "udp", "rtt", "ring") if k in j[t]
                   and j[t][k][0] is False]
            if why:
                L.append(f"- {pr['path']['name']}, {LABELS.get(t, t)}: " + "; ".join(why))
    L.append("")

    def table(title, intro, cols, cell, extra=None):
        L.append(f"## {title}\n")
        if intro:
            L.append(intro + "\n")
        head = ["path"] + (extra[0] if extra else []) + [LABELS.get(t, t) for t in cols]
        L.append("| " + " | ".join(head) + " |")
        L.append("|---" * len(head) + "|")
        for pr in res["paths"]:
            row = [pr["path"]["name"]] + (extra[1](pr) if extra else [])
            row += [cell(pr, pr["tools"].get(t)) for t in cols]
            L.append("| " + " | ".join(row) + " |")
        L.append("")

    def tcp_cell(pr, tr):
        x = (tr or {}).get("tcp")
        if not x:
            return "—"
        if x.get("error") and x.get("ratio") is None:
            return "error"
        s = f"{x['rx_bps'] / 1e6:.1f} ({f(x.get('ratio'), 3)} / {f(x.get('steady_ratio'), 3)})"
        return s + (" RING" if x.get("ring_drops") else "")

    table("TCP: receiver bitrate against the bottleneck's goodput",
          "Mbit/s the receiver got over the whole test (the tool's own number; iperf 2: the server's bytes over "
          "its time), then (÷ goodput over the whole test / ÷ goodput over the second half, from the receiver's "
          "intervals). Goodput = rate × 1448/1500. \"Mathis\" is the bound at the idle RTT and the path's loss; "
          "\"allows\" marks the paths where it exceeds the goodput (the TCP goal applies there).",
          tools, tcp_cell,
          (["-t", "Mathis Mbit/s", "allows"],
           lambda pr: [f"{pr['path']['tcp_secs']} s",
                       "∞" if pr["path"]["mathis_bps"] is None else f"{pr['path']['mathis_bps'] / 1e6:.0f}",
                       "yes" if pr["path"]["allowed"] else "no"]))

    def bytes_cell(pr, tr):
        x = (tr or {}).get("tcp")
        if not x or x.get("tx_minus_rx") is None:
            return "—"
        d = x["tx_minus_rx"]
        return "0 (exact)" if d == 0 else f"{d:+d} ({d / max(x['rx_bytes'], 1) * 100:+.2f} %)"

    table("TCP: sender bytes − receiver bytes",
          "The sender's reported bytes (iperf3/wirespeed `end.sum_sent.bytes`; iperf 2 the client's `-f B` total) "
          "minus the receiver's (the server's own `-J` `end.sum_received.bytes`; iperf 2 the server's CSV).",
          tools, bytes_cell)

    def end_cell(pr, tr):
        x = (tr or {}).get("tcp")
        if not x or x.get("time_to_end") is None:
            return "—"
        s = f"{x['time_to_end']:.2f}"
        if x.get("rx_over_t") is not None:
            s += f" / {x['rx_over_t']:+.2f}"
        return s + (" (cut)" if x.get("server_cut") else "")

    table("TCP: time to end (s)",
          "From starting the client to its exit, minus `-t` (it includes connecting and the tool's setup; the "
          "path's RTT is in the first column), then the receiver's own duration minus `-t` (iperf3, wirespeed: "
          "the server's `end.sum_received.seconds`; iperf 2: the end of the server's final CSV row). \"(cut)\": "
          "the server was still receiving when the bench stopped it (the test's length again after the "
          "client's exit).",
          tools, end_cell)

    def retr_cell(pr, tr):
        x = (tr or {}).get("tcp")
        if not x:
            return "—"
        emu = x.get("emu_tcp") or x.get("emu", {}).get("a2b", {}).get("tcp", {})
        return f"{f(x.get('retransmits'))} / {emu.get('loss', 0) + emu.get('queue', 0)}"

    table("TCP: retransmits reported / data packets the path dropped",
          "The sender's retransmit count (iperf 2: `Rtry`) and the emulator's TCP drops A→B (random loss + queue).",
          tools, retr_cell)

    for key, load in (("udp90", "90 %"), ("udp120", "120 %")):
        if not any(key in tr for pr in res["paths"] for tr in pr["tools"].values()):
            continue

        def udp_cell(pr, tr, key=key):
            x = (tr or {}).get(key)
            if not x:
                return "—"
            if x.get("lost") is None:
                return "error"
            s = f"{x['lost']}/{f(x.get('drops'))}"
            s += " ✓" if x["lost"] == x.get("drops") else " ✗"
            if x.get("rcvbuf_errors"):
                s += f" (+{x['rcvbuf_errors']} rcvbuf)"
            if x.get("lost_server") is not None and x["lost_server"] != x["lost"]:
                s += f" (server's own -J: {x['lost_server']})"
            return s + (" RING" if x.get("ring_drops") else "")

        table(f"UDP at {load} of the rate: lost reported / dropped by the path",
              f"1400-byte datagrams at {load} of the bottleneck's IP rate (`-b` = {load} × rate × 1400/1428). "
              "Reported: the receiver's `lost_packets` as the client reports it (iperf3, wirespeed: "
              "`end.sum_received` of the client's `-J`, the server's count exchanged at the end; iperf 2: the "
              "server's CSV). Dropped: the emulator's A→B `udp_by_len[\"1400\"]` loss + queue drops. "
              "\"+N rcvbuf\": datagrams the receiving host delivered to no socket because the receiver's buffer "
              "was full (namespace B's `Udp: RcvbufErrors`), which a tool counts as lost although the path "
              "delivered them.",
              tools, udp_cell)

        def count_cell(pr, tr, key=key):
            x = (tr or {}).get(key)
            if not x or x.get("received") is None:
                return "—"
            return f"{f(x.get('sent'))}/{f(x.get('emu_in'))} · {x['received']}/{f(x.get('emu_delivered'))}"

        table(f"UDP at {load}: sent / entered the path · received / delivered",
              "The sender's datagram count against the emulator's A→B 1400-byte arrivals, and the receiver's "
              "(packets − lost) against the emulator's deliveries.",
              tools, count_cell)

    def jit_cell(pr, tr):
        x = (tr or {}).get("udp90")
        if not x or x.get("jitter_ms") is None:
            return "—"
        return f"{x['jitter_ms']:.3f}"

    def jit_model(pr):
        m = pr.get("jitter_model")
        if not m:
            return ["0", "0", "0"]
        return [f"{m['mid_ms']:.3f}", f"{m['final_ms']:.3f} ({m.get('final_min_ms', m['final_ms']):.2f}–"
                f"{m.get('final_max_ms', m['final_ms']):.2f})", f"{m['inorder_ms']:.3f}"]

    table("UDP jitter (ms) at 90 %",
          "The receiver's RFC 3550 jitter (an average of |transit difference| over the last ~16 arrivals) at "
          "the end of the test. The model columns replay the emulator's model for evenly sent datagrams "
          "(3 seeds; 1 at 1 Gbit/s): \"mid-test\" is the estimate in the middle of the test, about 2J/3 "
          "(|difference of two uniform draws| averages 2J/3, reordered or not); \"final, all\" is its value "
          "after the last datagram when the receiver waits for every straggler (the last arrivals are the "
          "most delayed ones, so it ends lower: min–max over the seeds); \"final, in order\" leaves "
          "out-of-order datagrams out of the estimate. On a jitter-free path only the sender's burstiness "
          "through the bottleneck and the emulator's timing (tens of µs) remain.",
          tools, jit_cell,
          (["model: mid-test", "final, all", "final, in order"], jit_model))

    def ooo_cell(pr, tr):
        x = (tr or {}).get("udp90")
        if not x:
            return "—"
        return f"{f(x.get('out_of_order'))}/{f(x.get('emu_reordered'))}"

    table("UDP out of order at 90 %: reported / reordered by the path",
          "The receiver's out-of-order count and the emulator's A→B UDP `reordered` count (packets delivered "
          "after one that arrived later).",
          tools, ooo_cell)

    def rtt_extra(pr):
        pg = pr.get("ping", {})
        return [f"{pr['path']['rtt_ms']}", f"{f(pg.get('median_ms'), 3)} ({f(pg.get('min_ms'), 3)})"]

    def rtt_cell(pr, tr):
        if not tr:
            return "—"
        parts = []
        idle = (tr.get("udp90") or {}).get("idle_p50_ms")
        if idle is not None:
            parts.append(f"idle {idle:.3f}")
        t = tr.get("tcp") or {}
        if t.get("min_rtt_ms") is not None:
            parts.append(f"TCP {t['min_rtt_ms']:.1f}/{t['mean_rtt_ms']:.1f}")
        if t.get("rtt_ms") is not None:
            parts.append(f"TCP {t['rtt_ms']:.1f}")
        return ", ".join(parts) or "—"

    table("RTT (ms)",
          "2 × delay; ping's median (min) over 20 pings; wirespeed's `--latency` idle p50 (10 probes before its "
          "UDP test); the sender's TCP_INFO RTT in the TCP test, min/mean (iperf3 and wirespeed `-J` "
          "`min_rtt`/`mean_rtt`, sampled once per interval, smoothed, under load) or iperf 2's `-e` RTT (the "
          "last sample, under load). The TCP figures include the queue the test itself built.",
          tools, rtt_cell, (["2 × delay", "ping"], rtt_extra))

    L.append("## Emulator\n")
    L.append("| path | settings | seed | queue max A→B | late mean / max µs A→B | load before / after | "
             "minutes |")
    L.append("|---|---|---|---|---|---|---|")
    for pr in res["paths"]:
        fin = pr.get("final", {}).get("a2b", {})
        late = fin.get("late_us", {})
        L.append(f"| {pr['path']['name']} | `{pr['path']['settings']}` | {pr['seed']} | {fin.get('queue_max', '—')} | "
                 f"{f(late.get('mean'), 0)} / {f(late.get('max'), 0)} | {pr['load_before']:.1f} / "
                 f"{pr['load_after']:.1f} | {pr['seconds'] / 60:.1f} |")
    L.append("")
    if has_quic(res):
        L.append(render_quic(res, standalone=False))
    return "\n".join(L) + "\n"


def has_quic(res):
    return any("quic" in tr for pr in res["paths"] for tr in pr["tools"].values())


def render_quic(res, standalone):
    """The QUIC section, between its markers: wirespeed `-q` next to
    wirespeed's TCP on each path. `standalone`: the run that made it is not
    the rest of the file's, so it says its own command, date and build."""
    L = [QUIC_BEGIN, "## QUIC (`wirespeed -q`) next to TCP\n"]
    if standalone:
        m = res["machine"]
        if res.get("subset"):
            L.append(f"**{res['subset']}**\n")
        L.append(f"Ran {m['date']} to {m.get('end', '(running)')}, apart from the tables above: "
                 f"`{res['command']}` (results: `{res.get('json_name', 'bench/paths-quic-results.json')}`).\n")
        L.append(f"Machine: {m['cores']} cores ({m['cpu']}), Linux {m['kernel']}; load average "
                 f"{m['load_before']:.2f} before, {f(m.get('load_after'))} after.\n")
        L.append(f"wirespeed: built from commit `{res.get('code_commit') or res['commit']}` (the bench ran at "
                 f"`{res['commit']}` on branch `{res.get('branch', '?')}`), `{res['versions'].get('wirespeed', '?')}`"
                 f". Paths measured: {len(res['paths'])} in {res.get('seconds', 0) / 60:.1f} minutes.\n")
    L.extend(QUIC_METHOD)
    L.append("")
    if res.get("quic_notes"):
        L.append("What we saw:\n")
        L.extend(f"- {n}" for n in res["quic_notes"])
        L.append("")

    def table(title, intro, head, row):
        L.append(f"### {title}\n")
        L.append(intro + "\n")
        L.append("| " + " | ".join(["path"] + head) + " |")
        L.append("|---" * (len(head) + 1) + "|")
        for pr in res["paths"]:
            tr = pr["tools"].get("wirespeed") or {}
            if "quic" not in tr:
                continue
            L.append("| " + " | ".join([pr["path"]["name"]] + row(pr, tr.get("tcp") or {}, tr["quic"])) + " |")
        L.append("")

    def rate(x):
        if x.get("rx_bps") is None:
            return "error" if x.get("error") else "—"
        return f"{x['rx_bps'] / 1e6:.2f} ({f(x.get('ratio'), 3)} / {f(x.get('steady_ratio'), 3)})"

    def exact(x):
        d = x.get("tx_minus_rx")
        return "—" if d is None else ("0" if d == 0 else f"{d:+d}")

    table("Goodput against the bottleneck",
          "Mbit/s the receiver got over the whole test, then (÷ goodput over the whole test / ÷ goodput over the "
          "second half, from the server's intervals), goodput = rate × 1448/1500 for both (TCP's; QUIC's own "
          "ceiling is lower, see \"bytes/IP\"). \"bytes/IP\": the stream bytes the receiver got ÷ the IP bytes "
          "of UDP the path delivered A→B (headers, retransmissions, MTU probes and ACK frames are the rest), and "
          "the mean IP packet. \"sent − received\": the sender's bytes minus the receiver's.",
          ["-t", "Mathis Mbit/s", "TCP", "QUIC", "QUIC bytes/IP (mean packet)", "sent − received TCP / QUIC",
           "QUIC time to end (s)"],
          lambda pr, t, q: [f"{pr['path']['tcp_secs']} s",
                            "∞" if pr["path"]["mathis_bps"] is None else f"{pr['path']['mathis_bps'] / 1e6:.0f}",
                            rate(t), rate(q),
                            f"{f(q.get('payload_share'), 3)} ({f(q.get('ip_bytes_per_packet'), 0)} B)",
                            f"{exact(t)} / {exact(q)}", f(q.get("time_to_end"))])

    def tcp_retr(t):
        emu = t.get("emu_tcp") or {}
        if not t:
            return "—"
        return f"{f(t.get('retransmits'))} / {emu.get('loss', 0) + emu.get('queue', 0)}"

    def drops(q):
        e = q.get("emu_udp") or {}
        if not e:
            return "—"
        s = f"{e['drops']} ({e['loss']} loss, {e['queue']} queue)"
        extra = (q.get("not_arrived") or 0) - e["drops"]
        return s + (f" + {extra} host" if extra else "")

    table("Packets declared lost against the path's drops",
          "TCP: the sender's retransmits / the emulator's TCP drops A→B. QUIC: the packets the client sent "
          "(quinn's `sent_packets`) / the UDP packets the emulator read A→B; the packets quinn declared lost "
          "(`lost_packets`, MTU probes apart); the UDP packets the path dropped A→B (+ those the hosts dropped: "
          "A's TUN ring, B's `RcvbufErrors`); **spurious ≥**: declared − not arrived, floored at 0 (at least "
          "that many of the declared losses had arrived: reordered or late past quinn's thresholds, 3 packets "
          "or 9/8 RTT); **undeclared ≥**: not arrived − declared, floored at 0 (drops quinn never judged, such "
          "as the connection's last packets, or netted against spurious ones); quinn's congestion events; the "
          "emulator's A→B UDP `reordered` count.",
          ["TCP retr / drops", "QUIC sent / in", "QUIC declared lost", "path drops A→B", "spurious ≥",
           "undeclared ≥", "congestion events", "reordered A→B"],
          lambda pr, t, q: [tcp_retr(t), f"{f(q.get('quic_sent'))} / {f((q.get('emu_udp') or {}).get('in'))}",
                            f(q.get("declared_lost")), drops(q), f(q.get("spurious_min")),
                            f(q.get("undeclared_min")), f(q.get("congestion_events")),
                            f((q.get("emu_udp") or {}).get("reordered"))])

    def rtt_row(pr, t, q):
        pg = pr.get("ping", {})
        tcp = f"{t['min_rtt_ms']:.1f} / {t['mean_rtt_ms']:.1f}" if t.get("min_rtt_ms") is not None else "—"
        srv = (q.get("quic_server") or {}).get("min_rtt_us")
        return [f"{pr['path']['rtt_ms']}", f"{f(pg.get('median_ms'), 3)} ({f(pg.get('min_ms'), 3)})",
                f(q.get("quic_min_rtt_ms"), 3), f(q.get("quic_rtt_ms"), 3),
                f(None if srv is None else srv / 1000, 3), tcp]

    table("RTT (ms)",
          "2 × delay; ping's median (min) over 20 pings before the tests; the client's QUIC `min_rtt_us` "
          "(the smallest sample: the idle path plus the receiver's ACK delay, if any) and `rtt_us` (quinn's "
          "smoothed RTT at the end, under load: it includes the queue the test built); the server's QUIC "
          "`min_rtt_us` (from the client's ACKs of its ACK-eliciting packets); TCP_INFO min / mean of "
          "wirespeed's TCP test (sampled once per interval, smoothed).",
          ["2 × delay", "ping", "QUIC min", "QUIC smoothed (end)", "QUIC min, server", "TCP min / mean"],
          rtt_row)
    L.append(QUIC_END)
    return "\n".join(L)


def with_kept_sections(out, text):
    """`text` (a whole new file) followed by the sections of the old file at
    `out` that `text` does not have (see KEPT)."""
    try:
        with open(out) as fh:
            old = fh.read()
    except FileNotFoundError:
        return text
    extra = []
    for a, b in KEPT:
        i, j = old.find(a), old.find(b)
        if a not in text and i >= 0 and j > i:
            extra.append(old[i:j + len(b)])
    return text.rstrip("\n") + "".join("\n\n" + e for e in extra) + "\n"


def write_section(out, text):
    """Puts `text` (a section between its markers) into the Markdown file
    `out` in place of the one there, or at its end."""
    try:
        with open(out) as fh:
            old = fh.read()
    except FileNotFoundError:
        old = ""
    a, b = old.find(QUIC_BEGIN), old.find(QUIC_END)
    if a >= 0 and b > a:
        new = old[:a] + text + old[b + len(QUIC_END):]
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + text + "\n"
    with open(out, "w") as fh:
        fh.write(new)


METHOD = [
    "- **Path.** `tools/pathemu` with the same settings both ways: one-way delay RTT/2; a bottleneck "
    "rate with a tail-drop queue of one bandwidth-delay product, at least 100 packets (`queue = max(100, "
    "⌈rate × RTT / 1500 B⌉)`); Bernoulli loss in both directions; with jitter, each packet's delay gets a "
    "uniform draw in ±J, J = max(0.5 ms, 10 % of the one-way delay), which reorders. The loss and jitter "
    "draws are seeded from the path's settings (CRC-32), so a rerun meets the same draws for the same "
    "packets. The counters are read before and after each test (after nothing is in flight) and "
    "differenced.",
    "- **Hosts.** Server in namespace B (10.77.0.2), client in A. Both namespaces' `tcp_rmem`/`tcp_wmem` "
    "maximum is raised to max(32 MB, 4 × (BDP + queue) bytes), so the window is limited by TCP and the "
    "path rather than by a buffer cap (the namespaces inherit the host's, whose `tcp_wmem` maximum is 4 MB, "
    "and its default congestion control, bbr: hence `-C cubic`).",
    "- **TCP.** One stream, cubic: `-C cubic` (wirespeed, iperf3), `-Z cubic` (iperf 2), "
    "`-t` = max(5 s, 30 × RTT) — 5 s up to 160 ms, 6 s at 200 ms, 18 s at 600 ms. Slow start to one BDP "
    "takes about log2(BDP/10 packets) RTTs (1.5 s at 100 Mbit/s × 200 ms, 7 s at 1 Gbit/s × 600 ms), "
    "so the goal is judged on the receiver's bitrate over the second half of the test (its own 1 s "
    "intervals: the server's `-J` intervals, the iperf 2 server's `-i 1` CSV rows); the tools' whole-test "
    "number is shown beside it. iperf3 and wirespeed: `-J` at both ends (`-s -1 -J`); iperf 2: client "
    "`-i 1 -e -f B` (exact bytes and its RTT; without `-i`, iperf 2.2.1's final Rtry and RTT are its "
    "connect-time sample), server `-i 1 -y C`. After the client exits, the bench waits for the server to "
    "finish (iperf3 `-1` exits; iperf 2 prints its final row when the last byte has arrived), at most "
    "10 s + `-t` + 10 RTTs.",
    "- **UDP.** `-l 1400`, 5 s, `-b` = 90 % of the rate in IP bytes (`0.9 × rate × 1400/1428`); also 120 % on "
    "the jitter-free paths with loss 0 or 1 %. wirespeed's 90 % run adds `--latency` (its idle probes, "
    "before the load, are the idle RTT).",
    "- **RTT.** `ping -c 20 -i 0.05` from A before the tests.",
    "- **Hosts' own drops.** Namespace B's `/proc/net/snmp` `Udp: RcvbufErrors` is read before and after "
    "each test: datagrams the path delivered but the receiving socket had no room for (the receiver did not "
    "read fast enough).",
    "- Tools run one after another on one path (wirespeed, iperf3 3.12, the newest iperf3, iperf 2.1.8, "
    "the newest iperf 2), each against its own server, started for that test and ended by pid.",
]

GOALS = [
    "- **exact**: TCP sender bytes = receiver bytes, and UDP reported lost = the datagrams that did not reach "
    "the receiving program: the path's drops plus those the receiving host's socket had no room for "
    "(`RcvbufErrors`), at both loads.",
    "- **TCP**: the receiver's bitrate over the second half of the test at least 95 % of the goodput "
    "(rate × 1448/1500; above it is possible and not a fault: data that crossed the link in the first half "
    "but waited in the receiver's reassembly queue behind a lost segment is read in the second), judged "
    "only where the window allows: loss-free paths, or where the Mathis bound "
    "(MSS/RTT × √1.5/√p at the idle RTT) exceeds the goodput. Jitter paths are judged too (jitter does not "
    "shrink the window; the reordering it causes may).",
    "- **UDP**: reported lost = the path's drops (the emulator's 1400-byte payloads A→B), at 90 % and at "
    "120 %. Unlike **exact**, this fails when the receiving program did not keep up and its host dropped "
    "datagrams the path had delivered.",
    "- **RTT**: an idle RTT within 1 ms of 2 × delay: wirespeed's `--latency` idle p50 on jitter-free paths "
    "(with ±J on each packet, a median of 10 probes scatters by more than 1 ms). iperf3 and iperf 2 have no "
    "idle RTT (only TCP_INFO under load), so the goal does not apply to them; their numbers are in the RTT "
    "table.",
    "",
    "Counts are met / judged.",
]


# ---------------------------------------------------------------- main

def slim(res):
    """What the JSON keeps: the outputs' tails only for tests that failed or
    were not exact, and the emulator's counters the tables read."""
    for pr in res["paths"]:
        for tr in pr["tools"].values():
            for key, x in tr.items():
                bad = x.get("error") or x.get("server_cut") or (
                    x.get("lost") is not None and x.get("drops") is not None
                    and x["lost"] != x["drops"] + (x.get("rcvbuf_errors") or 0)) or (
                    key == "quic" and x.get("tx_minus_rx") != 0)
                if not bad:
                    for k in ("client_tail", "server_tail", "client_err_tail"):
                        x.pop(k, None)
                emu = x.pop("emu", None)
                if emu and key != "quic":  # a QUIC test's UDP counts are in emu_udp
                    t = emu["a2b"]["tcp"]
                    x["emu_tcp"] = {"delivered": t["delivered"], "loss": t["loss"], "queue": t["queue"],
                                    "reordered": emu["a2b"]["tcp_reordered"]}
    return res


def write_json(res, path):
    """The results, one line per path (the commands of every test are in
    the first path's entries; later ones drop them)."""
    slim(res)
    for pr in res["paths"][1:]:
        for tr in pr["tools"].values():
            for x in tr.values():
                x.pop("argv", None)
                x.pop("server_argv", None)
    head = {k: v for k, v in res.items() if k != "paths"}
    with open(path, "w") as fh:
        fh.write("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in head.items())
                 + ',\n"paths": [\n'
                 + ",\n".join(json.dumps(p, separators=(",", ":"), ensure_ascii=False) for p in res["paths"])
                 + "\n]}\n")


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": os.getloadavg()[0]}


def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def floats(s):
    return tuple(float(x) for x in s.split(","))


def ints(s):
    return tuple(int(x) for x in s.split(","))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rtt", type=ints, help="RTTs in ms, e.g. 20,200")
    ap.add_argument("--loss", type=floats, help="loss in %%, e.g. 0,1")
    ap.add_argument("--rate", type=ints, help="bottleneck rates in Mbit/s, e.g. 100")
    ap.add_argument("--jitter", choices=("off", "on", "both"), help="jitter-free paths, jitter paths or both")
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help=f"comma-separated, from {','.join(TOOLS + EXTRA_TOOLS)}")
    ap.add_argument("--quick", action="store_true", help="RTT 20,200 x loss 0,1 %% x rate 100 x jitter off/on")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"comma-separated tests, from {','.join(KINDS)} (quic: wirespeed only)")
    ap.add_argument("--section", choices=("quic",),
                    help="write only this section into --out (in place of the one there, or appended), "
                         "leaving the rest of the file; --json then defaults to bench/paths-quic-results.json")
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS-PATHS.md"))
    ap.add_argument("--json")
    ap.add_argument("--render", action="store_true", help="only write the Markdown again from the JSON")
    ap.add_argument("--dry-run", action="store_true", help="list the paths and the time budget, run nothing")
    a = ap.parse_args()
    if a.json is None:
        a.json = os.path.join(ROOT, "bench", "paths-quic-results.json" if a.section else "paths-results.json")
    kinds = tuple(k for k in KINDS if k in a.kinds.split(","))
    if not kinds or set(a.kinds.split(",")) - set(KINDS):
        sys.exit(f"--kinds: from {','.join(KINDS)}")
    if a.section == "quic" and "quic" not in kinds:
        sys.exit("--section quic needs the quic kind")

    def write_md(res):
        res["json_name"] = os.path.relpath(a.json, ROOT)
        if a.section:
            write_section(a.out, render_quic(res, standalone=True))
        else:
            text = with_kept_sections(a.out, render(res))
            with open(a.out, "w") as fh:
                fh.write(text)

    if a.render:
        with open(a.json) as fh:
            res = json.load(fh)
        res["notes"] = NOTES
        res["quic_notes"] = QUIC_NOTES
        write_json(res, a.json)
        write_md(res)
        return
    sel = dict(QUICK) if a.quick else {"rtt": RTTS, "loss": LOSSES, "rate": RATES, "jitter": (False, True)}
    for k in ("rtt", "loss", "rate"):
        if getattr(a, k):
            sel[k] = getattr(a, k)
    if a.jitter:
        sel["jitter"] = {"off": (False,), "on": (True,), "both": (False, True)}[a.jitter]
    paths = [Path(r, l, b, j) for r in sel["rtt"] for b in sel["rate"] for l in sel["loss"] for j in sel["jitter"]]
    wirespeed = os.environ.get("WIRESPEED", pathemu.WIRESPEED)
    tools, skipped = make_tools(a.tools.split(","), wirespeed)
    if skipped:
        print(f"skipped (not found; set IPERF3_BIN/IPERF2_BIN for the newest): {skipped}", file=sys.stderr)
    budget = sum(path_budget(p, tools, kinds) for p in paths)
    print(f"{len(paths)} paths x {len(tools)} tools; budget about {budget / 60:.0f} min", file=sys.stderr)
    if a.dry_run:
        for p in paths:
            print(f"  {p.name}: {p.settings()}, -t {p.tcp_secs}, about {path_budget(p, tools, kinds):.0f} s",
                  file=sys.stderr)
        return
    for exe in (pathemu.PATHEMU, wirespeed):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} is missing: cargo build --release --bin wirespeed --example pathemu")
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, TUN devices)")
    res = {"machine": machine(), "command": shlex.join(["python3", "bench/paths.py"] + sys.argv[1:]),
           "commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
           "code_commit": git("log", "-1", "--format=%H", "--", "src", "crates", "examples", "Cargo.toml", "Cargo.lock"),
           "tools": [t.name for t in tools], "versions": {}, "exes": {}, "paths": [], "notes": NOTES,
           "quic_notes": QUIC_NOTES, "kinds": list(kinds), "selection": {k: list(v) for k, v in sel.items()}}
    if a.quick:
        res["subset"] = ("The quick subset (--quick: RTT 20 and 200 ms × loss 0 and 1 % × 100 Mbit/s × "
                         "jitter off/on), not the full matrix.")
    elif (set(sel["rtt"]), set(sel["loss"]), set(sel["rate"]), set(sel["jitter"])) != (
            set(RTTS), set(LOSSES), set(RATES), {False, True}):
        res["subset"] = "A subset of the matrix (see the command)."
    for t in tools:
        res["versions"][t.name] = t.version()
        res["exes"][t.name] = " ".join(getattr(t, "argv0", [getattr(t, "exe", "")]))
    t0 = time.monotonic()

    def save():
        res["seconds"] = time.monotonic() - t0
        res["machine"]["load_after"] = os.getloadavg()[0]
        write_json(res, a.json)
        write_md(res)

    def log(s):
        print(s, file=sys.stderr, flush=True)

    for i, p in enumerate(paths):
        log(f"[{i + 1}/{len(paths)}] {p.name}: {p.settings()} ({time.strftime('%H:%M:%S')}, "
            f"load {os.getloadavg()[0]:.1f})")
        try:
            res["paths"].append(run_path(p, tools, log, kinds))
        except (PathEmuError, OSError, subprocess.SubprocessError) as e:
            log(f"  path failed: {e}")
            res["paths"].append({"path": p.to_json(), "seed": 0, "error": str(e), "tools": {},
                                 "load_before": 0, "load_after": 0, "seconds": 0})
        save()
    res["machine"]["end"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    save()
    log(f"wrote {a.out} and {a.json} ({(time.monotonic() - t0) / 60:.1f} min)")


NOTES = [
    "**Exact totals.** wirespeed's sender and receiver agreed to the byte on every path, and its UDP lost "
    "count was the path's drops on all 12 UDP runs. iperf3 (3.12 and the newest) reports as sent what its "
    "sender wrote into the socket, so its sender total exceeds the receiver's by what was still buffered "
    "at `-t`: 0.08–1.5 MB at 20 ms, up to 17 MB (39 % of what arrived) at 200 ms. iperf 2 (both) is exact "
    "for TCP bytes (its server reads until the connection closes), but its client overruns `-t` when its "
    "last write blocks: at 200 ms with 1 % loss the client ran 10.8 s (2.1.8) and 12.5 s (2.2.1) for "
    "`-t 6`, and 2.2.1's server got its last byte 10 s after `-t`.",
    "**Where a peer's UDP loss differs from the path's,** the receiving host's socket drops explain most "
    "of it (`RcvbufErrors`, up to 5264 in one 5 s run of the newest iperf3 at 120 %): iperf3 and iperf 2 "
    "read one datagram per system call and fall behind when other work takes the CPU (the load average "
    "swung between 0.6 and 7 during the run). What the host does not explain: iperf3 (both) does not "
    "count datagrams lost after the last one it received (8592 reported against 8594 dropped at 120 %, "
    "where the full queue dropped the last ones) and counts as lost datagrams that reorder past the "
    "test's end (6 lost, 0 dropped at ±1 ms); iperf 2 (both) counts as lost the datagrams that arrive "
    "after its FIN, which jitter lets overtake them (63 and 64 lost, 0 dropped, at ±10 ms). wirespeed's client reports the count corrected for "
    "datagrams lost after the last one seen; its server's own `-J` document is not corrected (a smoke "
    "test at 600 ms, 1 Gbit/s, 120 %: the client said 38170 lost = 37577 dropped by the path + 593 by "
    "the host, the server's document 38168; `python3 bench/paths.py --rtt 600 --loss 0 --rate 1000 "
    "--jitter off --tools wirespeed`).",
    "**Jitter.** A receiver's final RFC 3550 value depends on how the test ends: the last ~16 arrivals "
    "set it, and a receiver that waits for the stragglers ends on the most delayed datagrams, whose "
    "transit times are alike. At ±1 ms every tool but iperf 2.2.1 reported 0.54–0.75 ms (model: "
    "0.50–0.78 at the end, 0.70 mid-test); at ±10 ms wirespeed 2.1 and 1.5, iperf3 2.5–6.1, iperf 2.1.8 "
    "3.6–6.4 (model at the end, over 20 seeds: 2.1–4.0; mid-test 6.7). iperf 2.2.1's 0.29–0.32 and "
    "0.84–0.88 match an estimator that leaves out-of-order datagrams out (model 0.22–0.27 and 1.2–1.3). "
    "On jitter-free paths every tool reported at most 0.17 ms, wirespeed 0.02–0.09 ms.",
    "**TCP.** On the loss-free, jitter-free paths every tool got 0.99–1.07 of the goodput in the second "
    "half of the test (over 1 at 200 ms: data held behind the slow-start overshoot's losses is read "
    "then). The whole-test numbers at 200 ms are 0.75–0.82: slow start takes about 2 s of the 6. With "
    "1 % loss every tool sits near the Mathis bound. With ±10 ms of reordering at 200 ms the tools got "
    "0.52–0.99 and the ranking is chance: Linux marks reordered segments lost until it has seen "
    "reordering, and the recovery decides the rest of the test. In a side run of 7 tests each on that "
    "path (`-t 8`), wirespeed's sender got 44–79 Mbit/s and iperf3 3.12's 28–56; here wirespeed got the "
    "least (0.52 of goodput, 673 retransmits for 18 drops).",
    "**Time to end** counts from the client's start, so it includes connecting: at 20 ms with 1 % loss "
    "and ±1 ms, wirespeed's 1.35 s (the others 0.19–0.34) is a lost SYN's 1 s timeout — the path's "
    "seeded draws drop the same packet on every rerun, and 5.08 s of the 6.5 s were the test itself. "
    "At 200 ms iperf3 and wirespeed need 1.4–2.5 s (several round trips to set up and to exchange "
    "results), iperf 2 0.7–1.3 s where its last write did not block; wirespeed's receiver drains what is "
    "in flight before the results (it ends 0.3–1.0 s after `-t`, iperf3's 0.2–0.3 s).",
    "**RTT.** wirespeed's idle p50 was 0.4–0.6 ms above 2 × delay on the jitter-free paths (ping: "
    "0–0.5 ms; at 200 ms ping prints whole milliseconds). The TCP_INFO figures are under load: at "
    "200 ms, 0 % loss the mean was 295–320 ms and iperf 2's last sample 294–374 ms, the queue the test "
    "built (up to 200 ms more). iperf3's `min_rtt` is the smallest of its once-per-interval smoothed "
    "samples: within 0.4 ms of 2 × delay at 200 ms, but 9–11 ms above it at 20 ms with no loss, where "
    "the 167-packet queue (20 ms at 100 Mbit/s) never drained.",
    "No emulator ring dropped a packet; the emulator's mean lateness was 28–66 µs, its worst 38 ms "
    "(one wake-up, on a loaded machine).",
]

QUIC_METHOD = [
    "- **QUIC.** wirespeed's iperf3 test over QUIC (`-q`: one quinn connection, its streams the test's; "
    "the control connection stays TCP; quinn 0.11's defaults: cubic, loss declared 3 packets or 9/8 RTT "
    "behind, path MTU discovery up to 1452 bytes of UDP payload), one stream, the same `-t` as TCP, on "
    "the same path as wirespeed's TCP test just before it: `wirespeed -c 10.77.0.2 -t T -J -q` against "
    "`wirespeed -s -1 -J`. The iperf3 peers have no QUIC. The numbers are the client's (the sender's) "
    "`end.streams[0].quic` and the emulator's A→B UDP counters (the test's only UDP), differenced around "
    "the test as for TCP. No `-C`: quinn's controller is its own, not the kernel's.",
]

QUIC_NOTES = [
    "**Exact totals.** On the 23 QUIC tests that ran, the sender's bytes were the receiver's, and quinn's "
    "`sent_packets` were the UDP packets the emulator read from A, within 0–2 (the close).",
    "**Losses without reordering: exact.** On every jitter-free path that ran, quinn declared lost exactly "
    "the packets the path dropped (171, 27, 479, 31, 2342, 35, 518, 107, 6, 0 and 20; queue and random "
    "drops alike), with none spurious and none undeclared, as TCP's retransmits matched its drops there.",
    "**Losses under reordering: spurious, and they cost the rate.** On all 12 jitter paths quinn declared "
    "more than the path dropped: 1–90 spurious at least (2, 82, 86, 12, 13 and 14 on paths that dropped "
    "nothing). quinn 0.11 declares a packet lost when a packet sent 3 or more after it is acknowledged, or "
    "a later one is and 9/8 RTT have passed since it was sent; every such loss is a congestion event it never undoes; Linux TCP adapts its reordering "
    "window (RACK) and undoes spurious recoveries. So QUIC's window stayed at a few packets (6–12 kB at "
    "the end): 2.2–2.7 Mbit/s at 20 ms ±1 ms on 100 M and 1000 M where TCP got 7.7–803, 0.25–0.29 Mbit/s "
    "at 200 ms ±10 ms where TCP got 1.1–624. The exceptions are the two 10 Mbit/s paths at ±1 ms (2 and 1 "
    "spurious; 9.46 and 5.81 Mbit/s, TCP 9.59 and 5.78): there packets leave the bottleneck 1.2 ms apart "
    "and ±1 ms seldom moves one past three others. A side "
    "experiment, not committed: with quinn's `packet_threshold(1000)` and `time_threshold(2.0)` in "
    "crates/quic's transport, the 20 ms ±1 ms, 100 M path declared 2 losses and climbed to 71 Mbit/s "
    "within 5 s, but 200 ms ±10 ms still declared 987 losses with no drop (its slow start's queue grew "
    "faster than the RTT estimate).",
    "**Congestion events** are quinn's loss-detection passes that found a lost packet, not window "
    "reductions: 479 drops gave 61 at 20 ms, 100 M and 518 gave 276 at 200 ms, 10 M.",
    "**Goodput, no loss, no reordering.** QUIC carried 0.955–0.959 stream bytes per IP byte, in packets of "
    "1457–1480 bytes on average (quinn's path MTU discovery stops at 1452 bytes of UDP payload), against TCP's 0.965, so its "
    "ceiling is about 0.99 of the goodput column's. It reached it at 10 M (0.994 and 1.06 of goodput in "
    "the second half) and at 20 ms, 100 M (0.992; TCP got 0.701 in this run, on a loaded machine, and 1.0 "
    "in the tables above). At 1 Gbit/s it fell short: 682 against TCP's 907 Mbit/s at 20 ms (not "
    "diagnosed; the two cores were shared, load 5–6), and at 200 ms it held 327–331 Mbit/s for its last "
    "4 s with no loss and a 29.5 MB window: 8 MiB per 200 ms round trip, the cap on what a wirespeed QUIC "
    "sender lets quinn hold (crates/quic/src/net.rs `SEND_WINDOW`); the 16 MiB stream receive window "
    "(crates/quic/src/iperf3.rs) would cap it next at about 670 Mbit/s. That limit is wirespeed's, not "
    "the path's. `-w` now sets both (each stream's window, and the sender's hold at that times the "
    "streams).",
    "**Goodput with 1 % loss, no reordering.** At 20 ms QUIC got 6.0–6.7 Mbit/s and TCP 3.9–9.3 (Mathis: "
    "7.1); at 200 ms QUIC got 2.6–4.5 and TCP 0.9–1.3 (Mathis: 0.7). Short tests (30 round trips at "
    "200 ms); why QUIC does better there was not diagnosed.",
    "**A failure, since fixed: 200 ms, 0 %, 100 M.** The QUIC test ended after about 4 s of 6 with "
    "the server's \"unable to read from stream socket: connection lost: the endpoint encountered an "
    "internal error and cannot continue with the connection: too many gaps in stream buffer\". Slow "
    "start overshot into the 1667-packet queue, which dropped some 2600 packets within a round trip; "
    "the receiver read in order, so all that arrived behind the first hole waited a round trip for "
    "its repair, and quinn-proto 0.11 closes a connection whose stream holds more than 1024 separate "
    "pieces (`MAX_CHUNKS` in its assembler). It failed in both bench runs and in 6 of 10 runs of "
    "that path by hand. A `-q` receiver only counts bytes (`-F` is refused with `-q`), so it now "
    "reads in any order (`read_chunk(n, false)`, commit c672d13); `tests/paths/quic.rs` runs this "
    "path both ways: 58.2 MB forward with 3447 packets dropped and 3447 declared lost, 61.2 MB "
    "reverse. The table above is from before the fix.",
    "**RTT.** On the jitter-free paths QUIC's minimum was 0.24–0.29 ms above 2 × delay at 100 M, 0.8–2.4 "
    "ms above at 10 M (a 1480-byte packet takes 1.2 ms at 10 Mbit/s) and −1.83 to +0.24 at 1000 M. With ±J "
    "it was near ping's minimum and mostly under 2 × delay (18.4–20.8 against ping's 18.2–19.2 at ±1 ms; "
    "182–185 against 181–189 at ±10 ms): the path's own minimum is 2 × (delay − J). The −1.83 is 198.17 ms "
    "at 200 ms, 0 %, 1000 M, less than any "
    "packet can take: quinn's endpoint stamps every datagram of one receive pass with the time the pass "
    "began (quinn 0.11 `endpoint.rs`), so under load an ACK read late in a pass makes a short sample. "
    "The smoothed RTT at the end includes the queue the test built (118 ms at 20 ms, 10 M; 336 ms at "
    "200 ms, 10 M: each of the 167 queued packets takes 1.2 ms).",
    "**Time to end:** QUIC 0.4–0.7 s past `-t` at 20 ms (TCP 0.2–1.3), 1.8–4.9 s at 200 ms (TCP 1.7–2.5): "
    "a QUIC handshake besides the TCP one, and the last window and its repairs cross before the results.",
]

if __name__ == "__main__":
    main()
