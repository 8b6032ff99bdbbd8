"""Session 21: what each part of the one traced run costs a timm ViT's eager call, A/B in one process (the lent H200's
processes differ by up to 1.7x from each other, so the parts are compared inside one).

Phases, in this order, each 5 blocks of 30 calls at batch 1 (median per call of each block): untraced; CUPTI alone
(the one run's session, tracer.run_configs.single_config, our buffer callbacks); PyTorch's allocator history alone
(tracer.allocator_history); both; CUPTI with cupti-python's buffer callbacks (GRAPHMODE_CUPTI_BUFFERS); untraced again.
Prints one JSON line."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import timm
import torch

from graphmode.tracer import allocator_history
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(1, 3, 224, 224, device="cuda")
CALLS, BLOCKS = 30, 5


def blocks() -> list[float]:
    out = []
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        for _ in range(BLOCKS):
            t0 = time.perf_counter_ns()
            for _ in range(CALLS):
                model(x)
            torch.cuda.synchronize()
            out.append((time.perf_counter_ns() - t0) / CALLS / 1e3)
    return out


def phase(cupti: bool, history: bool, buffers: str = "") -> list[float]:
    if buffers:
        os.environ["GRAPHMODE_CUPTI_BUFFERS"] = buffers
    s = CuptiSession(**session_kwargs(single_config())) if cupti else None
    if s is not None:
        s.start()
    if history:
        allocator_history.enable(torch)
    try:
        return blocks()
    finally:
        if history:
            allocator_history.disable(torch)
        if s is not None:
            s.stop()
        os.environ.pop("GRAPHMODE_CUPTI_BUFFERS", None)


res = {}
for name, args in (("untraced", (False, False)), ("cupti", (True, False)), ("history", (False, True)),
                   ("cupti+history", (True, True)), ("cupti_python_buffers", (True, False, "cupti-python")),
                   ("untraced_again", (False, False))):
    b = phase(*args)
    res[name] = {"median_us": float(np.median(b)), "blocks_us": [round(v, 1) for v in b]}
print(json.dumps(res), flush=True)
