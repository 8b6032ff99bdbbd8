"""Record a user's step function eagerly and as a captured CUDA graph (`graphmode.compare`).

The step runs through the same two-pass runner as the built-in workloads (an untraced timing pass,
then a traced pass), so the comparison gets the same undistorted wall times. Two kinds of step:
- PyTorch: `step()` takes no argument and returns tensors; the graph is a torch.cuda.CUDAGraph
  captured with torch.cuda.graph (the framework owns instantiation and replay);
- raw CUDA (cuda-python, CuPy with a raw stream, ...): `step(stream)` launches its work into the
  given CUstream; the graph is a stream capture of one call, instantiated with the driver.
Outputs are compared: the graph must compute what the eager step computed.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer import cuda_util
from graphmode.tracer.cuda_util import check
from graphmode.tracer.runner import record


def _flatten(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [x for o in obj for x in _flatten(o)]
    if isinstance(obj, dict):
        return [x for k in sorted(obj) for x in _flatten(obj[k])]
    return [obj]


class TorchGraphOps:
    """torch.cuda.CUDAGraph behind the runner's graph operations."""

    def __init__(self, torch: Any):
        self.torch = torch

    def instantiate(self, g: Any) -> Any:
        if getattr(g, "_graphmode_keep_graph", False):
            g.instantiate()
        return g

    def upload(self, g: Any) -> bool:
        return False  # PyTorch exposes no upload: the first replay pays it

    def launch(self, g: Any) -> None:
        g.replay()

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    def replay_step(self, g: Any) -> Callable[[], None]:
        replay, sync = g.replay, self.torch.cuda.synchronize

        def step() -> None:
            replay()
            sync()

        return step

    def graph_handle(self, g: Any) -> Any:
        from cuda.bindings import driver as cu

        raw = g.raw_cuda_graph() if hasattr(g, "raw_cuda_graph") else 0
        return cu.CUgraph(int(raw)) if raw else None

    def exec_handle(self, g: Any) -> int:
        try:
            return int(g.raw_cuda_graph_exec()) if hasattr(g, "raw_cuda_graph_exec") else 0
        except Exception:
            return 0

    def destroy(self, graph: Any, g: Any) -> None:
        g.reset()


class _OutputCheck:
    """Keeps the eager outputs as the reference and compares the graph's outputs with them."""

    def __init__(self) -> None:
        self.reference: list[np.ndarray] | None = None

    def check(self, outputs: list[np.ndarray], mode: str) -> tuple[bool, str]:
        if mode != "graph" or self.reference is None:
            self.reference = outputs
            return True, f"{len(outputs)} output(s) recorded as the reference"
        if len(outputs) != len(self.reference):
            return False, f"the graph produced {len(outputs)} outputs, the eager step {len(self.reference)}"
        for i, (a, b) in enumerate(zip(outputs, self.reference)):
            if a.shape != b.shape or not np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
                return False, f"output {i} differs between graph and eager step"
        return True, f"{len(outputs)} output(s) equal to the eager step's"


class TorchStepWorkload:
    name = "callable"

    def __init__(self, step: Callable[[], Any], label: str):
        self.step, self.label = step, label
        self.params: dict[str, Any] = {"step": label, "framework": "torch"}
        self._checker = _OutputCheck()
        self._mode = "eager"
        self._out: Any = None

    def setup(self) -> None:
        import torch

        self.torch = torch
        self.stream = torch.cuda.current_stream()
        self.graph_ops = TorchGraphOps(torch)
        # PyTorch asks for warm-up iterations on a side stream before capture (lazy initialisation
        # of cuBLAS handles, autograd state ...). Done here, outside the timed graph build.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.step()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()

    def eager_modes(self) -> dict[str, Callable[[], None]]:
        step, sync = self.step, self.torch.cuda.synchronize

        def eager() -> None:
            self._out = step()
            sync()

        return {"eager": eager}

    def build_graph(self) -> tuple[Any, str]:
        torch = self.torch
        try:
            g = torch.cuda.CUDAGraph(keep_graph=True)
            g._graphmode_keep_graph = True
        except TypeError:  # older PyTorch: capture_end instantiates
            g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self._out = self.step()
        self._mode = "graph"
        return g, "capture"

    def reset(self) -> None:
        pass

    def verify(self) -> tuple[bool, str]:
        outs = [t.detach().float().cpu().numpy() for t in _flatten(self._out) if hasattr(t, "detach")]
        ok, note = self._checker.check(outs, self._mode)
        if self._mode == "graph":
            self._mode = "eager"  # the next pass starts eager again
        return ok, note

    def teardown(self) -> None:
        pass


class CudaStepWorkload:
    name = "callable"

    def __init__(self, step: Callable[[Any], Any], label: str, outputs: Callable[[], Any] | None):
        self.step, self.label, self.outputs = step, label, outputs
        self.params: dict[str, Any] = {"step": label, "framework": "cuda"}
        self._checker = _OutputCheck()
        self._mode = "eager"

    def setup(self) -> None:
        from cuda.bindings import driver

        self.cu = driver
        cuda_util.init_device()
        self.stream = cuda_util.new_stream()

    def eager_modes(self) -> dict[str, Callable[[], None]]:
        step, stream, sync = self.step, self.stream, self.cu.cuStreamSynchronize

        def eager() -> None:
            step(stream)
            sync(stream)

        return {"eager": eager}

    def build_graph(self) -> tuple[Any, str]:
        cu = self.cu
        check(cu.cuStreamBeginCapture(self.stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture")
        try:
            self.step(self.stream)
        finally:
            graph = check(cu.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
        self._mode = "graph"
        return graph, "capture"

    def reset(self) -> None:
        pass

    def verify(self) -> tuple[bool, str]:
        mode = self._mode
        self._mode = "eager"
        if self.outputs is None:
            return True, "outputs not checked (pass outputs=... to compare them)"
        outs = [np.asarray(o) for o in _flatten(self.outputs())]
        return self._checker.check(outs, mode)

    def teardown(self) -> None:
        check(self.cu.cuStreamDestroy(self.stream), "cuStreamDestroy")


def step_workload(step: Callable[..., Any], framework: str = "auto", outputs: Callable[[], Any] | None = None) -> Any:
    label = getattr(step, "__qualname__", repr(step))
    if framework == "auto":
        required = [p for p in inspect.signature(step).parameters.values()
                    if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        framework = "cuda" if required else "torch"
    if framework == "torch":
        return TorchStepWorkload(step, label)
    if framework == "cuda":
        return CudaStepWorkload(step, label, outputs)
    raise ValueError(f"framework must be 'auto', 'torch' or 'cuda', not {framework!r}")


def record_comparison(step: Callable[..., Any], out: str | os.PathLike[str], iters: int = 200, warmup: int = 10,
                      detail: str = "graph", framework: str = "auto",
                      outputs: Callable[[], Any] | None = None) -> Path:
    wl = step_workload(step, framework, outputs)
    return record(wl, Path(out), iterations=iters, warmup=warmup, detail=detail)
