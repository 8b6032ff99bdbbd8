"""Session 30, device call 4: call 3 found a process's first capture after a CUPTI session detached up to 1.7x its
untraced captures (capture_parts_probe.py, state S, round 1). Does graphmode's own graph work right after the detach
take that cost, as its own empty graph does after an attach? A fresh process: a timm ViT-small at batch 2, warmed up and
captured twice untraced (U, the last), then a session attached, a forward, the session detached, then MODE: 'none';
'graph' (tracer.script._own_graph: an empty graph created, instantiated, launched, destroyed); 'capture' (an empty
stream capture of graphmode's own on its own stream, relaxed mode, instantiated and launched, then _own_graph); then
the program's capture (D). One JSON line: U and D, block and body (us), and what MODE took."""

from __future__ import annotations

import json
import sys
import time

import timm
import torch
from cuda.bindings import driver as cu

from graphmode.tracer.cuda_util import check
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config
from graphmode.tracer.script import _own_graph

mode = sys.argv[1]
kw = dict(session_kwargs(single_config()), graph_trace=False)
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
ns = time.perf_counter_ns
graphs = []


def capture() -> list[int]:
    g = torch.cuda.CUDAGraph()
    t0 = ns()
    with torch.cuda.graph(g):
        b0 = ns()
        model(x)
        b1 = ns()
    t1 = ns()
    graphs.append(g)
    return [round((t1 - t0) / 1e3), round((b1 - b0) / 1e3)]


def own_capture() -> None:
    stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate")
    try:
        check(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "begin")
        graph = check(cu.cuStreamEndCapture(stream), "end")
        exe = check(cu.cuGraphInstantiate(graph, 0), "instantiate")
        check(cu.cuGraphLaunch(exe, stream), "launch")
        check(cu.cuStreamSynchronize(stream), "sync")
        cu.cuGraphExecDestroy(exe)
        cu.cuGraphDestroy(graph)
    finally:
        cu.cuStreamDestroy(stream)


with torch.no_grad():
    for _ in range(5):
        model(x)
    torch.cuda.synchronize()
    capture(), capture()
    u = capture()
    s = CuptiSession(**kw)
    s.start()
    model(x)
    torch.cuda.synchronize()
    s.stop()
    t0 = ns()
    if mode in ("graph", "capture"):
        if mode == "capture":
            own_capture()
        _own_graph()
    warm = round((ns() - t0) / 1e3)
    d = capture()
print(json.dumps({"mode": mode, "U": u, "D": d, "warm_us": warm}))
