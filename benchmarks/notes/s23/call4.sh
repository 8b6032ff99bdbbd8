#!/usr/bin/env bash
# Session 23, device call 4 (H200): api_cost_probe.py in 3 fresh processes (which part of the one run's session costs an
# API call it does not record). Usage: bash benchmarks/notes/s23/call4.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for i in 1 2 3; do timeout 100 python3 benchmarks/notes/s23/api_cost_probe.py 2>>"$out/api_cost.err" | tee -a "$out/api_cost.jsonl"; done
tail -5 "$out/api_cost.err"
