"""Session 24 (issues 29 and 30): can the one traced run stop recording for a stretch of the program's loop, and does
the program then run as it does untraced? Session 23 found that any enabled activity kind or callback subscriber costs
every CUDA API call 200-250 ns, and that CUPTI attached with only GRAPH_TRACE on costs nothing (fresh sessions). Here
one session is paused (PausableSession.pause below: kinds off, callback domains off or the subscriber dropped) and resumed
in the same process, as a run would do mid-loop.

States, in one process, cycled 3 times (a session per cycle, finalized at its end):
  U    untraced (before the cycle's session starts; after the first cycle, CUPTI was attached and finalized before)
  S    the one run's session (tracer.run_configs.single_config)
  Pd   S paused: every kind off but GRAPH_TRACE, the callback domains off
  R1   resumed
  Pg   paused with GRAPH_TRACE off too
  R2   resumed
  Pu   paused, the subscriber dropped (unsubscribed) instead of its domains off
  R3   resumed
Per state: cudaGetDevice per call (50,000), `y.add_(1)` per launch (5,000), an 8-layer MLP forward at batch 1
(CPU-bound: 25 kernels, median of 200 calls) and a replay of a 20-kernel torch graph captured under S (median of 200,
each synchronized). Also what pause() and resume() took, and from the records after stop(): kernels, runtime API
records (and of them cudaGetDevice, which the filter leaves out) and graph spans per state. Prints one JSON line."""

from __future__ import annotations

import json
import time

import numpy as np
import torch
from cuda.bindings import runtime

from graphmode.tracer.cupti_records import cupti_module, records_by_kind
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.run_configs import session_kwargs, single_config

from graphmode.tracer.cupti_session import api_needed, api_sparse


class PausableSession(CuptiSession):
    """The one run's session with pause() and resume() (tried here, not adopted: a paused session kept most of its
    cost)."""

    def pause(self, keep_graph_trace: bool = True, unsubscribe: bool = False) -> None:
        """Stops recording for a while without detaching: every activity kind off (GRAPH_TRACE kept with
        `keep_graph_trace`: it costs the program nothing, benchmarks/notes/s23, and a graph replayed meanwhile keeps
        its span) and the callback domains off (or, with `unsubscribe`, the subscriber dropped). resume() undoes it.
        Any enabled kind or subscriber costs every CUDA API call 200-250 ns (benchmarks/notes/s23); this probe measures what a paused
        session still costs."""
        if not self.started or getattr(self, "paused", False):
            return
        cupti = cupti_module()
        K = cupti.ActivityKind
        for k in self._kinds:
            if keep_graph_trace and k == K.GRAPH_TRACE:
                continue
            cupti.activity_disable(k)
        if self._subscriber is not None:
            if unsubscribe:
                cupti.unsubscribe(self._subscriber)
                self._subscriber = None
                self._resubscribe = True
            else:
                D = cupti.CallbackDomain
                for d in (D.RESOURCE, D.DRIVER_API, D.RUNTIME_API):
                    cupti.enable_domain(0, self._subscriber, d)
        self._paused_graph_trace = keep_graph_trace
        self.paused = True

    def resume(self) -> None:
        """Records again what start() recorded (the API filter applied anew, and the callbacks)."""
        if not self.started or not getattr(self, "paused", False):
            return
        cupti = cupti_module()
        K = cupti.ActivityKind
        for k in self._kinds:
            if getattr(self, "_paused_graph_trace", True) and k == K.GRAPH_TRACE:
                continue
            cupti.activity_enable(k)
        if self.api_filter in ("needed", "sparse"):
            self._filter_api(cupti, api_sparse if self.api_filter == "sparse" else api_needed)
        D = cupti.CallbackDomain
        if getattr(self, "_resubscribe", False):
            self._resubscribe = False
            self._subscriber = cupti.subscribe(self._callback, 0)
            for cbid in self._cb_names:
                cupti.enable_callback(1, self._subscriber, D.RESOURCE, cbid)
        elif self._subscriber is not None:
            for d in (D.RESOURCE, D.DRIVER_API, D.RUNTIME_API):
                cupti.enable_domain(0, self._subscriber, d)  # enable_domain(1) would enable every id of the domain
            for cbid in self._cb_names:
                cupti.enable_callback(1, self._subscriber, D.RESOURCE, cbid)
        if self._subscriber is not None:
            for api, cbid in self._source_cbids | self._instantiate_cbids:
                cupti.enable_callback(1, self._subscriber, D.DRIVER_API if api == "driver" else D.RUNTIME_API, cbid)
        self.paused = False


