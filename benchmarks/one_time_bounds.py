"""Issue 29, item 4: is the distortion bound a report states for a one-time cost true on the benchmark set?

A one-time cost from the one traced run has the tracer's calibrated cost taken off (analyzers.tracer_cost), and the
report says how far the corrected figure may still be from untraced (analyzers.break_even: CORRECTED_CAPTURE_BOUND
too high, CORRECTED_CAPTURE_LOW_BOUND too low), which the break-even interval allows for. This reads recordings of the
default `graphmode run` beside the same programs' untraced processes (benchmarks/script_fidelity.py's results.jsonl with
its traces, `--keep-traces all`) and writes, per traced process and subject (a graph, a batch size's graph, a step),
the untraced processes' median one-time cost and their spread, graphmode's one-time cost as traced and corrected, and
their ratios: one JSON line each (benchmarks/results/one_run/one_time_ratios.jsonl). Then it says whether every corrected
ratio lies inside the bounds the analysis states.

    python3 benchmarks/one_time_bounds.py LABEL RESULTS.jsonl TRACES_DIR [LABEL RESULTS.jsonl TRACES_DIR ...] [--out F]
    python3 benchmarks/one_time_bounds.py --check F      # the bounds against a written record
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_run import readings, truths  # noqa: E402  (benchmarks/)


def rows_of(label: str, results: Path, traces: Path) -> list[dict[str, Any]]:
    recs = [json.loads(line) for line in open(results) if line.strip()]
    out = []
    for w in sorted({r["workload"] for r in recs}):
        tr = truths(recs, w)
        for p in sorted(traces.glob(f"{w}-graphmode-*.gmtrace")):
            raw, fixed = readings(p, w, corrected=False), readings(p, w, corrected=True)
            for subject, figs in sorted(raw.items()):
                us = [x[subject]["one_time"] for x in tr if "one_time" in x.get(subject, {})]
                if not us or "one_time" not in figs or "one_time" not in fixed.get(subject, {}):
                    continue  # the program's clock times no capture (a JAX loop), or graphmode read none
                u = float(np.median(us))
                out.append({"call": label, "trace": p.name, "workload": w, "subject": subject,
                            "untraced_ns": u, "untraced_min_ns": min(us), "untraced_max_ns": max(us),
                            "untraced_processes": len(us), "traced_ns": figs["one_time"],
                            "corrected_ns": fixed[subject]["one_time"], "traced_ratio": figs["one_time"] / u,
                            "corrected_ratio": fixed[subject]["one_time"] / u})
    return out


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether every corrected ratio lies within the stated bounds, and a summary."""
    from graphmode.analyzers.break_even import CORRECTED_CAPTURE_BOUND, CORRECTED_CAPTURE_LOW_BOUND

    c = np.array([r["corrected_ratio"] for r in rows])
    t = np.array([r["traced_ratio"] for r in rows])
    spread = np.array([r["untraced_max_ns"] / r["untraced_min_ns"] for r in rows])
    high, low = 1 + CORRECTED_CAPTURE_BOUND, 1 / (1 + CORRECTED_CAPTURE_LOW_BOUND)
    ok = bool(c.size) and bool((c <= high).all() and (c >= low).all())
    calls = sorted({r["call"] for r in rows})
    text = (f"{len(rows)} subjects of {len({(r['call'], r['trace']) for r in rows})} traces ({', '.join(calls)}): "
            f"corrected {c.min():.2f}-{c.max():.2f}x the untraced median (within 25% on {int((abs(c - 1) <= 0.25).sum())}), "
            f"as traced {t.min():.2f}-{t.max():.2f}x; the untraced processes' own spread (max/min) up to "
            f"{spread.max():.2f}x; stated bounds {low:.2f}-{high:.2f}x: {'hold' if ok else 'DO NOT HOLD'}")
    return ok, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("triples", nargs="*", help="LABEL RESULTS.jsonl TRACES_DIR, repeated")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--check", type=Path)
    args = ap.parse_args()
    if args.check:
        rows = [json.loads(line) for line in open(args.check) if line.strip()]
    else:
        if len(args.triples) % 3:
            ap.error("give LABEL RESULTS.jsonl TRACES_DIR triples")
        rows = [r for i in range(0, len(args.triples), 3)
                for r in rows_of(args.triples[i], Path(args.triples[i + 1]), Path(args.triples[i + 2]))]
        if args.out:
            args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok, text = check(rows)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
