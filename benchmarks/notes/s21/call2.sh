#!/usr/bin/env bash
# Session 21, device call 2 (H200): CUPTI's buffers through the tracer's own ctypes callbacks (tracer.cupti_buffers).
# 1. buffer_probe.py: a loop of 120,000 launches untraced, under cupti-python's callbacks and under ours, alternated.
# 2. The gpu tests of the tracer (records decoded from our buffers).
# 3. The default `graphmode run` (with GRAPHMODE_PHASES) on call 1's ResNet-50 run uncompiled then reduce-overhead, and on
#    two eager-only programs, each beside an untraced process.
# 4. `graphmode calibrate --launch-only` on a copy of the bundled model: the tracer's costs under our buffers.
# Usage: bash benchmarks/notes/s21/call2.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
root=$PWD
r=/tmp/res; mkdir -p $r /tmp/tr
pack() { (cd $r && tar -cJf "$out/results.tar.xz" .); }
for p in untraced cupti-python raw cupti-python raw untraced; do
  if [ $p = untraced ]; then timeout 60 python3 benchmarks/notes/s21/buffer_probe.py --untraced >> $r/buffer_probe.jsonl 2>> $r/buffer_probe.err
  elif [ $p = raw ]; then timeout 60 python3 benchmarks/notes/s21/buffer_probe.py >> $r/buffer_probe.jsonl 2>> $r/buffer_probe.err
  else GRAPHMODE_CUPTI_BUFFERS=cupti-python timeout 60 python3 benchmarks/notes/s21/buffer_probe.py >> $r/buffer_probe.jsonl 2>> $r/buffer_probe.err; fi
done
cat $r/buffer_probe.jsonl; pack
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_tracer.py > $r/gpu-tracer-tests.log 2>&1
echo "gpu tracer tests rc=$?" | tee -a $r/gpu-tracer-tests.log; tail -3 $r/gpu-tracer-tests.log; pack
cd benchmarks/third_party || exit 1
secs() { printf '%d.%09d' $(( $1 / 1000000000 )) $(( $1 % 1000000000 )); }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
untraced() {  # label, program...
  local name=$1; shift; local s; s=$(date +%s%N)
  timeout 90 python3 "$@" 2>&1 | grep GRAPHMODE_TRUTH | sed "s/^/$name untraced /" >> $r/truth.txt
  echo "$name untraced wall_ms=$(ms $s)" >> $r/truth.txt
}
traced() {  # name, program...
  local name=$1; shift; local s; s=$(date +%s%N)
  GRAPHMODE_PHASES=$r/$name.phases.jsonl timeout 150 graphmode run --out /tmp/tr/$name.gmtrace "$@" > /tmp/tr/$name.log 2>&1
  local rc=$?; local e=$(date +%s%N)
  echo "$name graphmode rc=$rc wall_ms=$(( (e - s) / 1000000 ))" | tee -a $r/truth.txt
  python3 "$root/benchmarks/run_phases.py" $r/$name.phases.jsonl --start $(secs $s) --end $(secs $e) > $r/$name.phases.txt 2>&1
  grep GRAPHMODE_TRUTH /tmp/tr/$name.log | sed "s/^/$name traced /" >> $r/truth.txt
  rm -f /tmp/tr/*.html
  (cd /tmp/tr && tar -cf - *.gmtrace *.log | xz -6 -T8 > "$out/traces.tar.xz")
  pack
}
traced ro_after_eager compile_resnet50.py --first eager --mode reduce-overhead
untraced "ro_after_eager" compile_resnet50.py --first eager --mode reduce-overhead
for prog in "vit_batch_graphs.py --eager-only" "hf_static_decode.py --eager-only"; do
  name=$(echo $prog | cut -d. -f1)
  untraced "$name" $prog
  traced "$name" $prog
done
cd "$root"
if [ $(( $(date +%s) - t0 )) -lt 330 ]; then
  cp graphmode/data/costmodel-nvidia-h200.json $r/costmodel-s21.json
  timeout $(( 560 - ($(date +%s) - t0) )) graphmode calibrate --launch-only --out $r/costmodel-s21.json > $r/calibrate.log 2>&1
  echo "calibrate rc=$?" >> $r/calibrate.log; tail -30 $r/calibrate.log
fi
pack
cut -c1-300 $r/truth.txt
