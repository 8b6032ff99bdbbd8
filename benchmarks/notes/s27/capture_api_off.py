"""Session 27 (issue 29): does switching CUPTI's API activity kinds off for a capture's body take its tracing cost away,
and does the session stay whole (lifecycle records, its API filter applied again)?

Session 26 (benchmarks/notes/s26, call 2) measured a timm ViT's torch.cuda.graph capture body +1.0-1.5 ms under the
API records and +0.2 ms with the API and GPU kinds switched off around the body by hand; switching the captured calls'
records off one callback id at a time did not help (call 3). CuptiSession(api_off_in_captures=True) now switches the
DRIVER and RUNTIME kinds off from a successful BeginCapture's return to its EndCapture's entry, and applies the
session's API filter again as it switches them on.

One process per variant: CAPTURES captures of a ViT-small forward at batch 2 (126 kernels) and of 32 pointwise adds,
untraced (U), then under the variant's session:
  S  the one run's session as it is (single_config())
  D  S with capture_api_off
Then EAGER eager ViT forwards under the session, and REPLAYS replays of the last ViT graph.
Prints one JSON line: medians (us; the ViT's split into torch.cuda.graph's entry, body and exit), the lifecycle
records by name, the API records the filter should have left out (a name api_needed() refuses), the spans the kinds
were off and what switching them on again took, the topologies read.
Usage: python capture_api_off.py VARIANT
Ran at commit 13e59fe (call 1): D needs that commit's CuptiSession (api_off_in_captures), which the next one dropped.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time

import numpy as np
import timm
import torch

from graphmode.tracer.cupti_records import cupti_module, records_by_kind
from graphmode.tracer.cupti_session import CuptiSession, api_needed
from graphmode.tracer.run_configs import session_kwargs, single_config

CAPTURES, REPLAYS, EAGER = 7, 5, 10
ns = time.perf_counter_ns
variant = sys.argv[1]

model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
y = torch.randn(1 << 16, device="cuda")
stream = torch.cuda.Stream()
cupti = cupti_module()
K = cupti.ActivityKind
PARTS: dict[str, list[float]] = {}


def chain() -> None:
    for _ in range(32):
        y.add_(1.0)


def vit() -> None:
    model(x)


def captures(fn, key: str = "") -> tuple[list[float], torch.cuda.CUDAGraph]:
    out, g = [], None
    with torch.no_grad():
        for i in range(CAPTURES + 1):
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            t0 = ns()
            with torch.cuda.graph(g, stream=stream):
                t1 = ns()
                fn()
                t2 = ns()
            t3 = ns()
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
res: dict = {"probe": "capture_api_off", "variant": variant}
for state in ("U", variant):
    session = None
    if state != "U":
        cfg = dataclasses.replace(single_config(), capture_api_off=variant == "D")
        session = CuptiSession(**session_kwargs(cfg, nvtx=False))
        session.start()
    v, gv = captures(vit, f"{state}_vit")
    c, gc = captures(chain)
    res[f"{state}_vit_us"] = float(np.median(v))
    res[f"{state}_chain_us"] = float(np.median(c))
    res[f"{state}_vit_all_us"] = [round(t, 1) for t in v]
    if session is not None:
        with torch.no_grad():
            t0 = ns()
            for _ in range(EAGER):
                vit()
            torch.cuda.synchronize()
            res[f"{state}_eager_vit_us"] = (ns() - t0) / 1e3 / EAGER
        for _ in range(REPLAYS):
            gv.replay()
        torch.cuda.synchronize()
        raw = session.stop()
        recs = records_by_kind(raw.chunks)
        res["records"] = {getattr(K(k), "name", str(k)): int(len(r)) for k, r in recs.items()}
        lifecycle: dict = {}
        unfiltered: dict = {}
        for kind, enum in ((K.RUNTIME, cupti.runtime_api_trace_cbid), (K.DRIVER, cupti.driver_api_trace_cbid)):
            for cbid in recs.get(int(kind), {"cbid": []})["cbid"]:
                try:
                    name = enum(int(cbid)).name
                except ValueError:
                    continue
                if any(w in name for w in ("BeginCapture", "EndCapture", "Instantiate", "GraphLaunch", "GraphUpload")):
                    lifecycle[name] = lifecycle.get(name, 0) + 1
                if not api_needed(name):
                    unfiltered[name] = unfiltered.get(name, 0) + 1
        res["lifecycle_records"] = lifecycle
        res["unfiltered_records"] = unfiltered
        res["api_off_spans"] = len(raw.api_off_spans)
        res["api_off_span_us"] = [round((b - a) / 1e3, 1) for _, a, b in raw.api_off_spans][:6]
        res["api_on_us"] = [round(n / 1e3, 1) for n in raw.api_on_ns][:16]
        res["topology_copies"] = raw.topology_copies
        res["topologies"] = sorted({(len(t.nodes), len(t.edges)) for t in raw.topologies.values()})
        res["callback_errors"] = raw.callback_errors[:3]
        res["filter"] = raw.api_filter
    print(state, f"vit {res[f'{state}_vit_us']:.0f} us, chain {res[f'{state}_chain_us']:.0f} us", flush=True)
res["parts_us"] = {k: round(float(np.median(v)), 1) for k, v in PARTS.items()}
res["vit_ratio"] = res[f"{variant}_vit_us"] / res["U_vit_us"]
res["chain_ratio"] = res[f"{variant}_chain_us"] / res["U_chain_us"]
print(json.dumps(res))
