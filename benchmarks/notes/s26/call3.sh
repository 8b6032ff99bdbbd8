#!/usr/bin/env bash
# Session 26, device call 3 (H200): quiet captures and copied topologies.
#  1. capture_parts.py S (quiet + copies), S_loud, S_old (before session 26), S_notopo: 2 processes each;
#  2. tracer.launch_probes torch untraced and --traced (now quiet), 3 processes each, interleaved: the calibration of a
#     quiet capture's cost (fitted here afterwards into the bundled model's capture_quiet_* keys);
#  3. the gpu tests of the copy and of the one run's captures.
# Usage: bash benchmarks/notes/s26/call3.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
. benchmarks/device_setup.sh
for i in 0 1; do
  for v in S S_loud S_old S_notopo; do
    timeout 90 python3 benchmarks/notes/s26/capture_parts.py $v > "$out/$v.$i.txt" 2>&1
    grep '^{' "$out/$v.$i.txt" >> "$out/capture_parts.jsonl" || tail -3 "$out/$v.$i.txt"
  done
done
echo "capture_parts done at $(( $(date +%s) - t0 )) s"
python3 - "$out/capture_parts.jsonl" <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); rows[r["variant"]].append(r)
for v, rs in rows.items():
    print(v, " ".join(f"vit {r['vit_ratio']:.2f}x ({r['U_vit_us']:.0f}->{r[v+'_vit_us']:.0f}) chain {r['chain_ratio']:.2f}x" for r in rs))
    for r in rs:
        p = r["parts_us"]
        print("   parts", {k: p[k] for k in p}, "quiet", r.get("quiet"), "copies", r.get("topology_copies"))
    print("   records", rs[-1].get("records"), rs[-1].get("lifecycle_records"), rs[-1].get("topologies"))
PY
for i in 0 1 2; do
  for mode in "" "--traced"; do
    timeout 120 python3 -m graphmode.tracer.launch_probes torch $mode 2>/dev/null | grep '^{' | sed "s/^{/{\"process\": $i, /" >> "$out/launch_probes.jsonl"
  done
done
echo "launch probes done at $(( $(date +%s) - t0 )) s: $(wc -l < "$out/launch_probes.jsonl") processes"
python3 - "$out/launch_probes.jsonl" <<'PY'
import json, sys
from graphmode.analyzers.costmodel import fit_tracer_costs
probes = [json.loads(l) for l in open(sys.argv[1])]
for k, v in sorted(fit_tracer_costs(probes, "needed").items()):
    print(f"  {k}: median {v.median/1e3:.2f} us, samples {[round(x/1e3, 2) for x in v.samples]}")
PY
timeout 280 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_topology_copy.py tests/test_gpu_script.py \
  -k "topology_copy or broken_capture or one_traced_run_by_default or cupy_capture or cuda_python_capture or torch_graph_found" 2>&1 | tail -15
echo "elapsed $(( $(date +%s) - t0 )) s"
