"""A classic cudagraph-trees mistake: keeping an output of a compiled function across the next call.
The next call runs into the same memory, and reading the first output raises "accessing tensor output
of CUDAGraphs that has been overwritten by a subsequent run" (the pattern of PyTorch's cudagraph-trees
documentation).

    graphmode run examples/torch_overwritten.py      # exits 1 on purpose; the report names the line

The fix is to clone what is kept (`first = step(x).clone()`), or to call
torch.compiler.cudagraph_mark_step_begin() where an iteration really begins. (On PyTorch 2.11 a program
that first warms the function up in a loop and then keeps two outputs did not raise; this shape does.)
"""

import torch


@torch.compile(mode="reduce-overhead")
def step(x: torch.Tensor) -> torch.Tensor:
    return torch.matmul(x, x)  # PRODUCED: the output


x = torch.randn(256, 256, device="cuda")
first = step(x)  # kept across the next call
second = step(x)  # runs into the memory that holds `first`
print(first.sum().item() + second.sum().item())  # READ: overwritten output
