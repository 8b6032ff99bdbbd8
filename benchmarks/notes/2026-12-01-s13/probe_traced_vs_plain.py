"""Session 13 experiment (call 5): does tracing the eager part (`graphmode run`'s measuring run, CUPTI attached, then
detached) change what the first-graph probe measures after it? Per workload, fresh processes of three kinds, shuffled:
  real    the bench workload's eager part, then its own graph 6 times (probe_in_process.py 'real'): the truth
  plain   the same eager part untraced (benchmarks/bench_eager.py --probe), then tracer.first_graph_probe
  traced  `graphmode run --runs 2 benchmarks/bench_eager.py`: the measuring run's probe (meta.first_graph_probe)

    python benchmarks/notes/2026-12-01-s13/probe_traced_vs_plain.py OUT.jsonl REPS
"""
from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ARGS = {"chain-5": ["chain", "--kernels", "5"], "chain-20": ["chain", "--kernels", "20"],
        "dag-2-2": ["dag", "--width", "2", "--depth", "2"], "dag-8-4": ["dag", "--width", "8", "--depth", "4"]}


def one(workload: str, kind: str) -> dict:
    py, eager = sys.executable, str(ROOT / "benchmarks" / "bench_eager.py")
    t0 = time.perf_counter()
    if kind == "real":
        r = subprocess.run([py, str(HERE / "probe_in_process.py"), "one", workload, "real"], capture_output=True, text=True, timeout=120)
        g = json.loads(r.stdout.strip().splitlines()[-1])["graphs"]
        steady = {k: statistics.median([x[k] for x in g[3:]]) for k in g[0]}
        out = {"extra_ns": sum(g[0][k] - steady[k] for k in g[0]), "graphs": g}
    elif kind == "plain":
        r = subprocess.run([py, eager, *ARGS[workload], "-n", "200", "--warmup", "20", "--probe"], capture_output=True, text=True, timeout=120)
        out = json.loads(r.stdout.strip().splitlines()[-1])
    else:
        with tempfile.TemporaryDirectory() as d:
            trace = Path(d) / "t.gmtrace"
            r = subprocess.run([py, "-m", "graphmode", "run", "--runs", "2", "--no-report", "--no-html", "--out", str(trace), eager,
                                *ARGS[workload], "-n", "200", "--warmup", "20"], capture_output=True, text=True, timeout=180)
            import duckdb

            con = duckdb.connect(str(trace), read_only=True)
            out = json.loads(con.execute("SELECT value FROM meta WHERE key = 'first_graph_probe'").fetchone()[0])
            con.close()
    return {"workload": workload, "kind": kind, "seconds": time.perf_counter() - t0, **out}


def main(path: str, reps: int) -> None:
    todo = [(w, k) for w in ARGS for k in ("real", "plain", "traced")] * reps
    random.Random(135).shuffle(todo)
    with open(path, "w") as f:
        for w, k in todo:
            try:
                row = one(w, k)
            except Exception as e:  # keep going: one failed process is a line saying so
                row = {"workload": w, "kind": k, "error": repr(e)[-600:]}
            f.write(json.dumps(row) + "\n")
            f.flush()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(sys.argv[1], int(sys.argv[2]))
