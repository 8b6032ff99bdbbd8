#!/usr/bin/env bash
# Session 18, device call 3 (H200): issue 30's eager-only programs, each as untraced / `graphmode run` / untraced, in
# that order (is the timing run slower than the program untraced, or was call 2's untraced program just faster after
# the traced ones?), under the default plan whose detail run for a script that built no graph now records only the
# API calls the prediction reads (api_filter 'needed', no node callbacks); traces kept, wall times measured. Then the
# programs graphed, untraced, once more. Usage: bash benchmarks/notes/s18/call3.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/truth.txt"
cd benchmarks/third_party || exit 1
mkdir -p /tmp/eo
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
untraced() {  # name, program...
  local name=$1; shift; local s; s=$(date +%s%N)
  timeout 40 python3 "$@" 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name untraced /" >> "$out/truth.txt"
  echo "$name untraced wall_ms=$(ms $s)" >> "$out/truth.txt"
}
progs=("resnet_train.py --eager-only" "hf_static_decode.py --eager-only" "mobilenet_train_fn.py" "vit_batch_graphs.py --eager-only")
for prog in "${progs[@]}"; do
  name=$(echo $prog | cut -d. -f1)
  untraced "$name eager-only before" $prog
  s=$(date +%s%N)
  timeout 100 graphmode run --no-html --no-report --out /tmp/eo/$name.gmtrace $prog > /tmp/eo/$name.log 2>&1
  echo "$name graphmode rc=$? wall_ms=$(ms $s)" | tee -a "$out/truth.txt"
  grep GRAPHMODE_TRUTH /tmp/eo/$name.log | sed "s/^/$name traced /" >> "$out/truth.txt"
  untraced "$name eager-only after" $prog
  (cd /tmp/eo && tar -cJf "$out/eager-only.tar.xz" *.gmtrace *.log)
done
for prog in "resnet_train.py" "hf_static_decode.py" "mobilenet_train_fn.py --graph" "vit_batch_graphs.py"; do
  untraced "$(echo $prog | cut -d. -f1) graphed" $prog
done
cut -c1-300 "$out/truth.txt"
