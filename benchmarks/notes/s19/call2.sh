#!/usr/bin/env bash
# Session 19, device call 2 (H200): the default `graphmode run` of now on issue 30's eager-only programs: two runs (the
# one traced run, which now records the launches and stamps the user's lines, then the timing run), no detail run.
# Each program: untraced eager-only, `graphmode run` on it (wall time, trace kept), the program graphed untraced; a
# second round in the other order where the call's time allows. Then the XLA launch probes untraced and traced by the
# one run of now (API records 'needed'; command buffers off), for its calibration. Usage: bash .../call2.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1 \
  || { echo "editable install failed: using the checkout on PYTHONPATH"; export PYTHONPATH=$PWD:$PYTHONPATH; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/truth.txt"
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
  [ $(( $(date +%s) - t0 )) -gt 420 ] && break
  name=$(echo ${eager[$i]} | cut -d. -f1)
  untraced "$name graphed r2" ${graphed[$i]}
  traced 2 $name ${eager[$i]}
  untraced "$name eager-only r2" ${eager[$i]}
done
cd "$root"
for i in 1 2; do
  [ $(( $(date +%s) - t0 )) -gt 520 ] && break
  for mode in "" "--traced"; do
    XLA_FLAGS=--xla_gpu_enable_command_buffer= timeout 40 python3 -m graphmode.tracer.launch_probes xla $mode \
      2>>"$out/probes.err" | grep '^{' >> "$out/probes.jsonl"
    echo "xla $i [$mode] rc=$?"
  done
done
cut -c1-250 "$out/truth.txt"
