"""A timm ViT served at several batch sizes: eager, then one CUDA graph per batch size (the pattern of serving engines
that capture a graph per padded batch size), timed by the program's own clocks.

The model is timm's `vit_small_patch16_224` with random weights, in eval mode without gradients. Per batch size: 3
warm-up calls, then CALLS eager calls timed as one loop (one synchronize at its end); then per batch size a
torch.cuda.graph capture (warm-up on a side stream first, as PyTorch's documentation says), the capture block and
the first replay timed alone, and CALLS replays timed as one loop. Prints one GRAPHMODE_TRUTH line with, per batch
size B, `eager_bB_ns`, `graph_bB_ns`, `capture_block_bB_ns`, `first_replay_bB_ns` (benchmarks/third_party/_truth.py).
"""

import argparse
import time

import timm
import torch

from _truth import pool_memory, report

p = argparse.ArgumentParser()
p.add_argument("--calls", type=int, default=30)
p.add_argument("--sizes", default="1,2,4,8")
p.add_argument("--eager-only", action="store_true", help="the eager loops alone (issue 30: predict from them)")
args = p.parse_args()
ns = time.perf_counter_ns
sizes = [int(s) for s in args.sizes.split(",")]
torch.manual_seed(0)
model = timm.create_model("vit_small_patch16_224", pretrained=False).cuda().eval()
inputs = {b: torch.randn(b, 3, 224, 224, device="cuda") for b in sizes}
truth = {}

with torch.no_grad():
    for b in sizes:  # eager, one loop per batch size
        x = inputs[b]
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        t0 = ns()
        for _ in range(args.calls):
            model(x)
        torch.cuda.synchronize()
        truth[f"eager_b{b}_ns"] = (ns() - t0) / args.calls
    if args.eager_only:
        report(**truth)
        raise SystemExit(0)

    graphs, outs = {}, {}
    for b in sizes:  # one graph per batch size
        x = inputs[b]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        t0 = ns()
        with torch.cuda.graph(g):
            outs[b] = model(x)
        torch.cuda.synchronize()
        truth[f"capture_block_b{b}_ns"] = ns() - t0
        t0 = ns()
        g.replay()
        torch.cuda.synchronize()
        truth[f"first_replay_b{b}_ns"] = ns() - t0
        graphs[b] = g

    for b in sizes:
        g = graphs[b]
        torch.cuda.synchronize()
        t0 = ns()
        for _ in range(args.calls):
            g.replay()
        torch.cuda.synchronize()
        truth[f"graph_b{b}_ns"] = (ns() - t0) / args.calls
    for b in sizes:  # after the timings: what each graph holds (its own pool)
        truth[f"pool_reserved_b{b}_bytes"], truth[f"pool_allocated_b{b}_bytes"] = pool_memory(torch, graphs[b].pool())

report(**truth)
