"""CuPy: a chain of elementwise kernels run eagerly and captured on a stream (cupy.cuda.Stream
begin_capture/end_capture) and replayed, each loop timed by the program's own clock with one
synchronization at its end; the capture and instantiation (end_capture) timed too. `--eager-only`: the eager loops
alone (what graphmode's prediction reads, benchmarks/notes/2026-12-01-s13/cupy_first_graph.py); `--sync-each`: a
synchronization after every step and replay."""

import argparse
import time

import cupy as cp

from _truth import report

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, default=300)
p.add_argument("--eager-only", action="store_true")
p.add_argument("--sync-each", action="store_true", help="synchronize after every step and every replay (as a loop that reads "
                                                         "a result each step does)")
args = p.parse_args()
ns = time.perf_counter_ns

x = cp.arange(1 << 18, dtype=cp.float32)
stream = cp.cuda.Stream(non_blocking=True)


def step(v: cp.ndarray) -> cp.ndarray:
    for _ in range(16):
        v = v * 1.0001 + 0.5
    return v


with stream:
    for _ in range(10):
        step(x)
    stream.synchronize()
    t0 = ns()
    for _ in range(args.iters):
        step(x)
        if args.sync_each:
            stream.synchronize()
    stream.synchronize()
    eager_ns = (ns() - t0) / args.iters
    if args.eager_only:
        report(workload="cupy_chain", eager_ns=eager_ns, steps=args.iters)
        raise SystemExit(0)
    t0 = ns()
    stream.begin_capture()
    step(x)
    graph = stream.end_capture()
    capture_ns = ns() - t0
    t0 = ns()
    graph.launch(stream)
    stream.synchronize()
    first_ns = ns() - t0
    t0 = ns()
    for _ in range(args.iters):
        graph.launch(stream)
        if args.sync_each:
            stream.synchronize()
    stream.synchronize()
    graph_ns = (ns() - t0) / args.iters
report(workload="cupy_chain", eager_ns=eager_ns, graph_ns=graph_ns, capture_block_ns=capture_ns, housekeeping_ns=0,
       first_replay_ns=first_ns, steps=args.iters)
