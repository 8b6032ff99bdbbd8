"""Session 13 check on third-party code: CuPy's own stream capture (benchmarks/third_party/cupy_chain.py, timed by its
own clocks, untraced) beside graphmode's prediction from the same program's eager part alone (`--eager-only` under
`graphmode run`), with the first-graph extra the run's probe measured in that process, and with the model's. Both
with `--sync-each` (a synchronization after each step and replay: the loop graphmode finds in an eager-only script).

    python benchmarks/notes/2026-12-01-s13/cupy_first_graph.py OUT_DIR PAIRS
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROG = ROOT / "benchmarks" / "third_party" / "cupy_chain.py"
PREFIX = "GRAPHMODE_TRUTH "


def truth() -> dict:
    r = subprocess.run([sys.executable, str(PROG), "--sync-each"], capture_output=True, text=True, timeout=120, cwd=PROG.parent)
    t = json.loads(next(line for line in r.stdout.splitlines() if line.startswith(PREFIX))[len(PREFIX):])
    one = t["capture_block_ns"] + t["first_replay_ns"] - t["graph_ns"]
    saved = t["eager_ns"] - t["graph_ns"]
    return {**t, "one_time_ns": one, "break_even_exact": one / saved if saved > 0 else None}


def predicted(trace: Path) -> dict:
    from graphmode.analyzers import analyze
    from graphmode.tracer.store import load

    out = {}
    for how in ("probe", "model"):
        with load(trace) as t:
            probe = t.meta.get("first_graph_probe")
            if how == "model":
                t.meta.pop("first_graph_probe", None)
            every = analyze(t).prediction.regions
            regions = [r for r in every if r.direction == "to_graph" and r.one_time is not None]
            if not regions:
                out[how] = {"error": "no to_graph region with a one-time cost",
                            "regions": [(r.label, r.direction, r.iterations, list(r.notes)) for r in every]}
                continue
            r = max(regions, key=lambda r: r.iterations)
            out[how] = {"one_time_ns": r.one_time.ns, "one_time_low_ns": r.one_time.low_ns, "one_time_high_ns": r.one_time.high_ns,
                        "first_graph_extra_ns": r.first_graph_extra.ns if r.first_graph_extra else None,
                        "first_graph_from": r.first_graph_from, "break_even": r.break_even, "replay_ns": r.replay_period.ns,
                        "eager_ns": r.eager_period.ns, "label": r.label, "iterations": r.iterations}
        out["probe_meta"] = {k: v for k, v in (probe or {}).items() if k != "graphs"}
    return out


def main(out: Path, pairs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "cupy-first-graph.jsonl", "w") as f:
        for i in range(pairs):
            row: dict = {"pair": i, "truth": truth()}
            trace = out / f"cupy-eager.p{i}.gmtrace"
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "graphmode", "run", "--no-report", "--no-html", "--out", str(trace),
                                str(PROG), "--eager-only", "--sync-each"], capture_output=True, text=True, timeout=300, cwd=PROG.parent)
            row["run_s"] = time.perf_counter() - t0
            row.update(predicted(trace) if r.returncode == 0 else {"error": r.stderr[-800:]})
            f.write(json.dumps(row) + "\n")
            f.flush()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(Path(sys.argv[1]), int(sys.argv[2]))
