#!/usr/bin/env bash
# Session 20, device call 2 (H200): issue 30's "the memory they would hold". The one traced run now records PyTorch's
# allocator history (tracer.allocator_history). 1. The gpu tests of it (tests/test_gpu_script.py: the new
# test_the_one_run_records_what_each_step_allocates and test_one_traced_run_by_default). 2. Issue 30's eager-only
# programs as in session 19's call 2 (untraced eager-only, the default `graphmode run` on it, the program graphed
# untraced, which now prints what each graph's pool holds: benchmarks/third_party/_truth.py pool_memory), a second
# round in the other order where the call's time allows. Usage: bash benchmarks/notes/s20/call2.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/truth.txt"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_script.py -k "each_step_allocates or one_traced_run_by_default" \
  > "$out/gpu-tests.log" 2>&1; echo "gpu tests rc=$?" | tee -a "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"
root=$PWD
cd benchmarks/third_party || exit 1
mkdir -p /tmp/eo
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
untraced() {  # label, program...
  local name=$1; shift; local s; s=$(date +%s%N)
  timeout 45 python3 "$@" 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name untraced /" >> "$out/truth.txt"
  echo "$name untraced wall_ms=$(ms $s)" >> "$out/truth.txt"
}
traced() {  # round, name, program...
  local r=$1 name=$2; shift 2; local s; s=$(date +%s%N)
  timeout 100 graphmode run --no-html --no-report --out /tmp/eo/$name-r$r.gmtrace "$@" > /tmp/eo/$name-r$r.log 2>&1
  echo "$name r$r graphmode rc=$? wall_ms=$(ms $s)" | tee -a "$out/truth.txt"
  grep GRAPHMODE_TRUTH /tmp/eo/$name-r$r.log | sed "s/^/$name r$r traced /" >> "$out/truth.txt"
  (cd /tmp/eo && tar -cf "$out/eager-only.tar" *.gmtrace *.log)
}
eager=("resnet_train.py --eager-only" "hf_static_decode.py --eager-only" "mobilenet_train_fn.py" "vit_batch_graphs.py --eager-only")
graphed=("resnet_train.py" "hf_static_decode.py" "mobilenet_train_fn.py --graph" "vit_batch_graphs.py")
for i in 0 1 2 3; do
  name=$(echo ${eager[$i]} | cut -d. -f1)
  untraced "$name eager-only r1" ${eager[$i]}
  traced 1 $name ${eager[$i]}
  untraced "$name graphed r1" ${graphed[$i]}
done
for i in 3 1 0 2; do
  [ $(( $(date +%s) - t0 )) -gt 400 ] && break
  name=$(echo ${eager[$i]} | cut -d. -f1)
  untraced "$name graphed r2" ${graphed[$i]}
  traced 2 $name ${eager[$i]}
  untraced "$name eager-only r2" ${eager[$i]}
done
cut -c1-300 "$out/truth.txt"
