"""A classic cudagraph-trees mistake: keeping an output of a compiled function across the next call.
The second call replays the graph into the same memory, and reading the first output raises
"accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run".

    graphmode run examples/torch_overwritten.py      # exits 1 on purpose; the report names the line

On the H200 with PyTorch 2.11 it did not raise (it printed the sum and exited 0, with or without graphmode),
so its recording is not among the test fixtures.
"""

import torch


@torch.compile(mode="reduce-overhead")
def step(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 2 + 1  # PRODUCED: the output


x = torch.randn(1024, device="cuda")
for _ in range(3):  # warm-up run, then the recording, then a replay
    step(x)
first = step(x)
torch.compiler.cudagraph_mark_step_begin()  # a new iteration, as each step of a real loop marks one
second = step(x)  # replays the graph: `first` is overwritten
print(first.sum().item() + second.sum().item())  # READ: overwritten output
