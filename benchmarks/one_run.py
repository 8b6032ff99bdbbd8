"""Issue 29: `graphmode run`'s one traced run against the programs' own untraced clocks.

Reads the records of benchmarks/script_fidelity.py (`record OUT --configs untraced,graphmode --keep-traces all`): per
workload, the untraced processes' own timers (the truth) and the traces of `graphmode run` (its default: one traced
run) in the same batch. Each trace is analysed twice: with the installed cost model (the tracer's calibrated cost taken
off, analyzers.tracer_cost) and with the same model without its tracer costs (the figures as traced). Prints, per
workload and figure, the truth, both readings and their ratios to the truth; and per workload the wall time of
`graphmode run` over the untraced program's; and, for traces that sampled it, the CPU's speed of each traced run.

    python3 benchmarks/one_run.py RESULTS.jsonl TRACES_DIR [--markdown OUT.md] [--config graphmode_linger]

`--config` reads another of script_fidelity's `graphmode run` configurations (its traces WORKLOAD-CONFIG-NN.gmtrace and
its processes' wall time) in place of the default's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
from script_fidelity import figures  # benchmarks/: the truth's figures, one rule

SIZES = (1, 2, 4, 8)  # vit_batch_graphs.py's batch sizes, captured in this order


def truths(recs: list[dict[str, Any]], workload: str) -> list[dict[str, dict[str, float]]]:
    """Per untraced process, per subject ('graph', 'step' or 'b<B>'), its figures from the program's own clocks."""
    out = []
    for r in recs:
        if r["workload"] != workload or r["config"] != "untraced" or not r.get("truth"):
            continue
        t = r["truth"]
        subjects: dict[str, dict[str, float]] = {}
        if workload in ("vit_batches", "vit_eager"):  # the eager-only ViT prints its eager steps per size too
            for b in SIZES:
                subjects[f"b{b}"] = figures(t.get(f"eager_b{b}_ns"), t.get(f"graph_b{b}_ns"),
                                             t.get(f"capture_block_b{b}_ns"), t.get(f"first_replay_b{b}_ns"))
        elif workload in ("mgc_mobilenet", "vit_layers"):  # several graphs a step: the step
            subjects["step"] = figures(t.get("eager_ns"), t.get("graph_ns"), t.get("make_graphed_ns"), t.get("first_step_ns"))
        else:
            subjects["graph"] = figures(t.get("eager_ns"), t.get("graph_ns"), t.get("capture_block_ns"), t.get("first_replay_ns"))
        out.append(subjects)
    return out


def readings(trace_path: Path, workload: str, corrected: bool,
             sources: dict[str, str] | None = None) -> dict[str, dict[str, float]]:
    """graphmode's figures per subject from one trace (and into `sources`, per subject, the run its eager period comes
    from: 'window', 'corrected', 'timing', 'single', ...; per '<subject>/replay', its replays' or graphed steps')."""
    from graphmode.analyzers import analyze
    from graphmode.analyzers.costmodel import find_model
    from graphmode.tracer.store import load

    with load(trace_path) as t:
        choice = find_model(t.meta)
        if not corrected and choice.model is not None:
            choice = dataclasses.replace(choice, model=dataclasses.replace(choice.model, tracer={}))
        a = analyze(t, cost_model=choice)
    out: dict[str, dict[str, float]] = {}

    def put(name: str, be: Any, source: str = "", replay_source: str = "", untraced: bool = False) -> None:
        if be is None:
            return
        if sources is not None:
            sources[name], sources[f"{name}/replay"] = source, replay_source
        f = {k: float(v) for k, v in (("eager", be.eager_ns), ("replay", be.graph_ns), ("one_time", be.one_time_ns),
                                       ("break_even", be.replays)) if v is not None}
        if untraced:  # the one run captured it with CUPTI detached (GraphCost.capture_untraced)
            f["capture_untraced"] = 1.0
        out[name] = f

    def untraced(g: Any) -> bool:
        return g.cost is not None and bool(getattr(g.cost, "capture_untraced", False))

    if workload in ("mgc_mobilenet", "vit_layers"):
        step = next((s for s in a.steps if len(s.graphs) > 1), None)
        src = step.period_source if step is not None else ""
        put("step", step.break_even if step is not None else None, src, src)
    elif workload == "vit_batches":
        replayed = sorted((g for g in a.graphs if g.status == "replayed"), key=lambda g: g.graph_id)
        for b, g in zip(SIZES, replayed):
            put(f"b{b}", g.break_even, g.eager.run if g.eager is not None else "", g.graph.run if g.graph is not None else "",
                untraced(g))
    else:
        g = next((g for g in a.graphs if g.status == "replayed"), None)
        if g is not None:
            put("graph", g.break_even, g.eager.run if g.eager is not None else "", g.graph.run if g.graph is not None else "",
                untraced(g))
            if g.graph is not None and g.graph.work is not None:
                out.setdefault("graph", {})["replay"] = float(g.graph.work.trimmed_mean)
    return out


