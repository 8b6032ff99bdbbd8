"""Session 31: the table of after_detach_probe.py's lines (calls 1-4). Per process: the mode, its eager forward before
the session (E0, median of 3, us), the untraced capture's body (U), the first capture's body after the detach (D) and
the second (D2) against U and E0, what ran after the detach (first and last, against E0), what stopping took, and the
CPUs the main thread ran on (call 2 on: before the session, attached, after the stop, after the mode, after D, after
D2). Then per mode the median D/U. Usage: python table.py FILE.jsonl..."""

from __future__ import annotations

import json
import statistics as st
import sys
from collections import defaultdict

by_mode: dict[str, list[float]] = defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        e0 = st.median(x[0] for x in r["E0"])
        u, d, d2 = r["U"]["body"][0], r["D"]["body"][0], r["D2"]["body"][0]
        after = [a[0] for a in r["after"]]
        first = f"{after[0] / e0:4.2f}" if after else "   -"
        last = f"{after[-1] / e0:4.2f}" if len(after) > 1 else "   -"
        by_mode[r["mode"]].append(d / u)
        print(f"{r['mode']:8s} E0 {e0:5.0f} U {u:5d} D/U {d / u:4.2f} D2/U {d2 / u:4.2f} D/E0 {d / e0:4.2f} "
              f"after {first} {last} stop {r['stop_us'] / 1e3:3.0f} ms cpus {r.get('cpus', '')}")
print()
for mode, ratios in by_mode.items():
    print(f"{mode:8s} D/U median {st.median(ratios):4.2f} of {len(ratios)}: {' '.join(f'{x:4.2f}' for x in ratios)}")
