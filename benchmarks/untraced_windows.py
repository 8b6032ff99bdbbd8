"""The untraced windows of one traced run (tracer.untraced_windows; GRAPHMODE_UNTRACED_WINDOWS=1): per window, the loop's
period with CUPTI detached against the same loop's traced iterations just before it, both from the line stamps of the
window's anchor (each period less what its stamps cost, the run's measured `stamp_cost_ns`). Session 24's check of the
design, beside the programs' own untraced clocks (benchmarks/notes/s24).

    python benchmarks/untraced_windows.py TRACE [TRACE ...] [--json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from graphmode.analyzers.stamps import line_stamps
from graphmode.analyzers.torch_windows import run_entry
from graphmode.tracer.store import load

TRACED_TAIL = 16  # the traced periods read before a window: its loop's last ones


def periods(ts_anchor: np.ndarray, ts_all: np.ndarray, stamp_ns: float) -> np.ndarray:
    """Periods between consecutive anchor stamps, less the stamps inside each (the anchor's own included)."""
    if ts_anchor.size < 2:
        return np.zeros(0)
    n_in = np.searchsorted(ts_all, ts_anchor[1:], side="right") - np.searchsorted(ts_all, ts_anchor[:-1], side="right")
    return np.diff(ts_anchor).astype(np.float64) - n_in * stamp_ns


def windows_of(path: str) -> list[dict]:
    trace = load(path)
    try:
        single = next(p for p in trace.passes if p.name == "single")
        entry = run_entry(trace, single.pass_id)
        info = entry.get("untraced_windows") or {}
        stamp_ns = float(entry.get("stamp_cost_ns") or 0.0)
        s = line_stamps(trace, single.pass_id)
        out = []
        for w in info.get("windows", []):
            at = s["ts_ns"][s["loc"] == w["anchor"]]
            inside = at[(at >= w["start_ns"]) & (at <= w["end_ns"])]
            before = at[at <= w["start_ns"]][-(TRACED_TAIL + 1):]
            un = periods(inside, s["ts_ns"], stamp_ns)[1:]  # the first holds the detach
            tr = periods(before, s["ts_ns"], stamp_ns)
            out.append({"trace": path, "anchor": w["anchor"].rsplit("/", 1)[-1], "reason": w["reason"],
                        "untraced_n": int(un.size), "untraced_us": float(np.median(un)) / 1e3 if un.size else None,
                        "traced_n": int(tr.size), "traced_us": float(np.median(tr)) / 1e3 if tr.size else None,
                        "detach_ms": w["detach_ns"] / 1e6, "attach_ms": w["attach_ns"] / 1e6})
        return out
    finally:
        trace.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    rows = [r for t in a.traces for r in windows_of(t)]
    if a.json:
        print(json.dumps(rows))
        return
    print("| trace | anchor | closed by | untraced: periods, median | traced before: periods, median | traced / untraced | detach, attach |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["traced_us"] / r["untraced_us"] if r["untraced_us"] and r["traced_us"] else float("nan")
        fmt = lambda v: f"{v:,.1f} us" if v is not None else "-"  # noqa: E731
        print(f"| {r['trace'].rsplit('/', 1)[-1]} | {r['anchor']} | {r['reason']} | {r['untraced_n']}, {fmt(r['untraced_us'])} | "
              f"{r['traced_n']}, {fmt(r['traced_us'])} | {ratio:.2f}x | {r['detach_ms']:.0f}, {r['attach_ms']:.0f} ms |")


if __name__ == "__main__":
    main()
