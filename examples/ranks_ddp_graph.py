"""A DistributedDataParallel training step (forward, backward with DDP's bucket all-reduces, SGD step)
captured whole as one CUDA graph on every rank, as PyTorch's CUDA-graphs notes describe it.

    NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc-per-node 2 -m graphmode run --detail node \
        --out ddp.gmtrace examples/ranks_ddp_graph.py
    graphmode report 'ddp.rank*.gmtrace'

PyTorch's three conditions for capturing DDP's all-reduces: async error handling off before the
process group starts, DDP constructed on a side stream, and at least 11 eager DDP iterations first.
"""

import argparse
import os

os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"  # condition 1 (NCCL_ASYNC_ERROR_HANDLING before PyTorch 2.2)
os.environ["NCCL_ASYNC_ERROR_HANDLING"] = "0"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--replays", type=int, default=10)
parser.add_argument("--warmup", type=int, default=12, help="eager DDP iterations before the capture (PyTorch asks for 11 or more)")
parser.add_argument("--width", type=int, default=512)
parser.add_argument("--batch", type=int, default=64)
args = parser.parse_args()

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local_rank)
dev = torch.device("cuda", local_rank)
dist.init_process_group("nccl", device_id=dev)
rank, world = dist.get_rank(), dist.get_world_size()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU(), nn.Linear(args.width, args.width), nn.ReLU(),
                      nn.Linear(args.width, 1)).to(dev)
torch.manual_seed(1 + rank)  # each rank its own data, as in data parallelism
static_x = torch.randn(args.batch, args.width, device=dev)
static_y = torch.randn(args.batch, 1, device=dev)
loss_fn = nn.MSELoss()

side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    ddp = DistributedDataParallel(model, device_ids=[local_rank])  # condition 2: built on a side stream
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for _ in range(args.warmup):  # condition 3
        opt.zero_grad(set_to_none=True)
        loss_fn(ddp(static_x), static_y).backward()
        opt.step()
torch.cuda.current_stream().wait_stream(side)

g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)  # gradients are then allocated from the graph's private pool
with torch.cuda.graph(g):
    static_loss = loss_fn(ddp(static_x), static_y)  # LINE: forward
    static_loss.backward()  # LINE: backward + DDP all-reduce
    opt.step()  # LINE: SGD step

for _ in range(args.replays):
    g.replay()
torch.cuda.synchronize()

# DDP keeps the replicas equal: the parameter checksum is the same on every rank.
checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1)
low, high = checksum.clone(), checksum.clone()
dist.all_reduce(low, op=dist.ReduceOp.MIN)
dist.all_reduce(high, op=dist.ReduceOp.MAX)
assert torch.allclose(low, high, rtol=0, atol=1e-6 * max(1.0, abs(float(high)))), f"replicas differ: {float(low)} vs {float(high)}"
print(f"rank {rank} of {world}: ok: {args.warmup} eager DDP steps, {args.replays} replays of the captured step, "
      f"loss {float(static_loss):.4f}, replicas equal")

# Free the graph before the process group: destroy_process_group() hangs while a graph holding NCCL
# collectives is alive (pytorch#115388; seen here on 2 H200 with PyTorch 2.11, without graphmode too).
del g
torch.cuda.synchronize()
dist.destroy_process_group()
