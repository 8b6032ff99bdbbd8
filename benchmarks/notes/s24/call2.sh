#!/usr/bin/env bash
# Session 24, device call 2 (H200): reattach_probe.py in 2 fresh processes: can the one run detach CUPTI for a stretch
# and attach again (ids across sessions, the detached stretch's speed, a graph captured while detached, what detaching
# and attaching take). Usage: bash benchmarks/notes/s24/call2.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for i in 1 2; do timeout 200 python3 benchmarks/notes/s24/reattach_probe.py 2>>"$out/reattach.err" >> "$out/reattach.jsonl"; echo "rc $?" >> "$out/reattach.err"; done
wc -l "$out"/*.jsonl; tail -5 "$out/reattach.err"
