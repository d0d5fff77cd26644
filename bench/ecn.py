#!/usr/bin/env python3
"""wirespeed's ECN counts against the path emulator's own, on paths that
mark, bleach and remark the field.

    python3 bench/ecn.py                 # every case, some 2 minutes
    python3 bench/ecn.py --render        # the Markdown again from the JSON

Each case is a path (tools/pathemu, docs/pathemu.md) whose data direction
does one thing to the ECN field, and a UDP test across it, wirespeed to
wirespeed (server in namespace B, client in A): the iperf3 dialect forward
and with -R (the client's -J then holds the receiver's counts, from the
results exchange when the server received), and the iperf 2 dialect with
-R (the receiving client prints the counts; -y C's last four columns).
What the receiver counted is set beside what the emulator says it did to
the packets of that direction: marked CE, bleached, remarked. "exact"
holds when the count that the case is about equals the emulator's.

With WIRESPEED_IPERF2_L4S naming an iperf 2.2.1 built with
--enable-udp-l4s, our --udp-l4s sender also runs against its server on the
L4S marking and the bleaching paths, and its acks' counts are set beside
the emulator's.

Writes the ECN section of BENCHMARKS-PATHS.md (between its markers) and
bench/ecn-results.json. Needs root and the release builds (cargo build
--release --bin wirespeed --example pathemu). Traffic stays inside the
emulator's namespaces; every process is bounded in time and ended by its
pid.
"""

import argparse
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pathemu import WIRESPEED, PathEmu, stop  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "ecn-results.json")
MARKDOWN = os.path.join(os.path.dirname(HERE), "BENCHMARKS-PATHS.md")
BEGIN, END = "<!-- ecn begin -->", "<!-- ecn end -->"

# (name, the data direction's settings, the codepoint sent, the emulator
# counter and our count that must agree)
CASES = [
    ("CE-marking queue, L4S", "delay=5ms,rate=20M,queue=100,ecn=mark", "ect1", "marked", "ce"),
    ("CE-marking queue, classic", "delay=5ms,rate=20M,queue=100,ecn=mark", "ect0", "marked", "ce"),
    ("bleaching", "delay=5ms,ecn=bleach", "ect1", "bleached", "not_ect"),
    ("remarking ECT(1) to ECT(0)", "delay=5ms,ecn=remark1to0", "ect1", "remarked", "ect0"),
    ("remarking ECT(0) to ECT(1)", "delay=5ms,ecn=remark0to1", "ect0", "remarked", "ect1"),
    ("keeping the field", "delay=5ms", "ect1", None, "ect1"),
]
# (label, client options, the data goes B to A, datagrams of the test's
# setup that cross the data direction with the sender's ECN field: the
# iperf3 dialect's UDP stream hello, "9876", which the client sends with
# its TOS already set and the emulator counts like any datagram; with -R
# the server's answer to it goes that way, but before its TOS is set)
RUNS = [
    ("iperf3 dialect", [], False, 1),
    ("iperf3 dialect -R", ["-R"], True, 0),
    ("iperf 2 dialect -R", ["--iperf2", "-R"], True, 0),
]
LOAD = ["-u", "-b", "30M", "-l", "1200", "-t", "3"]
# iperf 2.2.1 built with --enable-udp-l4s (its server acks our --udp-l4s
# sender with its own CE counts), when named.
IPERF2_L4S = os.environ.get("WIRESPEED_IPERF2_L4S")


