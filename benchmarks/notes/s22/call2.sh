#!/usr/bin/env bash
# Session 22, device call 2 (H200): benchmarks/notes/s22/toggle_probe2.py in 2 fresh processes (what stays of the one
# run's cost with CUPTI's kinds off, unsubscribed, finalized), and toggle_probe.py's graph replay alone (it died
# silently in call 1). Usage: bash benchmarks/notes/s22/call2.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
timeout 120 python3 benchmarks/notes/s22/toggle_probe2.py vit resnet_train 2>>"$out/probe2.err" | tee -a "$out/toggle2.jsonl"; echo "rc $?"
timeout 120 python3 benchmarks/notes/s22/toggle_probe2.py resnet_train vit 2>>"$out/probe2.err" | tee -a "$out/toggle2.jsonl"; echo "rc $?"
timeout 60 python3 benchmarks/notes/s22/toggle_probe.py vit_graph 2>>"$out/probe_graph.err" | tee -a "$out/toggle_graph.jsonl"; echo "rc ${PIPESTATUS[0]}"
timeout 60 python3 benchmarks/notes/s22/toggle_probe2.py vit_graph 2>>"$out/probe2_graph.err" | tee -a "$out/toggle2_graph.jsonl"; echo "rc ${PIPESTATUS[0]}"
tail -30 "$out"/*.err
