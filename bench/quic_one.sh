#!/bin/bash
# One `-q` test of 400 MB on loopback with binary BIN on PORT: the server
# (`BIN -s -p PORT -1`) is started, the client runs to its end, and the
# server is ended by its pid. For whole-process A/B timing of two builds:
#   farm-bench --vs 'bench/quic_one.sh OLD 45303' -- bench/quic_one.sh NEW 45302 [-R]
# usage: bench/quic_one.sh BIN PORT [client options]
set -u
B=$1; P=$2; shift 2
timeout 60 "$B" -s -p "$P" -1 >/dev/null 2>&1 &
S=$!
for _ in $(seq 100); do ss -ltn | grep -q ":$P " && break; sleep 0.05; done
timeout 60 "$B" -c 127.0.0.1 -p "$P" -q -n 400M "$@" >/dev/null
rc=$?
kill "$S" 2>/dev/null
wait "$S" 2>/dev/null
exit $rc
