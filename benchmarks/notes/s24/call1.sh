#!/usr/bin/env bash
# Session 24, device call 1 (H200): pause_probe.py in 3 fresh processes: what a paused CUPTI session still costs the
# program, what pausing and resuming take, and whether recording resumes. Usage: bash benchmarks/notes/s24/call1.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for i in 1 2 3; do timeout 150 python3 benchmarks/notes/s24/pause_probe.py 2>>"$out/pause.err" >> "$out/pause.jsonl"; echo "rc $?" >> "$out/pause.err"; done
wc -l "$out"/*.jsonl; tail -5 "$out/pause.err"
