#!/usr/bin/env bash
# Session 24, device call 4 (H200): can one run replace the two runs of an eager-only script? Per program: the default
# `graphmode run` (the one traced run, then the timing run ending with the first-graph probe); `graphmode run --runs 1`
# with untraced windows and the probe in the one run's own process after CUPTI detached (GRAPHMODE_UNTRACED_WINDOWS=1
# GRAPHMODE_PROBE_AFTER_DETACH=1); the program graphed with torch.cuda.graph and eager-only, untraced (own clocks).
# Usage: bash benchmarks/notes/s24/call4.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
root=$PWD
mkdir -p /tmp/tr && cd benchmarks/third_party
timed() {  # name, env prefix or -, then the command
  local name=$1 env=$2; shift 2
  local s=$(date +%s%N)
  if [ "$env" = - ]; then timeout 150 "$@" > /tmp/tr/$name.log 2>&1; else env $env timeout 150 "$@" > /tmp/tr/$name.log 2>&1; fi
  echo "$name rc=$? wall_ms=$(( ($(date +%s%N) - s) / 1000000 )) $(grep GRAPHMODE_TRUTH /tmp/tr/$name.log | tr '\n' ' ' | cut -c1-600)" >> /tmp/tr/truth.txt
}
prog() {  # name, graphed args (space-separated, quoted), then the eager-only program and its arguments
  local name=$1 graphed=$2; shift 2
  timed ${name}_graphed - python3 $graphed
  timed ${name}_default - graphmode run --no-html --out /tmp/tr/${name}_default.gmtrace "$@"
  timed ${name}_one "GRAPHMODE_UNTRACED_WINDOWS=1 GRAPHMODE_PROBE_AFTER_DETACH=1" graphmode run --runs 1 --no-html --out /tmp/tr/${name}_one.gmtrace "$@"
  timed ${name}_untraced - python3 "$@"
}
prog decode "hf_static_decode.py" hf_static_decode.py --eager-only
prog vit "vit_batch_graphs.py --calls 60" vit_batch_graphs.py --eager-only --calls 60
[ $(( $(date +%s) - t0 )) -lt 330 ] && prog mobilenet "mobilenet_train_fn.py --steps 60 --graph" mobilenet_train_fn.py --steps 60
[ $(( $(date +%s) - t0 )) -lt 400 ] && prog resnet "resnet_train.py --steps 60" resnet_train.py --eager-only --steps 60
cd "$root"
cat /tmp/tr/truth.txt
(cd /tmp/tr && tar -cf - * | xz -6 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
