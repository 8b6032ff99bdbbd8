"""One CUDA graph per input shape (as serving engines and torch.compile make them): a small MLP step
captured for batch 8 and for batch 64, each replayed after an eager loop of the same shape. The
replays of batch 8 are launch-bound; those of batch 64 do more GPU work.

    graphmode run examples/two_shapes.py
"""

import torch

torch.manual_seed(0)
w1 = torch.randn(512, 512, device="cuda") / 23
w2 = torch.randn(512, 512, device="cuda") / 23


def step(x: torch.Tensor) -> torch.Tensor:
    h = torch.relu(x @ w1)  # LINE: first layer
    return torch.relu(h @ w2) + x  # LINE: second layer


graphs = {}
for batch in (8, 64):
    x = torch.randn(batch, 512, device="cuda")
    for _ in range(40):
        eager = step(x)
        torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # CAPTURE
        out = step(x)
    for _ in range(40):
        g.replay()
        torch.cuda.synchronize()
    assert torch.allclose(eager, out, atol=1e-4)
    graphs[batch] = g
print("ok: a graph for batch 8 and one for batch 64")
