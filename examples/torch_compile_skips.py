"""torch.compile(mode="reduce-overhead") on three small functions of one decode-like loop: one runs as a
CUDA graph, two are skipped by Inductor for a reason it states (an input written in place, as a static
KV-cache update does; a CPU tensor). `graphmode run` names the line behind each skip and how much of
the run was graphed.

    graphmode run examples/torch_compile_skips.py

It prints a line `check: {...}` with its own counts (calls per function, PyTorch's memory statistics)
for the cross-check in docs/benchmarks.md.

On the H200 with PyTorch 2.11 it crashes in Inductor's autotuning of `update_cache`, with or without
graphmode (a segfault in the static CUDA launcher; with TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0 a
TypeError), so its recording is not among the test fixtures.
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
def update_cache(cache: torch.Tensor, pos: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    cache.index_copy_(0, pos, torch.tanh(h[:1]))  # CAUSE: mutated_inputs
    return cache.sum(dim=0)


@torch.compile(mode="reduce-overhead")
def shift(h: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    return h * 0.5 + offset.to(h.device)  # CAUSE: cpu_device


calls = {"mlp": 0, "update_cache": 0, "shift": 0}
x = torch.randn(8, 256, device=dev)
for step in range(STEPS):
    pos = torch.tensor([step], device=dev)
    h = mlp(x)  # CALL: mlp
    calls["mlp"] += 1
    s = update_cache(cache, pos, h)  # CALL: update_cache
    calls["update_cache"] += 1
    y = shift(h, offset)  # CALL: shift
    calls["shift"] += 1
    x = (y + s * 1e-3).clamp(-4, 4)
torch.cuda.synchronize()
stats = torch.cuda.memory_stats()
print("check: " + json.dumps({"calls": calls, "reserved_bytes": stats["reserved_bytes.all.current"],
                              "reserved_peak_bytes": stats["reserved_bytes.all.peak"]}))
