#!/usr/bin/env bash
# Session 18, device call 2 (H200): issue 30's eager-only programs under plain `graphmode run` with the new default plan
# for a script that built no graph (the one traced run, the detail run, then the timing run: the loop's untraced
# periods and the first-graph probe), traces kept and wall times measured; then the programs graphed, untraced, fresh
# processes, for what a graph of their step measured by their own clocks. Usage: bash benchmarks/notes/s18/call2.sh OUT
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
progs=("hf_static_decode.py --eager-only" "mobilenet_train_fn.py" "vit_batch_graphs.py --eager-only" "resnet_train.py --eager-only")
graphed=("mobilenet_train_fn.py --graph" "vit_batch_graphs.py" "resnet_train.py" "hf_static_decode.py")
for prog in "${progs[@]}"; do
  name=$(echo $prog | cut -d. -f1)
  s=$(date +%s%N)
  timeout 100 graphmode run --no-html --no-report --out /tmp/eo/$name.gmtrace $prog > /tmp/eo/$name.log 2>&1
  echo "$name graphmode rc=$? wall_ms=$(ms $s)" | tee -a "$out/truth.txt"
  grep GRAPHMODE_TRUTH /tmp/eo/$name.log | sed "s/^/$name traced /" >> "$out/truth.txt"
  (cd /tmp/eo && tar -cJf "$out/eager-only.tar.xz" *.gmtrace *.log)
done
for prog in "${graphed[@]}"; do
  name=$(echo $prog | cut -d. -f1)
  s=$(date +%s%N)
  timeout 40 python3 $prog 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name graphed untraced /" >> "$out/truth.txt"
  echo "$name graphed untraced wall_ms=$(ms $s)" >> "$out/truth.txt"
done
for prog in "${progs[@]}"; do
  name=$(echo $prog | cut -d. -f1)
  s=$(date +%s%N)
  timeout 40 python3 $prog 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name eager-only untraced /" >> "$out/truth.txt"
  echo "$name eager-only untraced wall_ms=$(ms $s)" >> "$out/truth.txt"
done
cut -c1-300 "$out/truth.txt"
