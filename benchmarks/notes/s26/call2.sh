#!/usr/bin/env bash
# Session 26, device call 2 (H200): capture_parts.py, each variant in 2 processes, interleaved.
# Usage: bash benchmarks/notes/s26/call1.sh OUT
set -u
out=${1:?OUT}
t0=$(date +%s)
. benchmarks/device_setup.sh
for i in 0 1; do
  for v in S_old S S_nocb TB T A; do
    timeout 90 python3 benchmarks/notes/s26/capture_parts.py $v > "$out/$v.$i.txt" 2>&1
    grep '^{' "$out/$v.$i.txt" >> "$out/capture_parts.jsonl" || tail -3 "$out/$v.$i.txt"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
done
python3 - "$out/capture_parts.jsonl" <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); rows[r["variant"]].append(r)
for v, rs in rows.items():
    print(v, " ".join(f"vit {r['vit_ratio']:.2f}x ({r['U_vit_us']:.0f}->{r[v+'_vit_us']:.0f}) chain {r['chain_ratio']:.2f}x" for r in rs), rs[-1].get("records"), [r["parts_us"] for r in rs], rs[-1].get("topologies"), rs[-1].get("topology_copies"))
PY
echo "elapsed $(( $(date +%s) - t0 )) s"
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_topology_copy.py 2>&1 | tail -15