N, LAUNCHES, CALLS, CYCLES = 50_000, 5_000, 200, 3
STATES = ("U", "S", "Pd", "R1", "Pg", "R2", "Pu", "R3")


def per_call(f, n: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - t0) / n


y = torch.zeros(1024, device="cuda")
mlp = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.LayerNorm(256))][:25]).cuda()
x = torch.randn(1, 256, device="cuda")
torch.cuda.synchronize()


def launches() -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(LAUNCHES):
        y.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter_ns() - t0) / LAUNCHES


def forwards() -> float:
    ts = []
    with torch.no_grad():
        for _ in range(CALLS):
            t0 = time.perf_counter_ns()
            mlp(x)
            ts.append(time.perf_counter_ns() - t0)
    torch.cuda.synchronize()
    return float(np.median(ts))


def replays(g) -> float:
    ts = []
    for _ in range(CALLS):
        t0 = time.perf_counter_ns()
        g.replay()
        torch.cuda.synchronize()
        ts.append(time.perf_counter_ns() - t0)
    return float(np.median(ts))


def measure(g) -> dict[str, float]:
    launches()  # warm
    return {"cudaGetDevice_ns": per_call(runtime.cudaGetDevice, N), "add_launch_ns": launches(),
            "mlp_forward_ns": forwards(), **({"graph_replay_ns": replays(g)} if g is not None else {})}


cupti = cupti_module()
K = cupti.ActivityKind
res: dict[str, dict[str, list[float]]] = {s: {} for s in STATES}
transitions: dict[str, list[float]] = {}
counts: dict[str, dict[str, list[int]]] = {s: {} for s in STATES}
errors: list[str] = []
for cycle in range(CYCLES):
    bounds: list[tuple[str, int, int]] = []

    def state(name: str, g) -> None:
        t0 = int(cupti.get_timestamp())
        for k, v in measure(g).items():
            res[name].setdefault(k, []).append(v)
        bounds.append((name, t0, int(cupti.get_timestamp())))

    def timed(name: str, f) -> None:
        t0 = time.perf_counter_ns()
        f()
        transitions.setdefault(name, []).append((time.perf_counter_ns() - t0) / 1e3)

    state("U", None)
    s = PausableSession(**session_kwargs(single_config()))
    s.start()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(20):
            y.add_(1)
    torch.cuda.synchronize()
    state("S", g)
    timed("pause_domains", s.pause)
    state("Pd", g)
    timed("resume_domains", s.resume)
    state("R1", g)
    timed("pause_all_kinds", lambda: s.pause(keep_graph_trace=False))
    state("Pg", g)
    timed("resume_all_kinds", s.resume)
    state("R2", g)
    timed("pause_unsubscribe", lambda: s.pause(unsubscribe=True))
    state("Pu", g)
    timed("resume_unsubscribe", s.resume)
    state("R3", g)
    raw = s.stop()
    errors += raw.callback_errors
    recs = records_by_kind(raw.chunks)
    kern = recs.get(int(K.CONCURRENT_KERNEL))
    rt = recs.get(int(K.RUNTIME))
    gt = recs.get(int(K.GRAPH_TRACE))
    get_device = int(cupti.runtime_api_trace_cbid.cudaGetDevice_v3020)
    for name, a, b in bounds:
        c = counts[name]
        c.setdefault("kernels", []).append(int(((kern["start"] >= a) & (kern["start"] < b)).sum()) if kern is not None else 0)
        c.setdefault("runtime_api", []).append(int(((rt["start"] >= a) & (rt["start"] < b)).sum()) if rt is not None else 0)
        c.setdefault("cudaGetDevice_records", []).append(
            int(((rt["start"] >= a) & (rt["start"] < b) & (rt["cbid"] == get_device)).sum()) if rt is not None else 0)
        c.setdefault("graph_spans", []).append(int(((gt["start"] >= a) & (gt["start"] < b)).sum()) if gt is not None else 0)
    del g

print(json.dumps({"per_state": {s: {k: [round(float(np.median(v)), 1), [round(x) for x in v]] for k, v in r.items()}
                                for s, r in res.items()},
                  "transitions_us": {k: [round(float(np.median(v)), 1), [round(x) for x in v]] for k, v in transitions.items()},
                  "records": counts, "errors": errors[:10]}), flush=True)