def wait_listening(pe, port, timeout=10.0):
    """Until the server in B listens (ss in its namespace)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = pe.run_b(["ss", "-ltnH"], timeout=5)
        if r.stdout and f":{port} " in r.stdout:
            return True
        time.sleep(0.05)
    return False


def our_counts(run, out):
    """The receiver's four counts from the client's output."""
    if "--iperf2" in run:
        rows = [l.split(",") for l in out.splitlines() if l.count(",") >= 17]
        if not rows:
            return None, f"no CSV row with ECN columns: {out[-300:]}"
        c = [int(v) for v in rows[-1][-4:]]
        return dict(zip(("not_ect", "ect0", "ect1", "ce"), c)), None
    try:
        doc = json.loads(out)
    except ValueError:
        return None, f"no JSON: {out[-300:]}"
    e = (doc.get("end", {}).get("sum_received") or {}).get("ecn")
    if not e:
        return None, f"no end.sum_received.ecn: {doc.get('error', '')}"
    return {k: e.get(k, 0) for k in ("not_ect", "ect0", "ect1", "ce")} | {"path": e.get("path")}, None


def one(case, run):
    name, settings, sent, counter, ours = case
    label, opts, reverse, hello = run
    dir_ = "b2a" if reverse else "a2b"
    other = "a2b" if reverse else "b2a"
    kw = {dir_: settings, other: "delay=5ms"}
    with PathEmu(lifetime=120, **kw) as pe:
        # One server port answers both dialects.
        port = "5201"
        srv = pe.popen_b([WIRESPEED, "-s", "-p", port])
        try:
            if not wait_listening(pe, port):
                return {"error": "the server did not listen"}
            before = pe.stats()
            argv = [WIRESPEED] + [o for o in opts if o == "--iperf2"] + ["-c", pe.addr_b, "-p", port] + LOAD
            argv += ["--ecn", sent] + [o for o in opts if o != "--iperf2"]
            argv += ["-y", "C", "-i", "1"] if "--iperf2" in opts else ["-J"]
            r = pe.run_a(argv, timeout=40)
            after = pe.stats()
        finally:
            stop(srv)
    counts, err = our_counts(opts, r.stdout)
    if err:
        return {"error": err + " " + (r.stderr or "")[-200:]}
    emu = {k: after[dir_]["udp"]["ecn"][k] - before[dir_]["udp"]["ecn"][k] for k in ("marked", "bleached", "remarked")}
    delivered = after[dir_]["udp"]["delivered"]["packets"] - before[dir_]["udp"]["delivered"]["packets"]
    arrived = sum(counts[k] for k in ("not_ect", "ect0", "ect1", "ce"))
    if counter:
        # What the emulator did to the test's datagrams: all it did, less
        # the setup's hello.
        # (A marking queue marks by queue delay: the hello, the first
        # datagram, finds it empty.)
        hello = 0 if counter == "marked" else hello
        exact = counts[ours] == emu[counter] - hello
        compared = [ours, f"{counter} - {hello} (hello)" if hello else counter]
    else:
        # Kept: the emulator touched nothing, and every datagram arrived
        # as sent.
        exact = not any(emu.values()) and counts[ours] == arrived
        compared = [ours, "arrived, emulator touched none"]
    return {
        "case": name, "run": label, "sent": sent, "ours": counts, "emulator": emu,
        "delivered": delivered, "arrived": arrived, "compared": compared, "exact": exact,
    }


def l4s_against_2_2_1(case):
    """Our --udp-l4s sender against the real 2.2.1 server across the
    case's path: 2.2.1's last ack (its cumulative received and CE counts,
    which our client prints) against the emulator."""
    name, settings, sent, counter, ours = case
    with PathEmu(lifetime=120, a2b=settings, b2a="delay=5ms") as pe:
        srv = pe.popen_b([IPERF2_L4S, "-s", "-u", "-p", "5201"])
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                r = pe.run_b(["ss", "-lunH"], timeout=5)
                if ":5201 " in (r.stdout or ""):
                    break
                time.sleep(0.05)
            before = pe.stats()
            r = pe.run_a([WIRESPEED, "--iperf2", "-c", pe.addr_b, "-p", "5201", "-u", "--udp-l4s",
                          "-b", "100M", "-l", "1200", "-t", "3"], timeout=40)
            after = pe.stats()
        finally:
            stop(srv)
    line = next((l for l in r.stdout.splitlines() if "L4S acks" in l), None)
    if not line:
        return {"error": f"no L4S acks line: {r.stdout[-300:]} {r.stderr[-200:]}"}
    m = re.search(r"received (\d+), CE (\d+)", line)
    rx, ce = int(m.group(1)), int(m.group(2))
    emu = {k: after["a2b"]["udp"]["ecn"][k] - before["a2b"]["udp"]["ecn"][k] for k in ("marked", "bleached", "remarked")}
    delivered = after["a2b"]["udp"]["delivered"]["packets"] - before["a2b"]["udp"]["delivered"]["packets"]
    counts = {"not_ect": None, "ect0": None, "ect1": rx - ce, "ce": ce}
    if counter == "marked":
        # The last ack covers what 2.2.1 had read when it was sent: the
        # marks among the datagrams after it are the emulator's, not yet
        # the ack's.
        late = delivered - rx
        exact = ce <= emu["marked"] <= ce + late
        compared = [f"ce (2.2.1's last ack) <= marked <= ce + {late} (delivered after that ack)", ""]
    else:
        # Bleached: 2.2.1 sets the ack's flag and our sender turns ECT(1)
        # off; what it counts as CE is none.
        exact = ce == 0 and emu["bleached"] > 0 and "arrived neither ECT(1) nor CE" in line
        compared = ["2.2.1's ack flagged the field, ce 0, bleached > 0", ""]
    return {"case": name, "run": "--udp-l4s to iperf 2.2.1", "sent": sent, "ours": counts, "emulator": emu,
            "delivered": delivered, "arrived": rx, "compared": compared, "exact": exact, "ack": line.strip()}


def l4s_from_2_2_1(case):
    """The real 2.2.1 --udp-l4s client against our server across the
    case's path: what our server counted (its ECN line), which is what its
    acks told 2.2.1, against the emulator."""
    name, settings, sent, counter, ours = case
    with PathEmu(lifetime=120, a2b=settings, b2a="delay=5ms") as pe:
        srv = pe.popen_b([WIRESPEED, "-s", "-p", "5201"])
        try:
            if not wait_listening(pe, "5201"):
                return {"error": "the server did not listen"}
            before = pe.stats()
            r = pe.run_a([IPERF2_L4S, "-c", pe.addr_b, "-p", "5201", "-u", "--udp-l4s", "-b", "30M",
                          "-l", "1200", "-t", "3"], timeout=40)
            after = pe.stats()
        finally:
            stop(srv)
            out, _ = srv.communicate(timeout=10)
    line = next((l for l in out.splitlines() if "ECN:" in l), None)
    if not line:
        return {"error": f"no ECN line from our server: {out[-300:]} / client: {r.stdout[-200:]}"}
    m = re.search(r"arrived Not-ECT (\d+), ECT\(0\) (\d+), ECT\(1\) (\d+), CE (\d+)", line)
    if not m:
        return {"error": f"no counts in {line}"}
    counts = dict(zip(("not_ect", "ect0", "ect1", "ce"), map(int, m.groups())))
    emu = {k: after["a2b"]["udp"]["ecn"][k] - before["a2b"]["udp"]["ecn"][k] for k in ("marked", "bleached", "remarked")}
    delivered = after["a2b"]["udp"]["delivered"]["packets"] - before["a2b"]["udp"]["delivered"]["packets"]
    arrived = sum(counts.values())
    late = delivered - arrived
    if counter == "marked":
        # The client's FIN datagrams (and their repeats) are not counted;
        # the queue may mark them too.
        exact = counts["ce"] <= emu["marked"] <= counts["ce"] + late
        compared = [f"ce <= marked <= ce + {late} (its FIN datagrams)", ""]
    else:
        exact = emu["bleached"] > 0 and counts["not_ect"] > 0 and counts["ce"] == 0 and "sender's own" in line
        compared = ["bleached > 0, then the sender's Not-ECT: all arrived Not-ECT, said so", ""]
    return {"case": name, "run": "iperf 2.2.1 --udp-l4s to ours", "sent": sent, "ours": counts, "emulator": emu,
            "delivered": delivered, "arrived": arrived, "compared": compared, "exact": exact, "ecn_line": line.strip()}


def render(results):
    lines = [BEGIN, "", "## ECN: our counts against the emulator's", "",
             f"`python3 bench/ecn.py`, {results['when']}. A UDP test of 3 s at 30 Mbit/s "
             "(1200-byte datagrams) across a path whose data direction does one thing to the "
             "ECN field (docs/pathemu.md); the receiver's counts of each codepoint against "
             "what the emulator says it did to that direction's UDP packets. The marking "
             "cases have a 20 Mbit/s bottleneck with a 100-packet queue (ECT(1) marked from "
             "1 ms of queue delay, ECT(0) with a rising probability); the others no "
             "bottleneck. Delivered: the UDP packets the emulator passed in that direction; "
             "besides the test's datagrams, it counts the setup's: the iperf3 dialect's "
             "stream hello crosses the data direction with the client's ECN field when the "
             "client sends (bleached or remarked like the data, so compared less that one; "
             "a marking queue, empty when it passes, leaves it be), and with -R the server's "
             "answer to it (Not-ECT, so touched by nothing).", "",
             "| path | test | sent | arrived Not-ECT / ECT(0) / ECT(1) / CE | emulator marked / bleached / remarked | delivered | compared | exact |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        if "error" in r:
            lines.append(f"| {r.get('case', '?')} | {r.get('run', '?')} | | error: {r['error'][:120]} | | | | no |")
            continue
        o, e = r["ours"], r["emulator"]
        n = lambda v: "-" if v is None else v  # noqa: E731
        lines.append(
            f"| {r['case']} | {r['run']} | {r['sent'].upper().replace('ECT', 'ECT(').replace('(0', '(0)').replace('(1', '(1)')} "
            f"| {n(o['not_ect'])} / {n(o['ect0'])} / {n(o['ect1'])} / {n(o['ce'])} "
            f"| {e['marked']} / {e['bleached']} / {e['remarked']} | {r['delivered']} "
            f"| {' = '.join(c for c in r['compared'] if c)} | {'yes' if r['exact'] else '**no**'} |")
    if any("2.2.1" in r.get("run", "") for r in results["rows"]):
        lines += ["", "`--udp-l4s to iperf 2.2.1`: our L4S sender (offered 100 Mbit/s, paced by the "
                  "acks) against a real iperf 2.2.1 server built with `--enable-udp-l4s` "
                  "(`WIRESPEED_IPERF2_L4S`); the counts are 2.2.1's own, from the last ack it sent "
                  "(cumulative received and CE; it has no per-codepoint counts, so ECT(1) is received "
                  "less CE), which our client prints. That ack covers what 2.2.1 had read when it sent "
                  "it: the datagrams delivered after it (and 2.2.1's uncounted first one) are not in "
                  "it, so its CE count is held between the marks before and all the marks. On the "
                  "bleaching path 2.2.1 flags the field in its acks and our sender turns ECT(1) off "
                  "(the emulator bleached only what crossed before that). The other way the same holds: "
                  "2.2.1's sender goes Not-ECT once our acks flag the field, so our server's count of "
                  "Not-ECT arrivals holds the path's few and the sender's own, as its ECN line says. "
                  "`iperf 2.2.1 --udp-l4s to "
                  "ours`: the real 2.2.1 L4S client (offered 30 Mbit/s) against our server, whose "
                  "counts (its ECN line) are what its acks told the client; its FIN datagrams, which "
                  "the queue may mark too, are not counted."]
    lines += ["", END]
    return "\n".join(lines)


def write_markdown(results):
    text = open(MARKDOWN).read() if os.path.exists(MARKDOWN) else ""
    section = render(results)
    if BEGIN in text and END in text:
        a, b = text.index(BEGIN), text.index(END) + len(END)
        text = text[:a] + section + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(MARKDOWN, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--render", action="store_true", help="only write the Markdown from " + RESULTS)
    a = ap.parse_args()
    if a.render:
        write_markdown(json.load(open(RESULTS)))
        return 0
    rows = []
    for case in CASES:
        for run in RUNS:
            r = one(case, run)
            r.setdefault("case", case[0])
            r.setdefault("run", run[0])
            print(json.dumps(r), flush=True)
            rows.append(r)
        if IPERF2_L4S and case[2] == "ect1" and case[3] in ("marked", "bleached"):
            for f, label in ((l4s_against_2_2_1, "--udp-l4s to iperf 2.2.1"),
                             (l4s_from_2_2_1, "iperf 2.2.1 --udp-l4s to ours")):
                r = f(case)
                r.setdefault("case", case[0])
                r.setdefault("run", label)
                print(json.dumps(r), flush=True)
                rows.append(r)
    results = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}
    with open(RESULTS, "w") as f:
        json.dump(results, f, indent=1)
    write_markdown(results)
    return 0 if all(r.get("exact") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
