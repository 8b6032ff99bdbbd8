"""Session 34, call 2: detach_probe.py's lines per mode, each capture against the same process's own later capture D
and its untraced eager step E1 (processes ran 1.5x apart in speed, E0 traced 3.2-6.2 ms a step, so only within-process
ratios compare). Usage: python detach_table.py detach.jsonl"""

import json
import statistics as st
import sys
from collections import defaultdict

rows = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[r["mode"]].append(r)
print("| mode | processes | U block / D block | U body / D body | U body / E1 | E1 (us) |")
print("|---|---|---|---|---|---|")
for mode in ("at_begin", "sleep", "own", "step", "early_through", "control"):
    rs = rows.get(mode, [])
    if not rs:
        continue

    def span(vals: list[float]) -> str:
        return f"{st.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})"

    print(f"| {mode} | {len(rs)} | {span([r['U'][0] / r['D'][0] for r in rs])} | {span([r['U'][1] / r['D'][1] for r in rs])}"
          f" | {span([r['U'][1] / r['E1'] for r in rs])} | {span([float(r['E1']) for r in rs]).replace('.00', '')} |")
