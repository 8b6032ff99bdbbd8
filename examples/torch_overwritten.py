"""A classic cudagraph-trees mistake: keeping an output of a compiled function across the next call.
The second call replays the graph into the same memory, and reading the first output raises
"accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run".

    graphmode run examples/torch_overwritten.py      # exits 1 on purpose; the report names the line
"""

import torch


@torch.compile(mode="reduce-overhead")
def step(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 2 + 1  # PRODUCED: the output


x = torch.randn(1024, device="cuda")
for _ in range(3):  # warm-up run, then the recording, then a replay
    step(x)
first = step(x)
second = step(x)  # replays the graph: `first` is overwritten
print(first.sum().item() + second.sum().item())  # READ: overwritten output
