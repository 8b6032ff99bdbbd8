"""Session 12 experiment: what before a process's first graph makes its instantiate cheap (the dag 2x2 bench's)?

    python benchmarks/notes/2026-12-01-s12/first_graph_after_setups.py drive OUT.jsonl REPS
    python benchmarks/notes/2026-12-01-s12/first_graph_after_setups.py one CONFIG

Per fresh program-like process: Calibrator, then CONFIG's set-up, then 200 synchronized eager steps of the 20-kernel
probe chain, then 6 captured probe graphs (capture/instantiate/upload/first_launch, perf_counter_ns).
CONFIG: base | alloc-<bytes> | allocfree-<bytes> | wl-dag-W-D | wl-chain-K (a workload's setup only) |
streams-8 | module (the dag kernels compiled and loaded)
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import time


def one(config: str) -> dict:
    import duckdb
    from cupti import cupti  # noqa: F401

    import graphmode.tracer.runner  # noqa: F401
    from graphmode.tracer import calibrate as c
    from graphmode.tracer import cuda_util as cu_util
    from graphmode.tracer.workloads import make_workload

    con = duckdb.connect()
    con.execute("SELECT 1").fetchall()
    cal = c.Calibrator()
    keep = []
    parts = config.split("-")
    if parts[0] == "alloc":
        keep.append(cu_util.alloc(int(parts[1])))
    elif parts[0] == "allocfree":
        cu_util.free(cu_util.alloc(int(parts[1])))
    elif parts[0] == "wl":
        wl = make_workload(parts[1], **({"width": int(parts[2]), "depth": int(parts[3])} if parts[1] == "dag" else {"kernels": int(parts[2])}))
        wl.setup()
        keep.append(wl)
    elif parts[0] in ("htod", "dtoh"):
        import numpy as np
        host = np.zeros(int(parts[1]) // 4, dtype=np.float32)
        dev = cu_util.alloc(host.nbytes)
        keep.append(dev)
        (cu_util.htod(dev, host) if parts[0] == "htod" else cu_util.dtoh(host, dev))
    elif config == "events-4":
        keep += [cu_util.new_event() for _ in range(4)]
    elif config == "streams-8":
        keep += [cu_util.new_stream() for _ in range(8)]
    elif config == "module":
        from graphmode.tracer.workloads.dag import SOURCE
        keep.append(cu_util.compile_module(SOURCE, "dag.cu", cal.device))
    elif config != "base":
        raise SystemExit(config)
    steps = [("op", "kernel", 0)] * c.PROBE_KERNELS
    plan = cal.plan(steps)
    for _ in range(200):
        cal.issue(plan)
        cal.check(cal.cu.cuCtxSynchronize(), "sync")
    rows = [{k: r[k] for k in ("capture", "instantiate", "upload", "first_launch")}
            for r in (cal.measure(steps, replays=5, gated=0, eager=0) for _ in range(6))]
    return {"config": config, "graphs": rows}


def drive(out: str, reps: int) -> None:
    configs = ["base", "htod-1048576", "htod-4", "dtoh-1048576", "events-4", "wl-chain-5"]
    configs += ["full-chain-5", "full-dag-2-2", "full-dag-8-4"]
    todo = configs * reps
    random.Random(12).shuffle(todo)
    t0 = time.time()
    with open(out, "w") as f:
        for cfg in todo:
            r = subprocess.run([sys.executable, __file__, "one", cfg], capture_output=True, text=True, timeout=120)
            line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else json.dumps(
                {"config": cfg, "error": r.stderr[-600:]})
            f.write(line + "\n")
            f.flush()
    print(f"{len(todo)} processes, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    if sys.argv[1] == "one" and sys.argv[2].startswith("full-"):  # the bench workload alone (bench_workloads_first_graphs.py: wl-*)
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        import bench_workloads_first_graphs as s12first
        print(json.dumps(s12first.one("wl-" + sys.argv[2][5:])))
    elif sys.argv[1] == "one":
        print(json.dumps(one(sys.argv[2])))
    else:
        drive(sys.argv[2], int(sys.argv[3]))
