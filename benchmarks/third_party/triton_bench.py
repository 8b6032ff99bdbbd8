"""Triton's own benchmarking helpers on a Triton kernel: triton.testing.do_bench (eager, with its L2
flush between calls) and triton.testing.do_bench_cudagraph (the same call unrolled into a CUDA graph).
Prints one GRAPHMODE_TRUTH line with the medians they report (per call)."""

import torch
import triton
import triton.language as tl

from _truth import report


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


n = 1 << 16
x = torch.randn(n, device="cuda")
y = torch.randn(n, device="cuda")
out = torch.empty_like(x)


def fn() -> None:
    scale_add[(triton.cdiv(n, 1024),)](x, y, out, n, 1.5, BLOCK=1024)


fn()
torch.cuda.synchronize()
eager_ms = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
graph_ms = triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")
report(workload="triton_do_bench", eager_ns=eager_ms * 1e6, graph_ns=graph_ms * 1e6, elements=n)
