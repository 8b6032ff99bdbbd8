#!/usr/bin/env bash
# Session 36, call 2. (a) gpu tests of the torch probe's new CPU time and page faults (the machine's first process);
# (b) where `graphmode run`'s own time goes on a short CuPy script, graphed and eager-only (issue 29: 2.7x in call 1),
# the default command (report and page included), GRAPHMODE_PHASES set; (c) the decode step and MobileNetV3's training
# step in a function, graphed and eager-only, untraced and under the default run, PROCS processes each, each workload
# warmed up once untraced first (script_fidelity --warm-up).
# Usage: bash benchmarks/notes/s36/call2.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
. benchmarks/device_setup.sh
python3 -m pip install -q --no-index --no-deps pytest > /dev/null 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_script.py \
  -k "measures_torch_cuda_graphs_first_capture or an_eager_only_script_is_run_once" > "$out/gpu-tests.log" 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - t0 )) s"; tail -3 "$out/gpu-tests.log"
root=$PWD
cd benchmarks/third_party || exit 1
mkdir -p /tmp/ph
for prog in "cupy_chain.py" "cupy_chain.py --eager-only"; do
  name=$(echo $prog | tr -d ' -' | cut -d. -f1)$(echo $prog | grep -q eager && echo _eager)
  s=$(date +%s.%N); timeout 60 python3 $prog > /dev/null 2>&1; e=$(date +%s.%N)
  echo "$name untraced $s $e" >> "$out/phases.txt"
  s=$(date +%s.%N)
  GRAPHMODE_PHASES=/tmp/ph/$name.phases.jsonl timeout 90 graphmode run --out /tmp/ph/$name.gmtrace $prog > /tmp/ph/$name.log 2>&1
  rc=$?; e=$(date +%s.%N)
  echo "$name graphmode $s $e rc=$rc" >> "$out/phases.txt"
  python3 "$root/benchmarks/run_phases.py" /tmp/ph/$name.phases.jsonl --start $s --end $e >> "$out/phases.txt"
done
cd "$root"
cat "$out/phases.txt"; echo "phases at $(( $(date +%s) - t0 )) s"
timeout 400 python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" --warm-up \
  --workloads hf_graph,hf_eager,mobilenet_fn_graph,mobilenet_fn --configs untraced,graphmode \
  --keep-traces all --no-report --timeout 60 > "$out/record.log" 2>&1
cut -c1-160 "$out/record.log" | tail -4; echo "recorded at $(( $(date +%s) - t0 )) s"
pkill -TERM -f "graphmode run" 2>/dev/null && sleep 3
cp /tmp/fid/results.jsonl "$out/results.jsonl" 2>/dev/null
(cd /tmp/fid && tar -cf - $(ls *.gmtrace *.wal 2>/dev/null) | xz -2 -T8 > "$out/traces.tar.xz")
ls -la "$out"; echo "elapsed $(( $(date +%s) - t0 )) s"
