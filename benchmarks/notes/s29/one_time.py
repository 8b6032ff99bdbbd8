"""Session 28: each graph's one-time cost in call 1's traces (`graphmode run`, with and without the untraced capture)
against the untraced processes' own clock (benchmarks/one_run.truths: capture block + first replay - steady replay,
median of the processes). Runs at 4feea20 (GraphCost.capture_untraced went with the experiment).
Usage: python one_time.py RESULTS.jsonl TRACE..."""

from __future__ import annotations

import json
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from one_run import truths  # noqa: E402

from graphmode.analyzers import analyze  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

recs = [json.loads(line) for line in open(sys.argv[1])]
truth = {(w, s): [p[s]["one_time"] for p in truths(recs, w)] for w, subjects in (("hf_graph", ("graph",)),
         ("vit_batches", ("b1", "b2", "b4", "b8"))) for s in subjects}
print("untraced one-time (ms):", {f"{w} {'b1' if s == 'graph' else s}": [round(x / 1e6, 2) for x in v]
                                  for (w, s), v in truth.items()})
for f in sys.argv[2:]:
    a = analyze(load(f))
    w = f.rsplit("/", 1)[-1].split("-")[0]
    gs = sorted([g for g in a.graphs if g.cost is not None], key=lambda g: g.graph_id)
    out = []
    for g, s in zip(gs, ["graph"] if w == "hf_graph" else ["b1", "b2", "b4", "b8"]):
        tm = st.median(truth[(w, s)])
        out.append(f"{'b1' if s == 'graph' else s} {g.cost.total_ns / 1e6:.2f}/{tm / 1e6:.2f}={g.cost.total_ns / tm:.2f}"
                   + ("*" if g.cost.capture_untraced else ""))
    print(f.rsplit("/", 1)[-1], " ".join(out))
print("* captured untraced")
