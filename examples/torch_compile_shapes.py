"""torch.compile(mode="reduce-overhead") called with four batch sizes: cudagraph trees record a new CUDA
graph for each shape (the first size compiles static, the next ones dynamic, one recording per size).

    graphmode run examples/torch_compile_shapes.py

Prints `check: {...}`: its calls per batch size.
"""

import json

import torch

BATCH_SIZES = (1, 2, 4, 8)
CALLS = 10
torch.manual_seed(0)
w = torch.randn(128, 128, device="cuda") / 12


@torch.compile(mode="reduce-overhead")
def layer(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x @ w) * 0.5 + x


calls = {}
for bs in BATCH_SIZES:
    x = torch.randn(bs, 128, device="cuda")
    for _ in range(CALLS):
        torch.compiler.cudagraph_mark_step_begin()
        y = layer(x)  # CALL: layer
    calls[bs] = CALLS
    assert torch.allclose(y, torch.nn.functional.gelu(x @ w) * 0.5 + x, rtol=1e-3, atol=1e-3)
torch.cuda.synchronize()
print("check: " + json.dumps({"calls_per_batch_size": calls}))
