"""Session 13 experiment: what, done before the first graph, takes away most of its extra instantiate cost?

    python benchmarks/notes/2026-12-01-s13/what_prepays.py drive OUT.jsonl REPS
    python benchmarks/notes/2026-12-01-s13/what_prepays.py one WORKLOAD PRE WHAT

Call 1 found that making a Calibrator (a module, three 64 KB buffers, 17 streams, 68 events) between a bench
workload's eager run and its first graph cut that graph's extra cost from 400-550 us to 150-270 us, nearly all of
it at instantiate. WORKLOAD as in probe_in_process.py (set-up and eager run), then PRE, then GRAPHS graphs of WHAT.
PRE: none, alloc64k / alloc1m / alloc4m (one cuMemAlloc), streams17, events68, module (calibrate.cu loaded), cal.
WHAT: real (the workload's graph), empty (a chain of 20 empty nodes, node API, on the NULL stream: a probe that
needs no resource of its own).
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from probe_in_process import GRAPHS, eager, workload_graphs  # noqa: E402

PRES = ("none", "alloc64k", "alloc1m", "alloc4m", "streams17", "events68", "module", "cal")


def pre(what: str) -> None:
    from graphmode.tracer import calibrate as c
    from graphmode.tracer import cuda_util as cu_util

    if what == "none":
        return
    if what.startswith("alloc"):
        cu_util.alloc({"alloc64k": 1 << 16, "alloc1m": 1 << 20, "alloc4m": 4 << 20}[what])
    elif what == "streams17":
        [cu_util.new_stream() for _ in range(17)]
    elif what == "events68":
        [cu_util.new_event() for _ in range(68)]
    elif what == "module":
        cu_util.compile_module(c.SOURCE, "calibrate.cu", cu_util.init_device())
    elif what == "cal":
        c.Calibrator()
    else:
        raise SystemExit(what)


def empty_graphs(n: int = GRAPHS, nodes: int = 20) -> list[dict]:
    from cuda.bindings import driver as cu

    from graphmode.tracer.cuda_util import check

    clock = time.perf_counter_ns
    out = []
    for _ in range(n):
        a = clock()
        graph = check(cu.cuGraphCreate(0), "cuGraphCreate")
        prev = None
        for _ in range(nodes):
            prev = check(cu.cuGraphAddEmptyNode(graph, [prev] if prev is not None else None, 1 if prev is not None else 0), "cuGraphAddEmptyNode")
        b = clock()
        gexec = check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate"); c = clock()
        check(cu.cuGraphUpload(gexec, 0), "cuGraphUpload"); check(cu.cuStreamSynchronize(0), "sync"); d = clock()
        check(cu.cuGraphLaunch(gexec, 0), "cuGraphLaunch"); check(cu.cuStreamSynchronize(0), "sync"); e = clock()
        check(cu.cuGraphExecDestroy(gexec), "cuGraphExecDestroy")
        check(cu.cuGraphDestroy(graph), "cuGraphDestroy")
        out.append({"build": b - a, "instantiate": c - b, "upload": d - c, "first_launch": e - d})
    return out


def one(workload: str, p: str, what: str) -> dict:
    import duckdb
    from cupti import cupti  # noqa: F401

    import graphmode.tracer.runner  # noqa: F401
    from graphmode.tracer.workloads import make_workload

    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SELECT 1").fetchall()
    parts = workload.split("-")
    wl = make_workload(parts[0], **({"width": int(parts[1]), "depth": int(parts[2])} if parts[0] == "dag" else {"kernels": int(parts[1])}))
    wl.setup()
    eager(wl)
    pre(p)
    rows = workload_graphs(wl) if what == "real" else empty_graphs()
    return {"workload": workload, "pre": p, "what": what, "graphs": rows, "total_s": time.perf_counter() - t0}


def drive(out: str, reps: int) -> None:
    todo = [("chain-20", p, "real") for p in PRES] + [("dag-8-4", p, "real") for p in ("none", "alloc64k", "alloc1m")]
    todo += [(w, p, "empty") for w in ("chain-20", "dag-2-2", "dag-8-4") for p in ("none", "cal")]
    todo = todo * reps
    random.Random(131).shuffle(todo)
    t0 = time.time()
    with open(out, "w") as f:
        for w, p, x in todo:
            r = subprocess.run([sys.executable, __file__, "one", w, p, x], capture_output=True, text=True, timeout=120)
            line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else json.dumps(
                {"workload": w, "pre": p, "what": x, "error": r.stderr[-600:]})
            f.write(line + "\n")
            f.flush()
    print(f"{len(todo)} processes, {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "one":
        print(json.dumps(one(sys.argv[2], sys.argv[3], sys.argv[4])))
    else:
        drive(sys.argv[2], int(sys.argv[3]))
