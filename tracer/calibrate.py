"""`graphmode calibrate`: measure what CUDA graphs cost on this GPU and fit the cost model.

It builds graphs of growing size and node mix by stream capture (chains of kernels, memsets, memcpys,
host functions and external-event record/wait nodes, mixed chains, fork/join and fully connected
layers across streams), and times, per graph: the capture, cuGraphInstantiate, cuGraphUpload, the first
launch, steady replays (launch + synchronize), the cuGraphLaunch call alone and the replay's GPU span,
and the same operations issued eagerly; where the shape has only kernels, memsets and memcpys, the same graph
is also built once with the explicit node API (cuGraphAdd*Node from Python, `Calibrator.build`) and that build
is timed. Host times are time.perf_counter_ns around the driver calls;
GPU spans are CUDA events, with a spin kernel queued first so that the start event is stamped when the
GPU reaches the graph. No CUPTI call is made while timing (docs/design.md: CUPTI calls made between a
graph's build and its replays slowed them). Only at the very end, a short CUPTI session measures the
calibration nodes' own GPU durations, the same quantity a trace gives the prediction for the user's
kernels; it detaches when it stops.

The first graph of a process costs more (docs/metrics.md): it is measured apart, as the extra of a
process's first graph over identical later ones (PROBE_GRAPHS in a row; the second still costs more), in
`probes` fresh processes set up like a program that graphmode measures (its recording stack imported, the
step run eagerly 200 times first: the model's), and in as many bare ones and this process (kept beside them
as a control), and kept out of the fit; as many more program-like processes build their graphs with the
node API (a node-API program's first graph). Shapes and repetitions run in a seeded random order so that a
drift over the run (instantiation getting slower with each graph a process builds) spreads over all sizes
instead of biasing the slope; each row keeps its position (`order`) so the drift can be read from the
residuals.

Where PyTorch is installed, `torch_probes` further fresh processes time what `torch.cuda.graph` itself adds
around a capture (`torch_capture_probe`): its synchronize, `empty_cache`, the memory pool's set-up and
bookkeeping, its Python. The CUDA calls are priced by the fit above; this is the rest, which a prediction
for a PyTorch program adds (analyzers.predict). The process's first PyTorch capture costs far more than later
ones (docs/metrics.md, "Cost model"): both are kept.

Shape programs (`program`) are pure and run on any machine; everything that touches the GPU is in `Calibrator`. This
module only measures: the graph a capture of a program builds (its features, the node-API build's dependencies) comes
from graphmode's capture rules in analyzers.calibration (CaptureRules), and the fit from analyzers.costmodel; the
`graphmode calibrate` command wires them (measure_calibration -> write_measurements -> analyzers' fit_measurements).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphmode.tracer import cuda_util as cu_util
from graphmode.tracer.cuda_util import KernelArgs, check
from graphmode.tracer.topology import node_type_name

# A program is a list of steps: ('op', kind, stream), ('record', event, stream), ('wait', stream, event),
# ('record_ext', event, stream), ('wait_ext', stream, event) (external events: nodes in a capture).
Step = tuple[str, Any, int]

MAX_STREAMS = 17
MAX_EVENTS = 64
PROBE_KERNELS = 20  # the first-graph probe: a chain like `graphmode bench chain`'s default step
PROBE_GRAPHS = 6  # graphs the first-graph probe builds in a row; the steady state is the median from the
PROBE_STEADY_FROM = 3  # fourth on (0-based index 3)
TORCH_CAPTURES = 5  # captures per torch probe process: the first of the process, then later ones
PROGRAM_EAGER_STEPS = 200  # eager steps before the first capture in a '--probe-program' process
TORCH_REPLAYS = 20  # replays timed per torch probe process
TREE_CALLS = 8  # calls per cudagraph-tree probe function: compile + warm-up, recording, replays
SPIN_NODE_NS = 5_000  # 'kernel_spin' nodes: does the per-node cost of a replay depend on the kernel's length?
# 'kernel_wide' nodes: the short kernel launched with WIDE_BLOCKS_PER_SM blocks of WIDE_THREADS per SM, one full
# wave over every SM. Does a kernel spread over the whole GPU cost a replay what its eager duration says, and
# how much of a wide kernel off the critical path (on a parallel branch) adds to the span?
WIDE_BLOCKS_PER_SM = 8
WIDE_THREADS = 256
KERNEL_KINDS = ("kernel", "kernel_wide", "kernel_spin")  # the calibration's kernel nodes (Calibrator.kernel)
MEMSET_WORDS = 256  # a memset node: 32-bit words of the calibration buffer
MEMCPY_BYTES = 4096  # a memcpy node: device to device

SOURCE = r"""
extern "C" __global__ void tiny(float *p) {
    if (threadIdx.x == 0) p[blockIdx.x] += 1.0f;
}
extern "C" __global__ void spin_ns(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""


@dataclass(frozen=True)
class Shape:
    name: str
    kind: str  # 'chain' | 'forkjoin' | 'layers' | 'event_chain'
    ops: tuple[str, ...] = ()  # chain: node kind per position
    width: int = 0
    depth: int = 0  # forkjoin: kernels per branch; layers: layers; event_chain: units
    op: str = "kernel"  # forkjoin: the branches' kernel ('kernel' or 'kernel_wide')


def shapes(quick: bool = False) -> list[Shape]:
    """The calibration set: sizes and mixes that separate per-node-type and per-edge costs."""
    def chain(kind: str, n: int) -> Shape:
        return Shape(f"{kind}-chain-{n}", "chain", (kind,) * n)

    def wide_forkjoin(w: int, d: int) -> Shape:
        return Shape(f"wide-forkjoin-{w}x{d}", "forkjoin", width=w, depth=d, op="kernel_wide")

    if quick:
        return ([chain("kernel", n) for n in (1, 8, 64, 256)] + [chain("kernel_spin", n) for n in (8, 64)]
                + [chain("kernel_wide", n) for n in (8, 64)] + [wide_forkjoin(w, d) for w, d in ((2, 4), (4, 4))]
                + [chain("memset", n) for n in (8, 64)]
                + [chain("memcpy", n) for n in (8, 64)] + [chain("host", n) for n in (4, 32)]
                + [Shape("mixed-24", "chain", ("kernel", "memset", "memcpy") * 8), Shape("mixed-96", "chain", ("kernel", "memset", "memcpy") * 32)]
                + [Shape(f"event-chain-{n}", "event_chain", depth=n) for n in (4, 16)]
                + [Shape(f"forkjoin-{w}x{d}", "forkjoin", width=w, depth=d) for w, d in ((2, 4), (4, 8), (8, 2))]
                + [Shape(f"layers-{w}x{l}", "layers", width=w, depth=l) for w, l in ((4, 3), (8, 2))])
    return ([chain("kernel", n) for n in (1, 4, 16, 64, 256, 1024)] + [chain("kernel_spin", n) for n in (8, 64, 256)]
            + [chain("kernel_wide", n) for n in (4, 16, 64, 256)]
            + [wide_forkjoin(w, d) for w, d in ((2, 4), (4, 4), (8, 2), (4, 16))]
            + [chain("memset", n) for n in (8, 64, 256)]
            + [chain("memcpy", n) for n in (8, 64, 256)] + [chain("host", n) for n in (8, 64)]
            + [Shape("mixed-24", "chain", ("kernel", "memset", "memcpy") * 8), Shape("mixed-192", "chain", ("kernel", "memset", "memcpy") * 64)]
            + [Shape(f"event-chain-{n}", "event_chain", depth=n) for n in (4, 32)]
            + [Shape(f"forkjoin-{w}x{d}", "forkjoin", width=w, depth=d) for w, d in ((2, 4), (4, 8), (8, 2), (8, 16), (16, 8))]
            + [Shape(f"layers-{w}x{l}", "layers", width=w, depth=l) for w, l in ((4, 4), (8, 3), (16, 2))])


def program(shape: Shape) -> list[Step]:
    """The stream operations of one shape; issued eagerly or under capture on stream 0."""
    if shape.kind == "chain":
        return [("op", k, 0) for k in shape.ops]
    if shape.kind == "event_chain":
        # kernel, then an external event record node and an external wait node (on another event, which
        # was recorded long before: the wait is satisfied at once)
        return [s for _ in range(shape.depth) for s in (("op", "kernel", 0), ("record_ext", 0, 0), ("wait_ext", 0, 1))]
    w, d = shape.width, shape.depth
    if w + 1 > MAX_STREAMS:
        raise ValueError(f"shape {shape.name}: {w} branches need more than {MAX_STREAMS - 1} side streams")
    steps: list[Step] = [("op", "memset", 0), ("record", 0, 0)]
    if shape.kind == "forkjoin":
        for i in range(1, w + 1):
            steps += [("wait", i, 0)] + [("op", shape.op, i)] * d + [("record", i, i)]
        steps += [("wait", 0, i) for i in range(1, w + 1)]
    elif shape.kind == "layers":
        if 1 + w * d > MAX_EVENTS:
            raise ValueError(f"shape {shape.name}: needs more than {MAX_EVENTS} events")

        def ev(layer: int, i: int) -> int:
            return 1 + layer * w + (i - 1)

        steps += [("wait", i, 0) for i in range(1, w + 1)]
        for layer in range(d):
            for i in range(1, w + 1):
                if layer:
                    steps += [("wait", i, ev(layer - 1, j)) for j in range(1, w + 1) if j != i]
                steps += [("op", "kernel", i), ("record", ev(layer, i), i)]
        steps += [("wait", 0, ev(d - 1, i)) for i in range(1, w + 1)]
    else:
        raise ValueError(f"unknown shape kind {shape.kind!r}")
    return steps + [("op", "kernel", 0)]


def over_steady(rows: list[dict[str, Any]], key: str) -> tuple[float, float]:
    """The first and the second of `rows` (graphs built one after another in one process, the first first) over the
    steady state: `key` less its median from PROBE_STEADY_FROM on. The first-graph probes of `graphmode calibrate`
    (Calibrator.first_graph_probe) and of `graphmode run` (tracer.first_graph_probe) both read their graphs so."""
    steady = float(np.median([r[key] for r in rows[PROBE_STEADY_FROM:]]))
    return float(rows[0][key]) - steady, float(rows[1][key]) - steady


def api_buildable(steps: list[Step]) -> bool:
    """Whether `Calibrator.build` makes this program's graph with the node API: kernels, memsets and memcpys joined
    by stream order and events (no host functions, no external event nodes)."""
    return all(what in ("record", "wait") or (what == "op" and a in (*KERNEL_KINDS, "memset", "memcpy")) for what, a, _ in steps)


# A graph's nodes as a capture builds them: each node's kind, in step order, and the positions of the nodes each depends
# on. graphmode's capture rules (analyzers.calibration.node_dependencies) work them out; the calibration builds the same
# graph with the node API from them.
NodePlan = tuple[list[str], list[list[int]]]


def chain_nodes(steps: list[Step]) -> NodePlan:
    """The nodes of a chain of ops on one stream: each after the one before it (stream order). The first-graph probe's
    chain; any other program's nodes are analyzers.calibration.node_dependencies'."""
    if any(what != "op" or stream != 0 for what, _, stream in steps):
        raise ValueError("chain_nodes: ops on stream 0 only")
    return [str(kind) for _, kind, _ in steps], [[i - 1] if i else [] for i in range(len(steps))]


@dataclass(frozen=True)
class CaptureRules:
    """What the calibration asks of graphmode's capture rules (analyzers.calibration.CAPTURE_RULES, handed in by the
    front door): `nodes`, a program's graph for the node-API build; `features`, the feature counts of the graph a
    capture builds, recorded in each row next to the captured graph's real counts."""

    nodes: Callable[[list[Step]], NodePlan]
    features: Callable[[list[Step]], dict[str, float]]


# ---------------------------------------------------------------------------------------------- GPU


def _needed(nodes: NodePlan | None) -> NodePlan:
    if nodes is None:
        raise ValueError("the node-API build needs the graph's nodes (CaptureRules.nodes)")
    return nodes


def _ms_to_ns(ms: float) -> float:
    return float(ms) * 1e6


class Calibrator:
    """Device resources and the timed operations of the calibration (one stream set, one module)."""

    def __init__(self) -> None:
        from cuda.bindings import driver as cu

        self.cu, self.check = cu, check
        self.device = cu_util.init_device()
        self.module = cu_util.compile_module(SOURCE, "calibrate.cu", self.device)
        self.f_tiny = cu_util.get_function(self.module, "tiny")
        self.f_spin = cu_util.get_function(self.module, "spin_ns")
        attr = cu.CUdevice_attribute
        self.sm_count = int(check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.device.handle),
                                  "cuDeviceGetAttribute"))
        self.wide_blocks = self.sm_count * WIDE_BLOCKS_PER_SM
        self.buf = cu_util.alloc(max(1 << 16, 4 * self.wide_blocks))
        self.src = cu_util.alloc(1 << 16)
        self.dst = cu_util.alloc(1 << 16)
        self.tiny_args = KernelArgs((self.buf, ctypes.c_uint64))
        self.spin5_args = KernelArgs((SPIN_NODE_NS, ctypes.c_ulonglong))  # graph nodes of a few microseconds
        self._spin_ns = ctypes.c_ulonglong(0)
        self._spin_ptrs = np.array([ctypes.addressof(self._spin_ns)], dtype=np.uint64)
        self.streams = [cu_util.new_stream() for _ in range(MAX_STREAMS)]
        self.events = [cu_util.new_event() for _ in range(MAX_EVENTS)]
        self.ext_events = [cu_util.new_event() for _ in range(2)]
        self.t0 = check(cu.cuEventCreate(int(cu.CUevent_flags.CU_EVENT_DEFAULT)), "cuEventCreate")
        self.t1 = check(cu.cuEventCreate(int(cu.CUevent_flags.CU_EVENT_DEFAULT)), "cuEventCreate")
        # A host function that does nothing: libc's free(NULL) has the CUhostFn signature void(void*). It is
        # launched through the driver library itself: cuda.bindings' cuLaunchHostFunc hands the driver a
        # wrapper that frees its own data after the first call, so a captured host node replayed a second
        # time read freed memory (a segfault in the driver's callback thread, H200, cuda-bindings 13.3).
        self._host_fn = ctypes.c_void_p(ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p).value)
        libcuda = ctypes.CDLL("libcuda.so.1" if sys.platform != "win32" else "nvcuda.dll")
        self._cu_launch_host_func = libcuda.cuLaunchHostFunc
        self._cu_launch_host_func.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        self._cu_launch_host_func.restype = ctypes.c_int
        s0 = self.streams[0]
        check(cu.cuEventRecord(self.ext_events[1], s0), "cuEventRecord")
        check(cu.cuStreamSynchronize(s0), "cuStreamSynchronize")

    def close(self) -> None:
        cu, check = self.cu, self.check
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        for e in [*self.events, *self.ext_events, self.t0, self.t1]:
            check(cu.cuEventDestroy(e), "cuEventDestroy")
        for s in self.streams:
            check(cu.cuStreamDestroy(s), "cuStreamDestroy")
        for p in (self.buf, self.src, self.dst):
            cu_util.free(p)
        check(cu.cuModuleUnload(self.module), "cuModuleUnload")

    def plan(self, steps: list[Step]) -> list[tuple[Callable[..., Any], tuple[Any, ...], str]]:
        """The driver calls of a program, bound once so that the timed loop only calls them."""
        cu, S, E, X = self.cu, self.streams, self.events, self.ext_events
        rec_ext = int(cu.CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL)
        wait_ext = int(cu.CUevent_wait_flags.CU_EVENT_WAIT_EXTERNAL)
        out: list[tuple[Callable[..., Any], tuple[Any, ...], str]] = []
        for what, a, b in steps:  # per step of a shape (built once per shape, outside timing)
            if what == "op":
                s = S[b]
                if a in KERNEL_KINDS:
                    f, blocks, threads, args = self.kernel(a)
                    out.append((cu.cuLaunchKernel, (f, blocks, 1, 1, threads, 1, 1, 0, s, args.address, 0), "cuLaunchKernel"))
                elif a == "memset":
                    out.append((cu.cuMemsetD32Async, (self.buf, 0, MEMSET_WORDS, s), "cuMemsetD32Async"))
                elif a == "memcpy":
                    out.append((cu.cuMemcpyDtoDAsync, (self.dst, self.src, MEMCPY_BYTES, s), "cuMemcpyDtoDAsync"))
                elif a == "host":
                    out.append((self._launch_host_func, (s,), "cuLaunchHostFunc"))
                else:
                    raise ValueError(f"unknown op kind {a!r}")
            elif what == "record":
                out.append((cu.cuEventRecord, (E[a], S[b]), "cuEventRecord"))
            elif what == "wait":
                out.append((cu.cuStreamWaitEvent, (S[a], E[b], 0), "cuStreamWaitEvent"))
            elif what == "record_ext":
                out.append((cu.cuEventRecordWithFlags, (X[a], S[b], rec_ext), "cuEventRecordWithFlags"))
            elif what == "wait_ext":
                out.append((cu.cuStreamWaitEvent, (S[a], X[b], wait_ext), "cuStreamWaitEvent"))
            else:
                raise ValueError(f"unknown step {what!r}")
        return out

    def kernel(self, kind: str) -> tuple[Any, int, int, Any]:
        """(function, blocks, threads per block, arguments) of a calibration kernel node of `kind` (KERNEL_KINDS), the
        same whether it is launched (`plan`) or added to a graph (`build`)."""
        if kind == "kernel_wide":
            return self.f_tiny, self.wide_blocks, WIDE_THREADS, self.tiny_args
        if kind == "kernel_spin":
            return self.f_spin, 1, 1, self.spin5_args
        return self.f_tiny, 1, 32, self.tiny_args

    def _launch_host_func(self, stream: Any) -> tuple[Any]:
        """cuLaunchHostFunc(stream, free, NULL) straight into the driver, as a cuda.bindings-style result."""
        return (self.cu.CUresult(self._cu_launch_host_func(ctypes.c_void_p(int(stream)), self._host_fn, None)),)

    def issue(self, plan: list[tuple[Callable[..., Any], tuple[Any, ...], str]]) -> None:
        for f, args, name in plan:
            r = f(*args)
            if r[0]:
                self.check(r, name)

    def spin(self, ns: int, stream: Any) -> None:
        self._spin_ns.value = int(ns)
        self.check(self.cu.cuLaunchKernel(self.f_spin, 1, 1, 1, 1, 1, 1, 0, stream, int(self._spin_ptrs.ctypes.data), 0),
                   "cuLaunchKernel(spin)")

    def capture(self, plan: list[tuple[Callable[..., Any], tuple[Any, ...], str]]) -> tuple[Any, int]:
        """Stream capture of the plan on stream 0; returns (graph, ns)."""
        cu, check, s0, clock = self.cu, self.check, self.streams[0], time.perf_counter_ns
        t0 = clock()
        check(cu.cuStreamBeginCapture(s0, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture")
        try:
            self.issue(plan)
        except BaseException:
            res = cu.cuStreamEndCapture(s0)  # leave capture mode whatever happened; drop the partial graph
            if int(res[0]) == 0 and len(res) > 1:
                cu.cuGraphDestroy(res[1])
            raise
        graph = check(cu.cuStreamEndCapture(s0), "cuStreamEndCapture")
        return graph, clock() - t0

    def build(self, graph_nodes: NodePlan) -> tuple[Any, int]:
        """The same graph built with the explicit node API (cuGraphCreate, cuGraphAdd*Node), as a cuda-python program
        writes it: each node's parameters made and its dependencies given where it is added. A node depends on what a
        capture would make it depend on (`graph_nodes`, worked out by the capture rules before the timing starts). Returns (graph,
        ns). Kernel, memset and memcpy steps only: host and external event nodes raise ValueError (those shapes are
        timed by capture alone)."""
        cu, check, clock = self.cu, self.check, time.perf_counter_ns
        kinds, deps_of = graph_nodes
        if bad := sorted(set(kinds) - {*KERNEL_KINDS, "memset", "memcpy"}):
            raise ValueError(f"the node-API build has no {bad[0]!r} node")
        ctx = self.device.context
        t0 = clock()
        graph = check(cu.cuGraphCreate(0), "cuGraphCreate")
        try:
            nodes: list[Any] = []
            for kind, dep_idx in zip(kinds, deps_of):  # per node, in step order (its dependencies come before it)
                deps = [nodes[j] for j in dep_idx]
                if kind in KERNEL_KINDS:
                    p = cu.CUDA_KERNEL_NODE_PARAMS()
                    f, blocks, threads, args = self.kernel(kind)
                    p.func = f
                    p.gridDimX, p.gridDimY, p.gridDimZ = blocks, 1, 1
                    p.blockDimX, p.blockDimY, p.blockDimZ = threads, 1, 1
                    p.sharedMemBytes = 0
                    p.kernelParams = args.address
                    nodes.append(check(cu.cuGraphAddKernelNode(graph, deps or None, len(deps), p), "cuGraphAddKernelNode"))
                elif kind == "memset":
                    ms = cu.CUDA_MEMSET_NODE_PARAMS()
                    ms.dst, ms.pitch, ms.value, ms.elementSize, ms.width, ms.height = self.buf, 0, 0, 4, MEMSET_WORDS, 1
                    nodes.append(check(cu.cuGraphAddMemsetNode(graph, deps or None, len(deps), ms, ctx), "cuGraphAddMemsetNode"))
                else:
                    cp = cu.CUDA_MEMCPY3D()
                    cp.srcMemoryType = cp.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
                    cp.srcDevice, cp.dstDevice = self.src, self.dst
                    cp.WidthInBytes, cp.Height, cp.Depth = MEMCPY_BYTES, 1, 1
                    nodes.append(check(cu.cuGraphAddMemcpyNode(graph, deps or None, len(deps), cp, ctx), "cuGraphAddMemcpyNode"))
        except BaseException:
            cu.cuGraphDestroy(graph)
            raise
        return graph, clock() - t0

    def topology(self, graph: Any) -> dict[str, float]:
        """Nodes per type and edges of a built graph (driver calls, after its timing)."""
        cu, check = self.cu, self.check
        count = int(check(cu.cuGraphGetNodes(graph, 0), "cuGraphGetNodes")[-1])
        nodes = list(check(cu.cuGraphGetNodes(graph, count), "cuGraphGetNodes")[0]) if count else []
        types = [node_type_name(check(cu.cuGraphNodeGetType(n), "cuGraphNodeGetType")) for n in nodes]
        out = {f"actual_{t}": float(types.count(t)) for t in set(types)}
        out["actual_nodes"] = float(count)
        out["actual_edges"] = float(int(cu.cuGraphGetEdges(graph, 0)[-1]))
        return out

    def measure(self, steps: list[Step], replays: int, gated: int, eager: int, build: str = "capture",
                api_too: bool = False, nodes: NodePlan | None = None) -> dict[str, float]:
        """Every timing of one graph of the program (module doc); the graph is destroyed afterwards. `build`: how the
        measured graph is made, 'capture' (row key 'capture') or 'api' (the node API, row key 'build_api'). `api_too`:
        the same graph is also built once with the node API after the captured one is gone, and only that build is
        timed ('build_api', with its topology as 'api_nodes' and 'api_edges'). `nodes`: the graph the node API builds
        (needed for 'api' and `api_too`)."""
        cu, check, s0, clock = self.cu, self.check, self.streams[0], time.perf_counter_ns
        plan = self.plan(steps)
        row: dict[str, float] = {}
        if build == "api":
            graph, row["build_api"] = self.build(_needed(nodes))
        else:
            graph, row["capture"] = self.capture(plan)
        t0 = clock()
        gexec = check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        t1 = clock()
        check(cu.cuGraphUpload(gexec, s0), "cuGraphUpload")
        check(cu.cuStreamSynchronize(s0), "cuStreamSynchronize")
        t2 = clock()
        check(cu.cuGraphLaunch(gexec, s0), "cuGraphLaunch")
        check(cu.cuStreamSynchronize(s0), "cuStreamSynchronize")
        t3 = clock()
        row.update(instantiate=float(t1 - t0), upload=float(t2 - t1), first_launch=float(t3 - t2))
        launch, sync = cu.cuGraphLaunch, cu.cuStreamSynchronize
        walls = np.empty(replays, dtype=np.int64)
        for i in range(replays):
            a = clock()
            (err,) = launch(gexec, s0)
            if err:
                check((err,), "cuGraphLaunch")
            (err,) = sync(s0)
            if err:
                check((err,), "cuStreamSynchronize")
            walls[i] = clock() - a
        p10, p50, p90 = np.percentile(walls, [10, 50, 90])
        row.update(replay_wall=float(p50), replay_wall_p10=float(p10), replay_wall_p90=float(p90))
        # The launch call and the GPU span: the GPU is kept busy by a spin kernel long enough to cover the
        # host's event record and launch call, so the call never waits and the start event is stamped
        # when the GPU reaches the graph.
        n = len(steps)
        spin = 100_000 + 200 * n
        calls = np.empty(gated, dtype=np.int64)
        spans = np.empty(gated, dtype=np.float64)
        for i in range(gated):  # gated=0: the first-graph probe needs none of this
            self.spin(spin, s0)
            check(cu.cuEventRecord(self.t0, s0), "cuEventRecord")
            a = clock()
            check(launch(gexec, s0), "cuGraphLaunch")
            calls[i] = clock() - a
            check(cu.cuEventRecord(self.t1, s0), "cuEventRecord")
            check(cu.cuEventSynchronize(self.t1), "cuEventSynchronize")
            spans[i] = _ms_to_ns(check(cu.cuEventElapsedTime(self.t0, self.t1), "cuEventElapsedTime"))
        if gated:
            # A replay's GPU span cannot exceed launch-plus-synchronize of the same graph. Host-function nodes
            # break the gating: behind a 100 us spin kernel the driver's callback thread answers late, so the
            # smaller holds.
            row.update(launch_call=float(np.median(calls)), replay_gpu=min(float(np.median(spans)), row["replay_wall"]))
        row.update(self.topology(graph))
        check(cu.cuGraphExecDestroy(gexec), "cuGraphExecDestroy")
        check(cu.cuGraphDestroy(graph), "cuGraphDestroy")
        if api_too:
            graph, row["build_api"] = self.build(_needed(nodes))
            topo = self.topology(graph)
            row.update(api_nodes=topo["actual_nodes"], api_edges=topo["actual_edges"])
            check(cu.cuGraphDestroy(graph), "cuGraphDestroy")
        if eager:
            # The same operations issued eagerly from the same loop: the eager launch costs per node type.
            self.issue(plan)
            check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            issue = np.empty(eager, dtype=np.int64)
            wall = np.empty(eager, dtype=np.int64)
            for i in range(eager):
                a = clock()
                self.issue(plan)
                b = clock()
                check(sync(s0), "cuStreamSynchronize")
                issue[i], wall[i] = b - a, clock() - a
            row.update(eager_issue=float(np.median(issue)), eager_wall=float(np.median(wall)))
        return row

    def first_graph_probe(self, eager_steps: int = 1, build: str = "capture") -> dict[str, float]:
        """The extra cost of this process's first graph: PROBE_GRAPHS identical probe chains built one after another,
        the first minus the steady state (the median of the graphs from the fourth on), per operation. Not the first
        minus the second: a process's second graph still costs more than its later ones (docs/metrics.md, "Cost
        model"), so first-minus-second would leave that much out. Keys: the extras ('capture' or, for
        `build` 'api', 'build'; 'instantiate', 'upload', 'first_launch'), 'second_<k>' (the second graph's extra
        over the steady state) and 'first_<k>' (the first graph's own time).
        Its kernels run eagerly `eager_steps` times before (a program runs its step eagerly before capturing it),
        each step synchronized. `build`: the graphs captured ('capture') or built with the node API ('api')."""
        steps: list[Step] = [("op", "kernel", 0)] * PROBE_KERNELS
        plan = self.plan(steps)
        for _ in range(eager_steps):
            self.issue(plan)
            self.check(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")
        nodes = chain_nodes(steps) if build == "api" else None
        rows = [self.measure(steps, replays=5, gated=0, eager=0, build=build, nodes=nodes) for _ in range(PROBE_GRAPHS)]
        made = "build_api" if build == "api" else "capture"
        keys = {"build" if build == "api" else "capture": made, "instantiate": "instantiate", "upload": "upload",
                "first_launch": "first_launch"}
        out: dict[str, float] = {}
        for k, v in keys.items():
            out[k], out[f"second_{k}"] = over_steady(rows, v)
            out[f"first_{k}"] = rows[0][v]
        return out

    def node_durations(self, per_kind: int = 100) -> tuple[dict[str, float], dict[str, float]]:
        """Own GPU duration (CUPTI) of the calibration's kernels, memset and memcpy, and the GPU idle between
        back-to-back eager ops of one kind on one stream, queued behind a spin kernel so they run back to
        back. The only CUPTI session of a calibration, made last; it detaches when it stops."""
        # lazy, as the recording stack is in measure_calibration: the probe processes import this module, and a bare
        # probe process loads none of it
        from graphmode.tracer.cupti_session import CuptiSession
        from graphmode.tracer.decode import decode

        steps = {k: self.plan([("op", k, 0)] * per_kind) for k in ("kernel", "kernel_spin", "kernel_wide", "memset", "memcpy")}
        s0 = self.streams[0]
        session = CuptiSession("graph")
        session.start()
        try:
            for plan in steps.values():
                self.spin(5_000_000, s0)
                self.issue(plan)
                self.check(self.cu.cuStreamSynchronize(s0), "cuStreamSynchronize")
        finally:
            raw = session.stop()
        spans = decode(raw, 0).get("gpu_spans")
        dur: dict[str, float] = {}
        gap: dict[str, float] = {}
        if spans is None:
            return dur, gap
        kind, name = spans["kind"].astype(str), spans["name"].astype(str)
        start, end = spans["start_ns"].astype(np.int64), spans["end_ns"].astype(np.int64)
        grid = spans["grid_x"].astype(np.int64) * spans["grid_y"].astype(np.int64) * spans["grid_z"].astype(np.int64)
        for k in ("kernel", "kernel_spin", "kernel_wide", "memset", "memcpy"):  # per node type
            if k == "kernel":
                sel = (kind == "kernel") & np.char.startswith(name, "tiny") & (grid == 1)
            elif k == "kernel_wide":
                sel = (kind == "kernel") & np.char.startswith(name, "tiny") & (grid == self.wide_blocks)
            elif k == "kernel_spin":  # the 5 ms gates are spin kernels too: told apart by their length
                sel = (kind == "kernel") & np.char.startswith(name, "spin") & (end - start < 1_000_000)
            else:
                sel = kind == k
            if not sel.any():
                continue
            o = np.argsort(start[sel])
            s, e = start[sel][o], end[sel][o]
            dur[k] = float(np.median(e - s))
            if s.size > 1:
                gap[k] = float(np.median(np.maximum(s[1:] - e[:-1], 0)))
        return dur, gap


# ---------------------------------------------------------------------------------------------- the run


def _in_fresh_process(flag: str, timeout_s: float) -> dict[str, Any] | str:
    """`python -m graphmode.tracer.calibrate FLAG` in a fresh process: the JSON line it printed last, or a
    one-line reason where it timed out, failed or printed none."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    try:
        proc = subprocess.run([sys.executable, "-m", "graphmode.tracer.calibrate", flag], capture_output=True, text=True,
                              timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:.0f} s"
    if proc.returncode == 0:
        for line in reversed(proc.stdout.splitlines()):
            if line.startswith("{"):
                result: dict[str, Any] = json.loads(line)
                return result
    tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return tail[:300]


def process_faults() -> tuple[int, int]:
    """The process's major and minor page faults so far (getrusage; (0, 0) where the platform has none)."""
    try:
        import resource

        u = resource.getrusage(resource.RUSAGE_SELF)
        return int(u.ru_majflt), int(u.ru_minflt)
    except (ImportError, OSError):
        return 0, 0


def torch_capture_probe(captures: int = TORCH_CAPTURES) -> dict[str, Any]:
    """What `torch.cuda.graph` adds around a capture, in this (fresh) process: a small PyTorch step (a
    4-layer 512-wide MLP and an elementwise tail), warmed up on a side stream as PyTorch's documentation asks,
    captured `captures` times. Per capture: the `with torch.cuda.graph(g):` block's wall time and the body's
    (the step's calls, issued in capture mode), perf_counter_ns. `keep_graph=True` leaves instantiation out of
    the block, as graphmode.compare does: the cost model prices it. Returns {"first_ns": the first block minus
    a later capture's body (the median), i.e. everything the process's first PyTorch capture costs beyond
    issuing the calls; "later_ns": [block - body of each later capture]; "blocks_ns", "bodies_ns": raw;
    "blocks_cpu_ns", "blocks_major_faults", "blocks_minor_faults": per block, the thread's CPU time and the process's
    page faults (a major one read from disk);
    "instantiate_ns", "first_replay_ns": each graph's `g.instantiate()` and its first replay + synchronize, timed
    apart (a PyTorch process's first graph costs less extra there than a bare driver program's, since its first
    capture already paid part of it: costmodel.torch_capture_spreads)}."""
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    layers = [torch.nn.Linear(512, 512) for _ in range(4)]
    net = torch.nn.Sequential(*[m for lin in layers for m in (lin, torch.nn.ReLU())]).to(dev).eval()
    x = torch.randn(64, 512, device=dev)

    def step() -> Any:
        with torch.no_grad():
            return torch.tanh(net(x)) * 0.5 + 1.0

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    # The same step issued eagerly (host time of the call; synchronized after, untimed): a body issued in capture
    # mode costs PyTorch more host time than this (its private memory pool, capture-mode checks), which the
    # prediction scales a PyTorch program's eager issue time by (costmodel: 'capture_ratio').
    eager: list[int] = []
    for _ in range(TORCH_REPLAYS):
        t0 = time.perf_counter_ns()
        step()
        eager.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
    blocks: list[int] = []
    bodies: list[int] = []
    instantiates: list[int] = []
    first_replays: list[int] = []
    # per block, the thread's CPU time and the process's page faults: a block whose wall time the CPU did not spend
    # waited (a read from disk is a major fault), which tells a cold process's first capture from a slow one's
    cpu: list[int] = []
    faults: list[tuple[int, int]] = []
    for _ in range(captures):
        try:
            g = torch.cuda.CUDAGraph(keep_graph=True)
            kept = True
        except TypeError:  # older PyTorch: capture_end instantiates (then counted here too)
            g = torch.cuda.CUDAGraph()
            kept = False
        f0, c0 = process_faults(), time.thread_time_ns()
        t0 = time.perf_counter_ns()
        with torch.cuda.graph(g):
            b0 = time.perf_counter_ns()
            step()
            b1 = time.perf_counter_ns()
        t1 = time.perf_counter_ns()
        cpu.append(time.thread_time_ns() - c0)
        f1 = process_faults()
        faults.append((f1[0] - f0[0], f1[1] - f0[1]))
        blocks.append(t1 - t0)
        bodies.append(b1 - b0)
        if kept:  # instantiation and the first replay (+ synchronize) timed apart
            t2 = time.perf_counter_ns()
            g.instantiate()
            t3 = time.perf_counter_ns()
            g.replay()
            torch.cuda.synchronize()
            t4 = time.perf_counter_ns()
            instantiates.append(t3 - t2)
            first_replays.append(t4 - t3)
        else:
            g.replay()
            torch.cuda.synchronize()
        del g
    later_body = float(np.median(bodies[1:])) if len(bodies) > 1 else float(bodies[0])
    # A replay through PyTorch: `g.replay()` + torch.cuda.synchronize() (wall), the replay's GPU span (CUDA events,
    # behind a GPU sleep so that the start event is stamped when the GPU reaches the graph) and the host time of
    # `g.replay()` alone behind that sleep: PyTorch's replay costs more host time than a bare cuGraphLaunch.
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    walls, spans, calls = [], [], []
    for _ in range(TORCH_REPLAYS):
        t0 = time.perf_counter_ns()
        g.replay()
        torch.cuda.synchronize()
        walls.append(time.perf_counter_ns() - t0)
        torch.cuda._sleep(400_000)
        e0.record()
        t0 = time.perf_counter_ns()
        g.replay()
        calls.append(time.perf_counter_ns() - t0)
        e1.record()
        e1.synchronize()
        spans.append(e0.elapsed_time(e1) * 1e6)
    span = float(np.median(spans))
    return {"first_ns": float(blocks[0] - later_body), "later_ns": [float(b - d) for b, d in zip(blocks[1:], bodies[1:])],
            "blocks_ns": [float(b) for b in blocks], "bodies_ns": [float(b) for b in bodies],
            "blocks_cpu_ns": [float(c) for c in cpu], "blocks_major_faults": [f[0] for f in faults],
            "blocks_minor_faults": [f[1] for f in faults],
            "replay_host_ns": [float(w - span) for w in walls], "replay_call_ns": [float(c) for c in calls], "replay_span_ns": span,
            "eager_step_ns": [float(e) for e in eager],
            "instantiate_ns": [float(x) for x in instantiates], "first_replay_ns": [float(x) for x in first_replays],
            "torch_version": str(torch.__version__)}


def tree_probe(calls: int = TREE_CALLS, widths: tuple[int, ...] = (512, 384)) -> dict[str, Any]:
    """What a cudagraph tree (`torch.compile(mode="reduce-overhead")`) adds around a capture, in this (fresh)
    process: for each width, a 4-layer MLP step (as torch_capture_probe's) compiled with cudagraph trees and called
    `calls` times, each call synchronized, perf_counter_ns around it; torch.cuda.CUDAGraph.capture_begin and
    capture_end are wrapped to time the capture (begin's entry to end's return: the captured calls and the
    instantiation, which the cost model prices). The call that captured is the recording; later calls replay.
    Per width: "framework_ns" = recording call - steady call (median of the later ones) - its captures, i.e. what
    the tree spends around the capture beyond the CUDA calls (its memory-pool checkpoint, bookkeeping, the
    dispatch into the tree, Python); "call_host_ns" = the host time of a steady call while the GPU is kept busy
    (the launch never waits): the tree's per-call cost, a floor under its replay period. The first width's is the
    process's first recording; the second compiles a second function in the same process (a later recording).
    Dynamo's compilation is in the first call, which does not record (it warms the tree up); a compilation heard
    in the recording call (Dynamo's callback handler) is taken off its time."""
    import torch
    from torch.cuda.graphs import CUDAGraph

    clock = time.perf_counter_ns
    marks: list[tuple[str, int]] = []
    begin, end = CUDAGraph.capture_begin, CUDAGraph.capture_end

    def capture_begin(g: Any, *a: Any, **k: Any) -> Any:
        marks.append(("begin", clock()))
        return begin(g, *a, **k)

    def capture_end(g: Any, *a: Any, **k: Any) -> Any:
        r = end(g, *a, **k)
        marks.append(("end", clock()))
        return r

    setattr(CUDAGraph, "capture_begin", capture_begin)
    setattr(CUDAGraph, "capture_end", capture_end)
    # Dynamo's compilations (its callback handler), which a recording call may hold
    compiles: list[tuple[str, int]] = []
    import torch._dynamo

    def on_start(args: Any) -> None:
        if "dynamo" in str(getattr(getattr(args, "callback_trigger", None), "name", "dynamo")).lower():
            compiles.append(("begin", clock()))

    def on_end(args: Any) -> None:
        if "dynamo" in str(getattr(getattr(args, "callback_trigger", None), "name", "dynamo")).lower():
            compiles.append(("end", clock()))

    torch._dynamo.callback_handler.register_start_callback(on_start)
    torch._dynamo.callback_handler.register_end_callback(on_end)
    torch.manual_seed(0)
    out: dict[str, Any] = {"torch_version": str(torch.__version__), "recordings": []}
    for width in widths:  # per compiled function: two
        net = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]).cuda().eval()
        x = torch.randn(64, width, device="cuda")

        def step(inp: Any, net: Any = net) -> Any:
            with torch.no_grad():
                return torch.tanh(net(inp)) * 0.5 + 1.0

        fn = torch.compile(step, mode="reduce-overhead")
        walls: list[int] = []
        captured: list[int] = []
        compiled: list[int] = []
        for _ in range(calls):
            n0, c0 = len(marks), len(compiles)
            t0 = clock()
            y = fn(x)
            torch.cuda.synchronize()
            walls.append(clock() - t0)
            m, c = marks[n0:], compiles[c0:]
            captured.append(sum(t for k, t in m if k == "end") - sum(t for k, t in m if k == "begin"))
            compiled.append(sum(t for k, t in c if k == "end") - sum(t for k, t in c if k == "begin") if len(c) % 2 == 0 else -1)
            del y
        # The first call compiles and warms the tree up (the first function's may capture an empty graph for the
        # memory pool); the recording is the first later call that captured.
        rec = next((i for i, c in enumerate(captured) if c > 0 and i >= 1), None)
        row: dict[str, Any] = {"width": width, "walls_ns": walls, "captures_ns": captured, "compiles_ns": compiled}
        if rec is None or rec + 3 >= calls or compiled[rec] < 0:
            row["error"] = (f"recording in call {rec} of {calls}" + (" during an unfinished compilation" if rec is not None and compiled[rec] < 0
                            else ": no recording after the compiling call with steady calls after it"))
        else:
            steady = float(np.median(walls[rec + 2:]))
            host: list[int] = []
            for _ in range(10):  # steady calls behind a ~2 ms GPU sleep: the host's own time per call
                torch.cuda._sleep(4_000_000)
                t0 = clock()
                y = fn(x)
                host.append(clock() - t0)
                torch.cuda.synchronize()
                del y
            row.update(recording_call=rec, steady_ns=steady, call_host_ns=float(np.median(host)),
                       framework_ns=float(walls[rec] - steady - captured[rec] - compiled[rec]))
        out["recordings"].append(row)
    setattr(CUDAGraph, "capture_begin", begin)
    setattr(CUDAGraph, "capture_end", end)
    return out


def torch_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def measure_calibration(rules: CaptureRules, repeats: int = 5, replays: int = 30, probes: int = 6, quick: bool = False,
                        seed: int = 0, progress: Callable[[str, int, int], None] | None = None, torch_probes: int = 5,
                        trees: bool = True, launch_probes: int = 3) -> dict[str, Any]:
    """Runs the calibration on this GPU: the measurements (what write_measurements writes and the fit reads;
    machine, calibration, table, node_gpu_ns, eager_gap_ns, the probes' rows). `rules`: graphmode's capture rules
    (analyzers.calibration.CAPTURE_RULES). `torch_probes`: fresh processes that time torch.cuda.graph's own work, and
    as many that time cudagraph trees' (`trees`; none where PyTorch is not installed). `launch_probes`: fresh processes per
    framework (PyTorch eager, Inductor, XLA, where installed) that time its eager launch cost (tracer.launch_probes)."""
    # lazy: the probe processes (`python -m graphmode.tracer.calibrate --probe`) import this module, and a bare probe
    # process loads nothing of the recording stack (only --probe-program imports it, on purpose)
    from graphmode.tracer.runner import machine_meta

    note = progress or (lambda *_: None)
    began = time.perf_counter()
    cal = Calibrator()
    meta = machine_meta(cal.device)
    errors: list[str] = []
    probe_rows: list[dict[str, float]] = []
    bare_rows: list[dict[str, float]] = []
    api_rows: list[dict[str, float]] = []
    torch_rows: list[dict[str, Any]] = []
    tree_rows: list[dict[str, Any]] = []
    launch_rows: list[dict[str, Any]] = []
    gc_was = gc.isenabled()
    gc.disable()  # no collection pause inside a timed loop
    try:
        note("first graph of the process", 0, 1)
        bare_rows.append(cal.first_graph_probe())  # this process's first graph: before anything else builds one
        # The model's first-graph extra comes from fresh processes set up like a program (--probe-program); bare
        # processes (--probe: the chain run once, nothing else imported) are kept beside them in the measurements.
        # --probe-program-api: the same program-like process whose graphs are built with the node API.
        for i in range(probes):
            note(f"first graph in a fresh process ({i + 1}/{probes})", 0, 1)
            for flag, rows_ in (("--probe-program", probe_rows), ("--probe-program-api", api_rows), ("--probe", bare_rows)):
                r = _in_fresh_process(flag, 120.0)
                if isinstance(r, str):
                    errors.append(f"fresh-process probe {i + 1} ({flag}) failed: {r}")
                else:
                    rows_.append(r)
        work = [(sh, rep) for sh in shapes(quick) for rep in range(repeats)]
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(work))
        table: list[dict[str, Any]] = []
        failed: set[str] = set()
        for k, w in enumerate(order):  # per graph built: tens
            sh, rep = work[int(w)]
            if sh.name in failed:
                continue
            note(f"{sh.name} (repeat {rep + 1}/{repeats})", k, len(work))
            steps = program(sh)
            # External event flags are invalid outside a capture: those shapes have no eager twin.
            eager = replays if sh.kind != "event_chain" and len(steps) <= 1024 else 0
            try:
                row: dict[str, Any] = {"shape": sh.name, "kind": sh.kind, "repeat": rep, "order": k, "first_graph": False}
                row.update(rules.features(steps))
                row["predicted_nodes"], row["predicted_edges"] = row.pop("nodes"), row["edges"]
                api_too = api_buildable(steps)
                row.update(cal.measure(steps, replays, gated=max(replays // 2, 5), eager=eager, api_too=api_too,
                                       nodes=rules.nodes(steps) if api_too else None))
                table.append(row)
            except Exception as e:  # one shape family failing (a driver without host nodes, ...) must not lose the rest
                failed.add(sh.name)
                errors.append(f"{sh.name}: {type(e).__name__}: {e}")

                check(cal.cu.cuCtxSynchronize(), "cuCtxSynchronize")  # a sticky error stops the calibration here
        # Features the fit uses are the captured graph's real counts (the predicted ones stay in the row).
        for row in table:
            for t in ("kernel", "memset", "memcpy", "host"):
                row[t] = row.get(f"actual_{t}", 0.0)
            row["event"] = row.get("actual_event_record", 0.0) + row.get("actual_wait_event", 0.0)
            row["edges"] = row.get("actual_edges", row["edges"])
        note("node durations (CUPTI)", len(work), len(work))
        try:
            node_ns, gap_ns = cal.node_durations()
        except Exception as e:
            node_ns, gap_ns = {}, {}
            errors.append(f"node durations (CUPTI): {type(e).__name__}: {e}")
        # Last, so that other processes' PyTorch contexts come after every timing of this one.
        if torch_probes and torch_available():
            probes_of = [("--torch-probe", 180.0, "torch.cuda.graph's own work", "torch probe", torch_rows)]
            if trees:
                probes_of.append(("--tree-probe", 400.0, "cudagraph trees' own work", "cudagraph-tree probe", tree_rows))
            for flag, timeout_s, what, name, rows in probes_of:  # per kind of PyTorch probe: two
                for i in range(torch_probes):
                    note(f"{what} in a fresh process ({i + 1}/{torch_probes})", len(work), len(work))
                    probe = _in_fresh_process(flag, timeout_s)
                    if isinstance(probe, str):
                        errors.append(f"{name} {i + 1} failed: {probe}")
                        continue
                    rows.append(probe)
                    errors += [f"{name} {i + 1}, width {r['width']}: {r['error']}" for r in probe.get("recordings", []) if "error" in r]
        # Each framework's eager launch cost (tracer.launch_probes), in fresh processes, for graphs with no eager twin.
        if launch_probes:
            from graphmode.tracer.launch_probes import available, run_launch_probes

            # untraced, and traced as `graphmode run`'s one run is: what tracing adds (analyzers.tracer_cost)
            launch_rows, launch_errors = run_launch_probes(launch_probes, progress=lambda what, *_: note(what, len(work), len(work)),
                                                           traced=available())
            errors += launch_errors
    finally:
        if gc_was:
            gc.enable()
    cal.close()
    seconds = time.perf_counter() - began
    machine = {k: meta.get(k, "") for k in ("gpu_name", "compute_capability", "driver_version", "cuda_driver_version",
                                             "cuda_runtime_version", "tool_version")}
    machine["created_at"] = meta.get("started_at", "")
    machine["sm_count"] = cal.sm_count
    calibration = {"repeats": repeats, "replays": replays, "probes": len(probe_rows), "api_probes": len(api_rows),
                   "torch_probes": len(torch_rows),
                   "tree_probes": len(tree_rows), "wide_blocks": cal.wide_blocks, "wide_threads": WIDE_THREADS,
                   "quick": quick, "seed": seed,
                   "graphs": len(table), "seconds": round(seconds, 1), "errors": errors, "hostname": meta.get("hostname", "")}
    raw = {"machine": machine, "calibration": calibration, "table": table, "node_gpu_ns": node_ns, "eager_gap_ns": gap_ns,
           "first_graph_probes": probe_rows, "first_graph_probes_api": api_rows, "first_graph_probes_bare": bare_rows,
           "torch_probes": torch_rows, "tree_probes": tree_rows, "launch_probes": launch_rows}
    return raw


def write_measurements(raw: dict[str, Any], model_path: Path) -> Path:
    """Writes a calibration's measurements beside the model file they are for (<stem>.measurements.json), before the
    fit: a fit that fails loses no GPU time (`graphmode calibrate --from-measurements` fits them again)."""
    raw_path = model_path.with_name(model_path.stem + ".measurements.json")
    raw_path.parent.mkdir(parents=True, exist_ok=True)
    raw_path.write_text(json.dumps(raw, indent=1) + "\n")
    return raw_path


def _probe_main(as_program: bool, build: str = "capture") -> None:
    """`python -m graphmode.tracer.calibrate --probe`: one fresh process's first-graph extra, as JSON.
    `--probe-program`: the same in a process set up like a program that graphmode measures (the model's): graphmode's
    recording stack imported (CUPTI's Python module, the trace store's duckdb with a connection open) and the probe
    step run eagerly PROGRAM_EAGER_STEPS times before its first capture, as a program warms up before it captures.
    `--probe-program-api`: as `--probe-program`, its graphs built with the node API."""
    if as_program:
        import duckdb
        from cupti import cupti  # noqa: F401  (imported, as in a recording process; no CUPTI call is made)

        import graphmode.tracer.runner  # noqa: F401

        con = duckdb.connect()
        con.execute("SELECT 1").fetchall()
    cal = Calibrator()
    try:
        print(json.dumps(cal.first_graph_probe(PROGRAM_EAGER_STEPS if as_program else 1, build)))
    finally:
        cal.close()
        if as_program:
            con.close()


def _tree_probe_main() -> None:
    """`python -m graphmode.tracer.calibrate --tree-probe`: one fresh process's tree_probe, as JSON."""
    print(json.dumps(tree_probe()))


def _torch_probe_main() -> None:
    """`python -m graphmode.tracer.calibrate --torch-probe`: one fresh process's torch_capture_probe, as JSON."""
    print(json.dumps(torch_capture_probe()))


if __name__ == "__main__":
    if sys.argv[1:] in (["--probe"], ["--probe-program"], ["--probe-program-api"]):
        _probe_main(sys.argv[1] != "--probe", "api" if sys.argv[1] == "--probe-program-api" else "capture")
    elif sys.argv[1:] == ["--torch-probe"]:
        _torch_probe_main()
    elif sys.argv[1:] == ["--tree-probe"]:
        _tree_probe_main()
    else:
        raise SystemExit("usage: graphmode calibrate (this module's --probe is for calibrate's own use)")
