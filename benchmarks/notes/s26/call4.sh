#!/usr/bin/env bash
# Session 26, device call 4 (H200): the one run as landed (destroyed graphs copied, no quiet captures).
#  1. tracer.launch_probes torch untraced and --traced, 3 processes each, interleaved: the calibration of the copied
#     session's capture cost (fitted into the bundled model afterwards, fit_copied.py);
#  2. the default `graphmode run` against the untraced programs, PROCS + PROCS processes (script_fidelity.py).
# Everything into OUT/c4.tar.xz and the traces into OUT/c4-traces.tar.xz (the device returns a few files only).
# Usage: bash benchmarks/notes/s26/call4.sh OUT WORKLOADS PROCS
set -u
out=${1:?OUT}; workloads=${2:?WORKLOADS}; procs=${3:-2}
t0=$(date +%s)
mkdir -p /tmp/c4
. benchmarks/device_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > /tmp/c4/gpu.txt 2>&1
for i in 0 1 2; do
  for mode in "" "--traced"; do
    timeout 120 python3 -m graphmode.tracer.launch_probes torch $mode 2>/dev/null | grep '^{' | sed "s/^{/{\"process\": $i, /" >> /tmp/c4/launch_probes.jsonl
  done
done
echo "launch probes done at $(( $(date +%s) - t0 )) s: $(wc -l < /tmp/c4/launch_probes.jsonl) processes"
python3 - /tmp/c4/launch_probes.jsonl <<'PY'
import json, sys
from graphmode.analyzers.costmodel import fit_tracer_costs
probes = [json.loads(l) for l in open(sys.argv[1])]
for k, v in sorted(fit_tracer_costs(probes, "needed").items()):
    print(f"  {k}: median {v.median/1e3:.2f} us, samples {[round(x/1e3, 2) for x in v.samples]}")
PY
timeout 120 python3 benchmarks/script_fidelity.py record /tmp/fid --procs "$procs" --workloads "$workloads" \
  --configs untraced,graphmode --keep-traces all --no-report --timeout 150 > /tmp/c4/record.log 2>&1
tail -12 /tmp/c4/record.log
cp /tmp/fid/results.jsonl /tmp/c4/ 2>/dev/null
(cd /tmp && tar -cf - c4 | xz -2 -T8 > "$out/c4.tar.xz")
(cd /tmp/fid && tar -cf - *.gmtrace | xz -2 -T8 > "$out/c4-traces.tar.xz")
ls -la "$out"
echo "elapsed $(( $(date +%s) - t0 )) s"
