#!/usr/bin/env bash
# Prepared in session 32 for the next device session, not yet run: decode_capture_probe.py, each MODE in PROCS fresh
# processes, interleaved. The figure: D's body over U's body per process, by mode (control is the captures' own spread).
# Usage: bash benchmarks/notes/s32/next_call.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-3}
. benchmarks/device_setup.sh
cd benchmarks/third_party  # hf_static_decode.py's folder (its _truth module is not needed here)
for i in $(seq 1 "$procs"); do
  for mode in control session history stamper hooks all; do
    timeout 90 python3 ../notes/s32/decode_capture_probe.py "$mode" 2>>"$out/probe.err" | tail -1 >> "$out/probe.jsonl"
  done
done
tail -3 "$out/probe.err"; wc -l "$out/probe.jsonl"
cd ../..
# then where the 19-44 ms of the attach after an untraced capture go (the phase marks inside CuptiSession.start and
# around graphmode's own graph, added after session 32's calls): the default run of the decode step, phase marks on
GRAPHMODE_PHASES="$out/run_phases.jsonl" timeout 200 python3 benchmarks/script_fidelity.py record /tmp/fidn --procs 2 \
  --workloads hf_graph --configs graphmode --no-report --timeout 60 > "$out/record.log" 2>&1
grep -c "capture attach" "$out/run_phases.jsonl"
