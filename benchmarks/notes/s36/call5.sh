#!/usr/bin/env bash
# Session 36, call 5: a short script's `graphmode run` with the page's plotly.js kept between runs (issue 29's 2x).
# The CuPy chain, graphed and eager-only, untraced then under the default `graphmode run` (report and page included),
# three times each in turn; the first `graphmode run` makes the kept bundle, the later ones read it. GRAPHMODE_PHASES set.
# Usage: bash benchmarks/notes/s36/call5.sh OUT
set -u
out=${1:?OUT}
. benchmarks/device_setup.sh
export GRAPHMODE_CACHE_DIR=/tmp/gmcache
root=$PWD
cd benchmarks/third_party || exit 1
mkdir -p /tmp/ph
timeout 60 python3 cupy_chain.py > /dev/null 2>&1  # the machine's first process (cold), not measured
for i in 1 2 3; do
  for prog in "cupy_chain.py" "cupy_chain.py --eager-only"; do
    name=cupy$(echo $prog | grep -q eager && echo _eager)-$i
    s=$(date +%s.%N); timeout 60 python3 $prog > /dev/null 2>&1; e=$(date +%s.%N)
    echo "$name untraced $(python3 -c "print(round($e - $s, 3))") s" >> "$out/phases.txt"
    s=$(date +%s.%N)
    GRAPHMODE_PHASES=/tmp/ph/$name.jsonl timeout 90 graphmode run --out /tmp/ph/$name.gmtrace $prog > /tmp/ph/$name.log 2>&1
    rc=$?; e=$(date +%s.%N)
    echo "$name graphmode $(python3 -c "print(round($e - $s, 3))") s rc=$rc" >> "$out/phases.txt"
    python3 "$root/benchmarks/run_phases.py" /tmp/ph/$name.jsonl --start $s --end $e | grep -E "reported|total|GPU checked|attached$" >> "$out/phases.txt"
  done
done
cat "$out/phases.txt"
