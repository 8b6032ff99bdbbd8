"""Per-iteration metrics of each mode: wall time, CPU time in CUDA API calls, GPU busy/idle, kernels.

Events leave DuckDB as numeric columns only (categories folded to small codes in SQL); numpy then
places them in iterations with searchsorted and sums with bincount: no Python loop per event.
See docs/metrics.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzers.results import IterationSeries, ModeMetrics, Stat
from tracer.store import Trace

MODES = ("eager", "eager_sync_each", "graph")
LAUNCH_CATEGORIES = ("kernel_launch", "graph_launch")

# Iterations of one pass, numbered by start time.
_ITERS = """
iters AS (
  SELECT row_number() OVER (ORDER BY start_ns, mode, iteration) - 1 AS idx,
         mode, iteration, start_ns AS it_start, end_ns AS it_end, thread_id AS it_thread
  FROM markers WHERE pass_id = $1 AND kind = 'iteration' AND mode IN ('eager', 'eager_sync_each', 'graph')
)"""

# Only numeric columns leave DuckDB: the category is folded into a small code in SQL.
_API_COLUMNS_SQL = """
SELECT start_ns, end_ns, thread_id, api = 'runtime' AS is_runtime,
       CASE WHEN category IN ('kernel_launch', 'graph_launch') THEN 0 WHEN category = 'sync' THEN 1 ELSE 2 END::UTINYINT AS cat
