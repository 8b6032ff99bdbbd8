#!/usr/bin/env bash
# session 15, call 3: after the graphing-statement fix, MobileNetV3 with make_graphed_callables again, and a ResNet-18
# step captured whole (one graph a step, which must stay right): 3 untraced processes each beside 3 `graphmode run`
set -u
timeout -k 5 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whls/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout -k 5 60 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/inst.log 2>&1 || export PYTHONPATH=$PWD:$PYTHONPATH
t0=$(date +%s)
timeout -k 5 440 python3 benchmarks/script_fidelity.py record /tmp/fid --procs 3 --workloads mgc_mobilenet,resnet \
  --configs untraced,graphmode --timeout 200 2>&1 | tee $OUT/record.log
echo "record $(( $(date +%s) - t0 )) s"
cp /tmp/fid/results.jsonl $OUT/
