"""What each part of graphmode's tracing costs real framework code, per kernel and per callback (issue 29's design).

benchmarks/tracer_costs.py measured a raw cuLaunchKernel of a tiny kernel; third-party programs slowed far more
than it predicted (a torchvision training step 1.4-1.7x under the measuring run's activity kinds). This one runs
framework code in one process and A/B-tests tracer configurations on it, in rounds (every configuration once a
round, in a shuffled order; CUPTI detached with cuptiFinalize after each), so that the machine's drift spreads
over all of them:

- `torch_train`: a torchvision ResNet-18 training step at batch 8 (forward, loss, backward, SGD step), eager;
- `torch_infer`: a torchvision MobileNetV3-small forward at batch 1, eager; its capture with torch.cuda.graph
  (warm-up on a side stream, capture, instantiate) and its replay;
- `raw`: cuLaunchKernel of a tiny kernel through cuda-python (the probe a traced run could make of itself);
- `jax`: a jitted 8-layer MLP call (XLA runs it as a command buffer), with `--framework jax`.

Configurations: none; single activity kinds (kernel, memcpy, memset, synchronization, graph trace); API records
(sparse: graph lifecycle and synchronizations; needed; every call); graphmode's measuring run; the proposed
single run (the measuring run's kinds plus graph-level resource callbacks, lifecycle call sites and topology);
that plus node callbacks; the detail run. Per configuration: median over rounds of each figure, its ratio to
`none`, and per kernel of the step the added microseconds. Prints a table and writes JSON.

    python3 benchmarks/tracer_costs_frameworks.py OUT.json [--framework torch|jax] [--rounds 5]

Status: it has given no figures. On the H200 in session 17 it segfaulted twice (benchmarks/notes/s17/README.md): once
with its raw buffer callbacks freed (since kept alive), once in the first block after enabling MEMCPY and MEMSET
records alone. The per-configuration costs came from fresh processes instead (benchmarks/script_fidelity.py).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

ns = time.perf_counter_ns
_KEEP: list[Any] = []  # callbacks handed to CUPTI: cupti-python does not keep them alive (a freed one segfaulted)


def configs() -> dict[str, Callable[[], tuple[Callable[[], None], Callable[[], Any]]]]:
    """name -> factory of (start, stop)."""
    from cupti import cupti

    from graphmode.tracer.cupti_session import LIFECYCLE_API, CuptiSession
    from graphmode.tracer.sources import user_location

    K = cupti.ActivityKind

    def kinds(ks: list[Any], api: str | None = None) -> Callable[[], tuple[Callable[[], None], Callable[[], Any]]]:
        def make() -> tuple[Callable[[], None], Callable[[], Any]]:
            def start() -> None:
                cbs = (lambda: (8 << 20, 0), lambda acts: None)
                _KEEP.append(cbs)
                cupti.activity_register_callbacks(*cbs)
                for k in ks:
                    cupti.activity_enable(k)
                if api is not None:
                    from graphmode.tracer.cupti_session import api_needed, api_sparse
                    CuptiSession._filter_api(cupti, {"sparse": api_sparse, "needed": api_needed}[api])

            def stop() -> None:
                cupti.activity_flush_all(1)
                for k in ks:
                    cupti.activity_disable(k)
                cupti.finalize()
            return start, stop
        return make

    def session(**kw: Any) -> Callable[[], tuple[Callable[[], None], Callable[[], Any]]]:
        def make() -> tuple[Callable[[], None], Callable[[], Any]]:
            s = CuptiSession("graph", **kw)
            _KEEP.append(s)
            return s.start, s.stop
        return make

    api = [K.DRIVER, K.RUNTIME]
    return {
        "none": lambda: (lambda: None, lambda: None),
        "kernel": kinds([K.CONCURRENT_KERNEL]),
        "memcpy+memset": kinds([K.MEMCPY, K.MEMSET]),
        "sync": kinds([K.SYNCHRONIZATION]),
        "graph_trace": kinds([K.GRAPH_TRACE]),
        "gpu_kinds": session(api_filter="none", callbacks=False),
        "api_sparse": kinds(api, "sparse"),
        "api_needed": kinds(api, "needed"),
        "api_all": kinds(api),
        "measure": session(api_filter="sparse", callbacks=False),
        "single": session(api_filter="sparse", callbacks=True, node_events=False, source_api=LIFECYCLE_API,
                          snapshot_topology=True),
        "single_noapi": session(api_filter="none", callbacks=True, node_events=False, source_api=LIFECYCLE_API,
                                snapshot_topology=True),
        "single_nosites": session(api_filter="sparse", callbacks=True, node_events=False, snapshot_topology=True),
        "single_nodes": session(api_filter="sparse", callbacks=True, node_events=True, source_api=LIFECYCLE_API,
                                snapshot_topology=True),
        "detail": session(api_filter="all", callbacks=True, node_events=True, on_node_created=user_location,
                          source_api=LIFECYCLE_API, snapshot_topology=True),
    }


def torch_figures() -> tuple[dict[str, Callable[[], float]], dict[str, int]]:
    import torch
    import torchvision

    torch.manual_seed(0)
    dev = "cuda"
    train = torchvision.models.resnet18(num_classes=100).to(dev)
    opt = torch.optim.SGD(train.parameters(), lr=0.01, momentum=0.9)
    xb, yb = torch.randn(8, 3, 64, 64, device=dev), torch.randint(0, 100, (8,), device=dev)
    lossf = torch.nn.CrossEntropyLoss()

    def train_step() -> None:
        opt.zero_grad(set_to_none=True)
        lossf(train(xb), yb).backward()
        opt.step()

    infer = torchvision.models.mobilenet_v3_small().to(dev).eval()
    xi = torch.randn(1, 3, 224, 224, device=dev)
    for _ in range(5):
        train_step()
        with torch.no_grad():
            infer(xi)
    torch.cuda.synchronize()

    def timed(fn: Callable[[], None], n: int) -> float:
        torch.cuda.synchronize()
        t0 = ns()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (ns() - t0) / n

    def infer_step() -> None:
        with torch.no_grad():
            infer(xi)

    holder: dict[str, Any] = {}

    def capture() -> float:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(2):
                infer(xi)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        t0 = ns()
        with torch.cuda.graph(g), torch.no_grad():
            infer(xi)
        torch.cuda.synchronize()
        took = ns() - t0
        holder["g"] = g
        return float(took)

    def replay() -> float:
        if "g" not in holder:
            capture()
        return timed(holder["g"].replay, 200)

    raw = raw_launch()
    figures = {"torch_train_step": lambda: timed(train_step, 10), "torch_infer_step": lambda: timed(infer_step, 20),
               "torch_capture": capture, "torch_replay": replay, "raw_launch": raw}
    counts = {"torch_train_step": count_kernels(train_step), "torch_infer_step": count_kernels(infer_step),
              "torch_capture": count_kernels(infer_step), "raw_launch": 1}
    return figures, counts


def raw_launch() -> Callable[[], float]:
    from graphmode.tracer.workloads import make_workload

    wl: Any = make_workload("chain", n=1024, kernels=10)
    wl.setup()
    cu = wl.cu
    launch, fn, b, t, s, a = cu.cuLaunchKernel, wl.fn, wl.blocks, wl.threads, wl.stream, wl.args.address
    sync = cu.cuStreamSynchronize

    def block() -> float:
        sync(s)
        t0 = ns()
        for _ in range(1000):
            launch(fn, b, 1, 1, t, 1, 1, 0, s, a, 0)
        t1 = ns()
        sync(s)
        return (t1 - t0) / 1000
    return block


def count_kernels(fn: Callable[[], None]) -> int:
    """Kernels one call of fn launches (one CUPTI session, after nothing else is attached)."""
    from graphmode.tracer.cupti_session import CuptiSession
    from graphmode.tracer.decode import decode

    s = CuptiSession("graph", api_filter="none", callbacks=False)
    _KEEP.append(s)
    s.start()
    fn()
    import torch
    torch.cuda.synchronize()
    raw = s.stop()
    spans = decode(raw, 0).get("gpu_spans")
    return 0 if spans is None else int((spans["kind"].astype(str) == "kernel").sum())


def jax_figures() -> tuple[dict[str, Callable[[], float]], dict[str, int]]:
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    ws = [jax.random.normal(jax.random.fold_in(key, i), (256, 256)) * 0.05 for i in range(8)]
    x = jax.random.normal(key, (64, 256))

    @jax.jit
    def mlp(x: Any, ws: list[Any]) -> Any:
        for w in ws:
            x = jax.nn.gelu(x @ w)
        return x

    for _ in range(5):
        mlp(x, ws).block_until_ready()

    def call() -> float:
        out = mlp(x, ws)
        out.block_until_ready()
        t0 = ns()
        for _ in range(100):
            out = mlp(x, ws)
        out.block_until_ready()
        return (ns() - t0) / 100
    return {"jax_call": call}, {"jax_call": 0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--framework", default="torch", choices=("torch", "jax"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--configs", default="")
    args = ap.parse_args()
    import faulthandler
    faulthandler.enable()
    figures, counts = torch_figures() if args.framework == "torch" else jax_figures()
    cfgs = configs()
    if args.configs:
        cfgs = {k: v for k, v in cfgs.items() if k in args.configs.split(",") or k == "none"}
    rng = random.Random(29)
    vals: dict[str, dict[str, list[float]]] = {c: {f: [] for f in figures} for c in cfgs}
    for r in range(args.rounds):
        order = list(cfgs)
        rng.shuffle(order)
        for c in order:
            print(f"round {r} {c}", flush=True)
            start, stop = cfgs[c]()
            start()
            try:
                for f, fn in figures.items():
                    fn()  # warm-up under this configuration
                    vals[c][f].append(fn())
            finally:
                stop()
        print(f"round {r} done", flush=True)
    med = {c: {f: float(np.median(v)) for f, v in fs.items()} for c, fs in vals.items()}
    print(f"kernels per call: {counts}")
    print(f"{'config':16s}" + "".join(f"{f:>26s}" for f in figures))
    for c in cfgs:
        cells = []
        for f in figures:
            base, x = med["none"][f], med[c][f]
            per_k = (x - base) / counts[f] / 1e3 if counts.get(f, 0) > 0 else float("nan")
            cells.append(f"{x / 1e3:9.1f}us {x / base:5.2f}x {per_k:+6.2f}/k")
        print(f"{c:16s}" + "".join(f"{s:>26s}" for s in cells), flush=True)
    with open(args.out, "w") as fh:
        json.dump({"framework": args.framework, "rounds": args.rounds, "kernels_per_call": counts, "values_ns": vals,
                   "medians_ns": med}, fh, indent=1)


if __name__ == "__main__":
    main()
