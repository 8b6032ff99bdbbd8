#!/usr/bin/env bash
# Session 24, device call 5 (H200), untraced windows on by default in the one traced run: the gpu tests of the
# default one run (tests/test_gpu_script.py -k ...); the graphed decode loop under the default `graphmode run` beside
# the same program untraced (a window before its graph, the graph recorded after). Cut to fit the session's last device
# minutes. Usage: bash benchmarks/notes/s24/call5.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
for f in .whl/*.tar.xz; do tar -xJf "$f" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/graphmode-install.log 2>&1
timeout 130 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_script.py -k "one_traced_run_by_default or allocates or detaches or run_once" > "$out/gpu-tests.log" 2>&1
echo "gpu tests rc=$?" >> "$out/gpu-tests.log"; tail -3 "$out/gpu-tests.log"
root=$PWD
mkdir -p /tmp/tr && cd benchmarks/third_party
timed() {  # name, then the command
  local name=$1; shift
  local s=$(date +%s%N)
  timeout 120 "$@" > /tmp/tr/$name.log 2>&1
  echo "$name rc=$? wall_ms=$(( ($(date +%s%N) - s) / 1000000 )) $(grep GRAPHMODE_TRUTH /tmp/tr/$name.log | tr '\n' ' ' | cut -c1-300)" >> /tmp/tr/truth.txt
}
[ $(( $(date +%s) - t0 )) -lt 165 ] && { timed decode_graphed python3 hf_static_decode.py; timed decode_graphed_gm graphmode run --no-html --out /tmp/tr/decode_graphed.gmtrace hf_static_decode.py; }
cd "$root"
cat /tmp/tr/truth.txt
(cd /tmp/tr && tar -cf - * | xz -6 -T8 > "$out/traces.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
