"""Session 30, device call 3: in calls 1-2 graphmode's one-time costs matched the traced process's own clock (0.95-1.00x)
but those processes captured 1.3-2.2x slower than the untraced ones, though each capture ran with CUPTI detached. What
else does the one run leave on during a capture? Session 25's probe (call 4) found a detached session costs a capture
nothing; here PyTorch's allocator history (as the one run records it) and the line stamper (sys.monitoring LINE events
on this script) are added. One process: a timm ViT-small at batch 2, torch.cuda.graph captures after two warm-up
captures, in rounds of: U (nothing), H (history on), T (stamper on), HT (both), S (a session attached then detached just
before, as an untraced capture is), HTS (all: the one run's untraced capture). Per capture: the block (`with
torch.cuda.graph`) and its body (the forward inside it), us. One JSON line: per state, the rounds' values."""

from __future__ import annotations

import json
import time

import timm
import torch

from graphmode.tracer import allocator_history
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config
from graphmode.tracer.script import start_stamper

cfg = single_config()
kw = dict(session_kwargs(cfg), graph_trace=False)
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
ns = time.perf_counter_ns
graphs = []  # kept alive: each capture its own pool, as a program with a graph per shape has


def capture() -> tuple[float, float]:
    g = torch.cuda.CUDAGraph()
    t0 = ns()
    with torch.cuda.graph(g):
        b0 = ns()
        model(x)
        b1 = ns()
    t1 = ns()
    graphs.append(g)
    return (t1 - t0) / 1e3, (b1 - b0) / 1e3


def state(name: str) -> tuple[float, float]:
    history, stamp, session = "H" in name, "T" in name, "S" in name
    if history:
        allocator_history.enable(torch)
    stamper = start_stamper(cfg) if stamp else None
    if session:
        s = CuptiSession(**kw)
        s.start()
        model(x)
        torch.cuda.synchronize()
        s.stop()
    try:
        return capture()
    finally:
        if stamper is not None:
            stamper.stop()
        if history:
            allocator_history.disable(torch)


states = ("U", "H", "T", "HT", "S", "HTS")
res: dict[str, list[list[float]]] = {k: [] for k in states}
with torch.no_grad():
    for _ in range(5):
        model(x)
    torch.cuda.synchronize()
    capture(), capture()
    for _ in range(3):
        for k in states:
            torch.cuda.synchronize()
            res[k].append([round(v) for v in state(k)])
print(json.dumps(res))
