#!/usr/bin/env bash
# Session 22, device call 7 (H200): stamp_ab_probe.py in 3 fresh processes (what the timing run's instrumentation
# costs a CPU-bound loop, A/B inside each). Usage: bash benchmarks/notes/s22/call7.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for i in 1 2 3; do timeout 100 python3 benchmarks/notes/s22/stamp_ab_probe.py 2>>"$out/stamp_ab.err" | tee -a "$out/stamp_ab.jsonl"; done
tail -5 "$out/stamp_ab.err"
