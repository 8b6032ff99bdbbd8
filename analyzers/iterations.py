"""Per-iteration metrics of each mode: wall time, CPU time in CUDA API calls, GPU busy/idle, kernels.

Events leave DuckDB as numeric columns only (categories folded to small codes, kernel names to integer
codes in SQL); numpy then sorts them by start (CUPTI delivers them nearly in that order, which a stable
sort handles in about linear time), places them in iterations with one cumulative count and sums with
bincount: no Python loop per event. The GPU spans placed here (`PlacedGpuSpans`) also feed the
per-kernel comparison, so they are fetched and placed once. See docs/metrics.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphmode.analyzers.periods import IterationTable
from graphmode.analyzers.results import IterationSeries, ModeMetrics, Stat
from graphmode.analyzers.run import Run, build_run
from graphmode.tracer.store import Trace

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
# Names leave DuckDB as codes into _GPU_NAMES_SQL's list (the join costs far less than 4.6 M Python
# strings would). Schema v1 writes '' rather than NULL, so the inner join keeps every span.
_GPU_NAMES = "SELECT name, (row_number() OVER (ORDER BY name) - 1)::INTEGER AS code FROM (SELECT DISTINCT name FROM gpu_spans WHERE pass_id = $1)"
_GPU_NAMES_SQL = f"SELECT name FROM ({_GPU_NAMES}) ORDER BY code"
_GPU_COLUMNS_SQL = f"""
WITH names AS ({_GPU_NAMES})
SELECT s.start_ns, s.end_ns, s.kind = 'kernel' AS is_kernel, s.kind = 'graph' AS is_graph,
       s.graph_id <> 0 AS in_graph, n.code AS name_code
FROM gpu_spans s JOIN names n ON s.name = n.name WHERE s.pass_id = $1
"""


def _order_by_start(starts: np.ndarray) -> np.ndarray | None:
    """Stable order by start; None when the starts are already in order (no copy needed)."""
    if starts.size < 2 or bool(np.all(starts[1:] >= starts[:-1])):
        return None
    return np.argsort(starts, kind="stable")  # timsort: near-linear on the long sorted runs CUPTI buffers give


def _place(starts: np.ndarray, it_start: np.ndarray, it_end: np.ndarray) -> np.ndarray:
    """Index (into it_start, sorted) of the iteration each start falls in; -1 outside every iteration.

    `starts` must be sorted: then the iteration index is the number of iterations that began at or
    before each start, less one (one cumulative count over the first start of each iteration), and the
    starts an iteration holds are a prefix of those placed in it. One array of the events' size is
    allocated: fresh memory costs page faults, which dominate on some VMs.
    """
    n = starts.size
    first = np.searchsorted(starts, it_start, side="left")  # first start at or after each iteration's start
    j = np.bincount(first, minlength=n + 1)[:n]
    np.cumsum(j, out=j)
    j -= 1
    if it_start.size == 0:
        return j
    # iteration k's starts are [first_k, first_k+1); those at or after its end are outside: [lo_k, hi_k)
    hi = np.append(first[1:], n)
    lo = np.clip(np.searchsorted(starts, it_end, side="left"), first, hi)
    outside = lo < hi
    if outside.any():
        edge = np.zeros(n + 1, dtype=np.int8)
        edge[lo[outside]] = 1  # the ranges are disjoint: their starts are distinct, and so are their ends
        edge[hi[outside]] -= 1
        j[np.cumsum(edge[:n], dtype=np.int8).view(bool)] = -1
    return j


def _outermost_first(start: np.ndarray, end: np.ndarray, is_runtime: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order by start, then longer first, then runtime before driver (docs/metrics.md, outermost calls).

    The same order as np.lexsort((~is_runtime, -end, start)), but the full three-key sort runs only
    on calls that share a start with another call; the rest need only the (near-linear) stable sort.
    Returns (order, start[order]).
    """
    order = np.argsort(start, kind="stable")
    s = start[order]
    equal = s[1:] == s[:-1]
    tied = np.zeros(s.size, dtype=bool)
    tied[1:] |= equal
    tied[:-1] |= equal
    if tied.any():
        at = np.flatnonzero(tied)  # whole runs of equal starts, so sorting them in place keeps the rest in order
        sub = order[at]
        order[at] = sub[np.lexsort((~is_runtime[sub], -end[sub], start[sub]))]  # equal starts: s stays valid
    return order, s


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
        rows = np.flatnonzero(on_thread)
        st, en, rt, cat = (a[c] if on_thread.all() else a[c][rows] for c in ("start_ns", "end_ns", "is_runtime", "cat"))
        order, st = _outermost_first(st, en, rt)
        en, cat = en[order], cat[order]
        mine = np.flatnonzero(it.thread == thread)  # iterations are in start order (_ITERS)
        ite = it.end[mine]
        j = _place(st, it.start[mine], ite)
        keep = j >= 0
        if not keep.all():
            st, en, cat, j = st[keep], en[keep], cat[keep], j[keep]
        covered = np.maximum.accumulate(en)
        nested = np.zeros(st.size, dtype=bool)
        nested[1:] = en[1:] <= covered[:-1]
        dur = np.take(ite, j, out=covered, mode="clip")  # reuses the buffer (mode='raise' would buffer); j is in range
        np.minimum(dur, en, out=dur)  # clipped to the iteration's end
        dur -= st
        # one bincount over (iteration, category); nested calls go to a bin past the end
        j *= 3
        j += cat
        j[nested] = 3 * mine.size
        sums = np.bincount(j, weights=dur, minlength=3 * mine.size + 1)[:-1].astype(np.int64).reshape(-1, 3)
        for code, key in ((0, "launch"), (1, "sync"), (2, "other")):
            out[key][mine] += sums[:, code]
    return out


