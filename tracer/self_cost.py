"""What tracing cost this very run, measured in the traced process itself when the script has ended (issue 29).

A traced run's CPU-bound periods and captures are slower than untraced ones: with CUPTI's kernel records on, each
launch through PyTorch cost the H200 about 7 us more (third-party programs, benchmarks/notes/s17), and graphmode's
graph-level callbacks and memory samples add to each capture. How much depends on the machine, the driver and the
framework's launch path, so it is measured where the figures were taken: in the script's own process, once its code
has returned and its pass is written, the probe runs the same small work twice,

- **untraced**: the run's session stopped and CUPTI detached (cuptiFinalize);
- **traced**: under a fresh CUPTI session of the run's own configuration (activity kinds, callbacks), whose records
  are thrown away. (Launching the probe's work while the run's own session was still attached, after the program
  ended, met CUDA_ERROR_ILLEGAL_ADDRESS in every program tried on the H200: benchmarks/notes/s17.)

and stores both. The work goes through the program's own launch path where it can: PyTorch ops (`add_` on a small
tensor, one kernel each) and `torch.cuda.graph` captures of them for a PyTorch program, else cuLaunchKernel of a tiny
kernel and stream captures of it (cuda-python). Each figure is the median of BLOCKS blocks; a capture is timed at two
sizes so that its cost splits into a part per graph and a part per captured kernel.

analyzers.tracer_cost reads it: a traced run's CPU-bound periods lose (per-launch cost x launches), its one-time
costs (per-graph + per-node cost x nodes), each shown beside the figure it corrects.
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from graphmode.tracer import cuda_util
from graphmode.tracer.calibrate import SOURCE
from graphmode.tracer.cupti_session import CuptiSession
from graphmode.tracer.ranks import device_ordinal

LAUNCHES = 200  # launches per timed block
BLOCKS = 7  # timed blocks per figure (their median is kept, and all of them)
CAPTURE_SIZES = (8, 64)  # kernels per captured graph: the slope is the per-node cost, the intercept the per-graph one
CAPTURES = 5  # captures per size per side

ns = time.perf_counter_ns


class _Work:
    """The probe's work on one launch path: `launch()` one kernel; `replay()` one launch of a one-kernel graph;
    `capture(n)` one graph of n kernels captured, instantiated and destroyed (its time, ns); `sync()`."""

    path = ""

    def launch(self) -> None: ...

    def replay(self) -> None: ...

    def capture(self, n: int) -> float:
        raise NotImplementedError

    def sync(self) -> None: ...

    def close(self) -> None: ...


class _TorchWork(_Work):
    path = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.x = torch.zeros(256, device="cuda")
        self.stream = torch.cuda.Stream()
        self.one = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.one, stream=self.stream):
            self.x.add_(1.0)

    def launch(self) -> None:
        self.x.add_(1.0)

    def replay(self) -> None:
        self.one.replay()

    def capture(self, n: int) -> float:
        torch = self.torch
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        t0 = ns()
        with torch.cuda.graph(g, stream=self.stream):
            for _ in range(n):
                self.x.add_(1.0)
        torch.cuda.synchronize()
        took = ns() - t0
        del g
        return float(took)

    def sync(self) -> None:
        self.torch.cuda.synchronize()


class _DriverWork(_Work):
    path = "driver"

    def __init__(self) -> None:
        from cuda.bindings import driver as cu

        self.cu = cu
        self.check = cuda_util.check
        device = cuda_util.init_device(device_ordinal())
        self.module = cuda_util.compile_module(SOURCE, "graphmode_self_cost.cu", device)
        self.fn = cuda_util.get_function(self.module, "tiny")
        self.buf = cuda_util.alloc(1 << 12)
        self.args = cuda_util.KernelArgs((self.buf, ctypes.c_uint64))
        self.stream = self.check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value), "cuStreamCreate")
        check = self.check
        check(cu.cuStreamBeginCapture(self.stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCapture")
        self.launch()
        self.one_graph = check(cu.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
        self.one = check(cu.cuGraphInstantiate(self.one_graph, 0), "cuGraphInstantiate")

    def launch(self) -> None:
        self.cu.cuLaunchKernel(self.fn, 1, 1, 1, 32, 1, 1, 0, self.stream, self.args.address, 0)

    def replay(self) -> None:
        self.cu.cuGraphLaunch(self.one, self.stream)

    def capture(self, n: int) -> float:
        cu, check = self.cu, self.check
        self.sync()
        t0 = ns()
        check(cu.cuStreamBeginCapture(self.stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCapture")
        for _ in range(n):
            self.launch()
        graph = check(cu.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
        ex = check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        took = ns() - t0
        check(cu.cuGraphExecDestroy(ex), "cuGraphExecDestroy")
        check(cu.cuGraphDestroy(graph), "cuGraphDestroy")
        return float(took)

    def sync(self) -> None:
        self.cu.cuStreamSynchronize(self.stream)

    def close(self) -> None:
        try:
            self.cu.cuGraphExecDestroy(self.one)
            self.cu.cuGraphDestroy(self.one_graph)
            self.cu.cuStreamDestroy(self.stream)
            self.cu.cuMemFree(self.buf)
        except Exception:
            pass


def _work() -> _Work:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return _TorchWork()
    except Exception:
        pass
    return _DriverWork()


def _block(w: _Work, op: Callable[[], None]) -> float:
    """Host ns per call of `op` over LAUNCHES calls (the queue drained before and after)."""
    w.sync()
    t0 = ns()
    for _ in range(LAUNCHES):
        op()
    took = ns() - t0
    w.sync()
    return took / LAUNCHES


def _side(w: _Work) -> dict[str, Any]:
    """One side's figures: ns per kernel launch and per graph replay (per block), ns per capture at each size."""
    _block(w, w.launch)  # warm-up
    launch = [_block(w, w.launch) for _ in range(BLOCKS)]
    _block(w, w.replay)
    replay = [_block(w, w.replay) for _ in range(BLOCKS)]
    w.capture(CAPTURE_SIZES[0])  # warm-up (a first capture costs more)
    captures = {str(n): [w.capture(n) for _ in range(CAPTURES)] for n in CAPTURE_SIZES}
    return {"launch_ns": launch, "replay_ns": replay, "capture_ns": captures}


