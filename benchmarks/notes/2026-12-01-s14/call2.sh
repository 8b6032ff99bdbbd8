#!/usr/bin/env bash
# session 14, call 2: the prediction benchmark with probe twins, 3 processes per workload (the shipped model)
set -u
timeout -k 5 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout -k 5 60 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/inst.log 2>&1 || export PYTHONPATH=$PWD:$PYTHONPATH
t0=$(date +%s)
timeout -k 5 540 python3 benchmarks/prediction.py run /tmp/pred --model graphmode/data/costmodel-nvidia-h200.json --procs 3 --probe > $OUT/bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cp /tmp/pred/results.json /tmp/pred/prediction.md /tmp/pred/run.log $OUT/ 2>/dev/null
tail -5 $OUT/bench.log
