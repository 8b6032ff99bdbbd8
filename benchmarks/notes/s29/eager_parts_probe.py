"""Session 29, device call 5: in calls 3-4 the ViT's eager calls timed in the one run's untraced windows (CUPTI detached)
read 1.6-2.5x the untraced processes'. Does something graphmode leaves on in a process slow its detached eager work?
One process: a timm ViT-small forward at batch 1, 40 calls a stretch timed by the host clock (median), in rounds of:
U (nothing of graphmode's), H (PyTorch's allocator history on, as the one run records it), S (the one run's CUPTI session
attached then detached), HS (both: a window's state), A (a session attached: traced), U again. Prints one JSON line."""

from __future__ import annotations

import json
import statistics as st
import time

import timm
import torch

from graphmode.tracer import allocator_history
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(1, 3, 224, 224, device="cuda")
kw = session_kwargs(single_config())


def stretch(n: int = 40) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        model(x)
        torch.cuda.synchronize()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    return st.median(out)


res: dict[str, list[float]] = {k: [] for k in ("U", "H", "S", "HS", "A", "U2")}
with torch.no_grad():
    stretch(20)
    for _ in range(3):
        res["U"].append(stretch())
        allocator_history.enable(torch)
        res["H"].append(stretch())
        allocator_history.disable(torch)
        s = CuptiSession(**kw)
        s.start()
        stretch(5)
        s.stop()
        res["S"].append(stretch())
        allocator_history.enable(torch)
        res["HS"].append(stretch())  # a window's state: history on, CUPTI detached after a session
        allocator_history.disable(torch)
        s = CuptiSession(**kw)
        s.start()
        res["A"].append(stretch())
        s.stop()
        res["U2"].append(stretch())
print(json.dumps({k: [round(v) for v in vals] for k, vals in res.items()}))