def measure_self_cost(session_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The probe, once the program's session has stopped and its pass is written: the untraced side first (CUPTI
    detached), then the traced side under a fresh CuptiSession of the run's configuration (`session_kwargs`), whose
    records are thrown away. Returns the figures (summarize) with the path and what the probe cost, or {'error'}:
    a probe that fails costs the trace nothing."""
    t0 = ns()
    stage = "setup"
    w: _Work | None = None
    try:
        w = _work()
        stage = "untraced"
        untraced = _side(w)
        stage = "traced"
        session = CuptiSession(**session_kwargs)
        session.start()
        try:
            traced = _side(w)
        finally:
            session.stop()
        return summarize(traced, untraced) | {"path": w.path, "probe_ns": ns() - t0}
    except Exception as e:
        return {"error": f"{stage}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", "probe_ns": ns() - t0}
    finally:
        if w is not None:
            w.close()


def _cost(traced: list[float], untraced: list[float]) -> tuple[float, float]:
    """Median traced minus median untraced, and its sd (each median's: 1.2533 sd / sqrt(n), normal approximation)."""
    t, u = np.asarray(traced, float), np.asarray(untraced, float)
    sd = float(np.hypot(np.std(t, ddof=1), np.std(u, ddof=1)) * 1.2533 / np.sqrt(min(t.size, u.size))) \
        if t.size > 1 and u.size > 1 else 0.0
    return float(np.median(t) - np.median(u)), sd


def summarize(traced: dict[str, Any], untraced: dict[str, Any]) -> dict[str, Any]:
    """The per-launch, per-replay, per-node and per-graph costs from the two sides' raw figures (ns; kept beside them):
    differences of medians, with the sd of the launch and replay costs."""
    per_launch, sd = _cost(traced["launch_ns"], untraced["launch_ns"])
    per_replay, replay_sd = _cost(traced["replay_ns"], untraced["replay_ns"])
    n0, n1 = (str(n) for n in CAPTURE_SIZES)
    diff = {n: float(np.median(traced["capture_ns"][n]) - np.median(untraced["capture_ns"][n])) for n in (n0, n1)}
    per_node = (diff[n1] - diff[n0]) / (int(n1) - int(n0))
    per_graph = diff[n0] - per_node * int(n0)
    return {"per_launch_ns": per_launch, "per_launch_sd_ns": sd, "per_replay_ns": per_replay,
            "per_replay_sd_ns": replay_sd, "per_node_ns": per_node, "per_graph_ns": per_graph,
            "traced": traced, "untraced": untraced}
