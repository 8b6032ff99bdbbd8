#!/usr/bin/env bash
# Session 22, device call 1 (H200): benchmarks/notes/s22/toggle_probe.py in 2 fresh processes: does switching the one
# run's CUPTI activity kinds off (the session still attached) give the program's untraced speed back, in the same
# process? Usage: bash benchmarks/notes/s22/call1.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
timeout 150 python3 benchmarks/notes/s22/toggle_probe.py vit resnet_train vit_graph 2>>"$out/probe.err" | tee -a "$out/toggle.jsonl"
timeout 150 python3 benchmarks/notes/s22/toggle_probe.py vit_graph resnet_train vit 2>>"$out/probe.err" | tee -a "$out/toggle.jsonl"
tail -5 "$out/probe.err"
