"""The shortest path to "should this be a graph?": graphmode.compare on a PyTorch step.

    python examples/compare_torch.py
"""

import torch

import graphmode

w = torch.randn(512, 512, device="cuda") / 512**0.5
x = torch.randn(32, 512, device="cuda")


def step() -> torch.Tensor:
    h = x
    for _ in range(8):
        h = torch.relu(h @ w)
    return h


c = graphmode.compare(step, iters=200, out="compare_torch.gmtrace")
be = c.break_even
print(f"eager {c.eager_ns / 1e3:.1f} us, graph {c.graph_ns / 1e3:.1f} us, saved {c.saved_per_iteration_ns / 1e3:.1f} us/iter")
print(f"one-time cost {c.one_time_ns / 1e3:.1f} us; break-even after {be.replays} replays; outputs match: {c.outputs_match}")
