"""A torchvision MobileNetV3 training loop written as people write it: the loop inside a function, `train(model, n)`
(zero_grad, forward, loss, backward, SGD step), no synchronisation between steps. Eager by default; with `--graph`, the
whole step captured as one CUDA graph as PyTorch's documentation shows ("whole network capture": warm-up on a side
stream, zero_grad(set_to_none=True), capture of forward, backward and optimizer step, then replays), so that the
graphed program's own clocks give what a graph of the eager loop costs and saves (issue 30's check).

Timed by the program's own clocks (one synchronize at the end of each timed loop). Prints one GRAPHMODE_TRUTH line
(benchmarks/third_party/_truth.py): `eager_ns` (a step of the eager loop); with --graph also `graph_ns`,
`capture_block_ns` and `first_replay_ns`.
"""

import argparse
import time

import torch
import torchvision

from _truth import pool_memory, report

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--graph", action="store_true")
args = p.parse_args()
ns = time.perf_counter_ns

torch.manual_seed(0)
model = torchvision.models.mobilenet_v3_small(num_classes=1000).cuda()
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(args.batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 1000, (args.batch,), device="cuda")


def train(m: torch.nn.Module, n: int) -> None:
    for _ in range(n):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()


train(model, 5)  # cuDNN autotuning, allocator growth
torch.cuda.synchronize()
t0 = ns()
train(model, args.steps)
torch.cuda.synchronize()
truth = {"workload": "mobilenet_train_fn", "eager_ns": (ns() - t0) / args.steps}

if args.graph:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        train(model, 3)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    t0 = ns()
    with torch.cuda.graph(g):
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    truth["capture_block_ns"] = ns() - t0
    t0 = ns()
    g.replay()
    torch.cuda.synchronize()
    truth["first_replay_ns"] = ns() - t0
    t0 = ns()
    for _ in range(args.steps):
        g.replay()
    torch.cuda.synchronize()
    truth["graph_ns"] = (ns() - t0) / args.steps
    truth["pool_reserved_bytes"], truth["pool_allocated_bytes"] = pool_memory(torch, g.pool())  # what the graph holds

report(**truth)