@dataclass(frozen=True)
class PlacedGpuSpans:
    """The GPU spans of a traced pass, each with the iteration it starts in (`iteration`, -1: none).

    Shared by the per-iteration GPU metrics and the per-kernel comparison, so that millions of spans are
    fetched and placed once. The columns stay in the order DuckDB returned them (no copies); `order`
    sorts them by start (None: they already are) and `sorted_start` / `sorted_iteration` are in that
    order. `iteration` indexes `iterations`; `end` is not clipped; `names[name_code]` is the span's name.
    """

    pass_id: int
    iterations: _Iterations
    iteration: np.ndarray
    start: np.ndarray
    end: np.ndarray
    is_kernel: np.ndarray
    is_graph: np.ndarray
    in_graph: np.ndarray
    name_code: np.ndarray
    names: np.ndarray
    order: np.ndarray | None
    sorted_start: np.ndarray
    sorted_iteration: np.ndarray


def place_gpu_spans(trace: Trace, pass_id: int, iterations: _Iterations | None = None) -> PlacedGpuSpans:
    """Places the pass's GPU spans in its iterations (the runner's markers, or `iterations`): the span
    belongs to the iteration whose span holds its start (any thread: the GPU is shared)."""
    it = iterations if iterations is not None else _iterations(trace, pass_id)
    if it.start.size == 0:  # nothing to place in
        none = np.zeros(0, dtype=np.int64)
        return PlacedGpuSpans(pass_id, it, none, none, none, none.astype(bool), none.astype(bool), none.astype(bool),
                              none.astype(np.int32), np.zeros(0, dtype=object), None, none, none)
    g = trace.sql(_GPU_COLUMNS_SQL, [pass_id])
    names = trace.sql(_GPU_NAMES_SQL, [pass_id])["name"].astype(object)
    order = _order_by_start(g["start_ns"])  # the join does not keep the table's order
    sorted_start = g["start_ns"] if order is None else g["start_ns"][order]
    sorted_j = _place(sorted_start, it.start, it.end)
    if order is None:
        j = sorted_j
    else:
        j = np.empty_like(sorted_j)
        j[order] = sorted_j
    return PlacedGpuSpans(
        pass_id=pass_id, iterations=it, iteration=j, start=g["start_ns"], end=g["end_ns"],
        is_kernel=g["is_kernel"], is_graph=g["is_graph"], in_graph=g["in_graph"], name_code=g["name_code"],
        names=names, order=order, sorted_start=sorted_start, sorted_iteration=sorted_j,
    )


def _count_per_iteration(iteration: np.ndarray, which: np.ndarray, n: int) -> np.ndarray:
    """Number of spans with `which` set in each of n iterations (spans outside every iteration: none)."""
    j = iteration[which]
    if j.size and j.min() < 0:
        j = j[j >= 0]
    return np.bincount(j, minlength=n).astype(np.int64)


