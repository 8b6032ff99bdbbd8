#!/usr/bin/env bash
# Session 28, device call 2 (H200): capture_detach_probe.py, variants U T D0 D20 R0 R20 RW, PROCS rounds of one fresh
# process each, interleaved. Into OUT/c2.tar.xz.
# Usage: bash benchmarks/notes/s28/call2.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
d=/tmp/c2; mkdir -p $d
. benchmarks/device_setup.sh
for i in $(seq 1 "$procs"); do
  for v in U T D0 D20 R0 R20 RW; do
    timeout 60 python3 benchmarks/notes/s28/capture_detach_probe.py $v > "$d/$v.$i.txt" 2>&1
    grep '^{' "$d/$v.$i.txt" >> $d/probe.jsonl || tail -3 "$d/$v.$i.txt"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
  [ $(( $(date +%s) - t0 )) -gt 450 ] && break
done
python3 - $d/probe.jsonl <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); rows[r["variant"]].append(r)
for v in ("U", "T", "D0", "D20", "R0", "R20", "RW"):
    for r in rows.get(v, []):
        print(f"{v:4s} first block {r['first_block_us']:8.0f} body {r['first_body_us']:7.0f} | second block {r['second_block_us']:7.0f} "
              f"body {r['second_body_us']:7.0f} | end {[round(e) for e in r['end_us']]} attach {[round(a) for a in r['attach_us']]} "
              f"warm {[round(a) for a in r['warm_us']]} detach {r['detach_us'] and round(r['detach_us'])} eager {r['eager_before_us']:.0f}/{r['eager_after_us'] or 0:.0f}")
PY
(cd /tmp && tar -cf - c2 | xz -2 -T8 > "$out/c2.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
