"""A torchvision MobileNetV3 training step, eager and with the model graphed by
`torch.cuda.make_graphed_callables` (PyTorch's "partial-network capture": a forward and a backward graph;
the loss, zero_grad and the optimizer stay eager between them). Several graphs in one step.

Timed by the program's own clocks (time.perf_counter_ns around loops that synchronize only at their end);
`make_graphed_callables` is timed whole (its warm-up iterations on the sample input and both captures).
Prints one GRAPHMODE_TRUTH line (benchmarks/third_party/_truth.py).
"""

import argparse
import time

import torch
import torchvision

from _truth import report

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()
ns = time.perf_counter_ns

torch.manual_seed(0)
model = torchvision.models.mobilenet_v3_small(num_classes=1000).cuda()
loss_fn = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(args.batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 1000, (args.batch,), device="cuda")


def step(m: torch.nn.Module) -> None:
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(m(x), y)
    loss.backward()
    opt.step()


def timed_loop(m: torch.nn.Module) -> float:
    torch.cuda.synchronize()
    t0 = ns()
    for _ in range(args.steps):
        step(m)
    torch.cuda.synchronize()
    return (ns() - t0) / args.steps


for _ in range(5):  # cuDNN autotuning, allocator growth
    step(model)
eager_ns = timed_loop(model)

torch.cuda.synchronize()
t0 = ns()
graphed = torch.cuda.make_graphed_callables(model, (x,))  # 3 warm-up iterations, then the two captures
torch.cuda.synchronize()
make_graphed_ns = ns() - t0

t0 = ns()
step(graphed)  # the first graphed step: first launches of both graphs
torch.cuda.synchronize()
first_step_ns = ns() - t0
graph_ns = timed_loop(graphed)
report(workload="mobilenet_v3_make_graphed", eager_ns=eager_ns, graph_ns=graph_ns, make_graphed_ns=make_graphed_ns,
       first_step_ns=first_step_ns, graphs_per_step=2, steps=args.steps, batch=args.batch)
