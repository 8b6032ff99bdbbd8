#!/usr/bin/env bash
# Issue 11 on the GPU, from the repository root (about 8 minutes on an H200: calibrate about 3, the benchmark 4-5):
#     OUT=/some/dir [PROCS=3] bash benchmarks/prediction_gpu.sh
#   1. `graphmode calibrate` writes the GPU's cost model into graphmode/data/ (the model graphmode ships);
#   2. benchmarks/prediction.py: predicted vs measured on chain, dag and PyTorch workloads with that model,
#      PROCS fresh processes per workload (the table compares medians), each chain and dag process with its probe
#      twin (--probe: the first-graph extra measured in a process like it, as `graphmode run` measures a script's;
#      about 1 minute more);
# $OUT receives 7 files (the device lends back at most 8): costmodel-<gpu>.json (commit it to graphmode/data/),
# costmodel-<gpu>.measurements.json, calibrate.txt, results.json, bench.log, run.log, traces.tar.gz.
# The GPU tests of calibrate and the prediction: tests/test_gpu_calibrate.py, tests/test_predict.py -k gpu.
set -uo pipefail
PY=${PYTHON:-python3}
OUT=${OUT:-prediction-out}
PROCS=${PROCS:-3}
WORK=$(mktemp -d /tmp/graphmode-prediction.XXXXXX)
mkdir -p "$OUT"
$PY -c "import graphmode.tracer.calibrate" 2>/dev/null || $PY -m pip install -q --no-deps --no-build-isolation -e . || exit 1
MODEL=graphmode/data/$($PY -c "from graphmode.analyzers.costmodel import model_file_name; from graphmode.tracer.cuda_util import init_device; print(model_file_name(init_device().name))") || exit 1
t0=$(date +%s)
echo "== 1. calibrate -> $MODEL"
$PY -m graphmode calibrate --out "$MODEL" > "$OUT/calibrate.txt" 2>&1; echo "exit $? ($(( $(date +%s) - t0 )) s)"; tail -n 12 "$OUT/calibrate.txt"
cp "$MODEL" "${MODEL%.json}.measurements.json" "$OUT/" 2>/dev/null
echo "== 2. prediction benchmark, $PROCS processes per workload ($(( $(date +%s) - t0 )) s so far)"
$PY benchmarks/prediction.py run "$WORK" --model "$MODEL" --procs "$PROCS" --probe > "$OUT/bench.log" 2>&1; tail -n 14 "$OUT/bench.log"
cp "$WORK/results.json" "$WORK/run.log" "$OUT/" 2>/dev/null
$PY benchmarks/prediction.py pack "$WORK" "$OUT/traces.tar.gz" --limit-mb 20
echo "== done in $(( $(date +%s) - t0 )) s; $(ls "$OUT" | wc -l) files in $OUT"
