"""A `graphmode bench` workload's eager part alone, as tracer.runner.run_pass runs it before building the graph:
set-up, warm-up, then every eager mode for N iterations and the check of its results (a copy to the host), and
nothing after (no graph, no tear-down). `torch`: benchmarks/prediction.py's PyTorch step (`--step mlp|encoder`) as
graphmode.compare runs it (tracer.compare.TorchStepWorkload).

    graphmode run benchmarks/bench_eager.py chain --kernels 20 -n 200 --warmup 20
    graphmode run benchmarks/bench_eager.py dag --width 2 --depth 2 -n 200 --warmup 20
    graphmode run benchmarks/bench_eager.py torch --step mlp -n 200 --warmup 10

Under `graphmode run` its trace carries the first-graph probe (tracer.first_graph_probe; for PyTorch, the torch
probe of torch.cuda.graph's first capture) of a process whose history is the bench's up to its graph: benchmarks/prediction.py (`run --probe`) gives each bench process's prediction the
first-graph extra measured so, in a process of its own, and compares it with the first graph the bench measured.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphmode.tracer.workloads import make_workload

ap = argparse.ArgumentParser()
ap.add_argument("workload", choices=("chain", "dag", "torch"))
ap.add_argument("--step", default="mlp", help="torch: benchmarks/prediction.py's step (mlp, encoder)")
ap.add_argument("--kernels", type=int, default=20)
ap.add_argument("--width", type=int, default=4)
ap.add_argument("--depth", type=int, default=3)
ap.add_argument("-n", type=int, default=200)
ap.add_argument("--warmup", type=int, default=20)
ap.add_argument("--probe", action="store_true", help="untraced: end with the first-graph probe and print what it measured (JSON)")
args = ap.parse_args()
if args.workload == "torch":
    from graphmode.tracer.compare import step_workload

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from prediction import _torch_step

    wl = step_workload(_torch_step(args.step), "torch")
else:
    wl = make_workload(args.workload, **({"width": args.width, "depth": args.depth} if args.workload == "dag" else {"kernels": args.kernels}))
wl.setup()
modes = wl.eager_modes()
first = next(iter(modes.values()))
for _ in range(args.warmup):
    first()
for step in modes.values():
    wl.reset()
    for _ in range(args.n):
        step()
    wl.verify()
if args.probe:
    import json

    from graphmode.tracer.first_graph_probe import probe_first_graph

    print(json.dumps(probe_first_graph()))