def _speeds(trace_path: Path) -> tuple[Any, ...]:
    """The CPU's speed on the main thread of each run of a trace (analyzers.cpu_speed): which process of a program ran
    on a slow CPU, the traced one or not (the untraced processes take no samples)."""
    from graphmode.analyzers.cpu_speed import cpu_speeds
    from graphmode.tracer.store import load

    with load(trace_path) as t:
        return cpu_speeds(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path)
    ap.add_argument("traces", type=Path)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--config", default="graphmode", help="script_fidelity's configuration of `graphmode run` to read")
    args = ap.parse_args()
    recs = [json.loads(line) for line in open(args.results) if line.strip()]
    rows = ["| workload | subject | figure | untraced (median, processes) | as traced | ratio | tracer's cost taken off | ratio |",
            "|---|---|---|---|---|---|---|---|"]
    walls = ["| workload | untraced script (s) | `graphmode run` (s) | ratio |", "|---|---|---|---|"]
    for w in sorted({r["workload"] for r in recs}):
        tr = truths(recs, w)
        traces = sorted(args.traces.glob(f"{w}-{args.config}-*.gmtrace"))
        if not tr or not traces:
            continue
        raw = [readings(p, w, corrected=False) for p in traces]
        fixed = [readings(p, w, corrected=True) for p in traces]
        for subject in sorted(tr[0]):
            for q in ("eager", "replay", "one_time", "break_even"):
                u = [x[subject][q] for x in tr if q in x.get(subject, {})]
                a = [x[subject][q] for x in raw if q in x.get(subject, {})]
                c = [x[subject][q] for x in fixed if q in x.get(subject, {})]
                if not u or not (a or c):
                    continue
                um = float(np.median(u))

                def cell(v: list[float]) -> tuple[str, str]:
                    if not v:
                        return "—", "—"
                    m = float(np.median(v))
                    text = f"{m:.0f}" if q == "break_even" else f"{m / 1e3:,.1f} us"
                    return text, f"{m / um:.2f}" if um else "—"

                (at, ar), (ct, cr) = cell(a), cell(c)
                ut = f"{um:.0f}" if q == "break_even" else f"{um / 1e3:,.1f} us"
                rows.append(f"| {w} | {subject} | {q.replace('_', '-')} | {ut} ({len(u)}) | {at} | {ar} | {ct} | {cr} |")
        pw = [r["process_s"] for r in recs if r["workload"] == w and r["config"] == args.config]
        pu = [r["process_s"] for r in recs if r["workload"] == w and r["config"] == "untraced"]
        if pw and pu:
            walls.append(f"| {w} | {np.median(pu):.1f} | {np.median(pw):.1f} | {np.median(pw) / np.median(pu):.2f} |")
    speeds = ["| trace | run | samples | median sample | fastest tenth | median over the workload's fastest tenth |",
              "|---|---|---|---|---|---|"]
    for w in sorted({r["workload"] for r in recs}):
        found = []
        for p in sorted(args.traces.glob(f"{w}-{args.config}-*.gmtrace")):
            found += [(p.name, s) for s in _speeds(p)]
        fastest = min((s.fast_ns for _, s in found), default=0.0)
        speeds += [f"| {name} | {s.run} | {s.samples} | {s.median_ns / 1e3:.1f} us | {s.fast_ns / 1e3:.1f} us | "
                   f"{s.median_ns / fastest:.2f} |" for name, s in found if fastest > 0]
    text = "\n".join(rows) + "\n\n" + "\n".join(walls) + "\n"
    if len(speeds) > 2:  # traces recorded since session 23 sample the CPU's speed (analyzers.cpu_speed)
        text += "\n" + "\n".join(speeds) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
