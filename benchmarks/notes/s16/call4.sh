#!/usr/bin/env bash
# Session 16, device call 4 (H200), after the renovation's merge: the GPU tests of everything it touched (tracer,
# store, script runs, steps, calibrate), then the counterfactual on a graph break (ResNet-50 with
# torch._dynamo.graph_break(): two graphs a call under reduce-overhead, no eager twin), 3 + 3 untraced processes and
# one `graphmode run`. Usage, from the repository root with .whl carried: bash benchmarks/notes/s16/call4.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
timeout 360 python3 -m pytest -m gpu -q -rs --durations=10 -p no:cacheprovider tests/test_gpu_tracer.py tests/test_gpu_store.py \
  tests/test_gpu_script.py tests/test_gpu_steps.py tests/test_gpu_calibrate.py > "$out/gpu-tests.log" 2>&1
tail -25 "$out/gpu-tests.log"
cd benchmarks/third_party || exit 1
for i in 1 2 3; do
  for mode in default reduce-overhead; do
    timeout 120 python3 compile_resnet50.py --graph-break --mode "$mode" --calls 100 | grep GRAPHMODE_TRUTH >> "$out/break-truth.jsonl"
  done
done
cat "$out/break-truth.jsonl" | cut -c1-160
timeout 150 graphmode run --out "$out/resnet50_break.gmtrace" --no-html compile_resnet50.py --graph-break --mode reduce-overhead \
  --calls 100 > "$out/run_break.log" 2>&1
tail -25 "$out/run_break.log"
