"""Prepared in session 34 for the next device session, not yet run (issue 30): where does the torch probe's capture
ratio come from? Session 34's call 1 (capture_ratio_probe.py, 3 processes a step) read a capture's body at 1.68-2.20x
the small MLP's synchronized eager step (161-272 us) and 0.87-1.12x the transformers decode step's (3.9-8.0 ms): a
ratio that is not one number. Fitted on both, body = 0.955 x eager + 223 us: a fixed cost per capture rather than a
per-op one. A guess to test: a new graph's private memory pool has no segment yet, so the body's first allocations
call cudaMalloc. One fresh process, one DEPTH of the probe's MLP (4: `graphmode calibrate`'s; 16: four times the ops):
warm-up on a side stream, the step issued eagerly with a synchronize after each, then 5 captures each into a new pool
(as the probe) and 5 into the first graph's pool (`pool=`), each body timed with the allocator's segment count before
and after it (torch.cuda.memory_stats 'segment.all.allocated': cudaMallocs in the body). One JSON line.
Usage: python pool_probe.py DEPTH"""

from __future__ import annotations

import json
import statistics as st
import sys
import time

import torch

depth = int(sys.argv[1])
ns = time.perf_counter_ns
torch.manual_seed(0)
net = torch.nn.Sequential(*[m for _ in range(depth) for m in (torch.nn.Linear(512, 512), torch.nn.ReLU())]).cuda().eval()
x = torch.randn(64, 512, device="cuda")


def step() -> torch.Tensor:
    return torch.tanh(net(x)) * 0.5 + 1.0


def segments() -> int:
    return int(torch.cuda.memory_stats().get("segment.all.allocated", 0))


with torch.no_grad():
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    synced = []
    for _ in range(20):
        t0 = ns()
        step()
        synced.append(ns() - t0)
        torch.cuda.synchronize()
    out: dict[str, object] = {"depth": depth, "eager_synced_us": st.median(synced) / 1e3}
    graphs, keep = [], []
    for mode in ("new_pool", "shared_pool"):
        bodies, mallocs = [], []
        for _ in range(5):
            g = torch.cuda.CUDAGraph()
            pool = graphs[0].pool() if mode == "shared_pool" else None
            with torch.cuda.graph(g, pool=pool):
                s0 = segments()
                b0 = ns()
                keep.append(step())
                bodies.append(ns() - b0)
                mallocs.append(segments() - s0)
            graphs.append(g)
            torch.cuda.synchronize()
        out[mode] = {"bodies_us": [b / 1e3 for b in bodies], "cudamallocs": mallocs,
                     "ratio_later": st.median(bodies[1:]) / st.median(synced)}
print(json.dumps(out))
