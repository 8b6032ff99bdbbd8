"""A GPU-bound step (large matrix products) run eagerly and as a CUDA graph, both loops queued
without synchronization between iterations, as a training loop would: the CPU runs ahead and the
GPU sets the pace. The script prints its own per-iteration times.

    graphmode run examples/gpu_bound_replays.py
"""

import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args = parser.parse_args()

torch.manual_seed(0)
a = torch.randn(2048, 2048, device="cuda")
w = torch.randn(2048, 2048, device="cuda") / 45


def step(x: torch.Tensor) -> torch.Tensor:
    for _ in range(4):
        x = torch.tanh(x @ w)  # LINE: matmul + tanh
    return x


side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):  # warm-up on a side stream, as PyTorch's documentation does
        step(a)
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()

t0 = time.perf_counter_ns()
for _ in range(args.steps):
    out_eager = step(a)
torch.cuda.synchronize()
eager_ns = (time.perf_counter_ns() - t0) / args.steps

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out_graph = step(a)

t0 = time.perf_counter_ns()
for _ in range(args.steps):
    g.replay()
torch.cuda.synchronize()
graph_ns = (time.perf_counter_ns() - t0) / args.steps
assert torch.allclose(out_eager, out_graph, atol=1e-4)
print(f"ok: eager {eager_ns / 1e3:.1f} us, replay {graph_ns / 1e3:.1f} us per iteration")
