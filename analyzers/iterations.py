"""Per-iteration metrics of each mode: wall time, CPU time in CUDA API calls, GPU busy/idle, kernels.

All per-event work is DuckDB SQL (window functions and ASOF joins) that returns one row per
iteration; numpy then only scatters those rows into arrays. See docs/metrics.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzers.results import IterationSeries, ModeMetrics, Stat
from tracer.store import Trace

MODES = ("eager", "eager_sync_each", "graph")
LAUNCH_CATEGORIES = ("kernel_launch", "graph_launch")

# Iterations of one pass, numbered by start time; `idx` is the row used to scatter results back.
_ITERS = """
iters AS (
  SELECT row_number() OVER (ORDER BY start_ns, mode, iteration) - 1 AS idx,
         mode, iteration, start_ns AS it_start, end_ns AS it_end, thread_id AS it_thread
  FROM markers WHERE pass_id = $1 AND kind = 'iteration' AND mode IN ('eager', 'eager_sync_each', 'graph')
)"""

# CPU time in CUDA API calls, outermost calls only: a runtime call wraps the driver calls it makes
# (same thread, nested in time), so a call contained in an earlier-starting call on the same thread
# is not counted again. Ties (identical timestamps) order the runtime call first ('runtime' > 'driver').
_API_SQL = f"""
WITH {_ITERS},
calls AS (
  SELECT start_ns, end_ns, thread_id, category,
         max(end_ns) OVER (PARTITION BY thread_id ORDER BY start_ns, end_ns DESC, api DESC
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS enclosing_end
  FROM api_calls WHERE pass_id = $1
),
outermost AS (SELECT * FROM calls WHERE enclosing_end IS NULL OR end_ns > enclosing_end),
placed AS (
  SELECT i.idx, least(c.end_ns, i.it_end) - c.start_ns AS dur, c.category
  FROM outermost c ASOF JOIN iters i ON c.thread_id = i.it_thread AND c.start_ns >= i.it_start
  WHERE c.start_ns < i.it_end
)
SELECT idx,
       sum(CASE WHEN category IN ('kernel_launch', 'graph_launch') THEN dur ELSE 0 END)::BIGINT AS launch_ns,
       sum(CASE WHEN category = 'sync' THEN dur ELSE 0 END)::BIGINT AS sync_ns,
       sum(CASE WHEN category NOT IN ('kernel_launch', 'graph_launch', 'sync') THEN dur ELSE 0 END)::BIGINT AS other_ns
FROM placed GROUP BY idx
"""

# GPU busy time: union of the spans (clipped to the iteration) that start inside the iteration,
# on any stream. Sorted by start, a span adds only the part that ends after every earlier span
# of the iteration ended, so overlapping streams count once.
_GPU_SQL = f"""
WITH {_ITERS},
placed AS (
  SELECT i.idx, greatest(s.start_ns, i.it_start) AS st, least(s.end_ns, i.it_end) AS en, s.kind
  FROM gpu_spans s ASOF JOIN iters i ON s.start_ns >= i.it_start
  WHERE s.pass_id = $1 AND s.start_ns < i.it_end
),
swept AS (
  SELECT idx, st, en, kind,
         max(en) OVER (PARTITION BY idx ORDER BY st, en ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_to
  FROM placed
)
SELECT idx,
       sum(CASE WHEN covered_to IS NULL THEN en - st
                WHEN en > covered_to THEN en - greatest(st, covered_to) ELSE 0 END)::BIGINT AS busy_ns,
       min(st) AS first_start, max(en) AS last_end,
       count(*) FILTER (WHERE kind = 'kernel') AS kernels,
       count(*) FILTER (WHERE kind = 'graph') AS graph_launches
FROM swept GROUP BY idx
"""


@dataclass(frozen=True)
class _Iterations:
    mode: np.ndarray  # object (str)
    iteration: np.ndarray
    wall_ns: np.ndarray


def _iterations(trace: Trace, pass_id: int) -> _Iterations:
    cols = trace.sql(f"WITH {_ITERS} SELECT mode, iteration, it_end - it_start AS wall FROM iters ORDER BY idx", [pass_id])
    return _Iterations(cols["mode"].astype(object), cols["iteration"].astype(np.int64), cols["wall"].astype(np.int64))


def _scatter(n: int, idx: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    out[idx.astype(np.int64)] = values.astype(np.int64)
    return out


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
        n = traced.mode.size
        api = trace.sql(_API_SQL, [traced_pass_id])
        gpu = trace.sql(_GPU_SQL, [traced_pass_id])
        busy = _scatter(n, gpu["idx"], gpu["busy_ns"])
        has_gpu = np.zeros(n, dtype=bool)
        has_gpu[gpu["idx"].astype(np.int64)] = True
        first = _scatter(n, gpu["idx"], gpu["first_start"])
        last = _scatter(n, gpu["idx"], gpu["last_end"])
        per_iter = {
            "launch": _scatter(n, api["idx"], api["launch_ns"]),
            "sync": _scatter(n, api["idx"], api["sync_ns"]),
            "other": _scatter(n, api["idx"], api["other_ns"]),
            "busy": busy,
            "idle": traced.wall_ns - busy,
            "gap": np.where(has_gpu, (last - first) - busy, 0),
            "kernels": _scatter(n, gpu["idx"], gpu["kernels"]),
            "graphs": _scatter(n, gpu["idx"], gpu["graph_launches"]),
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
