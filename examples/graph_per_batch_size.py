"""One CUDA graph per batch size, as serving engines capture them (torch.cuda.graph, one shared memory
pool), then a request mix that uses only some of them: the graph budget shows which graphs were never
worth their memory and start-up time.

    graphmode run examples/graph_per_batch_size.py

Prints `check: {...}`: replays per batch size, PyTorch's reserved memory around each capture, and the
shared pool's own segments around each capture (PyTorch's memory snapshot), for the cross-check in
docs/benchmarks.md.
"""

import json

import torch

BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
HIDDEN = 512
torch.manual_seed(0)
w1 = torch.randn(HIDDEN, 4 * HIDDEN, device="cuda") / HIDDEN**0.5
w2 = torch.randn(4 * HIDDEN, HIDDEN, device="cuda") / (4 * HIDDEN) ** 0.5


def mlp(x: torch.Tensor) -> torch.Tensor:
    return x + torch.nn.functional.gelu(x @ w1) @ w2


def pool_bytes(pool: tuple[int, int] | None) -> int:
    """Bytes of the segments PyTorch's allocator holds in this private pool (0 before it exists)."""
    if pool is None:
        return 0
    return sum(s["total_size"] for s in torch.cuda.memory_snapshot() if tuple(s["segment_pool_id"]) == tuple(pool))


graphs: dict[int, torch.cuda.CUDAGraph] = {}
static_in: dict[int, torch.Tensor] = {}
static_out: dict[int, torch.Tensor] = {}
reserved: dict[int, list[int]] = {}
pool_reserved: dict[int, list[int]] = {}
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):  # warm-up on a side stream, as PyTorch asks before capture
    for bs in BATCH_SIZES:
        mlp(torch.zeros(bs, HIDDEN, device="cuda"))
torch.cuda.current_stream().wait_stream(side)


pool = None
for bs in reversed(BATCH_SIZES):  # largest first, so smaller graphs reuse the shared pool's blocks
    static_in[bs] = torch.zeros(bs, HIDDEN, device="cuda")
    g = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # torch.cuda.graph does this too: `before` is what stays reserved
    before, pool_before = torch.cuda.memory_reserved(), pool_bytes(pool)
    with torch.cuda.graph(g, pool=pool):  # CAPTURE: one graph per batch size
        static_out[bs] = mlp(static_in[bs])
    reserved[bs] = [before, torch.cuda.memory_reserved()]
    pool = g.pool() if pool is None else pool
    pool_reserved[bs] = [pool_before, pool_bytes(pool)]
    graphs[bs] = g

# the request mix: small batches often, 16 and 32 rarely, 64 and 128 never
mix = {1: 40, 2: 30, 4: 20, 8: 10, 16: 2, 32: 1, 64: 0, 128: 0}
for bs, n in mix.items():
    for _ in range(n):
        static_in[bs].copy_(torch.randn(bs, HIDDEN, device="cuda"))
        graphs[bs].replay()  # REPLAY
torch.cuda.synchronize()
# The graphs share one pool: a replay may reuse memory that holds another graph's output, so only the last
# graph replayed (batch size 32) is sure to hold its own result now.
assert torch.allclose(static_out[32], mlp(static_in[32]), rtol=1e-3, atol=1e-3)
print("check: " + json.dumps({"replays": mix, "reserved_around_capture": reserved,
                              "pool_around_capture": pool_reserved,
                              "reserved_peak_bytes": torch.cuda.memory_stats()["reserved_bytes.all.peak"]}))
