"""A torchvision ResNet-18 training step, eager and captured whole as one CUDA graph, timed by the
program's own clocks (time.perf_counter_ns around loops that synchronize only at their end).

The graph part follows PyTorch's CUDA Graphs documentation ("whole network capture"): warm-up on a
side stream, capture with torch.cuda.graph, then g.replay() in a loop with no synchronization
between replays. Prints one GRAPHMODE_TRUTH line (benchmarks/third_party/_truth.py).
"""

import argparse
import gc
import time

import torch
import torchvision

from _truth import pool_memory, report

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=16)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--eager-only", action="store_true", help="the eager training loop alone (issue 30: predict from it)")
args = p.parse_args()
ns = time.perf_counter_ns

torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=1000).cuda()
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(args.batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 1000, (args.batch,), device="cuda")


def step() -> None:
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()


for _ in range(5):  # cuDNN autotuning, allocator growth
    step()
torch.cuda.synchronize()
t0 = ns()
for _ in range(args.steps):
    step()
torch.cuda.synchronize()
eager_ns = (ns() - t0) / args.steps
if args.eager_only:
    report(workload="resnet18_train", eager_ns=eager_ns, steps=args.steps, batch=args.batch)
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()

g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
t0 = ns()
with torch.cuda.graph(g):
    static_loss = loss_fn(model(x), y)
    static_loss.backward()
    opt.step()
capture_block_ns = ns() - t0
# what torch.cuda.graph does before capturing (synchronize, gc.collect, empty_cache): not CUDA graph work
t0 = ns()
torch.cuda.synchronize()
gc.collect()
torch.cuda.empty_cache()
housekeeping_ns = ns() - t0

t0 = ns()
g.replay()
torch.cuda.synchronize()
first_replay_ns = ns() - t0
t0 = ns()
for _ in range(args.steps):
    g.replay()
torch.cuda.synchronize()
graph_ns = (ns() - t0) / args.steps
pool_reserved_bytes, pool_allocated_bytes = pool_memory(torch, g.pool())  # after the timings: what the graph holds
report(workload="resnet18_train", eager_ns=eager_ns, graph_ns=graph_ns, capture_block_ns=capture_block_ns,
       housekeeping_ns=housekeeping_ns, first_replay_ns=first_replay_ns, steps=args.steps, batch=args.batch,
       pool_reserved_bytes=pool_reserved_bytes, pool_allocated_bytes=pool_allocated_bytes)
