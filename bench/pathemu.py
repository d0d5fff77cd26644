#!/usr/bin/env python3
"""The path emulator (tools/pathemu) from Python: start it, wait for its
ready line, send commands, read counters, run programs in its namespaces,
and clean up by pid. No third-party modules.

    import pathemu
    with pathemu.PathEmu(both="delay=25ms,rate=100M,queue=500", b2a="loss=1%") as pe:
        srv = pe.popen_b([WIRESPEED, "-s", "-1"])
        r = pe.run_a([WIRESPEED, "-c", pe.addr_b, "-t", "5", "-J"], timeout=30)
        print(pe.stats()["a2b"]["tcp"]["delivered"]["packets"])

Run as a script it measures the emulator itself (needs root and the release
builds: cargo build --release --bin wirespeed --example pathemu):

    python3 bench/pathemu.py ceiling      # unlimited rate, zero delay: TCP -P 1/-P 4, UDP 1400 B
    python3 bench/pathemu.py delay        # ping RTT against 2 x the one-way delay
    python3 bench/pathemu.py rate         # TCP goodput against rate=10M/100M/1G
    python3 bench/pathemu.py all --json out.json

Every process it starts is bounded in time and ended by its pid.
"""

import argparse
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
PATHEMU = os.path.join(TARGET, "release", "examples", "pathemu")
WIRESPEED = os.path.join(TARGET, "release", "wirespeed")


class PathEmuError(RuntimeError):
    """The emulator failed to start or to answer."""


