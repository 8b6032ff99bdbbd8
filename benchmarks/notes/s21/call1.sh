#!/usr/bin/env bash
# Session 21, device call 1 (H200).
# 1. Issue 28's last piece: a script that also ran its model another way. benchmarks/third_party/compile_resnet50.py
#    --first eager|default runs the uncompiled model (or torch.compile without graphs) then reduce-overhead through
#    the same line, in one process: 3 fresh untraced processes each (the program's own clocks) and the default
#    `graphmode run` on each, traces kept.
# 2. Issue 29: the default `graphmode run` on two eager-only programs with GRAPHMODE_PHASES (the marks inside the
#    one run's CUPTI stop, added in session 20, have not run yet).
# Usage: bash benchmarks/notes/s21/call1.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/truth.txt"
python3 -c "import torch, duckdb, plotly; print(torch.__version__, duckdb.__version__, plotly.__version__)" >> "$out/truth.txt"
root=$PWD
cd benchmarks/third_party || exit 1
mkdir -p /tmp/tr
secs() { printf '%d.%09d' $(( $1 / 1000000000 )) $(( $1 % 1000000000 )); }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
untraced() {  # label, program...
  local name=$1; shift; local s; s=$(date +%s%N)
  timeout 90 python3 "$@" 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name untraced /" >> "$out/truth.txt"
  echo "$name untraced wall_ms=$(ms $s)" >> "$out/truth.txt"
}
traced() {  # name, program...
  local name=$1; shift; local s; s=$(date +%s%N)
  GRAPHMODE_PHASES=$out/$name.phases.jsonl timeout 150 graphmode run --out /tmp/tr/$name.gmtrace "$@" > /tmp/tr/$name.log 2>&1
  local rc=$?; local e=$(date +%s%N)
  echo "$name graphmode rc=$rc wall_ms=$(( (e - s) / 1000000 ))" | tee -a "$out/truth.txt"
  python3 "$root/benchmarks/run_phases.py" "$out/$name.phases.jsonl" --start $(secs $s) --end $(secs $e) > "$out/$name.phases.txt" 2>&1
  grep GRAPHMODE_TRUTH /tmp/tr/$name.log | sed "s/^/$name traced /" >> "$out/truth.txt"
  rm -f /tmp/tr/*.html
  (cd /tmp/tr && tar -cf - *.gmtrace *.log | xz -6 -T8 > "$out/traces.tar.xz")
}
untraced "ro_after_eager r1" compile_resnet50.py --first eager --mode reduce-overhead
traced ro_after_eager compile_resnet50.py --first eager --mode reduce-overhead
untraced "ro_after_eager r2" compile_resnet50.py --first eager --mode reduce-overhead
untraced "ro_after_default r1" compile_resnet50.py --first default --mode reduce-overhead
traced ro_after_default compile_resnet50.py --first default --mode reduce-overhead
untraced "ro_after_default r2" compile_resnet50.py --first default --mode reduce-overhead
for prog in "vit_batch_graphs.py --eager-only" "hf_static_decode.py --eager-only"; do
  [ $(( $(date +%s) - t0 )) -gt 420 ] && break
  name=$(echo $prog | cut -d. -f1)
  untraced "$name" $prog
  traced "$name" $prog
done
[ $(( $(date +%s) - t0 )) -lt 480 ] && untraced "ro_after_eager r3" compile_resnet50.py --first eager --mode reduce-overhead
[ $(( $(date +%s) - t0 )) -lt 520 ] && untraced "ro_after_default r3" compile_resnet50.py --first default --mode reduce-overhead
cut -c1-400 "$out/truth.txt"
