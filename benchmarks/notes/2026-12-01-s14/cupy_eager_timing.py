"""Session 14 check on third-party code: CuPy's own stream capture (benchmarks/third_party/cupy_chain.py --sync-each,
timed by its own clocks, untraced) beside graphmode's prediction from the same program's eager part alone
(`graphmode run ... --eager-only --sync-each`), now that the timing run times an eager-only loop's steps untraced.
Per pair: the program's truth (its GRAPHMODE_TRUTH line, as session 13's `truth` reads it), the runs graphmode made,
the per-iteration table's eager period and the run it came from, and the prediction (with the first-graph extra
measured in the process). `--no-sync`: the program's loops without --sync-each (one synchronization at each loop's
end: the step is found from its call line, analyzers.inference.loop_step; call 3).

    python benchmarks/notes/2026-12-01-s14/cupy_eager_timing.py OUT_DIR PAIRS [--no-sync]
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PROG = ROOT / "benchmarks" / "third_party" / "cupy_chain.py"
_spec = importlib.util.spec_from_file_location("s13", HERE.parent / "2026-12-01-s13" / "cupy_first_graph.py")
s13 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s13)  # type: ignore[union-attr]


FLAGS = [] if "--no-sync" in sys.argv else ["--sync-each"]


def truth() -> dict:
    r = subprocess.run([sys.executable, str(PROG), *FLAGS], capture_output=True, text=True, timeout=120, cwd=PROG.parent)
    t = json.loads(next(line for line in r.stdout.splitlines() if line.startswith(s13.PREFIX))[len(s13.PREFIX):])
    one = t["capture_block_ns"] + t["first_replay_ns"] - t["graph_ns"]
    saved = t["eager_ns"] - t["graph_ns"]
    return {**t, "one_time_ns": one, "break_even_exact": one / saved if saved > 0 else None}


def graphmode_side(trace: Path) -> dict:
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    with load(trace) as t:
        a = analyze(t)
        eager = a.mode("eager")
        [r] = [r for r in a.prediction.regions if r.direction == "to_graph"] or [None]
        return {
            "runs": [x["config"]["name"] for x in t.meta.get("runs", [])],
            "probe_run": (t.meta.get("first_graph_probe") or {}).get("run"),
            "table_eager_ns": eager.wall.median if eager and eager.wall else None,
            "table_eager_source": eager.wall_source if eager else None,
            "traced_eager_ns": eager.traced_wall.median if eager and eager.traced_wall else None,
            "basis": None if r is None else r.basis,
            "prediction": None if r is None else {
                "eager_ns": r.eager_period.ns, "replay_ns": r.replay_period.ns, "one_time_ns": r.one_time.ns,
                "first_graph_extra_ns": r.first_graph_extra.ns if r.first_graph_extra else None,
                "first_graph_from": r.first_graph_from, "break_even": r.break_even,
                "break_even_interval": [r.break_even_low, r.break_even_high], "notes": list(r.notes)},
        }


def main(out: Path, pairs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"cupy-eager-timing{'-nosync' if not FLAGS else ''}.jsonl", "w") as f:
        for i in range(pairs):
            row: dict = {"pair": i, "flags": FLAGS, "truth": truth()}
            trace = out / f"cupy-eager.p{i}.gmtrace"
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "graphmode", "run", "--no-report", "--no-html", "--out", str(trace),
                                str(PROG), "--eager-only", *FLAGS], capture_output=True, text=True, timeout=300, cwd=PROG.parent)
            row["run_s"] = time.perf_counter() - t0
            row.update(graphmode_side(trace) if r.returncode == 0 else {"error": r.stderr[-800:]})
            f.write(json.dumps(row) + "\n")
            f.flush()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(Path(sys.argv[1]), int(sys.argv[2]))
