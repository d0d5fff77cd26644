#!/usr/bin/env python3
"""How fast the web UI's history answers when it is big: 100,000 stored
runs (a year of tests against 50 targets, and one target tested every 5
minutes for the last 40 days), each with two stored events of a real run's
size. Times what the page asks for, through the UI's HTTP API:

    python3 bench/history.py [--runs 100000] [--rounds 15] [--wirespeed PATH]

- the runs list as the page opens it (the newest 100),
- the same filtered to the last 30 days of the busy target,
- the 30-day chart of that target (every run a point: ~8,640),
- the targets list (a count over every run),
- the 30-day CSV export of that target.

Goal: each under 200 ms (median and worst). The database is made by the UI
itself (its schema), filled here through Python's sqlite3 with the same
columns, then served by a fresh `wirespeed ui --db`. Every process is
bounded in time and ended by its pid (bench.py's Server).
"""

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

DAY_MS = 86_400_000
BUSY = "10.9.8.7"

# A real interval event's size, roughly (one stream of -J).
INTERVAL = json.dumps({"event": "interval", "data": {"streams": [{"socket": 5, "start": 0, "end": 1,
    "seconds": 1, "bytes": 125000000, "bits_per_second": 1e9, "retransmits": 0, "snd_cwnd": 1234567,
    "snd_wnd": 3145728, "rtt": 1234, "rttvar": 321, "pmtu": 1500, "omitted": False, "sender": True}],
    "sum": {"start": 0, "end": 1, "seconds": 1, "bytes": 125000000, "bits_per_second": 1e9,
            "retransmits": 0, "omitted": False, "sender": True}}})


def fill(db, n, now_ms):
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=OFF")
    rnd = random.Random(7)
    busy = 40 * 24 * 12  # every 5 minutes for 40 days
    rows, events = [], []
    for i in range(n):
        if i < busy:
            target, started = BUSY, now_ms - (busy - i) * 300_000
        else:
            target = f"10.0.{rnd.randrange(50)}.1"
            started = now_ms - rnd.randrange(365 * DAY_MS)
        bps = rnd.uniform(50e6, 950e6)
        rows.append((i + 1, 0, "scheduled" if target == BUSY else "client", 1 if target == BUSY else None,
                     started, started + 10_000, f"wirespeed -c {target} -t 10", target, "iperf3", "done",
                     None, 10, "", bps * 1.01, bps, rnd.randrange(20), rnd.uniform(1, 40), None, None,
                     None, None, None))
        events.append((i + 1, 0, '{"event":"start","data":{}}'))
        events.append((i + 1, 1, INTERVAL))
    c.executemany("INSERT INTO runs(id, owner, kind, schedule, started_ms, ended_ms, title, target, dialect, "
                  "state, error, intervals, stderr, sent_bps, received_bps, retransmits, rtt_ms, jitter_ms, "
                  "lost_percent, idle_ms, loaded_ms, rpm) VALUES (" + ",".join("?" * 22) + ")", rows)
    c.executemany("INSERT INTO events(run, seq, line) VALUES (?, ?, ?)", events)
    c.commit()
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


def get(port, path):
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        body = r.read()
    return (time.perf_counter() - t0) * 1000, body


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--wirespeed", default=os.path.join(bench.ROOT, "target/release/wirespeed"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wsbench-history-")
    db = os.path.join(tmp, "history.db")
    port = bench.free_port()
    ui = lambda: bench.Server([a.wirespeed, "ui", "--listen", f"127.0.0.1:{port}", "--db", db], port)
    # The UI makes the file and its schema; then it is filled.
    ui().stop()
    now_ms = int(time.time() * 1000)
    t0 = time.time()
    fill(db, a.runs, now_ms)
    size = os.path.getsize(db)
    print(f"{a.runs} runs stored in {time.time() - t0:.1f} s, {size / 1e6:.0f} MB\n")
    s = ui()
    try:
        _, page = get(port, "/")
        token = re.search(rb'"token":"([0-9a-f]+)"', page).group(1).decode()
        since = now_ms // 1000 - 30 * 86400
        asks = [
            ("runs list (newest 100)", "/api/runs?"),
            ("one target, last 30 days", f"/api/runs?target={BUSY}&from={since}&"),
            ("30-day chart of one target", f"/api/chart?target={BUSY}&from={since}&"),
            ("targets list", "/api/history?"),
            ("30-day CSV of one target", f"/api/history.csv?target={BUSY}&from={since}&"),
        ]
        print("| request | median ms | worst ms | answer | goal < 200 ms |")
        print("|---|---:|---:|---:|---|")
        for name, path in asks:
            times, size = [], 0
            for _ in range(a.rounds):
                ms, body = get(port, path + "token=" + token)
                times.append(ms)
                size = len(body)
            med, worst = statistics.median(times), max(times)
            ok = "met" if worst < 200 else ("median met" if med < 200 else "MISSED")
            print(f"| {name} | {med:.1f} | {worst:.1f} | {size / 1000:.0f} kB | {ok} |")
        print(f"\n`python3 bench/history.py --runs {a.runs} --rounds {a.rounds}`")
    finally:
        s.stop()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
