#!/usr/bin/env bash
# Session 36, call 7: the parent's GPU check beside its imports. The graphed CuPy chain, untraced then under the default
# `graphmode run` (report and page, plotly.js kept), four times in turn, GRAPHMODE_PHASES set; the parent's phases printed.
# Usage: bash benchmarks/notes/s36/call7.sh OUT
set -u
out=${1:?OUT}
. benchmarks/device_setup.sh
export GRAPHMODE_CACHE_DIR=/tmp/gmcache
root=$PWD
cd benchmarks/third_party || exit 1
mkdir -p /tmp/ph
timeout 60 python3 cupy_chain.py > /dev/null 2>&1  # the machine's first process (cold), not measured
for i in 1 2 3 4; do
  s=$(date +%s.%N); timeout 60 python3 cupy_chain.py > /dev/null 2>&1; e=$(date +%s.%N)
  echo "cupy-$i untraced $(python3 -c "print(round($e - $s, 3))") s" >> "$out/phases.txt"
  s=$(date +%s.%N)
  GRAPHMODE_PHASES=/tmp/ph/c$i.jsonl timeout 90 graphmode run --out /tmp/ph/c$i.gmtrace cupy_chain.py > /tmp/ph/c$i.log 2>&1
  rc=$?; e=$(date +%s.%N)
  echo "cupy-$i graphmode $(python3 -c "print(round($e - $s, 3))") s rc=$rc" >> "$out/phases.txt"
  python3 "$root/benchmarks/run_phases.py" /tmp/ph/c$i.jsonl --start $s --end $e | grep -E "parent: (run command entered|GPU checked|cli ready)|reported|total" >> "$out/phases.txt"
done
cat "$out/phases.txt"
