"""torchvision ResNet-50 inference at batch 1, compiled by torch.compile in one mode per process:
- `--mode reduce-overhead`: Inductor's kernels, replayed by PyTorch's cudagraph trees as a CUDA graph whose
  kernels never run outside it (no eager twin in the process: graphmode's counterfactual prices them);
- `--mode default`: the same Inductor kernels launched one by one by Inductor's generated launcher (the eager
  cost the counterfactual predicts; never traced by graphmode when used as the truth).
Timed by the program's own clock: N calls back to back, one synchronize at the end; the calls that compile and
record are timed alone. `--graph-break`: a graph break in the middle of the forward, so that reduce-overhead replays
two graphs a call (several graphs a step, with no eager twin). `--first eager|default`: in the same process, before
the timed mode, the same calls run the model that other way (`eager`: the uncompiled model, ATen's kernels;
`default`: torch.compile without graphs) through the same line, timed the same way: a script that also ran its
model another way (issue 28's step-level comparison). Prints one GRAPHMODE_TRUTH line per mode timed
(benchmarks/third_party/_truth.py).
"""

import argparse
import time

import torch
import torchvision

from _truth import report

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=("default", "reduce-overhead"), default="reduce-overhead")
p.add_argument("--calls", type=int, default=200)
p.add_argument("--graph-break", action="store_true",
               help="a graph break after layer2: Dynamo compiles two partitions, reduce-overhead replays two graphs a call")
p.add_argument("--first", choices=("eager", "default"),
               help="before --mode, run the same calls with the model this other way, in this process, through the same line")
args = p.parse_args()
ns = time.perf_counter_ns
torch.manual_seed(0)

model = torchvision.models.resnet50(num_classes=1000).cuda().eval()


class Broken(torch.nn.Module):
    """ResNet-50's forward with a graph break in the middle (torch._dynamo.graph_break): two compiled partitions."""

    def __init__(self, m: torch.nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.m
        x = m.layer2(m.layer1(m.maxpool(m.relu(m.bn1(m.conv1(x))))))
        torch._dynamo.graph_break()
        x = m.layer4(m.layer3(x))
        return m.fc(torch.flatten(m.avgpool(x), 1))


x = torch.randn(1, 3, 224, 224, device="cuda")


def make(mode: str) -> torch.nn.Module:
    net = Broken(model) if args.graph_break else model
    return net if mode == "eager" else torch.compile(net, mode=mode)


def call(f: torch.nn.Module, mode: str) -> torch.Tensor:
    if mode == "reduce-overhead":
        torch.compiler.cudagraph_mark_step_begin()
    return f(x)


def timed(mode: str) -> None:
    f = make(mode)
    with torch.no_grad():
        warm = []
        for _ in range(4):  # compile, then (reduce-overhead) warm-up, recording, first replay
            torch.cuda.synchronize()
            t0 = ns()
            y = call(f, mode)
            torch.cuda.synchronize()
            warm.append(ns() - t0)
        torch.cuda.synchronize()
        t0 = ns()
        for _ in range(args.calls):
            y = call(f, mode)
        torch.cuda.synchronize()
        call_ns = (ns() - t0) / args.calls
    extra = {"first": args.first, "order": 0 if mode == args.first else 1} if args.first else {}
    report(workload="resnet50_compile_break" if args.graph_break else "resnet50_compile", mode=mode, call_ns=call_ns,
           first_calls_ns=warm, calls=args.calls, **extra)


for mode in ([args.first] if args.first else []) + [args.mode]:
    timed(mode)
