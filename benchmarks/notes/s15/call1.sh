#!/usr/bin/env bash
# session 15, call 1: several graphs a step (make_graphed_callables on MobileNetV3, per-layer graphs of a ViT):
# the programs untraced (their own clocks) beside `graphmode run`, 3 processes each; the first traces kept
set -u
timeout -k 5 90 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whls/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
timeout -k 5 60 python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/inst.log 2>&1 || export PYTHONPATH=$PWD:$PYTHONPATH
cd benchmarks/third_party
for w in mgc_mobilenet vit_layer_graphs; do timeout 60 python3 $w.py --steps 5 2>&1 | tail -2; done
cd ../..
t0=$(date +%s)
timeout -k 5 480 python3 benchmarks/script_fidelity.py record /tmp/fid --procs 3 --workloads mgc_mobilenet,vit_layers \
  --configs untraced,graphmode --keep-traces first --timeout 200 2>&1 | tee $OUT/record.log
echo "record $(( $(date +%s) - t0 )) s"
cp /tmp/fid/results.jsonl $OUT/
for f in /tmp/fid/*.gmtrace; do b=$(basename $f .gmtrace); ls -la $f; xz -T8 -6 -c $f > $OUT/$b.gmtrace.xz; done
ls -la $OUT