def _gpu_per_iteration(spans: PlacedGpuSpans) -> dict[str, np.ndarray]:
    """GPU busy (union over streams), gaps and span counts per iteration.

    Each span is clipped to its iteration's end. Iterations of one pass do not overlap, so with spans in
    start order the running maximum of clipped ends never reaches into the next iteration: each span
    adds only the part that ends after every earlier span ended, which counts overlapping streams once.
    Large temporaries are reused in place (fresh memory costs page faults).
    """
    its, ite = spans.iterations.start, spans.iterations.end
    n = its.size
    st, j = spans.sorted_start, spans.sorted_iteration
    end = spans.end if spans.order is None else spans.end[spans.order]
    placed = j >= 0
    if not placed.all():
        st, j, end = st[placed], j[placed], end[placed]
    en = ite[j]
    np.minimum(en, end, out=en)  # clipped to the iteration's end
    running_end = np.maximum.accumulate(en)
    covered = its[j]  # nothing of an earlier iteration reaches into this one
    if en.size:
        np.maximum(covered[1:], running_end[:-1], out=covered[1:])
    np.maximum(covered, st, out=covered)
    added = np.subtract(en, covered, out=covered)
    np.maximum(added, 0, out=added)
    # j is non-decreasing (spans by start, iterations by start, no overlap): groups are runs of j
    bounds = np.flatnonzero(j[1:] != j[:-1]) + 1
    group_first = np.concatenate([[0], bounds]) if j.size else np.zeros(0, dtype=np.int64)
    group_last = np.concatenate([bounds - 1, [j.size - 1]]) if j.size else np.zeros(0, dtype=np.int64)
    busy = np.bincount(j, weights=added, minlength=n).astype(np.int64)
    first = np.zeros(n, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)
    has = np.zeros(n, dtype=bool)
    first[j[group_first]] = st[group_first]
    last[j[group_last]] = running_end[group_last]  # earlier iterations' ends never exceed this one's
    has[j[group_first]] = True
    gap = np.where(has, (last - first) - busy, 0)
    return {
        "busy": busy, "gap": gap,
        "kernels": _count_per_iteration(spans.iteration, spans.is_kernel, n),
        "graphs": _count_per_iteration(spans.iteration, spans.is_graph, n),
    }


@dataclass(frozen=True)
class _Iterations:
    mode: np.ndarray  # object (str)
    iteration: np.ndarray
    wall_ns: np.ndarray
    start: np.ndarray
    end: np.ndarray
    thread: np.ndarray


def iterations_of(table: IterationTable, wall: np.ndarray | None = None) -> _Iterations:
    """An iteration table's rows (sorted by start, not overlapping) as the per-iteration metrics take
    them; `wall` (default: the span) is what ModeMetrics.wall reports for each."""
    order = np.argsort(table.start_ns, kind="stable")
    modes = table.mode[order].astype(object)
    number = np.zeros(order.size, dtype=np.int64)
    for m in np.unique(modes.astype(str)):  # per mode
        sel = modes == m
        number[sel] = np.arange(int(sel.sum()))
    start, end = table.start_ns[order].astype(np.int64), table.end_ns[order].astype(np.int64)
    w = (end - start) if wall is None else np.asarray(wall)[order]
    return _Iterations(modes, number, w, start, end, table.thread_id[order].astype(np.int64))


def _iterations(trace: Trace, pass_id: int) -> _Iterations:
    cols = trace.sql(f"WITH {_ITERS} SELECT mode, iteration, it_start, it_end, it_thread FROM iters ORDER BY idx", [pass_id])
    start, end = cols["it_start"].astype(np.int64), cols["it_end"].astype(np.int64)
    return _Iterations(cols["mode"].astype(object), cols["iteration"].astype(np.int64), end - start, start, end,
                       cols["it_thread"].astype(np.int64))


def iteration_modes(trace: Trace, pass_id: int) -> list[str]:
    """Modes with iteration markers in a pass, in the order eager, eager_sync_each, graph."""
    present = {r[0] for r in trace.rows("SELECT DISTINCT mode FROM markers WHERE pass_id = ? AND kind = 'iteration'", [pass_id])}
    return [m for m in MODES if m in present]


def mode_metrics(trace: Trace, wall_pass_id: int | None, traced_pass_id: int | None, wall_source: str,
                 gpu_spans: PlacedGpuSpans | None = None, wall_iterations: _Iterations | None = None) -> list[ModeMetrics]:
    """One ModeMetrics per mode with iterations in the wall pass or the traced pass.

    `gpu_spans`: the traced pass's spans from place_gpu_spans, when the caller already has them (with
    the iterations they were placed in). `wall_iterations`: the wall pass's iterations, when they are
    not the runner's markers.
    """
    if traced_pass_id is None:
        gpu_spans = None
    elif gpu_spans is None or gpu_spans.pass_id != traced_pass_id:
        gpu_spans = place_gpu_spans(trace, traced_pass_id)
    traced = gpu_spans.iterations if gpu_spans is not None else None
    if wall_iterations is not None:
        wall: _Iterations | None = wall_iterations
    else:
        wall = traced if wall_pass_id is not None and wall_pass_id == traced_pass_id else (
            _iterations(trace, wall_pass_id) if wall_pass_id is not None else None)
    per_iter: dict[str, np.ndarray] = {}
    if gpu_spans is not None and traced is not None and traced_pass_id is not None and traced.mode.size:
        api = _api_per_iteration(trace, traced_pass_id, traced)
        gpu = _gpu_per_iteration(gpu_spans)
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
