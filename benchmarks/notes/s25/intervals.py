"""Session 25: per graphed workload and subject, graphmode's break-even [95%] (the default `graphmode run`) per trace
against each untraced process's break-even (benchmarks/script_fidelity.py records).
Usage: python benchmarks/notes/s25/intervals.py RESULTS.jsonl TRACES_DIR [RESULTS.jsonl TRACES_DIR ...]"""
import sys, json, glob, math
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from one_run import truths, SIZES
from graphmode.analyzers import analyze
from graphmode.tracer.store import load
held = total = 0
for res, tdir in zip(sys.argv[1::2], sys.argv[2::2]):
    recs = [json.loads(l) for l in open(res) if l.strip()]
    for w in sorted({r["workload"] for r in recs}):
        tr = truths(recs, w)
        traces = sorted(glob.glob(f"{tdir}/{w}-graphmode-*.gmtrace"))
        if not tr or not traces or w in ("jax",):
            continue
        for p in traces:
            with load(p) as t:
                a = analyze(t)
            if w == "vit_batches":
                gs = sorted((g for g in a.graphs if g.status == "replayed"), key=lambda g: g.graph_id)
                subj = {f"b{b}": g.break_even for b, g in zip(SIZES, gs)}
            else:
                g = next((g for g in a.graphs if g.status == "replayed"), None)
                subj = {"graph": g.break_even if g else None}
            for s, be in subj.items():
                if be is None: continue
                hi = math.inf if be.interval_high_never else be.interval_high
                truth = [x[s].get("break_even") for x in tr if s in x and x[s].get("break_even")]
                lo = be.interval_low if be.interval_low is not None else -1
                hi = hi if hi is not None else math.inf
                ok = [lo <= v <= hi for v in truth]
                held += sum(ok); total += len(ok)
                print(f"{w:20s} {s:5s} {p.split('/')[-1][-8:-8+2]} {be.replays} ({be.reason.kind if be.reason else ''}) [{be.interval_low}, {'never' if be.interval_high_never else be.interval_high}] truth {truth} {'held' if all(ok) else 'MISS'}")
print(f"held {held} of {total}")
