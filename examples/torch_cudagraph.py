"""A small MLP step, run eagerly and then captured once with torch.cuda.graph and replayed.

    graphmode run examples/torch_cudagraph.py --steps 200
"""

import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--width", type=int, default=256)
args = parser.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
x = torch.randn(64, args.width, device=dev)
w1 = torch.randn(args.width, args.width, device=dev) / args.width**0.5
w2 = torch.randn(args.width, args.width, device=dev) / args.width**0.5


def step(inp: torch.Tensor) -> torch.Tensor:
    h = torch.relu(inp @ w1)  # LINE: first matmul + relu
    h = torch.tanh(h @ w2)  # LINE: second matmul + tanh
    return h * 0.5 + inp  # LINE: residual


with torch.cuda.nvtx.range("eager loop"):
    for _ in range(args.steps):
        out_eager = step(x)
        torch.cuda.synchronize()

# PyTorch wants a few warm-up iterations on a side stream before capture.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        step(x)
torch.cuda.current_stream().wait_stream(side)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out_graph = step(x)

with torch.cuda.nvtx.range("replay loop"):
    for _ in range(args.steps):
        g.replay()
        torch.cuda.synchronize()

assert torch.allclose(out_eager, out_graph), "the graph computed something else"
print(f"ok: {args.steps} eager steps and {args.steps} replays, outputs equal")
