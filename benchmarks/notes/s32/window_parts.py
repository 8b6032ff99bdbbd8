"""Session 32: the parts of each untraced capture's `with torch.cuda.graph` block in a one-run trace, in ms: before the
detach (PyTorch's synchronize and empty_cache, traced), the detach, the capture's body (capture_begin to capture_end),
capture_end (the instantiation), the attach again with graphmode's own graph, and after it; then the block less the
detach and the attach (what the program's own clock of the block reads, less graphmode's gaps).
Usage: python window_parts.py TRACE..."""

from __future__ import annotations

import sys

from graphmode.analyzers.torch_windows import run_entry, torch_windows
from graphmode.tracer.store import load

for path in sys.argv[1:]:
    trace = load(path)
    pass_id = next((p for p in range(4) if run_entry(trace, p).get("untraced_captures")), None)
    if pass_id is None:
        print(path, "no untraced capture")
        continue
    blocks = [w for w in torch_windows(trace, pass_id, True) if w.kind == "block"]
    for c in run_entry(trace, pass_id)["untraced_captures"]["captures"]:
        w = next(w for w in blocks if w.start_ns <= c["detach_start_ns"] <= w.end_ns)
        parts = {"pre": c["detach_start_ns"] - w.start_ns, "detach": c["begin_ns"] - c["detach_start_ns"],
                 "body": c["body_end_ns"] - c["begin_ns"], "capture_end": c["end_ns"] - c["body_end_ns"],
                 "attach": c["attach_end_ns"] - c["end_ns"], "post": w.end_ns - c["attach_end_ns"]}
        parts["block_less_gaps"] = w.end_ns - w.start_ns - parts["detach"] - parts["attach"]
        print(path.rsplit("/", 1)[-1], " ".join(f"{k} {v / 1e6:.2f}" for k, v in parts.items()))
