"""Session 30: the one run's eager level from its untraced windows (W) against the same traces analysed as if they had
no window (the traced iterations with the tracer's calibrated cost taken off: C), and their geometric mean, each against
the programs' untraced processes' median (benchmarks/one_run_bounds.py's rows). Usage:
window_vs_corrected.py LABEL RESULTS.jsonl TRACES_DIR [...]"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
import one_run_bounds  # noqa: E402

import graphmode.analyzers.run as run_module  # noqa: E402


def eager_rows(triples: list[str]) -> dict[tuple[str, str, str], dict]:
    out = {}
    for i in range(0, len(triples), 3):
        for r in one_run_bounds.rows_of(triples[i], Path(triples[i + 1]), Path(triples[i + 2])):
            if "eager_ratio" in r:
                out[(r["call"], r["trace"], r["subject"])] = r
    return out


def main(argv: list[str]) -> int:
    with_windows = eager_rows(argv)
    kept = run_module.window_periods
    run_module.window_periods = lambda *a, **k: []  # the analysis as if the run had no window
    try:
        without = eager_rows(argv)
    finally:
        run_module.window_periods = kept
    pairs = [(k, w, without[k]) for k, w in with_windows.items() if w.get("eager_source") == "window" and k in without]
    est: dict[str, list[float]] = {"window": [], "corrected": [], "geometric mean": []}
    for k, w, c in pairs:
        est["window"].append(w["eager_ratio"])
        est["corrected"].append(c["eager_ratio"])
        est["geometric mean"].append(math.sqrt(w["eager_ratio"] * c["eager_ratio"]))
        print(json.dumps({"key": k, "prediction": bool(w.get("prediction")), "window": round(w["eager_ratio"], 3),
                          "corrected": round(c["eager_ratio"], 3), "corrected_source": c.get("eager_source")}))
    for name, v in est.items():
        print(f"{name}: {len(v)} readings, within 15% {sum(abs(x - 1) <= 0.15 for x in v)}, within 25% "
              f"{sum(abs(x - 1) <= 0.25 for x in v)}, median |log ratio| {statistics.median(abs(math.log(x)) for x in v):.3f}, "
              f"range {min(v):.2f}-{max(v):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
