"""Session 34: would the first iteration after a window's detach price the capture's slowdown after its own detach?
Per graph of each default one-run trace: graphmode's one-time cost against the untraced processes' median, and again
less the same process's window's first-iteration excess (its first period less the detach and the window's median
period). Not adopted: it helps the decode step and misses the ViT's (benchmarks/notes/s34/README.md).
Usage: python post_detach_correction.py RESULTS.jsonl TRACES_DIR [RESULTS.jsonl TRACES_DIR ...]"""

import glob
import json
import statistics as st
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from one_run import truths  # noqa: E402

from graphmode.analyzers import analyze  # noqa: E402
from graphmode.analyzers.stamps import line_stamps  # noqa: E402
from graphmode.analyzers.untraced_windows import untraced_windows  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402

SUBJECTS = {"hf_graph": ["graph"], "vit_batches": ["b1", "b2", "b4", "b8"]}
args = sys.argv[1:]
for results, traces in zip(args[::2], args[1::2]):
    recs = [json.loads(line) for line in open(results)]
    for f in sorted(glob.glob(traces + "/*")):
        w = f.split("/")[-1].split("-")[0]
        if w not in SUBJECTS:
            continue
        t = load(f)
        a = analyze(t)
        s = line_stamps(t, 0)
        ts, loc = s["ts_ns"], s["loc"]
        excess = []  # per window, in order: its first period less the detach and its median period (ms)
        for win in untraced_windows(t, 0):
            periods = np.diff(ts[(loc == win.anchor) & (ts >= win.start_ns) & (ts <= win.end_ns)])
            excess.append((periods[0] - win.detach_ns - np.median(periods[1:])) / 1e6)
        caps = sorted(t.meta["runs"][0]["untraced_captures"]["captures"], key=lambda c: c["begin_ns"])
        for subject, c, e in zip(SUBJECTS[w], caps, excess):
            g = next(g for g in a.graphs if g.graph_id == c["graph_id"])
            truth = st.median(p[subject]["one_time"] for p in truths(recs, w)) / 1e6
            gm = g.cost.total_ns / 1e6
            print(f"{f.split('/')[-1][:24]} {subject}: graphmode {gm:.2f} ms, untraced median {truth:.2f} (ratio "
                  f"{gm / truth:.2f}); first-iteration excess {e:.2f}, corrected ratio {(gm - e) / truth:.2f}")
