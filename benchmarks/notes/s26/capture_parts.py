"""Session 26 (issue 29): which part of the one run's CUPTI session makes a torch.cuda.graph capture slower?

Session 25 measured a traced capture of a timm ViT at about 2x its untraced time in one process (call 4) and 3-4x on
another machine (call 5), and found no in-run measurement that follows it. Instead of correcting it, can the run not
cause it? One process per variant: CAPTURES captures of a timm ViT-small forward at batch 2 and of 32 pointwise adds
untraced (U), then the same under the variant's session. Variants switch parts of the one run's session
(session_kwargs(single_config())) off by skipping their activity kinds:

  S_old    the one run's session before session 26: captures not quiet, each graph's topology read as it is
           destroyed (inside torch's capture_end)
  S_loud   S without quiet captures (the destroyed graph copied, read at the end)
  S_notopo S without reading topologies (no copy)
  S        the one run's session as it is (quiet captures, copies) (GRAPH_TRACE, kernels/copies/memsets/syncs, 'needed' API records, callbacks)
  R        as attached again after an untraced window (no GRAPH_TRACE: replays folded from their nodes' records)
  S_noapi  S without the DRIVER and RUNTIME records
  S_nogpu  S without the kernel, copy, memset and synchronization records
  S_nocb   S without callbacks
  G, K, A  GRAPH_TRACE alone; CONCURRENT_KERNEL alone; the 'needed' API records alone (no callbacks)
  C        S without any activity record but GRAPH_TRACE: its callbacks
  TB       S with the API and GPU kinds disabled for the capture's body only (torch.cuda.graph's block), so that
           capture_end's end of capture and instantiation run with them on
  T_nocb   T without callbacks
  T, TR    S and R with the API and GPU kinds disabled for the capture and enabled again after it; then the last
           graph replayed REPLAYS times: are its replays still recorded (GRAPH_TRACE records under T, kernel records
           with a graph id under R)?

Prints one JSON line: the topologies read ((nodes, edges, a hash of the kinds, names and edges by node order) per
graph shape: S and S_old must agree), the medians (us; the ViT's also split into torch.cuda.graph's entry, its block and its exit,
which ends the capture and instantiates) and the records counted by kind.
Usage: python capture_parts.py VARIANT
Ran at commit 5395dd7 (calls 1-3): the quiet-capture variants (S, S_notopo's `quiet_captures`) need that commit's
CuptiSession, which the next one dropped.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

import numpy as np
import timm
import torch

from graphmode.tracer.cupti_records import cupti_module, records_by_kind
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

CAPTURES = 7
REPLAYS = 5
ns = time.perf_counter_ns
variant = sys.argv[1]

model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
y = torch.randn(1 << 16, device="cuda")
stream = torch.cuda.Stream()
cupti = cupti_module()
K = cupti.ActivityKind
API_KINDS = [K.DRIVER, K.RUNTIME]
GPU_KINDS = [K.CONCURRENT_KERNEL, K.MEMCPY, K.MEMSET, K.SYNCHRONIZATION]


def chain() -> None:
    for _ in range(32):
        y.add_(1.0)


def vit() -> None:
    model(x)


toggle = variant in ("T", "TR", "T_nocb")
body_toggle = variant == "TB"


def switch(on: bool) -> None:
    for k in API_KINDS + GPU_KINDS:
        (cupti.activity_enable if on else cupti.activity_disable)(k)


PARTS: dict[str, list[float]] = {}


def captures(fn, key: str = "") -> tuple[list[float], torch.cuda.CUDAGraph]:
    out, g = [], None
    with torch.no_grad():
        for i in range(CAPTURES + 1):
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            t0 = ns()
            if toggle:
                switch(False)
            with torch.cuda.graph(g, stream=stream):
                if body_toggle:
                    switch(False)
                t1 = ns()
                fn()
                t2 = ns()
                if body_toggle:
                    switch(True)
            t3 = ns()
            if toggle:
                switch(True)
            torch.cuda.synchronize()
            if i:
                out.append((ns() - t0) / 1e3)
                if key:
                    for part, v in (("begin", t1 - t0), ("body", t2 - t1), ("end", t3 - t2)):
                        PARTS.setdefault(f"{key}_{part}", []).append(v / 1e3)
    return out, g


with torch.no_grad():
    for _ in range(3):
        vit()
        chain()
torch.cuda.synchronize()
res: dict = {"probe": "capture_parts", "variant": variant}
for state in ("U", variant):
    session = None
    if state != "U":
        kw = session_kwargs(single_config(), nvtx=False)
        skip: list = []
        if variant in ("R", "TR"):
            kw["graph_trace"] = False
        if variant == "S_noapi":
            skip = API_KINDS
        elif variant == "S_nogpu":
            skip = GPU_KINDS
        elif variant in ("S_nocb", "T_nocb"):
            kw["callbacks"] = False
        elif variant == "C":
            skip = API_KINDS + GPU_KINDS
        elif variant in ("G", "K", "A"):
            kw["callbacks"] = False
            keep = {"G": [K.GRAPH_TRACE], "K": [K.CONCURRENT_KERNEL], "A": API_KINDS}[variant]
            skip = [k for k in API_KINDS + GPU_KINDS + [K.GRAPH_TRACE] if k not in keep]
        real_enable = cupti.activity_enable
        cupti.activity_enable = lambda k, _r=real_enable, _s=set(int(s) for s in skip): None if int(k) in _s else _r(k)
        if variant in ("S_old", "S_loud"):
            kw["quiet_captures"] = False
        if variant == "S_notopo":
            kw["snapshot_topology"] = False
        session = CuptiSession(**kw)
        if variant == "S_old":
            session.deferred_topology = False
        session.start()
        cupti.activity_enable = real_enable
    v, gv = captures(vit, f"{state}_vit")
    c, gc = captures(chain)
    res[f"{state}_vit_us"] = float(np.median(v))
    res[f"{state}_chain_us"] = float(np.median(c))
    res[f"{state}_vit_all_us"] = [round(t, 1) for t in v]
    if session is not None:
        for _ in range(REPLAYS):
            gv.replay()
        torch.cuda.synchronize()
        raw = session.stop()
        recs = records_by_kind(raw.chunks)
        counts = {getattr(K(k), "name", str(k)): int(len(r)) for k, r in recs.items()}
        kern = recs.get(int(K.CONCURRENT_KERNEL))
        if kern is not None:
            gid = [f for f in kern.dtype.names if f.lower().replace("_", "") == "graphid"]
            counts["kernels_with_graph_id"] = int((kern[gid[0]] != 0).sum()) if gid else -1
        res["records"] = counts
        res["topology_copies"] = raw.topology_copies
        res["quiet"] = raw.quiet_captures
        lifecycle: dict = {}
        for kind, enum in ((K.RUNTIME, cupti.runtime_api_trace_cbid), (K.DRIVER, cupti.driver_api_trace_cbid)):
            for cbid in recs.get(int(kind), {"cbid": []})["cbid"]:
                try:
                    name = enum(int(cbid)).name
                except ValueError:
                    continue
                if any(w in name for w in ("BeginCapture", "EndCapture", "Instantiate", "LaunchKernel")):
                    lifecycle[name] = lifecycle.get(name, 0) + 1
        res["lifecycle_records"] = lifecycle
        shapes = []
        for gid, topo in sorted(raw.topologies.items()):
            index = {n[0]: n[1] for n in topo.nodes}
            sig = (tuple((n[1], n[2], n[3]) for n in topo.nodes), tuple(sorted((index[a], index[b]) for a, b in topo.edges)))
            shapes.append((len(topo.nodes), len(topo.edges), hashlib.sha1(repr(sig).encode()).hexdigest()[:10]))
        res["topologies"] = sorted(set(shapes))
        res["topologies_read"] = len(shapes)
        res["callback_errors"] = raw.callback_errors[:3]
    print(state, f"vit {res[f'{state}_vit_us']:.0f} us, chain {res[f'{state}_chain_us']:.0f} us", flush=True)
res["parts_us"] = {k: round(float(np.median(v)), 1) for k, v in PARTS.items()}
res["vit_ratio"] = res[f"{variant}_vit_us"] / res["U_vit_us"]
res["chain_ratio"] = res[f"{variant}_chain_us"] / res["U_chain_us"]
print(json.dumps(res))
