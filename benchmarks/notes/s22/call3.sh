#!/usr/bin/env bash
# Session 22, device call 3 (H200): attach_probe.py's variants, one process each (which part of CUPTI crashes the
# replay of a graph instantiated before it attached), and cost_probe.py in 4 fresh processes.
# Usage: bash benchmarks/notes/s22/call3.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
for v in torch_inside torch_measure torch_kernels torch_graph_trace torch_callbacks torch_runtime raw_measure torch_after_detach; do
  timeout 60 python3 benchmarks/notes/s22/attach_probe.py $v > /tmp/a.out 2> /tmp/a.err; rc=$?
  echo "$v rc=$rc $(tail -1 /tmp/a.out) | $(grep -m1 -A2 'most recent call first' /tmp/a.err | tail -1)" | tee -a "$out/attach.txt"
done
for i in 1 2 3 4; do timeout 120 python3 benchmarks/notes/s22/cost_probe.py 2>>"$out/cost.err" | tee -a "$out/cost.jsonl"; done
tail -3 "$out/cost.err"
