#!/usr/bin/env bash
# Session 20, device call 3 (H200): where the default `graphmode run`'s own time goes on a script that built no graph
# (issue 29: at most 2x the script's wall time). Three of issue 30's eager-only programs, each untraced then under the
# default `graphmode run` (its report and page included, as a user gets them) with GRAPHMODE_PHASES set
# (tracer/phases.py), the command's start and end read by the shell. Then the gpu tests of the tracer and the store.
# Usage: bash benchmarks/notes/s20/call3.sh OUT
set -u
out=${1:?OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
root=$PWD
cd benchmarks/third_party || exit 1
mkdir -p /tmp/ph
for prog in "resnet_train.py --eager-only" "vit_batch_graphs.py --eager-only" "hf_static_decode.py --eager-only"; do
  name=$(echo $prog | cut -d. -f1)
  s=$(date +%s.%N); timeout 60 python3 $prog > /dev/null 2>&1; e=$(date +%s.%N)
  echo "$name untraced $s $e" >> "$out/phases-walls.txt"
  s=$(date +%s.%N)
  GRAPHMODE_PHASES=$out/$name.phases.jsonl timeout 150 graphmode run --out /tmp/ph/$name.gmtrace $prog > /tmp/ph/$name.log 2>&1
  rc=$?; e=$(date +%s.%N)
  echo "$name graphmode $s $e rc=$rc" >> "$out/phases-walls.txt"
  python3 "$root/benchmarks/run_phases.py" "$out/$name.phases.jsonl" --start $s --end $e > "$out/$name.phases.txt"
  cat "$out/$name.phases.txt"
done
cd "$root"
cat "$out/phases-walls.txt"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_tracer.py tests/test_gpu_store.py > "$out/gpu-tests.log" 2>&1
echo "gpu tests rc=$?"; tail -5 "$out/gpu-tests.log"
