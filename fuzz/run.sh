#!/bin/sh
# Runs every fuzz target (or the ones named) for SECONDS each, one after
# another on one core. New inputs go to fuzz/target/corpus/<target> (not
# committed); the seed corpus fuzz/corpus/<target> is read only. A crash
# stops the run and leaves its input in fuzz/artifacts/<target>/.
#
#   fuzz/run.sh 600                      # every target, 10 minutes each
#   fuzz/run.sh 60 iperf3_params iperf3_auth # two targets, a minute each
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain, or
# a stable one with RUSTC_BOOTSTRAP=1 (set here if unset).
set -eu
cd "$(dirname "$0")"
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-"iperf3_params iperf3_results iperf3_control iperf3_auth iperf2_tcp_header udp_datagrams sniff http_decode"}
export RUSTC_BOOTSTRAP=${RUSTC_BOOTSTRAP:-1}
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz is not installed: cargo install cargo-fuzz (it fuzzes with a nightly toolchain, or stable with RUSTC_BOOTSTRAP=1, which this script sets)" >&2
    exit 1
fi
cargo fuzz build
for t in $targets; do
    mkdir -p "target/corpus/$t"
    echo "== $t: $secs s"
    cargo fuzz run "$t" "target/corpus/$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1
done
