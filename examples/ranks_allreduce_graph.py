"""Every rank captures [scale, all-reduce, add] in one CUDA graph and replays it; the last rank is late.

    NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc-per-node 2 -m graphmode run --detail node \
        --out ar.gmtrace examples/ranks_allreduce_graph.py
    graphmode report 'ar.rank*.gmtrace'

Each rank writes ar.rank<R>.gmtrace. The last rank sleeps --straggler-ms before each step, eager or
replayed, so the other ranks' all-reduce kernels wait that long for it: `graphmode report` names it the
straggler and shows the wait, and the all-reduce still ends at the same moment on every rank.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--replays", type=int, default=20)
parser.add_argument("--eager", type=int, default=10, help="eager steps before the capture (the first connects NCCL's ranks)")
parser.add_argument("--elements", type=int, default=1 << 20)
parser.add_argument("--straggler-ms", type=float, default=2.0)
args = parser.parse_args()

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local_rank)
dev = torch.device("cuda", local_rank)
dist.init_process_group("nccl", device_id=dev)
rank, world = dist.get_rank(), dist.get_world_size()
x = torch.full((args.elements,), float(rank + 1), device=dev)


def late() -> None:
    if rank == world - 1 and args.straggler_ms > 0:
        time.sleep(args.straggler_ms / 1e3)  # the straggler: every other rank's all-reduce waits for it


def step() -> torch.Tensor:
    y = x * 2.0  # LINE: scale
    dist.all_reduce(y)  # LINE: all-reduce (sum over the ranks)
    return y + 1.0  # LINE: add


for _ in range(args.eager):  # NCCL cannot create its communicator during a capture: run the collective once first
    late()
    out_eager = step()
    torch.cuda.synchronize()

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out_graph = step()

for _ in range(args.replays):
    late()
    g.replay()
    torch.cuda.synchronize()

expected = 2.0 * sum(range(1, world + 1)) + 1.0
assert torch.equal(out_eager, torch.full_like(out_eager, expected)), "eager step computed something else"
assert torch.equal(out_graph, torch.full_like(out_graph, expected)), "the graph computed something else"
print(f"rank {rank} of {world}: ok: {args.eager} eager steps and {args.replays} replays of a graph holding an all-reduce")

# Free the graph before the process group: destroy_process_group() hangs while a graph holding NCCL
# collectives is alive (pytorch#115388; seen here on 2 H200 with PyTorch 2.11, without graphmode too).
del g
torch.cuda.synchronize()
dist.destroy_process_group()
