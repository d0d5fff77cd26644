#!/usr/bin/env bash
# Side-by-side: wirespeed's iperf 2 dialect vs the real iperf 2.x on
# loopback, one TCP flow (and -P 4), each client against its own server,
# alternating runs. Prints each run's receiver Gbit/s (from the server's
# -y C total), the medians and the ratio. Not a test: numbers depend on the
# machine and its load.
#
#   bench/iperf2_tcp.sh [rounds] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-3}
WS=${WIRESPEED:-target/release/wirespeed}
IPERF=${IPERF:-iperf}
[ -x "$WS" ] || cargo build --release
command -v "$IPERF" >/dev/null || { echo "iperf (2.x) not installed" >&2; exit 1; }

# Receiver bits/s from a server's CSV output (sum of its flows' totals).
bps() { awk -F, 'NF>=9 && $7 ~ /^0\.0-/ { b += $9 } END { printf "%.2f", b / 1e9 }' "$1"; }

run_one() { # tool extra-args
    local tool=$1; shift
    local port=$((20000 + RANDOM % 20000))
    local out; out=$(mktemp)
    if [ "$tool" = wirespeed ]; then
        "$WS" --iperf2 -s -p "$port" -y C > "$out" 2>/dev/null & local spid=$!
    else
        "$IPERF" -s -p "$port" -y C > "$out" 2>/dev/null & local spid=$!
    fi
    sleep 0.5
    if [ "$tool" = wirespeed ]; then
        "$WS" --iperf2 -c 127.0.0.1 -p "$port" -t "$SECS" "$@" > /dev/null
    else
        "$IPERF" -c 127.0.0.1 -p "$port" -t "$SECS" "$@" > /dev/null
    fi
    sleep 0.5
    kill "$spid"; wait "$spid" 2>/dev/null || true
    bps "$out"; rm -f "$out"
}

median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for scenario in "" "-P 4"; do
    ws=(); ip=()
    for _ in $(seq "$ROUNDS"); do
        ws+=("$(run_one wirespeed $scenario)")
        ip+=("$(run_one iperf $scenario)")
    done
    mw=$(echo "${ws[*]}" | median); mi=$(echo "${ip[*]}" | median)
    echo "TCP ${scenario:--P 1}, ${SECS}s, Gbit/s received: wirespeed ${ws[*]} (median $mw) | iperf2 ${ip[*]} (median $mi) | ratio $(awk -v a="$mw" -v b="$mi" 'BEGIN{printf "%.2f", a/b}')"
done
echo "machine: $(nproc) cores, $(uname -r)"
