"""Session 22: does what the one run's tracing adds to a real program's eager call follow what it adds to the
calibration's probe launches in the same process, or the machine's untraced speed? (The bundled calibration prices a
PyTorch launch's tracing at 7.1 us whatever the machine; call 1 and call 2 of this session read a ViT call's tracing at
1.48 and 2.62 ms on machines whose untraced ViT ran 2.9 and 5.4 ms.)

Per process, 3 cycles of: the workloads untraced (5 blocks each), the probe untraced (tracer.launch_probes' PyTorch
chains: 8 and 32 add_, 8 and 32 conv2d; per-kernel slope), the one run's CUPTI session attached
(tracer.run_configs.single_config), the same traced, the session stopped (cuptiFinalize). Prints one JSON line."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, "benchmarks/notes/s22")
from toggle_probe import block, resnet_train, vit  # noqa: E402

from graphmode.tracer.cupti_session import CuptiSession  # noqa: E402
from graphmode.tracer.run_configs import session_kwargs, single_config  # noqa: E402

x = torch.zeros(1024, device="cuda")
img = torch.randn(1, 16, 14, 14, device="cuda")
w = torch.randn(16, 16, 3, 3, device="cuda") / 12


def chain_wall(kind: str, k: int, calls: int = 40) -> float:
    def f():
        if kind == "pointwise":
            for _ in range(k):
                x.add_(1.0)
        else:
            y = img
            for _ in range(k):
                y = F.conv2d(y, w, padding=1)
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - t0) / calls


def probe() -> dict[str, float]:
    out = {}
    with torch.no_grad():
        for kind in ("pointwise", "library"):
            slopes = [(chain_wall(kind, 32) - chain_wall(kind, 8)) / 24 for _ in range(3)]
            out[kind] = float(np.median(slopes))
    return out


loads = [vit(), resnet_train()]
for _, calls, call in loads:
    for _ in range(5):
        call()
torch.cuda.synchronize()
res: dict = {"cycles": []}
for _ in range(3):
    c: dict = {}
    for name, calls, call in loads:
        c[f"{name}_untraced"] = float(np.median([block(call, calls) for _ in range(5)]))
    c["probe_untraced"] = probe()
    s = CuptiSession(**session_kwargs(single_config()))
    s.start()
    for name, calls, call in loads:
        c[f"{name}_traced"] = float(np.median([block(call, calls) for _ in range(5)]))
    c["probe_traced"] = probe()
    s.stop()
    res["cycles"].append(c)
print(json.dumps(res), flush=True)
