#!/usr/bin/env bash
# Session 23, device call 5 (H200): speed_probe.py in 3 fresh processes (a sampler thread's pure-Python reference beside
# a CPU-bound ViT loop: does it follow the machine's speed phases, what does it cost); api_cost_probe.py with the GPU-kinds
# state in 2 more. Usage: bash benchmarks/notes/s23/call5.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for i in 1 2 3; do timeout 100 python3 benchmarks/notes/s23/speed_probe.py p$i 2>>"$out/speed.err" >> "$out/speed.jsonl"; done
for i in 1 2; do timeout 100 python3 benchmarks/notes/s23/api_cost_probe.py 2>>"$out/api_cost.err" >> "$out/api_cost.jsonl"; done
wc -l "$out"/*.jsonl; tail -3 "$out/speed.err" "$out/api_cost.err"
