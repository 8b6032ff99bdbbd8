"""Session 23 (issue 29), after call 3: under the one run's session an API call that it does not record (cudaGetDevice,
cuCtxGetCurrent) took 0.3-0.5 us longer than untraced, while CUPTI attached with no kind enabled cost it nothing. A
ViT-small forward makes 2,800 API calls (1,800 of them cudaGetDevice) for its 150 kernels, so that alone is about 1 ms
a call: what the calibrated per-launch costs miss. Which part of the session costs an unrecorded call?

States (each a fresh CuptiSession, stopped with cuptiFinalize before the next), in one process, cycled 3 times:
  U      untraced
  I      attached: no activity kind but GRAPH_TRACE, no callback
  K      the GPU kinds and GRAPH_TRACE only (kernels, copies, memsets, synchronizations): no API activity, no callback
  apiN   driver and runtime API activity, only the one run's calls recorded (api_filter 'needed'); no callback, no GPU kind
  apiNk  the same with the GPU kinds (kernels, copies, memsets, synchronizations)
  cbR    the GPU kinds and the resource callbacks (graphs created, destroyed); no API activity
  cbRA   cbR and the API-domain callbacks of the graph lifecycle (call sites, instantiate: the one run's)
  S      the one run's session (tracer.run_configs.single_config)
  apiA   every API call recorded (api_filter 'all'); no callback, no GPU kind
Per state: the per-call time of 50,000 cudaGetDevice, cuCtxGetCurrent and cuDevicePrimaryCtxGetState calls
(cuda.bindings), and of 5,000 `y.add_(1)` launches. Prints one JSON line: per state, the median over cycles."""

from __future__ import annotations

import json
import time

import numpy as np
import torch
from cuda.bindings import driver, runtime

from graphmode.tracer.cupti_session import LIFECYCLE_API, CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

N, LAUNCHES, CYCLES = 50_000, 5_000, 3
STATES = ("U", "I", "K", "apiN", "apiNk", "cbR", "cbRA", "S", "apiA")


def session(state: str) -> CuptiSession | None:
    quiet = dict(detail="graph", node_events=False)
    return {
        "U": lambda: None,
        "I": lambda: CuptiSession(api_filter="none", gpu_kinds=False, callbacks=False, **quiet),
        "K": lambda: CuptiSession(api_filter="none", gpu_kinds=True, callbacks=False, **quiet),
        "apiN": lambda: CuptiSession(api_filter="needed", gpu_kinds=False, callbacks=False, **quiet),
        "apiNk": lambda: CuptiSession(api_filter="needed", gpu_kinds=True, callbacks=False, **quiet),
        "cbR": lambda: CuptiSession(api_filter="none", gpu_kinds=True, callbacks=True, **quiet),
        "cbRA": lambda: CuptiSession(api_filter="none", gpu_kinds=True, callbacks=True, source_api=LIFECYCLE_API,
                                     snapshot_topology=True, **quiet),
        "S": lambda: CuptiSession(**session_kwargs(single_config())),
        "apiA": lambda: CuptiSession(api_filter="all", gpu_kinds=False, callbacks=False, **quiet),
    }[state]()


def per_call(f, n: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - t0) / n


dev = driver.cuDeviceGet(0)[1]
y = torch.zeros(1024, device="cuda")
torch.cuda.synchronize()


def launches() -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(LAUNCHES):
        y.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - t0) / LAUNCHES


res: dict[str, dict[str, list[float]]] = {s: {"cudaGetDevice": [], "cuCtxGetCurrent": [], "cuDevicePrimaryCtxGetState": [],
                                              "add_launch": []} for s in STATES}
for _ in range(CYCLES):
    for state in STATES:
        s = session(state)
        if s is not None:
            s.start()
        launches()  # warm
        r = res[state]
        r["cudaGetDevice"].append(per_call(runtime.cudaGetDevice, N))
        r["cuCtxGetCurrent"].append(per_call(driver.cuCtxGetCurrent, N))
        r["cuDevicePrimaryCtxGetState"].append(per_call(lambda: driver.cuDevicePrimaryCtxGetState(dev), N))
        r["add_launch"].append(launches())
        if s is not None:
            s.stop()
print(json.dumps({s: {k: [round(float(np.median(v)), 1), [round(x) for x in v]] for k, v in r.items()}
                  for s, r in res.items()}), flush=True)
