"""Session 30: does the CPU's speed during an untraced window explain what the window read? For each window of the
given one-run traces: its loop's median untraced period, the median of the run's CPU-speed samples (the fixed Python
loop, tracer.line_stamps) inside the window, the run's fastest tenth and median sample; beside the untraced eager-only
processes' median of the same loop (script_fidelity's results.jsonl). Usage: window_speed.py RESULTS TRACE..."""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from eager_only import PAIRS  # noqa: E402

from graphmode.analyzers.cpu_speed import samples  # noqa: E402
from graphmode.analyzers.stamps import line_stamps  # noqa: E402
from graphmode.analyzers.untraced_windows import window_periods  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402


def truth_eager(results: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for line in results.read_text().splitlines():
        r = json.loads(line)
        if r.get("config") == "untraced" and r.get("exit_code") == 0 and r["workload"] in PAIRS:
            out.setdefault(r["workload"], []).append(r["truth"])
    return out


def main(argv: list[str]) -> int:
    truths = truth_eager(Path(argv[0]))
    print(json.dumps({"columns": ["trace", "window", "anchor", "periods", "window_ms", "untraced_ms", "window/untraced",
                                  "sample_in_window/fast", "sample_in_window/run_median", "scaled_fast/untraced",
                                  "scaled_median/untraced"]}))
    for path in argv[1:]:
        name = Path(path).name.split(".")[0]
        workload = re.match(r"(\w+)-graphmode", name)[1]
        eager_keys = sorted({k for t in truths.get(workload, []) for k in t if re.match(r"eager(_b\d+)?_ns$", k)},
                            key=lambda k: int(re.findall(r"\d+", k)[0]) if re.findall(r"\d+", k) else 0)
        with load(path) as trace:
            p = next(p for p in trace.passes if p.name == "single").pass_id
            ts, ns = samples(trace, p)
            fast, med = (float(np.percentile(ns, 10)), float(np.median(ns))) if ns.size else (np.nan, np.nan)
            wins = [(w, per) for w, per in window_periods(trace, p, lambda q: line_stamps(trace, q)) if per.size >= 5]
            for i, (w, per) in enumerate(wins):
                inside = ns[(ts >= w.start_ns) & (ts <= w.end_ns)]
                s = float(np.median(inside)) if inside.size else np.nan
                key = eager_keys[i] if i < len(eager_keys) else None
                truth = statistics.median(t[key] for t in truths[workload] if key in t) if key else np.nan
                win = float(np.median(per))
                print(json.dumps([name, i, w.anchor, int(per.size), round(win / 1e6, 3), round(truth / 1e6, 3),
                                  round(win / truth, 3), round(s / fast, 3), round(s / med, 3),
                                  round(win * fast / s / truth, 3), round(win * med / s / truth, 3)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
