"""Session 22: a graph instantiated before CUPTI attaches, replayed after: does the replay crash, and under which of
the tracer's parts? (Call 2: toggle_probe.py's torch.cuda.graph replay died with SIGSEGV in the first block after the
one run's CUPTI session started; README's `with graphmode.trace(): g.replay()` is that very shape.)

Run one variant per process: python3 attach_probe.py VARIANT; prints 'ok VARIANT ...' when 20 replays finished.
  torch_measure        graph by torch.cuda.graph, then graphmode.trace() (the measuring run's session) around replays
  torch_kernels        ... then CUPTI with CONCURRENT_KERNEL only (replayed kernels as records; no GRAPH_TRACE)
  torch_graph_trace    ... then CUPTI with GRAPH_TRACE only
  torch_callbacks      ... then CUPTI subscribed to the graph resource callbacks only, no activity kind
  torch_runtime        ... then CUPTI with RUNTIME and DRIVER API records only
  raw_measure          graph by cuda-python (graphmode's chain workload, stream capture), then graphmode.trace()
  torch_after_detach   CUPTI attached and finalized once first, then the graph, then graphmode.trace()
  torch_inside         control: the graph captured inside graphmode.trace(), replayed there
"""

from __future__ import annotations

import faulthandler
import sys
import tempfile

faulthandler.enable()
variant = sys.argv[1]
tmp = tempfile.mkdtemp()


def torch_graph():
    import torch

    x = torch.zeros(1 << 16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1.0).mul_(0.5)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(8):
            x.add_(1.0).mul_(0.5)
    torch.cuda.synchronize()
    return g.replay, torch.cuda.synchronize


def raw_graph():
    from cuda.bindings import driver as cu

    from graphmode.tracer.workloads import make_workload

    wl = make_workload("chain", n=10_000, kernels=8)
    wl.setup()
    graph, _ = wl.build_graph()
    err, exe = cu.cuGraphInstantiate(graph, 0)
    assert int(err) == 0, err

    def replay():
        (e,) = cu.cuGraphLaunch(exe, wl.stream)
        assert int(e) == 0, e

    return replay, lambda: cu.cuStreamSynchronize(wl.stream)


def raw_cupti(kinds=(), callbacks=False):
    from cupti import cupti

    chunks = []

    def req():
        return 8 << 20, 0

    def done(acts):
        chunks.append(len(acts))

    cupti.activity_register_callbacks(req, done)
    K = cupti.ActivityKind
    for k in kinds:
        cupti.activity_enable(getattr(K, k))
    sub = None
    if callbacks:
        sub = cupti.subscribe(lambda *a: None, 0)
        for name in ("GRAPH_CREATED", "GRAPH_CLONED", "GRAPHEXEC_CREATED", "GRAPHEXEC_DESTROY_STARTING"):
            cupti.enable_callback(1, sub, cupti.CallbackDomain.RESOURCE, int(getattr(cupti.CallbackIdResource, name)))

    def stop():
        cupti.activity_flush_all(1)
        for k in kinds:
            cupti.activity_disable(getattr(K, k))
        if sub is not None:
            cupti.unsubscribe(sub)
        cupti.finalize()
        return sum(chunks)
    return stop


def replays(replay, sync, n=20):
    for _ in range(n):
        replay()
    sync()


import graphmode  # noqa: E402

if variant == "torch_after_detach":
    stop = raw_cupti(("CONCURRENT_KERNEL",))
    import torch
    torch.zeros(4, device="cuda").add_(1)
    torch.cuda.synchronize()
    stop()
if variant == "torch_inside":
    with graphmode.trace(f"{tmp}/t.gmtrace") as t:
        replay, sync = torch_graph()
        replays(replay, sync)
    print("ok", variant, t.path, flush=True)
    sys.exit(0)
replay, sync = raw_graph() if variant.startswith("raw") else torch_graph()
replays(replay, sync)  # untraced: the graph works
if variant.endswith("measure") or variant == "torch_after_detach":
    with graphmode.trace(f"{tmp}/t.gmtrace") as t:
        replays(replay, sync)
    from graphmode.tracer.store import load
    n = load(t.path).rows("SELECT count(*) FROM gpu_spans WHERE kind = 'graph'")[0][0]
    print("ok", variant, "graph spans", n, flush=True)
else:
    kinds = {"torch_kernels": ("CONCURRENT_KERNEL",), "torch_graph_trace": ("GRAPH_TRACE",),
             "torch_callbacks": (), "torch_runtime": ("RUNTIME", "DRIVER")}[variant]
    stop = raw_cupti(kinds, callbacks=variant == "torch_callbacks")
    replays(replay, sync)
    print("ok", variant, "records", stop(), flush=True)
