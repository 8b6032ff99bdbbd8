"""`dag`: a fork/join graph built with the explicit node API (cuGraphAdd*Node).

    memset(branches) -> width branches of `depth` kernels each (y = y*c_w + x) -> join (sum) -> memcpy

The eager twin expresses the same dependencies with one stream per branch and events.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from graphmode.tracer import cuda_util as cu_util
from graphmode.tracer.cuda_util import KernelArgs, check

SOURCE = r"""
extern "C" __global__ void branch_step(float *y, const float *x, float c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * c + x[i];
}
extern "C" __global__ void join_sum(float *out, const float *branches, int width, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int w = 0; w < width; ++w) s += branches[(size_t)w * n + i];
        out[i] = s;
    }
}
"""


def branch_factor(w: int) -> float:
    return 1.0 + 0.01 * (w + 1)


class DagWorkload:
    name = "dag"

    def __init__(self, n: int = 1 << 18, width: int = 4, depth: int = 3, threads: int = 256):
        if n <= 0 or width <= 0 or depth <= 0 or threads <= 0:
            raise ValueError("dag: n, width, depth and threads must be positive")
        self.params: dict[str, Any] = {"n": n, "width": width, "depth": depth, "threads_per_block": threads,
                                       "kernels_per_step": width * depth + 1}
        self.n, self.width, self.depth, self.threads = n, width, depth, threads
        self.blocks = (n + threads - 1) // threads

    def setup(self) -> None:
        from cuda.bindings import driver as cu

        self.cu = cu
        self.device = cu_util.init_device()
        self.module = cu_util.compile_module(SOURCE, "dag.cu", self.device)
        self.f_branch = cu_util.get_function(self.module, "branch_step")
        self.f_join = cu_util.get_function(self.module, "join_sum")
        n, w = self.n, self.width
        self.host_x = ((np.arange(n, dtype=np.float32) % 97) / 31.0).astype(np.float32)
        self.d_x = cu_util.alloc(n * 4)
        self.d_branches = cu_util.alloc(w * n * 4)
        self.d_out = cu_util.alloc(n * 4)
        self.d_result = cu_util.alloc(n * 4)
        cu_util.htod(self.d_x, self.host_x)
        self.branch_args = [
            KernelArgs((self.d_branches + b * n * 4, ctypes.c_uint64), (self.d_x, ctypes.c_uint64),
                       (branch_factor(b), ctypes.c_float), (n, ctypes.c_int))
            for b in range(w)
        ]
        self.join_args = KernelArgs((self.d_out, ctypes.c_uint64), (self.d_branches, ctypes.c_uint64),
                                    (w, ctypes.c_int), (n, ctypes.c_int))
        self.stream = cu_util.new_stream()
        self.branch_streams = [cu_util.new_stream() for _ in range(w)]
        self.fork_event = cu_util.new_event()
        self.branch_events = [cu_util.new_event() for _ in range(w)]

    def eager_modes(self) -> dict[str, Callable[[], None]]:
        cu = self.cu
        launch, s0, n, w = cu.cuLaunchKernel, self.stream, self.n, self.width
        b, t, depth = self.blocks, self.threads, self.depth
        fb, fj = self.f_branch, self.f_join
        bargs = [a.address for a in self.branch_args]
        jargs = self.join_args.address
        streams, ev0, evs = self.branch_streams, self.fork_event, self.branch_events

        def eager() -> None:
            check(cu.cuMemsetD32Async(self.d_branches, 0, w * n, s0), "cuMemsetD32Async")
            check(cu.cuEventRecord(ev0, s0), "cuEventRecord")
            for i in range(w):
                check(cu.cuStreamWaitEvent(streams[i], ev0, 0), "cuStreamWaitEvent")
                for _ in range(depth):
                    (err,) = launch(fb, b, 1, 1, t, 1, 1, 0, streams[i], bargs[i], 0)
                    if err:
                        check((err,), "cuLaunchKernel")
                check(cu.cuEventRecord(evs[i], streams[i]), "cuEventRecord")
            for i in range(w):
                check(cu.cuStreamWaitEvent(s0, evs[i], 0), "cuStreamWaitEvent")
            (err,) = launch(fj, b, 1, 1, t, 1, 1, 0, s0, jargs, 0)
            if err:
                check((err,), "cuLaunchKernel")
            check(cu.cuMemcpyDtoDAsync(self.d_result, self.d_out, n * 4, s0), "cuMemcpyDtoDAsync")
            check(cu.cuStreamSynchronize(s0), "cuStreamSynchronize")

        return {"eager": eager}

    def build_graph(self) -> tuple[Any, str]:
        cu, n, w = self.cu, self.n, self.width
        ctx = self.device.context
        graph = check(cu.cuGraphCreate(0), "cuGraphCreate")

        ms = cu.CUDA_MEMSET_NODE_PARAMS()
        ms.dst = self.d_branches
        ms.pitch = 0
        ms.value = 0
        ms.elementSize = 4
        ms.width = w * n
        ms.height = 1
        memset_node = check(cu.cuGraphAddMemsetNode(graph, None, 0, ms, ctx), "cuGraphAddMemsetNode")

        def kernel_params(fn: Any, args: KernelArgs) -> Any:
            p = cu.CUDA_KERNEL_NODE_PARAMS()
            p.func = fn
            p.gridDimX, p.gridDimY, p.gridDimZ = self.blocks, 1, 1
            p.blockDimX, p.blockDimY, p.blockDimZ = self.threads, 1, 1
            p.sharedMemBytes = 0
            p.kernelParams = args.address
            return p

        tails = []
        for i in range(w):
            prev = memset_node
            for _ in range(self.depth):
                prev = check(cu.cuGraphAddKernelNode(graph, [prev], 1, kernel_params(self.f_branch, self.branch_args[i])),
                             "cuGraphAddKernelNode")
            tails.append(prev)
        join = check(cu.cuGraphAddKernelNode(graph, tails, len(tails), kernel_params(self.f_join, self.join_args)),
                     "cuGraphAddKernelNode")
        cp = cu.CUDA_MEMCPY3D()
        cp.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        cp.srcDevice = self.d_out
        cp.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        cp.dstDevice = self.d_result
        cp.WidthInBytes = n * 4
        cp.Height = 1
        cp.Depth = 1
        check(cu.cuGraphAddMemcpyNode(graph, [join], 1, cp, ctx), "cuGraphAddMemcpyNode")
        return graph, "explicit"

    def expected_edges(self) -> int:
        # memset->first of each branch, (depth-1) per branch, branch tail->join, join->memcpy
        return self.width + self.width * (self.depth - 1) + self.width + 1

    def reset(self) -> None:
        check(self.cu.cuMemsetD32Async(self.d_result, 0, self.n, self.stream), "cuMemsetD32Async")
        check(self.cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def expected(self) -> np.ndarray:
        total = np.zeros(self.n, dtype=np.float32)
        for b in range(self.width):
            y = np.zeros(self.n, dtype=np.float32)
            for _ in range(self.depth):
                y = y * np.float32(branch_factor(b)) + self.host_x
            total = total + y
        return total

    def verify(self) -> tuple[bool, str]:
        got = cu_util.dtoh(np.empty(self.n, dtype=np.float32), self.d_result)
        want = self.expected()
        close = np.isclose(got, want, rtol=1e-5, atol=1e-6)
        if bool(close.all()):
            return True, f"result == sum over {self.width} branches of {self.depth} steps, all elements"
        bad = int(np.argmax(~close))
        return False, f"result[{bad}] = {got[bad]!r}, expected {want[bad]!r}"

    def teardown(self) -> None:
        for p in (self.d_x, self.d_branches, self.d_out, self.d_result):
            cu_util.free(p)
        for s in [self.stream, *self.branch_streams]:
            check(self.cu.cuStreamDestroy(s), "cuStreamDestroy")
        for e in [self.fork_event, *self.branch_events]:
            check(self.cu.cuEventDestroy(e), "cuEventDestroy")
        check(self.cu.cuModuleUnload(self.module), "cuModuleUnload")
