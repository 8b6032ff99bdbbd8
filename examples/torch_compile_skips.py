"""torch.compile(mode="reduce-overhead") on three small functions of one decode-like loop: `mlp` runs as
a CUDA graph; `update_cache` is skipped by Inductor for a reason it states (an input written in place,
as a static KV-cache update does); `shift` reads a CPU tensor. `graphmode run` names the line behind the
skip and how much of the run was graphed.

    graphmode run --launch-sources examples/torch_compile_skips.py

It prints a line `check: {...}` with its own counts (calls per function, PyTorch's memory statistics)
for the cross-check in docs/benchmarks.md.

On the H200 with PyTorch 2.11:
- a CPU tensor no longer makes Inductor skip a function ("skipping cudagraphs due to cpu device" in
  older releases): graph partitioning (on by default) keeps the CPU part out, and `shift` is graphed;
- without `cudagraph_mark_step_begin()` at the top of each step, the program crashed without graphmode
  too, launching the kernel of the skipped `update_cache` given `mlp`'s graph output (a segfault in the
  static CUDA launcher; with that launcher off, "TypeError: Pointer argument must be either uint64 or
  have data_ptr method": an input had no memory), and writing the cache from the eager `x` instead raised
  "accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run".
"""

import json

import torch

STEPS = 30
torch.manual_seed(0)
dev = torch.device("cuda")
w = torch.randn(256, 256, device=dev) / 16
cache = torch.zeros(STEPS, 256, device=dev)  # a static cache, updated in place like a KV cache
offset = torch.arange(256, dtype=torch.float32)  # stays on the CPU


@torch.compile(mode="reduce-overhead")
def mlp(x: torch.Tensor) -> torch.Tensor:  # graphed: reads a closed-over weight, writes nothing it was given
    return torch.relu(x @ w) + x


@torch.compile(mode="reduce-overhead")
def update_cache(cache: torch.Tensor, pos: torch.Tensor, h: torch.Tensor) -> None:
    cache[pos] = torch.tanh(h[:1])  # CAUSE: mutated_inputs


@torch.compile(mode="reduce-overhead")
def shift(h: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    return h * 0.5 + offset.to(h.device)  # CPU: a CPU tensor copied in


calls = {"mlp": 0, "update_cache": 0, "shift": 0}
x = torch.randn(8, 256, device=dev)
for step in range(STEPS):
    torch.compiler.cudagraph_mark_step_begin()  # a new step: outputs of the last one may be overwritten
    pos = torch.tensor([step], device=dev)
    h = mlp(x)  # CALL: mlp
    calls["mlp"] += 1
    update_cache(cache, pos, h)  # CALL: update_cache
    calls["update_cache"] += 1
    y = shift(h, offset)  # CALL: shift
    calls["shift"] += 1
    x = (y + cache.sum(dim=0) * 1e-3).clamp(-4, 4)  # eager: the sum of the cache
torch.cuda.synchronize()
stats = torch.cuda.memory_stats()
print("check: " + json.dumps({"calls": calls, "reserved_bytes": stats["reserved_bytes.all.current"],
                              "reserved_peak_bytes": stats["reserved_bytes.all.peak"]}))
