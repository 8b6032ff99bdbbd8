"""What one kernel costs to launch eagerly through each framework, on this GPU (`graphmode calibrate`).

A graph whose kernels never ran outside it (torch.compile's reduce-overhead, XLA's command buffers, a graph
replayed from the program's start) has no eager twin in the trace; what it saves is then the eager cost of the
same kernels launched one by one by the framework that made them, less the replay (analyzers.counterfactual).
The per-kernel launch cost differs by framework by several times (a raw cuLaunchKernel, PyTorch's ATen dispatch,
Inductor's generated Python launcher, XLA's thunk executor), so each is measured here, in fresh processes:

- `torch`: ATen ops called eagerly, pointwise (`add_`) and a library op (cuDNN `conv2d`);
- `inductor`: a function compiled by `torch.compile(mode="default")` (no graphs): its Triton kernels (a chain of
  reductions and adds, compiled with fusion off so that each is a kernel) and its extern library calls (a chain of
  convolutions);
- `xla`: a `jax.jit` function run by XLA with command buffers off (`--xla_gpu_enable_command_buffer=`): a chain of
  small matmuls and a chain of reductions.

Each variant runs at two sizes (ops per call). Per size: the wall time per call of a loop of calls that
synchronizes only at its end (the framework's throughput, whatever thread launches), the host time of the call
itself, and, after the timing, a short CUPTI session over one call that counts its kernels and their GPU time
(the timing runs with no CUPTI attached). The fit (analyzers.costmodel.fit_launch_costs) reads the per-kernel
slope and the per-call intercept from the two sizes.

With `--traced` the same probe runs under the CUPTI session of `graphmode run`'s traced run (tracer.run_configs.
single_config), attached before the first call and kept to the end, as a traced script has it: the difference from
the untraced processes is what tracing adds to each launch (and, for PyTorch, to each captured kernel and graph:
the `capture` rows time torch.cuda.graph captures of the pointwise chain). A traced process counts no kernels (its
calls are those of the untraced processes). analyzers.costmodel.fit_tracer_costs reads both.

Run as `python -m graphmode.tracer.launch_probes FRAMEWORK [--traced [--api-filter=F]]`; prints one JSON object
(`--api-filter`: the traced session records the API calls of that filter instead, a candidate configuration's).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.decode import decode
from graphmode.tracer.run_configs import session_kwargs, single_config

FRAMEWORKS = ("torch", "inductor", "xla")
SIZES = (8, 32)  # ops per call
CALLS = 40  # timed calls per size
REPEATS = 5  # timed loops per size (their median is kept, and all of them)
WARM_CALLS = 5
CAPTURES = 5  # torch.cuda.graph captures timed per size (--traced and not: what tracing adds to a capture)

ns = time.perf_counter_ns
_traced = False  # set by main(--traced): a CUPTI session is attached for the whole process; no kernel counting


def _loop(fn: Callable[[], Any], sync: Callable[[Any], None]) -> tuple[float, float]:
    """(wall ns per call, median host ns of one call) over CALLS calls that synchronize only at the end."""
    host = []
    out = fn()
    sync(out)
    t0 = ns()
    for _ in range(CALLS):
        a = ns()
        out = fn()
        host.append(ns() - a)
    sync(out)
    wall = (ns() - t0) / CALLS
    host.sort()
    return wall, float(host[len(host) // 2])


def _kernels(fn: Callable[[], Any], sync: Callable[[Any], None]) -> tuple[int, float]:
    """Kernels one call launches and their GPU time added up (ns): one CUPTI session over one call, after the timing."""
    sync(fn())
    session = CuptiSession("graph", callbacks=False, api_filter="none")
    session.start()
    try:
        sync(fn())
    finally:
        raw = session.stop()
    spans = decode(raw, 0).get("gpu_spans")
    if spans is None:
        return 0, 0.0
    sel = spans["kind"].astype(str) == "kernel"
    dur = (spans["end_ns"][sel].astype("int64") - spans["start_ns"][sel].astype("int64")).sum()
    return int(sel.sum()), float(dur)


def _measure(variants: dict[str, Callable[[int], Callable[[], Any]]], sync: Callable[[Any], None]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    made: dict[tuple[str, int], Callable[[], Any]] = {}
    for name, make in variants.items():  # per variant: two
        for k in SIZES:
            fn = made[(name, k)] = make(k)
            for _ in range(WARM_CALLS):  # compilation, autotuning, allocator growth
                sync(fn())
    # All timing first, then the CUPTI sessions: CUPTI attached once slows the process's later launches.
    for (name, k), fn in made.items():
        loops = [_loop(fn, sync) for _ in range(REPEATS)]
        walls = sorted(w for w, _ in loops)
        rows.append({"variant": name, "ops": k, "wall_ns": walls[len(walls) // 2], "walls_ns": walls,
                     "host_ns": sorted(h for _, h in loops)[len(loops) // 2]})
    for row in rows:
        row["kernels"], row["gpu_ns"] = (-1, -1.0) if _traced else _kernels(made[(row["variant"], row["ops"])], sync)
    return rows


def _captures(chain: Callable[[int], Callable[[], Any]]) -> list[dict[str, Any]]:
    """torch.cuda.graph captures (capture and instantiation) of `chain(k)` at each size, timed on the host: one warm-up
    capture, then CAPTURES timed ones per size; rows of variant 'capture' (wall_ns: the median)."""
    import torch

    stream = torch.cuda.Stream()
    rows = []
    for k in SIZES:
        fn = chain(k)
        times = []
        for i in range(CAPTURES + 1):
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            t0 = ns()
            with torch.cuda.graph(g, stream=stream):
                fn()
            torch.cuda.synchronize()
            if i:
                times.append(ns() - t0)
            del g
        times.sort()
        rows.append({"variant": "capture", "ops": k, "wall_ns": times[len(times) // 2], "walls_ns": times,
                     "host_ns": times[len(times) // 2], "kernels": k, "gpu_ns": -1.0})
    return rows


def probe_torch() -> dict[str, Any]:
    import torch
    import torch.nn.functional as F

    x = torch.zeros(1024, device="cuda")
    img = torch.randn(1, 16, 14, 14, device="cuda")
    w = torch.randn(16, 16, 3, 3, device="cuda") / 12

    def pointwise(k: int) -> Callable[[], Any]:
        def f() -> Any:
            for _ in range(k):
                x.add_(1.0)
            return x
        return f

    def library(k: int) -> Callable[[], Any]:
        def f() -> Any:
            y = img
            for _ in range(k):
                y = F.conv2d(y, w, padding=1)
            return y
        return f

    with torch.no_grad():
        rows = _measure({"pointwise": pointwise, "library": library}, lambda _: torch.cuda.synchronize())
        rows += _captures(pointwise)
    return {"framework": "torch", "version": torch.__version__, "rows": rows}


def probe_inductor() -> dict[str, Any]:
    import torch
    import torch._inductor.config as inductor_config
    import torch.nn.functional as F

    x0 = torch.randn(128, 128, device="cuda")
    img = torch.randn(1, 16, 14, 14, device="cuda")
    w = torch.randn(16, 16, 3, 3, device="cuda") / 12

    def triton(k: int) -> Callable[[], Any]:
        def body(x: Any) -> Any:
            for _ in range(k):
                x = x + x.sum(dim=0, keepdim=True) * 1e-3
            return x
        # Left to itself Inductor fuses the whole chain into one persistent reduction (seen on the H200: 1 kernel
        # at 8 and 32 ops); with fusion off each reduction and each add is a kernel of its own, launched by the same
        # generated launcher as a model's kernels.
        with inductor_config.patch(max_fusion_size=1):
            f = torch.compile(body, mode="default", dynamic=False)
            f(x0)  # compiles under the patch
        return lambda: f(x0)

    def extern(k: int) -> Callable[[], Any]:
        def body(y: Any) -> Any:
            for _ in range(k):
                y = F.conv2d(y, w, padding=1)
            return y
        f = torch.compile(body, mode="default", dynamic=False)
        return lambda: f(img)

    with torch.no_grad():
        rows = _measure({"triton": triton, "extern": extern}, lambda _: torch.cuda.synchronize())
    return {"framework": "inductor", "version": torch.__version__, "rows": rows}


def probe_xla() -> dict[str, Any]:
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_gpu_enable_command_buffer=" not in flags:
        raise RuntimeError("the XLA probe runs with command buffers off: set XLA_FLAGS=--xla_gpu_enable_command_buffer=")
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    x0 = jax.random.normal(key, (32, 32), dtype=jnp.float32)
    w = jax.random.normal(key, (32, 32), dtype=jnp.float32) / 8
    r0 = jax.random.normal(key, (128, 128), dtype=jnp.float32)

    def gemm(k: int) -> Callable[[], Any]:
        def body(x: Any) -> Any:
            for _ in range(k):
                x = x @ w
            return x
        f = jax.jit(body)
        return lambda: f(x0)

    def reduce(k: int) -> Callable[[], Any]:
        def body(x: Any) -> Any:
            for _ in range(k):
                x = x + x.sum(axis=0, keepdims=True) * 1e-3
            return x
        f = jax.jit(body)
        return lambda: f(r0)

    rows = _measure({"gemm": gemm, "reduce": reduce}, lambda out: out.block_until_ready())
    return {"framework": "xla", "version": jax.__version__, "rows": rows}


PROBES: dict[str, Callable[[], dict[str, Any]]] = {"torch": probe_torch, "inductor": probe_inductor, "xla": probe_xla}


def env_for(framework: str) -> dict[str, str]:
    """The environment a probe process runs in: XLA's command buffers off for `xla` (its kernels then launch one by
    one), JAX's start-up preallocation off."""
    env = dict(os.environ)
    if framework == "xla":
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer=").strip()
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return env


