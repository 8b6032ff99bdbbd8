"""Session 22, call 2: what of the one run's cost stays while CUPTI's activity kinds are off (call 1: about half of it).
Per workload, in one process, 5 untraced blocks, then 5 cycles of four blocks, each under one state of the one run's
CUPTI session (tracer.run_configs.single_config):
  on         every kind the session enabled, its callbacks subscribed;
  kinds_off  every activity kind off, the API-domain callbacks (lifecycle call sites, instantiate) off, the resource
             callbacks (graph created, destroyed) still on;
  unsub      every kind off and the subscriber gone (cuptiUnsubscribe);
  finalized  the session stopped (flushed, cuptiFinalize), CUPTI detached; the next 'on' is a new session.
then 5 untraced blocks. Prints one JSON line per workload: block medians, what each switch cost, records per state."""

from __future__ import annotations

import faulthandler
import json
import sys
import time

import numpy as np
import torch

sys.path.insert(0, "benchmarks/notes/s22")
from toggle_probe import block, resnet_train, vit, vit_graph  # noqa: E402

from graphmode.tracer.cupti_records import cupti_module, records_by_kind  # noqa: E402
from graphmode.tracer.cupti_session import CuptiSession  # noqa: E402
from graphmode.tracer.run_configs import session_kwargs, single_config  # noqa: E402

faulthandler.enable()
CYCLES, PLAIN = 5, 5
STATES = ("on", "kinds_off", "unsub", "finalized")


def api_callbacks(s: CuptiSession, on: int) -> None:
    cupti = cupti_module()
    D = cupti.CallbackDomain
    for api, cbid in s._source_cbids | s._instantiate_cbids:
        cupti.enable_callback(on, s._subscriber, D.DRIVER_API if api == "driver" else D.RUNTIME_API, cbid)


def run(make) -> dict:
    name, calls, call = make()
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    cupti = cupti_module()
    K = cupti.ActivityKind
    b: dict[str, list[float]] = {"untraced_before": [block(call, calls) for _ in range(PLAIN)]}
    for k in STATES:
        b[k] = []
    sw: dict[str, list[float]] = {"start_session": [], "to_kinds_off": [], "to_unsub": [], "to_finalized": []}
    windows: list[tuple[str, int, int]] = []
    chunks: list[bytes] = []
    for _ in range(CYCLES):
        t = time.perf_counter_ns()
        s = CuptiSession(**session_kwargs(single_config()))
        s.start()
        sw["start_session"].append(time.perf_counter_ns() - t)
        for state in STATES:
            t0 = int(cupti.get_timestamp()) if state != "finalized" else 0
            b[state].append(block(call, calls))
            if state != "finalized":
                windows.append((state, t0, int(cupti.get_timestamp())))
            t = time.perf_counter_ns()
            if state == "on":
                for k in s._kinds:
                    cupti.activity_disable(k)
                api_callbacks(s, 0)
                sw["to_kinds_off"].append(time.perf_counter_ns() - t)
            elif state == "kinds_off":
                cupti.unsubscribe(s._subscriber)
                s._subscriber = None
                sw["to_unsub"].append(time.perf_counter_ns() - t)
            elif state == "unsub":
                raw = s.stop()
                chunks.extend(raw.chunks)
                sw["to_finalized"].append(time.perf_counter_ns() - t)
    b["untraced_after"] = [block(call, calls) for _ in range(PLAIN)]
    recs = records_by_kind(chunks)
    counts: dict[str, dict[str, int]] = {}
    for kind_name, kind in (("kernel", int(K.CONCURRENT_KERNEL)), ("graph", int(K.GRAPH_TRACE)), ("runtime", int(K.RUNTIME))):
        r = recs.get(kind)
        starts = np.asarray(r["start"], dtype=np.int64) if r is not None and len(r) else np.zeros(0, np.int64)
        c = counts[kind_name] = {}
        for state, lo, hi in windows:
            c[state] = c.get(state, 0) + int(((starts >= lo) & (starts < hi)).sum())
    return {"workload": name, "calls_per_block": calls,
            "median_us": {k: round(float(np.median(v)), 1) for k, v in b.items()},
            "switch_us_median": {k: round(float(np.median(v)) / 1e3, 1) for k, v in sw.items()},
            "records_in_blocks": counts, "blocks": {k: [round(x, 1) for x in v] for k, v in b.items()}}


for w in sys.argv[1:] or ["vit", "resnet_train", "vit_graph"]:
    print(json.dumps(run({"vit": vit, "resnet_train": resnet_train, "vit_graph": vit_graph}[w])), flush=True)
