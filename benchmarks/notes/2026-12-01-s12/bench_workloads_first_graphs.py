"""Session 12 experiment: why did the bench's dag (node-API) first graphs cost less extra than the node-API probe's?

    python benchmarks/notes/2026-12-01-s12/bench_workloads_first_graphs.py drive OUT.jsonl REPS
    python benchmarks/notes/2026-12-01-s12/bench_workloads_first_graphs.py one CONFIG

CONFIG: wl-dag-W-D / wl-chain-K (the bench workload: setup, 10 warm-up + 200 iterations of each eager mode as
run_pass does, then PROBE graphs built, instantiated, uploaded, launched one after another, each destroyed),
cal-then-dag (Calibrator + 200 eager probe-chain steps, then the dag workload's graphs, no dag eager),
dag-then-api (dag workload eager as above, then the Calibrator's node-API probe-chain graphs).
Program-like process (duckdb connection, cupti imported). Per graph: build/instantiate/upload/first_launch ns.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import time

GRAPHS = 6


def workload_graphs(wl, n: int = GRAPHS) -> list[dict]:
    from graphmode.tracer.runner import DriverGraphOps

    ops = DriverGraphOps(wl.stream)
    clock = time.perf_counter_ns
    out = []
    for _ in range(n):
        wl.reset()
        a = clock(); graph, _o = wl.build_graph(); b = clock()
        gexec = ops.instantiate(graph); c = clock()
        ops.upload(gexec); d = clock()
        ops.launch(gexec); ops.sync(); e = clock()
        ops.destroy(graph, gexec)
        out.append({"build": b - a, "instantiate": c - b, "upload": d - c, "first_launch": e - d})
    return out


def eager(wl, its: int = 200) -> None:
    modes = wl.eager_modes()
    first = next(iter(modes.values()))
    for _ in range(10):
        first()
    for step in modes.values():
        wl.reset()
        for _ in range(its):
            step()


def one(config: str) -> dict:
    import duckdb
    from cupti import cupti  # noqa: F401

    import graphmode.tracer.runner  # noqa: F401
    from graphmode.tracer.workloads import make_workload

    con = duckdb.connect()
    con.execute("SELECT 1").fetchall()
    parts = config.split("-")
    if parts[0] == "wl":
        wl = make_workload(parts[1], **({"width": int(parts[2]), "depth": int(parts[3])} if parts[1] == "dag" else {"kernels": int(parts[2])}))
        wl.setup()
        eager(wl)
        rows = workload_graphs(wl)
    elif config == "cal-then-dag":
        from graphmode.tracer import calibrate as c
        cal = c.Calibrator()
        plan = cal.plan([("op", "kernel", 0)] * c.PROBE_KERNELS)
        for _ in range(200):
            cal.issue(plan)
            cal.check(cal.cu.cuCtxSynchronize(), "sync")
        wl = make_workload("dag", width=2, depth=2)
        wl.setup()
        rows = workload_graphs(wl)
    elif config == "dag-then-api":
        from graphmode.tracer import calibrate as c
        wl = make_workload("dag", width=2, depth=2)
        wl.setup()
        eager(wl)
        cal = c.Calibrator()
        steps = [("op", "kernel", 0)] * c.PROBE_KERNELS
        rows = [{("build" if k == "build_api" else k): v for k, v in cal.measure(steps, replays=5, gated=0, eager=0, build="api").items()
                 if k in ("build_api", "instantiate", "upload", "first_launch")} for _ in range(GRAPHS)]
    else:
        raise SystemExit(config)
    return {"config": config, "graphs": rows}


def drive(out: str, reps: int) -> None:
    configs = ["wl-dag-2-2", "wl-dag-8-4", "wl-chain-5", "wl-chain-20", "cal-then-dag", "dag-then-api"]
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
    if sys.argv[1] == "one":
        print(json.dumps(one(sys.argv[2])))
    else:
        drive(sys.argv[2], int(sys.argv[3]))
