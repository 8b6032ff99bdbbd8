"""Session 29 (issue 29), device call 1: what a session attached after a capture block records of the graph that block
made with CUPTI detached (session 28's call 3, variant AW: attached after the block, graphmode's own empty graph run
first). One process: a timm ViT-small at batch 2, 10 eager calls traced, CUPTI detached, the process's first capture
(torch.cuda.graph) untraced, a session attached again (no GRAPH_TRACE), graphmode's own empty graph, then 4 replays of
the program's graph, a second capture traced, 2 replays of it. Prints what the last session recorded: its resource
callbacks, its graph launch calls and the graph and node ids its kernel records carry, per launch."""

from __future__ import annotations

import collections
import json
import time

import timm
import torch

from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.decode import decode
from graphmode.tracer.run_configs import session_kwargs, single_config

ns = time.perf_counter_ns
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
stream = torch.cuda.Stream()
kw = session_kwargs(single_config())


def warm_graph() -> None:
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


with torch.no_grad():
    for _ in range(5):
        model(x)
    torch.cuda.synchronize()
    s = CuptiSession(**kw)
    s.start()
    for _ in range(10):
        model(x)
    torch.cuda.synchronize()
    s.stop()
    g1 = torch.cuda.CUDAGraph()
    t0 = ns()
    with torch.cuda.graph(g1, stream=stream):
        model(x)
    block_us = (ns() - t0) / 1e3
    s2 = CuptiSession(**dict(kw, graph_trace=False))
    s2.start()
    warm_graph()
    rep = []
    for _ in range(4):
        r0 = ns()
        g1.replay()
        torch.cuda.synchronize()
        rep.append((ns() - r0) / 1e3)
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2, stream=stream):
        model(x)
    for _ in range(2):
        g2.replay()
    torch.cuda.synchronize()
    raw = s2.stop()
tables = decode(raw, 1)
print("block_us", round(block_us), "replays_us", [round(r) for r in rep])
print("resource events:", collections.Counter(e.cbid for e in raw.resource_events))
for e in raw.resource_events:
    if e.cbid.startswith("GRAPH_") or e.cbid.startswith("GRAPHEXEC"):
        print("  ", e.cbid, "graph", e.graph_id, "orig", e.original_graph_id, "exec", e.exec_id, "ts", e.ts)
api = tables["api_calls"]
sp = tables["gpu_spans"]
launch = [i for i in range(len(api["name"])) if api["category"][i] == "graph_launch"]
print("graph launch calls:", [(str(api["name"][i]), int(api["correlation_id"][i])) for i in launch])
for i in launch:
    c = api["correlation_id"][i]
    m = sp["correlation_id"] == c
    if m.any():
        print("  corr", int(c), "spans", int(m.sum()), "kinds", collections.Counter(sp["kind"][m]),
              "graph ids", sorted(set(int(v) for v in sp["graph_id"][m])),
              "node ids", len(set(int(v) for v in sp["graph_node_id"][m])),
              "first nodes", [int(v) for v in sp["graph_node_id"][m][:3]])
print("all span graph ids:", collections.Counter(int(v) for v in sp["graph_id"]))
print("capture/instantiate calls:", [(str(api["name"][i]), str(api["category"][i])) for i in range(len(api["name"]))
                                     if api["category"][i] in ("capture", "instantiate")])
print("DONE")
