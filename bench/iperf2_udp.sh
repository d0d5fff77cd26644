#!/usr/bin/env bash
# Side-by-side: wirespeed's iperf 2 dialect vs the real iperf 2.x, UDP on
# loopback at a few offered rates, each client against its own kind of
# server, alternating runs. Prints each run's received Gbit/s and loss %
# (from the server's -y C total row), the medians and the ratio. Not a
# test: numbers depend on the machine and its load.
#
#   bench/iperf2_udp.sh [rounds] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-3}
WS=${WIRESPEED:-target/release/wirespeed}
IPERF=${IPERF:-iperf}
[ -x "$WS" ] || cargo build --release
command -v "$IPERF" >/dev/null || { echo "iperf (2.x) not installed" >&2; exit 1; }

# "Gbit/s loss%" from a UDP server's CSV total row.
result() { awk -F, 'NF>=14 && $7 ~ /^0\.0-/ { g = $9 / 1e9; l = $13 } END { printf "%.2f/%.1f%%", g, l }' "$1"; }

run_one() { # tool rate
    local tool=$1 rate=$2
    local port=$((20000 + RANDOM % 20000))
    local out; out=$(mktemp)
    local bin=("$IPERF"); [ "$tool" = wirespeed ] && bin=("$WS" --iperf2)
    "${bin[@]}" -s -u -p "$port" -y C > "$out" 2>/dev/null & local spid=$!
    sleep 0.5
    "${bin[@]}" -c 127.0.0.1 -u -p "$port" -t "$SECS" -b "$rate" > /dev/null
    sleep 1
    kill "$spid"; wait "$spid" 2>/dev/null || true
    result "$out"; rm -f "$out"
}

median() { tr ' ' '\n' | cut -d/ -f1 | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for rate in 1g 5g; do
    ws=(); ip=()
    for _ in $(seq "$ROUNDS"); do
        ws+=("$(run_one wirespeed $rate)")
        ip+=("$(run_one iperf $rate)")
    done
    mw=$(echo "${ws[*]}" | median); mi=$(echo "${ip[*]}" | median)
    echo "UDP -b $rate, ${SECS}s, received Gbit/s/loss: wirespeed ${ws[*]} (median $mw) | iperf2 ${ip[*]} (median $mi) | ratio $(awk -v a="$mw" -v b="$mi" 'BEGIN{printf "%.2f", a/b}')"
done
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
