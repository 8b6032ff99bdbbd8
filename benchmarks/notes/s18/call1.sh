#!/usr/bin/env bash
# Session 18, device call 1 (H200): issue 30's eager-only programs under plain `graphmode run` (the default plan: the
# one traced run, then the detail run a script that built no graph gets, then the probe run; traces kept), and the
# same programs graphed, untraced, 3 fresh processes each, for what a graph of their step measured by their own clocks.
# Also the GPU test of the default one traced run. Usage: bash benchmarks/notes/s18/call1.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$out/truth.txt"
timeout 60 python3 -m pytest -m gpu -q -rs -p no:cacheprovider "tests/test_gpu_script.py::test_one_traced_run_by_default" \
  > "$out/gpu-tests.log" 2>&1
tail -2 "$out/gpu-tests.log"
cd benchmarks/third_party || exit 1
mkdir -p /tmp/eo
progs=("hf_static_decode.py --eager-only" "mobilenet_train_fn.py" "vit_batch_graphs.py --eager-only" "resnet_train.py --eager-only")
graphed=("hf_static_decode.py" "mobilenet_train_fn.py --graph" "vit_batch_graphs.py" "resnet_train.py")
for prog in "${progs[@]}"; do
  name=$(echo $prog | cut -d. -f1)
  s=$(date +%s.%N)
  timeout 90 graphmode run --no-html --no-report --out /tmp/eo/$name.gmtrace $prog > /tmp/eo/$name.log 2>&1
  echo "$name graphmode rc=$? wall=$(echo "$(date +%s.%N) - $s" | bc) s" | tee -a "$out/truth.txt"
  grep GRAPHMODE_TRUTH /tmp/eo/$name.log | sed "s/^/$name traced /" >> "$out/truth.txt"
  (cd /tmp/eo && tar -cJf "$out/eager-only.tar.xz" *.gmtrace *.log)
done
for prog in "${progs[@]}"; do
  name=$(echo $prog | cut -d. -f1)
  s=$(date +%s.%N)
  timeout 40 python3 $prog 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name eager-only untraced /" >> "$out/truth.txt"
  echo "$name eager-only untraced wall=$(echo "$(date +%s.%N) - $s" | bc) s" >> "$out/truth.txt"
done
for i in 0 1 2; do
  for prog in "${graphed[@]}"; do
    name=$(echo $prog | cut -d. -f1)
    timeout 40 python3 $prog 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name graphed untraced $i /" >> "$out/truth.txt"
  done
done
cut -c1-400 "$out/truth.txt"
