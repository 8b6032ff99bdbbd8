"""Where `graphmode run`'s own time went (issue 29): reads the JSON lines GRAPHMODE_PHASES=FILE wrote (tracer/phases.py)
and prints each step's seconds, from `--start` (Unix seconds when the command was started; default: the first mark) to
`--end` (when it ended; default: the last mark). Usage: python benchmarks/run_phases.py FILE [--start T] [--end T]"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", type=Path)
    ap.add_argument("--start", type=float)
    ap.add_argument("--end", type=float)
    a = ap.parse_args()
    marks = sorted((json.loads(line) for line in a.file.read_text().splitlines() if line.strip()), key=lambda m: m["t"])
    points = ([(a.start, "command started")] if a.start else []) + [(m["t"], m["phase"]) for m in marks] + \
        ([(a.end, "command ended")] if a.end else [])
    total = points[-1][0] - points[0][0]
    for (t0, p0), (t1, p1) in zip(points, points[1:]):
        print(f"{t1 - t0:8.2f} s  {100 * (t1 - t0) / total:5.1f}%  {p0} -> {p1}")
    print(f"{total:8.2f} s  total")


if __name__ == "__main__":
    main()
