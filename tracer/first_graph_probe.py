"""The first-graph probe of a `graphmode run`: what this process's first CUDA graph costs over later ones, measured
in the user's own process after the script ended.

A process's first graph costs more than its later ones, by an amount that depends on what the process did before
(docs/metrics.md, "What the first-graph extra depends on"). The prediction from an eager trace
(analyzers.predict) needs it for the graph the user would build, and no calibration made in another process can know
it. So an untraced run of `graphmode run` (the timing run, or else the probe run: tracer.script), once the script
has ended, builds PROBE_GRAPHS small graphs one after another in the script's own process and context, and records
the first one's extra over the steady state (the median from the fourth on, as `graphmode calibrate`'s probe does).

The probe makes nothing that would pre-pay what it measures: a stream created before a first graph takes part of
its extra away, so it creates none (its graphs are built with the node API and launched on the NULL stream); its one
module and one 64 KB buffer do not. CUPTI attached earlier in the process takes much of the extra away, so never in
a traced run (docs/metrics.md, "The first-graph probe of a script"). And only where nothing else will run: the
process ends right after (never under `graphmode.trace` in a notebook, where the user's next graph would find the
extra paid).

A PyTorch program's graph goes through `torch.cuda.graph`, whose own work around the process's first capture
(synchronize, garbage collection, emptying the cache, the memory pool's set-up: milliseconds) dwarfs the driver's
extra. For a program that has PyTorch's CUDA state initialised,
`probe_torch_capture` runs `graphmode calibrate`'s torch probe (tracer.calibrate.torch_capture_probe) in the program's
process instead: its first capture is the process's first, after the program's own work, with its heap and its
allocator's cache.
"""

from __future__ import annotations

import ctypes
import sys
import time
from typing import Any

# The same chain length, number of graphs and steady state as `graphmode calibrate`'s first-graph probe.
from graphmode.tracer import cuda_util as cu_util
from graphmode.tracer.calibrate import process_faults, torch_capture_probe
from graphmode.tracer.calibrate import PROBE_GRAPHS, PROBE_KERNELS, PROBE_STEADY_FROM, SOURCE, over_steady
from graphmode.tracer.cuda_util import check, KernelArgs

PHASES = ("build", "instantiate", "upload", "first_launch")
BUFFER_BYTES = 1 << 16


class NoContextError(RuntimeError):
    """The script never made the device's primary context (it did not use that GPU, or used a context of its own)."""


def probe_first_graph(ordinal: int = 0) -> dict[str, Any]:
    """Builds, instantiates, uploads and launches PROBE_GRAPHS chains of PROBE_KERNELS one-block kernels (node API,
    NULL stream) in the device's primary context; returns per phase the first graph's extra over the steady state
    (ns), the second graph's ('second_<phase>'), their sums ('extra_ns', 'second_extra_ns'), each graph's times
    ('graphs'), and what the probe cost ('probe_ns', NVRTC compile included). Raises CudaError where a call fails,
    NoContextError where the primary context is not active (the probe would measure a fresh context's first graph)."""
    from cuda.bindings import driver as cu

    clock = time.perf_counter_ns
    t_start = clock()
    check(cu.cuInit(0), "cuInit")
    _flags, active = check(cu.cuDevicePrimaryCtxGetState(check(cu.cuDeviceGet(ordinal), "cuDeviceGet")), "cuDevicePrimaryCtxGetState")
    if not active:  # the code never used this GPU: a fresh context's first graph says nothing of its process
        raise NoContextError(f"the script made no CUDA context on device {ordinal}: no first graph to probe")
    device = cu_util.init_device(ordinal)
    module = cu_util.compile_module(SOURCE, "graphmode_probe.cu", device)
    buf = 0
    try:
        fn = cu_util.get_function(module, "tiny")
        buf = cu_util.alloc(BUFFER_BYTES)
        args = KernelArgs((buf, ctypes.c_uint64))
        params = cu.CUDA_KERNEL_NODE_PARAMS()
        params.func = fn
        params.gridDimX, params.gridDimY, params.gridDimZ = 1, 1, 1
        params.blockDimX, params.blockDimY, params.blockDimZ = 32, 1, 1
        params.sharedMemBytes = 0
        params.kernelParams = args.address
        rows: list[dict[str, int]] = []
        for _ in range(PROBE_GRAPHS):  # one graph at a time, destroyed before the next
            a = clock()
            graph = check(cu.cuGraphCreate(0), "cuGraphCreate")
            try:
                prev: list[Any] = []
                for _ in range(PROBE_KERNELS):
                    prev = [check(cu.cuGraphAddKernelNode(graph, prev or None, len(prev), params), "cuGraphAddKernelNode")]
                b = clock()
                gexec = check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
                c = clock()
                try:
                    check(cu.cuGraphUpload(gexec, 0), "cuGraphUpload")
                    check(cu.cuStreamSynchronize(0), "cuStreamSynchronize")
                    d = clock()
                    check(cu.cuGraphLaunch(gexec, 0), "cuGraphLaunch")
                    check(cu.cuStreamSynchronize(0), "cuStreamSynchronize")
                    e = clock()
                finally:
                    check(cu.cuGraphExecDestroy(gexec), "cuGraphExecDestroy")
            finally:
                check(cu.cuGraphDestroy(graph), "cuGraphDestroy")
            rows.append({"build": b - a, "instantiate": c - b, "upload": d - c, "first_launch": e - d})
    finally:
        if buf:
            cu_util.free(buf)
        check(cu.cuModuleUnload(module), "cuModuleUnload")
    return summarize(rows) | {"probe_ns": clock() - t_start, "kernels": PROBE_KERNELS}


def summarize(rows: list[dict[str, int]]) -> dict[str, Any]:
    """The probe's figures from its graphs' phase times (ns), first graph first: per phase the first and second
    graphs' extra over the steady state (the median from PROBE_STEADY_FROM on) and their sums."""
    if len(rows) <= PROBE_STEADY_FROM:
        raise ValueError(f"the first-graph probe needs more than {PROBE_STEADY_FROM} graphs, got {len(rows)}")
    out: dict[str, Any] = {"graphs": [dict(r) for r in rows]}
    for k in PHASES:
        out[k], out[f"second_{k}"] = over_steady(rows, k)
    out["extra_ns"] = float(sum(out[k] for k in PHASES))
    out["second_extra_ns"] = float(sum(out[f"second_{k}"] for k in PHASES))
    return out


def torch_in_use() -> bool:
    """PyTorch is imported in this process and has made its CUDA state (the program ran CUDA work through it)."""
    torch = sys.modules.get("torch")
    try:
        return torch is not None and bool(torch.cuda.is_initialized())
    except Exception:  # a broken or partial import: not a PyTorch program to probe
        return False


def probe_torch_capture() -> dict[str, Any]:
    """`graphmode calibrate`'s torch probe (tracer.calibrate.torch_capture_probe: a small MLP captured TORCH_CAPTURES
    times with torch.cuda.graph, instantiation and the first replay timed apart) in this process, where the program's
    PyTorch work has run; with what the probe cost ('probe_ns') and the process's major page faults before it (reads
    from disk: a process that made many ran cold, 'process_major_faults'). analyzers.costmodel.torch_capture_spreads reads it."""
    t0, faults = time.perf_counter_ns(), process_faults()
    return torch_capture_probe() | {"probe_ns": time.perf_counter_ns() - t0, "process_major_faults": faults[0]}
