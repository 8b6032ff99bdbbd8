"""Session 27 (issue 29): does a capture slow under the one run as the program's own eager loop did?

The one run times a steady eager loop both traced and in an untraced window of the same process
(analyzers.untraced_windows: note eager_untraced_window, its traced and untraced medians). If a capture, CPU-bound work
under the same session, slowed by the same factor, the traced one-time cost divided by that factor would be the
untraced one. Read from recordings of the default `graphmode run` beside the same programs' untraced processes
(script_fidelity.py's results.jsonl with its traces), per graph: the untraced processes' median one-time cost, the
traced one, the bundled calibration's correction, and the traced one over the loop's traced/untraced ratio.

    python capture_scale.py RESULTS.jsonl TRACES_DIR [RESULTS.jsonl TRACES_DIR ...]
Ran on the traces of sessions 25 (calls 2, 3, 5), 26 (call 4) and 27 (call 1): capture_scale.txt.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from one_run import SIZES, truths  # noqa: E402

import graphmode.analyzers.script_analysis as sa  # noqa: E402
from graphmode.analyzers import analyze  # noqa: E402
from graphmode.analyzers.costmodel import find_model  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

seen: list = []
_with_windows = sa.with_windows


def _spy(t, windows):
    out = _with_windows(t, windows)
    seen.extend(n for n in out[1] if n.kind == "eager_untraced_window")
    return out


sa.with_windows = _spy


def one_time(path: Path, workload: str, corrected: bool) -> tuple[dict[str, float], list[float]]:
    seen.clear()
    with load(path) as t:
        choice = find_model(t.meta)
        if not corrected and choice.model is not None:
            choice = dataclasses.replace(choice, model=dataclasses.replace(choice.model, tracer={}))
        a = analyze(t, cost_model=choice)
    ratios = [float(n["traced_ns"]) / float(n["untraced_ns"]) for n in seen if float(n["untraced_ns"]) > 0]
    replayed = sorted((g for g in a.graphs if g.status == "replayed"), key=lambda g: g.graph_id)
    names = [f"b{b}" for b in SIZES] if workload == "vit_batches" else ["graph"]
    out = {n: float(g.break_even.one_time_ns) for n, g in zip(names, replayed)
           if g.break_even is not None and g.break_even.one_time_ns is not None}
    return out, ratios


rows = []
for results, traces in zip(sys.argv[1::2], sys.argv[2::2]):
    recs = [json.loads(line) for line in open(results) if line.strip()]
    for w in sorted({r["workload"] for r in recs}):
        tr = truths(recs, w)
        for p in sorted(Path(traces).glob(f"*{w}-graphmode-*.gmtrace")):
            if not tr:
                continue
            raw, ratios = one_time(p, w, corrected=False)
            fixed, _ = one_time(p, w, corrected=True)
            r = float(np.median(ratios)) if ratios else float("nan")
            for subject, traced in raw.items():
                us = [x[subject]["one_time"] for x in tr if "one_time" in x.get(subject, {})]
                if not us:  # the program's clock times no capture (JAX)
                    continue
                c = fixed.get(subject, float("nan"))
                rows.append((f"{Path(results).parent.name}/{p.name}", subject, float(np.median(us)), traced, c, r,
                             traced / r, max(us) / min(us)))
print("| trace | subject | untraced one-time (ms; max/min of the processes) | traced | ratio | calibration | ratio | "
      "loop traced/untraced | traced / that | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, s, u, tr_, c, r, sc, spread in rows:
    print(f"| {name} | {s} | {u / 1e6:.2f} ({spread:.2f}) | {tr_ / 1e6:.2f} | {tr_ / u:.2f} | {c / 1e6:.2f} | {c / u:.2f} | "
          f"{r:.2f} | {sc / 1e6:.2f} | {sc / u:.2f} |")
for k, i in (("traced", 3), ("calibration", 4), ("scaled", 6)):
    e = np.array([abs(np.log(x[i] / x[2])) for x in rows if np.isfinite(x[i])])
    within = sum(1 for x in rows if np.isfinite(x[i]) and abs(x[i] / x[2] - 1) <= 0.25)
    print(f"{k}: within 25% on {within} of {e.size}; median |log ratio| {np.median(e):.3f}")
