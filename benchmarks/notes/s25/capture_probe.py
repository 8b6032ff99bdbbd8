"""Session 25 (issues 29 and 30): what does CUPTI add to a torch.cuda.graph capture in the one run's session as it is
after an untraced window (attached again, no GRAPH_TRACE), against the session it starts with (GRAPH_TRACE on, what
`graphmode calibrate` measures)?

Device call 2 read the captures of a timm ViT with a graph per batch size at 0.65-0.73x the untraced processes' once
the calibrated cost was taken off (the decode step's 0.97x): the calibration may not be the session the captures ran
under. One process, states in turn: U (CUPTI never attached), S (the one run's session, GRAPH_TRACE on), D (detached),
R (attached again, graph_trace=False), D, R, S is not repeated (a graph of D under GRAPH_TRACE crashed in session 22;
none is replayed here). Per state: CAPTURES captures (capture and instantiation, host clock, synchronized) of a timm
ViT-small forward at batch 2 and of a chain of 32 pointwise adds (the calibration's subject). Prints one JSON line.
"""

from __future__ import annotations

import json
import time

import numpy as np
import timm
import torch

from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

CAPTURES = 7
ns = time.perf_counter_ns

model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")
y = torch.randn(1 << 16, device="cuda")
stream = torch.cuda.Stream()


def chain() -> None:
    for _ in range(32):
        y.add_(1.0)


def vit() -> None:
    model(x)


def captures(fn) -> list[float]:
    out = []
    with torch.no_grad():
        for i in range(CAPTURES + 1):
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            t0 = ns()
            with torch.cuda.graph(g, stream=stream):
                fn()
            torch.cuda.synchronize()
            if i:
                out.append((ns() - t0) / 1e3)
            del g
    return out


with torch.no_grad():
    for _ in range(3):
        vit()
        chain()
torch.cuda.synchronize()
kw = session_kwargs(single_config(), nvtx=False)
results = []
session = None
for state in ("U", "S", "D", "R", "D", "R"):
    if state == "S":
        session = CuptiSession(**kw)
        session.start()
    elif state == "D":
        session.stop()
        session = None
    elif state == "R":
        session = CuptiSession(**dict(kw, graph_trace=False))
        session.start()
    v, c = captures(vit), captures(chain)
    results.append({"state": state, "vit_us": v, "chain_us": c, "vit_median_us": float(np.median(v)),
                    "chain_median_us": float(np.median(c))})
    print(state, f"vit {np.median(v):.0f} us, chain {np.median(c):.0f} us", flush=True)
if session is not None:
    session.stop()
print(json.dumps({"probe": "capture_probe", "results": results}))
