"""`chain`: NVIDIA's "Getting Started with CUDA Graphs" experiment.

A short kernel out[i] = 1.23 * in[i] over `n` floats, `kernels` launches per step. Eager with one
synchronize per step, eager with a synchronize after every kernel (as the blog does), and a graph
built by stream capture of one step's launches.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from graphmode.tracer import cuda_util as cu_util
from graphmode.tracer.cuda_util import KernelArgs, check

SOURCE = r"""
extern "C" __global__ void short_kernel(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 1.23f * in[i];
}
"""


class ChainWorkload:
    name = "chain"

    def __init__(self, n: int = 500_000, kernels: int = 20, threads: int = 512):
        if n <= 0 or kernels <= 0 or threads <= 0:
            raise ValueError("chain: n, kernels and threads must be positive")
        self.params: dict[str, Any] = {"n": n, "kernels_per_step": kernels, "threads_per_block": threads}
        self.n, self.kernels, self.threads = n, kernels, threads
        self.blocks = (n + threads - 1) // threads

    def setup(self) -> None:
        from cuda.bindings import driver as cu

        self.cu = cu
        self.device = cu_util.init_device()
        self.module = cu_util.compile_module(SOURCE, "chain.cu", self.device)
        self.fn = cu_util.get_function(self.module, "short_kernel")
        self.stream = cu_util.new_stream()
        self.host_in = (np.arange(self.n, dtype=np.float32) % 1000) / 7.0
        self.d_in = cu_util.alloc(self.n * 4)
        self.d_out = cu_util.alloc(self.n * 4)
        cu_util.htod(self.d_in, self.host_in)
        self.args = KernelArgs(
            (self.d_out, ctypes.c_uint64),
            (self.d_in, ctypes.c_uint64),
            (self.n, ctypes.c_int),
        )

    def _launch_all(self) -> None:
        """One step's launches, for stream capture. The eager steps below inline the same loop on
        purpose: they are the measured hot path, identical in the untraced baseline and in graphmode."""
        launch, fn, b, t, s, a = self.cu.cuLaunchKernel, self.fn, self.blocks, self.threads, self.stream, self.args.address
        for _ in range(self.kernels):
            (err,) = launch(fn, b, 1, 1, t, 1, 1, 0, s, a, 0)
            if err:
                check((err,), "cuLaunchKernel")

    def eager_modes(self) -> dict[str, Callable[[], None]]:
        cu, fn, b, t, s, a, k = self.cu, self.fn, self.blocks, self.threads, self.stream, self.args.address, self.kernels
        launch, sync = cu.cuLaunchKernel, cu.cuStreamSynchronize

        def eager() -> None:
            for _ in range(k):
                (err,) = launch(fn, b, 1, 1, t, 1, 1, 0, s, a, 0)
                if err:
                    check((err,), "cuLaunchKernel")
            (err,) = sync(s)
            if err:
                check((err,), "cuStreamSynchronize")

        def eager_sync_each() -> None:
            for _ in range(k):
                (err,) = launch(fn, b, 1, 1, t, 1, 1, 0, s, a, 0)
                if err:
                    check((err,), "cuLaunchKernel")
                (err,) = sync(s)
                if err:
                    check((err,), "cuStreamSynchronize")

        return {"eager": eager, "eager_sync_each": eager_sync_each}

    def build_graph(self) -> tuple[Any, str]:
        cu = self.cu
        check(cu.cuStreamBeginCapture(self.stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture")
        try:
            self._launch_all()
        finally:
            graph = check(cu.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
        return graph, "capture"

    def reset(self) -> None:
        check(self.cu.cuMemsetD32Async(self.d_out, 0, self.n, self.stream), "cuMemsetD32Async")
        check(self.cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def verify(self) -> tuple[bool, str]:
        got = cu_util.dtoh(np.empty(self.n, dtype=np.float32), self.d_out)
        want = np.float32(1.23) * self.host_in
        ok = bool(np.allclose(got, want, rtol=1e-6, atol=0))
        if ok:
            return True, "out == 1.23 * in for all elements"
        bad = int(np.argmax(~np.isclose(got, want, rtol=1e-6, atol=0)))
        return False, f"out[{bad}] = {got[bad]!r}, expected {want[bad]!r}"

    def teardown(self) -> None:
        for p in (self.d_in, self.d_out):
            cu_util.free(p)
        check(self.cu.cuStreamDestroy(self.stream), "cuStreamDestroy")
        check(self.cu.cuModuleUnload(self.module), "cuModuleUnload")
