#!/usr/bin/env bash
# Session 28, device call 3 (H200): capture_detach_probe.py, variants U T D0 A AW, PROCS rounds of one fresh
# process each, interleaved. Into OUT/c3.tar.xz.
# Usage: bash benchmarks/notes/s28/call3.sh OUT PROCS
set -u
out=${1:?OUT}; procs=${2:-2}
t0=$(date +%s)
d=/tmp/c3; mkdir -p $d
. benchmarks/device_setup.sh
for i in $(seq 1 "$procs"); do
  for v in U T D0 A AW; do
    timeout 60 python3 benchmarks/notes/s28/capture_detach_probe.py $v > "$d/$v.$i.txt" 2>&1
    grep '^{' "$d/$v.$i.txt" >> $d/probe.jsonl || tail -3 "$d/$v.$i.txt"
  done
  echo "round $i done at $(( $(date +%s) - t0 )) s"
  [ $(( $(date +%s) - t0 )) -gt 400 ] && break
done
python3 - $d/probe.jsonl <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); rows[r["variant"]].append(r)
for v in ("U", "T", "D0", "A", "AW"):
    for r in rows.get(v, []):
        print(f"{v:4s} first block {r['first_block_us']:8.0f} body {r['first_body_us']:7.0f} | second block {r['second_block_us']:7.0f} "
              f"body {r['second_body_us']:7.0f} | end {[round(e) for e in r['end_us']]} attach {[round(a) for a in r['attach_us']]} "
              f"detach {r['detach_us'] and round(r['detach_us'])} eager {r['eager_before_us']:.0f} | replays first {[round(x) for x in r['first_replay_us']]} "
              f"steady {[round(x) for x in r['replay_us']]} attach-after {r['attach_after_us'] and round(r['attach_after_us'])} warm {r['warm_after_us'] and round(r['warm_after_us'])}")
PY
(cd /tmp && tar -cf - c3 | xz -2 -T8 > "$out/c3.tar.xz")
echo "elapsed $(( $(date +%s) - t0 )) s"
