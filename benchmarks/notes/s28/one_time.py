"""Session 28: each graph's one-time cost in call 1's traces (`graphmode run`, with and without the untraced capture)
against the untraced processes' own clock (capture block + first replay - steady replay, median of the processes).
Usage: python one_time.py RESULTS.jsonl TRACE..."""

from __future__ import annotations

import json
import statistics as st
import sys

from graphmode.analyzers import analyze
from graphmode.tracer.store import load

truth: dict[tuple[str, int], list[float]] = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["config"] != "untraced":
        continue
    for t in r["truths"]:
        if r["workload"] == "hf_graph":
            truth.setdefault(("hf_graph", 1), []).append(t["capture_block_ns"] + t["first_replay_ns"] - t["graph_ns"])
        else:
            for b in (1, 2, 4, 8):
                truth.setdefault(("vit_batches", b), []).append(
                    t[f"capture_block_b{b}_ns"] + t[f"first_replay_b{b}_ns"] - t[f"graph_b{b}_ns"])
print("untraced one-time (ms):", {f"{w} b{b}": [round(x / 1e6, 2) for x in v] for (w, b), v in truth.items()})
for f in sys.argv[2:]:
    a = analyze(load(f))
    w = f.rsplit("/", 1)[-1].split("-")[0]
    gs = sorted([g for g in a.graphs if g.cost is not None], key=lambda g: g.graph_id)
    out = []
    for g, b in zip(gs, [1] if w == "hf_graph" else [1, 2, 4, 8]):
        tm = st.median(truth[(w, b)])
        out.append(f"b{b} {g.cost.total_ns / 1e6:.2f}/{tm / 1e6:.2f}={g.cost.total_ns / tm:.2f}"
                   + ("*" if g.cost.capture_untraced else ""))
    print(f.rsplit("/", 1)[-1], " ".join(out))
print("* captured untraced")
