"""Session 30, device call 2: in call 1 the ViT's untraced windows read 1.6-2.5x its untraced processes in 7 of 24
windows while the CPU-speed samples inside them were at the run's fastest tenth. Session 29's probe (call 5) found a
detached session and the allocator history cost nothing; it left out the line stamper (sys.monitoring LINE events on the
script's code, tracer.line_stamps), which is on in a window too. One process: a timm ViT-small forward at batch 2, 40
calls a stretch timed by the host clock (median, us), in rounds of: U (nothing of graphmode's), T (the one run's line
stamper on this script), U2 (stamper stopped), W (a window's whole state: history on, a session attached then
detached, the stamper on), A (a session attached, stamper and history on: a traced stretch), U3. One JSON line."""

from __future__ import annotations

import json
import statistics as st
import time

import timm
import torch

from graphmode.tracer import allocator_history
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config
from graphmode.tracer.script import start_stamper

cfg = single_config()
kw = session_kwargs(cfg)
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
x = torch.randn(2, 3, 224, 224, device="cuda")


def stretch(n: int = 40) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        model(x)
        torch.cuda.synchronize()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    return st.median(out)


res: dict[str, list[float]] = {k: [] for k in ("U", "T", "U2", "W", "A", "U3")}
stamps = 0
with torch.no_grad():
    stretch(20)
    for _ in range(3):
        res["U"].append(stretch())
        stamper = start_stamper(cfg)
        res["T"].append(stretch())
        stamper.stop()
        stamps += len(stamper.columns()["ts_ns"]) if hasattr(stamper, "columns") else 0
        res["U2"].append(stretch())
        allocator_history.enable(torch)
        s = CuptiSession(**kw)
        s.start()
        stretch(5)
        s.stop()
        stamper = start_stamper(cfg)
        res["W"].append(stretch())  # a window's state
        s = CuptiSession(**kw)
        s.start()
        res["A"].append(stretch())  # traced
        s.stop()
        stamper.stop()
        allocator_history.disable(torch)
        res["U3"].append(stretch())
print(json.dumps({**{k: [round(v) for v in vals] for k, vals in res.items()}, "stamps": stamps}))
