"""Session 29: each `graphmode run` process's graphs captured untraced (the decode step's and ResNet-18's one, the ViT's
four in the order of its batch sizes), graphmode's one-time cost beside the same process's own clock (the program's
capture block less graphmode's detach, attach and own graph, which meta.runs[].untraced_captures holds, plus its first
replay less its steady replay), and beside the untraced processes' median (benchmarks/one_run.truths).
Usage: python own_clock.py RESULTS.jsonl TRACE..."""

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
SUBJECTS = {"hf_graph": ["graph"], "resnet": ["graph"], "vit_batches": ["b1", "b2", "b4", "b8"]}
for f in sys.argv[2:]:
    w = f.rsplit("/", 1)[-1].split("-")[0]
    if w not in SUBJECTS:
        continue
    proc = int(f.rsplit("-", 1)[-1].split(".")[0])
    t = load(f)
    a = analyze(t)
    caps = sorted(t.meta["runs"][0]["untraced_captures"]["captures"], key=lambda c: c["begin_ns"])
    # the traced process's own clock: its record read as an untraced one's
    config = f.rsplit("/", 1)[-1].rsplit("-", 1)[0].split("-", 1)[1]  # WORKLOAD-CONFIG-NN.gmtrace (session 34)
    mine = truths([dict(r, config="untraced") for r in recs if r["config"] == config and r["proc"] == proc], w)
    for subject, c in zip(SUBJECTS[w], caps):
        g = next((g for g in a.graphs if g.graph_id == c["graph_id"]), None)
        if g is None or g.cost is None:
            continue
        # the detach and the attach, widened over PyTorch's hooks' memory samples where the trace has them (session 33)
        start, end = c.get("own_start_ns", c["detach_start_ns"]), c.get("own_end_ns", c["attach_end_ns"])
        gaps = (c["begin_ns"] - start) + (end - c["end_ns"])
        truth = st.median(p[subject]["one_time"] for p in truths(recs, w))
        line = f"{f.rsplit('/', 1)[-1]} {subject}: graphmode {g.cost.total_ns / 1e6:.2f} ms"
        if mine:
            clock = mine[0][subject]["one_time"] - gaps
            line += f", own clock {clock / 1e6:.2f} ms (ratio {g.cost.total_ns / clock:.2f})"
        line += (f", untraced median {truth / 1e6:.2f} ms (ratio {g.cost.total_ns / truth:.2f}); parts: capture "
                 f"{(g.cost.build_ns or 0) / 1e6:.2f} instantiate {(g.cost.instantiate_ns or 0) / 1e6:.2f} framework "
                 f"{(g.cost.framework_ns or 0) / 1e6:.2f} first-replay excess {(g.cost.first_launch_excess_ns or 0) / 1e6:.2f};"
                 f" gaps {gaps / 1e6:.1f} ms")
        print(line)
