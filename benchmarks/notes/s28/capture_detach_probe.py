"""Session 28 (issue 29): why the one run's untraced capture (call 1: CUPTI detached just before the process's first
capture_begin, attached again just before its capture_end) read a decode step's one-time cost 2.4x its traced and
corrected figure. One fresh process per variant; the process's first capture (and its second) of a timm ViT-small
forward at batch 2, timed by the host clock: the whole `with torch.cuda.graph` block, the forward inside it (the
capture's body) and PyTorch's capture_end (EndCapture, instantiation, destroying the captured graph).

Variants: U (CUPTI never attached); T (the one run's session attached throughout, GRAPH_TRACE on); D0 (attached, 30
eager calls traced, detached just before the capture); D20 (the same, then 20 eager calls detached before the capture);
R0 and R20 (D0 and D20, attached again just before capture_end, without GRAPH_TRACE, adopting the graph: what call 1
ran); RW (R0, then a few CUDA calls of graphmode's own right after attaching, before capture_end: does the new session's
first work land there? It recorded an event on the capturing stream, which CUDA refused: call 2's RW processes failed).
Call 3: A (D0, attached again only after the block, the capture's end and instantiation untraced too) and AW (A, then
graphmode's own empty graph created, instantiated, launched and destroyed, and the context synchronized, right after
attaching: does that take the new session's first costs off the program's next calls?). Every variant also times the
graph's first replay and the median of 5 more (launch and synchronize). Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import timm
import torch

from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

ns = time.perf_counter_ns
variant = sys.argv[1]
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
stream = torch.cuda.Stream()
kw = session_kwargs(single_config())
state: dict = {"session": None, "attach_at_end": False, "end_us": [], "attach_us": [], "warm_us": []}


def attach(graph_trace: bool = True) -> None:
    s = CuptiSession(**dict(kw, graph_trace=graph_trace, adopt_graphs=not graph_trace))
    s.start()
    state["session"] = s


def detach() -> None:
    state["session"].stop()
    state["session"] = None


def warm() -> None:
    """graphmode's own CUDA calls right after attaching (RW): a driver query, an event recorded and synchronized."""
    from cuda.bindings import driver as cu

    cu.cuCtxGetDevice()
    e = torch.cuda.Event()
    e.record()
    e.synchronize()


def warm_graph() -> None:
    """graphmode's own graph work right after attaching after the block (AW): an empty graph created, instantiated,
    launched on a stream of its own and destroyed; the context synchronized."""
    from cuda.bindings import driver as cu

    err, g = cu.cuGraphCreate(0)
    err, n = cu.cuGraphAddEmptyNode(g, None, 0)
    err, ge = cu.cuGraphInstantiate(g, 0)
    err, st = cu.cuStreamCreate(1)
    cu.cuGraphLaunch(ge, st)
    cu.cuStreamSynchronize(st)
    cu.cuGraphExecDestroy(ge)
    cu.cuGraphDestroy(g)
    cu.cuStreamDestroy(st)
    cu.cuCtxSynchronize()


CUDAGraph = torch.cuda.CUDAGraph
end = CUDAGraph.capture_end


def capture_end(graph, *a, **k):
    if state["attach_at_end"]:
        state["attach_at_end"] = False
        t0 = ns()
        attach(graph_trace=False)
        if variant == "RW":
            t1 = ns()
            warm()
            state["warm_us"].append((ns() - t1) / 1e3)
        state["attach_us"].append((ns() - t0) / 1e3)
    t0 = ns()
    out = end(graph, *a, **k)
    state["end_us"].append((ns() - t0) / 1e3)
    return out


CUDAGraph.capture_end = capture_end


def eager(n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = ns()
        model(x)
        torch.cuda.synchronize()
        out.append((ns() - t0) / 1e3)
    return out


def capture() -> dict:
    torch.cuda.synchronize()
    g = CUDAGraph()
    t0 = ns()
    with torch.cuda.graph(g, stream=stream):
        b0 = ns()
        model(x)
        b1 = ns()
    t1 = ns()
    attach_us = warm_us = None
    if state.pop("attach_after_block", False):
        a0 = ns()
        attach(graph_trace=False)
        a1 = ns()
        attach_us = (a1 - a0) / 1e3
        if variant == "AW":
            warm_graph()
            warm_us = (ns() - a1) / 1e3
    replays = []
    for _ in range(6):
        r0 = ns()
        g.replay()
        torch.cuda.synchronize()
        replays.append((ns() - r0) / 1e3)
    return {"block_us": (t1 - t0) / 1e3, "body_us": (b1 - b0) / 1e3, "graph": g, "first_replay_us": replays[0],
            "replay_us": float(np.median(replays[1:])), "attach_after_us": attach_us, "warm_after_us": warm_us}


with torch.no_grad():
    eager(5)  # cuBLAS, kernels loaded, untraced
    if variant != "U":
        attach()
    before = eager(30)
    after: list[float] = []
    d_us = None
    if variant in ("D0", "D20", "R0", "R20", "RW", "A", "AW"):
        t0 = ns()
        detach()
        d_us = (ns() - t0) / 1e3
        if variant in ("D20", "R20"):
            after = eager(20)
        state["attach_at_end"] = variant.startswith("R")
        state["attach_after_block"] = variant.startswith("A")
    first = capture()
    second = capture()
    if state["session"] is not None:
        detach()
print(json.dumps({"variant": variant, "first_block_us": first["block_us"], "first_body_us": first["body_us"],
                  "second_block_us": second["block_us"], "second_body_us": second["body_us"],
                  "first_replay_us": [first["first_replay_us"], second["first_replay_us"]],
                  "replay_us": [first["replay_us"], second["replay_us"]], "attach_after_us": first["attach_after_us"],
                  "warm_after_us": first["warm_after_us"],
                  "end_us": state["end_us"], "attach_us": state["attach_us"], "warm_us": state["warm_us"],
                  "detach_us": d_us, "eager_before_us": float(np.median(before)),
                  "eager_after_us": float(np.median(after)) if after else None}))
