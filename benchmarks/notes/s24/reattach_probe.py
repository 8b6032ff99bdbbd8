"""Session 24 (issues 29 and 30), after call 1: a paused session keeps most of CUPTI's cost (as session 22 found for
activity kinds; here also with the callback domains off or the subscriber dropped). Only detaching (cuptiFinalize)
gives the untraced speed back. Could the one traced run detach for a stretch of a loop and attach again?

Session 22 dropped that because a graph instantiated while CUPTI was detached crashed on its first replay once CUPTI
attached again with GRAPH_TRACE on. A session attached again without GRAPH_TRACE (replays folded from their nodes'
records, as `graphmode.trace()` does) did not crash there. This probe asks what the trace would need:

  1. Do CUPTI's stream ids, context ids and correlation ids carry on across a detach and attach (the decoder joins
     API records to kernels by correlation id, the analysis finds steps per stream)?
  2. Is the detached stretch as fast as the program before CUPTI ever attached (per block of an 8-layer MLP forward at
     batch 1 on the default stream and on a side stream)?
  3. Does a graph captured while detached replay under the next session without GRAPH_TRACE (its replays' kernels
     recorded)?
  4. What stop() (flush, detach) and start() take.

Cycles: U (never attached) | S1 (the one run's session) | D1 (detached) | S2 (attached again, graph_trace=False) |
D2 | S3 ... 4 sessions, 3 detached stretches; a graph is captured in D2 and replayed in S3 and after.
Prints one JSON line."""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import torch

from graphmode.tracer.cupti_records import cupti_module, records_by_kind
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

CALLS, BLOCKS = 100, 5

mlp = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.LayerNorm(256))]).cuda()
x = torch.randn(1, 256, device="cuda")
side = torch.cuda.Stream()
torch.cuda.synchronize()


def block() -> float:
    """Median per call of CALLS forwards, half on the default stream, half on the side stream."""
    ts = []
    with torch.no_grad():
        for i in range(CALLS):
            t0 = time.perf_counter_ns()
            if i % 2:
                with torch.cuda.stream(side):
                    mlp(x)
            else:
                mlp(x)
            ts.append(time.perf_counter_ns() - t0)
    torch.cuda.synchronize()
    return float(np.median(ts))


def blocks() -> list[float]:
    return [block() for _ in range(BLOCKS)]


cupti = cupti_module()
K = cupti.ActivityKind
out: dict[str, object] = {"blocks_us": {}, "sessions": [], "stop_ms": [], "start_ms": [], "errors": []}
out["blocks_us"]["U"] = [round(b / 1e3, 1) for b in blocks()]
g = None
gout = None
for n in range(4):
    kw = session_kwargs(single_config())
    if n:
        kw = dict(kw, graph_trace=False)
    s = CuptiSession(**kw)
    t0 = time.perf_counter_ns()
    s.start()
    out["start_ms"].append(round((time.perf_counter_ns() - t0) / 1e6, 1))
    out["blocks_us"][f"S{n + 1}"] = [round(b / 1e3, 1) for b in blocks()]
    replayed = 0
    if g is not None:
        for _ in range(20):
            g.replay()
        torch.cuda.synchronize()
        replayed = 20
    t0 = time.perf_counter_ns()
    raw = s.stop()
    out["stop_ms"].append(round((time.perf_counter_ns() - t0) / 1e6, 1))
    recs = records_by_kind(raw.chunks)
    kern = recs.get(int(K.CONCURRENT_KERNEL))
    rt = recs.get(int(K.RUNTIME))
    dr = recs.get(int(K.DRIVER))
    gt = recs.get(int(K.GRAPH_TRACE))
    corr = np.concatenate([a["correlation_id"] for a in (rt, dr) if a is not None])
    out["sessions"].append({
        "kernels": int(kern.size) if kern is not None else 0,
        "kernel_streams": sorted({int(v) for v in kern["stream_id"]}) if kern is not None else [],
        "kernel_contexts": sorted({int(v) for v in kern["context_id"]}) if kern is not None else [],
        "kernel_graph_ids": sorted({int(v) for v in kern["graph_id"]}) if kern is not None and "graph_id" in kern.dtype.names else [],
        "kernel_correlation": [int(kern["correlation_id"].min()), int(kern["correlation_id"].max())] if kern is not None else [],
        "api_correlation": [int(corr.min()), int(corr.max())] if corr.size else [],
        "graph_spans": int(gt.size) if gt is not None else 0,
        "replays": replayed,
        "resource_events": len(raw.resource_events),
        "callback_errors": raw.callback_errors[:5],
        "dropped": raw.dropped,
    })
    if n < 3:
        out["blocks_us"][f"D{n + 1}"] = [round(b / 1e3, 1) for b in blocks()]
        if n == 1:  # a graph captured while detached
            g = torch.cuda.CUDAGraph()
            with torch.no_grad():
                for _ in range(3):
                    mlp(x)
                torch.cuda.synchronize()
                with torch.cuda.graph(g):
                    gout = mlp(x)
            torch.cuda.synchronize()
if g is not None:
    ref = mlp(x)
    g.replay()
    torch.cuda.synchronize()
    out["graph_output_matches"] = bool(torch.allclose(gout, ref))
out["blocks_median_us"] = {k: round(float(np.median(v)), 1) for k, v in out["blocks_us"].items()}
print(json.dumps(out), flush=True)
