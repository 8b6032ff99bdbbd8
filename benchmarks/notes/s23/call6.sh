#!/usr/bin/env bash
# Session 23, device call 6 (H200): the CPU's speed in graphmode's own runs (tracer.line_stamps samples, analyzers.cpu_speed).
# 1. the gpu tests of the one run and the eager-only runs (stamps, the new samples);
# 2. `graphmode run` on timm's ViT (vit_batch_graphs.py --eager-only) 3 times and the Llama decode loop
#    (hf_static_decode.py --eager-only) once, each beside an untraced process, traces kept (the fixture, the figures).
# Usage: bash benchmarks/notes/s23/call6.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py \
  -k "one_traced_run_by_default or each_step_allocates or unsynchronized_eager_loop or first_capture_in_its_process" \
  > "$out/gpu-tests.log" 2>&1; echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"
root=$PWD
mkdir -p /tmp/tr && cd benchmarks/third_party
one() {  # name, then the program and its arguments
  local name=$1; shift
  local s=$(date +%s%N)
  timeout 60 python3 "$@" > /tmp/tr/$name.untraced.log 2>&1
  echo "$name untraced rc=$? wall_ms=$(( ($(date +%s%N) - s) / 1000000 )) $(grep GRAPHMODE_TRUTH /tmp/tr/$name.untraced.log | cut -c1-200)" >> /tmp/tr/truth.txt
  s=$(date +%s%N)
  timeout 100 graphmode run --no-html --out /tmp/tr/$name.gmtrace "$@" > /tmp/tr/$name.log 2>&1
  echo "$name graphmode rc=$? wall_ms=$(( ($(date +%s%N) - s) / 1000000 )) $(grep GRAPHMODE_TRUTH /tmp/tr/$name.log | tr '\n' ' ' | cut -c1-400)" >> /tmp/tr/truth.txt
}
for i in 1 2 3; do one vit_eager_$i vit_batch_graphs.py --eager-only; done
[ $(( $(date +%s) - t0 )) -lt 420 ] && one hf_eager hf_static_decode.py --eager-only
cd "$root"
cat /tmp/tr/truth.txt
(cd /tmp/tr && tar -cf - * | xz -6 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
