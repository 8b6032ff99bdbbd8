"""Issue 29, item 4: are the distortion bounds a report states for the one run's figures true on the benchmark set?

The report says how far a figure of the one traced run may still be from untraced, and the break-even interval allows
for it (analyzers.break_even): a one-time cost with the tracer's calibrated cost taken off (analyzers.tracer_cost) up to
CORRECTED_CAPTURE_BOUND too high or CORRECTED_CAPTURE_LOW_BOUND too low; one whose capture the one run made with
CUPTI detached (tracer.untraced_windows; since session 29) UNTRACED_CAPTURE_BOUND too high or
UNTRACED_CAPTURE_LOW_BOUND too low (a step of several graphs, its first untraced and the rest corrected, is held by the
corrected bounds); an eager period leveled by an untraced window
of the run (analyzers.untraced_windows) WINDOW_EAGER_BOUND either way; a replay folded from its nodes' records
(analyzers.tracer_cost) up to NODE_RECORDS_REPLAY_SLOWDOWN too long; a CPU-bound period (an eager step, a replay, a
graphed step) with the tracer's calibrated cost taken off CORRECTED_SLOWDOWN_BOUND either way. This reads recordings of the default `graphmode
run` beside the same programs' untraced processes (benchmarks/script_fidelity.py's results.jsonl with its traces,
`--keep-traces all`) and writes, per traced process and subject (a graph, a batch size's graph, a step), the untraced
processes' median one-time cost, eager period and replay with their spread, graphmode's one-time cost as traced and
corrected, its eager period and where that comes from, its replay and whether it was folded from node records, and
their ratios: one JSON line each
(benchmarks/results/one_run/one_run_ratios.jsonl). Then it says whether every ratio lies inside the stated bounds.

    python3 benchmarks/one_run_bounds.py LABEL RESULTS.jsonl TRACES_DIR [LABEL RESULTS.jsonl TRACES_DIR ...] [--out F]
    python3 benchmarks/one_run_bounds.py --check F      # the bounds against a written record

`--config NAME` reads another of script_fidelity's configurations (traces WORKLOAD-NAME-NN.gmtrace) in place of the default.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eager_only import predictions  # noqa: E402  (benchmarks/)
from one_run import SIZES, readings, truths  # noqa: E402

from graphmode.analyzers.tracer_cost import replays_from_nodes  # noqa: E402
from graphmode.tracer.store import load  # noqa: E402


def _untraced(tr: list[dict[str, dict[str, float]]], subject: str, figure: str, prefix: str) -> dict[str, Any]:
    vals = [x[subject][figure] for x in tr if figure in x.get(subject, {})]
    if not vals:
        return {}
    return {f"{prefix}untraced_ns": float(np.median(vals)), f"{prefix}untraced_min_ns": min(vals),
            f"{prefix}untraced_max_ns": max(vals), f"{prefix}untraced_processes": len(vals)}


# the eager-only programs (issue 30): their predicted regions' eager periods against the same programs' untraced
# processes; a ViT's regions in the order of its batch sizes
EAGER_ONLY = {"hf_eager": ["graph"], "resnet_eager": ["graph"], "mobilenet_fn": ["graph"],
              "vit_eager": [f"b{b}" for b in SIZES]}


def prediction_rows(label: str, w: str, tr: list[dict[str, dict[str, float]]], p: Path) -> list[dict[str, Any]]:
    """Per predicted region of an eager-only program's trace: its eager period, where its level comes from (the
    note eager_period_scaled's run: 'window', 'two_runs', ...) against the untraced processes'."""
    out = []
    regions = predictions(p)
    if len(regions) != len(EAGER_ONLY[w]):
        return out
    for subject, r in zip(EAGER_ONLY[w], regions):
        eager = _untraced(tr, subject, "eager", "eager_")
        if not eager or r.eager_period is None:
            continue
        run = next((str(n["run"]) for n in r.notes if n.kind == "eager_period_scaled"), "")
        out.append({"call": label, "trace": p.name, "workload": w, "subject": subject, "prediction": True, **eager,
                    "eager_ns": r.eager_period.ns, "eager_source": run,
                    "eager_ratio": r.eager_period.ns / eager["eager_untraced_ns"]})
    return out


def rows_of(label: str, results: Path, traces: Path, config: str = "graphmode") -> list[dict[str, Any]]:
    recs = [json.loads(line) for line in open(results) if line.strip()]
    out = []
    for w in sorted({r["workload"] for r in recs}):
        tr = truths(recs, w)
        if w in EAGER_ONLY:
            for p in sorted(traces.glob(f"{w}-{config}-*.gmtrace")):
                out += prediction_rows(label, w, tr, p)
            continue
        for p in sorted(traces.glob(f"{w}-{config}-*.gmtrace")):
            with load(p) as t:
                nodes_replays = replays_from_nodes(t, 0)
            sources: dict[str, str] = {}
            raw, fixed = readings(p, w, corrected=False), readings(p, w, corrected=True, sources=sources)
            for subject, figs in sorted(fixed.items()):
                row: dict[str, Any] = {"call": label, "trace": p.name, "workload": w, "subject": subject}
                one = _untraced(tr, subject, "one_time", "")
                if one and "one_time" in figs and "one_time" in raw.get(subject, {}):
                    row.update(one, traced_ns=raw[subject]["one_time"], corrected_ns=figs["one_time"],
                               traced_ratio=raw[subject]["one_time"] / one["untraced_ns"],
                               corrected_ratio=figs["one_time"] / one["untraced_ns"])
                    if figs.get("capture_untraced"):
                        row["capture_untraced"] = True
                eager = _untraced(tr, subject, "eager", "eager_")
                if eager and "eager" in figs:
                    row.update(eager, eager_ns=figs["eager"], eager_source=sources.get(subject, ""),
                               eager_ratio=figs["eager"] / eager["eager_untraced_ns"])
                replay = _untraced(tr, subject, "replay", "replay_")
                if replay and "replay" in figs:
                    row.update(replay, replay_ns=figs["replay"], replay_ratio=figs["replay"] / replay["replay_untraced_ns"],
                               replays_from_nodes=nodes_replays, replay_source=sources.get(f"{subject}/replay", ""))
                if "corrected_ratio" in row or "eager_ratio" in row or "replay_ratio" in row:
                    out.append(row)
    return out


def _within(a: np.ndarray, low: float, high: float) -> bool:
    """Every ratio inside [low, high] (an empty group holds: the set has no such figure)."""
    return bool((a <= high).all() and (a >= low).all())


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether every ratio of each kind lies within its stated bounds, and a summary (a kind the rows lack is left out
    of it; rows with no ratio at all fail)."""
    from graphmode.analyzers.break_even import (CORRECTED_CAPTURE_BOUND, CORRECTED_CAPTURE_LOW_BOUND,
                                                CORRECTED_SLOWDOWN_BOUND, UNTRACED_CAPTURE_BOUND,
                                                UNTRACED_CAPTURE_LOW_BOUND, WINDOW_EAGER_BOUND)
    from graphmode.analyzers.tracer_cost import NODE_RECORDS_REPLAY_SLOWDOWN

    one = [r for r in rows if "corrected_ratio" in r and not r.get("capture_untraced")]
    unt = np.array([r["corrected_ratio"] for r in rows if r.get("capture_untraced")])
    u_high, u_low = 1 + UNTRACED_CAPTURE_BOUND, 1 / (1 + UNTRACED_CAPTURE_LOW_BOUND)
    ok_unt = _within(unt, u_low, u_high)
    c = np.array([r["corrected_ratio"] for r in one])
    t = np.array([r["traced_ratio"] for r in one])
    spread = np.array([r["untraced_max_ns"] / r["untraced_min_ns"] for r in one])
    high, low = 1 + CORRECTED_CAPTURE_BOUND, 1 / (1 + CORRECTED_CAPTURE_LOW_BOUND)
    ok_one = _within(c, low, high)
    win = np.array([r["eager_ratio"] for r in rows if r.get("eager_source") == "window"])
    e_spread = np.array([r["eager_untraced_max_ns"] / r["eager_untraced_min_ns"] for r in rows if "eager_ratio" in r])
    w_high, w_low = 1 + WINDOW_EAGER_BOUND, 1 / (1 + WINDOW_EAGER_BOUND)
    ok_win = _within(win, w_low, w_high)
    rep = np.array([r["replay_ratio"] for r in rows if r.get("replays_from_nodes") and r.get("replay_source") != "corrected"])
    ok_rep = _within(rep, 0.0, 1 + NODE_RECORDS_REPLAY_SLOWDOWN)
    # CPU-bound periods with the tracer's calibrated cost taken off (analyzers.tracer_cost): either way
    cor = np.array([r["eager_ratio"] for r in rows if r.get("eager_source") == "corrected"]
                   + [r["replay_ratio"] for r in rows if r.get("replay_source") == "corrected"])
    c_high, c_low = 1 + CORRECTED_SLOWDOWN_BOUND, 1 / (1 + CORRECTED_SLOWDOWN_BOUND)
    ok_cor = _within(cor, c_low, c_high)
    calls = sorted({r["call"] for r in rows})
    lines = [f"{len(rows)} rows of {len({(r['call'], r['trace']) for r in rows})} traces ({', '.join(calls)})."]
    if c.size:
        lines.append(f"{c.size} one-time costs traced and corrected: {c.min():.2f}-{c.max():.2f}x the untraced median "
                     f"(within 25% on {int((abs(c - 1) <= 0.25).sum())}), as traced {t.min():.2f}-{t.max():.2f}x, the "
                     f"untraced processes' own spread (max/min) up to {spread.max():.2f}x; stated bounds {low:.2f}-"
                     f"{high:.2f}x: {'hold' if ok_one else 'DO NOT HOLD'}.")
    if unt.size:
        lines.append(f"{unt.size} one-time costs captured untraced: {unt.min():.2f}-{unt.max():.2f}x the untraced median "
                     f"(within 25% on {int((abs(unt - 1) <= 0.25).sum())}); stated bounds {u_low:.2f}-{u_high:.2f}x: "
                     f"{'hold' if ok_unt else 'DO NOT HOLD'}.")
    if win.size:
        lines.append(f"{win.size} eager periods from untraced windows: {win.min():.2f}-{win.max():.2f}x the untraced "
                     f"median (within 15% on {int((abs(win - 1) <= 0.15).sum())}), the untraced processes' own spread up "
                     f"to {e_spread.max():.2f}x; stated bounds {w_low:.2f}-{w_high:.2f}x: {'hold' if ok_win else 'DO NOT HOLD'}.")
    if rep.size:
        lines.append(f"{rep.size} replays folded from their nodes' records: {rep.min():.3f}-{rep.max():.3f}x the untraced "
                     f"median; stated bound up to {1 + NODE_RECORDS_REPLAY_SLOWDOWN:.2f}x: "
                     f"{'holds' if ok_rep else 'DOES NOT HOLD'}.")
    if cor.size:
        lines.append(f"{cor.size} CPU-bound eager periods and replays with the tracer's cost taken off: {cor.min():.2f}-"
                     f"{cor.max():.2f}x the untraced median; stated bounds {c_low:.2f}-{c_high:.2f}x: "
                     f"{'hold' if ok_cor else 'DO NOT HOLD'}.")
    checked = c.size + unt.size + win.size + rep.size + cor.size
    return bool(checked) and ok_one and ok_unt and ok_win and ok_rep and ok_cor, "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("triples", nargs="*", help="LABEL RESULTS.jsonl TRACES_DIR, repeated")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--check", type=Path)
    ap.add_argument("--config", default="graphmode", help="another of script_fidelity's graphmode configurations, read by its traces' names")
    args = ap.parse_args()
    if args.check:
        rows = [json.loads(line) for line in open(args.check) if line.strip()]
    else:
        if len(args.triples) % 3:
            ap.error("give LABEL RESULTS.jsonl TRACES_DIR triples")
        rows = [r for i in range(0, len(args.triples), 3)
                for r in rows_of(args.triples[i], Path(args.triples[i + 1]), Path(args.triples[i + 2]), args.config)]
        if args.out:
            args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok, text = check(rows)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
