#!/usr/bin/env bash
# Issue 11 on the GPU, in one go (about 3-4 minutes on an H200):
#   1. `graphmode calibrate` writes the GPU's cost model into graphmode/data/ (the model graphmode ships);
#   2. benchmarks/prediction.py: predicted vs measured on chain, dag and PyTorch workloads, with that model;
#   3. the GPU tests of calibrate and the prediction.
# Everything it produces is copied under $OUT (default ./prediction-out):
#   $OUT/costmodel-<gpu>.json (+ .measurements.json), calibrate.txt, prediction/{results.json,prediction.md,run.log,*.gmtrace},
#   gpu-tests.txt.     Usage, from the repository root:  OUT=/some/dir bash benchmarks/prediction_gpu.sh
set -uo pipefail
OUT=${OUT:-prediction-out}
mkdir -p "$OUT"
python -c "import graphmode.tracer.calibrate" 2>/dev/null || python -m pip install -q --no-deps --no-build-isolation -e . || exit 1
MODEL=graphmode/data/$(python -c "from graphmode.analyzers.costmodel import model_file_name; from graphmode.tracer.cuda_util import init_device; print(model_file_name(init_device().name))") || exit 1
t0=$(date +%s)
echo "== 1. calibrate -> $MODEL"
python -m graphmode calibrate --out "$MODEL" 2>&1 | tee "$OUT/calibrate.txt"
cp "$MODEL" "${MODEL%.json}.measurements.json" "$OUT/" 2>/dev/null
echo "== 2. prediction benchmark ($(( $(date +%s) - t0 )) s so far)"
python benchmarks/prediction.py run "$OUT/prediction" --model "$MODEL" 2>&1 | tail -n 30
echo "== 3. GPU tests ($(( $(date +%s) - t0 )) s so far)"
python -m pytest -q -rs tests/test_gpu_calibrate.py 2>&1 | tee "$OUT/gpu-tests.txt" | tail -n 15
echo "== done in $(( $(date +%s) - t0 )) s; outputs in $OUT"
