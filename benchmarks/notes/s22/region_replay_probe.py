"""Session 22: what `graphmode.trace()` now does to the replays it records. A region folds each replay from its nodes'
records (tracer.run_configs.region_config: GRAPH_TRACE crashed the replay of a graph instantiated before CUPTI
attached). Does recording every node slow the replay, against GRAPH_TRACE's one record a replay?

Mode 'region' (one process): a timm ViT-small at batch 1 captured with torch.cuda.graph, untraced; 5 blocks of 30
replays untraced, 5 inside graphmode.trace() (the trace written to argv[2]), 5 untraced again.
Mode 'graph_trace' (another process): the one run's CUPTI session (GRAPH_TRACE) attached before the capture; 5 blocks
traced, the session stopped, 5 blocks untraced. A block: 30 replays then one synchronize; its figure the mean per
replay. Prints one JSON line."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import timm
import torch

import graphmode
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config


def capture():
    m = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
    x = torch.randn(1, 3, 224, 224, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        m(x)
    return g


def blocks(g, n=5, calls=30):
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            g.replay()
        torch.cuda.synchronize()
        out.append((time.perf_counter_ns() - t0) / calls / 1e3)
    return out


mode = sys.argv[1]
res: dict = {"mode": mode}
if mode == "region":
    g = capture()
    res["untraced_before"] = blocks(g)
    with graphmode.trace(sys.argv[2]):
        res["traced"] = blocks(g)
    res["untraced_after"] = blocks(g)
else:
    sess = CuptiSession(**session_kwargs(single_config()))
    sess.start()
    g = capture()
    res["traced"] = blocks(g)
    sess.stop()
    res["untraced_after"] = blocks(g)
res["median_us"] = {k: round(float(np.median(v)), 1) for k, v in res.items() if isinstance(v, list)}
print(json.dumps(res), flush=True)
