#!/usr/bin/env bash
# Issue 11 on the GPU, in one go (about 3 minutes on an H200), from the repository root:
#     OUT=/some/dir bash benchmarks/prediction_gpu.sh
#   1. `graphmode calibrate` writes the GPU's cost model into graphmode/data/ (the model graphmode ships);
#   2. benchmarks/prediction.py: predicted vs measured on chain, dag and PyTorch workloads, with that model;
#   3. the GPU tests of calibrate and the prediction.
# $OUT receives 8 files (the device lends back at most 8): costmodel-<gpu>.json (commit it to graphmode/data/),
# costmodel-<gpu>.measurements.json, calibrate.txt, results.json, prediction.md, run.log, traces.tar.gz, gpu-tests.txt.
set -uo pipefail
PY=${PYTHON:-python3}
OUT=${OUT:-prediction-out}
WORK=$(mktemp -d /tmp/graphmode-prediction.XXXXXX)
mkdir -p "$OUT"
$PY -c "import graphmode.tracer.calibrate" 2>/dev/null || $PY -m pip install -q --no-deps --no-build-isolation -e . || exit 1
MODEL=graphmode/data/$($PY -c "from graphmode.analyzers.costmodel import model_file_name; from graphmode.tracer.cuda_util import init_device; print(model_file_name(init_device().name))") || exit 1
t0=$(date +%s)
echo "== 1. calibrate -> $MODEL"
$PY -m graphmode calibrate --out "$MODEL" > "$OUT/calibrate.txt" 2>&1; echo "exit $?"; tail -n 25 "$OUT/calibrate.txt"
cp "$MODEL" "${MODEL%.json}.measurements.json" "$OUT/" 2>/dev/null
echo "== 2. prediction benchmark ($(( $(date +%s) - t0 )) s so far)"
$PY benchmarks/prediction.py run "$WORK" --model "$MODEL" 2>&1 | tail -n 20
cp "$WORK/results.json" "$WORK/prediction.md" "$WORK/run.log" "$OUT/" 2>/dev/null
$PY benchmarks/prediction.py pack "$WORK" "$OUT/traces.tar.gz" --limit-mb 15
echo "== 3. GPU tests ($(( $(date +%s) - t0 )) s so far)"
$PY -m pytest -q -rs tests/test_gpu_calibrate.py tests/test_predict.py -k "gpu or bundled" > "$OUT/gpu-tests.txt" 2>&1; tail -n 8 "$OUT/gpu-tests.txt"
echo "== done in $(( $(date +%s) - t0 )) s; $(ls "$OUT" | wc -l) files in $OUT"