FROM api_calls WHERE pass_id = ?
"""
_GPU_COLUMNS_SQL = """
SELECT start_ns, end_ns, kind = 'kernel' AS is_kernel, kind = 'graph' AS is_graph FROM gpu_spans WHERE pass_id = ?
"""


def _place(starts: np.ndarray, it_start: np.ndarray, it_end: np.ndarray) -> np.ndarray:
    """Index (into it_start, sorted) of the iteration each start falls in; -1 outside every iteration."""
    j = np.searchsorted(it_start, starts, side="right") - 1
    inside = (j >= 0) & (starts < it_end[np.maximum(j, 0)]) if it_start.size else np.zeros(starts.size, dtype=bool)
    return np.where(inside, j, -1)


def _api_per_iteration(trace: Trace, pass_id: int, it: _Iterations) -> dict[str, np.ndarray]:
    """CPU time in outermost CUDA API calls per iteration, split launch / sync / other.

    A runtime call wraps the driver calls it makes (same thread, nested in time), so a call contained
    in an earlier-starting call on the same thread is not counted again; at identical timestamps the
    runtime call is the outer one. Calls count for the iteration whose span (on their thread) holds
    their start, clipped to the iteration's end.
    """
    n = it.wall_ns.size
    out = {k: np.zeros(n, dtype=np.int64) for k in ("launch", "sync", "other")}
    a = trace.sql(_API_COLUMNS_SQL, [pass_id])
    for thread in np.unique(it.thread):  # iteration threads: a handful, not per event
        on_thread = a["thread_id"] == thread
        rows = slice(None) if on_thread.all() else np.flatnonzero(on_thread)
        mine = np.flatnonzero(it.thread == thread)
        order_it = np.argsort(it.start[mine], kind="stable")
        its, ite, idx = it.start[mine][order_it], it.end[mine][order_it], mine[order_it]
        st, en, rt, cat = a["start_ns"][rows], a["end_ns"][rows], a["is_runtime"][rows], a["cat"][rows]
        j = _place(st, its, ite)
        keep = j >= 0
        st, en, rt, cat, j = st[keep], en[keep], rt[keep], cat[keep], j[keep]
        order = np.lexsort((~rt, -en, st))  # by start; the longer (then the runtime) call first
        st, en, cat, j = st[order], en[order], cat[order], j[order]
        covered = np.maximum.accumulate(en)
        nested = np.zeros(st.size, dtype=bool)
        nested[1:] = en[1:] <= covered[:-1]
        dur = np.minimum(en, ite[j]) - st
        for code, key in ((0, "launch"), (1, "sync"), (2, "other")):
            sel = (~nested) & (cat == code)
            out[key] += np.bincount(idx[j[sel]], weights=dur[sel], minlength=n).astype(np.int64)
    return out


def _gpu_per_iteration(trace: Trace, pass_id: int, it: _Iterations) -> dict[str, np.ndarray]:
    """GPU busy (union over streams), gaps and span counts per iteration.

    A span belongs to the iteration whose span holds its start (any thread: the GPU is shared) and is
    clipped to the iteration's end. Iterations of one pass do not overlap, so after sorting by start
    the running maximum of clipped ends never reaches into the next iteration: each span adds only
    the part that ends after every earlier span ended, which counts overlapping streams once.
    """
    n = it.wall_ns.size
    g = trace.sql(_GPU_COLUMNS_SQL, [pass_id])
    order_it = np.argsort(it.start, kind="stable")
    its, ite = it.start[order_it], it.end[order_it]
    j = _place(g["start_ns"], its, ite)
    keep = j >= 0
    st, j = g["start_ns"][keep], j[keep]
    en = np.minimum(g["end_ns"][keep], ite[j])
    kern, graph = g["is_kernel"][keep], g["is_graph"][keep]
    order = np.argsort(st, kind="stable")
    st, en, j, kern, graph = st[order], en[order], j[order], kern[order], graph[order]
    covered = np.empty_like(en)
    if en.size:
        covered[0] = its[j[0]]
        covered[1:] = np.maximum.accumulate(en)[:-1]
    covered = np.maximum(covered, its[j])  # nothing of an earlier iteration reaches into this one
    added = np.maximum(en - np.maximum(st, covered), 0)
    # j is non-decreasing (spans by start, iterations by start, no overlap): groups are runs of j
    bounds = np.flatnonzero(np.diff(j)) + 1
    group_first = np.concatenate([[0], bounds]) if j.size else np.zeros(0, dtype=np.int64)
    group_last = np.concatenate([bounds - 1, [j.size - 1]]) if j.size else np.zeros(0, dtype=np.int64)
    idx = order_it[j]
    busy = np.bincount(idx, weights=added, minlength=n).astype(np.int64)
    running_end = np.maximum.accumulate(en) if en.size else en
    first = np.zeros(n, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)
    has = np.zeros(n, dtype=bool)
    first[idx[group_first]] = st[group_first]
    last[idx[group_last]] = running_end[group_last]  # earlier iterations' ends never exceed this one's
    has[idx[group_first]] = True
    gap = np.where(has, (last - first) - busy, 0)
    return {
        "busy": busy, "gap": gap,
        "kernels": np.bincount(idx, weights=kern, minlength=n).astype(np.int64),
        "graphs": np.bincount(idx, weights=graph, minlength=n).astype(np.int64),
    }


@dataclass(frozen=True)
class _Iterations:
    mode: np.ndarray  # object (str)
    iteration: np.ndarray
    wall_ns: np.ndarray
    start: np.ndarray
    end: np.ndarray
    thread: np.ndarray


def _iterations(trace: Trace, pass_id: int) -> _Iterations:
    cols = trace.sql(f"WITH {_ITERS} SELECT mode, iteration, it_start, it_end, it_thread FROM iters ORDER BY idx", [pass_id])
    start, end = cols["it_start"].astype(np.int64), cols["it_end"].astype(np.int64)
    return _Iterations(cols["mode"].astype(object), cols["iteration"].astype(np.int64), end - start, start, end,
                       cols["it_thread"].astype(np.int64))


def iteration_modes(trace: Trace, pass_id: int) -> list[str]:
    """Modes with iteration markers in a pass, in the order eager, eager_sync_each, graph."""
    present = {r[0] for r in trace.rows("SELECT DISTINCT mode FROM markers WHERE pass_id = ? AND kind = 'iteration'", [pass_id])}
    return [m for m in MODES if m in present]


def mode_metrics(trace: Trace, wall_pass_id: int | None, traced_pass_id: int | None, wall_source: str) -> list[ModeMetrics]:
    """One ModeMetrics per mode with iterations in the wall pass or the traced pass."""
    wall = _iterations(trace, wall_pass_id) if wall_pass_id is not None else None
    traced = _iterations(trace, traced_pass_id) if traced_pass_id is not None else None
    per_iter: dict[str, np.ndarray] = {}
    if traced is not None and traced.mode.size:
        api = _api_per_iteration(trace, traced_pass_id, traced)
        gpu = _gpu_per_iteration(trace, traced_pass_id, traced)
        per_iter = {
            "launch": api["launch"], "sync": api["sync"], "other": api["other"],
            "busy": gpu["busy"], "idle": traced.wall_ns - gpu["busy"], "gap": gpu["gap"],
            "kernels": gpu["kernels"], "graphs": gpu["graphs"],
        }
    modes = [m for m in MODES if (wall is not None and m in set(wall.mode)) or (traced is not None and m in set(traced.mode))]
    out: list[ModeMetrics] = []
    empty = np.zeros(0, dtype=np.int64)
    for mode in modes:
        wsel = wall.mode == mode if wall is not None else None
        w_iter = wall.iteration[wsel] if wall is not None else empty
        w_ns = wall.wall_ns[wsel] if wall is not None else empty
        if traced is not None and per_iter:
            tsel = traced.mode == mode
            t = {k: v[tsel] for k, v in per_iter.items()}
            t_iter, t_wall = traced.iteration[tsel], traced.wall_ns[tsel]
        else:
            t = {k: empty for k in ("launch", "sync", "other", "busy", "idle", "gap", "kernels", "graphs")}
            t_iter, t_wall = empty, empty
        series = IterationSeries(
            w_iter, w_ns, t_iter, t_wall, t["launch"], t["sync"], t["other"], t["busy"], t["idle"], t["gap"], t["kernels"]
        )
        out.append(
            ModeMetrics(
                mode=mode,
                wall_source=wall_source,
                iterations=int(w_ns.size),
                wall=Stat.of(w_ns),
                traced_iterations=int(t_wall.size),
                traced_wall=Stat.of(t_wall),
                api_launch=Stat.of(t["launch"]),
                api_sync=Stat.of(t["sync"]),
                api_other=Stat.of(t["other"]),
                api_total=Stat.of(t["launch"] + t["sync"] + t["other"]),
                gpu_busy=Stat.of(t["busy"]),
                gpu_idle=Stat.of(t["idle"]),
                gpu_gap=Stat.of(t["gap"]),
                kernels=Stat.of(t["kernels"]),
                graph_launches=Stat.of(t["graphs"]),
                series=series,
            )
        )
    return out