def available() -> tuple[str, ...]:
    """The frameworks this Python can probe: torch and inductor where PyTorch is installed, xla where JAX is."""
    have = {m: importlib.util.find_spec(m) is not None for m in ("torch", "jax")}
    return tuple(f for f in FRAMEWORKS if have["jax" if f == "xla" else "torch"])


def run_launch_probes(procs: int = 3, frameworks: tuple[str, ...] | None = None, timeout_s: float = 300.0,
                      progress: Callable[[str, int, int], None] | None = None,
                      traced: tuple[str, ...] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """Each framework's probe in `procs` fresh processes, interleaved (process i of every framework, then i + 1), so
    that a drift of the machine spreads over all of them; for the frameworks in `traced`, a traced twin of each
    (--traced: rows marked `traced`). Returns the probes' JSON objects (each with `process`) and the errors of those
    that failed (a framework that cannot run loses its rows, not the calibration)."""
    chosen = available() if frameworks is None else frameworks
    jobs = [(fw, False) for fw in chosen] + [(fw, True) for fw in chosen if fw in traced]
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    total = procs * len(jobs)
    for i in range(procs):
        for j, (fw, twin) in enumerate(jobs):
            what = f"{fw} launch cost{' traced' if twin else ''}"
            if progress is not None:
                progress(f"{what} in a fresh process ({i + 1}/{procs})", i * len(jobs) + j, total)
            try:
                proc = subprocess.run([sys.executable, "-m", "graphmode.tracer.launch_probes", fw, *(["--traced"] if twin else [])],
                                      capture_output=True, text=True, timeout=timeout_s, env=env_for(fw))
            except subprocess.TimeoutExpired:
                errors.append(f"{what} probe {i + 1}: no answer in {timeout_s:.0f} s")
                continue
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                errors.append(f"{what} probe {i + 1}: exit {proc.returncode}: {tail[-300:]}")
                continue
            rows.append({**json.loads(lines[-1]), "process": i, "traced": twin})
    return rows, errors


def main(argv: list[str]) -> int:
    global _traced
    api = next((a.split("=", 1)[1] for a in argv if a.startswith("--api-filter=")), None)
    args = [a for a in argv if a not in ("--traced", "--reattached") and not a.startswith("--api-filter=")]
    if len(args) != 1 or args[0] not in PROBES:
        print(f"usage: python -m graphmode.tracer.launch_probes {{{'|'.join(FRAMEWORKS)}}} [--traced [--api-filter=F] "
              "[--reattached]]", file=sys.stderr)
        return 2
    session, said = None, {}
    if "--traced" in argv:
        _traced = True
        config = single_config()  # `graphmode run`'s one traced run; --api-filter: a candidate's API records instead
        kwargs = session_kwargs(config if api is None else dataclasses.replace(config, api_filter=api), nvtx=False)
        # which calibration the process is for (costmodel.probe_api_filter, and the capture keys of _slopes)
        said = {"api_filter": kwargs["api_filter"], "topology_copies": bool(kwargs["copy_destroyed_graphs"])}
        session = CuptiSession(**kwargs)
        session.start()
        if "--reattached" in argv:
            # as the one run has it after an untraced window (tracer.untraced_windows): CUPTI detached, then a session
            # attached again without GRAPH_TRACE (script.ScriptTracer._attach)
            session.stop()
            session = CuptiSession(**dict(kwargs, graph_trace=False))
            session.start()
            said["reattached"] = True
    try:
        out = PROBES[args[0]]()
    finally:
        if session is not None:
            session.stop()
    print(json.dumps(out | {"traced": _traced} | said))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
