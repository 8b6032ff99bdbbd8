#!/usr/bin/env bash
# Session 21, device call 3 (H200), after the tracer's own CUPTI buffer callbacks (tracer/cupti_buffers.py):
# 1. issue 29's one traced run on the graphed third-party set, as session 19's call 3 measured it before: each program
#    once untraced and once under the default `graphmode run`, interleaved (benchmarks/script_fidelity.py), traces kept;
# 2. benchmarks/third_party/compile_resnet50.py --first default: torch.compile without graphs, then reduce-overhead,
#    through one line (the compiled loop is the graph's eager twin), under `graphmode run` and untraced;
# 3. where time is left, the gpu tests of the one traced run. Usage: bash benchmarks/notes/s21/call3.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
root=$PWD
timeout 250 python3 benchmarks/script_fidelity.py record /tmp/fid --procs 1 \
  --workloads hf_graph,resnet,vit_batches,mgc_mobilenet,cupy,jax --configs untraced,graphmode --no-report \
  --keep-traces first --timeout 80
(cd /tmp/fid && for f in *.gmtrace; do xz -T8 -6 "$f"; done; tar -cf "$out/fid.tar" .) 2>/dev/null
cd benchmarks/third_party || exit 1
mkdir -p /tmp/tr
s=$(date +%s%N)
timeout 100 graphmode run --no-html --out /tmp/tr/ro_after_default.gmtrace compile_resnet50.py --first default --mode reduce-overhead \
  > /tmp/tr/ro_after_default.log 2>&1
echo "ro_after_default graphmode rc=$? wall_ms=$(( ($(date +%s%N) - s) / 1000000 ))" >> /tmp/tr/truth.txt
grep GRAPHMODE_TRUTH /tmp/tr/ro_after_default.log | sed "s/^/traced /" >> /tmp/tr/truth.txt
timeout 70 python3 compile_resnet50.py --first default --mode reduce-overhead 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/untraced /" >> /tmp/tr/truth.txt
(cd /tmp/tr && tar -cf - * | xz -6 -T8 > "$out/ro_after_default.tar.xz")
cd "$root"
left=$(( 540 - ($(date +%s) - t0) ))
if [ $left -gt 90 ]; then
  timeout $left python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests/test_gpu_script.py -k "one_traced_run or each_step_allocates" \
    > "$out/gpu-tests.log" 2>&1; echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -5 "$out/gpu-tests.log"
fi
cat /tmp/tr/truth.txt | cut -c1-250
echo "elapsed $(( $(date +%s) - t0 )) s"
