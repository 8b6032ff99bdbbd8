#!/usr/bin/env bash
# Session 24, device call 3 (H200): the one traced run with untraced windows (GRAPHMODE_UNTRACED_WINDOWS=1,
# tracer.untraced_windows).
# 1. the gpu tests of the windows and of the default one run;
# 2. four eager-only third-party programs, each untraced, then `graphmode run --runs 1` with windows, then untraced
#    again (the programs' own clocks in every process; traces kept).
# Usage: bash benchmarks/notes/s24/call3.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py \
  -k "one_traced_run_by_default or detaches_cupti" \
  > "$out/gpu-tests.log" 2>&1; echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"
root=$PWD
mkdir -p /tmp/tr && cd benchmarks/third_party
untraced() {  # name, then the program and its arguments
  local name=$1; shift
  local s=$(date +%s%N)
  timeout 90 python3 "$@" > /tmp/tr/$name.log 2>&1
  echo "$name untraced rc=$? wall_ms=$(( ($(date +%s%N) - s) / 1000000 )) $(grep GRAPHMODE_TRUTH /tmp/tr/$name.log | cut -c1-300)" >> /tmp/tr/truth.txt
}
windows() {
  local name=$1; shift
  local s=$(date +%s%N)
  GRAPHMODE_UNTRACED_WINDOWS=1 timeout 150 graphmode run --runs 1 --no-html --out /tmp/tr/$name.gmtrace "$@" > /tmp/tr/$name.log 2>&1
  echo "$name windows rc=$? wall_ms=$(( ($(date +%s%N) - s) / 1000000 )) $(grep GRAPHMODE_TRUTH /tmp/tr/$name.log | tr '\n' ' ' | cut -c1-400)" >> /tmp/tr/truth.txt
}
prog() {  # name, program and arguments
  local name=$1; shift
  untraced ${name}_u1 "$@"; windows ${name}_w "$@"; untraced ${name}_u2 "$@"
}
prog vit vit_batch_graphs.py --eager-only --calls 60
prog decode hf_static_decode.py --eager-only
[ $(( $(date +%s) - t0 )) -lt 400 ] && prog mobilenet mobilenet_train_fn.py --steps 60
[ $(( $(date +%s) - t0 )) -lt 460 ] && prog resnet resnet_train.py --eager-only --steps 60
cd "$root"
cat /tmp/tr/truth.txt
for t in /tmp/tr/*.gmtrace; do python3 benchmarks/untraced_windows.py "$t"; done 2>&1 | tee "$out/windows.md"
(cd /tmp/tr && tar -cf - * | xz -6 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
