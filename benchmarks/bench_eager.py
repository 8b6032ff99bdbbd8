"""A `graphmode bench` workload's eager part alone, as tracer.runner.run_pass runs it before building the graph:
set-up, warm-up, then every eager mode for N iterations and the check of its results (a copy to the host), and
nothing after (no graph, no tear-down).

    graphmode run benchmarks/bench_eager.py chain --kernels 20 -n 200 --warmup 20
    graphmode run benchmarks/bench_eager.py dag --width 2 --depth 2 -n 200 --warmup 20

Under `graphmode run` its trace carries the first-graph probe (tracer.first_graph_probe) of a process whose history
is the bench's up to its graph: benchmarks/prediction.py (`run --probe`) gives each bench process's prediction the
first-graph extra measured so, in a process of its own, and compares it with the first graph the bench measured.
"""

from __future__ import annotations

import argparse

from graphmode.tracer.workloads import make_workload

ap = argparse.ArgumentParser()
ap.add_argument("workload", choices=("chain", "dag"))
ap.add_argument("--kernels", type=int, default=20)
ap.add_argument("--width", type=int, default=4)
ap.add_argument("--depth", type=int, default=3)
ap.add_argument("-n", type=int, default=200)
ap.add_argument("--warmup", type=int, default=20)
ap.add_argument("--probe", action="store_true", help="untraced: end with the first-graph probe and print what it measured (JSON)")
args = ap.parse_args()
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
