"""Session 13 experiment: does a probe graph built in the workload's own process, after its eager run, cost the
same first-graph extra as the workload's real graph would (built in another, identical process)?

    python benchmarks/notes/2026-12-01-s13/probe_in_process.py drive OUT.jsonl REPS
    python benchmarks/notes/2026-12-01-s13/probe_in_process.py one WORKLOAD WHAT

WORKLOAD: chain-K or dag-W-D, the `graphmode bench` workload: set-up, 10 warm-up steps and 200 steps of each
eager mode (as run_pass does). Then GRAPHS graphs of WHAT, one after another, each instantiated, uploaded, launched
once and destroyed; per graph its build/instantiate/upload/first_launch ns:
  real    the workload's own graph (chain: stream capture; dag: node API)
  calreal a Calibrator made first (its module, 17 streams, 66 events), then the real graph
  capT    the Calibrator's first-graph probe: a captured chain of 20 one-block kernels
  capW    the same chain of 20 wide kernels (8 blocks per SM, as many as the workloads launch)
  repW    a replica of the real graph from the Calibrator's kernels: same node kinds, edges and build method,
          wide kernels
  repT    the replica with one-block kernels
Program-like process (duckdb connection, cupti imported) as in session 12's experiments.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import time

GRAPHS = 6
WHATS = ("real", "calreal", "capT", "capW", "repW", "repT")


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


def replica(parts: list[str], kind: str) -> tuple[list, str]:
    if parts[0] == "chain":
        return [("op", kind, 0)] * int(parts[1]), "capture"
    w, d = int(parts[1]), int(parts[2])
    steps = [("op", "memset", 0), ("record", 0, 0)]
    for i in range(1, w + 1):
        steps += [("wait", i, 0)] + [("op", kind, i)] * d + [("record", i, i)]
    steps += [("wait", 0, i) for i in range(1, w + 1)]
    return steps + [("op", kind, 0), ("op", "memcpy", 0)], "api"


def cal_graphs(cal, steps: list, build: str) -> list[dict]:
    rows = []
    for _ in range(GRAPHS):
        r = cal.measure(steps, replays=5, gated=0, eager=0, build=build)
        rows.append({"build": r["build_api" if build == "api" else "capture"], "instantiate": r["instantiate"],
                     "upload": r["upload"], "first_launch": r["first_launch"], "nodes": r["actual_nodes"],
                     "edges": r["actual_edges"]})
    return rows


def one(workload: str, what: str) -> dict:
    import duckdb
    from cupti import cupti  # noqa: F401

    import graphmode.tracer.runner  # noqa: F401
    from graphmode.tracer import calibrate as c
    from graphmode.tracer.workloads import make_workload

    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SELECT 1").fetchall()
    parts = workload.split("-")
    wl = make_workload(parts[0], **({"width": int(parts[1]), "depth": int(parts[2])} if parts[0] == "dag" else {"kernels": int(parts[1])}))
    wl.setup()
    eager(wl)
    t1 = time.perf_counter()
    if what == "real":
        rows = workload_graphs(wl)
    elif what == "calreal":
        c.Calibrator()
        rows = workload_graphs(wl)
    else:
        cal = c.Calibrator()
        if what in ("capT", "capW"):
            steps, build = [("op", "kernel" if what == "capT" else "kernel_wide", 0)] * c.PROBE_KERNELS, "capture"
        else:
            steps, build = replica(parts, "kernel_wide" if what == "repW" else "kernel")
        rows = cal_graphs(cal, steps, build)
    return {"workload": workload, "what": what, "graphs": rows, "setup_eager_s": t1 - t0, "total_s": time.perf_counter() - t0}


def drive(out: str, reps: int, workloads: list[str]) -> None:
    todo = [(w, x) for w in workloads for x in WHATS] * reps
    random.Random(13).shuffle(todo)
    t0 = time.time()
    with open(out, "w") as f:
        for w, x in todo:
            r = subprocess.run([sys.executable, __file__, "one", w, x], capture_output=True, text=True, timeout=120)
            line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else json.dumps(
                {"workload": w, "what": x, "error": r.stderr[-600:]})
            f.write(line + "\n")
            f.flush()
    print(f"{len(todo)} processes, {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "one":
        print(json.dumps(one(sys.argv[2], sys.argv[3])))
    else:
        drive(sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",") if len(sys.argv) > 4 else ["chain-5", "chain-20", "dag-2-2", "dag-8-4"])
