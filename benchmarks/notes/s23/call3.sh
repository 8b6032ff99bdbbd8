#!/usr/bin/env bash
# Session 23, device call 3 (H200): attached_probe.py in 2 fresh processes (what CUPTI attached costs a CPU-bound call
# beyond the calibrated per-launch costs; API calls per call). Usage: bash benchmarks/notes/s23/call3.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for i in 1 2; do timeout 200 python3 benchmarks/notes/s23/attached_probe.py 2>>"$out/attached.err" | tee -a "$out/attached.jsonl" | cut -c1-600; done
tail -5 "$out/attached.err"