class PathEmu:
    """One running emulator. Use as a context manager, or call close()."""

    def __init__(self, both=None, a2b=None, b2a=None, outages=(), lifetime=600, seed=None, name=None,
                 extra=(), exe=None, ready_timeout=20.0):
        argv = [exe or PATHEMU, "--lifetime", str(lifetime)]
        for flag, value in (("--both", both), ("--a2b", a2b), ("--b2a", b2a), ("--seed", seed), ("--name", name)):
            if value is not None:
                argv += [flag, str(value)]
        for o in outages:
            argv += ["--outage", o]
        argv += list(extra)
        self.argv = argv
        self.lifetime = lifetime
        self.final = None
        self._lines = queue.Queue()
        self._err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                  text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self.ready = self._expect(("ready",), ready_timeout)
        except PathEmuError:
            self.close()
            raise
        self.ns_a, self.ns_b = self.ready["ns_a"], self.ready["ns_b"]
        self.addr_a, self.addr_b = self.ready["addr_a"], self.ready["addr_b"]
        self.addr6_a, self.addr6_b = self.ready["addr6_a"], self.ready["addr6_b"]

    def _read(self):
        for line in self.p.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr(self):
        """Everything the emulator wrote to stderr so far."""
        self._err.seek(0)
        return self._err.read()

    def _expect(self, events, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PathEmuError(f"no {'/'.join(events)} line within {timeout} s; stderr: {self.stderr().strip()}")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise PathEmuError(f"emulator ended (waiting for {'/'.join(events)}); stderr: {self.stderr().strip()}")
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if doc.get("event") in events:
                return doc

    def command(self, line, timeout=10.0):
        """Sends one command; returns its answer (an ok, error or stats
        document). Raises PathEmuError on an error answer."""
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        doc = self._expect(("ok", "error", "stats"), timeout)
        if doc["event"] == "error":
            raise PathEmuError(f"{line!r}: {doc['error']}")
        return doc

    def stats(self):
        """All counters, settings and the devices' own counters."""
        return self.command("stats")

    def down(self, dirs="both"):
        return self.command(f"down {dirs}")

    def up(self, dirs="both"):
        return self.command(f"up {dirs}")

    def set(self, dirs, settings):
        """set("a2b", "delay=10ms,loss=1%") or set("both", {"rate": "10M"})."""
        if isinstance(settings, dict):
            settings = ",".join(f"{k}={v}" for k, v in settings.items())
        return self.command(f"set {dirs} {settings}")

    def _ns_argv(self, ns, argv):
        return ["ip", "netns", "exec", ns] + [str(a) for a in argv]

    def popen_a(self, argv, **kw):
        """Starts argv in namespace A (ip netns exec execs it: the pid is
        the program's). The caller ends it with stop()."""
        return self._popen(self.ns_a, argv, **kw)

    def popen_b(self, argv, **kw):
        return self._popen(self.ns_b, argv, **kw)

    def _popen(self, ns, argv, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        return subprocess.Popen(self._ns_argv(ns, argv), **kw)

    def run_a(self, argv, timeout):
        """Runs argv in namespace A to completion (killed by pid after
        timeout); a CompletedProcess, with returncode None if killed."""
        return self._run(self.ns_a, argv, timeout)

    def run_b(self, argv, timeout):
        return self._run(self.ns_b, argv, timeout)

    def _run(self, ns, argv, timeout):
        p = self._popen(ns, argv)
        try:
            out, err = p.communicate(timeout=timeout)
            return subprocess.CompletedProcess(p.args, p.returncode, out, err)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            return subprocess.CompletedProcess(p.args, None, out, err)

    def close(self, timeout=10.0):
        """Quits (final counters in self.final), waits, kills by pid if
        need be, and makes sure the namespaces are gone."""
        if self.p.poll() is None:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass
            try:
                self.final = self._expect(("final",), timeout)
            except PathEmuError:
                pass
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        for ns in (getattr(self, "ns_a", None), getattr(self, "ns_b", None)):
            if ns and os.path.exists(f"/run/netns/{ns}"):
                subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL, timeout=10)
        return self.final

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def stop(p, timeout=5.0):
    """Ends a started process by its pid (SIGTERM, then SIGKILL)."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.communicate()


# ---- measurements of the emulator itself --------------------------------

def _wirespeed_test(pe, args, secs):
    """wirespeed -s in B, a client in A; the client's -J document and the
    emulator's counters after it."""
    srv = pe.popen_b([WIRESPEED, "-s", "-1"])
    try:
        time.sleep(0.3)
        r = pe.run_a([WIRESPEED, "-c", pe.addr_b, "-t", str(secs), "-J"] + list(args), timeout=secs + 30)
    finally:
        stop(srv)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {"error": f"no JSON (rc {r.returncode}): {r.stderr.strip()[:300]}"}
    return doc, pe.stats()


def _rx_bps(doc):
    end = doc.get("end", {})
    s = end.get("sum_received") or end.get("sum") or {}
    return s.get("bits_per_second")


def _tun_drops(stats):
    return {side: {k: stats["tun"][side].get(k) for k in ("tx_dropped", "rx_dropped")} for side in ("a", "b")}


def measure_ceiling(secs=10, emu_args=()):
    rows = []
    for name, args in (("tcp -P 1", ["-C", "cubic"]), ("tcp -P 4", ["-C", "cubic", "-P", "4"]),
                       ("udp -l 1400 -b 0", ["-u", "-l", "1400", "-b", "0"]),
                       ("udp -l 1400 -b 1G", ["-u", "-l", "1400", "-b", "1G"])):
        with PathEmu(lifetime=secs + 60, extra=emu_args) as pe:
            doc, st = _wirespeed_test(pe, args, secs)
            cpu = st["cpu"]
            row = {
                "test": name, "rx_bps": _rx_bps(doc), "error": doc.get("error"),
                "emulator_cpu_s": round(cpu["user_s"] + cpu["system_s"], 2),
                "a2b_delivered": st["a2b"]["total"]["delivered"]["packets"],
                "a2b_late_us": st["a2b"]["late_us"], "tun": _tun_drops(st),
            }
            if "udp" in name:
                s = doc.get("end", {}).get("sum", {})
                row["udp_lost_percent"] = s.get("lost_percent")
                row["sender_bps"] = (doc.get("end", {}).get("sum_sent") or {}).get("bits_per_second")
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _ping(pe, count, interval, v6=False):
    argv = ["ping", "-n", "-q", "-c", str(count), "-i", str(interval)] + (["-6"] if v6 else []) + [
        pe.addr6_b if v6 else pe.addr_b]
    r = pe.run_a(argv, timeout=count * interval + 30)
    m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", r.stdout)
    if not m:
        return {"error": (r.stdout + r.stderr).strip()[-300:]}
    mn, avg, mx, mdev = map(float, m.groups())
    return {"min_ms": mn, "avg_ms": avg, "max_ms": mx, "mdev_ms": mdev}


def measure_delay(count=100, emu_args=()):
    rows = []
    for delay_ms in (0, 1, 10, 50, 100):
        with PathEmu(both=f"delay={delay_ms}ms", lifetime=count * 0.02 + 120, extra=emu_args) as pe:
            for v6 in (False, True):
                p = _ping(pe, count, 0.02, v6)
                row = {"one_way_ms": delay_ms, "family": "ipv6" if v6 else "ipv4", "expected_rtt_ms": 2 * delay_ms}
                row.update(p)
                if "avg_ms" in p:
                    row["avg_minus_expected_ms"] = round(p["avg_ms"] - 2 * delay_ms, 3)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def measure_rate(secs=10, emu_args=()):
    rows = []
    for name, bps in (("10M", 10e6), ("100M", 100e6), ("1G", 1e9)):
        # 10 ms each way; a queue of about one bandwidth-delay product.
        bdp = max(100, int(bps * 0.02 / 8 / 1500))
        with PathEmu(both=f"delay=10ms,rate={name},queue={bdp}", lifetime=secs + 60, extra=emu_args) as pe:
            doc, st = _wirespeed_test(pe, ["-C", "cubic"], secs)
            rx = _rx_bps(doc)
            # TCP payload per 1500-byte packet: 1500 - 20 (IP) - 20 (TCP) - 12 (timestamps).
            ideal = bps * 1448 / 1500
            a2b = st["a2b"]
            row = {
                "rate": name, "queue": bdp, "goodput_bps": rx, "error": doc.get("error"),
                "goodput_over_rate": rx / bps if rx else None,
                "goodput_over_ideal": rx / ideal if rx else None,
                "a2b_queue_drops": a2b["total"]["queue"]["packets"], "a2b_late_us": a2b["late_us"],
                "retransmits": doc.get("end", {}).get("sum_sent", {}).get("retransmits"),
                "tun": _tun_drops(st),
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("ceiling", "delay", "rate", "all"))
    ap.add_argument("--secs", type=int, default=10)
    ap.add_argument("--emu-args", default="", help="further emulator options, e.g. '--nap-us 0 --no-realtime'")
    ap.add_argument("--json", help="write the results here too")
    a = ap.parse_args()
    for exe in (PATHEMU, WIRESPEED):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} is missing: cargo build --release --bin wirespeed --example pathemu")
    emu = a.emu_args.split()
    out = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "emu_args": emu,
           "load_before": os.getloadavg()}
    print(json.dumps(out), flush=True)
    if a.what in ("ceiling", "all"):
        out["ceiling"] = measure_ceiling(a.secs, emu)
    if a.what in ("delay", "all"):
        out["delay"] = measure_delay(emu_args=emu)
    if a.what in ("rate", "all"):
        out["rate"] = measure_rate(a.secs, emu)
    out["load_after"] = os.getloadavg()
    print(json.dumps({"load_after": out["load_after"]}), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
